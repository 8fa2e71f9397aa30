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

// Position of an op among the layers: its layer; ops outside the layers before the first one at
// the lowest, after it at the highest.
std::vector<std::int64_t> position_layers(const OpGraph& g) {
  std::vector<std::int64_t> out(boost::num_vertices(g));
  bool seen_layer = false;
  for (OpId v = 0; v < out.size(); ++v) {
    if (g[v].layer >= 0) {
      seen_layer = true;
      out[v] = g[v].layer;
    } else {
      out[v] = seen_layer ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
    }
  }
  return out;
}

bool is_message(const sim::Command& c) {
  return c.kind == sim::CommandKind::send_msg || c.kind == sim::CommandKind::wait_msg;
}

}  // namespace

std::optional<LayerRun> find_layer_run(const OpGraph& graph, std::uint64_t kept) {
  const auto ranges = layer_ranges(graph);
  if (!ranges || ranges->empty()) return std::nullopt;
  std::optional<LayerRun> best;
  std::uint64_t best_saved = 0;
  std::size_t first = 0;
  for (std::size_t l = 1; l <= ranges->size(); ++l) {
    if (l < ranges->size() && same_layer(graph, (*ranges)[l - 1], (*ranges)[l])) continue;
    const std::uint64_t n = l - first, per = (*ranges)[first].second - (*ranges)[first].first;
    if (n > kept && (n - kept) * per > best_saved) {
      best_saved = (n - kept) * per;
      best = LayerRun{static_cast<int>(first), n, (*ranges)[first].first, per};
    }
    first = l;
  }
  return best;
}

