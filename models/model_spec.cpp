#include "models/model_spec.hpp"

#include <filesystem>

#include "hw/strict_config.hpp"

namespace models {
namespace {

MlaModelSpec read_fields(hw::ConfigMap& m, MlaModelSpec spec) {
  spec.source = m.source();
  spec.hidden_size = m.positive_int("hidden_size");
  spec.num_attention_heads = m.positive_int("num_attention_heads");
  spec.q_lora_rank = m.positive_int_or_null("q_lora_rank");
  spec.kv_lora_rank = m.positive_int("kv_lora_rank");
  spec.qk_nope_head_dim = m.positive_int("qk_nope_head_dim");
  spec.qk_rope_head_dim = m.positive_int("qk_rope_head_dim");
  spec.v_head_dim = m.positive_int("v_head_dim");
  m.finish();
  return spec;
}

MlaModelSpec read_yaml(hw::ConfigMap m) {
  m.expect_keys({"name", "hidden_size", "num_attention_heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                 "qk_rope_head_dim", "v_head_dim"});
  MlaModelSpec spec;
  spec.name = m.string("name");
  return read_fields(m, std::move(spec));
}

MlaModelSpec read_hf(hw::ConfigMap m, const std::string& fallback_name) {
  MlaModelSpec spec;
  spec.name = fallback_name;
  return read_fields(m, std::move(spec));
}

bool is_json(const std::string& path) { return std::filesystem::path(path).extension() == ".json"; }

}  // namespace

MlaModelSpec load_model(const std::string& path) {
  if (is_json(path)) {
    // Name a config.json by its folder (".../DeepSeek-V3/config.json" -> "DeepSeek-V3").
    const std::filesystem::path p(path);
    std::string name = p.stem().string();
    if (name == "config" && p.has_parent_path() && !p.parent_path().filename().empty()) {
      name = p.parent_path().filename().string();
    }
    return read_hf(hw::ConfigMap::from_file(path, hw::UnknownKeys::ignore), name);
  }
  return read_yaml(hw::ConfigMap::from_file(path, hw::UnknownKeys::reject));
}

MlaModelSpec model_from_yaml(const std::string& text, const std::string& source_name) {
  return read_yaml(hw::ConfigMap::from_string(text, source_name, hw::UnknownKeys::reject));
}

MlaModelSpec model_from_hf_json(const std::string& text, const std::string& source_name) {
  return read_hf(hw::ConfigMap::from_string(text, source_name, hw::UnknownKeys::ignore), source_name);
}

}  // namespace models
