#include "ops/loop_replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace ops {
namespace {

using sim::is_message;

// One loop's run: its kept units as blocks of every queue, each a shifted copy of the one before
// it (unit 0 too, unless it differs: first_repeating = 1). False, with the refusal, when not.
bool plan_loop(RunPlan& run, std::string& refusal, const LoweredLoop& loop, const Lowered& lowered,
               const hw::Chip& chip) {
  const std::size_t engines = chip.engines.size();
  const std::size_t K = loop.starts.size() - 1;
  const std::size_t queues = lowered.program.cores.size() * engines;
  run.starts.assign(loop.starts.begin(), loop.starts.begin() + static_cast<std::ptrdiff_t>(K));
  run.run_end = loop.starts[K];
  run.per_layer.assign(queues, 0);
  run.message_base.assign(K, 0);
  auto where = [&](std::size_t q) { return fmt::format("core {} {}", q / engines, chip.engines[q % engines].name); };
  for (std::size_t q = 0; q < queues; ++q) {
    run.per_layer[q] = loop.starts[K][q] - loop.starts[K - 1][q];
    for (std::size_t k = 1; k < K; ++k) {
      if (loop.starts[k + 1][q] - loop.starts[k][q] != run.per_layer[q]) {
        refusal = fmt::format("{}: the chunk iterations of op {} lower to different command counts", where(q), loop.op);
        return false;
      }
    }
  }
  // One pass a queue over its iterations 0 .. K - 1, each decoded once (the one before it kept
  // decoded beside it): iteration 1 repeating iteration 0 decides first_repeating; iterations
  // 2 .. K - 1 (contiguous, checked above) must each repeat the one before. None may hold a message.
  auto repeats = [&](std::size_t q, const std::vector<sim::Command>& now, const std::vector<sim::Command>& before) {
    for (std::size_t i = 0; i < now.size(); ++i) {
      if (is_message(now[i]) || !repeats_shifted(run, engines, 0, q, now[i], before[i])) return false;
    }
    return true;
  };
  bool first_repeats = true;
  std::vector<sim::Command> before, now;
  for (std::size_t q = 0; q < queues; ++q) {
    const std::uint32_t P = run.per_layer[q];
    const bool first_same_length = run.starts[1][q] - run.starts[0][q] == P;
    first_repeats = first_repeats && first_same_length;
    if (P == 0) continue;  // no command in any kept iteration: nothing to compare
    const auto& queue = lowered.program.cores[q / engines].queues[q % engines];
    sim::CommandQueue::Reader read(queue, first_repeats ? run.starts[0][q] : run.starts[1][q]);
    if (first_repeats) {
      read_unit(read, P, before);
      read_unit(read, P, now);
      first_repeats = repeats(q, now, before);
      before.swap(now);
    } else {
      read_unit(read, P, before);
    }
    for (std::size_t k = 2; k < K; ++k) {
      read_unit(read, P, now);
      if (!repeats(q, now, before)) {
        refusal =
            fmt::format("{}: chunk iteration {} of op {} does not repeat the one before it", where(q), k, loop.op);
        return false;
      }
      before.swap(now);
    }
  }
  run.first_repeating = first_repeats ? 0 : 1;
  return true;
}

// The run whose units are p iterations each: the first K / p of them (the other kept iterations
// follow the run, as the left-out ones did).
RunPlan with_period(const RunPlan& run, std::uint64_t p) {
  RunPlan out;
  const std::uint64_t U = run.starts.size() / p;
  for (std::uint64_t k = 0; k < U; ++k) out.starts.push_back(run.starts[k * p]);
  out.run_end = U * p < run.starts.size() ? run.starts[U * p] : run.run_end;
  for (const std::uint32_t P : run.per_layer) out.per_layer.push_back(static_cast<std::uint32_t>(p * P));
  out.message_base.assign(U, 0);
  out.first_repeating = run.first_repeating;  // a unit holding iteration 0 differs when it does
  return out;
}

}  // namespace

ReplayPlan plan_loop_replay(const Lowered& lowered, const hw::Chip& chip) {
  ReplayPlan plan;
  for (std::size_t l = 0; l < lowered.loops.size(); ++l) {
    const LoweredLoop& loop = lowered.loops[l];
    if (loop.starts.size() < 5) throw std::logic_error("plan_loop_replay: keep at least four iterations");
    RunPlan run;
    if (!plan_loop(run, plan.refusal, loop, lowered, chip)) {
      plan.refused = l;
      return plan;
    }
    if (!plan.runs.empty()) {
      for (std::size_t q = 0; q < run.run_end.size(); ++q) {
        if (run.starts[0][q] < plan.runs.back().run_end[q]) {
          plan.refusal = "two cut chunk loops interleave";
          plan.refused = l;
          return plan;
        }
      }
    }
    for (std::size_t k = 0; k < run.starts.size(); ++k) {
      plan.watch.starts.push_back(run.starts[k]);
      plan.watch.message_base.push_back(0);
      plan.watch.message_lo.push_back(0);
      plan.watch.message_hi.push_back(0);
      plan.watch.follows.push_back(k > 0);
      plan.watch.message_previous.push_back(0);
    }
    plan.runs.push_back(std::move(run));
  }
  return plan;
}

