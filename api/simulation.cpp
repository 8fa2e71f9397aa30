#include "api/simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <variant>

#include "hw/config_error.hpp"
#include "models/attention_block.hpp"
#include "models/weight_format.hpp"
#include "ops/layer_replay.hpp"
#include "ops/loop_replay.hpp"
#include "sim/simulator.hpp"

namespace api {
namespace {

constexpr const char* kLayers = "identical layers";
constexpr const char* kLoops = "repeated chunk iterations of fa2";

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

// The watches of layer replay and loop replay as one, in the order the kernel reaches them (an
// entry comes before another when it starts no later on every queue), and where each went.
struct Watches {
  ops::BoundaryWatch watch;
  std::vector<std::size_t> layer_at, loop_at;
};
std::optional<Watches> merge(const ops::BoundaryWatch& layers, const ops::BoundaryWatch& loops) {
  Watches out;
  auto take = [&](const ops::BoundaryWatch& from, std::size_t w, std::vector<std::size_t>& at) {
    // The unit before it in its run, where the merged watch put it.
    out.watch.previous.push_back(from.follows[w] != 0 ? static_cast<std::uint32_t>(at[from.previous_of(w)]) : 0);
    at.push_back(out.watch.starts.size());
    out.watch.starts.push_back(from.starts[w]);
    out.watch.message_base.push_back(from.message_base[w]);
    out.watch.message_lo.push_back(from.message_lo[w]);
    out.watch.message_hi.push_back(from.message_hi[w]);
    out.watch.follows.push_back(from.follows[w]);
    out.watch.message_previous.push_back(from.message_previous[w]);
  };
  auto no_later = [](const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
    for (std::size_t q = 0; q < a.size(); ++q) {
      if (a[q] > b[q]) return false;
    }
    return true;
  };
  std::size_t i = 0, j = 0;
  while (i < layers.starts.size() || j < loops.starts.size()) {
    if (j == loops.starts.size() || (i < layers.starts.size() && no_later(layers.starts[i], loops.starts[j]))) {
      take(layers, i++, out.layer_at);
    } else if (i == layers.starts.size() || no_later(loops.starts[j], layers.starts[i])) {
      take(loops, j++, out.loop_at);
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::vector<ops::Boundary> pick(const std::vector<ops::Boundary>& all, const std::vector<std::size_t>& at) {
  std::vector<ops::Boundary> out;
  out.reserve(at.size());
  for (std::size_t w : at) out.push_back(all[w]);
  return out;
}

// The replayed run, or false (with the reason in `out.replay_note`) when it cannot be proven.
// `cut_loops`: lower the kept layers with their chunk loops cut, replayed too (ops/loop_replay.hpp);
// when that proof fails, `loops_failed` is set and the caller tries again without.
bool simulate_replayed(const hw::Chip& chip, const ops::OpGraph& graph, const ops::LoweringOptions& options,
                       bool cut_loops, bool& loops_failed, Simulation& out) {
  ops::LoweringOptions lowering = options;
  if (cut_loops) lowering.loop_kept = ops::kLoopKeptIterations;
  // Four units suffice when a run's first unit repeats the next; with micro-batches it holds the
  // previous unit's last commands, and one more is kept (then one more again if the state at the
  // boundaries compared reaches the last kept unit). At the most kept, a run whose boundaries do
  // not match is dropped and the others tried again.
  constexpr std::uint64_t kMostKept = kReplayKeptLayers + 2;
  std::vector<ops::LayerRun> runs = ops::find_layer_runs(graph, kReplayKeptLayers);
  const std::size_t queues = std::size_t{chip.cores} * chip.engines.size();
  for (std::uint64_t kept = kReplayKeptLayers; kept <= kMostKept;) {
    std::erase_if(runs, [&](const ops::LayerRun& r) { return r.units <= kept; });
    if (runs.empty()) {
      out.replay_note = fmt::format("no run of more than {} identical layers", kept);
      return false;
    }
    std::optional<Prepared> p = prepare(chip, graph, lowering, runs, kept, out.replay_note);
    if (!p) return false;
    const bool room = std::all_of(p->plan.runs.begin(), p->plan.runs.end(),
                                  [&](const ops::RunPlan& r) { return r.first_repeating + 4 <= kept; });
    if (!room) {  // no boundary pair to match: keep one more
      ++kept;
      continue;
    }
    const ops::ReplayPlan loop_plan = ops::plan_loop_replay(p->lowered, chip);
    std::optional<Watches> watches = merge(p->plan.watch, loop_plan.watch);
    if (loop_plan.refused != ops::ReplayPlan::kNone || !watches) {
      out.loop_note = loop_plan.refused != ops::ReplayPlan::kNone
                          ? loop_plan.refusal
                          : "a cut chunk loop interleaves with a replayed layer";
      loops_failed = true;
      return false;
    }
    ops::BoundaryRecorder recorder(watches->watch, queues);
    sim::Trace trace = sim::Simulator(chip).run(p->lowered.program, &recorder);
    std::size_t failed = 0;
    const auto map = ops::ReplayMap::match(p->reduced, p->plan, p->lowered.program, trace,
                                           pick(recorder.boundaries(), watches->layer_at), out.replay_note, failed);
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
    std::optional<ops::LoopMap> loops = ops::LoopMap{};
    if (!p->lowered.loops.empty()) {
      const auto stages = ops::match_loops(p->lowered.loops, loop_plan, p->lowered.program, trace,
                                           pick(recorder.boundaries(), watches->loop_at), out.loop_note, failed);
      if (stages) loops = ops::LoopMap::build(*stages, *map, queues, out.loop_note);
      if (!stages || !loops) {
        loops_failed = true;
        return false;
      }
    }
    out.timeline = ops::build_timeline(graph, chip, p->lowered, trace, *map, *loops);
    out.timeline.simulated_commands = p->lowered.program.command_count();
    out.timeline.replayed_what = p->lowered.loops.empty() ? kLayers : fmt::format("{} and {}", kLayers, kLoops);
    out.lowered = std::move(p->lowered);
    out.trace = std::move(trace);
    out.replay_note.clear();
    out.loop_note.clear();
    return true;
  }
  return false;
}

// Loop replay (ops/loop_replay.hpp) of `out.lowered`, lowered with its chunk loops cut and no
// layers left out: true when every cut loop's repetition is proven (out's trace and timeline
// filled); false with the reason in `out.loop_note`.
bool replay_loops(const hw::Chip& chip, Simulation& out) {
  const ops::ReplayPlan plan = ops::plan_loop_replay(out.lowered, chip);
  if (plan.refused != ops::ReplayPlan::kNone) {
    out.loop_note = plan.refusal;
    return false;
  }
  const std::size_t queues = out.lowered.program.cores.size() * chip.engines.size();
  ops::BoundaryRecorder recorder(plan.watch, queues);
  sim::Trace trace = sim::Simulator(chip).run(out.lowered.program, &recorder);
  std::size_t failed = 0;
  const auto stages = ops::match_loops(out.lowered.loops, plan, out.lowered.program, trace, recorder.boundaries(),
                                       out.loop_note, failed);
  if (!stages) return false;
  const ops::ReplayMap layers = ops::ReplayMap::identity();
  const auto loops = ops::LoopMap::build(*stages, layers, queues, out.loop_note);
  if (!loops) return false;
  out.timeline = ops::build_timeline(out.graph, chip, out.lowered, trace, layers, *loops);
  out.timeline.simulated_commands = out.lowered.program.command_count();
  out.timeline.replayed_what = kLoops;
  out.trace = std::move(trace);
  out.replay_note.clear();
  out.loop_note.clear();
  return true;
}

// Quantised floating-point weights (fp8 blocks, MXFP8/6/4, NVFP4) run natively where the cube has
// their element type, and weight-only (dequantised to bf16) where it has not, as FP8 and MXFP4
// checkpoints run on GPUs without those rates (models/weight_format.hpp). Activations fixed by
// --act-dtype have no fallback: a cube without their element refuses the run, naming the op; weights
// narrower than it are converted on the vector unit where the chip has no rate for them.
void fit_quantised_weights(const hw::Chip& chip, ops::OpGraph& graph) {
  for (ops::OpId v = 0; v < boost::num_vertices(graph); ++v) {
    ops::OpNode& node = graph[v];
    if (!std::holds_alternative<ops::MatmulShape>(node.payload)) continue;
    const ops::MatmulShape& s = node.mm();
    if (!s.act_fixed) {
      if (chip.cube_macs(node.dtype) == 0) models::dequantise_to_bf16(node);  // nothing for other ops
      continue;
    }
    if (chip.cube_macs(node.dtype) == 0) {
      throw hw::InputError(
          "act_dtype",
          fmt::format("{} has no {} tensor rate (engines.{}.cube_macs_per_lane_per_cycle lists none), and op '{}' "
                      "multiplies its activations in {}: use --act-dtype auto (the weights' element where the chip "
                      "has it, else bf16) or bf16",
                      chip.name, hw::name_of(node.dtype), chip.engines[chip.tensor_engine()].name, node.name,
                      hw::name_of(node.dtype)));
    }
    if (chip.cube_macs(s.b_element) == 0) models::convert_narrow_weights(node);
  }
}

// A chip lists the cube dtypes its tensor engine has (Ampere has no fp8): a graph with a matrix in
// fp8 the weights' format does not decide (DeepSeek-V3.2's fp8 indexer keys) on a chip without
// it is refused by its first such op, before anything is lowered, instead of dividing by a rate
// of zero.
void require_cube_dtypes(const hw::Chip& chip, const ops::OpGraph& graph) {
  if (chip.cube_macs(hw::DType::fp8) != 0) return;
  for (ops::OpId v = 0; v < boost::num_vertices(graph); ++v) {
    const ops::OpNode& node = graph[v];
    if (node.dtype != hw::DType::fp8 || !std::holds_alternative<ops::MatmulShape>(node.payload)) continue;
    throw hw::InputError("model", fmt::format("{} has no fp8 tensor rate (engines.tensor.cube_macs_per_lane_per_cycle "
                                              "lists no fp8), and op '{}' of the model multiplies in fp8 whatever "
                                              "the weights' format: run it on a chip with an fp8 rate",
                                              chip.name, node.name));
  }
}

}  // namespace

Simulation simulate_graph(const hw::Chip& chip, ops::OpGraph graph, const ops::LoweringOptions& options, bool replay) {
  fit_quantised_weights(chip, graph);
  require_cube_dtypes(chip, graph);
  Simulation out;
  if (replay) {
    bool loops_failed = false;
    if (simulate_replayed(chip, graph, options, true, loops_failed, out)) {
      out.graph = std::move(graph);
      return out;
    }
    // The cut loops' proof failed: the layers alone may still be replayed.
    const std::string loop_note = out.loop_note;
    if (loops_failed && simulate_replayed(chip, graph, options, false, loops_failed, out)) {
      out.timeline.replay_note.clear();
      out.graph = std::move(graph);
      return out;
    }
    out.loop_note = loop_note;
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
  if (out.timeline.replayed_what.empty()) {
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
