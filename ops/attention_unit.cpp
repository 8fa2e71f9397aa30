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
#include <stdexcept>

#include "hw/config_error.hpp"
#include "hw/dtype.hpp"
#include "ops/op_lowerings.hpp"

namespace ops::detail {
namespace {

using hw::DType;

// Work per element, by what the kernel does to it (fp32 on the vector ALU, exp on the SFU):
constexpr std::uint64_t kSoftmaxOpsPerScore = 3;     // running max, subtract, running sum (+ 1 exp)
constexpr std::uint64_t kRescaleOpsPerOutput = 1;    // O *= exp(m_old - m_new) (+ 1 exp per row)
constexpr std::uint64_t kNormaliseOpsPerOutput = 1;  // O *= 1 / l (+ 1 reciprocal per row)
constexpr std::uint64_t kDequantOpsPerElement = 1;   // fp8 * scale -> bf16
constexpr std::uint64_t kCombineOpsPerOutput = 1;    // weighted accumulate of one partial
constexpr std::uint64_t kCombineOpsPerRow = 2;       // max and sum of the statistics (+ 2 exps per partial)
constexpr std::uint64_t kStatBytesPerRow = 2 * kAccumulatorBytes;  // running max and running sum

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

std::uint64_t chunk_bytes(const AttentionShape& s, std::uint64_t tokens) { return tokens * s.kv_token_bytes; }

}  // namespace

std::vector<OpId> AttentionUnit::members() const {
  std::vector<OpId> out;
  for (const auto& op : {reader, fa2, combine}) {
    if (op) out.push_back(*op);
  }
  return out;
}

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
  }
  if (!unit.reader) {
    unit.history = HistoryRoute::none;
  } else if (!unit.fa2) {
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
  } else if (g[*unit.reader].attn().gather) {
    unit.history = HistoryRoute::gather;
    unit.history_engine = ctx.chip.dma_for(hw::DmaRole::gather);
  } else {
    unit.history = !ctx.kv_resident() ? HistoryRoute::stream
                   : ctx.chip.l2      ? HistoryRoute::staged
                                      : HistoryRoute::resident;
    unit.history_engine = ctx.kv_engine();
  }
  unit.plan = &ctx.attention_plan(g[*unit.fa2].attn(), unit.history == HistoryRoute::resident);
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
  return unit;
}

void lower_kv_cache_read(LoweringContext& ctx, OpId op) {
  AttentionUnit& unit = ctx.attention_unit(op);
  if (unit.history == HistoryRoute::matmul) return;  // the matmul loads it on the read's behalf
  const AttentionShape& s = ctx.graph[op].attn();
  const AttentionPlan& plan = *unit.plan;
  ctx.out.ops[op].peak_lmem_bytes = plan.lmem_bytes;
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    const auto& blocks = plan.cores[core].blocks;
    if (blocks.empty()) continue;
    CoreEmitter emit(ctx, op, core);
    if (unit.history == HistoryRoute::resident) {
      // Round 0: one transfer per item piece (the whole share when it fits); fa2 reads the rest.
      const auto& rounds = plan.cores[core].rounds;
      if (!rounds.empty()) {
        for (const RoundPiece& piece : rounds.front()) {
          unit.round_reads[core].push_back(emit.load_on(unit.history_engine, chunk_bytes(s, piece.tokens), {}));
        }
      }
      continue;
    }
    if (unit.history == HistoryRoute::staged) {
      // Round 0 into the L2 (fa2 waits for it on every core); fa2 queues the later rounds.
      const auto& rounds = unit.staged_rounds[core];
      if (!rounds.empty()) {
        for (const RoundPiece& piece : rounds.front()) {
          unit.round_reads[core].push_back(emit.stage_to_l2(op, unit.history_engine, chunk_bytes(s, piece.tokens), {}));
        }
      }
      continue;
    }
    if (unit.history == HistoryRoute::gather) {
      // One transfer per item into a contiguous buffer that fa2 then streams; a gather picks
      // scattered rows, each rounding up to whole bursts.
      for (const AttentionBlock& b : blocks) {
        if (!b.first_pass) continue;
        std::uint64_t tokens = 0;
        for (std::uint64_t t : b.chunk_tokens) tokens += t;
        emit.load_on(unit.history_engine, chunk_bytes(s, tokens), {}, s.kv_token_bytes);
      }
      continue;
    }
    const AttentionBlock& first = blocks.front();
    const std::size_t ahead = std::min<std::size_t>(plan.buffers, first.chunk_tokens.size());
    for (std::size_t i = 0; i < ahead; ++i) {
      unit.prefetched[core].push_back(emit.load_on(unit.history_engine, chunk_bytes(s, first.chunk_tokens[i]), {}));
    }
  }
}

