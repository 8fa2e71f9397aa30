#pragma once
// Model families as registered units. A family is the model_types (and Hugging Face
// `architectures` entries) it reads, its config keys declared once, and how it turns their values
// into a ModelSpec. The declaration is the schema: the strict YAML check accepts exactly the
// declared keys (before anything is read, so a misspelt key is reported as such), and a family can
// read only what it declared (asking for another key is a bug, a logic_error).
//
// Families compose parts (models/families/parts.hpp): GQA attention, MLA attention, a MoE FFN
// under its family's key names with its layer rule, DSA's indexer. One file per family under
// models/families/; model_families() lists them (an explicit registry, no static initialisers).
//
// Adding a family: a file with its Field list and build function, a line in model_families(),
// a shipped YAML and a test of its parameter count.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hw/strict_config.hpp"
#include "models/model_spec.hpp"

namespace models {

/// Where a key may appear: both schemas, only g5sim's YAML, or only a Hugging Face config.json.
enum class KeySchema : std::uint8_t { both, yaml, hugging_face };

enum class FieldKind : std::uint8_t {
  count,          ///< a whole number in [lo, hi]
  count_or_null,  ///< null ("absent by design") or a whole number in [lo, hi]
  number,         ///< a finite number in (lo, hi] (lo_open) or [lo, hi]
  flag,           ///< true or false
  count_list,     ///< a list of distinct whole numbers in [lo, hi]
  text,           ///< one of the words the family accepts (it checks them)
  text_list,      ///< a list of such words (layer_types)
};

struct Field {
  std::string_view key;
  FieldKind kind = FieldKind::count;
  double lo = 0, hi = 0;
  bool optional = false;  ///< may be absent (the family says what absence means)
  KeySchema schema = KeySchema::both;
  bool lo_open = false;
};

/// The declared fields of one document, read strictly through its ConfigMap.
class Fields {
 public:
  /// Declares `fields` (plus the keys every model has) on `map`: with g5sim's schema every other
  /// key is an error at once. A config.json's absent key takes its `model_type`'s config class
  /// default where models/hf_class_defaults.hpp lists one.
  Fields(hw::ConfigMap& map, std::vector<Field> fields, bool yaml, std::string model_type);

  bool yaml() const { return yaml_; }
  /// Present in the document (and declared for its schema).
  bool has(std::string_view key) const;
  /// Present, or absent from a config.json whose config class defines a default.
  bool has_or_default(std::string_view key) const;
  std::uint64_t count(std::string_view key);
  /// A count whose upper bound is another field (first_k_dense_replace <= num_hidden_layers).
  std::uint64_t count(std::string_view key, std::uint64_t hi);
  std::optional<std::uint64_t> count_or_null(std::string_view key);
  double number(std::string_view key);
  bool flag(std::string_view key);
  std::vector<std::uint64_t> count_list(std::string_view key);
  /// One of `options` (absent from a config.json: its class default, if any).
  std::string text(std::string_view key, const std::vector<std::string>& options);
  /// A non-empty list of words, each one of `options`.
  std::vector<std::string> text_list(std::string_view key, const std::vector<std::string>& options);
  /// An optional field: its value, or nullopt when absent.
  std::optional<std::uint64_t> maybe_count(std::string_view key);
  std::optional<bool> maybe_flag(std::string_view key);
  std::optional<double> maybe_number(std::string_view key);
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;
  hw::ConfigMap& map() { return map_; }
  /// The class defaults taken so far, "key = value (ConfigClass)", in the order read.
  const std::vector<std::string>& defaults_taken() const { return taken_; }

 private:
  const Field& declared(std::string_view key, FieldKind kind) const;
  /// The class default's text for an absent key of a config.json (noted as taken), else nullopt.
  std::optional<std::string> absent_default(std::string_view key);

  hw::ConfigMap& map_;
  std::vector<Field> fields_;
  bool yaml_;
  std::string model_type_;
  std::vector<std::string> taken_;
};

struct ModelFamily {
  std::string_view name;
  std::vector<std::string_view> model_types;
  /// Hugging Face `architectures` entries, each with the model_type it stands for (a config.json
  /// of remote code may have no model_type).
  std::vector<std::pair<std::string_view, std::string_view>> architectures;
  std::vector<Field> fields;
  /// Fills the family's part of `spec` (model_type, name and weights are set by the reader).
  void (*build)(Fields& fields, ModelSpec& spec);
};

/// Every family, in the order errors list their model types.
const std::vector<const ModelFamily*>& model_families();

/// The family of a document: by model_type, or (a config.json without one) by its architectures.
/// Sets `model_type`. Throws a ConfigError naming the keys and the supported values.
const ModelFamily& family_of(hw::ConfigMap& map, bool yaml, std::string& model_type);

}  // namespace models
