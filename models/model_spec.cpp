#include "models/model_spec.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "hw/config_error.hpp"
#include "hw/input_file.hpp"
#include "hw/strict_config.hpp"
#include "models/model_family.hpp"
#include "models/run_limits.hpp"

namespace models {
namespace {

// The checkpoint's weight format: YAML's optional weight_dtype; a config.json's
// quantization_config (absent: bf16).
// Also the int8/int4 scale group: YAML's optional weight_group_size (0 = one scale per column),
// a gptq/awq config's optional group_size (-1 = one per column); 128 when not given.
WeightFormat read_weight_format(hw::ConfigMap& m, bool yaml) {
  if (yaml) {
    WeightFormat f;
    if (m.has("weight_dtype")) {
      f.dtype = parse_weight_dtype(m.one_of("weight_dtype", weight_dtype_names()));
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
  // gpt-oss's checkpoints: MXFP4 experts (modules_to_not_convert lists what stays bf16: attention,
  // router, embedding and head; the projections here are its experts' and attention's alike).
  if (method == "mxfp4") return {WeightDtype::mxfp4, kDefaultWeightGroup};
  // NVIDIA Model Optimizer's checkpoints (nvidia/DeepSeek-R1-FP4 and kin): quant_algo names the
  // format of the quantised projections.
  if (method == "modelopt" || method == "modelopt_fp4") {
    const std::string algo = q.string("quant_algo");
    if (algo == "NVFP4" || algo == "W4A16_NVFP4") return {WeightDtype::nvfp4, kDefaultWeightGroup};
    if (algo == "FP8") return {WeightDtype::fp8, kDefaultWeightGroup};
    q.fail("quant_algo", fmt::format("'{}' is not modelled (NVFP4, W4A16_NVFP4, FP8; a MIXED_PRECISION "
                                     "checkpoint: give --weight-dtype)",
                                     algo));
  }
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
  q.fail("quant_method", fmt::format("'{}' is not modelled (fp8, mxfp4, modelopt, gptq, awq)", method));
}

// Whether the checkpoint quantises its routed experts alone: YAML's optional `quantised_layers`
// (all, the default, or experts); a config.json's quantization_config whose
// modules_to_not_convert names the attention (gpt-oss: "model.layers.*.self_attn").
bool read_experts_only(hw::ConfigMap& m, bool yaml, const ModelSpec& s) {
  bool experts_only = false;
  std::string_view key = "quantised_layers";
  if (yaml) {
    experts_only = m.has("quantised_layers") && m.one_of("quantised_layers", {"all", "experts"}) == "experts";
  } else if (m.has("quantization_config")) {
    hw::ConfigMap q = m.map("quantization_config");
    if (q.has("modules_to_not_convert")) {
      key = "modules_to_not_convert";
      for (const std::string& module : q.string_list("modules_to_not_convert")) {
        experts_only = experts_only || module.find("self_attn") != std::string::npos;
      }
      if (experts_only && !s.moe) {
        q.fail(key,
               "names the attention of a model without experts: only routed experts can be quantised "
               "apart from the rest (give --weight-dtype)");
      }
      return experts_only;
    }
  }
  if (experts_only && !s.moe) m.fail(key, "experts: the model has no routed experts");
  return experts_only;
}

// The family (models/model_family.hpp) declares and reads its fields; the name, the model type,
// the hidden size and the checkpoint's weights are every family's.
ModelSpec read_model(hw::ConfigMap m, std::string name, bool yaml) {
  ModelSpec s;
  const ModelFamily& family = family_of(m, yaml, s.model_type);
  Fields fields(m, family.fields, yaml, s.model_type);
  s.name = yaml ? m.string("name") : std::move(name);
  s.source = m.source();
  s.source_sha256 = m.sha256();
  s.hidden_size = fields.count("hidden_size");
  family.build(fields, s);
  s.class_defaults_taken = fields.defaults_taken();
  s.set_weights(read_weight_format(m, yaml));
  s.quantised_experts_only = read_experts_only(m, yaml, s);
  m.finish();
  return s;
}

bool is_json(const std::string& path) { return std::filesystem::path(path).extension() == ".json"; }

// A config.json must be JSON: YAML, which reads it, would also accept a trailing comma, comments or
// unquoted words, which a JSON file that other tools read must not hold.
// What the JSON library says, without its own prefix ("[json.exception.parse_error.101] parse
// error at line 1, column 10: "): the file:line:col in front says where.
std::string json_reason(const std::string& what) {
  const auto column = what.find("column ");
  const auto colon = column == std::string::npos ? what.find("] ") : what.find(": ", column);
  if (colon == std::string::npos) return what;
  return what.substr(colon + 2);
}

void require_json(const std::string& text, const std::string& source) {
  try {
    const nlohmann::json document = nlohmann::json::parse(text);
    (void)document;
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte counts from 1 at the byte that failed (one past the text at its end).
    const std::size_t at = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    int line = 1, col = 1;
    for (std::size_t i = 0; i < at; ++i) {
      line += text[i] == '\n' ? 1 : 0;
      col = text[i] == '\n' ? 1 : col + 1;
    }
    throw hw::ConfigError(fmt::format("{}:{}:{}: not valid JSON: {}", source, line, col, json_reason(e.what())),
                          hw::ErrorSite{source, "", line, col});
  } catch (const nlohmann::json::exception& e) {
    // A number beyond double's range (9e324) and the like: found by tests/fuzz/fuzz_model.
    throw hw::ConfigError(fmt::format("{}: not valid JSON: {}", source, json_reason(e.what())),
                          hw::ErrorSite{source, "", 0, 0});
  }
}

}  // namespace

std::string_view name_of(LayerMixer m) {
  switch (m) {
    case LayerMixer::full_attention: return "full_attention";
    case LayerMixer::sliding_attention: return "sliding_attention";
    case LayerMixer::linear_attention: return "linear_attention";
  }
  return "?";
}

std::uint64_t ModelSpec::layers_of(LayerMixer m) const {
  std::uint64_t n = 0;
  for (std::uint64_t l = 0; l < num_hidden_layers; ++l) n += mixer(l) == m ? 1 : 0;
  return n;
}

bool ModelSpec::is_moe_layer(std::uint64_t l) const {
  if (!moe || l < moe->first_k_dense_replace || (l + 1) % moe->decoder_sparse_step != 0) return false;
  return std::find(moe->mlp_only_layers.begin(), moe->mlp_only_layers.end(), l) == moe->mlp_only_layers.end();
}

std::string ModelSpec::why_dense(std::uint64_t l) const {
  if (!moe) return "the model has no MoE layers";
  if (l < moe->first_k_dense_replace) return fmt::format("first_k_dense_replace = {}", moe->first_k_dense_replace);
  if ((l + 1) % moe->decoder_sparse_step != 0) {
    return fmt::format("decoder_sparse_step = {}", moe->decoder_sparse_step);
  }
  if (!is_moe_layer(l)) return "mlp_only_layers";
  return {};
}

ModelSpec load_model(const std::string& path) {
  if (is_json(path)) {
    // Name a config.json by its folder (".../DeepSeek-V3/config.json" -> "DeepSeek-V3").
    const std::filesystem::path p(path);
    std::string name = p.stem().string();
    if (name == "config" && p.has_parent_path() && !p.parent_path().filename().empty()) {
      name = p.parent_path().filename().string();
    }
    require_json(hw::read_input_file(path, hw::kMaxConfigFileBytes), path);
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
