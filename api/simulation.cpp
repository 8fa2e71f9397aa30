#include "api/simulation.hpp"

#include <fmt/format.h>

#include "models/attention_block.hpp"
#include "ops/layer_replay.hpp"
#include "sim/simulator.hpp"

namespace api {
namespace {

// The replayed run, or false (with the reason in `out.replay_note`) when it cannot be proven.
bool simulate_replayed(const hw::Chip& chip, const ops::OpGraph& graph, const ops::LoweringOptions& options,
                       Simulation& out) {
  // Four layers suffice when the run's first layer repeats the next; with micro-batches it holds
  // the previous layer's last commands, and one more is kept (then one more again if the state
  // at the boundaries compared reaches the last kept layer).
  for (std::uint64_t kept = kReplayKeptLayers; kept <= kReplayKeptLayers + 2; ++kept) {
    const auto run = ops::find_layer_run(graph, kept);
    if (!run) {
      out.replay_note = fmt::format("no run of more than {} identical layers", kept);
      return false;
    }
    const ops::ReducedGraph reduced = ops::reduce_graph(graph, *run, kept);
    ops::Lowered lowered = ops::lower(reduced.graph, chip, options);
    const ops::ReplayPlan plan = ops::plan_replay(reduced, lowered, chip);
    if (!plan.refusal.empty()) {
      out.replay_note = plan.refusal;
      return false;
    }
    if (plan.first_repeating + 4 > kept) continue;  // no boundary pair to match: keep one more
    sim::Trace trace = sim::Simulator(chip).run(lowered.program, &plan.watch);
    const auto map = ops::ReplayMap::match(reduced, plan, lowered.program, trace, out.replay_note);
    if (!map) continue;  // keep one more layer: a later pair of boundaries may match
    out.timeline = ops::build_timeline(graph, chip, lowered, trace, *map);
    out.timeline.simulated_commands = lowered.program.command_count();
    out.lowered = std::move(lowered);
    out.trace = std::move(trace);
    out.replay_note.clear();
    return true;
  }
  return false;
}

}  // namespace

Simulation simulate_graph(const hw::Chip& chip, ops::OpGraph graph, const ops::LoweringOptions& options, bool replay) {
  Simulation out;
  if (replay && simulate_replayed(chip, graph, options, out)) {
    out.graph = std::move(graph);
    return out;
  }
  out.graph = std::move(graph);
  out.lowered = ops::lower(out.graph, chip, options);
  out.trace = sim::Simulator(chip).run(out.lowered.program);
  out.timeline = ops::build_timeline(out.graph, chip, out.lowered, out.trace);
  out.timeline.simulated_commands = out.lowered.program.command_count();
  out.timeline.replay_note = replay ? out.replay_note : "off";
  return out;
}

Simulation simulate_block(const hw::Chip& chip, const models::ModelSpec& model, const models::Workload& workload,
                          const ops::LoweringOptions& options, const models::Parallelism& parallelism) {
  models::validate_parallelism(parallelism, model, workload);
  Simulation out = simulate_graph(
      chip, models::build_attention_block(model, models::chip_workload(workload, parallelism), parallelism.tp),
      options);
  out.timeline.replay_note = "one attention block: no layers to replay";
  return out;
}

Simulation simulate_step(const hw::Chip& chip, const models::ModelSpec& model, const models::Workload& workload,
                         const models::StepOptions& step, const ops::LoweringOptions& options, bool replay) {
  return simulate_graph(chip, models::build_decoder_step(model, workload, step), options, replay);
}

}  // namespace api
