#pragma once
// What the simulator needs to know of a decoder-only LLM, with Hugging Face config.json field
// names. Loading is strict: every field the model type uses is required; a missing kv_lora_rank
// or qk_rope_head_dim (or any other) throws hw::ConfigError naming the field and the source with
// its line. No value ever falls back to hidden_size or 0.
//
// `model_type` decides which fields are used:
//   deepseek_v2, deepseek_v3   MLA attention (q_lora_rank may be null: direct q_proj), MoE FFN
//                              after first_k_dense_replace dense layers
//   deepseek_v32               the same plus the DSA indexer (index_n_heads, index_head_dim,
//                              index_topk)
//   llama, mistral, qwen2      GQA attention (num_key_value_heads; MHA when it equals the head
//                              count), dense FFN. head_dim is read when present, otherwise it is
//                              hidden_size / num_attention_heads, as Hugging Face defines it.
//                              qkv_bias: qwen2 has it; llama's attention_bias says it (YAML:
//                              optional `qkv_bias`); tie_word_embeddings when present (lm_head
//                              reads the embedding table, stored once)
//   chatglm                    ChatGLM2/3, GLM-4: num_layers, ffn_hidden_size, padded_vocab_size,
//                              kv_channels (head dim), multi_query_attention with
//                              multi_query_group_num KV heads, add_qkv_bias
//   qwen3                      Llama's fields, an RMSNorm on each q and k head (head_dim apart
//                              from hidden_size / heads, as Qwen3 publishes it)
//   qwen3_moe                  qwen3 plus routed experts (num_experts, num_experts_per_tok,
//                              moe_intermediate_size), sparse where decoder_sparse_step says and
//                              not in mlp_only_layers
//   glm4_moe                   GLM-4.5: GQA with q/k norm (use_qk_norm) and partial rotary
//                              (partial_rotary_factor), DeepSeek's MoE names with shared experts
//                              after first_k_dense_replace dense layers
//   minicpm                    MiniCPM (MiniCPM4): Llama's fields and the muP scalars scale_emb,
//                              scale_depth, dim_model_base
//   minicpm3                   MiniCPM3: MLA without MoE (v_head_dim = hidden_size / heads, as
//                              its code defines it), the muP scalars
//   gpt_oss                    gpt-oss: GQA with attention sinks, layer_types alternating
//                              sliding_attention (sliding_window keys) and full_attention, routed
//                              experts of intermediate_size (num_local_experts)
//   qwen3_next                 Qwen3-Next: Gated DeltaNet layers (linear_*) and gated full
//                              attention every full_attention_interval-th layer (or layer_types),
//                              routed and one shared expert
// The families are registered units, one file each (models/model_family.hpp,
// models/families/); a config.json without model_type is read by its architectures entry.
// Two formats:
//   *.yaml / *.yml - the project's model files: `name` plus exactly the fields of the model type;
//                    unknown keys are errors with a did-you-mean.
//   *.json         - a Hugging Face config.json: keys the simulator does not use are ignored;
//                    a key it uses and the file leaves out takes its config class's default
//                    where that is a switch or a layout rule (models/hf_class_defaults.hpp),
//                    and is required where it is one of the model's dimensions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/weight_format.hpp"

namespace models {

enum class AttentionKind { mla, gqa };

/// What mixes a layer's tokens. full_attention: the model's attention over the whole history;
/// sliding_attention: the same over the last sliding_window positions (a query at p sees keys
/// p - window + 1 .. p); linear_attention: a Gated DeltaNet, whose history is a fixed state.
enum class LayerMixer : std::uint8_t { full_attention, sliding_attention, linear_attention };
std::string_view name_of(LayerMixer m);

/// The recurrent state a Gated DeltaNet layer keeps per sequence, in the engines' layout (vLLM's
/// gated_delta_net_state_shape, SGLang's Mamba2StateShape: docs/models_2026.md):
///   conv state      (conv_kernel - 1) x conv_dim elements, conv_dim = 2 n_k d_k + n_v d_v (bf16)
///   recurrent state n_v x d_k x d_v elements (state_bytes each: 2 bf16, vLLM's default; 4 fp32,
///                   SGLang's)
/// Per token the layer projects q, k (n_k heads of d_k), v and the output gate z (n_v heads of d_v)
/// and, per value head, the decay a and the rate b; each key head serves n_v / n_k value heads.
struct GatedDeltaNetSpec {
  std::uint64_t num_key_heads = 0;    ///< linear_num_key_heads
  std::uint64_t num_value_heads = 0;  ///< linear_num_value_heads
  std::uint64_t key_head_dim = 0;     ///< linear_key_head_dim
  std::uint64_t value_head_dim = 0;   ///< linear_value_head_dim
  std::uint64_t conv_kernel = 0;      ///< linear_conv_kernel_dim
  std::uint64_t state_bytes = 2;      ///< bytes of a recurrent-state element (mamba_ssm_dtype)

