#pragma once
// The parts model families compose (models/model_family.hpp): each part is its declared fields
// and the reads that fill its piece of a ModelSpec, so a family file lists the parts it has.

#include <string_view>
#include <vector>

#include "models/model_family.hpp"

namespace models::families {

// Plausible ranges of a model's fields (README, "Config ranges"): above every published model,
// low enough that byte and FLOP counts of a whole step stay far inside 64 bits.
constexpr double kMaxWidth = double(std::uint64_t{1} << 20);  ///< hidden, FFN, LoRA ranks
constexpr double kMaxVocab = double(std::uint64_t{1} << 24);
constexpr double kMaxExperts = 65536;

/// Fields a family adds to another's.
std::vector<Field> operator+(std::vector<Field> a, const std::vector<Field>& b);

/// num_hidden_layers, vocab_size, intermediate_size: the decoder's size under Llama's names.
std::vector<Field> decoder_fields();
void read_decoder(Fields& f, ModelSpec& s);

/// GQA attention under Llama's names: num_key_value_heads, head_dim (absent: hidden_size /
/// num_attention_heads, Hugging Face's definition), the q/k/v bias (YAML qkv_bias; a config.json's
/// attention_bias; absent: `bias_by_default`), tie_word_embeddings (absent: false).
std::vector<Field> gqa_fields();
void read_gqa(Fields& f, ModelSpec& s, bool bias_by_default);

/// RoPE on partial_rotary_factor of each head (GLM-4.5, Qwen3-Next): sets rope_dim, which must
/// be an even whole number.
std::vector<Field> partial_rotary_fields();
void read_partial_rotary(Fields& f, ModelSpec& s);

/// Per-layer mixers: `layer_types`, one entry a layer, each one of `options` (full_attention and
/// the family's other kind), read into ModelSpec::layer_mixers.
void read_layer_types(Fields& f, ModelSpec& s, const std::vector<std::string>& options);

/// MLA attention (DeepSeek's names): q_lora_rank (null: a direct q_proj), kv_lora_rank,
/// qk_nope_head_dim, qk_rope_head_dim, v_head_dim.
std::vector<Field> mla_fields();
void read_mla(Fields& f, ModelSpec& s);

/// A MoE FFN's key names in one family; an empty name is a key the family does not have (its
/// meaning then: no shared experts, no dense prefix, every layer sparse, scaling 1).
struct MoeKeys {
  std::string_view experts, experts_per_token, shared_experts, width;
  std::string_view first_dense, sparse_step, dense_layers, scaling;
};
constexpr MoeKeys kDeepSeekMoe{"n_routed_experts",
                               "num_experts_per_tok",
                               "n_shared_experts",
                               "moe_intermediate_size",
                               "first_k_dense_replace",
                               "",
                               "",
                               "routed_scaling_factor"};
std::vector<Field> moe_fields(const MoeKeys& keys);
void read_moe(Fields& f, ModelSpec& s, const MoeKeys& keys);

}  // namespace models::families