void lower_fa2(LoweringContext& ctx, OpId op) {
  const AttentionUnit& unit = ctx.attention_unit(op);
  const OpNode& node = ctx.graph[op];
  const AttentionShape& s = node.attn();
  const AttentionPlan& plan = *unit.plan;
  const bool streams = unit.history == HistoryRoute::stream;
  const bool resident = unit.history == HistoryRoute::resident;
  ctx.out.ops[op].peak_lmem_bytes = plan.lmem_bytes;
  const bool staged = unit.history == HistoryRoute::staged;
  if (streams || resident || staged) ctx.out.ops[op].streamed_in_bytes = ctx.graph[*unit.reader].kv_bytes;
  const bool dequant = s.kv_dequant;
  // Whole rows on a core (prefill, or decode split by heads) are finished here; rows split over
  // the history leave partial outputs for fa2_combine.
  const bool partial = s.decode && ctx.options.attn_split == AttentionSplit::seq;
  const hw::CostModel& cost = ctx.cost;
  // With several KV heads per token (GQA, MLA expanded), one head's rows are strided.
  const std::uint64_t kv_row = s.kv_heads > 1 ? s.kv_token_bytes : 0;

  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    const auto& blocks = plan.cores[core].blocks;
    if (blocks.empty()) continue;
    CoreEmitter emit(ctx, op, core);
    const std::vector<CmdRef>& prefetched = unit.prefetched[core];
    // Resident rounds: round_of[b][i] is the round of first-pass chunk i of block b; reads of round
    // r + round_buffers - 1 are queued when round r starts, after the last P V of round r - 1.
    const auto& rounds = plan.cores[core].rounds;
    std::vector<std::vector<std::size_t>> round_of(blocks.size());
    for (std::size_t r = 0; r < rounds.size(); ++r) {
      for (const RoundPiece& piece : rounds[r]) {
        round_of[piece.block].resize(blocks[piece.block].chunk_tokens.size());
        for (std::size_t i = 0; i < piece.chunks; ++i) round_of[piece.block][piece.first_chunk + i] = r;
      }
    }
    std::vector<CmdRef> round_read(rounds.size()), round_last_pv(rounds.size());
    if (!rounds.empty()) round_read[0] = unit.round_reads[core].empty() ? CmdRef{} : unit.round_reads[core].back();
    std::size_t current_round = 0;
    bool round_started = false;
    auto start_round = [&](std::size_t r) {
      const std::size_t target = r + plan.round_buffers - 1;
      if (target == 0 || target >= rounds.size()) return;
      const CmdRef after = r >= 1 ? round_last_pv[r - 1] : CmdRef{};
      CmdRef last_read;
      for (const RoundPiece& piece : rounds[target]) {
        last_read = emit.load_as(*unit.reader, unit.history_engine, chunk_bytes(s, piece.tokens), after);
      }
      round_read[target] = last_read;
    };
    // Staged rounds (in the L2): the round of each first-pass chunk, whether it opens or closes
    // its round, and the rounds' last read ids. Round 1 (with two L2 buffers) is read right away.
    const std::vector<std::vector<RoundPiece>> no_rounds;
    const auto& l2_rounds = staged ? unit.staged_rounds[core] : no_rounds;
    std::vector<std::vector<std::size_t>> l2_round_of(blocks.size());
    std::vector<std::vector<std::uint8_t>> opens(blocks.size()), closes(blocks.size());
    for (std::size_t r = 0; r < l2_rounds.size(); ++r) {
      for (std::size_t p = 0; p < l2_rounds[r].size(); ++p) {
        const RoundPiece& piece = l2_rounds[r][p];
        const std::size_t chunks = blocks[piece.block].chunk_tokens.size();
        l2_round_of[piece.block].resize(chunks), opens[piece.block].resize(chunks), closes[piece.block].resize(chunks);
        for (std::size_t i = 0; i < piece.chunks; ++i) l2_round_of[piece.block][piece.first_chunk + i] = r;
        if (p == 0) opens[piece.block][piece.first_chunk] = 1;
        if (p + 1 == l2_rounds[r].size()) closes[piece.block][piece.first_chunk + piece.chunks - 1] = 1;
      }
    }
    std::vector<CmdRef> l2_read(l2_rounds.size());
    std::vector<std::uint8_t> in_l2(l2_rounds.size());  // the round's read has been queued
    auto stage_round = [&](std::size_t r, CmdRef after) {
      for (const RoundPiece& piece : l2_rounds[r]) {
        l2_read[r] = emit.stage_to_l2(*unit.reader, unit.history_engine, chunk_bytes(s, piece.tokens), after);
      }
      in_l2[r] = 1;
    };
    if (staged) {
      if (!l2_rounds.empty()) {
        l2_read[0] = unit.round_reads[core].empty() ? CmdRef{} : unit.round_reads[core].back();
        in_l2[0] = 1;
      }
      if (unit.staged_buffers == 2 && l2_rounds.size() > 1) stage_round(1, {});
    }
    // A chunk whose round is not yet queued for the L2 (local memory holds more chunks ahead than
    // the L2 holds rounds) cannot be loaded yet: its load is queued once the round's read is.
    struct DeferredLoad {
      std::size_t chunk;
      CmdRef after;
    };
    std::vector<DeferredLoad> deferred;
    std::vector<CmdRef> buffer_freed_by(std::max<std::uint64_t>(plan.buffers, 1));
    std::uint64_t global_chunk = 0;  // chunk j uses buffer j % buffers
    CmdRef previous_block_end;

    for (std::size_t bi = 0; bi < blocks.size(); ++bi) {
      const AttentionBlock& block = blocks[bi];
      const std::size_t n = block.chunk_tokens.size();
      // The first row block streams the history as kv_cache_read's traffic; further blocks, and a
      // gathered history read again from its buffer, are fa2's own.
      const bool reads_history = streams && block.first_pass;
      const bool from_l2 = staged && block.first_pass;
      auto load_chunk = [&](std::size_t i, CmdRef after) {
        const std::uint64_t bytes = chunk_bytes(s, block.chunk_tokens[i]);
        if (from_l2) {
          // A later round must be in the L2 first: a tensor fence carries the wait on its read
          // (the fence comes after the buffer's freeing instruction, so it covers that too).
          const std::size_t r = l2_round_of[bi][i];
          if (!in_l2[r] || !deferred.empty()) {
            deferred.push_back({i, after});
            return CmdRef{};
          }
          if (opens[bi][i] && r >= 1) after = emit.fence(l2_read[r]);
          const CmdRef loaded = emit.load_from_l2(bytes, after, kv_row);
          // One L2 buffer: when the round's last chunk has left it, the next round may be read
          // (a fence on that load). Two buffers: the round after next is read once this round's
          // last chunk has been computed (below), without stalling the tensor engine.
          if (unit.staged_buffers == 1 && closes[bi][i] && r + 1 < l2_rounds.size()) {
            stage_round(r + 1, emit.fence(loaded));
          }
          return loaded;
        }
        return reads_history ? emit.load_as(*unit.reader, unit.history_engine, bytes, after, kv_row)
                             : emit.load(bytes, after, kv_row);
      };
      std::vector<CmdRef> chunk(n);
      const std::size_t already = bi == 0 ? prefetched.size() : 0;
      std::copy(prefetched.begin(), prefetched.begin() + static_cast<std::ptrdiff_t>(already), chunk.begin());
      // The Q buffer is reused by the next block: its load waits for this block's last tensor command.
      const CmdRef q = emit.load(block.rows * s.qk_dim * kActivationBytes, previous_block_end);
      if (!resident) {
        for (std::size_t i = already; i < std::min<std::size_t>(plan.buffers, n); ++i) {
          chunk[i] = load_chunk(i, buffer_freed_by[(global_chunk + i) % plan.buffers]);
        }
      }
      CmdRef last;
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t tk = block.chunk_tokens[i];
        if (resident && block.first_pass && !rounds.empty()) {
          // This chunk's round must have been read whole: round 0 by the barrier, later ones by
          // waiting on their read's last id.
          const std::size_t r = round_of[bi][i];
          if (!round_started || r != current_round) {
            current_round = r;
            round_started = true;
            start_round(r);
            if (r > 0) chunk[i] = round_read[r];
          }
        }
        if (from_l2 && chunk[i].id == 0) throw std::logic_error("fa2: an L2 chunk computed before its load was queued");
        if (dequant) {
          emit.compute(cost.vector_cycles(tk * s.kv_elements * kDequantOpsPerElement, kActivationDtype), {q, chunk[i]});
        }
        // S = Q K^T: K is stored token-major, an NT instruction.
        const std::uint64_t qk = cost.matmul_cycles(block.rows, s.qk_dim, tk, kActivationDtype, hw::MatmulLayout::nt);
        if (dequant) {
          emit.compute(qk);
        } else {
          emit.compute(qk, {q, chunk[i]});
        }
        emit.compute(cost.vector_cycles(block.rows * tk * kSoftmaxOpsPerScore, kAccumulatorDtype));
        emit.compute(cost.sfu_cycles(block.rows * tk));  // exp of the scores
        const CmdRef pv = emit.compute(cost.matmul_cycles(block.rows, tk, s.v_dim, kActivationDtype));
        if (resident && block.first_pass && !rounds.empty()) round_last_pv[round_of[bi][i]] = pv;
        if (from_l2 && unit.staged_buffers == 2 && closes[bi][i] && l2_round_of[bi][i] + 2 < l2_rounds.size()) {
          stage_round(l2_round_of[bi][i] + 2, pv);
          // The loads that waited for that round, in chunk order (the tiles queue is in order).
          std::vector<DeferredLoad> waiting;
          waiting.swap(deferred);
          for (const DeferredLoad& d : waiting) chunk[d.chunk] = load_chunk(d.chunk, d.after);
        }
        emit.compute(cost.sfu_cycles(block.rows));  // exp(m_old - m_new) per row
        last = emit.compute(cost.vector_cycles(block.rows * (s.v_dim * kRescaleOpsPerOutput + 2), kAccumulatorDtype));
        if (!resident) {
          buffer_freed_by[(global_chunk + i) % plan.buffers] = pv;
          if (i + plan.buffers < n) chunk[i + plan.buffers] = load_chunk(i + plan.buffers, pv);
        }
      }
      if (partial) {
        // Partial output with its softmax statistics, merged across cores by fa2_combine.
        emit.store(block.rows * (s.v_dim * kAccumulatorBytes + kStatBytesPerRow), last);
      } else {
        emit.compute(cost.sfu_cycles(block.rows));  // 1 / l per row
        last = emit.compute(cost.vector_cycles(block.rows * s.v_dim * kNormaliseOpsPerOutput, kAccumulatorDtype));
        emit.store(block.rows * s.v_dim * kActivationBytes, last);
      }
      if (!deferred.empty()) throw std::logic_error("fa2: L2 chunk loads left waiting for a round never read");
      previous_block_end = last;
      global_chunk += n;
    }
  }
}

