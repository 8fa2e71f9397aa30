#pragma once
// How fa2 (and, in decode, kv_cache_read) is split over cores and tiled in local memory.
//
// Two split strategies (--attn-split):
//   seq  (default, flash decoding) as below;
//   head (decode): the query rows (heads) of every sequence are cut over the cores instead, and
//        every core reads the whole history of each sequence it serves: the history is read once
//        per core used (MLA's single latent stream is shared by all heads), but no combine.
//
// Work items, over the B * kv_heads independent KV streams ("sequences": one per batch entry for
// MLA absorb, one per batch entry and KV head for GQA). Decode (q_len < kv_len): the history rows
// of all sequences, in order, are cut into contiguous ranges, one per core (flash decoding); a
// core's range becomes one item (a piece) per sequence it touches, each item holding all the query
// rows of that sequence (q_len * heads / kv_heads) and its slice of the history. Every KV byte is
// therefore read by exactly one core, and each sequence's rows get one partial output per item,
// merged by fa2_combine. MLA's latent streams (kv_heads 1), and the history of prompt chunks
// (over_chunks: many query rows a stream), are cut into equal token ranges. GQA's decodes
// (kv_heads > 1) are cut by cost: a piece costs its tokens plus a fixed o tokens
// (decode_piece_tokens: loading its query rows, storing its partial rows and the two round trips,
// in history tokens at a core's share of the stream rate), and core c takes up to U cost units
// from where core c - 1 stopped, opening a piece only with room for a token beside its cost; U is
// the least that covers every stream with the cores. FlashMLA's scheduler charges a split the same
// way (deepseek-ai/FlashMLA, get_mla_metadata: a fixed 5 blocks of 64 tokens a split), and the GQA
// decode kernels launch a block per (sequence, KV head, split) that the SMs take as they free up,
// so a short sequence's pieces do not pile on one core. Why: with equal token ranges a core over
// short histories opens many pieces and finishes last, and a batch of unequal histories took
// longer than as many at their mean. On H100 (Qwen3-8B, decodes of ShareGPT-like histories, 10 to
// 49) the step was 1.1-6.0 % longer than at the mean, and a serve's step model, which stands a
// batch by its mean history (serving/step_bucketing.hpp), came out 4 % fast; by cost the same
// steps are within 0.3 % of their mean's. Why not MLA: its piece (128 query rows and their fp32
// partials, 356 history tokens on DeepSeek-V3) made the cut by cost 7-31 % faster on uniform
// batches of short histories (FlashInfer's MLA kernel on H800, 16-256 sequences of 1,024), where
// the measurements lie between the two cuts, and the validation rows fit equal ranges better
// (H800 10.98 % against 11.82 %); a ragged MLA batch's 2-3 % stays (docs/serving.md). Prefill
// (q_len == kv_len): the query tokens of all sequences are cut the same way; an item holds its
// tokens' rows and the sequence's whole K/V.
//
// Causal prefill: a query token at position t sees t + 1 keys (plus the history before the
// prompt), so contiguous ranges would give the cores unequal work. Alike sequences go by their
// P = sequences x kv_heads x heads_per_kv (KV stream, query head) pairs:
//   P a multiple of the cores: P / cores whole pairs a core (FlashAttention's split by heads);
//   the cores a multiple of P:  g = cores / P cores a pair, core j of them taking the pair's
//        tokens j, j + g, j + 2g, ... (striped attention); a row block reads the keys up to the
//        end of its last token's stripe of g, so every core's block b streams the same chunks;
//   otherwise: the query tokens in 2 x cores balanced parts, core c taking parts c and
//        2 cores - 1 - c (an early and a late one).
// Unlike sequences: contiguous ranges holding equal shares of the keys seen. Loop replay
// (ops/loop_replay.hpp) cuts a row block's chunk loop when every core has that block with the
// same chunks: the first two splits, not the last two.
//
// Tiles. An item's rows go in blocks of `row_block`; for each block the item's KV streams in
// chunks of `chunk_tokens` through `buffers` chunk buffers. Per core, local memory holds:
//   Q block       row_block * qk_dim * 2           (bf16)
//   O accumulator row_block * (v_dim + 2) * 4      (fp32, plus running max and sum)
//   scores        row_block * chunk_tokens * 4     (fp32)
//   KV chunks     buffers * chunk_tokens * kv_token_bytes  (or, resident: the core's share, or
//                 round_buffers rounds of round_tokens)
//   dequant       chunk_tokens * kv_elements * 2   (only when the format needs converting)
// The choice: the largest row block, then the largest chunk (<= 512 tokens) with two buffers,
// then up to four buffers, that fit. Only the first row block of an item reads the history as
// kv_cache_read; further blocks (when the rows do not fit at once) re-read it as fa2 traffic.
//
// Row tiles (`tile_rows`, the stream route). When a sequence's query rows R = q_len * heads /
// kv_heads (a speculative verify, a prompt chunk over its history, many heads on MLA's one latent
// stream) take M = ceil(R / row_block) > 1 blocks, one core per slice would walk its slice M
// times in turn, and every slice would leave R partial rows. The published MLA kernels instead
// launch a grid of row tiles x history parts (FlashMLA: num_sm_parts = SMs / kv_heads / M, each
// CTA 64 query rows of one part): here the rows go in M = ceil(R / t) tiles of t rows, t the
// lane multiple up to the row block (or the balanced ceil(R / ceil(R / row_block))) that leaves a
// core the fewest lane-padded rows per history token (attention_plan.cpp, choose_row_tile); the
// history is cut into
//   P = min(P*(t), max(1, floor(cores / M)))
// parts (P* of decode_split_parts with a core's tile of rows per token and R partial rows a
// part), part p goes to the p-th group
// of floor(cores / P) cores, and the group's cores take the part's (slice, row tile) items in
// turn. A slice's first tile is the history read; its other tiles read the same slice at about the
// same time on other cores, from the L2 when the chip's L2 caches reads (attention_unit.cpp), and
// each slice leaves R partial rows over its M tiles instead of over one core.
//
// Resident (the kv_resident route): the core's whole share when some tiles leave room for it;
// otherwise rounds. A round is up to round_tokens history tokens (a whole number of chunks), read
// whole into one of round_buffers round buffers (two when they fit: the next round reads while
// fa2 works on this one) before fa2 touches it; the rows must then fit one row block, the largest
// row block and chunk that leave room for a round of at least one chunk are taken. Round 0 is
// read at kv_cache_read's place and fa2 waits for it on every core; round r > 0 is read when its
// buffer is free (after the last P V of round r - round_buffers) and fa2's first instruction on it
// waits on the read's last id (the spec's initial_sdma_dep, per round).

