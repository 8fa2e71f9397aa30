#include "ops/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "hw/cost_model.hpp"
#include "ops/limiting_resource.hpp"

namespace ops {

std::string_view regime_name(Regime r) {
  switch (r) {
    case Regime::compute: return "compute";
    case Regime::memory: return "memory";
    case Regime::comm: return "comm";
  }
  return "?";
}

const OpTiming* Timeline::find(OpKind kind) const {
  for (const OpTiming& t : ops) {
    if (t.kind == kind) return &t;
  }
  return nullptr;
}

const OpTiming& Timeline::op(OpKind kind) const {
  if (const OpTiming* t = find(kind)) return *t;
  throw std::out_of_range(std::string("timeline has no op of kind ") + std::string(kind_name(kind)));
}

std::uint64_t unique_bytes(const OpGraph& graph, OpId op) {
  const OpNode& node = graph[op];
  if (is_row_op(node.kind)) {
    const VectorShape& v = node.vec();
    const std::uint64_t in = v.load_bytes_per_row(node.dtype), out = v.store_bytes_per_row();
    return v.rows * (in + out);
  }
  switch (node.kind) {
    case OpKind::matmul: {
      const MatmulShape& s = node.mm();
      const std::uint64_t e = hw::bytes_of(node.dtype);
      std::uint64_t rows = 0;
      for (std::uint64_t g = 0; g < s.groups; ++g) rows += s.rows_of(g);
      const std::uint64_t a = rows * (s.a_row_bytes != 0 ? s.a_row_bytes : s.k * e);
      const std::uint64_t b = s.groups * s.n * (s.b_col_bytes != 0 ? s.b_col_bytes : s.k * e);
      return a + b + (rows + s.out_reduce - 1) / s.out_reduce * s.n * kActivationBytes;
    }
    case OpKind::kv_cache_read:
    case OpKind::indexer_cache_read: return node.kv_bytes;
    case OpKind::fa2: {
      const AttentionShape& a = node.attn();
      const std::uint64_t q = a.batch * a.q_len * a.heads * a.qk_dim * kActivationBytes;
      const std::uint64_t o = a.batch * a.q_len * a.heads * a.v_dim * kActivationBytes;
      bool streamed = false;  // the history arrives from a read op
      for (auto [e, end] = boost::in_edges(op, graph); e != end; ++e) {
        streamed = streamed || graph[boost::source(*e, graph)].kind == OpKind::kv_cache_read;
      }
      return q + (streamed ? 0 : node.kv_bytes) + o;
    }
    default: return 0;  // weights streams, combines, collectives: no layout-independent floor
  }
}

Timeline build_timeline(const OpGraph& graph, const hw::Chip& chip, const Lowered& lowered, const sim::Trace& trace) {
  const std::size_t n = boost::num_vertices(graph);
  std::vector<OpTiming> by_id(n);
  for (OpId v = 0; v < n; ++v) {
    OpTiming& t = by_id[v];
    t.id = v;
    t.name = graph[v].name;
    t.layer = graph[v].layer;
    t.kind = graph[v].kind;
    t.shape = graph[v].shape;
    t.flops = graph[v].flops + lowered.ops[v].split_flops;
    t.kv_bytes = graph[v].kv_bytes;
    t.streamed_in_bytes = lowered.ops[v].streamed_in_bytes;
    t.peak_lmem_bytes = lowered.ops[v].peak_lmem_bytes;
    t.unique_bytes = unique_bytes(graph, v);
    t.start = std::numeric_limits<sim::Tick>::max();
  }
  Timeline tl;
  const hw::EngineId tensor = chip.tensor_engine();
  for (std::size_t c = 0; c < lowered.program.cores.size(); ++c) {
    for (std::size_t e = 0; e < chip.engines.size(); ++e) {
      const bool link = chip.engines[e].kind == hw::EngineKind::collective;
      const auto& queue = lowered.program.cores[c].queues[e];
      const auto& records = trace.cores[c][e];
      tl.commands[e] += queue.size();
      for (std::size_t i = 0; i < queue.size(); ++i) {
        const sim::Command& cmd = queue[i];
        if (cmd.kind == sim::CommandKind::send_msg || cmd.kind == sim::CommandKind::wait_msg ||
            cmd.kind == sim::CommandKind::fence) {
          continue;
        }
        OpTiming& t = by_id[cmd.op];
        t.start = std::min(t.start, records[i].start);
        t.end = std::max(t.end, records[i].end);
        ++t.commands[e];
        // Bytes from the L2 (a staged history) never touch DDR.
        if (cmd.kind == sim::CommandKind::transfer && cmd.direction != sim::Direction::l2_to_lmem) {
          (link ? t.c2c_bytes : t.hbm_bytes) += cmd.amount;
        }
      }
    }
  }
  // Idle gaps: on each core's tensor queue, the time between the last instruction before an op
  // and the op's first one there; an op keeps its largest over the cores.
  for (std::size_t c = 0; c < lowered.program.cores.size(); ++c) {
    const auto& queue = lowered.program.cores[c].queues[tensor];
    const auto& records = trace.cores[c][tensor];
    sim::Tick previous_end = 0;
    std::uint32_t previous_op = std::numeric_limits<std::uint32_t>::max();
    for (std::size_t i = 0; i < queue.size(); ++i) {
      if (queue[i].kind != sim::CommandKind::compute) continue;
      if (queue[i].op != previous_op && records[i].start > previous_end) {
        OpTiming& t = by_id[queue[i].op];
        t.idle_gap = std::max(t.idle_gap, records[i].start - previous_end);
      }
      previous_op = queue[i].op;
      previous_end = records[i].end;
    }
  }
  LimitingResource limits(chip);
  limits.measure(lowered, trace, n);
  const hw::CostModel cost(chip);
  const double bytes_per_ns = cost.roofline_bytes_per_s() * 1e-9;
  const double link_bytes_per_ns = cost.c2c_bytes_per_ns();
  std::vector<std::string> engine_names;
  for (const hw::EngineSpec& e : chip.engines) engine_names.push_back(e.display_name());
  for (OpId v : topological_order(graph)) {
    OpTiming& t = by_id[v];
    std::vector<std::string_view> used;
    for (std::size_t e = 0; e < chip.engines.size(); ++e) {
      if (t.commands[e] != 0) used.push_back(engine_names[e]);
    }
    t.engines = used.empty() ? std::string("-") : fmt::format("{}", fmt::join(used, "+"));
    if (t.start == std::numeric_limits<sim::Tick>::max()) {
      // An op with no commands (a combine with nothing to merge) is an instant, when its inputs
      // are ready: the latest end of its producers.
      sim::Tick ready = 0;
      for (auto [e, end] = boost::in_edges(v, graph); e != end; ++e) {
        ready = std::max(ready, by_id[boost::source(*e, graph)].end);
      }
      t.start = t.end = ready;
    }
    double peak = 0;  // FLOP or element-op per second; 0 for ops without arithmetic
    switch (traits_of(t.kind).peak) {
      case PeakUnit::none: break;
      case PeakUnit::cube:
        peak = cost.cube_peak_flops(graph[v].dtype == hw::DType::fp8 ? hw::DType::fp8 : kActivationDtype);
        break;
      case PeakUnit::vector:
        peak = cost.vector_peak_ops(is_row_op(t.kind) ? graph[v].vec().compute : graph[v].dtype);
        break;
    }
    t.compute_ns = peak > 0 ? static_cast<double>(t.flops) / peak * 1e9 : 0.0;
    t.memory_ns = static_cast<double>(t.hbm_bytes + t.streamed_in_bytes) / bytes_per_ns;
    t.comm_ns = static_cast<double>(t.c2c_bytes) / link_bytes_per_ns;
    t.roofline_ns = std::max({t.compute_ns, t.memory_ns, t.comm_ns});
    t.regime = t.comm_ns > std::max(t.compute_ns, t.memory_ns) ? Regime::comm
               : t.compute_ns > t.memory_ns                    ? Regime::compute
                                                               : Regime::memory;
    const Bound b = limits.bound(limits.op_work(v), t.duration());
    t.bound_by = b.resource;
    t.bound_share = b.share;
    tl.hbm_bytes += t.hbm_bytes;
    tl.idle_gap += t.idle_gap;
    tl.c2c_bytes += t.c2c_bytes;
    tl.comm_ns += t.comm_ns;
    tl.flops += t.flops;
    tl.compute_ns += t.compute_ns;
    tl.ops.push_back(std::move(t));
  }
  // Streamed-in bytes are already some other op's hbm_bytes: the block counts each byte once.
  tl.memory_ns = static_cast<double>(tl.hbm_bytes) / bytes_per_ns;
  tl.total = trace.end;
  {
    const Bound b = limits.bound(limits.run_work(), tl.total);
    tl.bound_by = b.resource;
    tl.bound_share = b.share;
  }
  tl.regime = tl.comm_ns > std::max(tl.compute_ns, tl.memory_ns) ? Regime::comm
              : tl.compute_ns > tl.memory_ns                     ? Regime::compute
                                                                 : Regime::memory;
  return tl;
}

}  // namespace ops
