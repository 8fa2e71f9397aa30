// Lowering of kv_cache_read, fa2 and fa2_combine (see ops/attention_plan.hpp for the split and
// the tiles, ops/lowering.hpp for the two kv-read routes). fa2_combine gathers the other cores'
// partial outputs and softmax statistics over SDMA.
//
// Per core and per row block, fa2 runs for every KV chunk:
//   [dequant fp8 -> bf16]  S = Q K^T  softmax(S) (online)  O += P V  rescale O
// as TIU commands. Chunk j's load waits on the P V product of chunk j - buffers (which frees its
// buffer), so up to `buffers` chunks are in flight ahead of the compute. The chunk loads of the
// first row block of each item are the history read and belong to kv_cache_read; in decode, the
// first `buffers` chunks of a core are queued at kv_cache_read's place (right after the
// absorption), the rest as fa2 consumes them.

#include <algorithm>
#include <optional>

#include "hw/config_error.hpp"
#include "hw/dtype.hpp"
#include "ops/attention_plan.hpp"
#include "ops/lowering_context.hpp"

namespace ops::detail {
namespace {

using hw::DType;
using sim::Engine;

// Work per element, by what the kernel does to it (fp32 on the vector ALU, exp on the SFU):
constexpr std::uint64_t kSoftmaxOpsPerScore = 3;     // running max, subtract, running sum (+ 1 exp)
constexpr std::uint64_t kRescaleOpsPerOutput = 1;    // O *= exp(m_old - m_new) (+ 1 exp per row)
constexpr std::uint64_t kNormaliseOpsPerOutput = 1;  // O *= 1 / l (+ 1 reciprocal per row)
constexpr std::uint64_t kDequantOpsPerElement = 1;   // fp8 * scale -> bf16
constexpr std::uint64_t kCombineOpsPerOutput = 1;    // weighted accumulate of one partial
constexpr std::uint64_t kCombineOpsPerRow = 2;       // max and sum of the statistics (+ 2 exps per partial)
constexpr std::uint64_t kStatBytesPerRow = 8;        // fp32 running max and running sum

bool history_resident(const LoweringContext& ctx) { return ctx.options.kv_read_engine == Engine::sdma; }

std::optional<OpId> history_reader(const LoweringContext& ctx, OpId fa2) {
  for (auto [e, end] = boost::in_edges(fa2, ctx.graph); e != end; ++e) {
    const OpId src = boost::source(*e, ctx.graph);
    if (ctx.graph[src].kind == OpKind::kv_cache_read) return src;
  }
  return std::nullopt;
}

std::uint64_t chunk_bytes(const AttentionShape& s, std::uint64_t tokens) {
  return tokens * s.kv_token_bytes;
}

}  // namespace

void lower_kv_cache_read(LoweringContext& ctx, OpId op) {
  // Feeding a matmul (MLA standard mode), the read is that matmul's A stream: nothing of its own.
  for (auto [e, end] = boost::out_edges(op, ctx.graph); e != end; ++e) {
    if (ctx.graph[boost::target(*e, ctx.graph)].kind == OpKind::matmul) {
      if (history_resident(ctx)) {
        throw hw::ConfigError(
            "--kv-read-engine sdma: with --mla-mode standard the history feeds the up-projection, not fa2; use gdma");
      }
      return;
    }
  }
  const AttentionShape& s = ctx.graph[op].attn;
  const bool resident = history_resident(ctx) && !s.gather;
  const AttentionPlan& plan = ctx.attention_plan(s, resident);
  ctx.out.ops[op].peak_lmem_bytes = plan.lmem_bytes;
  PrefetchedChunks prefetched;
  prefetched.ids.resize(ctx.chip.cores);
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    const auto& blocks = plan.cores[core].blocks;
    if (blocks.empty()) continue;
    CoreEmitter emit(ctx, op, core);
    if (resident || s.gather) {
      // One SDMA transfer per item: the core's share lands in local memory (SDMA route) or, for a
      // DSA gather, in a contiguous buffer that fa2 then streams.
      for (const AttentionBlock& b : blocks) {
        if (!b.first_pass) continue;
        std::uint64_t tokens = 0;
        for (std::uint64_t t : b.chunk_tokens) tokens += t;
        // A DSA gather picks scattered rows: each rounds up to whole bursts.
        emit.load(chunk_bytes(s, tokens), 0, Engine::sdma, s.gather ? s.kv_token_bytes : 0);
      }
      continue;
    }
    const AttentionBlock& first = blocks.front();
    const std::size_t ahead = std::min<std::size_t>(plan.buffers, first.chunk_tokens.size());
    for (std::size_t i = 0; i < ahead; ++i) {
      prefetched.ids[core].push_back(emit.load(chunk_bytes(s, first.chunk_tokens[i]), 0));
    }
  }
  ctx.prefetched[op] = std::move(prefetched);
}

