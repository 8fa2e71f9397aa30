#pragma once
// Strict reading of YAML (and JSON, which yaml-cpp parses as YAML) configuration documents.
//
// Contract:
//   - Every value that changes a result is read with a required accessor: a missing key, a wrong
//     type, a non-finite number or a value outside its range throws hw::ConfigError.
//   - Every error names the source and position ("file:line:col", or "<memory:NAME>:line:col"
//     for in-memory YAML text; a dict-built document has no positions), the dotted path of the
//     field, and what was expected, in the message and as an ErrorSite.
//   - finish() rejects keys that nobody read, with a did-you-mean and the list of valid keys,
//     unless the document was opened with UnknownKeys::ignore (Hugging Face config.json files
//     carry many keys the simulator has no use for).
//   - Nothing here has a default value: callers that want one must say so explicitly.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hw/config_error.hpp"

namespace hw {

enum class UnknownKeys { reject, ignore };

class ConfigMap {
 public:
  /// Opens a file; throws ConfigError if it cannot be read or parsed, or is not a mapping.
  static ConfigMap from_file(const std::string& path, UnknownKeys policy);
  /// Parses text held in memory; `source_name` appears in errors as "<memory:source_name>".
  static ConfigMap from_string(const std::string& text, const std::string& source_name, UnknownKeys policy);
  /// A document built in memory (a Python dict) and handed over as JSON text: errors name
  /// `source_name` as given and the dotted field, without line or column (the text is not the
  /// user's).
  static ConfigMap from_document(const std::string& json_text, const std::string& source_name, UnknownKeys policy);

  bool has(std::string_view key) const;

  /// An integer in [lo, hi]: the field's documented plausible range (README, "Config ranges").
  std::uint64_t int_in(std::string_view key, std::uint64_t lo, std::uint64_t hi);
  /// A finite number in [lo, hi]; lo_open: lo itself is excluded (a bandwidth must be > 0).
  double number_in(std::string_view key, double lo, double hi, bool lo_open = false);
  /// `null` means "absent by design" (not stated); otherwise a finite number in [lo, hi].
  std::optional<double> number_in_or_null(std::string_view key, double lo, double hi, bool lo_open = false);
  /// `null` means "absent by design"; otherwise an integer in [lo, hi].
  std::optional<std::uint64_t> int_in_or_null(std::string_view key, std::uint64_t lo, std::uint64_t hi);
  std::uint64_t positive_int(std::string_view key);      ///< integer >= 1
  std::uint64_t non_negative_int(std::string_view key);  ///< integer >= 0
  double positive_number(std::string_view key);          ///< finite, > 0
  double non_negative_number(std::string_view key);      ///< finite, >= 0
  double fraction(std::string_view key);                 ///< finite, in (0, 1]
  std::string string(std::string_view key);              ///< non-empty scalar
  bool boolean(std::string_view key);                    ///< true or false (unquoted)
  /// A non-empty scalar that must be one of `options`.
  std::string one_of(std::string_view key, const std::vector<std::string>& options);
  /// A required sequence of non-empty strings (`[]` is allowed), with no repeats when `distinct`.
  std::vector<std::string> string_list(std::string_view key, bool distinct = true);
  /// A required sequence of distinct integers, each in [lo, hi] (`[]` is allowed).
  std::vector<std::uint64_t> int_list(std::string_view key, std::uint64_t lo, std::uint64_t hi);
  /// The keys of this mapping, in document order.
  std::vector<std::string> keys() const;
  /// The key must be present; `null` means "absent by design" and gives nullopt.
  std::optional<std::uint64_t> positive_int_or_null(std::string_view key);
  /// A required nested mapping.
  ConfigMap map(std::string_view key);
  /// A required, non-empty sequence of mappings (a table's rows): each named "key[i]" in errors.
  std::vector<ConfigMap> map_list(std::string_view key);
  /// Throws ConfigError at `key`'s position: for cross-field checks made by callers.
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

  /// Declares the keys this mapping may hold and rejects any other at once (policy reject), so
  /// that a misspelt key is reported as such, with a did-you-mean, before the field it was meant
  /// to be is reported missing. Call before reading.
  void expect_keys(std::initializer_list<std::string_view> valid) const;
  void expect_keys(const std::vector<std::string_view>& valid) const;
  /// Throws on keys of this mapping that were never read (policy reject). Call after reading.
  void finish() const;

  /// "source:line:col" of this mapping, or of one of its keys.
  std::string where() const;
  std::string where(std::string_view key) const;
  /// The same as data, for ConfigError: source, dotted path, line and column.
  ErrorSite site() const;
  ErrorSite site(std::string_view key) const;
  /// Dotted path of a key, for messages ("gdma.bandwidth_gb_per_s").
  std::string path_of(std::string_view key) const;
  const std::string& source() const;
  /// SHA-256 of the document's text (a file's bytes, the YAML text, the serialised dict), hex.
  const std::string& sha256() const;

 private:
  struct Document {
    std::string source;
    UnknownKeys policy;
    bool positions;      ///< text positions are the user's (a file or YAML text), not a serialised dict's
    std::string sha256;  ///< of the text it was parsed from (hw/sha256.hpp)
  };
  ConfigMap(std::shared_ptr<const Document> doc, YAML::Node node, std::string path);

  YAML::Node scalar_node(std::string_view key);
  [[noreturn]] void report_unknown(const YAML::Node& key_node, const std::vector<std::string>& valid) const;
  template <class T>
  T convert(std::string_view key, const char* expected);

  std::shared_ptr<const Document> doc_;
  YAML::Node node_;
  std::string path_;
  std::set<std::string, std::less<>> read_;
};

/// Edit distance, for did-you-mean suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The closest candidate within a small edit distance, or empty.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace hw
