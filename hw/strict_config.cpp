#include "hw/strict_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "hw/config_error.hpp"
#include "hw/input_file.hpp"
#include "hw/number_text.hpp"
#include "hw/sha256.hpp"

namespace hw {
namespace {

// "source:line:col", or the source alone when it has no positions (a document built in memory).
std::string mark_text(const std::string& source, const YAML::Mark& mark, bool positions = true) {
  if (mark.is_null() || !positions) return source;
  return fmt::format("{}:{}:{}", source, mark.line + 1, mark.column + 1);
}

ErrorSite site_at(const std::string& source, const YAML::Mark& mark, std::string field, bool positions = true) {
  ErrorSite site{source, std::move(field)};
  if (!mark.is_null() && positions) {
    site.line = mark.line + 1;
    site.column = mark.column + 1;
  }
  return site;
}

// The most items (lines, list and mapping entries) a config may have: 4,096, or one per 25 bytes
// of a larger text. The parser holds ~500 bytes per node, so this keeps a config's memory within
// ~20x its size (and a few MB at most), where an unused 7.5M-element array of a 15 MB config.json
// took 3.5 GB. Real configs have a few hundred items at 20-30 bytes each.
constexpr std::size_t kMinItemBudget = 4096;
constexpr std::size_t kBytesPerItem = 25;

void check_item_count(const std::string& text, const std::string& source) {
  const std::size_t items = static_cast<std::size_t>(std::count_if(
      text.begin(), text.end(), [](char c) { return c == ',' || c == '\n' || c == '[' || c == '{' || c == '-'; }));
  const std::size_t budget = std::max(kMinItemBudget, text.size() / kBytesPerItem);
  if (items > budget) {
    throw ConfigError(fmt::format("{}: {} lines and list or mapping items in {} bytes, more than a config has ({} at "
                                  "most): not read",
                                  source, items, text.size(), budget),
                      ErrorSite{source, "", 0, 0});
  }
}

YAML::Node parse_root(const std::string& text, const std::string& source, bool positions) {
  check_item_count(text, source);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}: parse error: {}", mark_text(source, e.mark, positions), e.msg),
                      site_at(source, e.mark, "", positions));
  }
  if (!root.IsMap()) {
    throw ConfigError(fmt::format("{}: expected a mapping at the top level", positions ? source + ":1:1" : source),
                      ErrorSite{source, "", positions ? 1 : 0, positions ? 1 : 0});
  }
  return root;
}

}  // namespace

ConfigMap::ConfigMap(std::shared_ptr<const Document> doc, YAML::Node node, std::string path)
    : doc_(std::move(doc)), node_(std::move(node)), path_(std::move(path)) {
  // YAML forbids a key twice in a mapping; yaml-cpp keeps both and lookups would take the first.
  std::vector<std::pair<std::string, YAML::Mark>> seen;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) {
      throw ConfigError(
          fmt::format("{}: {}: a key must be a plain name, not a list or a mapping",
                      mark_text(doc_->source, kv.first.Mark(), doc_->positions), path_.empty() ? "(top level)" : path_),
          site_at(doc_->source, kv.first.Mark(), path_, doc_->positions));
    }
    const std::string& key = kv.first.Scalar();
    for (const auto& [name, mark] : seen) {
      if (name == key) {
        throw ConfigError(
            fmt::format("{}: {}: duplicate key (first at line {})",
                        mark_text(doc_->source, kv.first.Mark(), doc_->positions), path_of(key), mark.line + 1),
            site_at(doc_->source, kv.first.Mark(), path_of(key), doc_->positions));
      }
    }
    seen.emplace_back(key, kv.first.Mark());
  }
}

ConfigMap ConfigMap::from_string(const std::string& text, const std::string& source_name, UnknownKeys policy) {
  const std::string source = "<memory:" + source_name + ">";
  auto doc = std::make_shared<const Document>(Document{source, policy, true, sha256_hex(text)});
  return ConfigMap(doc, parse_root(text, source, true), "");
}

ConfigMap ConfigMap::from_document(const std::string& json_text, const std::string& source_name, UnknownKeys policy) {
  auto doc = std::make_shared<const Document>(Document{source_name, policy, false, sha256_hex(json_text)});
  return ConfigMap(doc, parse_root(json_text, source_name, false), "");
}

