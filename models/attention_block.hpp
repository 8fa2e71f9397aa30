#pragma once
// The attention block of one decoder layer, for one step.
//
// The step's sequences come in groups (models/workload.hpp), each on the decode or the prefill
// path; the projections run once over all T = sum(count x q_len) new tokens, the attention once
// per path (decode first), and o_proj over all T again. Per layer, with h_s the history of
// sequence s and L the cache bytes per token (models/kv_cache.hpp):
//   kv_cache_read   bytes = sum over sequences of h_s x L (the spec's B x s_ctx x (d_c + d_r) x e
//                   for a uniform decode batch; nothing when no sequence has history)
//   decode path     queries attend their history (which holds this step's tokens, written
//                   first): pairs q_s h_s, as below
//   prefill path    each query t of a chunk attends the h_s cached keys and chunk tokens 0..t:
//                   pairs q_s h_s + q_s (q_s + 1) / 2 (causal; q_s (h_s + q_s) with
//                   PrefillAttention::full), as two attentions merged: a decode-shaped one over
//                   the history (its kv_cache_read, split over the cores by history tokens, its
//                   fa2_combine the merge) and the chunk over itself (fresh K/V).
// The uniform shapes below are one group (B sequences alike).
//
// MLA (DeepSeek-V2/V3), absorb mode. Notation: B batch, q = q_len, T = B*q tokens, H hidden_size,
// n heads, d_c kv_lora_rank, d_r qk_rope_head_dim, d_n qk_nope_head_dim, d_v v_head_dim,
// r_q q_lora_rank, e KV bytes.
//   attn_norm       RMSNorm [T, H]
//   q_a_proj        [T, H] x [H, r_q]                  (absent when q_lora_rank is null)
//   q_a_norm        RMSNorm [T, r_q]                   (absent when q_lora_rank is null)
//   q_b_proj        [T, r_q] x [r_q, n (d_n + d_r)]    (q_proj [T, H] x [H, ...] without q LoRA)
//   kv_a_proj       [T, H] x [H, d_c + d_r]
//   kv_a_norm       RMSNorm [T, d_c]
//   rope            on q_pe [T n, d_r] and k_pe [T, d_r]
//   kv_cache_write  the T new rows of (d_c + d_r) elements into the cache, in the KV dtype
//   q_absorb        n x ([T, d_n] x [d_n, d_c])        W_UK folded into the query
//   kv_cache_read   decode only: B * kv_len * (d_c + d_r) * e bytes, independent of n and d_n
//   fa2             MQA over the latent: scores on d_c + d_r, values on d_c;
//                   FLOPs 2 B q n kv_len (d_c + d_r + d_c); KV bytes = the latent bytes above
//   fa2_combine     decode only: merges per-core partial outputs
//   v_up            n x ([T, d_c] x [d_c, d_v])        W_UV
//   o_proj          [T, n d_v] x [n d_v, H]
// Decode (q < kv_len) is the only case with kv_cache_read; its first DMA on each core waits on the
// absorption's last TIU command there (order edge), and it feeds fa2 on the same core. The
// absorption follows the cache write (a barrier), so the rows written this step, which the read
// includes, are in the cache before it starts.
//
// Sliding window (a sliding_attention layer, window W): a decode query sees the last W keys, so a
// decode group reads min(h_s, W + q_s - 1) history tokens and attends them; a prompt attends a
// causal band (query t sees min(W, t + 1 + history) keys, each row block streaming only its band),
// and a chunk's queries t < W - 1 see the last W - 1 tokens of its history. Attention sinks
// (gpt-oss) add an exp and an add to each query row's softmax. Qwen3-Next's output gate doubles
// the q part of qkv_proj and multiplies the attention output by the gate's sigmoid
// (attn_output_gate) before o_proj. A linear_attention layer is a Gated DeltaNet instead
// (models/linear_attention_block.hpp).
//
// GQA / MHA (Llama style), n query heads sharing g = num_key_value_heads K/V heads of d_h:
//   attn_norm, qkv_proj [T, H] x [H, (n + 2g) d_h], rope on [T (n + g), d_h], kv_cache_write of
//   2 g d_h elements per token, kv_cache_read (decode) of B * kv_len * 2 g d_h * e bytes (after
//   the write), fa2 (FLOPs 2 B q n kv_len 2 d_h), fa2_combine (decode), o_proj [T, n d_h] x [n d_h, H].
//
// With tp > 1 every per-head matrix and the attention use n / tp heads (GQA: g / tp KV heads),
// and an all_reduce of the [T, H] output follows o_proj.
//
// FLOPs of matrices are 2 per multiply-add; attention FLOPs count the query-key pairs attended
// (causal in prefill by default). Activations are bf16; weights in the workload's weight format
// (models/weight_format.hpp).

#include <optional>

#include "models/model_spec.hpp"
#include "models/workload.hpp"
#include "ops/op_graph.hpp"

namespace models {

/// Adds one layer's attention block to `graph`, for one chip of `tp` sharing the heads; its
/// first op depends on `input` when given. Returns the block's last op (o_proj, or the TP
/// all-reduce after it).
ops::OpId add_attention_block(ops::OpGraph& graph, const ModelSpec& model, const Workload& workload, int layer,
                              std::optional<ops::OpId> input, std::uint64_t tp = 1);

/// A graph holding one attention block alone (layer 0).
ops::OpGraph build_attention_block(const ModelSpec& model, const Workload& workload, std::uint64_t tp = 1);

/// KV cache bytes a step reads for layer `layer` on one chip: the history of every sequence times
/// the bytes per token (models/kv_cache.hpp); B * kv_len * bytes per token for a uniform decode. A
/// sliding_attention layer reads min(history, window + q_len - 1) tokens of a decode and the last
/// window - 1 history tokens of a prompt chunk; a linear_attention layer none (its state is
/// delta_rule's, models/linear_attention_block.hpp).
std::uint64_t kv_read_bytes(const ModelSpec& model, const Workload& workload, std::uint64_t tp = 1,
                            std::uint64_t layer = 0);

}  // namespace models
