#pragma once
// The whole pipeline: op graph -> lowering -> event simulation -> per-op timeline, for one
// attention block (g5sim run --scope block) or a whole decoder step (--scope step).
//
// With replay on (the default), a step whose layers repeat is simulated through a reduced graph
// that keeps a few layers of its longest run of identical layers, and the layers left out are
// derived exactly from a proven repetition of the kernel's state (ops/layer_replay.hpp); when
// the proof fails, the whole graph is simulated. When no layers are replayed, the repeated chunk
// iterations of fa2 may be, the same way (ops/loop_replay.hpp). The timeline is the same either
// way, to the picosecond.

#include <string>

#include "hw/chip.hpp"
#include "models/decoder_step.hpp"
#include "models/model_spec.hpp"
#include "models/workload.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"
#include "ops/timeline.hpp"
#include "sim/program.hpp"

namespace api {

/// Layers of a run of identical ones the reduced graph keeps: the match needs boundaries
/// a + 1 and a + 2, and the period between them may meet layer a + 3.
inline constexpr std::uint64_t kReplayKeptLayers = 4;

struct Simulation {
  ops::OpGraph graph;       ///< the whole graph
  ops::Lowered lowered;     ///< what was simulated: the graph's, or the reduced graph's when replayed
  sim::Trace trace;         ///< its records
  ops::Timeline timeline;   ///< of the whole graph
  std::string replay_note;  ///< why the run was not replayed (empty when it was, or when off)
  std::string loop_note;    ///< why cut chunk loops could not be replayed (empty when none was cut)
};

Simulation simulate_graph(const hw::Chip& chip, ops::OpGraph graph, const ops::LoweringOptions& options,
                          bool replay = false);
/// One attention block (layer 0) alone: one chip's share of it under `parallelism` (the batch
/// over dp, the heads over tp).
Simulation simulate_block(const hw::Chip& chip, const models::ModelSpec& model, const models::Workload& workload,
                          const ops::LoweringOptions& options, const models::Parallelism& parallelism = {},
                          bool replay = false);
/// A whole decoder step.
Simulation simulate_step(const hw::Chip& chip, const models::ModelSpec& model, const models::Workload& workload,
                         const models::StepOptions& step, const ops::LoweringOptions& options, bool replay = true);

}  // namespace api