std::optional<std::vector<LoopStage>> match_loops(const std::vector<LoweredLoop>& loops, const ReplayPlan& plan,
                                                  const sim::Program& program, const sim::Trace& trace,
                                                  const std::vector<Boundary>& boundaries, std::string& why,
                                                  std::size_t& failed) {
  const std::size_t R = plan.runs.size();
  if (R != loops.size()) throw std::logic_error("loop replay: a plan for other loops");
  std::vector<LoopStage> out(R);
  const std::size_t engines = program.cores.empty() ? 0 : program.cores.front().queues.size();
  std::size_t first_boundary = boundaries.size();
  // The last loop first: each earlier one's repeated period must end before the next one's starts.
  for (std::size_t r = R; r-- > 0;) {
    failed = r;
    const RunPlan& run = plan.runs[r];
    const std::uint64_t K = run.starts.size();
    first_boundary -= K;
    StageShape shape;
    shape.first_op = loops[r].op;  // the copies stay in their op (ops_per_unit 0)
    shape.next_first = r + 1 < R ? out[r + 1].stage.t_first : ~sim::Tick{0};
    shape.scan_run_only = true;
    shape.unit = "chunk iteration";
    shape.units = "chunk iterations";
    shape.overlap = "the repeated periods of two chunk loops overlap in time";
    std::optional<ReplayStage> found;
    for (std::uint64_t p = 1; p <= kMaxLoopPeriod && !found; ++p) {
      if (loops[r].dropped % p != 0 || K / p < run.first_repeating + 4) break;
      why = fmt::format(
          "no two boundaries of the kept iterations of a chunk loop of op {} with the same state "
          "(every 1 to {} iterations)",
          loops[r].op, p);
      const RunPlan units = with_period(run, p);
      std::vector<Boundary> at;
      for (std::uint64_t k = 0; k < units.starts.size(); ++k) at.push_back(boundaries[first_boundary + k * p]);
      shape.dropped = loops[r].dropped / p;
      shape.boundaries_apart = p;
      bool fatal = false;
      found = find_replay_stage(units, at.data(), units.starts.size(), shape, trace, engines, why, fatal);
    }
    if (!found) return std::nullopt;
    out[r].stage = std::move(*found);
    // The loop's span: from its first unit's boundary to the end of its last command.
    out[r].span_begin = boundaries[first_boundary].time;
    sim::Tick end = 0;
    for (std::size_t q = 0; q < run.run_end.size(); ++q) {
      const auto& records = trace.cores[q / engines][q % engines];
      const std::uint64_t stop = std::min<std::uint64_t>(run.run_end[q], records.size());
      for (sim::RecordQueue::Reader w(records, run.starts[0][q]); w.position() < stop; w.next()) {
        end = std::max(end, w->end);
      }
    }
    out[r].span_end = end;
  }
  return out;
}

std::optional<LoopMap> LoopMap::build(const std::vector<LoopStage>& simulated, const ReplayMap& layers,
                                      std::size_t queues, std::string& why) {
  LoopMap map;
  map.copies_.resize(queues);
  map.added_.assign(queues, 0);
  const auto& intervals = layers.intervals();
  for (const LoopStage& loop : simulated) {
    const ReplayStage& st = loop.stage;
    for (std::size_t q = 0; q < queues; ++q) {
      if (st.per_layer[q] > 0) map.copies_[q].push_back({st.split[q], st.split[q] + st.per_layer[q], st.dropped});
    }
    // One interval of the layer map holds the whole loop: its copies are the loop's in G'.
    const std::size_t k = layers.interval_of(loop.span_begin);
    if (layers.interval_of(loop.span_end) != k) {
      why = "a cut chunk loop runs across the boundary of a replayed layer";
      return std::nullopt;
    }
    const ReplayMap::Interval& in = intervals[k];
    for (std::uint64_t m = 0; m <= in.copies; ++m) {
      ReplayStage g = st;
      const sim::Tick shift = in.shift + m * in.step;
      g.t_first += shift;
      g.t_next += shift;
      for (std::size_t q = 0; q < queues; ++q) {
        const std::uint64_t moved = layers.index_shift(k, q, m);
        g.split[q] += moved;
        g.repeated_lo[q] += moved;
        g.repeated_hi[q] += moved;
      }
      map.stages_.push_back(std::move(g));
    }
  }
  std::sort(map.stages_.begin(), map.stages_.end(),
            [](const ReplayStage& a, const ReplayStage& b) { return a.t_first < b.t_first; });
  sim::Tick shift = 0;
  for (std::size_t s = 0; s < map.stages_.size(); ++s) {
    const ReplayStage& st = map.stages_[s];
    if (s > 0 && map.stages_[s - 1].t_next > st.t_first) {
      why = "the repeated periods of two chunk loops overlap in time";
      return std::nullopt;
    }
    map.shift_.push_back(shift);
    shift += st.dropped * st.delta;
    for (std::size_t q = 0; q < queues; ++q) map.added_[q] += st.dropped * st.per_layer[q];
  }
  map.shift_.push_back(shift);
  return map;
}

std::size_t LoopMap::stage_at(sim::Tick t) const {
  return static_cast<std::size_t>(
      std::lower_bound(stages_.begin(), stages_.end(), t,
                       [](const ReplayStage& s, sim::Tick time) { return s.t_next < time; }) -
      stages_.begin());
}

sim::Tick LoopMap::earliest_cut(sim::Tick t) const { return t + shift_[stage_at(t)]; }

sim::Tick LoopMap::latest_cut(sim::Tick t) const {
  const std::size_t s = stage_at(t);
  if (s < stages_.size() && t > stages_[s].t_first) return t + shift_[s] + stages_[s].dropped * stages_[s].delta;
  return t + shift_[s];
}

sim::Tick LoopMap::time_cut(std::size_t q, std::uint64_t c, sim::Tick t) const {
  const std::size_t s = stage_at(t);
  if (s == stages_.size() || t <= stages_[s].t_first) return t + shift_[s];
  const ReplayStage& st = stages_[s];
  if (c >= st.split[q] && c < st.split[q] + st.per_layer[q]) {
    throw std::logic_error("loop replay: a repeated command asked for one time");
  }
  return c < st.split[q] ? earliest(t) : latest(t);
}

}  // namespace ops
