#pragma once
// What the KV cache holds per token per layer, for a model, an MLA cache mode and a KV format.
//
//   MLA, absorb or standard (latent): one stream of d_c + d_r elements (576 for DeepSeek-V2/V3):
//       bf16 1,152 B; fp8 576 B (seed 003's count); fp8-flashmla d_c + 4 ceil(d_c/128) + 2 d_r
//       = 512 + 16 + 128 = 656 B (FlashMLA's "FP8 with scale" layout).
//   MLA, expanded: n heads x (d_n + d_r + d_v) elements (K with its RoPE part, and V):
//       V2-Lite bf16 16 x 320 x 2 = 10,240 B (seed 000).
//   GQA / MHA: g KV heads x 2 d_h elements.
//   Microscaled (mxfp8, mxfp6, mxfp4: 8, 6, 4 bits and an e8m0 scale per 32; nvfp4: 4 bits and an
//   e4m3 scale per 16), packed along each stream: ceil(E bits / 8) + ceil(E / block) bytes. The
//   DeepSeek latent (E = 576): mxfp8 594 B, mxfp6 450 B, mxfp4 306 B, nvfp4 324 B (NVFP4's
//   per-tensor fp32 scale is the cache's, not a token's). The kernel dequantises them as fp8's.
// fp8-flashmla exists only for the MLA latent; any other pairing is a ConfigError.

#include <cstdint>

#include "models/model_spec.hpp"
#include "models/workload.hpp"

namespace models {

struct KvCacheLayout {
  std::uint64_t streams = 0;           ///< independent KV streams per token (KV heads; 1 for the latent)
  std::uint64_t elements = 0;          ///< elements per stream per token
  std::uint64_t bytes_per_stream = 0;  ///< bytes per stream per token in the KV format
  bool dequantize = false;             ///< the kernel converts the format to bf16 before use

  std::uint64_t bytes_per_token() const { return streams * bytes_per_stream; }
};

/// `tp` chips share the heads: per-head caches (expanded MLA, GQA) hold 1/tp of the streams on a
/// chip; the MLA latent is replicated.
KvCacheLayout kv_cache_layout(const ModelSpec& model, MlaMode cache_mode, KvFormat format, std::uint64_t tp = 1);

/// Bytes per token per layer of the cache a workload keeps on one chip (its mla_mode decides
/// MLA's layout).
std::uint64_t kv_bytes_per_token_per_layer(const ModelSpec& model, const Workload& workload, std::uint64_t tp = 1);

/// Bytes one sequence of `tokens` cached tokens holds over all layers on one chip:
///   full_attention layers     tokens x L each (L: kv_bytes_per_token_per_layer)
///   sliding_attention layers  min(tokens, sliding_window) x L each (the keys a query can still see)
///   linear_attention layers   its state, linear_state_bytes (models/linear_attention_block.hpp)
/// plus DSA's index keys (tokens x their bytes, every layer). Throws hw::CountOverflow.
std::uint64_t sequence_kv_bytes(const ModelSpec& model, const Workload& workload, std::uint64_t tp,
                                std::uint64_t tokens);

/// How a sequence's cache grows: `per_token` bytes for every token (full-attention layers and DSA's
/// keys), `window_per_token` for each of its last `window` tokens (sliding layers), and `fixed`
/// bytes whatever its length (linear-attention states). sequence_kv_bytes(tokens) = per_token x
/// tokens + window_per_token x min(tokens, window) + fixed.
struct KvGrowth {
  std::uint64_t per_token = 0, window_per_token = 0, window = 0, fixed = 0;
  /// The bytes that do not grow with the sequence: window_per_token min(tokens, window) + fixed.
  /// Throws hw::CountOverflow.
  std::uint64_t bounded(std::uint64_t tokens) const;
  /// All of them: per_token x tokens + bounded(tokens). Throws hw::CountOverflow.
  std::uint64_t bytes(std::uint64_t tokens) const;
};
KvGrowth kv_growth(const ModelSpec& model, const Workload& workload, std::uint64_t tp);

/// Bytes per token per layer of DeepSeek Sparse Attention's indexer key cache (an fp8 key of
/// index_head_dim and one fp32 scale, replicated); 0 without DSA.
std::uint64_t indexer_bytes_per_token_per_layer(const ModelSpec& model);

}  // namespace models
