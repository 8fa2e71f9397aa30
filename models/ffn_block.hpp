#pragma once
// The feed-forward half of one decoder layer. T tokens, H hidden_size; the projections' weights
// in the workload's format (models/weight_format.hpp), the router's in bf16.
//
// Dense (the first first_k_dense_replace layers of a MoE model, every layer of a dense model):
//   ffn_norm RMSNorm [T, H]; gate_up [T, H] x [H, 2 I]; swiglu [T, I]; down [T, I] x [I, H].
// MoE (E routed experts, top k, S shared experts of width I_e = moe_intermediate_size):
//   ffn_norm; router [T, H] x [H, E]; moe_topk over [T, E];
//   shared experts as one dense FFN of width S * I_e (when S > 0);
//   expert_weights: the D touched experts' gate, up and down matrices, D * 3 * H * I_e * e bytes
//     (models/expert_routing.hpp decides D and the tokens per expert);
//   experts_gate_up D x ([t_i, H] x [H, 2 I_e]), experts_swiglu [T k, I_e],
//   experts_down D x ([t_i, I_e] x [I_e, H]) - both matmuls stream their weights on behalf of
//   expert_weights (same-core edges);
//   moe_combine: each token's k expert outputs summed with the routing weights and
//   routed_scaling_factor, plus the shared experts' output.
// Overlap: the shared experts depend only on ffn_norm and are queued right after the dispatch
// all-to-all, so they compute while tokens cross chips; barrier sends are queued just before
// their first waiter (ops/lowering.hpp), so nothing else waits for the all-to-alls.
// Sharding: dense and shared widths are split over tp (an all_reduce of [T, H] ends the layer's
// FFN when tp > 1); routed experts as the chip's ExpertShare, with a dispatch all_to_all before
// the expert matmuls and a combine all_to_all after them when tokens cross chips (ep > tp).
// The residual additions are folded into the next norm (not costed separately).

#include <optional>

#include "models/expert_routing.hpp"
#include "models/model_spec.hpp"
#include "models/parallelism.hpp"
#include "models/workload.hpp"
#include "ops/op_graph.hpp"

namespace models {

/// Adds layer `layer`'s FFN after `input`, for one chip of the sharding `p` (MoE layers: its
/// expert share, models/parallelism.hpp); returns its last op.
ops::OpId add_ffn_block(ops::OpGraph& graph, const ModelSpec& model, const Workload& workload, int layer,
                        ops::OpId input, const Parallelism& p, const ExpertShare* share);

/// Weight bytes of `experts` routed experts of width `width` in format `weights` (bf16:
/// experts * 3 * hidden_size * width * 2; models/weight_format.hpp for the others).
std::uint64_t expert_weight_bytes(const ModelSpec& model, std::uint64_t experts, std::uint64_t width,
                                  WeightFormat weights = {});

}  // namespace models
