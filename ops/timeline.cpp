#include "ops/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "hw/cost_model.hpp"
#include "ops/layer_replay.hpp"
#include "ops/limiting_resource.hpp"
#include "ops/loop_replay.hpp"

namespace ops {

std::string_view regime_name(Regime r) {
  switch (r) {
    case Regime::compute: return "compute";
    case Regime::memory: return "memory";
    case Regime::comm: return "comm";
    case Regime::host: return "host";
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
      const std::uint64_t q = a.query_tokens() * a.heads * a.qk_dim * kActivationBytes;
      const std::uint64_t o = a.query_tokens() * a.heads * a.v_dim * kActivationBytes;
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
  return build_timeline(graph, chip, lowered, trace, ReplayMap::identity());
}

namespace {

constexpr sim::Tick kNever = std::numeric_limits<sim::Tick>::max();

// Per reduced op (the graph the kernel ran, ops/layer_replay.hpp): its commands' counts and bytes,
// and the earliest start and latest end of its commands by interval of the replay's times.
struct Reduced {
  std::array<std::uint64_t, hw::kMaxEngines> commands{};
  std::uint64_t hbm_bytes = 0, c2c_bytes = 0;
  std::array<std::array<std::uint64_t, hw::kMaxResources>, hw::kMaxEngines> route_bytes{};
};
struct Folds {
  Folds(std::size_t ops, std::size_t per_op)
      : intervals(per_op), op(ops), start(ops * per_op, kNever), end(ops * per_op, 0), ended(ops * per_op, 0) {}
  std::size_t intervals;
  std::vector<Reduced> op;
  std::vector<sim::Tick> start, end;  // [op x intervals + interval]
  std::vector<std::uint8_t> ended;
};

// Every op of the whole graph with what the graph and the lowering say of it (no times yet).
std::vector<OpTiming> op_records(const OpGraph& graph, const Lowered& lowered, const ReplayMap& map) {
  std::vector<OpTiming> by_id(boost::num_vertices(graph));
  for (OpId v = 0; v < by_id.size(); ++v) {
    OpTiming& t = by_id[v];
    const LoweredOp& lowered_op = lowered.ops[map.template_op(v)];
    t.id = v;
    t.name = graph[v].name;
    t.layer = graph[v].layer;
    t.kind = graph[v].kind;
    t.shape = graph[v].shape;
    if (traits_of(t.kind).payload == PayloadKind::collective) t.message_bytes = graph[v].collective().bytes;
    t.flops = graph[v].flops + lowered_op.split_flops;
    t.kv_bytes = graph[v].kv_bytes;
    t.streamed_in_bytes = lowered_op.streamed_in_bytes;
    t.peak_lmem_bytes = lowered_op.peak_lmem_bytes;
    t.unique_bytes = unique_bytes(graph, v);
    t.start = kNever;
  }
  return by_id;
}

// One pass over every command record: the reduced ops' folds, the commands per engine of the whole
// step, its end, and the limiting-resource sums. `kCut`: some chunk loop was cut (a run without
// one, the common case, folds each command once).
template <bool kCut>
Folds fold_records(const hw::Chip& chip, const Lowered& lowered, const sim::Trace& trace, const ReplayMap& map,
                   const LoopMap& loops, LimitingResource& limits, Timeline& tl, sim::Tick& last_end) {
  const std::size_t engines = chip.engines.size();
  const auto& intervals = map.intervals();
  Folds folds(lowered.ops.size(), intervals.size());
  for (std::size_t c = 0; c < lowered.program.cores.size(); ++c) {
    for (std::size_t e = 0; e < engines; ++e) {
      const bool link = chip.engines[e].kind == hw::EngineKind::collective;
      const auto& queue = lowered.program.cores[c].queues[e];
      const auto& records = trace.cores[c][e];
      const auto& repeated = loops.copies(c * engines + e);
      std::size_t next_repeated = 0;
      tl.commands[e] += map.full_size(c * engines + e, queue.size()) + loops.added(c * engines + e);
      sim::CommandQueue::Reader commands(queue, 0);
      sim::RecordQueue::Reader written(records, 0);
      for (std::size_t i = 0; i < queue.size(); ++i, commands.next(), written.next()) {
        const sim::CommandRecord& rec = *written;
        const std::size_t end_period = map.interval_of(rec.end);
        const sim::Tick end = rec.end + intervals[end_period].last_shift();
        last_end = std::max(last_end, end);
        const sim::Command& cmd = *commands;
        // Loop replay: a command of a chunk iteration after the matched boundary stands for its
        // copies in the left-out iterations too (same op, same work).
        std::uint64_t times = 1;
        if constexpr (kCut) {
          while (next_repeated < repeated.size() && repeated[next_repeated].end <= i) ++next_repeated;
          if (next_repeated < repeated.size() && repeated[next_repeated].begin <= i) {
            times = 1 + repeated[next_repeated].copies;
          }
        }
        limits.add(static_cast<hw::EngineId>(e), cmd, rec, times);
        if (cmd.kind == sim::CommandKind::send_msg || cmd.kind == sim::CommandKind::wait_msg ||
            cmd.kind == sim::CommandKind::fence) {
          continue;
        }
        Reduced& r = folds.op[cmd.op];
        const std::size_t at = cmd.op * folds.intervals;
        const std::size_t start_at = at + map.interval_of(rec.start), end_at = at + end_period;
        folds.start[start_at] = std::min(folds.start[start_at], rec.start);
        folds.end[end_at] = std::max(folds.end[end_at], rec.end);
        folds.ended[end_at] = 1;
        r.commands[e] += times;
        // Bytes to and from the L2 (a staged history, split-K partials) never touch DDR.
        if (cmd.kind == sim::CommandKind::transfer && !sim::within_l2(cmd.direction)) {
          (link ? r.c2c_bytes : r.hbm_bytes) += times * cmd.amount;
        }
        if (cmd.kind == sim::CommandKind::transfer) {
          for (std::uint32_t resource : limits.crossed(static_cast<hw::EngineId>(e), cmd)) {
            r.route_bytes[e][resource] += times * cmd.amount;
          }
        }
      }
    }
    limits.end_core();
  }
  // The latest copy's time ascends with the time (LoopMap::latest), so the step's end is the
  // latest copy of the last simulated end: one look-up instead of one a command.
  if constexpr (kCut) last_end = loops.latest(last_end);
  limits.finish();
  return folds;
}

// The reduced ops' folds onto the whole graph: counts and bytes per template; intervals of the
// replay's times each stand for 1 + copies writes (ops/layer_replay.hpp), the op's own and its
// copies m units and m x step later, all shifted by the runs left out before them.
void unfold(const Folds& folds, const ReplayMap& map, const LoopMap& loops, std::vector<OpTiming>& by_id) {
  for (OpId v = 0; v < by_id.size(); ++v) {
    const Reduced& r = folds.op[map.template_op(v)];
    by_id[v].commands = r.commands;
    by_id[v].route_bytes = r.route_bytes;
    by_id[v].hbm_bytes = r.hbm_bytes;
    by_id[v].c2c_bytes = r.c2c_bytes;
  }
  // Cut chunk loops: an op's first write is its earliest copy's, its last its latest copy's.
  auto extend = [&](OpId v, sim::Tick start, sim::Tick end, bool ended) {
    if (v >= by_id.size()) throw std::logic_error("layer replay: an op past the step");
    OpTiming& t = by_id[v];
    if (start != kNever) t.start = std::min(t.start, loops.earliest(start));
    if (ended) t.end = std::max(t.end, loops.latest(end));
  };
  const auto& intervals = map.intervals();
  for (OpId r = 0; r < folds.op.size(); ++r) {
    for (std::size_t p = 0; p < intervals.size(); ++p) {
      const std::size_t at = r * folds.intervals + p;
      const bool starts = folds.start[at] != kNever, ended = folds.ended[at] != 0;
      if (!starts && !ended) continue;
      const ReplayMap::Interval& k = intervals[p];
      for (std::uint64_t m = 0; m <= k.copies; ++m) {
        const sim::Tick shift = k.shift + m * k.step;
        extend(r + k.op_shift + m * k.op_step, starts ? folds.start[at] + shift : kNever, folds.end[at] + shift, ended);
      }
    }
  }
}

// Idle gaps: on each core's tensor queue, the time between the last instruction before an op and
// the op's first one there; an op keeps its largest over the cores. The points where the op
// changes repeat with the layers' commands. Returns every gap summed over every core: a core's
// gaps are disjoint (one queue, in order), so that over the cores is their mean idle time.
sim::Tick idle_gaps(const hw::Chip& chip, const Lowered& lowered, const sim::Trace& trace, const ReplayMap& map,
                    const LoopMap& loops, std::vector<OpTiming>& by_id) {
  sim::Tick every = 0;
  const std::size_t engines = chip.engines.size();
  const hw::EngineId tensor = chip.tensor_engine();
  for (std::size_t c = 0; c < lowered.program.cores.size(); ++c) {
    const std::size_t q = c * engines + tensor;
    const auto& queue = lowered.program.cores[c].queues[tensor];
    const auto& records = trace.cores[c][tensor];
    constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t previous = kNone;
    std::uint32_t previous_op = std::numeric_limits<std::uint32_t>::max();
    sim::CommandQueue::Reader command(queue, 0);
    for (std::size_t i = 0; i < queue.size(); ++i, command.next()) {
      const sim::Command& cmd = *command;
      if (cmd.kind != sim::CommandKind::compute) continue;
      if (cmd.op != previous_op) {
        // Each copy of the command follows the same copy of the one before it.
        map.for_each_copy(q, i, cmd.op, [&](std::uint64_t shift, OpId op) {
          // An op's first command is no chunk loop's repeated one (those are inside fa2).
          const sim::Tick start = loops.time(q, i + shift, map.start(q, i + shift, records));
          const sim::Tick previous_end =
              previous == kNone ? 0 : loops.time(q, previous + shift, map.end(q, previous + shift, records));
          if (start > previous_end) {
            by_id[op].idle_gap = std::max(by_id[op].idle_gap, start - previous_end);
            every += start - previous_end;
          }
        });
      }
      previous_op = cmd.op;
      previous = i;
    }
  }
  return every;
}

// The cube's rate an op's operands take: fp8, or the microscaled fp4 / fp6, else bf16.
hw::DType cube_dtype(hw::DType d) {
  return d == hw::DType::fp8 || d == hw::DType::fp4 || d == hw::DType::fp6 ? d : kActivationDtype;
}

// An op's roofline: its work at the chip's peak for its kind and dtype, its bytes at the roofline
// bandwidth, its chip-to-chip bytes at the links' rate.
void roofline(const OpGraph& graph, OpId v, const hw::CostModel& cost, OpTiming& t) {
  double peak = 0;  // FLOP or element-op per second; 0 for ops without arithmetic
  switch (traits_of(t.kind).peak) {
    case PeakUnit::none: break;
    case PeakUnit::cube: peak = cost.cube_peak_flops(cube_dtype(graph[v].dtype)); break;
    case PeakUnit::vector:
      peak = cost.vector_peak_ops(is_row_op(t.kind) ? graph[v].vec().compute : graph[v].dtype);
      break;
  }
  t.compute_ns = peak > 0 ? static_cast<double>(t.flops) / peak * 1e9 : 0.0;
  t.memory_ns = static_cast<double>(t.hbm_bytes + t.streamed_in_bytes) / (cost.roofline_bytes_per_s() * 1e-9);
  t.comm_ns = static_cast<double>(t.c2c_bytes) / cost.c2c_bytes_per_ns();
  t.roofline_ns = std::max({t.compute_ns, t.memory_ns, t.comm_ns});
  t.regime = t.kind == OpKind::host_launch ? Regime::host : classify(t.compute_ns, t.memory_ns, t.comm_ns);
}

// An op's dynamic energy (hw/energy.hpp), each part charged to the engine that spent it.
void charge_energy(const OpGraph& graph, OpId v, const hw::Chip& chip, OpTiming& t, Timeline& tl) {
  if (!chip.energy) return;
  const hw::ChipEnergy& price = *chip.energy;
  switch (traits_of(t.kind).peak) {
    case PeakUnit::none: break;
    case PeakUnit::cube: {
      t.compute_energy_pj =
          static_cast<double>(t.flops / 2) * price.pj_per_mac[static_cast<int>(cube_dtype(graph[v].dtype))];
      break;
    }
    case PeakUnit::vector: t.compute_energy_pj = static_cast<double>(t.flops) * price.pj_per_vector_element; break;
  }
  t.energy_pj = t.compute_energy_pj;
  tl.engine_energy_pj[chip.tensor_engine()] += t.compute_energy_pj;
  for (std::size_t e = 0; e < chip.engines.size(); ++e) {
    for (std::size_t r = 0; r < chip.resources.size(); ++r) {
      const double pj = static_cast<double>(t.route_bytes[e][r]) * price.pj_per_byte[r];
      t.energy_pj += pj;
      tl.engine_energy_pj[e] += pj;
    }
  }
  tl.dynamic_energy_pj += t.energy_pj;
}

}  // namespace

Regime classify(double compute_ns, double memory_ns, double comm_ns) {
  return comm_ns > std::max(compute_ns, memory_ns) ? Regime::comm
         : compute_ns > memory_ns                  ? Regime::compute
                                                   : Regime::memory;
}

Timeline build_timeline(const OpGraph& graph, const hw::Chip& chip, const Lowered& lowered, const sim::Trace& trace,
                        const ReplayMap& map) {
  return build_timeline(graph, chip, lowered, trace, map, LoopMap{});
}

Timeline build_timeline(const OpGraph& graph, const hw::Chip& chip, const Lowered& lowered, const sim::Trace& trace,
                        const ReplayMap& map, const LoopMap& loops) {
  std::vector<OpTiming> by_id = op_records(graph, lowered, map);
  Timeline tl;
  sim::Tick last_end = 0;
  LimitingResource limits(chip);
  {
    std::vector<std::uint64_t> multiplicity(lowered.ops.size());
    for (OpId r = 0; r < lowered.ops.size(); ++r) multiplicity[r] = map.multiplicity(r);
    limits.begin(std::move(multiplicity));
  }
  unfold(loops.cut() ? fold_records<true>(chip, lowered, trace, map, loops, limits, tl, last_end)
                     : fold_records<false>(chip, lowered, trace, map, loops, limits, tl, last_end),
         map, loops, by_id);
  const sim::Tick every_gap = idle_gaps(chip, lowered, trace, map, loops, by_id);
  tl.idle_per_core = lowered.program.cores.empty() ? 0 : every_gap / lowered.program.cores.size();
  const hw::CostModel cost(chip);
  std::vector<std::string> engine_names;
  for (const hw::EngineSpec& e : chip.engines) engine_names.push_back(e.display_name());
  for (OpId v : topological_order(graph)) {
    OpTiming& t = by_id[v];
    std::vector<std::string_view> used;
    for (std::size_t e = 0; e < chip.engines.size(); ++e) {
      if (t.commands[e] != 0) used.push_back(engine_names[e]);
    }
    t.engines = used.empty() ? std::string("-") : fmt::format("{}", fmt::join(used, "+"));
    if (t.start == kNever) {
      // An op with no commands (a combine with nothing to merge) is an instant, when its inputs
      // are ready: the latest end of its producers.
      sim::Tick ready = 0;
      for (auto [e, end] = boost::in_edges(v, graph); e != end; ++e) {
        ready = std::max(ready, by_id[boost::source(*e, graph)].end);
      }
      t.start = t.end = ready;
    }
    roofline(graph, v, cost, t);
    charge_energy(graph, v, chip, t, tl);
    const Bound b = limits.bound(limits.op_work(map.template_op(v)), t.duration());
    t.bound_by = t.kind == OpKind::host_launch ? "host" : b.resource;
    t.bound_share = t.kind == OpKind::host_launch ? 0.0 : b.share;
    tl.hbm_bytes += t.hbm_bytes;
    tl.idle_gap += t.idle_gap;
    tl.c2c_bytes += t.c2c_bytes;
    tl.comm_ns += t.comm_ns;
    tl.flops += t.flops;
    tl.compute_ns += t.compute_ns;
    tl.ops.push_back(std::move(t));
  }
  // Streamed-in bytes are already some other op's hbm_bytes: the block counts each byte once.
  tl.memory_ns = static_cast<double>(tl.hbm_bytes) / (cost.roofline_bytes_per_s() * 1e-9);
  tl.total = last_end;
  const Bound b = limits.bound(limits.run_work(), tl.total);
  tl.bound_by = b.resource;
  tl.bound_share = b.share;
  tl.regime = classify(tl.compute_ns, tl.memory_ns, tl.comm_ns);
  return tl;
}

}  // namespace ops
