#include "models/model_family.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "models/families/families.hpp"
#include "models/families/parts.hpp"
#include "models/hf_class_defaults.hpp"
#include "models/run_limits.hpp"

namespace models {

const std::vector<const ModelFamily*>& model_families() {
  static const std::vector<const ModelFamily*> registry{
      &families::deepseek(), &families::deepseek_dsa(), &families::llama(),      &families::chatglm(),
      &families::qwen3(),    &families::qwen3_moe(),    &families::glm4_moe(),   &families::minicpm(),
      &families::minicpm3(), &families::gpt_oss(),      &families::qwen3_next(),
  };
  return registry;
}

namespace {

std::string supported_types() {
  std::vector<std::string> types;
  for (const ModelFamily* f : model_families()) {
    for (std::string_view t : f->model_types) types.emplace_back(t);
  }
  return fmt::format("{}", fmt::join(types, ", "));
}

const ModelFamily* family_named(const std::string& model_type) {
  for (const ModelFamily* f : model_families()) {
    if (std::find(f->model_types.begin(), f->model_types.end(), model_type) != f->model_types.end()) return f;
  }
  return nullptr;
}

}  // namespace

const ModelFamily& family_of(hw::ConfigMap& map, bool yaml, std::string& model_type) {
  if (!yaml && !map.has("model_type") && map.has("architectures")) {
    // Remote-code configs may name only their class: the first entry a family knows decides.
    for (const std::string& architecture : map.string_list("architectures")) {
      for (const ModelFamily* f : model_families()) {
        for (const auto& [name, type] : f->architectures) {
          if (name == architecture) {
            model_type = std::string(type);
            return *f;
          }
        }
      }
    }
    map.fail("architectures", fmt::format("the config has no model_type, and no entry names a supported model "
                                          "(model_type one of {})",
                                          supported_types()));
  }
  model_type = map.string("model_type");
  if (const ModelFamily* f = family_named(model_type)) return *f;
  map.fail("model_type", fmt::format("'{}' is not supported (supported: {})", model_type, supported_types()));
}

Fields::Fields(hw::ConfigMap& map, std::vector<Field> fields, bool yaml, std::string model_type)
    : map_(map), fields_(std::move(fields)), yaml_(yaml), model_type_(std::move(model_type)) {
  // Every model's: its size and heads (model_type and the YAML's name and weights are read apart).
  fields_.insert(fields_.begin(), {{"hidden_size", FieldKind::count, 1, families::kMaxWidth},
                                   {"num_attention_heads", FieldKind::count, 1, double(kMaxHeads)}});
  std::vector<std::string_view> keys{"model_type"};
  if (yaml) keys.insert(keys.end(), {"name", "weight_dtype", "weight_group_size", "quantised_layers"});
  for (const Field& f : fields_) {
    if (f.schema == KeySchema::both || (f.schema == KeySchema::yaml) == yaml) keys.push_back(f.key);
  }
  map_.expect_keys(keys);
}

const Field& Fields::declared(std::string_view key, FieldKind kind) const {
  for (const Field& f : fields_) {
    if (f.key == key && f.kind == kind) return f;
  }
  throw std::logic_error(fmt::format("model field '{}' read without being declared as such", key));
}

bool Fields::has(std::string_view key) const {
  for (const Field& f : fields_) {
    if (f.key == key) return (f.schema == KeySchema::both || (f.schema == KeySchema::yaml) == yaml_) && map_.has(key);
  }
  throw std::logic_error(fmt::format("model field '{}' asked for without being declared", key));
}

std::optional<std::string> Fields::absent_default(std::string_view key) {
  if (yaml_ || map_.has(key)) return std::nullopt;
  const std::optional<ClassDefault> d = class_default(model_type_, key);
  if (!d) return std::nullopt;
  std::string value(d->value);
  // "=KEY": the value of another key of the file (num_key_value_heads = num_attention_heads).
  if (value.front() == '=') value = std::to_string(count(value.substr(1)));
  const std::string note = fmt::format("{} = {} ({})", key, value, d->config_class);
  if (std::find(taken_.begin(), taken_.end(), note) == taken_.end()) taken_.push_back(note);
  return value;
}

std::uint64_t Fields::count(std::string_view key) { return count(key, std::numeric_limits<std::uint64_t>::max()); }

std::uint64_t Fields::count(std::string_view key, std::uint64_t hi) {
  const Field& f = declared(key, FieldKind::count);
  // A class default is in range by the table's construction; its bound by another field
  // (first_k_dense_replace <= num_hidden_layers) is still checked.
  if (const std::optional<std::string> d = absent_default(key)) {
    const std::uint64_t v = std::stoull(*d);
    if (v > hi) fail(key, fmt::format("absent, and its class default {} exceeds {}", v, hi));
    return v;
  }
  return map_.int_in(key, static_cast<std::uint64_t>(f.lo), std::min(hi, static_cast<std::uint64_t>(f.hi)));
}

std::optional<std::uint64_t> Fields::count_or_null(std::string_view key) {
  const Field& f = declared(key, FieldKind::count_or_null);
  return map_.int_in_or_null(key, static_cast<std::uint64_t>(f.lo), static_cast<std::uint64_t>(f.hi));
}

double Fields::number(std::string_view key) {
  const Field& f = declared(key, FieldKind::number);
  if (const std::optional<std::string> d = absent_default(key)) return std::stod(*d);
  return map_.number_in(key, f.lo, f.hi, f.lo_open);
}

bool Fields::flag(std::string_view key) {
  declared(key, FieldKind::flag);
  if (const std::optional<std::string> d = absent_default(key)) return *d == "true";
  return map_.boolean(key);
}

std::vector<std::uint64_t> Fields::count_list(std::string_view key) {
  const Field& f = declared(key, FieldKind::count_list);
  if (absent_default(key)) return {};  // the only list default is "[]" (mlp_only_layers)
  return map_.int_list(key, static_cast<std::uint64_t>(f.lo), static_cast<std::uint64_t>(f.hi));
}

std::string Fields::text(std::string_view key, const std::vector<std::string>& options) {
  declared(key, FieldKind::text);
  if (const std::optional<std::string> d = absent_default(key)) return *d;
  return map_.one_of(key, options);
}

std::vector<std::string> Fields::text_list(std::string_view key, const std::vector<std::string>& options) {
  declared(key, FieldKind::text_list);
  std::vector<std::string> words = map_.string_list(key, false);
  if (words.empty()) fail(key, "expected a non-empty list");
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (std::find(options.begin(), options.end(), words[i]) == options.end()) {
      fail(key, fmt::format("entry {} is '{}', expected one of {}", i, words[i], fmt::join(options, ", ")));
    }
  }
  return words;
}

bool Fields::has_or_default(std::string_view key) const {
  return has(key) || (!yaml_ && class_default(model_type_, key).has_value());
}

std::optional<std::uint64_t> Fields::maybe_count(std::string_view key) {
  if (!has_or_default(key)) return std::nullopt;
  return count(key);
}

std::optional<bool> Fields::maybe_flag(std::string_view key) {
  if (!has_or_default(key)) return std::nullopt;
  return flag(key);
}

std::optional<double> Fields::maybe_number(std::string_view key) {
  if (!has_or_default(key)) return std::nullopt;
  return number(key);
}

void Fields::fail(std::string_view key, const std::string& message) const {
  // A value the file does not hold must say where it came from.
  const std::string prefix = fmt::format("{} = ", key);
  for (const std::string& note : taken_) {
    if (note.compare(0, prefix.size(), prefix) == 0) {
      map_.fail(key, fmt::format("{} (absent from the file: {})", message, note));
    }
  }
  map_.fail(key, message);
}

}  // namespace models
