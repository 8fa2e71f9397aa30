#include "models/hf_class_defaults.hpp"

namespace models {

// Read from each class's __init__ signature (transformers' src/transformers/models/<family>/
// configuration_<family>.py; MiniCPM and MiniCPM3 from openbmb's configuration_minicpm.py, the
// remote code their config.json's auto_map names). A key a class has no parameter for (Qwen3-MoE's
// and GLM-4.5's head_dim, which their modelling code takes as hidden_size / heads) is absent here:
// the family's reader applies the same quotient. ChatGLM's remote class is not listed: none of its
// defaults has been checked against its code, so every key it uses stays required.
const std::vector<ClassDefault>& class_defaults() {
  static const std::vector<ClassDefault> table{
      {"llama", "tie_word_embeddings", "false", "LlamaConfig"},
      {"llama", "num_key_value_heads", "=num_attention_heads", "LlamaConfig"},
      {"llama", "attention_bias", "false", "LlamaConfig"},
      {"mistral", "tie_word_embeddings", "false", "MistralConfig"},
      {"mistral", "num_key_value_heads", "8", "MistralConfig"},
      {"qwen2", "tie_word_embeddings", "false", "Qwen2Config"},
      {"qwen2", "num_key_value_heads", "32", "Qwen2Config"},
      {"qwen3", "tie_word_embeddings", "false", "Qwen3Config"},
      {"qwen3", "num_key_value_heads", "32", "Qwen3Config"},
      {"qwen3", "head_dim", "128", "Qwen3Config"},
      {"qwen3", "attention_bias", "false", "Qwen3Config"},
      {"qwen3_moe", "tie_word_embeddings", "false", "Qwen3MoeConfig"},
      {"qwen3_moe", "num_key_value_heads", "4", "Qwen3MoeConfig"},
      {"qwen3_moe", "attention_bias", "false", "Qwen3MoeConfig"},
      {"qwen3_moe", "decoder_sparse_step", "1", "Qwen3MoeConfig"},
      {"qwen3_moe", "mlp_only_layers", "[]", "Qwen3MoeConfig"},
      {"deepseek_v2", "tie_word_embeddings", "false", "DeepseekV2Config"},
      {"deepseek_v2", "n_shared_experts", "2", "DeepseekV2Config"},
      {"deepseek_v2", "first_k_dense_replace", "0", "DeepseekV2Config"},
      {"deepseek_v2", "routed_scaling_factor", "1.0", "DeepseekV2Config"},
      {"deepseek_v3", "tie_word_embeddings", "false", "DeepseekV3Config"},
      {"deepseek_v3", "n_shared_experts", "1", "DeepseekV3Config"},
      {"deepseek_v3", "first_k_dense_replace", "3", "DeepseekV3Config"},
      {"deepseek_v3", "routed_scaling_factor", "2.5", "DeepseekV3Config"},
      // Kimi-K2's remote code is DeepSeek-V3's configuration class under another model_type.
      {"kimi_k2", "tie_word_embeddings", "false", "DeepseekV3Config, as Kimi-K2's remote code"},
      {"kimi_k2", "n_shared_experts", "1", "DeepseekV3Config, as Kimi-K2's remote code"},
      {"kimi_k2", "first_k_dense_replace", "3", "DeepseekV3Config, as Kimi-K2's remote code"},
      {"kimi_k2", "routed_scaling_factor", "2.5", "DeepseekV3Config, as Kimi-K2's remote code"},
      {"deepseek_v32", "tie_word_embeddings", "false", "DeepseekV32Config"},
      {"deepseek_v32", "n_shared_experts", "1", "DeepseekV32Config"},
      {"deepseek_v32", "first_k_dense_replace", "3", "DeepseekV32Config"},
      {"deepseek_v32", "routed_scaling_factor", "2.5", "DeepseekV32Config"},
      {"glm4_moe", "tie_word_embeddings", "false", "Glm4MoeConfig"},
      {"glm4_moe", "num_key_value_heads", "8", "Glm4MoeConfig"},
      {"glm4_moe", "attention_bias", "false", "Glm4MoeConfig"},
      {"glm4_moe", "use_qk_norm", "false", "Glm4MoeConfig"},
      {"glm4_moe", "partial_rotary_factor", "0.5", "Glm4MoeConfig"},
      {"glm4_moe", "n_shared_experts", "1", "Glm4MoeConfig"},
      {"glm4_moe", "first_k_dense_replace", "1", "Glm4MoeConfig"},
      {"glm4_moe", "routed_scaling_factor", "1.0", "Glm4MoeConfig"},
      {"gpt_oss", "tie_word_embeddings", "false", "GptOssConfig"},
      {"gpt_oss", "num_key_value_heads", "8", "GptOssConfig"},
      {"gpt_oss", "head_dim", "64", "GptOssConfig"},
      {"gpt_oss", "attention_bias", "true", "GptOssConfig"},
      {"qwen3_next", "tie_word_embeddings", "false", "Qwen3NextConfig"},
      {"qwen3_next", "num_key_value_heads", "2", "Qwen3NextConfig"},
      {"qwen3_next", "head_dim", "256", "Qwen3NextConfig"},
      {"qwen3_next", "attention_bias", "false", "Qwen3NextConfig"},
      {"qwen3_next", "partial_rotary_factor", "0.25", "Qwen3NextConfig"},
      {"qwen3_next", "full_attention_interval", "4", "Qwen3NextConfig"},
      {"qwen3_next", "linear_conv_kernel_dim", "4", "Qwen3NextConfig"},
      {"qwen3_next", "decoder_sparse_step", "1", "Qwen3NextConfig"},
      {"qwen3_next", "mlp_only_layers", "[]", "Qwen3NextConfig"},
      // Not a config key of Qwen3NextConfig: the engines choose the state's element, vLLM the
      // model's dtype by default (mamba_ssm_cache_dtype auto), SGLang float32.
      {"qwen3_next", "mamba_ssm_dtype", "bfloat16", "vLLM's mamba_ssm_cache_dtype auto"},
      {"minicpm", "tie_word_embeddings", "true", "MiniCPMConfig, openbmb remote code"},
      {"minicpm", "num_key_value_heads", "=num_attention_heads", "MiniCPMConfig, openbmb remote code"},
      {"minicpm", "attention_bias", "false", "MiniCPMConfig, openbmb remote code"},
      {"minicpm", "scale_emb", "1", "MiniCPMConfig, openbmb remote code"},
      {"minicpm", "scale_depth", "1", "MiniCPMConfig, openbmb remote code"},
      {"minicpm", "dim_model_base", "1", "MiniCPMConfig, openbmb remote code"},
      {"minicpm3", "tie_word_embeddings", "true", "MiniCPM3Config, openbmb remote code"},
      {"minicpm3", "num_key_value_heads", "=num_attention_heads", "MiniCPM3Config, openbmb remote code"},
      {"minicpm3", "scale_emb", "1", "MiniCPM3Config, openbmb remote code"},
      {"minicpm3", "scale_depth", "1", "MiniCPM3Config, openbmb remote code"},
      {"minicpm3", "dim_model_base", "1", "MiniCPM3Config, openbmb remote code"},
  };
  return table;
}

std::optional<ClassDefault> class_default(std::string_view model_type, std::string_view key) {
  for (const ClassDefault& d : class_defaults()) {
    if (d.model_type == model_type && d.key == key) return d;
  }
  return std::nullopt;
}

}  // namespace models
