#pragma once
// What the simulator needs to know of an MLA model (DeepSeek-V2/V3 style), with Hugging Face
// config.json field names. Loading is strict: every field below is required; a missing
// kv_lora_rank or qk_rope_head_dim (or any other) throws hw::ConfigError naming the field and
// the source with its line. No value ever falls back to hidden_size or 0.
//
// Two formats:
//   *.yaml / *.yml - the project's model files: exactly these keys plus `name`; unknown keys are
//                    errors with a did-you-mean.
//   *.json         - a Hugging Face config.json: keys the simulator does not use are ignored,
//                    keys it uses are required.
// q_lora_rank may be null (DeepSeek-V2-Lite): queries are then projected directly from the
// hidden state (q_proj) instead of through a low-rank q_a / q_b pair.

#include <cstdint>
#include <optional>
#include <string>

namespace models {

struct MlaModelSpec {
  std::string name;
  std::string source;
  std::uint64_t hidden_size = 0;
  std::uint64_t num_attention_heads = 0;
  std::optional<std::uint64_t> q_lora_rank;
  std::uint64_t kv_lora_rank = 0;      ///< d_c
  std::uint64_t qk_nope_head_dim = 0;  ///< d_nope
  std::uint64_t qk_rope_head_dim = 0;  ///< d_rope
  std::uint64_t v_head_dim = 0;        ///< d_v

  /// Latent KV elements cached per token per layer: d_c + d_rope.
  std::uint64_t latent_kv_elements() const { return kv_lora_rank + qk_rope_head_dim; }
};

/// Loads by extension (.json = Hugging Face config, otherwise strict YAML).
MlaModelSpec load_model(const std::string& path);
/// Strict YAML held in memory; errors name "<memory:source_name>".
MlaModelSpec model_from_yaml(const std::string& text, const std::string& source_name);
/// Hugging Face config.json held in memory.
MlaModelSpec model_from_hf_json(const std::string& text, const std::string& source_name);

}  // namespace models