  std::uint64_t key_dim() const { return num_key_heads * key_head_dim; }
  std::uint64_t value_dim() const { return num_value_heads * value_head_dim; }
  std::uint64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
};

struct MoeSpec {
  std::uint64_t n_routed_experts = 0;
  std::uint64_t num_experts_per_tok = 0;
  std::uint64_t n_shared_experts = 0;  ///< may be 0
  std::uint64_t moe_intermediate_size = 0;
  std::uint64_t first_k_dense_replace = 0;  ///< leading dense layers (may be 0)
  double routed_scaling_factor = 0;
  /// One shared expert's width when it differs from the routed ones' (Qwen3-Next's
  /// shared_expert_intermediate_size); 0: moe_intermediate_size.
  std::uint64_t shared_intermediate_size = 0;
  /// The shared experts' total width: n_shared_experts x their width.
  std::uint64_t shared_width() const {
    return n_shared_experts * (shared_intermediate_size != 0 ? shared_intermediate_size : moe_intermediate_size);
  }
  /// Qwen3-MoE's layer rule: layer l is sparse when (l + 1) % decoder_sparse_step == 0 and l is
  /// not one of mlp_only_layers (1 and none elsewhere).
  std::uint64_t decoder_sparse_step = 1;
  std::vector<std::uint64_t> mlp_only_layers;
};

/// MiniCPM's muP scalars: the embedding times scale_emb, each residual branch times
/// scale_depth / sqrt(layers), the final hidden state times dim_model_base / hidden_size.
/// Element-wise products fused into neighbouring ops: they cost nothing the step shows.
struct MupScalars {
  double scale_emb = 0;
  double scale_depth = 0;
  std::uint64_t dim_model_base = 0;
};

struct DsaSpec {
  std::uint64_t index_n_heads = 0;
  std::uint64_t index_head_dim = 0;
  std::uint64_t index_topk = 0;
};

struct ModelSpec {
  std::string name;
  std::string source;
  std::string source_sha256;  ///< SHA-256 of the text it was read from
  std::string model_type;
  AttentionKind attention = AttentionKind::mla;

  std::uint64_t hidden_size = 0;
  std::uint64_t num_hidden_layers = 0;
  std::uint64_t vocab_size = 0;
  std::uint64_t intermediate_size = 0;  ///< dense FFN width
  std::uint64_t num_attention_heads = 0;

  // MLA (attention == mla)
  std::optional<std::uint64_t> q_lora_rank;
  std::uint64_t kv_lora_rank = 0;      ///< d_c
  std::uint64_t qk_nope_head_dim = 0;  ///< d_nope
  std::uint64_t qk_rope_head_dim = 0;  ///< d_rope
  std::uint64_t v_head_dim = 0;        ///< d_v

  // GQA (attention == gqa)
  std::uint64_t num_key_value_heads = 0;
  std::uint64_t head_dim = 0;
  bool qkv_bias = false;       ///< a bias on the q, k and v projections
  bool qk_norm = false;        ///< an RMSNorm on each head of q and k before RoPE (Qwen3, GLM-4.5)
  std::uint64_t rope_dim = 0;  ///< rotary elements per head: head_dim x partial_rotary_factor
  /// lm_head reads the embedding table (one matrix in memory).
  bool tie_word_embeddings = false;
  /// Keys a config.json left out and its config class filled in, "key = value (ConfigClass)"
  /// (models/hf_class_defaults.hpp); empty for g5sim's YAML.
  std::vector<std::string> class_defaults_taken;

