#pragma once
// The whole pipeline for one attention block: model + workload -> op graph -> lowering ->
// event simulation -> per-op timeline.

#include <string>

#include "hw/chip.hpp"
#include "models/model_spec.hpp"
#include "models/workload.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"
#include "ops/timeline.hpp"
#include "sim/command.hpp"

namespace tools {

struct BlockSimulation {
  ops::OpGraph graph;
  ops::Lowered lowered;
  sim::Trace trace;
  ops::Timeline timeline;
};

BlockSimulation simulate_block(const hw::Chip& chip, const models::ModelSpec& model,
                               const models::Workload& workload, const ops::LoweringOptions& options);

/// Shipped config paths ("configs/chips/sg2262.yaml" in the source tree).
std::string default_chip_path();
std::string default_model_path();

}  // namespace tools
