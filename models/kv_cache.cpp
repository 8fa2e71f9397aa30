#include "models/kv_cache.hpp"

#include <fmt/format.h>

#include "hw/config_error.hpp"

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
    l.streams = m.num_key_value_heads / tp;
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

std::uint64_t indexer_bytes_per_token_per_layer(const ModelSpec& model) {
  return model.dsa ? model.dsa->index_head_dim + 4 : 0;
}

}  // namespace models
