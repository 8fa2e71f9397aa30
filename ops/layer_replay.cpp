#include "ops/layer_replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>

namespace ops {
namespace {

// Op ids of each layer: [first, end); nullopt when some layer's ops are not contiguous.
std::optional<std::vector<std::pair<OpId, OpId>>> layer_ranges(const OpGraph& graph) {
  std::vector<std::pair<OpId, OpId>> ranges;
  int current = -1;
  for (OpId v = 0; v < boost::num_vertices(graph); ++v) {
    const int layer = graph[v].layer;
    if (layer < 0) continue;
    if (layer == current) {
      if (ranges.back().second != v) return std::nullopt;
      ranges.back().second = v + 1;
      continue;
    }
    if (layer != current + 1 && !(current == -1 && layer == 0)) return std::nullopt;
    current = layer;
    ranges.emplace_back(v, v + 1);
  }
  return ranges;
}

// Whether layer `next` repeats layer `prev` (ranges of equal size): the same ops and in-edges,
// shifted by the distance between them; the schedule keys shifted by one constant.
bool same_layer(const OpGraph& g, std::pair<OpId, OpId> prev, std::pair<OpId, OpId> next) {
  if (next.second - next.first != prev.second - prev.first) return false;
  const OpId shift = next.first - prev.first;
  const std::int64_t schedule_shift = std::int64_t{g[next.first].schedule} - std::int64_t{g[prev.first].schedule};
  for (OpId u = prev.first; u < prev.second; ++u) {
    const OpId v = u + shift;
    const OpNode &a = g[u], &b = g[v];
    if (a.name != b.name || a.kind != b.kind || a.shape != b.shape || a.dtype != b.dtype || a.flops != b.flops ||
        a.kv_bytes != b.kv_bytes || !(a.payload == b.payload) ||
        std::int64_t{b.schedule} - std::int64_t{a.schedule} != schedule_shift) {
      return false;
    }
    if (boost::in_degree(u, g) != boost::in_degree(v, g)) return false;
    auto [ea, enda] = boost::in_edges(u, g);
    auto [eb, endb] = boost::in_edges(v, g);
    for (; ea != enda; ++ea, ++eb) {
      if (g[*ea].kind != g[*eb].kind || boost::source(*eb, g) != boost::source(*ea, g) + shift) return false;
    }
  }
  return true;
}

// Position of an op among the units of a run (first unit at layer a, p layers each): layers
// before the run at their layer, the run's at a + (layer - a) / p, later ones beyond the run; ops
// outside the layers before the first one at the lowest, after it at the highest.
std::vector<std::int64_t> position_units(const OpGraph& g, std::int64_t a, std::int64_t p) {
  std::vector<std::int64_t> out(boost::num_vertices(g));
  bool seen_layer = false;
  for (OpId v = 0; v < out.size(); ++v) {
    const std::int64_t layer = g[v].layer;
    if (layer >= 0) {
      seen_layer = true;
      out[v] = layer < a ? layer : a + (layer - a) / p;
    } else {
      out[v] = seen_layer ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
    }
  }
  return out;
}

using sim::is_message;

}  // namespace

std::vector<LayerRun> find_layer_runs(const OpGraph& graph, std::uint64_t kept) {
  const auto ranges = layer_ranges(graph);
  if (!ranges || ranges->empty()) return {};
  const std::size_t L = ranges->size();
  // equal[p][l]: layer l repeats layer l - p.
  std::vector<std::vector<std::uint8_t>> equal(kMaxReplayPeriod + 1, std::vector<std::uint8_t>(L, 0));
  for (std::uint64_t p = 1; p <= kMaxReplayPeriod; ++p) {
    for (std::size_t l = p; l < L; ++l) equal[p][l] = same_layer(graph, (*ranges)[l - p], (*ranges)[l]);
  }
  std::vector<LayerRun> runs;
  for (std::size_t first = 0; first < L;) {
    std::optional<LayerRun> best;
    for (std::uint64_t p = 1; p <= kMaxReplayPeriod && first + p <= L; ++p) {
      std::size_t end = first + p;  // layers first..end-1 repeat with period p
      while (end < L && equal[p][end]) ++end;
      LayerRun run{static_cast<int>(first), p, (end - first) / p, (*ranges)[first].first,
                   (*ranges)[first + p - 1].second - (*ranges)[first].first};
      if (run.saved_ops(kept) > (best ? best->saved_ops(kept) : 0)) best = run;
    }
    if (!best) {
      ++first;
      continue;
    }
    runs.push_back(*best);
    first += best->units * best->period;
  }
  if (runs.size() > kMaxReplayRuns) {
    std::stable_sort(runs.begin(), runs.end(),
                     [&](const LayerRun& x, const LayerRun& y) { return x.saved_ops(kept) > y.saved_ops(kept); });
    runs.resize(kMaxReplayRuns);
    std::sort(runs.begin(), runs.end(), [](const LayerRun& x, const LayerRun& y) { return x.first_op < y.first_op; });
  }
  return runs;
}

ReducedGraph reduce_graph(const OpGraph& graph, const std::vector<LayerRun>& runs, std::uint64_t kept) {
  ReducedGraph out;
  out.runs = runs;
  out.kept = kept;
  // Left-out op ranges [cut, resume) of each run, in order, and the ops left out before each.
  std::vector<OpId> cut, resume, gap_before;
  OpId gaps = 0;
  for (const LayerRun& run : runs) {
    if (run.units <= kept) throw std::logic_error("reduce_graph: nothing to leave out");
    if (!cut.empty() && run.first_op < resume.back()) throw std::logic_error("reduce_graph: runs overlap");
    cut.push_back(run.first_op + kept * run.ops_per_unit);
    resume.push_back(run.first_op + run.units * run.ops_per_unit);
    gap_before.push_back(gaps);
    out.first_op.push_back(run.first_op - gaps);
    gaps += resume.back() - cut.back();
  }
  // The run whose left-out range holds v, or whose left-out ranges all lie before v.
  auto runs_before = [&](OpId v) {
    return static_cast<std::size_t>(std::upper_bound(cut.begin(), cut.end(), v) - cut.begin());
  };
  auto left_out = [&](OpId v) {
    const std::size_t r = runs_before(v);
    return r > 0 && v < resume[r - 1];
  };
  auto reduced_id = [&](OpId v) {
    const std::size_t r = runs_before(v);
    return r == 0 ? v : v - gap_before[r - 1] - (resume[r - 1] - cut[r - 1]);
  };
  const std::size_t n = boost::num_vertices(graph);
  for (OpId v = 0; v < n; ++v) {
    if (!left_out(v)) add_op(out.graph, graph[v]);
  }
  for (OpId v = 0; v < n; ++v) {
    if (left_out(v)) continue;
    for (auto [e, end] = boost::in_edges(v, graph); e != end; ++e) {
      OpId u = boost::source(*e, graph);
      if (left_out(u)) {
        const std::size_t r = runs_before(u) - 1;
        if (v < resume[r]) continue;  // a kept op fed by a left-out one: not a run
        u -= resume[r] - cut[r];      // the last units are the kept ones, shifted
      }
      add_dependency(out.graph, reduced_id(u), reduced_id(v), graph[*e].kind);
    }
  }
  return out;
}

namespace {

// Blocks per queue: block k runs from the first command of layer a + k to the first of a later
// layer. Micro-batches let a layer's last commands follow the next layer's first ones, so block 0
// may hold commands of the layer before the run (it then need not repeat), and the last block
// holds the last layer's whole tail (it is never compared). Blocks 1..K-2 must have one length.
// Fills the plan's starts, run ends and per-layer lengths; false (with the refusal) when not.
bool block_starts(RunPlan& plan, std::string& refusal, const Lowered& lowered, const hw::Chip& chip,
                  const std::vector<std::int64_t>& position, std::int64_t a, std::uint64_t K) {
  const std::size_t engines = chip.engines.size();
  const std::size_t queues = plan.run_end.size();
  // firsts[k][q]: the first command of layer a + k or later on queue q, the least of the first
  // commands there of the ops at positions a + k and past (Lowered::first_command).
  std::vector<std::vector<std::uint32_t>> firsts(K + 1);
  for (std::size_t q = 0; q < queues; ++q) {
    firsts[0].push_back(static_cast<std::uint32_t>(lowered.program.cores[q / engines].queues[q % engines].size()));
  }
  for (std::uint64_t k = 1; k <= K; ++k) firsts[k] = firsts[0];
  for (OpId v = 0; v < position.size(); ++v) {
    if (position[v] < a) continue;
    const std::uint64_t reach = std::min<std::uint64_t>(K, static_cast<std::uint64_t>(position[v] - a));
    const std::uint32_t* first = lowered.first_command.data() + v * queues;
    for (std::size_t q = 0; q < queues; ++q) {
      if (first[q] == Lowered::kNoCommand) continue;
      for (std::uint64_t k = 0; k <= reach; ++k) firsts[k][q] = std::min(firsts[k][q], first[q]);
    }
  }
  for (std::size_t q = 0; q < queues; ++q) {
    for (std::uint64_t k = 0; k < K; ++k) plan.starts[k][q] = firsts[k][q];
    plan.run_end[q] = firsts[K][q];
    plan.per_layer[q] = firsts[K - 1][q] - firsts[K - 2][q];
    for (std::uint64_t k = 1; k + 1 < K; ++k) {
      if (firsts[k + 1][q] - firsts[k][q] != plan.per_layer[q]) {
        refusal = fmt::format("core {} {}: the kept layers lower to different command counts", q / engines,
                              chip.engines[q % engines].name);
        return false;
      }
    }
  }
  return true;
}

// Message bases: the lowest message a kept layer's barriers send (0 when none).
std::vector<std::uint32_t> message_bases(const Lowered& lowered, const std::vector<std::int64_t>& position,
                                         std::int64_t a, std::uint64_t K) {
  std::vector<std::uint32_t> base(K, std::numeric_limits<std::uint32_t>::max());
  for (OpId v = 0; v < position.size(); ++v) {
    // The extremes of position stand for "outside the layers".
    if (position[v] < a || position[v] >= a + static_cast<std::int64_t>(K) || lowered.lowest_send[v] == 0) continue;
    const auto k = static_cast<std::size_t>(position[v] - a);
    base[k] = std::min(base[k], lowered.lowest_send[v]);
  }
  for (std::uint32_t& b : base) {
    if (b == std::numeric_limits<std::uint32_t>::max()) b = 0;
  }
  return base;
}

}  // namespace

// Command i of queue q a shifted copy of command i - P: the same command once op ids move by a
// layer's ops, message ids by a layer's messages, waited-for ids by the waited engine's block length.
bool repeats_shifted(const RunPlan& plan, std::size_t engines, std::uint64_t ops_per_layer, std::size_t q,
                     const sim::Command& c, const sim::Command& p) {
  bool same = c.kind == p.kind && c.wait_count == p.wait_count && c.op == p.op + ops_per_layer;
  if (same && is_message(c)) {
    same = c.msg == p.msg + plan.messages_per_layer &&
           (c.kind != sim::CommandKind::wait_msg || c.msg_count == p.msg_count);
  } else if (same) {
    same = c.amount == p.amount && c.row_bytes == p.row_bytes && c.direction == p.direction;
  }
  for (std::uint8_t w = 0; same && w < c.wait_count; ++w) {
    const std::size_t on = (q / engines) * engines + c.wait_engine[w];
    same = c.wait_engine[w] == p.wait_engine[w] &&
           (c.wait_id[w] == 0 ? p.wait_id[w] == 0 : c.wait_id[w] == p.wait_id[w] + plan.per_layer[on]);
  }
  return same;
}

namespace {

// One run's plan; false (with the refusal) when its kept units do not lower to shifted copies.
bool plan_run(RunPlan& plan, std::string& refusal, const ReducedGraph& reduced, std::size_t r, const Lowered& lowered,
              const hw::Chip& chip) {
  const LayerRun& run = reduced.runs[r];
  const std::size_t engines = chip.engines.size();
  const std::size_t queues = lowered.program.cores.size() * engines;
  const std::int64_t a = run.first_layer;
  const std::vector<std::int64_t> position = position_units(reduced.graph, a, static_cast<std::int64_t>(run.period));
  const std::uint64_t K = reduced.kept;
  plan.starts.assign(K, std::vector<std::uint32_t>(queues, 0));
  plan.run_end.assign(queues, 0);
  plan.per_layer.assign(queues, 0);
  if (K < 4) throw std::logic_error("plan_replay: keep at least four units");
  if (!block_starts(plan, refusal, lowered, chip, position, a, K)) return false;
  const std::vector<std::uint32_t> base = message_bases(lowered, position, a, K);
  plan.message_base = base;
  plan.messages_per_layer = base[K - 2] - base[K - 3];
  for (std::uint64_t k = 2; k + 1 < K; ++k) {
    if (base[k] - base[k - 1] != plan.messages_per_layer) {
      refusal = "the kept layers use different message counts";
      return false;
    }
  }
  // One pass a queue over its blocks 0 .. K - 2, each decoded once (the one before it kept
  // decoded beside it): block 1 repeating block 0 decides first_repeating (with the message
  // bases); blocks 2 .. K - 2 must each repeat the one before. Every compared block repeats the one
  // before it; the messages they use, relative to their unit's base, bound the live messages the
  // watch records (block 0's only when it repeats too).
  bool first_repeats = base[1] - base[0] == plan.messages_per_layer;
  constexpr std::int64_t kNoLow = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kNoHigh = std::numeric_limits<std::int64_t>::min();
  std::int64_t lo = kNoLow, hi = kNoHigh, lo0 = kNoLow, hi0 = kNoHigh;
  auto bound = [&](const sim::Command& c, std::uint64_t k, std::int64_t& low, std::int64_t& high) {
    if (!is_message(c)) return;
    const std::int64_t m = std::int64_t{c.msg} - std::int64_t{base[k]};
    low = std::min(low, m);
    high = std::max(high, m);
  };
  std::vector<sim::Command> before, now;
  for (std::size_t q = 0; q < queues; ++q) {
    const auto& queue = lowered.program.cores[q / engines].queues[q % engines];
    const std::uint32_t P = plan.per_layer[q];
    const bool first_same_length = plan.starts[1][q] - plan.starts[0][q] == P;
    sim::CommandQueue::Reader read(queue, first_same_length ? plan.starts[0][q] : plan.starts[1][q]);
    if (first_same_length) {
      read_unit(read, P, before);
      for (const sim::Command& c : before) bound(c, 0, lo0, hi0);
    }
    for (std::uint64_t k = 1; k + 1 < K; ++k) {
      read_unit(read, P, now);
      if (k == 1) {
        first_repeats = first_repeats && first_same_length;
        for (std::uint32_t i = 0; first_repeats && i < P; ++i) {
          first_repeats = repeats_shifted(plan, engines, run.ops_per_unit, q, now[i], before[i]);
        }
      }
      for (std::uint32_t i = 0; i < P; ++i) {
        bound(now[i], k, lo, hi);
        if (k >= 2 && !repeats_shifted(plan, engines, run.ops_per_unit, q, now[i], before[i])) {
          const std::int64_t layer = a + static_cast<std::int64_t>(k * run.period);
          refusal = fmt::format("core {} {}: command {} of layer {} does not repeat layer {}", q / engines,
                                chip.engines[q % engines].name, plan.starts[k][q] + i, layer,
                                layer - static_cast<std::int64_t>(run.period));
          return false;
        }
      }
      before.swap(now);
    }
  }
  plan.first_repeating = first_repeats ? 0 : 1;
  if (first_repeats) lo = std::min(lo, lo0), hi = std::max(hi, hi0);
  plan.message_lo = lo == std::numeric_limits<std::int64_t>::max() ? 0 : lo;
  plan.message_hi = hi == std::numeric_limits<std::int64_t>::min() ? 0 : hi;
  return true;
}

}  // namespace

ReplayPlan plan_replay(const ReducedGraph& reduced, const Lowered& lowered, const hw::Chip& chip) {
  ReplayPlan plan;
  for (std::size_t r = 0; r < reduced.runs.size(); ++r) {
    RunPlan run;
    if (!plan_run(run, plan.refusal, reduced, r, lowered, chip)) {
      plan.refused = r;
      return plan;
    }
    // The kernel reaches watched units in order: each run's after the one before it, on every queue.
    if (!plan.runs.empty()) {
      for (std::size_t q = 0; q < run.run_end.size(); ++q) {
        if (run.starts[0][q] < plan.runs.back().run_end[q]) {
          plan.refusal = fmt::format("the runs of layers from {} and {} interleave", reduced.runs[r - 1].first_layer,
                                     reduced.runs[r].first_layer);
          plan.refused = r;
          return plan;
        }
      }
    }
    for (std::uint64_t k = 0; k < reduced.kept; ++k) {
      plan.watch.starts.push_back(run.starts[k]);
      plan.watch.message_base.push_back(run.message_base[k]);
      plan.watch.message_lo.push_back(run.message_lo);
      plan.watch.message_hi.push_back(run.message_hi);
      plan.watch.follows.push_back(k > 0);
      plan.watch.message_previous.push_back(k > 0 ? run.message_base[k - 1] : 0);
    }
    plan.runs.push_back(std::move(run));
  }
  return plan;
}

ReplayMap ReplayMap::identity() { return ReplayMap{}; }

std::optional<ReplayStage> find_replay_stage(const RunPlan& run, const Boundary* b, std::uint64_t K,
                                             const StageShape& shape, const sim::Trace& trace, std::size_t engines,
                                             std::string& why, bool& fatal) {
  using Stage = ReplayStage;
  const std::size_t queues = run.run_end.size();
  // Boundary w (unit a + w) and w + 1: j = a + w, for w past the first repeating block (what
  // is in flight at B_j must be in repeating blocks) up to K - 3 (period j may meet block w + 2).
  for (std::uint64_t w = run.first_repeating + 1; w + 3 <= K; ++w) {
    const Boundary &bj = b[w], &bn = b[w + 1];
    if (!bj.seen || !bn.seen || !bn.same_as(shape.boundaries_apart) || bn.time <= bj.time) {
      continue;
    }
    bool inside = true;
    for (std::size_t q = 0; q < queues && inside; ++q) {
      const bool idle_queue = run.per_layer[q] == 0;
      const std::uint32_t last_block = run.starts[K - 1][q];
      inside = bj.completed[q] >= run.starts[run.first_repeating][q] &&
               (bn.head[q] < last_block || (idle_queue && bn.head[q] <= last_block));
    }
    if (!inside) {
      why = fmt::format("the state at the matching boundaries reaches outside the kept {}", shape.units);
      continue;
    }
    if (bn.time > shape.next_first) {
      why = shape.overlap;
      fatal = true;
      return std::nullopt;
    }
    Stage m;
    m.dropped = shape.dropped;
    m.ops_per_unit = shape.ops_per_unit;
    m.split_op = shape.first_op + (w + 1) * m.ops_per_unit;
    m.t_first = bj.time;
    m.t_next = bn.time;
    m.delta = bn.time - bj.time;
    // The simulated records up to B_{j+1} are this stage's (later runs move only later
    // records), and no later one is written in period j or before it. With the state inside the
    // kept units, only their commands can be written in period j, and none after them before it.
    for (std::size_t q = 0; q < queues; ++q) {
      m.split.push_back(run.starts[w + 1][q]);
      m.per_layer.push_back(run.per_layer[q]);
      const auto& records = trace.cores[q / engines][q % engines];
      std::uint64_t lo = records.size(), hi = 0;
      const std::uint64_t begin = shape.scan_run_only ? run.starts[0][q] : 0;
      const std::uint64_t end =
          shape.scan_run_only ? std::min<std::uint64_t>(run.run_end[q], records.size()) : records.size();
      // The kernel completes a queue's commands in order, and every command before
      // bj.completed[q] had ended by t_j: none is written in period j, and one of them at or past
      // E_q ran before it. Every command from bn.head[q] on issued after t_{j+1}: none is either.
      // So only the commands between the two are read.
      const std::uint64_t done = std::min<std::uint64_t>(std::max<std::uint64_t>(begin, bj.completed[q]), end);
      if (std::max<std::uint64_t>(begin, m.split[q]) < done) {
        why = fmt::format("a command of a later {} ran before the repeated period", shape.unit);
        fatal = true;
        return std::nullopt;
      }
      const std::uint64_t issued = std::min<std::uint64_t>(end, std::max<std::uint64_t>(done, bn.head[q]));
      sim::RecordQueue::Reader record(records, done);
      for (std::uint64_t i = done; i < issued; ++i, record.next()) {
        const sim::CommandRecord& rec = *record;
        const bool repeated =
            m.period_of(rec.start) == Stage::Period::repeated || m.period_of(rec.end) == Stage::Period::repeated;
        if (repeated) {
          lo = std::min(lo, i);
          hi = std::max(hi, i);
        }
        // Only commands of unit j + 1 on can be written after B_{j+1} ... and none of them before B_j.
        if (i >= m.split[q] && m.period_of(rec.start) == Stage::Period::before) {
          why = fmt::format("a command of a later {} ran before the repeated period", shape.unit);
          fatal = true;
          return std::nullopt;
        }
      }
      m.repeated_lo.push_back(lo);
      m.repeated_hi.push_back(hi);
    }
    return m;
  }
  return std::nullopt;
}

std::optional<ReplayMap> ReplayMap::match(const ReducedGraph& reduced, const ReplayPlan& plan,
                                          const sim::Program& program, const sim::Trace& trace,
                                          const std::vector<Boundary>& boundaries, std::string& why,
                                          std::size_t& failed) {
  const std::uint64_t K = reduced.kept;
  const std::size_t R = plan.runs.size();
  ReplayMap out;
  out.stages_.resize(R);
  const std::size_t engines = program.cores.empty() ? 0 : program.cores.front().queues.size();
  // The last run first: each earlier one's repeated period must end before the next one's starts.
  for (std::size_t r = R; r-- > 0;) {
    failed = r;
    StageShape shape;
    shape.dropped = reduced.dropped(r);
    shape.ops_per_unit = reduced.runs[r].ops_per_unit;
    shape.first_op = reduced.first_op[r];
    shape.next_first = r + 1 < R ? out.stages_[r + 1].t_first : ~sim::Tick{0};
    if (r + 1 < R) {
      shape.overlap = fmt::format("the repeated periods of the runs from layers {} and {} overlap in time",
                                  reduced.runs[r].first_layer, reduced.runs[r + 1].first_layer);
    }
    why = "no two boundaries of the kept layers with the same state";
    bool fatal = false;
    std::optional<Stage> found =
        find_replay_stage(plan.runs[r], boundaries.data() + r * K, K, shape, trace, engines, why, fatal);
    if (!found) return std::nullopt;
    out.stages_[r] = std::move(*found);
  }
  out.add_intervals();
  return out;
}

std::uint64_t ReplayMap::index_shift(std::size_t k, std::size_t q, std::uint64_t m) const {
  // Interval 2s is before stage s's period, 2s + 1 its period, the last after every stage.
  std::uint64_t shift = 0;
  const std::size_t s = k / 2;
  for (std::size_t t = 0; t < s && t < stages_.size(); ++t) shift += stages_[t].dropped * stages_[t].per_layer[q];
  if (k % 2 == 1 && s < stages_.size()) shift += m * stages_[s].per_layer[q];
  return shift;
}

void ReplayMap::add_intervals() {
  intervals_.clear();
  sim::Tick shift = 0;
  OpId op_shift = 0;
  for (const Stage& s : stages_) {
    intervals_.push_back({s.t_first, shift, op_shift, 0, 0, 0});
    intervals_.push_back({s.t_next, shift, op_shift, s.dropped, s.delta, s.ops_per_unit});
    shift += s.dropped * s.delta;
    op_shift += s.dropped * s.ops_per_unit;
  }
  intervals_.push_back({~sim::Tick{0}, shift, op_shift, 0, 0, 0});
}

OpId ReplayMap::template_op(OpId v) const {
  for (const Stage& s : stages_) {
    if (v < s.split_op) continue;
    const OpId inserted = s.dropped * s.ops_per_unit;
    v = v >= s.split_op + inserted ? v - inserted : s.split_op + (v - s.split_op) % s.ops_per_unit;
  }
  return v;
}

std::uint64_t ReplayMap::multiplicity(OpId r) const {
  for (const Stage& s : stages_) {
    if (r >= s.split_op && r < s.split_op + s.ops_per_unit) return 1 + s.dropped;
  }
  return 1;
}

std::uint64_t ReplayMap::size_at(std::size_t s, std::size_t q, std::uint64_t reduced_size) const {
  for (std::size_t t = s; t < stages_.size(); ++t) reduced_size += stages_[t].dropped * stages_[t].per_layer[q];
  return reduced_size;
}

std::uint64_t ReplayMap::full_size(std::size_t q, std::uint64_t reduced_size) const {
  return size_at(0, q, reduced_size);
}

sim::Tick ReplayMap::write(std::size_t s, std::size_t q, std::uint64_t f, bool end, const sim::RecordQueue& r) const {
  // Command c of G_{s+1}: the simulated record, or the next stage's.
  auto at = [&](std::uint64_t c) {
    if (s + 1 == stages_.size()) return end ? r[c].end : r[c].start;
    return write(s + 1, q, c, end, r);
  };
  const Stage& st = stages_[s];
  using Period = Stage::Period;
  const std::uint64_t size = size_at(s + 1, q, r.size());
  const std::uint64_t P = st.per_layer[q], D = st.dropped;
  if (f < st.split[q] && f < size && st.period_of(at(f)) != Period::after) return at(f);
  if (P > 0 && D > 1 && st.repeated_lo[q] <= st.repeated_hi[q]) {
    // f = c + m P for a command c written in the repeated period, 1 <= m < D.
    const std::uint64_t lo = st.repeated_lo[q], hi = st.repeated_hi[q];
    const std::uint64_t m_min = f > hi ? std::max<std::uint64_t>(1, (f - hi + P - 1) / P) : 1;
    const std::uint64_t m_max = f >= lo ? std::min<std::uint64_t>(D - 1, (f - lo) / P) : 0;
    for (std::uint64_t m = m_min; m <= m_max; ++m) {
      const sim::Tick t = at(f - m * P);
      if (st.period_of(t) == Period::repeated) return t + m * st.delta;
    }
  }
  if (f >= D * P) {
    const std::uint64_t c = f - D * P;
    if (c < size) {
      const sim::Tick t = at(c);
      if (st.period_of(t) != Period::before) return t + D * st.delta;
    }
  }
  throw std::logic_error(fmt::format("layer replay: no reduced record for command {} of queue {}", f, q));
}

}  // namespace ops
