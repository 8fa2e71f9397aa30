#pragma once
// What one chip must hold for a deployment: weights (bf16) and KV cache, for the whole model
// (all num_hidden_layers, whatever --layers simulates).
//
// Weights per chip, with the shares of models/parallelism.hpp:
//   embedding and lm_head  vocab x H each, / tp (one table when tie_word_embeddings)
//   MLA layer  q: H r_q + r_q n (d_n + d_r) / tp (or H n (d_n + d_r) / tp without q LoRA);
//              kv_a: H (d_c + d_r); kv_b (W_UK, W_UV): d_c n (d_n + d_v) / tp; o_proj n d_v H / tp
//   GQA layer  qkv: H (n + 2 g) d_h / tp (+ (n + 2 g) d_h / tp with a qkv bias); o_proj n d_h H / tp
//   dense FFN  3 H I / tp
//   MoE FFN    router H E; shared 3 H (S I_e) / tp; routed (E / ep) x 3 H I_e (I_e / tp when ep = 1)
//   norms      H per norm (and r_q, d_c for MLA's)
//   DSA        the indexer per layer: r_q h_i d_i + H d_i + d_i + H h_i (replicated)
// KV cache per chip: (B / dp) x kv_len x layers x bytes per token per layer (models/kv_cache.hpp),
// plus the DSA index keys, d_i + 4 bytes per token per layer.

#include <cstdint>

#include "models/model_spec.hpp"
#include "models/parallelism.hpp"
#include "models/step_part.hpp"
#include "models/workload.hpp"

namespace models {

struct MemoryFootprint {
  std::uint64_t weight_bytes = 0;
  std::uint64_t kv_cache_bytes = 0;
  std::uint64_t total() const { return weight_bytes + kv_cache_bytes; }
};

/// `part`: the whole model, or one side of attention-FFN disaggregation (models/decoder_step.hpp):
/// the attention side holds the embedding, the head, the attention weights and norms and the KV
/// cache; the FFN side the FFN weights and norms, and no cache.
MemoryFootprint chip_footprint(const ModelSpec& model, const Workload& global, const Parallelism& p,
                               StepPart part = StepPart::whole);
/// The model's parameters: every weight of every layer, the embedding and lm_head (once when
/// tied) and the norms, on one chip with no sharding.
std::uint64_t parameter_count(const ModelSpec& model);

/// The smallest sharding whose footprint fits `capacity_bytes`: no sharding if the model fits one
/// chip; else for n = 2, 4, 8, ... chips, a MoE model tries dp = ep = n (tp 1), then tp = ep = n
/// (dp 1), a dense model tp = n. `batch_given`: the batch must be divisible by dp; otherwise the
/// batch becomes dp (one sequence per chip). Throws hw::ConfigError when nothing up to 1024
/// chips fits.
struct AutoSharding {
  Parallelism parallelism;
  std::uint64_t batch = 0;
};
AutoSharding auto_sharding(const ModelSpec& model, Workload global, bool batch_given, std::uint64_t capacity_bytes);

}  // namespace models
