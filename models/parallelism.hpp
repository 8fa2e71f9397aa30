#pragma once
// How one step is sharded over chips, and which share the simulated chip runs.
//
//   --dp D  splits the batch: each chip runs B / D sequences. A step of unlike groups deals each
//           group's sequences round robin over the D ranks (continuing where the last group
//           stopped) and simulates the rank with the most new tokens (then the most history).
//   --tp T  splits attention heads (and GQA's KV heads), the dense FFN width, the shared experts'
//           width and the lm_head vocabulary T ways; MLA's latent path (kv_a, the latent cache
//           and its read) is replicated, as the latent is shared by all heads. After o_proj and
//           after every FFN the T partial sums are all-reduced over the C2C links.
//   --ep E  splits the routed experts E ways: each chip holds E_l = ceil(n_routed_experts / E)
//           whole experts, or fewer (when E does not divide them, as SGLang's EP72 over 256
//           experts, the simulated chip is one of the fullest); chips = T * D and E must divide it. When E > T, tokens
//           are dispatched to the experts' chips and the results combined back (two all-to-alls per MoE layer); when E
//           <= T every chip already has all of its TP group's tokens. Without EP and with T > 1, each routed expert is
//           split T ways along its width instead.
// Routed tokens on the simulated chip: its EP group holds G = T_chip * max(1, E / T) tokens
// (T_chip: the chip's new tokens; with unlike DP ranks, the fullest rank's, an upper bound); uniform routing touches
// round(E_l (1 - (1 - k / n_routed)^G)) of its E_l local experts with ceil(G k E_l / n_routed) token slots (= ceil(G k
// / E) when E divides n_routed). With a measured load file the simulated chip is the EP rank with the most token slots
// (the step waits for the slowest chip). Every other split that does not divide is an InputError naming the parameter
// (tp, ep, dp, batch).

#include <cstdint>

#include "models/expert_routing.hpp"
#include "models/model_spec.hpp"
#include "models/workload.hpp"

namespace models {

/// Routed experts on the fullest EP rank: ceil(experts / ep).
inline std::uint64_t experts_per_rank(std::uint64_t experts, std::uint64_t ep) { return (experts + ep - 1) / ep; }

struct Parallelism {
  std::uint64_t tp = 1, ep = 1, dp = 1;
  std::uint64_t chips() const { return tp * dp; }
};

/// Throws hw::InputError naming tp, ep, dp or batch when the sharding does not fit the model or
/// the batch.
void validate_parallelism(const Parallelism& p, const ModelSpec& model, const Workload& global);

/// The simulated chip's workload: batch / dp.
Workload chip_workload(const Workload& global, const Parallelism& p);

/// The MoE work of the simulated chip in one layer.
struct ExpertShare {
  ExpertAssignment experts;        ///< local experts touched, tokens each
  std::uint64_t group_tokens = 0;  ///< G above
  std::uint64_t rank = 0;          ///< EP rank simulated
  /// Bytes this chip sends in the dispatch and in the combine all-to-all. Tokens go out in the
  /// activations' format (models::act_row_bytes): with --act-dtype auto, bf16, or, with fp8
  /// weights, fp8 with one fp32 scale per 128 elements (DeepSeek-V3 quantises the activations
  /// before dispatch, so the experts' up-projections take fp8; DeepEP's dispatch); they come back
  /// in bf16.
  std::uint64_t dispatch_bytes = 0, combine_bytes = 0;
  /// Tokens this chip sends (its own over its TP group) and the bytes of one in the dispatch and
  /// in the combine: dispatch_bytes = sent_tokens x k x dispatch_token_bytes x (ep - 1) / ep.
  std::uint64_t sent_tokens = 0, dispatch_token_bytes = 0, combine_token_bytes = 0;
  std::uint64_t expert_width = 0;  ///< width of each local expert (moe_intermediate_size / split)
};

/// `load` (optional) is the measured routing of this layer over the EP group's tokens.
ExpertShare expert_share(const ModelSpec& model, const Workload& chip, const Parallelism& p,
                         const ExpertAssignment* load);

/// Token slots the EP group routes per MoE layer: G * k (what a load file must list per layer).
std::uint64_t routed_slots(const ModelSpec& model, const Workload& chip, const Parallelism& p);

}  // namespace models
