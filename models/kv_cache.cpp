#include "models/kv_cache.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"
#include "models/linear_attention_block.hpp"

namespace models {

KvCacheLayout kv_cache_layout(const ModelSpec& m, MlaMode cache_mode, KvFormat format, std::uint64_t tp) {
  KvCacheLayout l;
  const bool latent = m.attention == AttentionKind::mla && cache_mode != MlaMode::expanded;
  if (latent) {
    l.streams = 1;
    l.elements = m.latent_kv_elements();
  } else if (m.attention == AttentionKind::mla) {
    l.streams = m.num_attention_heads / tp;
    l.elements = m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim;
  } else {
    l.streams = m.kv_heads_on_chip(tp);
    l.elements = 2 * m.head_dim;
  }
  switch (format) {
    case KvFormat::bf16: l.bytes_per_stream = 2 * l.elements; break;
    case KvFormat::fp8:
      l.bytes_per_stream = l.elements;
      l.dequantize = true;
      break;
    case KvFormat::fp8_flashmla:
      if (!latent) {
        throw hw::InputError("kv_format",
                             "fp8-flashmla is FlashMLA's layout of the MLA latent; it needs an MLA model with "
                             "mla_mode absorb or standard");
      }
      // d_c fp8 values, one fp32 scale per 128 of them, and the RoPE key kept in bf16.
      l.bytes_per_stream = m.kv_lora_rank + 4 * ((m.kv_lora_rank + 127) / 128) + 2 * m.qk_rope_head_dim;
      l.dequantize = true;
      break;
    case KvFormat::mxfp8:
    case KvFormat::mxfp6:
    case KvFormat::mxfp4:
    case KvFormat::nvfp4: {
      // ceil(E x bits / 8) packed bytes and one scale byte per block of the stream's E elements.
      const std::uint64_t bits = format == KvFormat::mxfp8 ? 8 : format == KvFormat::mxfp6 ? 6 : 4;
      const std::uint64_t block = format == KvFormat::nvfp4 ? 16 : 32;
      l.bytes_per_stream = (l.elements * bits + 7) / 8 + (l.elements + block - 1) / block;
      l.dequantize = true;
      break;
    }
  }
  return l;
}

std::uint64_t kv_bytes_per_token_per_layer(const ModelSpec& model, const Workload& w, std::uint64_t tp) {
  return kv_cache_layout(model, w.mla_mode, w.kv_format, tp).bytes_per_token();
}

KvGrowth kv_growth(const ModelSpec& m, const Workload& w, std::uint64_t tp) {
  return hw::checked("the KV cache bytes per sequence", [&] {
    const hw::Count per_layer = kv_bytes_per_token_per_layer(m, w, tp);
    KvGrowth g;
    g.per_token = (per_layer * m.layers_of(LayerMixer::full_attention) +
                   hw::Count(indexer_bytes_per_token_per_layer(m)) * m.num_hidden_layers)
                      .value();
    g.window_per_token = (per_layer * m.layers_of(LayerMixer::sliding_attention)).value();
    g.window = g.window_per_token > 0 ? m.sliding_window : 0;
    g.fixed = (hw::Count(linear_state_bytes(m, tp)) * m.layers_of(LayerMixer::linear_attention)).value();
    return g;
  });
}

std::uint64_t KvGrowth::bounded(std::uint64_t tokens) const {
  return (hw::Count(window_per_token) * std::min(tokens, window) + fixed).value();
}

std::uint64_t KvGrowth::bytes(std::uint64_t tokens) const {
  return (hw::Count(per_token) * tokens + bounded(tokens)).value();
}

std::uint64_t sequence_kv_bytes(const ModelSpec& m, const Workload& w, std::uint64_t tp, std::uint64_t tokens) {
  return hw::checked("the KV cache bytes per sequence", [&] { return kv_growth(m, w, tp).bytes(tokens); });
}

std::uint64_t indexer_bytes_per_token_per_layer(const ModelSpec& model) {
  return model.dsa ? model.dsa->index_head_dim + 4 : 0;
}

}  // namespace models