#include <cstdint>
#include <vector>

#include "hw/chip.hpp"
#include "hw/cost_model.hpp"
#include "ops/op_graph.hpp"

namespace ops {

struct AttentionBlock {
  std::uint64_t sequence = 0;  ///< batch entry x KV head
  std::uint64_t rows = 0;      ///< query rows (tokens x heads per KV head) in this block
  std::vector<std::uint64_t> chunk_tokens;
  /// Its reads are the history read: the first row block of an item that holds the sequence's
  /// first rows (with row tiles, the other tiles of the slice read it again).
  bool first_pass = false;
  std::uint64_t row_begin = 0;  ///< its first query row within the sequence's rows
  std::uint64_t kv_begin = 0;   ///< decode: the first history token of the item's slice
  /// A striped causal block (attention_plan.cpp): the query rows its last band_rows.size()
  /// chunks are computed for, a suffix of its rows in whole lane tiles (the rows whose tokens see
  /// the chunk's first key); its other chunks are computed for all `rows`.
  std::vector<std::uint32_t> band_rows;
  /// The rows chunk i is computed for.
  std::uint64_t chunk_rows(std::size_t i) const {
    const std::size_t band_begin = chunk_tokens.size() - band_rows.size();
    return i < band_begin ? rows : band_rows[i - band_begin];
  }
};

/// One piece of a resident round: `tokens` history tokens of block `block`, its chunks
/// [first_chunk, first_chunk + chunks).
struct RoundPiece {
  std::size_t block = 0, first_chunk = 0, chunks = 0;
  std::uint64_t tokens = 0;
};

struct CoreAttention {
  std::vector<AttentionBlock> blocks;
  std::uint64_t first_pass_tokens = 0;          ///< history tokens this core reads once
  std::vector<std::vector<RoundPiece>> rounds;  ///< resident: the history read, round by round
};

struct AttentionPlan {
  std::uint64_t row_block = 0;
  std::uint64_t chunk_tokens = 0;
  std::uint64_t buffers = 0;  ///< 0 when the history is resident (SDMA route)
  bool resident = false;
  std::uint64_t round_tokens = 0;   ///< resident: history tokens per round (the whole share: one round)
  std::uint64_t round_buffers = 0;  ///< resident: round buffers in local memory (1 or 2)
  std::uint64_t lmem_bytes = 0;
  std::vector<CoreAttention> cores;
  std::vector<std::uint64_t> partials_per_sequence;  ///< decode: items per sequence (B * kv_heads)
  bool partials_in_l2 = false;  ///< decode split: fa2 stores its partials to the L2, fa2_combine reads them there
  bool row_tiles = false;       ///< decode: a sequence's rows cut into row tiles over cores (see above)
};

enum class AttentionSplit : std::uint8_t { seq, head };

/// The tensor engine's instructions fa2 runs on one chunk of `tokens` history tokens for `rows`
/// query rows, in issue order: the lowering (ops/attention_unit.cpp) emits them, the split count
/// (decode_split_parts) estimates a token's time from them.
struct Fa2ChunkCycles {
  std::uint64_t dequant = 0;  ///< fp8 -> bf16 when the cache format needs it, else 0
  std::uint64_t qk = 0, softmax = 0, exp = 0, pv = 0, row_exp = 0, rescale = 0;
  std::uint64_t total() const { return dequant + qk + softmax + exp + pv + row_exp + rescale; }
};
Fa2ChunkCycles fa2_chunk_cycles(const hw::CostModel& cost, const AttentionShape& shape, std::uint64_t rows,
                                std::uint64_t tokens);

/// Decode split by history: how many cores take a range of it. Flash decoding cuts the history of
/// every stream over the cores, but a cut is not free: each piece stores a partial output, rows x
/// (v_dim + 2) fp32 = b_p bytes, which fa2_combine reads back, all through the shared DDR. With N
/// history tokens over all streams on P cores:
///   T(P) = N t_tok / P + 2 P b_p / W
/// (t_tok: one token's time on a core, the larger of its transfer alone, e_kv / r_kv, and the
/// tensor engine's instructions for it, a 64-token chunk's / 64; W: the DDR's sustained rate),
/// least at P* = sqrt(N t_tok W / (2 b_p)); P = round(P*) clamped to [1, cores]. So a short
/// history goes to fewer cores, and each core's share, N / P* ~ sqrt(N), still grows with N (the
/// history read's span stays monotone in the context). FlashMLA's scheduler charges each split a
/// fixed 5 blocks of 64 tokens, FlashInfer's floors its KV chunk at 128-256 tokens; both leave a
/// short batch-1 decode on a handful of SMs. Not decode: all cores.
///
/// The partials' place. `partials_may_use_l2`: the chip has an L2 that the history does not
/// occupy (it is not staged there) and fa2_combine merges this fa2's partials alone. They then go
/// through the L2 when every partial of the split fits its capacity: a GPU's write-back L2 keeps
/// what fa2 stores until the combine reads it back microseconds later, and a software-managed L2
/// holds them as it holds a matmul's split-K partials (ops/work_split.hpp). W is then the L2's
/// bandwidth: P* is taken at that rate when the at most P* + S - 1 pieces of S streams
/// (rows x b_p each, the largest rows) fit, else at the DDR's.
std::uint64_t decode_split_parts(const AttentionShape& shape, const hw::Chip& chip, bool partials_may_use_l2);

/// o of the decode cut by cost (above), in history tokens; 0 where the cut is by tokens (not
/// decode, MLA's kv_heads 1, a chunk's history: over_chunks): with R query rows a
/// stream, q and v the head dims, b_p = partial_row_bytes, L the history route's round trip, e_kv
/// a token's bytes of the history, and r = min(the route's rate alone, the DDR's rate / cores):
///   o = ceil((R (2 q + b_p) + 2 L r) / e_kv).
std::uint64_t decode_piece_tokens(const AttentionShape& shape, const hw::Chip& chip, std::uint64_t cores);

/// b_p per query row: the fp32 output row and its running max and sum, what a piece of a decode
/// split stores for fa2_combine.
std::uint64_t partial_row_bytes(const AttentionShape& shape);

/// Bytes of the partial outputs a decode split leaves for fa2_combine: b_p per row of every item
/// (an upper bound: a sequence one core reads whole leaves none).
std::uint64_t decode_partial_bytes(const AttentionShape& shape, const AttentionPlan& plan);

/// The tiles chosen for items of at most `max_rows` query rows and `max_tokens` KV tokens (and, when
/// resident, `max_resident` tokens per core): the rule above. row_block 0 when nothing fits.
struct AttentionTiles {
  std::uint64_t row_block = 0, chunk_tokens = 0, buffers = 0, lmem_bytes = 0;
  std::uint64_t round_tokens = 0, round_buffers = 0;  ///< resident only
};
AttentionTiles choose_tiles(const AttentionShape& shape, std::uint64_t lmem, std::uint64_t max_rows,
                            std::uint64_t max_tokens, std::uint64_t max_resident, bool resident);

/// The commands kv_cache_read, fa2 and fa2_combine of `shape` will emit, estimated from the same
/// split and tiles without building the plan (which for a huge workload would itself be huge):
/// row blocks x KV chunks x 8 (six or seven tensor commands and a load per chunk) plus a few per
/// item (x 10 when `staged`: a DDR -> L2 read and a fence more per chunk, at most). `resident`:
/// the plan holds the history in local memory. Returns 0 when no tiles fit: the plan then reports
/// what does not fit.
double estimate_attention_commands(const AttentionShape& shape, const hw::Chip& chip, bool resident, bool staged,
                                   AttentionSplit split, bool tile_rows = false);

/// The first-pass chunks of `blocks`, in order, cut into rounds of at most `round_tokens` tokens
/// (a chunk never straddles two rounds).
std::vector<std::vector<RoundPiece>> cut_rounds(const std::vector<AttentionBlock>& blocks, std::uint64_t round_tokens);

/// `resident`: the core's history share is read into LMEM before fa2 uses it (the SDMA route),
/// whole or in rounds. Throws hw::ConfigError when nothing fits, saying which choice to change.
/// Loop replay (ops/loop_replay.hpp): a run of alike chunk iterations of one row block, cut
/// short on every core that has blocks. Iteration i of a block computes chunk i (chunk_rows(i)
/// rows, chunk_tokens[i] keys) and queues the load of chunk i + buffers (or none): iterations
/// with the same three are alike, and a run is a stretch of them that is alike on every core at
/// once (the cores' rows and chunks may differ; where their runs change must not). Of a run
/// longer than `kept`, the first ones stay and a multiple of `multiple` of them just before the
/// run's end is left out (the kept ones then repeat with any period that divides it): iterations
/// [first, first + kept) stay, [first + kept, first + kept + dropped) go, numbered in the block.
struct CutLoop {
  std::size_t block = 0;
  std::uint64_t first = 0, kept = 0, dropped = 0;
  bool operator==(const CutLoop&) const = default;
};
/// The cuts, by block and iteration. Empty when the cores' blocks differ in count or chunks, no
/// run is long enough, or the plan is resident (its reads are rounds, not chunk loads).
std::vector<CutLoop> droppable_iterations(const AttentionPlan& plan, std::uint64_t kept, std::uint64_t multiple = 1);
/// The plan with each cut's left-out iterations removed from its block on every core.
AttentionPlan with_iterations_dropped(const AttentionPlan& plan, const std::vector<CutLoop>& cuts);

/// `partials_may_use_l2`: as for decode_split_parts; the plan's partials_in_l2 says where they go.
/// `tile_rows`: decode by history cuts a sequence's rows into row tiles over cores when they take
/// more than one row block (the rule above; the stream route).
AttentionPlan plan_attention(const AttentionShape& shape, const hw::Chip& chip, bool resident, bool partials_may_use_l2,
                             AttentionSplit split = AttentionSplit::seq, bool tile_rows = false);

}  // namespace ops