ConfigMap ConfigMap::from_file(const std::string& path, UnknownKeys policy) {
  const std::string text = read_input_file(path, kMaxConfigFileBytes);
  auto doc = std::make_shared<const Document>(Document{path, policy, true, sha256_hex(text)});
  return ConfigMap(doc, parse_root(text, path, true), "");
}

const std::string& ConfigMap::source() const { return doc_->source; }

const std::string& ConfigMap::sha256() const { return doc_->sha256; }

std::string ConfigMap::where() const { return mark_text(doc_->source, node_.Mark(), doc_->positions); }

std::string ConfigMap::where(std::string_view key) const {
  for (const auto& kv : node_) {
    if (kv.first.Scalar() == key) return mark_text(doc_->source, kv.first.Mark(), doc_->positions);
  }
  return where();
}

ErrorSite ConfigMap::site() const { return site_at(doc_->source, node_.Mark(), path_, doc_->positions); }

ErrorSite ConfigMap::site(std::string_view key) const {
  for (const auto& kv : node_) {
    if (kv.first.Scalar() == key) return site_at(doc_->source, kv.first.Mark(), path_of(key), doc_->positions);
  }
  return site_at(doc_->source, node_.Mark(), path_of(key), doc_->positions);
}

std::string ConfigMap::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool ConfigMap::has(std::string_view key) const {
  for (const auto& kv : node_) {
    if (kv.first.Scalar() == key) return true;
  }
  return false;
}

void ConfigMap::fail(std::string_view key, const std::string& message) const {
  throw ConfigError(fmt::format("{}: {}: {}", where(key), path_of(key), message), site(key));
}

YAML::Node ConfigMap::scalar_node(std::string_view key) {
  read_.emplace(key);
  for (const auto& kv : node_) {
    if (kv.first.Scalar() == key) {
      if (!kv.second.IsScalar() && !kv.second.IsNull()) fail(key, "expected a single value");
      return kv.second;
    }
  }
  throw ConfigError(fmt::format("{}: missing required field '{}'{}", where(), path_of(key),
                                path_.empty() ? "" : fmt::format(" (in '{}')", path_)),
                    site(key));
}

void ConfigMap::expect_keys(std::initializer_list<std::string_view> valid) const {
  expect_keys(std::vector<std::string_view>(valid));
}

void ConfigMap::expect_keys(const std::vector<std::string_view>& valid) const {
  if (doc_->policy == UnknownKeys::ignore) return;
  std::vector<std::string> names(valid.begin(), valid.end());
  std::sort(names.begin(), names.end());
  for (const auto& kv : node_) {
    const std::string& key = kv.first.Scalar();
    if (std::find(names.begin(), names.end(), key) != names.end()) continue;
    report_unknown(kv.first, names);
  }
}

void ConfigMap::report_unknown(const YAML::Node& key_node, const std::vector<std::string>& valid) const {
  const std::string& key = key_node.Scalar();
  std::string hint;
  if (auto near = closest_match(key, valid); !near.empty()) hint = fmt::format(" (did you mean '{}'?)", near);
  throw ConfigError(
      fmt::format("{}: {}: unknown key{}; valid keys: {}", mark_text(doc_->source, key_node.Mark(), doc_->positions),
                  path_of(key), hint, fmt::join(valid, ", ")),
      site_at(doc_->source, key_node.Mark(), path_of(key), doc_->positions));
}

template <class T>
T ConfigMap::convert(std::string_view key, const char* expected) {
  YAML::Node value = scalar_node(key);
  if (value.IsNull()) fail(key, fmt::format("expected {}, got null", expected));
  // A quoted scalar ("64", '1e9') is a string, in YAML and in JSON alike, even when it looks numeric.
  if (value.Tag() == "!") fail(key, fmt::format("expected {}, got the string \"{}\"", expected, value.Scalar()));
  try {
    const T v = value.as<T>();
    // A number no physical quantity of a config comes near, that arithmetic would lose.
    if constexpr (std::is_floating_point_v<T>) {
      if (is_subnormal(v)) fail(key, subnormal_refused(value.Scalar()));
    }
    return v;
  } catch (const YAML::BadConversion&) {
    fail(key, fmt::format("expected {}, got '{}'", expected, value.Scalar()));
  }
}

