// A Hugging Face config.json's absent keys (models/hf_class_defaults.hpp): each family's published
// config.json, as its model card ships it (keys that change nothing here kept: token ids, rope,
// dtype), reads to the same model as its shipped YAML, and a key the file leaves out takes its
// config class's default, not g5sim's. Before, MiniCPM3-4B's config.json (no
// tie_word_embeddings) read as untied: 4,261,902,848 parameters, not its 4,073,875,968.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "hw/config_error.hpp"
#include "models/hf_class_defaults.hpp"

namespace test_hf_class_defaults {

namespace {

std::string source(const std::string& path) { return std::string(G5SIM_TEST_SOURCE_DIR) + "/" + path; }

std::uint64_t shipped_parameters(const std::string& name) {
  return g5sim::Model::from_file(source("configs/models/" + name + ".yaml")).parameter_count();
}

g5sim::Model config_json(const std::string& text, const std::string& name) {
  return g5sim::Model::from_document(text, name + "/config.json", g5sim::ModelSchema::hugging_face);
}

using Defaults = std::vector<std::string>;

}  // namespace

TEST_CASE("MiniCPM3-4B's published config.json, without tie_word_embeddings, is tied as its class says",
          "[models][hf_defaults]") {
  // openbmb/MiniCPM3-4B config.json (its longrope factor lists left out): no tie_word_embeddings,
  // and MiniCPM3Config defaults it to true, so lm_head is the embedding table. The 62 layers'
  // weights, the table once (73,448 x 2,560 = 188,026,880) and the final norm: 4,073,875,968,
  // the shipped YAML's count; untied it would add another 188,026,880.
  const g5sim::Model m = config_json(
      R"({"architectures": ["MiniCPM3ForCausalLM"], "auto_map": {"AutoConfig": "configuration_minicpm.MiniCPM3Config",
      "AutoModelForCausalLM": "modeling_minicpm.MiniCPM3ForCausalLM"}, "bos_token_id": 1, "eos_token_id": [2, 73440],
      "hidden_act": "silu", "initializer_range": 0.1, "hidden_size": 2560, "num_hidden_layers": 62,
      "intermediate_size": 6400, "max_position_embeddings": 32768, "num_attention_heads": 40, "num_key_value_heads": 40,
      "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "q_lora_rank": 768, "kv_lora_rank": 256, "rms_norm_eps": 1e-05,
      "rope_scaling": {"type": "longrope", "original_max_position_embeddings": 32768}, "torch_dtype": "bfloat16",
      "transformers_version": "4.41.0", "use_cache": true, "vocab_size": 73448, "scale_emb": 12,
      "dim_model_base": 256, "scale_depth": 1.4, "model_type": "minicpm3"})",
      "MiniCPM3-4B");
  CHECK(m.parameter_count() == 4'073'875'968);
  CHECK(m.parameter_count() == shipped_parameters("minicpm3-4b"));
  CHECK(m.class_defaults() == Defaults{"tie_word_embeddings = true (MiniCPM3Config, openbmb remote code)"});
}

TEST_CASE("each family's published config.json reads as its shipped YAML, absent keys by its class",
          "[models][hf_defaults]") {
  struct Case {
    std::string shipped, text;
    Defaults taken;
  };
  const std::vector<Case> cases{
      // meta-llama/Llama-2-7b-hf: no attention_bias (LlamaConfig: false), no head_dim (4096 / 32).
      {"llama-2-7b-mha",
       R"({"architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
       "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008, "max_position_embeddings": 4096,
       "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
       "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "tie_word_embeddings": false,
       "torch_dtype": "float16", "transformers_version": "4.31.0.dev0", "use_cache": true, "vocab_size": 32000})",
       {"attention_bias = false (LlamaConfig)"}},
      // Qwen/Qwen2.5-1.5B: no attention_bias; Qwen2 always has q, k, v biases (not a class default:
      // its code has them), the shipped YAML's qkv_bias true.
      {"qwen2.5-1.5b",
       R"({"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
       "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 1536, "initializer_range": 0.02,
       "intermediate_size": 8960, "max_position_embeddings": 131072, "max_window_layers": 28, "model_type": "qwen2",
       "num_attention_heads": 12, "num_hidden_layers": 28, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
       "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
       "transformers_version": "4.40.1", "use_cache": true, "use_mrope": false, "use_sliding_window": false,
       "vocab_size": 151936})",
       {}},
      // Qwen/Qwen3-8B: every key it uses is there (the next test leaves head_dim out).
      {"qwen3-8b",
       R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
       "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
       "initializer_range": 0.02, "intermediate_size": 12288, "max_position_embeddings": 40960,
       "max_window_layers": 36, "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 36,
       "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
       "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
       "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})",
       {}},
      // deepseek-ai/DeepSeek-V2-Lite: every key it uses is there.
      {"deepseek-v2-lite",
       R"({"architectures": ["DeepseekV2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
       "aux_loss_alpha": 0.001, "bos_token_id": 100000, "eos_token_id": 100001, "first_k_dense_replace": 1,
       "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 10944,
       "kv_lora_rank": 512, "max_position_embeddings": 163840, "model_type": "deepseek_v2",
       "moe_intermediate_size": 1408, "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64,
       "n_shared_experts": 2, "norm_topk_prob": false, "num_attention_heads": 16, "num_experts_per_tok": 6,
       "num_hidden_layers": 27, "num_key_value_heads": 16, "pretraining_tp": 1, "q_lora_rank": null,
       "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06, "rope_theta": 10000,
       "routed_scaling_factor": 1.0, "scoring_func": "softmax", "seq_aux": true, "tie_word_embeddings": false,
       "topk_group": 1, "topk_method": "greedy", "torch_dtype": "bfloat16", "transformers_version": "4.33.1",
       "use_cache": true, "v_head_dim": 128, "vocab_size": 102400})",
       {}},
      // zai-org/GLM-4.5: attention_bias and use_qk_norm say true, as the shipped YAML.
      {"glm-4.5",
       R"({"architectures": ["Glm4MoeForCausalLM"], "attention_bias": true, "attention_dropout": 0.0,
       "pad_token_id": 151329, "eos_token_id": [151329, 151336, 151338], "head_dim": 128, "hidden_act": "silu",
       "hidden_size": 5120, "partial_rotary_factor": 0.5, "initializer_range": 0.02, "intermediate_size": 12288,
       "max_position_embeddings": 131072, "model_type": "glm4_moe", "moe_intermediate_size": 1536,
       "norm_topk_prob": true, "num_attention_heads": 96, "n_group": 1, "topk_group": 1, "n_routed_experts": 160,
       "n_shared_experts": 1, "routed_scaling_factor": 2.5, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
       "num_hidden_layers": 92, "num_key_value_heads": 8, "num_nextn_predict_layers": 1, "rms_norm_eps": 1e-05,
       "rope_scaling": null, "rope_theta": 1000000, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
       "transformers_version": "4.54.0", "use_cache": true, "use_qk_norm": true, "vocab_size": 151552})",
       {}},
      // openbmb/MiniCPM4-8B: its card says tie_word_embeddings false; no attention_bias (false).
      {"minicpm4-8b",
       R"({"architectures": ["MiniCPMForCausalLM"], "bos_token_id": 1, "eos_token_id": [2, 73440],
       "pad_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.1,
       "intermediate_size": 16384, "max_position_embeddings": 32768, "model_type": "minicpm",
       "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
       "rope_theta": 10000.0, "torch_dtype": "bfloat16", "transformers_version": "4.46.3", "use_cache": true,
       "vocab_size": 73448, "scale_emb": 12, "dim_model_base": 256, "scale_depth": 1.4,
       "tie_word_embeddings": false})",
       {"attention_bias = false (MiniCPMConfig, openbmb remote code)"}},
  };
  for (const Case& c : cases) {
    INFO(c.shipped);
    const g5sim::Model m = config_json(c.text, c.shipped);
    CHECK(m.parameter_count() == shipped_parameters(c.shipped));
    CHECK(m.class_defaults() == c.taken);
  }
}

