#pragma once
// The whole pipeline: op graph -> lowering -> event simulation -> per-op timeline, for one
// attention block (g5sim run --scope block) or a whole decoder step (--scope step).

#include <string>

#include "hw/chip.hpp"
#include "models/decoder_step.hpp"
#include "models/model_spec.hpp"
#include "models/workload.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"
#include "ops/timeline.hpp"
#include "sim/command.hpp"

namespace api {

struct Simulation {
  ops::OpGraph graph;
  ops::Lowered lowered;
  sim::Trace trace;
  ops::Timeline timeline;
};

Simulation simulate_graph(const hw::Chip& chip, ops::OpGraph graph, const ops::LoweringOptions& options);
/// One attention block (layer 0) alone: one chip's share of it under `parallelism` (the batch
/// over dp, the heads over tp).
Simulation simulate_block(const hw::Chip& chip, const models::ModelSpec& model, const models::Workload& workload,
                          const ops::LoweringOptions& options, const models::Parallelism& parallelism = {});
/// A whole decoder step.
Simulation simulate_step(const hw::Chip& chip, const models::ModelSpec& model, const models::Workload& workload,
                         const models::StepOptions& step, const ops::LoweringOptions& options);

}  // namespace api