std::uint64_t ConfigMap::int_in(std::string_view key, std::uint64_t lo, std::uint64_t hi) {
  YAML::Node value = scalar_node(key);
  const std::string& text = value.Scalar();
  // An integer too large for the parser is still an integer: say it is out of range.
  if (!value.IsNull() && value.Tag() != "!" && text.size() > 18 &&
      text.find_first_not_of("0123456789") == std::string::npos) {
    fail(key, fmt::format("{} is outside the plausible range {}..{}", text, lo, hi));
  }
  const auto v = convert<long long>(key, "an integer");
  if (lo == 1 && v < 1) fail(key, fmt::format("must be a positive integer, got {}", v));
  if (lo == 0 && v < 0) fail(key, fmt::format("must be >= 0, got {}", v));
  if (v < 0 || static_cast<std::uint64_t>(v) < lo || static_cast<std::uint64_t>(v) > hi) {
    fail(key, fmt::format("{} is outside the plausible range {}..{}", v, lo, hi));
  }
  return static_cast<std::uint64_t>(v);
}

double ConfigMap::number_in(std::string_view key, double lo, double hi, bool lo_open) {
  const auto v = convert<double>(key, "a number");
  if (!std::isfinite(v)) fail(key, "must be a finite number");
  // Below zero the plain reason reads best; the range is for implausible magnitudes.
  if ((lo > 0 || lo_open) && v <= 0) fail(key, fmt::format("must be > 0, got {}", v));
  if (lo == 0 && !lo_open && v < 0) fail(key, fmt::format("must be >= 0, got {}", v));
  if ((lo_open ? v <= lo : v < lo) || v > hi) {
    fail(key, fmt::format("{} is outside the plausible range {}{}..{}", v, lo_open ? "above " : "", lo, hi));
  }
  return v;
}

std::optional<double> ConfigMap::number_in_or_null(std::string_view key, double lo, double hi, bool lo_open) {
  YAML::Node value = scalar_node(key);
  if (value.IsNull()) return std::nullopt;
  read_.erase(std::string(key));
  return number_in(key, lo, hi, lo_open);
}

std::optional<std::uint64_t> ConfigMap::int_in_or_null(std::string_view key, std::uint64_t lo, std::uint64_t hi) {
  YAML::Node value = scalar_node(key);
  if (value.IsNull()) return std::nullopt;
  read_.erase(std::string(key));
  return int_in(key, lo, hi);
}

std::uint64_t ConfigMap::positive_int(std::string_view key) {
  const auto v = convert<long long>(key, "an integer");
  if (v <= 0) fail(key, fmt::format("must be a positive integer, got {}", v));
  return static_cast<std::uint64_t>(v);
}

std::uint64_t ConfigMap::non_negative_int(std::string_view key) {
  const auto v = convert<long long>(key, "an integer");
  if (v < 0) fail(key, fmt::format("must be >= 0, got {}", v));
  return static_cast<std::uint64_t>(v);
}

double ConfigMap::positive_number(std::string_view key) {
  const auto v = convert<double>(key, "a number");
  if (!std::isfinite(v)) fail(key, "must be a finite number");
  if (v <= 0) fail(key, fmt::format("must be > 0, got {}", v));
  return v;
}

double ConfigMap::non_negative_number(std::string_view key) {
  const auto v = convert<double>(key, "a number");
  if (!std::isfinite(v)) fail(key, "must be a finite number");
  if (v < 0) fail(key, fmt::format("must be >= 0, got {}", v));
  return v;
}

double ConfigMap::fraction(std::string_view key) {
  const auto v = convert<double>(key, "a number");
  if (!std::isfinite(v)) fail(key, "must be a finite number");
  if (v <= 0 || v > 1) fail(key, fmt::format("must be in (0, 1], got {}", v));
  return v;
}

std::string ConfigMap::string(std::string_view key) {
  YAML::Node value = scalar_node(key);
  if (value.IsNull() || value.Scalar().empty()) fail(key, "expected a non-empty string");
  return value.Scalar();
}

bool ConfigMap::boolean(std::string_view key) {
  YAML::Node value = scalar_node(key);
  const std::string text = value.IsNull() ? std::string("null") : value.Scalar();
  if (!value.IsNull() && value.Tag() != "!" && (text == "true" || text == "false")) return text == "true";
  fail(key, fmt::format("expected true or false, got '{}'", text));
}

