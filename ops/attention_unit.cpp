// Lowering of kv_cache_read, fa2 and fa2_combine as one unit (ops/attention_unit.hpp), with the
// split and tiles of ops/attention_plan.hpp. fa2_combine gathers the other cores' partial outputs
// and softmax statistics on the cross-core engine.
//
// Per core and per row block, fa2 runs for every KV chunk:
//   [dequant fp8 -> bf16]  S = Q K^T  softmax(S) (online)  O += P V  rescale O
// as tensor commands. Chunk j's load waits on the P V product of chunk j - buffers (which frees
// its buffer), so up to `buffers` chunks are in flight ahead of the compute. The chunk loads of
// the first row block of each item are the history read and belong to kv_cache_read; with the
// stream route, the first `buffers` chunks of a core are queued at kv_cache_read's place (right
// after the absorption), the rest as fa2 consumes them.

#include "ops/attention_unit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "hw/config_error.hpp"
#include "hw/dtype.hpp"
#include "ops/history_source.hpp"
#include "ops/loop_replay.hpp"
#include "ops/op_lowerings.hpp"

namespace ops::detail {
namespace {

using hw::DType;

std::optional<OpId> neighbour(const OpGraph& g, OpId op, OpKind kind, bool downstream) {
  if (downstream) {
    for (auto [e, end] = boost::out_edges(op, g); e != end; ++e) {
      if (g[boost::target(*e, g)].kind == kind) return boost::target(*e, g);
    }
  } else {
    for (auto [e, end] = boost::in_edges(op, g); e != end; ++e) {
      if (g[boost::source(*e, g)].kind == kind) return boost::source(*e, g);
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<OpId> AttentionUnit::members() const {
  std::vector<OpId> out;
  for (const auto& op : {reader, fa2, combine}) {
    if (op) out.push_back(*op);
  }
  return out;
}

EngineId history_engine(const hw::Chip& c, const LoweringOptions& o) {
  if (o.kv_read_engine.empty()) return c.default_kv_engine();
  const auto found = c.find_engine(o.kv_read_engine);
  if (!found || c.engine(*found).kind != hw::EngineKind::dma) {
    throw hw::InputError("kv_read_engine", fmt::format("chip '{}' has no DMA engine '{}' (its DMA engines: {})", c.name,
                                                       o.kv_read_engine, c.engine_names(hw::EngineKind::dma)));
  }
  const hw::EngineSpec& e = c.engine(*found);
  if (!e.serves(hw::DmaRole::kv_stream) && !e.serves(hw::DmaRole::kv_resident)) {
    throw hw::InputError(
        "kv_read_engine",
        fmt::format("engine '{}' of chip '{}' has neither the kv_stream nor the kv_resident role", e.name, c.name));
  }
  return *found;
}

HistoryRoute history_route(bool reads_history, bool gather, bool resident_engine, bool chip_has_l2) {
  if (!reads_history) return HistoryRoute::none;
  if (gather) return HistoryRoute::gather;
  if (!resident_engine) return HistoryRoute::stream;
  return chip_has_l2 ? HistoryRoute::staged : HistoryRoute::resident;
}

namespace {

// AttentionUnit::q_hits_l2: a block is keyed by its sequence and its first query row
// (AttentionBlock::row_begin); the first core to load a key fetches it from DDR.
std::vector<std::vector<std::uint8_t>> query_hits_l2(const AttentionShape& s, const AttentionPlan& plan,
                                                     const hw::Chip::L2& l2) {
  std::uint64_t q_bytes = 0;
  for (const QueryGroup& g : s.groups) q_bytes += g.count * s.kv_heads * g.q_len * s.heads_per_kv() * s.qk_dim;
  q_bytes *= kActivationBytes;
  if (q_bytes > l2.capacity_bytes) return {};
  std::vector<std::vector<std::uint8_t>> hits(plan.cores.size());
  std::set<std::pair<std::uint64_t, std::uint64_t>> read;  // (sequence, the block's first row in its item)
  for (std::size_t c = 0; c < plan.cores.size(); ++c) {
    for (const AttentionBlock& b : plan.cores[c].blocks) {
      hits[c].push_back(read.insert({b.sequence, b.row_begin}).second ? 0 : 1);
    }
  }
  return hits;
}

// AttentionUnit::history_hits_l2 (row tiles, fa2 streaming the history): a block that reads its slice
// again hits the L2 when another core reads the slice at about the same time (the slice's first
// tile, its history read), or when the whole history stays in the L2.
std::vector<std::vector<std::uint8_t>> history_hits_l2(const AttentionShape& s, const AttentionPlan& plan,
                                                       const hw::Chip::L2& l2) {
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::size_t> reader;  // (sequence, kv_begin) -> core
  for (std::size_t c = 0; c < plan.cores.size(); ++c) {
    for (const AttentionBlock& b : plan.cores[c].blocks) {
      if (b.first_pass) reader.emplace(std::pair{b.sequence, b.kv_begin}, c);
    }
  }
  const bool stays =
      static_cast<double>(s.kv_heads) * static_cast<double>(s.keys()) * static_cast<double>(s.kv_token_bytes) <=
      static_cast<double>(l2.capacity_bytes);
  std::vector<std::vector<std::uint8_t>> hits(plan.cores.size());
  for (std::size_t c = 0; c < plan.cores.size(); ++c) {
    for (const AttentionBlock& b : plan.cores[c].blocks) {
      const auto found = reader.find({b.sequence, b.kv_begin});
      const bool other = found != reader.end() && found->second != c;
      hits[c].push_back(!b.first_pass && (other || stays) ? 1 : 0);
    }
  }
  return hits;
}

}  // namespace

AttentionUnit build_attention_unit(LoweringContext& ctx, OpId op) {
  const OpGraph& g = ctx.graph;
  AttentionUnit unit;
  switch (g[op].kind) {
    case OpKind::fa2: unit.fa2 = op; break;
    case OpKind::kv_cache_read:
      unit.reader = op;
      unit.fa2 = neighbour(g, op, OpKind::fa2, true);
      break;
    case OpKind::fa2_combine: unit.fa2 = neighbour(g, op, OpKind::fa2, false); break;
    default: throw std::logic_error("attention unit asked for an op outside attention");
  }
  if (unit.fa2) {
    if (!unit.reader) unit.reader = neighbour(g, *unit.fa2, OpKind::kv_cache_read, false);
    unit.combine = neighbour(g, *unit.fa2, OpKind::fa2_combine, true);
    if (unit.combine) {
      for (auto [e, end] = boost::in_edges(*unit.combine, g); e != end; ++e) {
        const OpId from = boost::source(*e, g);
        unit.merges_another_part = unit.merges_another_part || (from != *unit.fa2 && g[from].kind == OpKind::fa2);
      }
    }
  }
  if (unit.reader && !unit.fa2) {
    // MLA standard mode: the history is the up-projection's A operand, streamed beside it.
    if (ctx.kv_resident()) {
      throw hw::InputError(
          "kv_read_engine",
          fmt::format("{} keeps the history resident for fa2, but with mla_mode standard the history "
                      "feeds the up-projection; read it with a kv_stream engine ({})",
                      ctx.chip.engine(ctx.kv_engine()).name, ctx.chip.engine(ctx.chip.default_kv_engine()).name));
    }
    unit.history = HistoryRoute::matmul;
    unit.history_engine = ctx.kv_engine();
    return unit;
  }
  const bool gather = unit.reader && g[*unit.reader].attn().gather;
  unit.history = history_route(unit.reader.has_value(), gather, ctx.kv_resident(), ctx.chip.l2.has_value());
  if (unit.history != HistoryRoute::none) {
    unit.history_engine = gather ? ctx.chip.dma_for(hw::DmaRole::gather) : ctx.kv_engine();
  }
  // The partials may go through the L2 unless the history is staged there or the combine also
  // merges another fa2's (attention_plan.hpp).
  const bool partials_may_use_l2 =
      ctx.chip.l2.has_value() && unit.history != HistoryRoute::staged && !unit.merges_another_part;
  // Row tiles where fa2 streams the history chunk by chunk itself (an fa2 alone reads it plainly).
  const bool tile_rows = unit.history == HistoryRoute::stream || unit.history == HistoryRoute::none;
  unit.plan =
      &ctx.attention_plan(g[*unit.fa2].attn(), unit.history == HistoryRoute::resident, partials_may_use_l2, tile_rows);
  if (ctx.options.loop_kept > 0 && unit.history == HistoryRoute::none) {
    // Loop replay: fa2's own loads only (prefill), where iteration i of a block is one unit of
    // the chip's program when every core runs the same blocks (ops/loop_replay.hpp).
    unit.cuts = droppable_iterations(*unit.plan, ctx.options.loop_kept, kLoopPeriodMultiple);
    if (!unit.cuts.empty()) {
      unit.cut_plan = std::make_shared<const AttentionPlan>(with_iterations_dropped(*unit.plan, unit.cuts));
      unit.plan = unit.cut_plan.get();
    }
  }
  if (unit.history == HistoryRoute::staged) {
    // Each core's share of the L2: the whole history when it fits, else two buffers of rounds of
    // whole chunks (one buffer when two would not hold a chunk each).
    const AttentionShape& s = g[*unit.fa2].attn();
    const std::uint64_t per_core = ctx.chip.l2->capacity_bytes / ctx.chip.cores;
    const std::uint64_t chunk = unit.plan->chunk_tokens;
    std::uint64_t share = 0;
    for (const CoreAttention& c : unit.plan->cores) share = std::max(share, c.first_pass_tokens);
    std::uint64_t round_tokens = share;
    unit.staged_buffers = 1;
    if (share * s.kv_token_bytes > per_core) {
      const std::uint64_t rows = per_core / s.kv_token_bytes;
      unit.staged_buffers = rows / 2 >= chunk ? 2 : 1;
      round_tokens = rows / unit.staged_buffers / chunk * chunk;
      if (round_tokens == 0) {
        throw hw::InputError(
            "kv_read_engine",
            fmt::format("{} stages the history in the L2, but its {} B per core (l2.capacity_bytes / cores) hold "
                        "less than one {}-row chunk of {} B rows; read it with a kv_stream engine ({})",
                        ctx.chip.engine(ctx.kv_engine()).name, per_core, chunk, s.kv_token_bytes,
                        ctx.chip.engine(ctx.chip.default_kv_engine()).name));
      }
    }
    for (const CoreAttention& c : unit.plan->cores) unit.staged_rounds.push_back(cut_rounds(c.blocks, round_tokens));
  }
  unit.prefetched.resize(ctx.chip.cores);
  unit.round_reads.resize(ctx.chip.cores);
  if (ctx.chip.l2 && ctx.chip.l2->caches_reads) {
    unit.q_hits_l2 = query_hits_l2(g[*unit.fa2].attn(), *unit.plan, *ctx.chip.l2);
    if (unit.plan->row_tiles) unit.history_hits_l2 = history_hits_l2(g[*unit.fa2].attn(), *unit.plan, *ctx.chip.l2);
  }
  return unit;
}

void lower_kv_cache_read(LoweringContext& ctx, OpId op) {
  AttentionUnit& unit = ctx.attention_unit(op);
  if (unit.history == HistoryRoute::matmul) return;  // the matmul loads it on the read's behalf
  ctx.out.ops[op].peak_lmem_bytes = unit.plan->lmem_bytes;
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    if (unit.plan->cores[core].blocks.empty()) continue;
    CoreEmitter emit(ctx, op, core);
    history_source(ctx, unit, op, emit, core)->read();
  }
}

namespace {

// A cut run of a block's chunk iterations as the cut plan numbers them: its kept iterations
// [first, first + kept) and the one after the left-out ones (first + kept), and its loop in
// Lowered::loops.
struct LoopAt {
  std::size_t block = 0;
  std::uint64_t first = 0, kept = 0;
  std::size_t loop = 0;
};

// Loop replay: where iteration k of a cut block starts on every queue of `core`.
void record_loop_starts(LoweringContext& ctx, std::uint32_t core, LoweredLoop& loop, std::size_t k) {
  const auto& queues = ctx.out.program.cores[core].queues;
  for (std::size_t e = 0; e < queues.size(); ++e) {
    loop.starts[k][core * queues.size() + e] = static_cast<std::uint32_t>(queues[e].size());
  }
}

// One core's fa2: per row block, the route-free chunk loop over the history (the route's
// HistorySource queues and releases the chunks), then the block's output. `loops`: the runs loop
// replay cut, by block and iteration.

void lower_fa2_core(LoweringContext& ctx, AttentionUnit& unit, OpId op, std::uint32_t core,
                    const std::vector<LoopAt>& loops) {
  const AttentionShape& s = ctx.graph[op].attn();
  const AttentionPlan& plan = *unit.plan;
  const auto& blocks = plan.cores[core].blocks;
  const hw::CostModel& cost = ctx.cost;
  // Whole rows on a core (prefill, decode split by heads, or a sequence whose history one core
  // reads whole) are finished here; rows split over the history leave partial outputs for fa2_combine.
  const bool by_history = s.decode && ctx.options.attn_split == AttentionSplit::seq;
  CoreEmitter emit(ctx, op, core);
  const std::unique_ptr<HistorySource> history = history_source(ctx, unit, op, emit, core);
  history->begin_fa2();
  const bool streams = history->streams();
  std::vector<CmdRef> buffer_freed_by(std::max<std::uint64_t>(plan.buffers, 1));
  std::uint64_t global_chunk = 0;  // chunk j uses buffer j % buffers
  CmdRef previous_block_end;
  for (std::size_t bi = 0; bi < blocks.size(); ++bi) {
    const AttentionBlock& block = blocks[bi];
    const std::size_t n = block.chunk_tokens.size();
    // This block's cut runs (`loops` is in block order).
    const auto block_loops = std::equal_range(loops.begin(), loops.end(), LoopAt{bi, 0, 0, 0},
                                              [](const LoopAt& a, const LoopAt& b) { return a.block < b.block; });
    std::vector<CmdRef> chunk(n);
    const std::size_t already = history->queued(bi, chunk);
    // The Q buffer is reused by the next block: its load waits for this block's last tensor command.
    const std::uint64_t q_bytes = block.rows * s.qk_dim * kActivationBytes;
    const CmdRef q = !unit.q_hits_l2.empty() && unit.q_hits_l2[core][bi] != 0
                         ? emit.load_from_l2(q_bytes, previous_block_end)
                         : emit.load(q_bytes, previous_block_end);
    if (streams) {
      for (std::size_t i = already; i < std::min<std::size_t>(plan.buffers, n); ++i) {
        chunk[i] = history->load(bi, i, buffer_freed_by[(global_chunk + i) % plan.buffers]);
      }
    }
    CmdRef last;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t tk = block.chunk_tokens[i];
      for (auto at = block_loops.first; at != block_loops.second; ++at) {
        if (i >= at->first && i <= at->first + at->kept)
          record_loop_starts(ctx, core, ctx.out.loops[at->loop], i - at->first);
      }
      history->before_compute(bi, i, chunk);
      const Fa2ChunkCycles c = fa2_chunk_cycles(cost, s, block.chunk_rows(i), tk);
      if (s.kv_dequant) {
        emit.compute(c.dequant, {q, chunk[i]});
        emit.compute(c.qk);
      } else {
        emit.compute(c.qk, {q, chunk[i]});
      }
      emit.compute(c.softmax);
      emit.compute(c.exp);
      const CmdRef pv = emit.compute(c.pv);
      history->after_pv(bi, i, pv, chunk);
      emit.compute(c.row_exp);
      last = emit.compute(c.rescale);
      if (streams) {
        buffer_freed_by[(global_chunk + i) % plan.buffers] = pv;
        if (i + plan.buffers < n) chunk[i + plan.buffers] = history->load(bi, i + plan.buffers, pv);
      }
    }
    history->end_block(bi);
    if (by_history && (plan.partials_per_sequence[block.sequence] > 1 || unit.merges_another_part)) {
      // Partial output with its softmax statistics, merged across cores by fa2_combine.
      const std::uint64_t bytes = block.rows * partial_row_bytes(s);
      if (plan.partials_in_l2) {
        emit.store_to_l2(bytes, last);
      } else {
        emit.store(bytes, last);
      }
    } else {
      // 1 / l per row; with sinks also exp(sink - m), added to l.
      emit.compute(cost.sfu_cycles(block.rows * (s.sinks ? 2 : 1)));
      last = emit.compute(cost.vector_cycles(block.rows * s.v_dim * kNormaliseOpsPerOutput, kAccumulatorDtype));
      emit.store(block.rows * s.v_dim * kActivationBytes, last);
    }
    previous_block_end = last;
    global_chunk += n;
  }
}

}  // namespace

void lower_fa2(LoweringContext& ctx, OpId op) {
  AttentionUnit& unit = ctx.attention_unit(op);
  ctx.out.ops[op].peak_lmem_bytes = unit.plan->lmem_bytes;
  const HistoryRoute h = unit.history;
  if (h == HistoryRoute::stream || h == HistoryRoute::resident || h == HistoryRoute::staged) {
    ctx.out.ops[op].streamed_in_bytes = ctx.graph[*unit.reader].kv_bytes;
  }
  // Loop replay: one loop per cut run, iteration k's starts filled core by core (a core without
  // blocks has none of its commands there: each start is where its next command goes).
  std::vector<LoopAt> loops;
  const std::size_t queues = std::size_t{ctx.chip.cores} * ctx.chip.engines.size();
  std::uint64_t left_out = 0;  // by earlier cuts of the same block
  for (std::size_t c = 0; c < unit.cuts.size(); ++c) {
    const CutLoop& cut = unit.cuts[c];
    if (c > 0 && unit.cuts[c - 1].block != cut.block) left_out = 0;
    loops.push_back(LoopAt{cut.block, cut.first - left_out, cut.kept, ctx.out.loops.size()});
    ctx.out.loops.push_back(LoweredLoop{
        op, cut.dropped, std::vector<std::vector<std::uint32_t>>(cut.kept + 1, std::vector<std::uint32_t>(queues, 0))});
    left_out += cut.dropped;
  }
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    if (!unit.plan->cores[core].blocks.empty()) {
      lower_fa2_core(ctx, unit, op, core, loops);
      continue;
    }
    for (const LoopAt& at : loops) {
      for (std::size_t k = 0; k < ctx.out.loops[at.loop].starts.size(); ++k) {
        record_loop_starts(ctx, core, ctx.out.loops[at.loop], k);
      }
    }
  }
}

void lower_fa2_combine(LoweringContext& ctx, OpId op) {
  // Split by heads, fa2 finished its rows: nothing to merge.
  if (ctx.options.attn_split == AttentionSplit::head) return;
  const AttentionUnit& unit = ctx.attention_unit(op);
  const AttentionPlan& plan = *unit.plan;
  const AttentionShape& s = ctx.graph[op].attn();
  const std::uint64_t partial_bytes = partial_row_bytes(s);
  // The rows of the KV streams in order, a group's streams alike: run g starts at row
  // first_row[g] and stream first_stream[g], its streams holding q_len * heads_per_kv rows each.
  std::vector<std::uint64_t> first_row, first_stream, rows_per_stream;
  std::uint64_t rows = 0, streams = 0;
  for (const QueryGroup& g : s.groups) {
    first_row.push_back(rows), first_stream.push_back(streams), rows_per_stream.push_back(g.q_len * s.heads_per_kv());
    rows += g.count * s.kv_heads * rows_per_stream.back(), streams += g.count * s.kv_heads;
  }
  // Rows of sequence b merge partials_per_sequence[b] partial outputs each; a sequence one core
  // read whole has none (fa2 finished its rows) unless another part merges with it.
  auto merged = [&](std::uint64_t b) {
    const std::uint64_t n = plan.partials_per_sequence[b];
    return n > 1 || unit.merges_another_part ? n : 0;
  };
  auto cost = [&](std::uint64_t begin, std::uint64_t end) {
    RowCost c;
    std::size_t g =
        static_cast<std::size_t>(std::upper_bound(first_row.begin(), first_row.end(), begin) - first_row.begin()) - 1;
    for (std::uint64_t r = begin; r < end;) {
      while (g + 1 < first_row.size() && r >= first_row[g + 1]) ++g;
      const std::uint64_t k = (r - first_row[g]) / rows_per_stream[g];
      const std::uint64_t b = first_stream[g] + k;
      const std::uint64_t n = std::min(end, first_row[g] + (k + 1) * rows_per_stream[g]) - r;
      const std::uint64_t partials = merged(b);
      c.load_bytes += n * partials * partial_bytes;
      c.store_bytes += partials > 0 ? n * s.v_dim * kActivationBytes : 0;
      c.element_ops += n * partials * (s.v_dim * kCombineOpsPerOutput + kCombineOpsPerRow);
      c.sfu_ops += n * partials * 2;                // exp(m_i - m) for the output and for the sum
      if (s.sinks && partials > 0) c.sfu_ops += n;  // exp(sink - m), added to the merged sum
      r += n;
    }
    return c;
  };
  const std::uint64_t most_partials =
      *std::max_element(plan.partials_per_sequence.begin(), plan.partials_per_sequence.end());
  if (most_partials <= 1 && !unit.merges_another_part) return;  // no sequence was cut
  const bool some_whole =
      !unit.merges_another_part && std::any_of(plan.partials_per_sequence.begin(), plan.partials_per_sequence.end(),
                                               [](std::uint64_t n) { return n <= 1; });
  const RowCost all = cost(0, rows);
  ctx.out.ops[op].split_flops = all.element_ops + all.sfu_ops;
  // The partial outputs come from the other cores: the merge gathers them on the cross-core engine.
  // Unlike sequences merge unlike numbers of partials (a long one split over many cores, a short
  // one over one): their rows go to the cores in ranges of equal partials, as FlashMLA's combine
  // spreads a sequence's splits over its blocks; alike ones in balanced row ranges.
  std::optional<std::vector<Range>> by_partials;
  if (s.groups.size() > 1 || some_whole) {
    std::vector<std::uint64_t> weight_before{0};  // partials of the rows before each stream
    for (std::size_t g = 0; g < s.groups.size(); ++g) {
      for (std::uint64_t k = 0; k < s.groups[g].count * s.kv_heads; ++k) {
        weight_before.push_back(weight_before.back() + rows_per_stream[g] * merged(first_stream[g] + k));
      }
    }
    // The first row whose partials before it reach `target`: within stream b, rows of equal weight.
    auto row_at = [&](std::uint64_t target) {
      const std::size_t b = static_cast<std::size_t>(
          std::upper_bound(weight_before.begin(), weight_before.end(), target) - weight_before.begin() - 1);
      if (b + 1 >= weight_before.size()) return rows;
      std::size_t g = 0;
      while (g + 1 < first_stream.size() && b >= first_stream[g + 1]) ++g;
      const std::uint64_t per_row = merged(b);
      const std::uint64_t first = first_row[g] + (b - first_stream[g]) * rows_per_stream[g];
      return first + (target - weight_before[b] + per_row - 1) / per_row;
    };
    const std::uint64_t total = weight_before.back(), cores = ctx.chip.cores;
    by_partials.emplace(cores);
    std::uint64_t begin = 0;
    for (std::uint64_t c = 0; c < cores; ++c) {
      const std::uint64_t end =
          c + 1 == cores ? rows : std::max(begin, std::min(rows, row_at(total * (c + 1) / cores)));
      (*by_partials)[c] = Range{begin, end};
      begin = end;
    }
  }
  lower_rows(ctx, op, rows, most_partials * partial_bytes + s.v_dim * kActivationBytes, cost, kAccumulatorDtype,
             ctx.chip.dma_for(hw::DmaRole::cross_core), by_partials ? &*by_partials : nullptr, plan.partials_in_l2);
}

}  // namespace ops::detail