void lower_fa2(LoweringContext& ctx, OpId op) {
  const OpNode& node = ctx.graph[op];
  const AttentionShape& s = node.attn;
  const std::optional<OpId> reader = history_reader(ctx, op);
  const bool gathered = reader.has_value() && ctx.graph[*reader].attn.gather;
  const bool resident = reader.has_value() && history_resident(ctx) && !gathered;
  const AttentionPlan& plan = ctx.attention_plan(s, resident);
  ctx.out.ops[op].peak_lmem_bytes = plan.lmem_bytes;
  if (reader && !gathered) ctx.out.ops[op].streamed_in_bytes = ctx.graph[*reader].kv_bytes;
  const bool dequant = s.kv_dequant;
  // Whole rows on a core (prefill, or decode split by heads) are finished here; rows split over
  // the history leave partial outputs for fa2_combine.
  const bool partial = s.decode && ctx.options.attn_split == AttentionSplit::seq;
  const hw::Chip& chip = ctx.chip;

  for (std::uint32_t core = 0; core < chip.cores; ++core) {
    const auto& blocks = plan.cores[core].blocks;
    if (blocks.empty()) continue;
    CoreEmitter emit(ctx, op, core);
    const std::vector<std::uint32_t> none;
    const auto& prefetched = reader && !resident && !gathered ? ctx.prefetched.at(*reader).ids[core] : none;
    std::vector<std::uint32_t> buffer_freed_by(std::max<std::uint64_t>(plan.buffers, 1), 0);
    std::uint64_t global_chunk = 0;  // chunk j uses buffer j % buffers
    std::uint32_t previous_block_end = 0;

    for (std::size_t bi = 0; bi < blocks.size(); ++bi) {
      const AttentionBlock& block = blocks[bi];
      const std::size_t n = block.chunk_tokens.size();
      // A gathered history is read again from its buffer: fa2's own traffic.
      const bool reads_history = reader.has_value() && block.first_pass && !gathered;
      // With several KV heads per token (GQA, MLA expanded), one head's rows are strided.
      const std::uint64_t kv_row = s.kv_heads > 1 ? s.kv_token_bytes : 0;
      auto load_chunk = [&](std::size_t i, std::uint32_t wait_tiu) -> std::uint32_t {
        const std::uint64_t bytes = chunk_bytes(s, block.chunk_tokens[i]);
        return reads_history ? emit.load_as(*reader, bytes, wait_tiu, Engine::gdma, kv_row)
                             : emit.load(bytes, wait_tiu, Engine::gdma, kv_row);
      };
      std::vector<std::uint32_t> chunk_id(n, 0);
      const std::size_t already = bi == 0 ? prefetched.size() : 0;
      std::copy(prefetched.begin(), prefetched.begin() + static_cast<std::ptrdiff_t>(already), chunk_id.begin());
      // The Q buffer is reused by the next block: its load waits for this block's last TIU.
      const std::uint32_t q_id = emit.load(block.rows * s.qk_dim * 2, previous_block_end);
      if (!resident) {
        for (std::size_t i = already; i < std::min<std::size_t>(plan.buffers, n); ++i) {
          chunk_id[i] = load_chunk(i, buffer_freed_by[(global_chunk + i) % plan.buffers]);
        }
      }
      std::uint32_t last_tiu = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t tk = block.chunk_tokens[i];
        std::uint32_t wait = std::max(q_id, chunk_id[i]);
        if (dequant) {
          emit.compute(chip.vector_cycles(tk * s.kv_elements * kDequantOpsPerElement, DType::bf16), wait);
          wait = 0;
        }
        // S = Q K^T: K is stored token-major, an NT instruction.
        emit.compute(chip.matmul_cycles(block.rows, s.qk_dim, tk, DType::bf16, hw::MatmulLayout::nt), wait);
        emit.compute(chip.vector_cycles(block.rows * tk * kSoftmaxOpsPerScore, DType::fp32), 0);
        emit.compute(chip.sfu_cycles(block.rows * tk), 0);  // exp of the scores
        const std::uint32_t pv = emit.compute(chip.matmul_cycles(block.rows, tk, s.v_dim, DType::bf16), 0);
        emit.compute(chip.sfu_cycles(block.rows), 0);  // exp(m_old - m_new) per row
        last_tiu = emit.compute(chip.vector_cycles(block.rows * (s.v_dim * kRescaleOpsPerOutput + 2), DType::fp32), 0);
        if (!resident) {
          buffer_freed_by[(global_chunk + i) % plan.buffers] = pv;
          if (i + plan.buffers < n) chunk_id[i + plan.buffers] = load_chunk(i + plan.buffers, pv);
        }
      }
      if (partial) {
        // Partial output with its softmax statistics, merged across cores by fa2_combine.
        emit.store(block.rows * (s.v_dim * 4 + kStatBytesPerRow), last_tiu);
      } else {
        emit.compute(chip.sfu_cycles(block.rows), 0);  // 1 / l per row
        last_tiu = emit.compute(chip.vector_cycles(block.rows * s.v_dim * kNormaliseOpsPerOutput, DType::fp32), 0);
        emit.store(block.rows * s.v_dim * 2, last_tiu);
      }
      previous_block_end = last_tiu;
      global_chunk += n;
    }
  }
}