TEST_CASE("a key a config.json leaves out means what its model_type's class says", "[models][hf_defaults]") {
  // One small GQA body, read under three model types: num_key_value_heads absent is 4 for Qwen3-MoE,
  // the heads (8, multi-head) for Llama; head_dim absent is 128 for Qwen3, hidden / heads = 64 for
  // Llama. Parameters of one Llama layer: norms 2 x 512, q 512 x 8 x 64 = 262,144, k and v the same
  // (8 KV heads), o 262,144, FFN 3 x 512 x 1,024 = 1,572,864: 2,622,464; embeddings 2 x 100 x 512 =
  // 102,400, final norm 512: 2,725,376.
  const std::string body = R"("hidden_size": 512, "num_hidden_layers": 1, "vocab_size": 100,
      "intermediate_size": 1024, "num_attention_heads": 8)";
  const g5sim::Model llama = config_json(R"({"model_type": "llama", )" + body + "}", "l");
  CHECK(llama.parameter_count() == 2'725'376);
  CHECK(llama.class_defaults() == Defaults{"num_key_value_heads = 8 (LlamaConfig)",
                                           "attention_bias = false (LlamaConfig)",
                                           "tie_word_embeddings = false (LlamaConfig)"});
  // Qwen3: heads of 128 (q 512 x 8 x 128 = 524,288; k, v with Qwen3Config's 32 KV heads refused:
  // 32 does not divide the 8 heads).
  CHECK_THROWS_WITH(config_json(R"({"model_type": "qwen3", )" + body + "}", "q"),
                    Catch::Contains("num_key_value_heads: 32 does not divide num_attention_heads 8"));
  const g5sim::Model qwen3 = config_json(R"({"model_type": "qwen3", "num_key_value_heads": 4, )" + body + "}", "q");
  CHECK(qwen3.class_defaults() == Defaults{"head_dim = 128 (Qwen3Config)", "attention_bias = false (Qwen3Config)",
                                           "tie_word_embeddings = false (Qwen3Config)"});
  // g5sim's own YAML takes no class default: every key it uses is written.
  CHECK_THROWS_WITH(g5sim::Model::from_yaml("name: y\nmodel_type: llama\nhidden_size: 512\nnum_hidden_layers: 1\n"
                                            "vocab_size: 100\nintermediate_size: 1024\nnum_attention_heads: 8\n",
                                            "y.yaml"),
                    Catch::Contains("num_key_value_heads"));
}

TEST_CASE("a model's dimensions are never a class default: the seed's MLA ranks stay required",
          "[models][hf_defaults]") {
  // DeepseekV3Config defaults kv_lora_rank to 512, but a config.json without it is refused, naming
  // the field and the file (seed 003, acceptance 5).
  for (const models::ClassDefault& d : models::class_defaults()) {
    for (const char* dimension :
         {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size", "kv_lora_rank",
          "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank", "n_routed_experts", "num_experts",
          "num_experts_per_tok", "moe_intermediate_size"}) {
      INFO(d.model_type << " " << d.key);
      CHECK(d.key != dimension);
    }
  }
}

}  // namespace test_hf_class_defaults