void lower_fa2_combine(LoweringContext& ctx, OpId op) {
  // Split by heads, fa2 finished its rows: nothing to merge.
  if (ctx.options.attn_split == AttentionSplit::head) return;
  const AttentionPlan& plan = *ctx.attention_unit(op).plan;
  const AttentionShape& s = ctx.graph[op].attn();
  const std::uint64_t rows_per_seq = s.q_len * s.heads_per_kv();
  const std::uint64_t partial_bytes = s.v_dim * kAccumulatorBytes + kStatBytesPerRow;
  // Rows of sequence b merge partials_per_sequence[b] partial outputs each.
  auto cost = [&](std::uint64_t begin, std::uint64_t end) {
    RowCost c;
    for (std::uint64_t r = begin; r < end;) {
      const std::uint64_t b = r / rows_per_seq;
      const std::uint64_t n = std::min(end, (b + 1) * rows_per_seq) - r;
      const std::uint64_t partials = plan.partials_per_sequence[b];
      c.load_bytes += n * partials * partial_bytes;
      c.store_bytes += n * s.v_dim * kActivationBytes;
      c.element_ops += n * partials * (s.v_dim * kCombineOpsPerOutput + kCombineOpsPerRow);
      c.sfu_ops += n * partials * 2;  // exp(m_i - m) for the output and for the sum
      r += n;
    }
    return c;
  };
  const std::uint64_t rows = s.sequences() * rows_per_seq;
  const std::uint64_t most_partials =
      *std::max_element(plan.partials_per_sequence.begin(), plan.partials_per_sequence.end());
  const RowCost all = cost(0, rows);
  ctx.out.ops[op].split_flops = all.element_ops + all.sfu_ops;
  // The partial outputs come from the other cores: the merge gathers them on the cross-core engine.
  lower_rows(ctx, op, rows, most_partials * partial_bytes + s.v_dim * kActivationBytes, cost, kAccumulatorDtype,
             ctx.chip.dma_for(hw::DmaRole::cross_core));
}

}  // namespace ops::detail