ReducedGraph reduce_graph(const OpGraph& graph, const LayerRun& run, std::uint64_t kept) {
  if (run.layers <= kept) throw std::logic_error("reduce_graph: nothing to leave out");
  ReducedGraph out;
  out.run = run;
  out.kept = kept;
  out.dropped = run.layers - kept;
  const OpId cut = run.first_op + kept * run.ops_per_layer;  // first op left out
  const OpId gap = out.dropped * run.ops_per_layer;
  const OpId resume = cut + gap;  // first op after the run
  const std::size_t n = boost::num_vertices(graph);
  auto reduced_id = [&](OpId v) { return v < cut ? v : v - gap; };
  for (OpId v = 0; v < n; ++v) {
    if (v >= cut && v < resume) continue;
    add_op(out.graph, graph[v]);
  }
  for (OpId v = 0; v < n; ++v) {
    if (v >= cut && v < resume) continue;
    for (auto [e, end] = boost::in_edges(v, graph); e != end; ++e) {
      OpId u = boost::source(*e, graph);
      if (u >= cut && u < resume) {
        if (v < resume) continue;  // both left out, or a kept op fed by a left-out one: not a run
        u -= gap;                  // the last layers are the kept ones, shifted
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
bool block_starts(ReplayPlan& plan, const Lowered& lowered, const hw::Chip& chip,
                  const std::vector<std::int64_t>& position, std::int64_t a, std::uint64_t K) {
  const std::size_t engines = chip.engines.size();
  for (std::size_t q = 0; q < plan.run_end.size(); ++q) {
    const auto& queue = lowered.program.cores[q / engines].queues[q % engines];
    std::vector<std::uint32_t> firsts(K + 1, static_cast<std::uint32_t>(queue.size()));
    for (std::size_t i = queue.size(); i-- > 0;) {
      const std::int64_t p = position[queue[i].op];
      for (std::uint64_t k = 0; k <= K && p >= a + static_cast<std::int64_t>(k); ++k) {
        firsts[k] = static_cast<std::uint32_t>(i);
      }
    }
    for (std::uint64_t k = 0; k < K; ++k) plan.watch.starts[k][q] = firsts[k];
    plan.run_end[q] = firsts[K];
    plan.per_layer[q] = firsts[K - 1] - firsts[K - 2];
    for (std::uint64_t k = 1; k + 1 < K; ++k) {
      if (firsts[k + 1] - firsts[k] != plan.per_layer[q]) {
        plan.refusal = fmt::format("core {} {}: the kept layers lower to different command counts", q / engines,
                                   chip.engines[q % engines].name);
        return false;
      }
    }
  }
  return true;
}

// Message bases: the lowest message a kept layer's barriers send (0 when none).
std::vector<std::uint32_t> message_bases(const Lowered& lowered, const hw::Chip& chip,
                                         const std::vector<std::int64_t>& position, std::int64_t a, std::uint64_t K) {
  std::vector<std::uint32_t> base(K, std::numeric_limits<std::uint32_t>::max());
  for (const sim::CoreProgram& core : lowered.program.cores) {
    for (const sim::Command& c : core.queue(chip.tensor_engine())) {
      const std::int64_t p = position[c.op];  // the extremes stand for "outside the layers"
      if (c.kind == sim::CommandKind::send_msg && p >= a && p < a + static_cast<std::int64_t>(K)) {
        const auto k = static_cast<std::size_t>(p - a);
        base[k] = std::min(base[k], c.msg);
      }
    }
  }
  for (std::uint32_t& b : base) {
    if (b == std::numeric_limits<std::uint32_t>::max()) b = 0;
  }
  return base;
}

// Command i of queue q a shifted copy of command i - P: the same command once op ids move by a
// layer's ops, message ids by a layer's messages, waited-for ids by the waited engine's block length.
bool repeats(const ReplayPlan& plan, const Lowered& lowered, std::size_t engines, std::uint64_t ops_per_layer,
             std::size_t q, std::uint32_t i, std::uint32_t P) {
  const auto& queue = lowered.program.cores[q / engines].queues[q % engines];
  const sim::Command &c = queue[i], &p = queue[i - P];
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

}  // namespace

ReplayPlan plan_replay(const ReducedGraph& reduced, const Lowered& lowered, const hw::Chip& chip) {
  ReplayPlan plan;
  const LayerRun& run = reduced.run;
  const std::size_t engines = chip.engines.size();
  const std::size_t queues = lowered.program.cores.size() * engines;
  const std::vector<std::int64_t> position = position_layers(reduced.graph);
  const std::uint64_t K = reduced.kept;
  const std::int64_t a = run.first_layer;
  plan.watch.starts.assign(K, std::vector<std::uint32_t>(queues, 0));
  plan.run_end.assign(queues, 0);
  plan.per_layer.assign(queues, 0);
  if (K < 4) throw std::logic_error("plan_replay: keep at least four layers");
  if (!block_starts(plan, lowered, chip, position, a, K)) return plan;
  const std::vector<std::uint32_t> base = message_bases(lowered, chip, position, a, K);
  plan.watch.message_base = base;
  plan.messages_per_layer = base[K - 2] - base[K - 3];
  for (std::uint64_t k = 2; k + 1 < K; ++k) {
    if (base[k] - base[k - 1] != plan.messages_per_layer) {
      plan.refusal = "the kept layers use different message counts";
      return plan;
    }
  }
  auto same = [&](std::size_t q, std::uint32_t i, std::uint32_t P) {
    return repeats(plan, lowered, engines, run.ops_per_layer, q, i, P);
  };
  plan.first_repeating = base[1] - base[0] == plan.messages_per_layer ? 0 : 1;
  for (std::size_t q = 0; q < queues && plan.first_repeating == 0; ++q) {
    const std::uint32_t P = plan.per_layer[q];
    if (plan.watch.starts[1][q] - plan.watch.starts[0][q] != P) plan.first_repeating = 1;
    for (std::uint32_t i = plan.watch.starts[1][q]; plan.first_repeating == 0 && i < plan.watch.starts[1][q] + P; ++i) {
      if (!same(q, i, P)) plan.first_repeating = 1;
    }
  }
  // Every compared block repeats the one before it; the messages they use, relative to their
  // layer's base, bound the live messages the watch records.
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
  for (std::size_t q = 0; q < queues; ++q) {
    const auto& queue = lowered.program.cores[q / engines].queues[q % engines];
    const std::uint32_t P = plan.per_layer[q];
    for (std::uint64_t k = plan.first_repeating; k + 1 < K; ++k) {
      for (std::uint32_t i = plan.watch.starts[k][q]; i < plan.watch.starts[k][q] + P; ++i) {
        const sim::Command& c = queue[i];
        if (is_message(c)) {
          const std::int64_t r = std::int64_t{c.msg} - std::int64_t{base[k]};
          lo = std::min(lo, r);
          hi = std::max(hi, r);
        }
        if (k >= 2 && !same(q, i, P)) {
          plan.refusal = fmt::format("core {} {}: command {} of layer {} does not repeat layer {}", q / engines,
                                     chip.engines[q % engines].name, i, a + static_cast<std::int64_t>(k),
                                     a + static_cast<std::int64_t>(k) - 1);
          return plan;
        }
      }
    }
  }
  plan.watch.message_lo = lo == std::numeric_limits<std::int64_t>::max() ? 0 : lo;
  plan.watch.message_hi = hi == std::numeric_limits<std::int64_t>::min() ? 0 : hi;
  return plan;
}

ReplayMap ReplayMap::identity(const sim::Program& program, std::size_t ops) {
  ReplayMap m;
  m.split_op_ = static_cast<OpId>(ops);
  for (const sim::CoreProgram& core : program.cores) {
    for (const auto& queue : core.queues) {
      m.split_.push_back(queue.size());
      m.per_layer_.push_back(0);
      m.repeated_lo_.push_back(0);
      m.repeated_hi_.push_back(0);
    }
  }
  return m;
}

std::optional<ReplayMap> ReplayMap::match(const ReducedGraph& reduced, const ReplayPlan& plan,
                                          const sim::Program& program, const sim::Trace& trace, std::string& why) {
  const std::uint64_t K = reduced.kept;
  const std::size_t queues = plan.run_end.size();
  const std::size_t engines = queues / std::max<std::size_t>(program.cores.size(), 1);
  why = "no two boundaries of the kept layers with the same state";
  // Boundary w (layer a + w) and w + 1: j = a + w, for w past the first repeating block (what
  // is in flight at B_j must be in repeating blocks) up to K - 3 (period j may meet block w + 2).
  for (std::uint64_t w = plan.first_repeating + 1; w + 3 <= K; ++w) {
    const sim::Boundary &bj = trace.boundaries[w], &bn = trace.boundaries[w + 1];
    if (!bj.seen || !bn.seen || !bj.comparable || !bn.comparable || bj.state != bn.state || bn.time <= bj.time) {
      continue;
    }
    bool inside = true;
    for (std::size_t q = 0; q < queues && inside; ++q) {
      const bool idle_queue = plan.per_layer[q] == 0;
      const std::uint32_t last_block = plan.watch.starts[K - 1][q];
      inside = bj.completed[q] >= plan.watch.starts[plan.first_repeating][q] &&
               (bn.head[q] < last_block || (idle_queue && bn.head[q] <= last_block));
    }
    if (!inside) {
      why = "the state at the matching boundaries reaches outside the kept layers";
      continue;
    }
    ReplayMap m;
    m.dropped_ = reduced.dropped;
    m.ops_per_layer_ = reduced.run.ops_per_layer;
    m.split_op_ = reduced.run.first_op + (w + 1) * reduced.run.ops_per_layer;
    m.t_first_ = bj.time;
    m.t_next_ = bn.time;
    m.delta_ = bn.time - bj.time;
    for (std::size_t q = 0; q < queues; ++q) {
      m.split_.push_back(plan.watch.starts[w + 1][q]);
      m.per_layer_.push_back(plan.per_layer[q]);
      const auto& records = trace.cores[q / engines][q % engines];
      std::uint64_t lo = records.size(), hi = 0;
      for (std::uint64_t i = 0; i < records.size(); ++i) {
        const bool repeated =
            m.period_of(records[i].start) == Period::repeated || m.period_of(records[i].end) == Period::repeated;
        if (repeated) {
          lo = std::min(lo, i);
          hi = std::max(hi, i);
        }
        // Only commands of layer j + 1 on can be written after B_{j+1} ... and none of them before B_j.
        if (i >= m.split_[q] && m.period_of(records[i].start) == Period::before) {
          why = "a command of a later layer ran before the repeated period";
          return std::nullopt;
        }
      }
      m.repeated_lo_.push_back(lo);
      m.repeated_hi_.push_back(hi);
    }
    return m;
  }
  return std::nullopt;
}

OpId ReplayMap::template_op(OpId v) const {
  if (v < split_op_) return v;
  const OpId inserted = dropped_ * ops_per_layer_;
  if (v >= split_op_ + inserted) return v - inserted;
  return split_op_ + (v - split_op_) % ops_per_layer_;
}

sim::Tick ReplayMap::write(std::size_t q, std::uint64_t f, bool end, const std::vector<sim::CommandRecord>& r) const {
  auto at = [&](std::uint64_t c) { return end ? r[c].end : r[c].start; };
  const std::uint64_t P = per_layer_[q];
  if (f < split_[q] && f < r.size() && period_of(at(f)) != Period::after) return at(f);
  if (P > 0 && dropped_ > 1 && repeated_lo_[q] <= repeated_hi_[q]) {
    // f = c + m P for a command c written in the repeated period, 1 <= m < D.
    const std::uint64_t lo = repeated_lo_[q], hi = repeated_hi_[q];
    const std::uint64_t m_min = f > hi ? std::max<std::uint64_t>(1, (f - hi + P - 1) / P) : 1;
    const std::uint64_t m_max = f >= lo ? std::min<std::uint64_t>(dropped_ - 1, (f - lo) / P) : 0;
    for (std::uint64_t m = m_min; m <= m_max; ++m) {
      const std::uint64_t c = f - m * P;
      if (period_of(at(c)) == Period::repeated) return at(c) + m * delta_;
    }
  }
  if (f >= dropped_ * P) {
    const std::uint64_t c = f - dropped_ * P;
    if (c < r.size() && period_of(at(c)) != Period::before) return at(c) + dropped_ * delta_;
  }
  throw std::logic_error(fmt::format("layer replay: no reduced record for command {} of queue {}", f, q));
}

sim::CommandRecord ReplayMap::record(std::size_t q, std::uint64_t f, const std::vector<sim::CommandRecord>& r) const {
  if (dropped_ == 0) return r[f];  // nothing left out: the reduced run is the run
  return {write(q, f, false, r), write(q, f, true, r)};
}

}  // namespace ops
