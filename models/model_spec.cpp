#include "models/model_spec.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <vector>

#include "hw/config_error.hpp"
#include "hw/input_file.hpp"
#include "hw/strict_config.hpp"
#include "models/run_limits.hpp"

namespace models {
namespace {

enum class Family { deepseek, deepseek_dsa, llama, chatglm };

// Plausible ranges of the model's fields (README, "Config ranges"): above every published model,
// low enough that byte and FLOP counts of a whole step stay far inside 64 bits.
constexpr std::uint64_t kMaxWidth = std::uint64_t{1} << 20;  // hidden, FFN, LoRA ranks
constexpr std::uint64_t kMaxVocab = std::uint64_t{1} << 24;
constexpr std::uint64_t kMaxExperts = 65536;

Family family_of(hw::ConfigMap& m) {
  const std::string type = m.string("model_type");
  if (type == "deepseek_v2" || type == "deepseek_v3") return Family::deepseek;
  if (type == "deepseek_v32") return Family::deepseek_dsa;
  if (type == "llama" || type == "mistral" || type == "qwen2") return Family::llama;
  if (type == "chatglm") return Family::chatglm;
  m.fail("model_type", fmt::format("'{}' is not supported (supported: deepseek_v2, deepseek_v3, "
                                   "deepseek_v32, llama, mistral, qwen2, chatglm)",
                                   type));
}

// The keys each family reads, for the strict YAML check (HF files skip it).
std::vector<std::string_view> keys_of(Family f, bool yaml) {
  std::vector<std::string_view> keys;
  keys.reserve(24);
  auto add = [&keys](std::initializer_list<std::string_view> names) {
    for (std::string_view n : names) keys.push_back(n);
  };
  add({"model_type", "hidden_size", "num_attention_heads"});
  if (yaml) add({"name", "weight_dtype", "weight_group_size"});
  if (f == Family::chatglm) {
    add({"num_layers", "padded_vocab_size", "ffn_hidden_size", "multi_query_attention", "multi_query_group_num",
         "kv_channels", "add_qkv_bias"});
    return keys;
  }
  add({"num_hidden_layers", "vocab_size", "intermediate_size"});
  if (f == Family::llama) {
    add({"num_key_value_heads", "head_dim", "qkv_bias", "tie_word_embeddings"});
  } else {
    add({"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_routed_experts",
         "num_experts_per_tok", "n_shared_experts", "moe_intermediate_size", "first_k_dense_replace",
         "routed_scaling_factor"});
  }
  if (f == Family::deepseek_dsa) add({"index_n_heads", "index_head_dim", "index_topk"});
  return keys;
}

// The checkpoint's weight format: YAML's optional weight_dtype; a config.json's
// quantization_config (absent: bf16).
// Also the int8/int4 scale group: YAML's optional weight_group_size (0 = one scale per column),
// a gptq/awq config's optional group_size (-1 = one per column); 128 when not given.
WeightFormat read_weight_format(hw::ConfigMap& m, bool yaml) {
  if (yaml) {
    WeightFormat f;
    if (m.has("weight_dtype")) {
      f.dtype = parse_weight_dtype(m.one_of("weight_dtype", {"bf16", "fp16", "fp8", "int8", "int4"}));
    }
    if (m.has("weight_group_size")) {
      f.group = m.int_in("weight_group_size", 0, kMaxWeightGroup);
      if (f.dtype != WeightDtype::int8 && f.dtype != WeightDtype::int4) {
        m.fail("weight_group_size", "applies to int8 and int4 weights only (weight_dtype)");
      }
    }
    return f;
  }
  if (!m.has("quantization_config")) return {};
  hw::ConfigMap q = m.map("quantization_config");
  const std::string method = q.string("quant_method");
  if (method == "fp8") return {WeightDtype::fp8, kDefaultWeightGroup};
  if (method == "gptq" || method == "awq") {
    const std::uint64_t bits = q.int_in("bits", 1, 64);
    if (bits != 4 && bits != 8) q.fail("bits", fmt::format("{}-bit weights are not modelled (4 or 8)", bits));
    WeightFormat f{bits == 4 ? WeightDtype::int4 : WeightDtype::int8, kDefaultWeightGroup};
    if (q.has("group_size")) {
      const double g = q.number_in("group_size", -1, static_cast<double>(kMaxWeightGroup));
      if (g != -1 && (g < 1 || g != static_cast<double>(static_cast<std::uint64_t>(g)))) {
        q.fail("group_size",
               fmt::format("expected -1 (per column) or a whole number 1..{}, got {}", kMaxWeightGroup, g));
      }
      f.group = g == -1 ? 0 : static_cast<std::uint64_t>(g);
    }
    return f;
  }
  q.fail("quant_method", fmt::format("'{}' is not modelled (fp8, gptq, awq)", method));
}

ModelSpec read_model(hw::ConfigMap m, std::string name, bool yaml) {
  const Family family = family_of(m);
  const auto keys = keys_of(family, yaml);
  m.expect_keys(keys);
  ModelSpec s;
  s.name = yaml ? m.string("name") : std::move(name);
  s.source = m.source();
  s.model_type = m.string("model_type");
  s.hidden_size = m.int_in("hidden_size", 1, kMaxWidth);
  if (family == Family::chatglm) {
    // ChatGLM's own names (its config.json), mapped onto the GQA model.
    s.attention = AttentionKind::gqa;
    s.num_hidden_layers = m.int_in("num_layers", 1, kMaxLayers);
    s.vocab_size = m.int_in("padded_vocab_size", 1, kMaxVocab);
    s.intermediate_size = m.int_in("ffn_hidden_size", 1, kMaxWidth);
    s.num_attention_heads = m.int_in("num_attention_heads", 1, kMaxHeads);
    const bool grouped = m.boolean("multi_query_attention");
    const std::uint64_t groups = m.int_in("multi_query_group_num", 1, kMaxHeads);
    s.num_key_value_heads = grouped ? groups : s.num_attention_heads;
    s.head_dim = m.int_in("kv_channels", 1, kMaxHeadDim);
    s.qkv_bias = m.boolean("add_qkv_bias");
    if (s.num_attention_heads % s.num_key_value_heads != 0) {
      m.fail("multi_query_group_num",
             fmt::format("{} does not divide num_attention_heads {}", s.num_key_value_heads, s.num_attention_heads));
    }
    s.set_weights(read_weight_format(m, yaml));
    m.finish();
    return s;
  }
  s.num_hidden_layers = m.int_in("num_hidden_layers", 1, kMaxLayers);
  s.vocab_size = m.int_in("vocab_size", 1, kMaxVocab);
  s.intermediate_size = m.int_in("intermediate_size", 1, kMaxWidth);
  s.num_attention_heads = m.int_in("num_attention_heads", 1, kMaxHeads);
  if (family == Family::llama) {
    s.attention = AttentionKind::gqa;
    s.num_key_value_heads = m.int_in("num_key_value_heads", 1, kMaxHeads);
    if (m.has("head_dim")) {
      s.head_dim = m.int_in("head_dim", 1, kMaxHeadDim);
    } else if (s.hidden_size % s.num_attention_heads == 0) {
      s.head_dim = s.hidden_size / s.num_attention_heads;  // Hugging Face's definition
    } else {
      throw hw::ConfigError(fmt::format("{}: missing required field 'head_dim' (hidden_size {} is not a multiple of "
                                        "num_attention_heads {})",
                                        m.where(), s.hidden_size, s.num_attention_heads),
                            m.site("head_dim"));
    }
    if (s.num_attention_heads % s.num_key_value_heads != 0) {
      m.fail("num_key_value_heads",
             fmt::format("{} does not divide num_attention_heads {}", s.num_key_value_heads, s.num_attention_heads));
    }
    // Qwen2 has a bias on q, k and v; Llama says so in attention_bias; a YAML file may say qkv_bias.
    if (m.has("qkv_bias") && yaml) {
      s.qkv_bias = m.boolean("qkv_bias");
    } else if (!yaml && m.has("attention_bias")) {
      s.qkv_bias = m.boolean("attention_bias");
    } else {
      s.qkv_bias = s.model_type == "qwen2";
    }
    s.tie_word_embeddings = m.has("tie_word_embeddings") && m.boolean("tie_word_embeddings");
  } else {
    s.attention = AttentionKind::mla;
    s.q_lora_rank = m.int_in_or_null("q_lora_rank", 1, kMaxWidth);
    s.kv_lora_rank = m.int_in("kv_lora_rank", 1, kMaxHeadDim);
    s.qk_nope_head_dim = m.int_in("qk_nope_head_dim", 1, kMaxHeadDim);
    s.qk_rope_head_dim = m.int_in("qk_rope_head_dim", 1, kMaxHeadDim);
    s.v_head_dim = m.int_in("v_head_dim", 1, kMaxHeadDim);
    MoeSpec moe;
    moe.n_routed_experts = m.int_in("n_routed_experts", 1, kMaxExperts);
    moe.num_experts_per_tok = m.int_in("num_experts_per_tok", 1, kMaxExperts);
    moe.n_shared_experts = m.int_in("n_shared_experts", 0, kMaxExperts);
    moe.moe_intermediate_size = m.int_in("moe_intermediate_size", 1, kMaxWidth);
    moe.first_k_dense_replace = m.int_in("first_k_dense_replace", 0, s.num_hidden_layers);
    moe.routed_scaling_factor = m.number_in("routed_scaling_factor", 0, 1e6, true);
    if (moe.num_experts_per_tok > moe.n_routed_experts) {
      m.fail("num_experts_per_tok",
             fmt::format("{} exceeds n_routed_experts {}", moe.num_experts_per_tok, moe.n_routed_experts));
    }
    s.moe = moe;
    if (family == Family::deepseek_dsa) {
      DsaSpec dsa;
      dsa.index_n_heads = m.int_in("index_n_heads", 1, kMaxHeads);
      dsa.index_head_dim = m.int_in("index_head_dim", 1, kMaxHeadDim);
      dsa.index_topk = m.int_in("index_topk", 1, kMaxContext);
      s.dsa = dsa;
    }
  }
  s.set_weights(read_weight_format(m, yaml));
  m.finish();
  return s;
}

bool is_json(const std::string& path) { return std::filesystem::path(path).extension() == ".json"; }

// A config.json must be JSON: YAML, which reads it, would also accept a trailing comma, comments or
// unquoted words, which a JSON file that other tools read must not hold.
void require_json(const std::string& text, const std::string& source) {
  try {
    const nlohmann::json document = nlohmann::json::parse(text);
    (void)document;
  } catch (const nlohmann::json::parse_error& e) {
    throw hw::ConfigError(fmt::format("{}: not valid JSON at byte {}: {}", source, e.byte, e.what()),
                          hw::ErrorSite{source, "", 0, 0});
  } catch (const nlohmann::json::exception& e) {
    // A number beyond double's range (9e324) and the like: found by tests/fuzz/fuzz_model.
    throw hw::ConfigError(fmt::format("{}: not valid JSON: {}", source, e.what()), hw::ErrorSite{source, "", 0, 0});
  }
}

}  // namespace

ModelSpec load_model(const std::string& path) {
  if (is_json(path)) {
    // Name a config.json by its folder (".../DeepSeek-V3/config.json" -> "DeepSeek-V3").
    const std::filesystem::path p(path);
    std::string name = p.stem().string();
    if (name == "config" && p.has_parent_path() && !p.parent_path().filename().empty()) {
      name = p.parent_path().filename().string();
    }
    require_json(hw::read_input_file(path), path);
    return read_model(hw::ConfigMap::from_file(path, hw::UnknownKeys::ignore), name, false);
  }
  return read_model(hw::ConfigMap::from_file(path, hw::UnknownKeys::reject), "", true);
}

ModelSpec model_from_yaml(const std::string& text, const std::string& source_name) {
  return read_model(hw::ConfigMap::from_string(text, source_name, hw::UnknownKeys::reject), "", true);
}

ModelSpec model_from_document(const std::string& json_text, const std::string& source_name, ModelSchema schema) {
  const bool yaml = schema == ModelSchema::g5sim;
  return read_model(
      hw::ConfigMap::from_document(json_text, source_name, yaml ? hw::UnknownKeys::reject : hw::UnknownKeys::ignore),
      source_name, yaml);
}

ModelSpec model_from_hf_json(const std::string& text, const std::string& source_name) {
  require_json(text, "<memory:" + source_name + ">");
  return read_model(hw::ConfigMap::from_string(text, source_name, hw::UnknownKeys::ignore), source_name, false);
}

}  // namespace models