void lower_fa2_combine(LoweringContext& ctx, OpId op) {
  // Split by heads, fa2 finished its rows: nothing to merge.
  if (ctx.options.attn_split == AttentionSplit::head) return;
  const AttentionShape& s = ctx.graph[op].attn;
  const AttentionPlan& plan = ctx.attention_plan(s, history_resident(ctx));
  const std::uint64_t rows_per_seq = s.q_len * s.heads_per_kv();
  const std::uint64_t partial_bytes = s.v_dim * 4 + kStatBytesPerRow;
  // Rows of sequence b merge partials_per_sequence[b] partial outputs each.
  auto cost = [&](std::uint64_t begin, std::uint64_t end) {
    RowCost c;
    for (std::uint64_t r = begin; r < end;) {
      const std::uint64_t b = r / rows_per_seq;
      const std::uint64_t n = std::min(end, (b + 1) * rows_per_seq) - r;
      const std::uint64_t partials = plan.partials_per_sequence[b];
      c.load_bytes += n * partials * partial_bytes;
      c.store_bytes += n * s.v_dim * 2;
      c.element_ops += n * partials * (s.v_dim * kCombineOpsPerOutput + kCombineOpsPerRow);
      c.sfu_ops += n * partials * 2;  // exp(m_i - m) for the output and for the sum
      r += n;
    }
    return c;
  };
  const std::uint64_t rows = s.sequences() * rows_per_seq;
  const std::uint64_t most_partials = *std::max_element(plan.partials_per_sequence.begin(), plan.partials_per_sequence.end());
  const RowCost all = cost(0, rows);
  ctx.out.ops[op].split_flops = all.element_ops + all.sfu_ops;
  // The partial outputs come from the other cores: the merge gathers them over SDMA.
  lower_rows(ctx, op, rows, most_partials * partial_bytes + s.v_dim * 2, cost, DType::fp32, Engine::sdma);
}

void lower_collective(LoweringContext& ctx, OpId op) {
  // On core 0's CDMA, one transfer per step of the algorithm, each paying the link latency:
  //   ring all-reduce of S bytes over N chips: 2 (N - 1) steps of S / N (reduce-scatter, all-gather);
  //   all-to-all of S bytes sent: N - 1 steps of S / (N - 1), one per peer.
  const CollectiveShape& c = ctx.graph[op].collective;
  if (c.chips < 2 || c.bytes == 0) return;
  const bool ring = ctx.graph[op].kind == OpKind::all_reduce;
  const std::uint64_t steps = ring ? 2 * (c.chips - 1) : c.chips - 1;
  const std::uint64_t share = ring ? c.chips : c.chips - 1;
  CoreEmitter emit(ctx, op, 0);
  for (std::uint64_t i = 0; i < steps; ++i) emit.send_to_chip((c.bytes + share - 1) / share, 0);
}

}  // namespace ops::detail
