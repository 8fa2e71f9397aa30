#include "models/model_family.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/families/families.hpp"
#include "models/families/parts.hpp"
#include "models/run_limits.hpp"

namespace models {

const std::vector<const ModelFamily*>& model_families() {
  static const std::vector<const ModelFamily*> registry{
      &families::deepseek(), &families::deepseek_dsa(), &families::llama(),
      &families::chatglm(),  &families::qwen3(),        &families::qwen3_moe(),
      &families::glm4_moe(), &families::minicpm(),      &families::minicpm3(),
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

Fields::Fields(hw::ConfigMap& map, std::vector<Field> fields, bool yaml)
    : map_(map), fields_(std::move(fields)), yaml_(yaml) {
  // Every model's: its size and heads (model_type and the YAML's name and weights are read apart).
  fields_.insert(fields_.begin(), {{"hidden_size", FieldKind::count, 1, families::kMaxWidth},
                                   {"num_attention_heads", FieldKind::count, 1, double(kMaxHeads)}});
  std::vector<std::string_view> keys{"model_type"};
  if (yaml) keys.insert(keys.end(), {"name", "weight_dtype", "weight_group_size"});
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

std::uint64_t Fields::count(std::string_view key) {
  const Field& f = declared(key, FieldKind::count);
  return map_.int_in(key, static_cast<std::uint64_t>(f.lo), static_cast<std::uint64_t>(f.hi));
}

std::uint64_t Fields::count(std::string_view key, std::uint64_t hi) {
  const Field& f = declared(key, FieldKind::count);
  return map_.int_in(key, static_cast<std::uint64_t>(f.lo), std::min(hi, static_cast<std::uint64_t>(f.hi)));
}

std::optional<std::uint64_t> Fields::count_or_null(std::string_view key) {
  const Field& f = declared(key, FieldKind::count_or_null);
  return map_.int_in_or_null(key, static_cast<std::uint64_t>(f.lo), static_cast<std::uint64_t>(f.hi));
}

double Fields::number(std::string_view key) {
  const Field& f = declared(key, FieldKind::number);
  return map_.number_in(key, f.lo, f.hi, f.lo_open);
}

bool Fields::flag(std::string_view key) {
  declared(key, FieldKind::flag);
  return map_.boolean(key);
}

std::vector<std::uint64_t> Fields::count_list(std::string_view key) {
  const Field& f = declared(key, FieldKind::count_list);
  return map_.int_list(key, static_cast<std::uint64_t>(f.lo), static_cast<std::uint64_t>(f.hi));
}

std::optional<std::uint64_t> Fields::maybe_count(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return count(key);
}

std::optional<bool> Fields::maybe_flag(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return flag(key);
}

std::optional<double> Fields::maybe_number(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return number(key);
}

void Fields::fail(std::string_view key, const std::string& message) const { map_.fail(key, message); }

}  // namespace models
