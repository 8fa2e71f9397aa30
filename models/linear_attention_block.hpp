#pragma once
// A Gated DeltaNet layer (Qwen3-Next's linear_attention layers) for one step: what replaces the
// attention block where ModelSpec::mixer says linear_attention.
//
// Notation: T new tokens, H hidden_size, n_k key heads and n_v value heads of d_k and d_v (both
// over tp on one chip), K_d = n_k d_k, V_d = n_v d_v, C = 2 K_d + V_d the convolved channels, w the
// conv kernel, e_s a recurrent-state element's bytes (GatedDeltaNetSpec).
//   attn_norm       RMSNorm [T, H]
//   in_proj_qkvz    [T, H] x [H, 2 K_d + 2 V_d]          q, k, v and the output gate z
//   in_proj_ba      [T, H] x [H, 2 n_v]                  the write rate b and the decay a per value head
//   conv1d          [T, C]: a causal depthwise convolution of w taps and a SiLU (2 w + 3 element
//                   operations and an exp an element)
//   qk_l2norm       q and k normalised per head: [T 2 n_k, d_k]
//   delta_rule      the recurrence (below)
//   gdn_norm        RMSNorm of each value head's output [T n_v, d_v], times SiLU(z)
//                   (gdn_output_gate [T, V_d])
//   out_proj        [T, V_d] x [V_d, H]
//
// The state of one sequence: n_v matrices S of d_k x d_v in e_s bytes, and the convolution's last
// w - 1 inputs, (w - 1) C bf16: Z = n_v d_k d_v e_s + 2 (w - 1) C bytes, whatever its context
// (Qwen3-Next at tp 1, bf16: 32 x 128 x 128 x 2 + 2 x 3 x 8192 = 1,097,728 B a layer).
//
// Decode (the delta rule a token at a time, Yang et al., "Gated Delta Networks", ICLR 2025): per
// token and value head, S <- a S (1 operation an element), S <- S + k (b (v - S^T k))^T (retrieve
// and write: 4), o = S^T q (2): 7 element operations of S a token. delta_rule is a vector op of
// B n_v rows (one value head's state each) of d_k d_v elements; a sequence reads its state Z and
// its tokens' q, k, v, a and b (2 q_s (2 K_d + V_d + 2 n_v) bytes) and writes its state and its
// output (2 q_s V_d): the bytes are exact, independent of the context.
//
// Prefill (the chunked form, 64-token chunks as in flash-linear-attention's chunk_gated_delta_rule):
// a prompt of q_s tokens is ceil(q_s / 64) chunks; per chunk and value head, with c = min(64, the
// longest chunk of the step),
//   gdn_chunk_scores  [c, d_k] x [d_k, 2 c]          K K^T and Q K^T within the chunk
//   gdn_chunk_values  [c, c] x [c, d_k + 2 d_v]      the WY form's w and u, and the masked P v
//   gdn_chunk_state   [c, d_k] x [d_k, 2 d_v]        w S and q S against the state entering it
//   gdn_state_update  [d_k, c] x [c, d_v]            the state leaving it
// matmuls on the cube (FLOPs exact for these shapes); delta_rule then reads the state of each
// chunk with a history (Z bytes; nothing for a fresh prompt) and writes every prompt's final state
// (Z bytes), with one operation an element (the decay).

#include <optional>

#include "models/model_spec.hpp"
#include "models/workload.hpp"
#include "ops/op_graph.hpp"

namespace models {

namespace detail {
class LayerGraph;
}

/// Bytes of one sequence's Gated DeltaNet state in one layer on one chip (Z above); 0 for a model
/// without linear attention.
std::uint64_t linear_state_bytes(const ModelSpec& model, std::uint64_t tp = 1);

/// Adds a Gated DeltaNet layer's ops (above); its first op depends on `input` when given. Returns
/// out_proj.
ops::OpId add_gated_deltanet(detail::LayerGraph& lg, const ModelSpec& model, const Workload& workload,
                             std::optional<ops::OpId> input, std::uint64_t tp);

}  // namespace models
