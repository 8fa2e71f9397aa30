#pragma once
// What a Hugging Face config class fills in for a key its config.json leaves out.
//
// transformers builds a model from config.json through the family's config class (LlamaConfig,
// Qwen3Config, DeepseekV3Config, MiniCPM3Config of the repository's remote code, ...): a key the
// file omits takes the class's __init__ default. g5sim reads the same file, so an absent key must
// mean what it means there, per model_type: MiniCPM3's config.json without tie_word_embeddings is
// a tied model (its class defaults to true), a Llama's without num_key_value_heads is multi-head
// (None -> num_attention_heads), a Qwen3's without head_dim has heads of 128.
//
// The rule (docs/models.md, "A config.json's absent keys"): switches and layout rules take the
// class default (tie_word_embeddings, attention_bias, head_dim, num_key_value_heads, use_qk_norm,
// partial_rotary_factor, n_shared_experts, first_k_dense_replace, routed_scaling_factor,
// decoder_sparse_step, mlp_only_layers, the muP scalars). The model's dimensions never do:
// hidden_size, num_hidden_layers, num_attention_heads, vocab_size, intermediate_size, the MLA ranks
// and head dims, the experts' count, top-k and width, the DSA indexer's sizes stay required (seed
// 003's acceptance: a missing kv_lora_rank or qk_rope_head_dim is an error naming the field and
// its file), since a default there would describe another model than the file's.
//
// Only g5sim's reading of a config.json consults this; g5sim's own YAML keeps every key it uses.

#include <optional>
#include <string_view>
#include <vector>

namespace models {

/// One default: `value` is JSON text ("true", "128", "2.5", "[]") or "=KEY", the value of
/// another key of the same file (num_key_value_heads = num_attention_heads).
struct ClassDefault {
  std::string_view model_type;
  std::string_view key;
  std::string_view value;
  std::string_view config_class;  ///< where transformers (or the model's remote code) defines it
};

/// The class default of `key` for `model_type`, if its config class defines one g5sim takes.
std::optional<ClassDefault> class_default(std::string_view model_type, std::string_view key);

/// Every default, in the table's order (docs and tests list them).
const std::vector<ClassDefault>& class_defaults();

}  // namespace models