std::string ConfigMap::one_of(std::string_view key, const std::vector<std::string>& options) {
  const std::string value = string(key);
  if (std::find(options.begin(), options.end(), value) == options.end()) {
    fail(key, fmt::format("expected one of {}, got '{}'", fmt::join(options, ", "), value));
  }
  return value;
}

std::vector<std::string> ConfigMap::string_list(std::string_view key, bool distinct) {
  read_.emplace(key);
  for (const auto& kv : node_) {
    if (kv.first.Scalar() != key) continue;
    if (!kv.second.IsSequence()) fail(key, "expected a list, e.g. [a, b]");
    std::vector<std::string> out;
    for (const auto& item : kv.second) {
      if (!item.IsScalar() || item.Scalar().empty()) fail(key, "expected a list of names");
      if (distinct && std::find(out.begin(), out.end(), item.Scalar()) != out.end()) {
        fail(key, fmt::format("'{}' is listed twice", item.Scalar()));
      }
      out.push_back(item.Scalar());
    }
    return out;
  }
  throw ConfigError(fmt::format("{}: missing required field '{}'{}", where(), path_of(key),
                                path_.empty() ? "" : fmt::format(" (in '{}')", path_)),
                    site(key));
}

std::vector<std::uint64_t> ConfigMap::int_list(std::string_view key, std::uint64_t lo, std::uint64_t hi) {
  read_.emplace(key);
  for (const auto& kv : node_) {
    if (kv.first.Scalar() != key) continue;
    if (!kv.second.IsSequence()) fail(key, "expected a list of integers, e.g. [0, 5]");
    std::vector<std::uint64_t> out;
    for (const auto& item : kv.second) {
      const std::string& text = item.IsScalar() ? item.Scalar() : std::string();
      const std::optional<std::uint64_t> read = item.Tag() == "!" ? std::nullopt : read_whole_number(text);
      if (!read) fail(key, fmt::format("expected a list of whole numbers, got '{}'", text));
      const std::uint64_t v = *read;
      if (v < lo || v > hi) fail(key, fmt::format("{} is outside the plausible range {}..{}", v, lo, hi));
      if (std::find(out.begin(), out.end(), v) != out.end()) fail(key, fmt::format("{} is listed twice", v));
      out.push_back(v);
    }
    return out;
  }
  throw ConfigError(fmt::format("{}: missing required field '{}'{}", where(), path_of(key),
                                path_.empty() ? "" : fmt::format(" (in '{}')", path_)),
                    site(key));
}

std::vector<std::string> ConfigMap::keys() const {
  std::vector<std::string> out;
  for (const auto& kv : node_) out.push_back(kv.first.Scalar());
  return out;
}

std::optional<std::uint64_t> ConfigMap::positive_int_or_null(std::string_view key) {
  YAML::Node value = scalar_node(key);
  if (value.IsNull()) return std::nullopt;
  read_.erase(std::string(key));
  return positive_int(key);
}

ConfigMap ConfigMap::map(std::string_view key) {
  read_.emplace(key);
  for (const auto& kv : node_) {
    if (kv.first.Scalar() == key) {
      if (!kv.second.IsMap()) fail(key, "expected a mapping");
      return ConfigMap(doc_, kv.second, path_of(key));
    }
  }
  throw ConfigError(fmt::format("{}: missing required section '{}'", where(), path_of(key)), site(key));
}

std::vector<ConfigMap> ConfigMap::map_list(std::string_view key) {
  read_.emplace(key);
  for (const auto& kv : node_) {
    if (kv.first.Scalar() != key) continue;
    if (!kv.second.IsSequence() || kv.second.size() == 0) fail(key, "expected a list of mappings, e.g. [{a: 1}]");
    std::vector<ConfigMap> rows;
    std::size_t i = 0;
    for (const auto& item : kv.second) {
      const std::string path = fmt::format("{}[{}]", path_of(key), i++);
      if (!item.IsMap()) fail(key, fmt::format("{}: expected a mapping", path));
      rows.push_back(ConfigMap(doc_, item, path));
    }
    return rows;
  }
  throw ConfigError(fmt::format("{}: missing required section '{}'", where(), path_of(key)), site(key));
}

void ConfigMap::finish() const {
  if (doc_->policy == UnknownKeys::ignore) return;
  const std::vector<std::string> valid(read_.begin(), read_.end());
  for (const auto& kv : node_) {
    if (read_.count(kv.first.Scalar()) == 0) report_unknown(kv.first, valid);
  }
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

}  // namespace hw
