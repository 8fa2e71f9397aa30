#include "models/attention_block.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"
#include "models/graph_helpers.hpp"
#include "models/kv_cache.hpp"
#include "models/linear_attention_block.hpp"

namespace models {
namespace {

using hw::DType;
using ops::EdgeKind;
using ops::OpId;
using ops::OpKind;
using ops::OpNode;
using namespace detail;

OpNode cache_write_op(std::uint64_t tokens, const KvCacheLayout& cache, KvFormat format) {
  const std::uint64_t width = cache.streams * cache.elements;
  OpNode n = vector_op("kv_cache_write", OpKind::kv_cache_write, tokens, width, kCacheWriteOpsPerElement, DType::bf16,
                       DType::bf16);
  n.vec().store_row_bytes = cache.bytes_per_token();
  n.shape = fmt::format("[{}, {}] {}", tokens, width, name_of(format));
  return n;
}

// A static graph's torch.cat(past, new) (KvAppend::concat): every cached row of the history is
// read from the cache and written into a fresh tensor, which the attention then reads. A copy
// through local memory at the cache's own bytes per token (load_width: its 16-bit halves).
OpNode cache_concat_op(std::uint64_t tokens, const KvCacheLayout& cache) {
  const std::uint64_t width = cache.streams * cache.elements;
  OpNode n =
      vector_op("kv_concat", OpKind::kv_cache_write, tokens, width, kCacheWriteOpsPerElement, DType::bf16, DType::bf16);
  n.vec().load_width = (cache.bytes_per_token() + 1) / 2;
  n.vec().store_row_bytes = cache.bytes_per_token();
  n.shape = fmt::format("[{}, {}] copy", tokens, width);
  return n;
}

// The history as the attention streams it from the cache.
void set_history(ops::AttentionShape& attn, const KvCacheLayout& cache) {
  attn.kv_heads = cache.streams;
  attn.kv_elements = cache.elements;
  attn.kv_token_bytes = cache.bytes_per_stream;
  attn.kv_dequant = cache.dequantize;
}

OpNode cache_read_op(const ops::AttentionShape& attn, std::uint64_t bytes) {
  OpNode r;
  r.name = "kv_cache_read";
  r.kind = OpKind::kv_cache_read;
  r.shape = attn.groups.size() == 1
                ? fmt::format("[{}, {}, {}] x {} B", attn.groups[0].count, attn.groups[0].kv_len, attn.kv_heads,
                              attn.kv_token_bytes)
                : fmt::format("[{}, {}] x {} B", attn.batch_text(), attn.kv_heads, attn.kv_token_bytes);
  r.payload = attn;
  r.kv_bytes = bytes;
  return r;
}

// The sequences of a one-path workload as the attention sees them: each group's queries over
// its kv_len() keys (decode: the history, which holds this step's tokens; prefill: history + chunk).
std::vector<ops::QueryGroup> attended_groups(const Workload& w) {
  std::vector<ops::QueryGroup> out;
  for (const SequenceGroup& g : w.groups) out.push_back({g.count, g.q_len, g.kv_len()});
  return out;
}

// A prefill part's chunks over their cached history: the groups with one, every query seeing all
// of it (the history precedes the chunk).
std::vector<ops::QueryGroup> history_groups(const Workload& w) {
  std::vector<ops::QueryGroup> out;
  for (const SequenceGroup& g : w.groups) {
    if (g.history > 0) out.push_back({g.count, g.q_len, g.history});
  }
  return out;
}

// A prefill part's chunks over themselves: q_len queries over their q_len fresh keys (`attended`:
// the part's groups as attended, whose kv_len a DSA selection may have cut below the prompt).
std::vector<ops::QueryGroup> self_groups(const Workload& w, const std::vector<ops::QueryGroup>& attended) {
  std::vector<ops::QueryGroup> out;
  for (std::size_t i = 0; i < w.groups.size(); ++i) {
    out.push_back({w.groups[i].count, w.groups[i].q_len, attended[i].kv_len - w.groups[i].history});
  }
  return out;
}

// Bytes of `tokens` cached rows of one layer, in the workload's cache.
std::uint64_t cache_bytes(const ModelSpec& m, const Workload& w, std::uint64_t tp, std::uint64_t tokens) {
  return hw::checked("the KV bytes per layer",
                     [&] { return (hw::Count(tokens) * kv_bytes_per_token_per_layer(m, w, tp)).value(); });
}

// fa2 (+ the history read and the combine in decode); returns the op whose output feeds the
// output projection. `read_after` orders the history read: absorption (order) or cache write.
OpId add_attention_core(LayerGraph& lg, const ops::AttentionShape& attn, std::uint64_t kv_bytes, OpId read_after,
                        EdgeKind read_edge, std::initializer_list<OpId> fa2_inputs) {
  // fa2 attends the history that the read brings (decode) or this step's K/V (prefill).
  std::optional<OpId> read;
  if (attn.decode) {
    read = lg.add(cache_read_op(attn, kv_bytes));
    lg.depend(read_after, *read, read_edge);
  }
  const OpId fa2 = lg.add(fa2_op(attn, kv_bytes));
  for (OpId in : fa2_inputs) lg.depend(in, fa2);
  if (!read) return fa2;
  lg.depend(*read, fa2, EdgeKind::same_core);
  const OpId combine = lg.add(combine_op(attn));
  lg.depend(fa2, combine);
  return combine;
}

// A prefill part with cached history: the chunks' causal attention over themselves
// (`self_attention`) and their attention over their history, as a decode over it
// (`history_attention`: split over the cores by history tokens, every chunk query seeing all of
// it), merged by the history attention's combine, as vLLM merges a chunk's attention over its
// context with the log-sum-exp of each part. Returns the merged output (the combine), or the
// self attention alone when no chunk has history.
OpId merge_chunk_attention(LayerGraph& lg, std::optional<OpId> history_attention, OpId self_attention) {
  if (!history_attention) return self_attention;
  lg.depend(self_attention, *history_attention);
  return *history_attention;
}

// DeepSeek-V3.2's lightning indexer (DSA), in decode and in prefill. It scores the history with
// its own small key cache and keeps the top index_topk rows per query token:
//   indexer_q_proj      [T, r_q] x [r_q, h_i d_i]           (h_i index heads of d_i)
//   indexer_k_proj      [T, H] x [H, d_i + h_i]             (the new keys and the head weights)
//   indexer_cache_write T rows of d_i fp8 + one fp32 scale
//   indexer_cache_read  decode only: B kv_len (d_i + 4) bytes, the whole history of index keys,
//                       streamed as the B operand of indexer_score (in prefill the keys are this
//                       step's, read back from the write)
//   indexer_score       B x ([q h_i, d_i] x [d_i, kv_len]) in fp8; the epilogue sums the heads
//                       (ReLU, weights), so [q, kv_len] scores are stored per sequence (prefill:
//                       the whole causal square is counted, an upper bound)
//   indexer_topk        weighs and selects min(kv_len, topk) rows per query token.
// DSA runs on one group per path (a uniform decode or prompt batch). Returns indexer_topk.
OpId add_indexer(LayerGraph& lg, const ModelSpec& m, const Workload& w, OpId q_latent, OpId attn_norm) {
  const DsaSpec& dsa = *m.dsa;
  const SequenceGroup& g = w.groups.front();
  const std::uint64_t T = w.tokens(), H = m.hidden_size, kv_len = g.kv_len();
  const std::uint64_t hi = dsa.index_n_heads, di = dsa.index_head_dim;
  const std::uint64_t key_bytes = di + 4;  // fp8 key and its fp32 scale
  const std::uint64_t q_width = m.q_lora_rank ? *m.q_lora_rank : H;
  const OpId idx_q = lg.add(matmul_op("indexer_q_proj", 1, T, q_width, hi * di));
  const OpId idx_k = lg.add(matmul_op("indexer_k_proj", 1, T, H, di + hi));
  lg.depend(q_latent, idx_q);
  lg.depend(attn_norm, idx_k);
  OpNode write = vector_op("indexer_cache_write", OpKind::kv_cache_write, T, di, kCacheWriteOpsPerElement, DType::bf16,
                           DType::fp8);
  write.vec().store_row_bytes = key_bytes;
  const OpId idx_write = lg.add(write);
  lg.depend(idx_k, idx_write);

  OpNode score = matmul_op("indexer_score", g.count, g.q_len * hi, di, kv_len);
  score.dtype = DType::fp8;
  score.mm().b_col_bytes = key_bytes;
  score.mm().out_reduce = hi;
  const OpId idx_score = lg.add(score);
  lg.depend(idx_q, idx_score);
  if (w.decode()) {
    OpNode read;
    read.name = "indexer_cache_read";
    read.kind = OpKind::indexer_cache_read;
    read.shape = fmt::format("[{}, {}] x {} B", g.count, kv_len, key_bytes);
    read.kv_bytes = g.count * kv_len * key_bytes;
    const OpId idx_read = lg.add(read);
    lg.depend(idx_write, idx_read);
    lg.depend(idx_read, idx_score, EdgeKind::same_core);
  } else {
    lg.depend(idx_write, idx_score);  // this step's keys, as written
  }

  const std::uint64_t selected = std::min(kv_len, dsa.index_topk);
  std::uint64_t passes = 0;
  while ((std::uint64_t{1} << passes) < selected) ++passes;
  OpNode topk = vector_op("indexer_topk", OpKind::indexer_topk, T, kv_len, passes + 1);
  topk.vec().store_row_bytes = selected * 4;  // int32 row indices
  topk.vec().topk = selected;
  const OpId idx_topk = lg.add(topk);
  lg.depend(idx_score, idx_topk);
  return idx_topk;
}

// DSA in decode: after the indexer, attention reads only the selected rows:
//   kv_cache_read       gathers them: B min(kv_len, topk) x the latent bytes, on SDMA into a
//                       contiguous buffer; fa2 streams it and its first TIU command waits on the
//                       gather's last SDMA id (initial_sdma_dep)
//   fa2                 attends min(kv_len, topk) rows.
OpId add_sparse_attention(LayerGraph& lg, const ModelSpec& m, const Workload& w, ops::AttentionShape attn,
                          const KvCacheLayout& cache, OpId q_latent, OpId attn_norm,
                          std::initializer_list<OpId> fa2_inputs) {
  const OpId idx_topk = add_indexer(lg, m, w, q_latent, attn_norm);
  for (ops::QueryGroup& g : attn.groups) g.kv_len = std::min(g.kv_len, m.dsa->index_topk);
  attn.gather = true;
  const std::uint64_t gathered = attn.keys() * cache.bytes_per_token();
  OpNode gather = cache_read_op(attn, gathered);
  const OpId gather_op = lg.add(gather);
  lg.depend(idx_topk, gather_op);
  for (OpId in : fa2_inputs) lg.depend(in, gather_op);  // the new rows are in the cache
  const OpId fa2 = lg.add(fa2_op(attn, gathered));
  for (OpId in : fa2_inputs) lg.depend(in, fa2);
  lg.depend(gather_op, fa2, EdgeKind::same_core);
  const OpId combine = lg.add(combine_op(attn));
  lg.depend(fa2, combine);
  return combine;
}

// MLA's projections up to the cache write, shared by every mode and both paths.
struct MlaProjections {
  OpId attn_norm, q_b, q_latent, rope, cache_write;
  std::optional<OpId> kv_b;  ///< the new tokens' per-head K_nope and V, when a mode needs them
};

MlaProjections add_mla_projections(LayerGraph& lg, const ModelSpec& m, const Workload& w, std::optional<OpId> input,
                                   std::uint64_t tp, const KvCacheLayout& cache) {
  const std::uint64_t T = w.tokens();
  const std::uint64_t H = m.hidden_size, n = m.num_attention_heads / tp;
  const std::uint64_t dc = m.kv_lora_rank, dr = m.qk_rope_head_dim, dn = m.qk_nope_head_dim, dv = m.v_head_dim;
  MlaProjections p;
  p.attn_norm = lg.add(rmsnorm_op("attn_norm", T, H));
  if (input) lg.depend(*input, p.attn_norm);
  p.q_latent = p.attn_norm;  // what the query projections read: q_a_norm, or the hidden state
  if (m.q_lora_rank) {
    const std::uint64_t rq = *m.q_lora_rank;
    const OpId q_a = lg.add(projection(matmul_op("q_a_proj", 1, T, H, rq), dense_weights(m, w)));
    const OpId q_a_norm = lg.add(rmsnorm_op("q_a_norm", T, rq));
    p.q_b = lg.add(projection(matmul_op("q_b_proj", 1, T, rq, n * (dn + dr)), dense_weights(m, w)));
    lg.depend(p.attn_norm, q_a);
    lg.depend(q_a, q_a_norm);
    lg.depend(q_a_norm, p.q_b);
    p.q_latent = q_a_norm;
  } else {
    p.q_b = lg.add(projection(matmul_op("q_proj", 1, T, H, n * (dn + dr)), dense_weights(m, w)));
    lg.depend(p.attn_norm, p.q_b);
  }
  const OpId kv_a = lg.add(projection(matmul_op("kv_a_proj", 1, T, H, dc + dr), dense_weights(m, w)));
  const OpId kv_a_norm = lg.add(rmsnorm_op("kv_a_norm", T, dc));
  p.rope = lg.add(vector_op("rope", OpKind::rope, T * (n + 1), dr, kRopeOpsPerElement));
  lg.depend(p.attn_norm, kv_a);
  lg.depend(kv_a, kv_a_norm);
  lg.depend(p.q_b, p.rope);
  lg.depend(kv_a, p.rope);
  // The new tokens' per-head K_nope and V (W_UK, W_UV applied): needed by an expanded cache (all
  // of them) and by a prefill that runs MHA (its own).
  const Workload prefill = w.part(false);
  const bool mha_prefill = !prefill.groups.empty() && prefill.compute_mode() != MlaMode::absorb;
  if (w.mla_mode == MlaMode::expanded || mha_prefill) {
    const std::uint64_t rows = w.mla_mode == MlaMode::expanded ? T : prefill.tokens();
    p.kv_b = lg.add(projection(matmul_op("kv_b_proj", 1, rows, dc, n * (dn + dv)), dense_weights(m, w)));
    lg.depend(kv_a_norm, *p.kv_b);
  }
  p.cache_write = lg.add(cache_write_op(T, cache, w.kv_format));
  lg.depend(kv_a_norm, p.cache_write);
  lg.depend(p.rope, p.cache_write);
  if (w.mla_mode == MlaMode::expanded) lg.depend(*p.kv_b, p.cache_write);
  return p;
}

// The shape every MLA attention of a part starts from.
ops::AttentionShape mla_attention(const ModelSpec& m, const Workload& part, std::uint64_t tp) {
  ops::AttentionShape attn;
  attn.groups = attended_groups(part);
  attn.heads = m.num_attention_heads / tp;
  attn.decode = part.decode();
  attn.causal = !part.decode() && part.prefill_attention == PrefillAttention::causal;
  return attn;
}

// Absorb: MQA over the latent, scores on d_c + d_r, values on d_c; v_up after it. Returns v_up.
OpId add_mla_absorb(LayerGraph& lg, const ModelSpec& m, const Workload& w, std::uint64_t tp, const MlaProjections& p,
                    ops::AttentionShape attn, const KvCacheLayout& cache, std::optional<OpId> prefill_selection) {
  const std::uint64_t T = w.tokens();
  const std::uint64_t n = m.num_attention_heads / tp, dc = m.kv_lora_rank, dn = m.qk_nope_head_dim, dv = m.v_head_dim;
  attn.qk_dim = dc + m.qk_rope_head_dim;
  attn.v_dim = dc;
  set_history(attn, cache);
  const OpId q_absorb = lg.add(projection(matmul_op("q_absorb", n, T, dn, dc), dense_weights(m, w)));
  lg.depend(p.q_b, q_absorb);
  // The absorption runs once this step's latent rows are in the cache. The history read is tied
  // to the absorption's TIU command (seed 003, appendix B), so through this edge it also finds
  // the new rows written before it starts.
  lg.depend(p.cache_write, q_absorb);
  OpId out;
  if (m.dsa && w.decode()) {
    out = add_sparse_attention(lg, m, w, attn, cache, p.q_latent, p.attn_norm, {q_absorb, p.rope, p.cache_write});
  } else if (w.decode()) {
    out = add_attention_core(lg, attn, cache_bytes(m, w, tp, w.history_tokens()), q_absorb, EdgeKind::order,
                             {q_absorb, p.rope, p.cache_write});
  } else {
    // Prefill: the fresh latents, bf16 as written, causally; then the chunks' history latents
    // from the cache (a decode over them), merged.
    ops::AttentionShape self = attn;
    self.groups = self_groups(w, attn.groups);
    set_history(self, kv_cache_layout(m, MlaMode::absorb, KvFormat::bf16, tp));  // fresh latents
    const OpId fa2 = add_attention_core(lg, self, cache_bytes(m, w, tp, w.tokens()), q_absorb, EdgeKind::order,
                                        {q_absorb, p.rope, p.cache_write});
    if (prefill_selection) lg.depend(*prefill_selection, fa2);
    std::optional<OpId> over_history;
    if (w.history_tokens() > 0) {
      ops::AttentionShape history = attn;
      history.groups = history_groups(w);
      history.decode = true, history.causal = false, history.over_chunks = true;
      over_history = add_attention_core(lg, history, cache_bytes(m, w, tp, w.history_tokens()), q_absorb,
                                        EdgeKind::order, {q_absorb, p.rope, p.cache_write});
    }
    out = merge_chunk_attention(lg, over_history, fa2);
  }
  const OpId v_up = lg.add(projection(matmul_op("v_up", n, T, dc, dv), dense_weights(m, w)));
  lg.depend(out, v_up);
  return v_up;
}

// Standard decode: the cached latent rows (d_c + d_r each, in the cache format) read as the A
// operand of [B kv_len, d_c + d_r] x [., n (d_n + d_v)], streamed beside the up-projection. The
// RoPE columns ride through the cube; the FLOPs count the d_c part, which is what it computes.
// `attn` holds the sequences whose history is up-projected (their kv_len: the history).
OpId add_kv_up_projection(LayerGraph& lg, const ModelSpec& m, const Workload& w, std::uint64_t tp,
                          const ops::AttentionShape& attn, const KvCacheLayout& cache, OpId cache_write) {
  const std::uint64_t n = m.num_attention_heads / tp, dc = m.kv_lora_rank, dr = m.qk_rope_head_dim;
  const std::uint64_t dn = m.qk_nope_head_dim, dv = m.v_head_dim;
  const std::uint64_t rows = w.history_tokens();
  ops::AttentionShape latent = attn;
  set_history(latent, cache);
  const OpId read_op = lg.add(cache_read_op(latent, cache_bytes(m, w, tp, rows)));
  lg.depend(cache_write, read_op);
  OpNode up = projection(matmul_op("kv_up_proj", 1, rows, dc + dr, n * (dn + dv)), dense_weights(m, w));
  up.flops = hw::checked("the FLOPs of kv_up_proj", [&] { return (hw::Count(2) * rows * dc * n * (dn + dv)).value(); });
  up.mm().a_row_bytes = cache.bytes_per_token();
  const OpId up_op = lg.add(up);
  lg.depend(read_op, up_op, EdgeKind::same_core);
  return up_op;
}

// MHA per head (standard, expanded; prefill's default): scores on d_n + d_r, values on d_v.
// Returns the attention's output (fa2, or the combine).
OpId add_mla_mha(LayerGraph& lg, const ModelSpec& m, const Workload& w, std::uint64_t tp, const MlaProjections& p,
                 ops::AttentionShape attn, const KvCacheLayout& cache, std::optional<OpId> prefill_selection) {
  const std::uint64_t n = m.num_attention_heads / tp, dn = m.qk_nope_head_dim, dv = m.v_head_dim;
  attn.qk_dim = dn + m.qk_rope_head_dim;
  attn.v_dim = dv;
  // K_nope and V held as bf16 activations after an up-projection.
  auto as_activations = [&](ops::AttentionShape& a) {
    a.kv_heads = n;
    a.kv_elements = dn + dv;
    a.kv_token_bytes = 2 * (dn + dv);
    a.kv_dequant = false;
  };
  // Attention over cached history, as a decode: per-head K (with its RoPE part) and V read from
  // an expanded cache, or the latent history read and up-projected (standard).
  auto over_history = [&](ops::AttentionShape a) {
    const std::uint64_t history_bytes = cache_bytes(m, w, tp, w.history_tokens());
    if (w.mla_mode == MlaMode::expanded) {
      set_history(a, cache);
      return add_attention_core(lg, a, history_bytes, p.cache_write, EdgeKind::data, {p.q_b, p.rope, p.cache_write});
    }
    as_activations(a);
    std::vector<OpId> inputs{p.q_b, p.rope, p.cache_write};
    inputs.push_back(add_kv_up_projection(lg, m, w, tp, a, cache, p.cache_write));
    const OpId fa2 = lg.add(fa2_op(a, history_bytes));
    for (OpId in : inputs) lg.depend(in, fa2);
    const OpId combine = lg.add(combine_op(a));
    lg.depend(fa2, combine);
    return combine;
  };
  if (w.decode()) {
    if (w.compute_mode() == MlaMode::expanded) {
      set_history(attn, cache);
      return add_attention_core(lg, attn, cache_bytes(m, w, tp, w.history_tokens()), p.cache_write, EdgeKind::data,
                                {p.q_b, p.rope, p.cache_write});
    }
    return over_history(attn);
  }
  // Prefill: every sequence over its own tokens (K_nope and V from kv_b_proj), then the chunks
  // over their history, merged.
  ops::AttentionShape self = attn;
  self.groups = self_groups(w, attn.groups);
  as_activations(self);
  std::vector<OpId> inputs{p.q_b, p.rope, p.cache_write, *p.kv_b};
  if (prefill_selection) inputs.push_back(*prefill_selection);
  const OpId fa2 = lg.add(fa2_op(self, cache_bytes(m, w, tp, w.tokens())));
  for (OpId in : inputs) lg.depend(in, fa2);
  std::optional<OpId> history;
  if (w.history_tokens() > 0) {
    ops::AttentionShape h = attn;
    h.groups = history_groups(w);
    h.decode = true, h.causal = false, h.over_chunks = true;
    history = over_history(h);
  }
  return merge_chunk_attention(lg, history, fa2);
}

OpId add_mla(LayerGraph& lg, const ModelSpec& m, const Workload& w, std::optional<OpId> input, std::uint64_t tp) {
  const KvCacheLayout cache = kv_cache_layout(m, w.mla_mode, w.kv_format, tp);
  const MlaProjections p = add_mla_projections(lg, m, w, input, tp, cache);
  const std::uint64_t n = m.num_attention_heads / tp;
  std::vector<OpId> outputs;
  for (const bool decode_path : {true, false}) {
    const Workload part = w.part(decode_path);
    if (part.groups.empty()) continue;
    ops::AttentionShape attn = mla_attention(m, part, tp);
    if (m.dsa && part.decode() && part.compute_mode() != MlaMode::absorb) {
      throw hw::InputError("mla_mode", fmt::format("{}'s sparse attention (DSA) runs in absorb mode", m.name));
    }
    if (m.dsa && (part.groups.size() > 1 || (!part.decode() && part.history_tokens() > 0))) {
      throw hw::InputError("mix", fmt::format("{}'s sparse attention (DSA) is modelled for one group of decodes and "
                                              "one of prompts per step, without prefill chunks",
                                              m.name));
    }
    // DSA in prefill: the indexer runs over the prompt and each query token attends its top
    // min(kv_len, topk) rows (fa2 counts them as its kv_len; the prompt's K/V stay its bytes).
    // Up to topk the selection keeps the causal prefix; beyond it every query is counted with
    // topk rows (the first topk queries have fewer: an upper bound).
    std::optional<OpId> prefill_selection;
    if (m.dsa && !part.decode()) {
      prefill_selection = add_indexer(lg, m, part, p.q_latent, p.attn_norm);
      for (ops::QueryGroup& g : attn.groups) {
        if (g.kv_len > m.dsa->index_topk) g.kv_len = m.dsa->index_topk, attn.causal = false;
      }
    }
    outputs.push_back(part.compute_mode() == MlaMode::absorb
                          ? add_mla_absorb(lg, m, part, tp, p, attn, cache, prefill_selection)
                          : add_mla_mha(lg, m, part, tp, p, attn, cache, prefill_selection));
  }
  const std::uint64_t dv = m.v_head_dim;
  const OpId o_proj =
      lg.add(projection(matmul_op("o_proj", 1, w.tokens(), n * dv, m.hidden_size), dense_weights(m, w)));
  for (OpId out : outputs) lg.depend(out, o_proj);
  return o_proj;
}

// A sliding window's decodes: each group's history cut to the window + q_len - 1 tokens its
// queries see (the cache keeps the rest for no one; the read skips it).
Workload windowed_decodes(Workload part, std::uint64_t window) {
  for (SequenceGroup& g : part.groups) g.history = std::min(g.history, window + g.q_len - 1);
  return part;
}

// A sliding window's prompt chunks over their history: only queries t < window - 1 see any of
// it, the last window - 1 tokens (AttentionShape::window states the pairs).
std::vector<ops::QueryGroup> windowed_history_groups(const Workload& w, std::uint64_t window) {
  std::vector<ops::QueryGroup> out;
  for (const SequenceGroup& g : w.groups) {
    if (g.history > 0 && window > 1)
      out.push_back({g.count, std::min(g.q_len, window - 1), std::min(g.history, window - 1)});
  }
  return out;
}

std::uint64_t group_tokens(const std::vector<ops::QueryGroup>& groups) {
  hw::Count n(0);
  for (const ops::QueryGroup& g : groups) n += hw::Count(g.count) * g.kv_len;
  return n.value();
}

// Qwen3-Next's output gate: attention output x sigmoid(gate), the gate being q_proj's second half.
OpId add_output_gate(LayerGraph& lg, std::uint64_t T, std::uint64_t width, const std::vector<OpId>& outputs) {
  OpNode gate = vector_op("attn_output_gate", OpKind::swiglu, T, width, kSwigluOpsPerElement);
  add_sfu(gate, kSwigluSfuPerElement, 0);
  gate.vec().load_width = 2 * width;  // the output and its gate
  const OpId id = lg.add(gate);
  for (OpId out : outputs) lg.depend(out, id);
  return id;
}

OpId add_gqa(LayerGraph& lg, const ModelSpec& m, const Workload& w, std::optional<OpId> input, std::uint64_t tp,
             std::uint64_t window) {
  const std::uint64_t T = w.tokens();
  const std::uint64_t H = m.hidden_size, n = m.num_attention_heads / tp, g = m.kv_heads_on_chip(tp), d = m.head_dim;
  const KvCacheLayout cache = kv_cache_layout(m, w.mla_mode, w.kv_format, tp);

  const OpId attn_norm = lg.add(rmsnorm_op("attn_norm", T, H));
  if (input) lg.depend(*input, attn_norm);
  // With an output gate, q_proj also yields a gate per query element.
  const std::uint64_t q_width = (m.attention_output_gate ? 2 : 1) * n * d;
  OpNode qkv_node = projection(matmul_op("qkv_proj", 1, T, H, q_width + 2 * g * d), dense_weights(m, w));
  qkv_node.mm().bias = m.qkv_bias;
  const OpId qkv = lg.add(qkv_node);
  // RoPE on the rotary part of each q and k head (all of it unless partial_rotary_factor says less).
  const OpId rope = lg.add(vector_op("rope", OpKind::rope, T * (n + g), m.rope_dim, kRopeOpsPerElement));
  const OpId cache_write = lg.add(cache_write_op(T, cache, w.kv_format));
  lg.depend(attn_norm, qkv);
  if (m.qk_norm) {
    // Qwen3 / GLM-4.5: an RMSNorm over each q and k head before RoPE.
    const OpId qk_norm = lg.add(rmsnorm_op("qk_norm", T * (n + g), d));
    lg.depend(qkv, qk_norm);
    lg.depend(qk_norm, rope);
  }
  lg.depend(qkv, rope);
  lg.depend(qkv, cache_write);
  lg.depend(rope, cache_write);
  std::vector<OpId> outputs;
  for (const bool decode_path : {true, false}) {
    Workload part = w.part(decode_path);
    if (part.groups.empty()) continue;
    if (window > 0 && part.decode()) part = windowed_decodes(std::move(part), window);
    ops::AttentionShape attn;
    attn.groups = attended_groups(part);
    attn.heads = n;
    attn.qk_dim = d;
    attn.v_dim = d;
    attn.sinks = m.attention_sinks;
    set_history(attn, cache);
    attn.decode = part.decode();
    // A sliding window is a causal band whatever the prefill mask.
    attn.causal = !part.decode() && (part.prefill_attention == PrefillAttention::causal || window > 0);
    attn.window = window;
    if (part.decode()) {
      // The history read follows the write, or the copy a static graph makes of the cache.
      OpId read_after = cache_write;
      if (part.kv_append == KvAppend::concat) {
        read_after = lg.add(cache_concat_op(part.history_tokens(), cache));
        lg.depend(cache_write, read_after);
      }
      outputs.push_back(add_attention_core(lg, attn, cache_bytes(m, part, tp, part.history_tokens()), read_after,
                                           EdgeKind::data, {rope, cache_write}));
      continue;
    }
    // Prefill: every sequence over its own fresh K/V in bf16, then the chunks over their cached
    // history (a decode over it), merged.
    ops::AttentionShape self = attn;
    self.groups = self_groups(part, attn.groups);
    self.kv_token_bytes = 2 * self.kv_elements, self.kv_dequant = false;  // fresh K/V in bf16
    const OpId fa2 = add_attention_core(lg, self, cache_bytes(m, part, tp, part.tokens()), cache_write, EdgeKind::data,
                                        {rope, cache_write});
    std::optional<OpId> history;
    ops::AttentionShape h = attn;
    h.groups = window > 0 ? windowed_history_groups(part, window) : history_groups(part);
    if (!h.groups.empty()) {
      h.decode = true, h.causal = false, h.over_chunks = true;
      history = add_attention_core(lg, h, cache_bytes(m, part, tp, group_tokens(h.groups)), cache_write, EdgeKind::data,
                                   {rope, cache_write});
    }
    outputs.push_back(merge_chunk_attention(lg, history, fa2));
  }
  if (m.attention_output_gate) outputs = {add_output_gate(lg, T, n * d, outputs)};
  const OpId o_proj = lg.add(projection(matmul_op("o_proj", 1, T, n * d, H), dense_weights(m, w)));
  for (OpId out : outputs) lg.depend(out, o_proj);
  return o_proj;
}

}  // namespace

std::uint64_t kv_read_bytes(const ModelSpec& model, const Workload& w, std::uint64_t tp, std::uint64_t layer) {
  switch (model.mixer(layer)) {
    case LayerMixer::linear_attention: return 0;  // a state, not a history (delta_rule reads it)
    case LayerMixer::sliding_attention: {
      const Workload decodes = windowed_decodes(w.part(true), model.sliding_window);
      return cache_bytes(
          model, w, tp,
          decodes.history_tokens() + group_tokens(windowed_history_groups(w.part(false), model.sliding_window)));
    }
    case LayerMixer::full_attention: break;
  }
  return cache_bytes(model, w, tp, w.history_tokens());
}

OpId add_attention_block(ops::OpGraph& graph, const ModelSpec& model, const Workload& workload, int layer,
                         std::optional<OpId> input, std::uint64_t tp) {
  LayerGraph lg(graph, layer);
  const LayerMixer mixer = model.mixer(static_cast<std::uint64_t>(layer));
  const OpId o_proj =
      mixer == LayerMixer::linear_attention ? add_gated_deltanet(lg, model, workload, input, tp)
      : model.attention == AttentionKind::mla
          ? add_mla(lg, model, workload, input, tp)
          : add_gqa(lg, model, workload, input, tp, mixer == LayerMixer::sliding_attention ? model.sliding_window : 0);
  if (tp == 1) return o_proj;
  // Each chip holds a partial sum of the [T, H] output: all-reduce it over the TP group.
  const OpId reduce =
      lg.add(collective_op("attn_all_reduce", OpKind::all_reduce, workload.tokens() * model.hidden_size * 2, tp));
  lg.depend(o_proj, reduce);
  return reduce;
}

ops::OpGraph build_attention_block(const ModelSpec& model, const Workload& workload, std::uint64_t tp) {
  ops::OpGraph graph;
  add_attention_block(graph, model, workload, 0, std::nullopt, tp);
  return graph;
}

}  // namespace models
