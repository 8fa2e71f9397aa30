#pragma once
// The op graph of one MLA attention block in absorb mode (DeepSeek-V2/V3), for one step.
//
// Notation: B batch, q = q_len, T = B*q tokens, H hidden_size, n heads, d_c kv_lora_rank,
// d_r qk_rope_head_dim, d_n qk_nope_head_dim, d_v v_head_dim, r_q q_lora_rank, e KV bytes.
//
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
//
// Decode (q < kv_len) is the only case with kv_cache_read; its first DMA on each core waits on
// the absorption's last TIU command there (order edge), and it feeds fa2 on the same core. The
// absorption itself follows the cache write (a barrier), so the rows written this step, which
// the read includes, are in the cache before it starts. FLOPs of matrices are 2 per multiply-add; attention FLOPs are the full einsum count
// (a causal mask is not exploited). Weights and activations are bf16.

#include "models/model_spec.hpp"
#include "models/workload.hpp"
#include "ops/op_graph.hpp"

namespace models {

ops::OpGraph build_mla_attention_block(const ModelSpec& model, const Workload& workload);

/// Bytes the decode history read moves: B * kv_len * (d_c + d_r) * e.
std::uint64_t latent_kv_read_bytes(const ModelSpec& model, const Workload& workload);

}  // namespace models