  std::optional<MoeSpec> moe;     ///< MoE FFN after the first_k_dense_replace dense layers
  std::optional<DsaSpec> dsa;     ///< DeepSeek sparse attention indexer (V3.2)
  std::optional<MupScalars> mup;  ///< MiniCPM's scalars

  /// Each layer's mixer (layer_types, or full_attention_interval); empty: every layer full.
  std::vector<LayerMixer> layer_mixers;
  std::uint64_t sliding_window = 0;  ///< keys a sliding_attention query sees (itself included)
  /// gpt-oss: one learned logit per query head joins every softmax row (no value): an exp and an
  /// add a row, and heads bf16 weights a layer.
  bool attention_sinks = false;
  /// Qwen3-Next: q_proj also yields a gate per query element; the attention output is multiplied
  /// by its sigmoid before o_proj.
  bool attention_output_gate = false;
  std::optional<GatedDeltaNetSpec> linear_attention;  ///< the linear_attention layers' Gated DeltaNet
  /// gpt-oss's checkpoints quantise only the routed experts (quantization_config
  /// modules_to_not_convert names self_attn; YAML `quantised_layers: experts`): attention, dense
  /// FFNs and shared experts stay bf16.
  bool quantised_experts_only = false;
  /// How the checkpoint stores its weights: YAML `weight_dtype` (optional, default bf16), or a
  /// config.json's quantization_config (quant_method fp8; gptq or awq with bits 4 or 8).
  WeightDtype weight_dtype = WeightDtype::bf16;
  /// Their int8/int4 scale group along k: YAML `weight_group_size`, a gptq/awq `group_size`.
  std::uint64_t weight_group = kDefaultWeightGroup;
  void set_weights(WeightFormat f) {
    weight_dtype = f.dtype;
    weight_group = f.group;
  }

  /// GQA's KV heads on one of `tp` chips: num_key_value_heads / tp, or 1 when tp exceeds them
  /// (each KV head replicated on tp / num_key_value_heads chips, as vLLM and SGLang shard it).
  std::uint64_t kv_heads_on_chip(std::uint64_t tp) const {
    return num_key_value_heads >= tp ? num_key_value_heads / tp : 1;
  }
  /// Latent KV elements cached per token per layer (MLA): d_c + d_rope.
  std::uint64_t latent_kv_elements() const { return kv_lora_rank + qk_rope_head_dim; }
  /// Layer l's mixer.
  LayerMixer mixer(std::uint64_t l) const {
    return l < layer_mixers.size() ? layer_mixers[l] : LayerMixer::full_attention;
  }
  /// Layers with `m` as their mixer.
  std::uint64_t layers_of(LayerMixer m) const;
  /// True if layer `l` (0-based) has a MoE FFN.
  bool is_moe_layer(std::uint64_t l) const;
  /// Why layer `l` has a dense FFN ("" when it has a MoE one), naming the field that says so.
  std::string why_dense(std::uint64_t l) const;
};

/// Loads by extension (.json = Hugging Face config, otherwise strict YAML).
ModelSpec load_model(const std::string& path);
/// Strict YAML held in memory; errors name "<memory:source_name>".
ModelSpec model_from_yaml(const std::string& text, const std::string& source_name);
/// The two schemas a model document can have: g5sim's strict YAML keys (with `name`, no other
/// key allowed), or a Hugging Face config.json (extra keys ignored, named by the source).
enum class ModelSchema { g5sim, hugging_face };
/// A document built in memory (a Python dict) handed over as JSON text: errors name
/// `source_name` as given and the dotted field, without positions.
ModelSpec model_from_document(const std::string& json_text, const std::string& source_name, ModelSchema schema);
/// Hugging Face config.json held in memory.
ModelSpec model_from_hf_json(const std::string& text, const std::string& source_name);

}  // namespace models
