#include "api/simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "models/attention_block.hpp"
#include "ops/layer_replay.hpp"
#include "ops/loop_replay.hpp"
#include "sim/simulator.hpp"

namespace api {
namespace {

// The reduced graph of `runs`, lowered and planned; runs whose programs cannot be replayed are
// dropped (the last refusal in `note`). nullopt when none is left.
struct Prepared {
  ops::ReducedGraph reduced;
  ops::Lowered lowered;
  ops::ReplayPlan plan;
};
std::optional<Prepared> prepare(const hw::Chip& chip, const ops::OpGraph& graph, const ops::LoweringOptions& options,
                                std::vector<ops::LayerRun>& runs, std::uint64_t kept, std::string& note) {
  while (!runs.empty()) {
    Prepared p{ops::reduce_graph(graph, runs, kept), {}, {}};
    p.lowered = ops::lower(p.reduced.graph, chip, options);
    p.plan = ops::plan_replay(p.reduced, p.lowered, chip);
    if (p.plan.refused == ops::ReplayPlan::kNone) return p;
    note = p.plan.refusal;
    runs.erase(runs.begin() + static_cast<std::ptrdiff_t>(p.plan.refused));
  }
  return std::nullopt;
}

// The replayed run, or false (with the reason in `out.replay_note`) when it cannot be proven.
bool simulate_replayed(const hw::Chip& chip, const ops::OpGraph& graph, const ops::LoweringOptions& options,
                       Simulation& out) {
  // Four units suffice when a run's first unit repeats the next; with micro-batches it holds the
  // previous unit's last commands, and one more is kept (then one more again if the state at the
  // boundaries compared reaches the last kept unit). At the most kept, a run whose boundaries do
  // not match is dropped and the others tried again.
  constexpr std::uint64_t kMostKept = kReplayKeptLayers + 2;
  std::vector<ops::LayerRun> runs = ops::find_layer_runs(graph, kReplayKeptLayers);
  for (std::uint64_t kept = kReplayKeptLayers; kept <= kMostKept;) {
    std::erase_if(runs, [&](const ops::LayerRun& r) { return r.units <= kept; });
    if (runs.empty()) {
      out.replay_note = fmt::format("no run of more than {} identical layers", kept);
      return false;
    }
    std::optional<Prepared> p = prepare(chip, graph, options, runs, kept, out.replay_note);
    if (!p) return false;
    const bool room = std::all_of(p->plan.runs.begin(), p->plan.runs.end(),
                                  [&](const ops::RunPlan& r) { return r.first_repeating + 4 <= kept; });
    if (!room) {  // no boundary pair to match: keep one more
      ++kept;
      continue;
    }
    ops::BoundaryRecorder recorder(p->plan.watch, p->lowered.program.cores.size() * chip.engines.size());
    sim::Trace trace = sim::Simulator(chip).run(p->lowered.program, &recorder);
    std::size_t failed = 0;
    const auto map = ops::ReplayMap::match(p->reduced, p->plan, p->lowered.program, trace, recorder.boundaries(),
                                           out.replay_note, failed);
    if (!map) {
      // Keep one more unit: a later pair of boundaries may match; at the most, drop the run.
      if (kept < kMostKept) {
        ++kept;
      } else {
        runs.erase(runs.begin() + static_cast<std::ptrdiff_t>(failed));
        if (runs.empty()) return false;
      }
      continue;
    }
    out.timeline = ops::build_timeline(graph, chip, p->lowered, trace, *map);
    out.timeline.simulated_commands = p->lowered.program.command_count();
    out.lowered = std::move(p->lowered);
    out.trace = std::move(trace);
    out.replay_note.clear();
    return true;
  }
  return false;
}

// Loop replay (ops/loop_replay.hpp) of `out.lowered`, lowered with its chunk loops cut: true
// when every cut loop's repetition is proven (out's trace and timeline filled); false with the
// reason in `out.replay_note`.
bool replay_loops(const hw::Chip& chip, Simulation& out) {
  const ops::ReplayPlan plan = ops::plan_loop_replay(out.lowered, chip);
  if (plan.refused != ops::ReplayPlan::kNone) {
    out.loop_note = plan.refusal;
    return false;
  }
  ops::BoundaryRecorder recorder(plan.watch, out.lowered.program.cores.size() * chip.engines.size());
  sim::Trace trace = sim::Simulator(chip).run(out.lowered.program, &recorder);
  std::size_t failed = 0;
  const auto map = ops::ReplayMap::match_loops(out.lowered.loops, plan, out.lowered.program, trace,
                                               recorder.boundaries(), out.loop_note, failed);
  if (!map) return false;
  out.timeline = ops::build_timeline(out.graph, chip, out.lowered, trace, *map);
  out.timeline.simulated_commands = out.lowered.program.command_count();
  out.timeline.loops_replayed = true;
  out.trace = std::move(trace);
  out.replay_note.clear();
  out.loop_note.clear();
  return true;
}

}  // namespace

Simulation simulate_graph(const hw::Chip& chip, ops::OpGraph graph, const ops::LoweringOptions& options, bool replay) {
  Simulation out;
  if (replay && simulate_replayed(chip, graph, options, out)) {
    out.graph = std::move(graph);
    return out;
  }
  out.graph = std::move(graph);
  if (replay) {
    // No layers replayed: fa2's chunk loops may be. A lowering that cuts none is the full one.
    ops::LoweringOptions cut = options;
    cut.loop_kept = ops::kLoopKeptIterations;
    out.lowered = ops::lower(out.graph, chip, cut);
    if (!out.lowered.loops.empty()) {
      if (replay_loops(chip, out)) return out;
      out.replay_note += (out.replay_note.empty() ? "" : "; ") + out.loop_note;
      out.lowered = ops::lower(out.graph, chip, options);
    }
  } else {
    out.lowered = ops::lower(out.graph, chip, options);
  }
  out.trace = sim::Simulator(chip).run(out.lowered.program);
  out.timeline = ops::build_timeline(out.graph, chip, out.lowered, out.trace);
  out.timeline.simulated_commands = out.lowered.program.command_count();
  out.timeline.replay_note = replay ? out.replay_note : "off";
  return out;
}

Simulation simulate_block(const hw::Chip& chip, const models::ModelSpec& model, const models::Workload& workload,
                          const ops::LoweringOptions& options, const models::Parallelism& parallelism, bool replay) {
  models::validate_parallelism(parallelism, model, workload);
  Simulation out = simulate_graph(
      chip, models::build_attention_block(model, models::chip_workload(workload, parallelism), parallelism.tp), options,
      replay);
  if (!out.timeline.loops_replayed) {
    const std::string loops = replay ? out.loop_note : std::string();
    out.timeline.replay_note = "one attention block: no layers to replay";
    if (!loops.empty()) out.timeline.replay_note += "; " + loops;
  }
  return out;
}

Simulation simulate_step(const hw::Chip& chip, const models::ModelSpec& model, const models::Workload& workload,
                         const models::StepOptions& step, const ops::LoweringOptions& options, bool replay) {
  return simulate_graph(chip, models::build_decoder_step(model, workload, step), options, replay);
}

}  // namespace api
