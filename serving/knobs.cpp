// Knob values from text and back, and a table's Settings (g5sim/knobs.hpp).

#include "g5sim/knobs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "g5sim/config_error.hpp"
#include "hw/config_error.hpp"
#include "hw/number_text.hpp"

namespace g5sim {
namespace {

std::vector<std::string> words(const std::string& choices) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= choices.size()) {
    const std::size_t comma = std::min(choices.find(',', start), choices.size());
    out.push_back(choices.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// "a, b or c"
std::string either(const std::vector<std::string>& options) {
  std::string out;
  for (std::size_t i = 0; i < options.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == options.size() ? " or " : ", ") + options[i];
  }
  return out;
}

KnobValue parsed(const Knob& k, const std::string& text) {
  switch (k.type) {
    case KnobType::count: return hw::parse_whole_number(text, k.name, k.min, k.max);
    case KnobType::decimal: return hw::parse_decimal_number(text, k.name, k.low, k.high, k.low_open);
    case KnobType::flag:
      if (text != "true" && text != "false") {
        throw hw::InputError(k.name, fmt::format("expected true or false, got '{}'", text));
      }
      return text == "true";
    case KnobType::path:
      if (text.empty()) throw hw::InputError(k.name, "an empty path names no file");
      return text;
    case KnobType::list:
      // '' given is no list: it would quietly mean the default (every field, every sharding).
      if (text.empty()) {
        throw hw::InputError(k.name, fmt::format("an empty list names nothing; leave it out for {}",
                                                 k.default_doc.empty() ? "its default" : k.default_doc));
      }
      [[fallthrough]];
    case KnobType::text:
      if (!k.choices.empty()) {
        const std::vector<std::string> options = words(k.choices);
        if (std::find(options.begin(), options.end(), text) == options.end()) {
          throw hw::InputError(k.name, fmt::format("expected {}, got '{}'", either(options), text));
        }
      }
      if (k.check != nullptr) k.check(text);
      return text;
  }
  throw std::logic_error("knob " + k.name + ": no type");
}

[[noreturn]] void no_such_knob(std::string_view name) {
  throw std::logic_error(fmt::format("'{}' is not a knob of this table", name));
}

}  // namespace

KnobValue knob_value(const Knob& knob, const std::string& text) {
  try {
    return parsed(knob, text);
  } catch (const hw::ConfigError& e) {
    const hw::ErrorSite& s = e.site();
    throw ConfigError(e.what(), s.source, s.field.empty() ? knob.name : s.field, s.line, s.column);
  }
}

std::string knob_text(const KnobValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>) {
          return "";
        } else if constexpr (std::is_same_v<V, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<V, std::string>) {
          return v;
        } else {
          return fmt::format("{}", v);  // a double's shortest text that reads back the same
        }
      },
      value);
}

KnobValue effective_value(const Settings& settings, const Knob& knob) {
  return knob.resolved != nullptr ? knob.resolved(settings) : settings.value(knob.name);
}

Settings::Settings(const std::vector<Knob>& table) : table_(&table), given_(table.size(), false) {
  values_.reserve(table.size());
  for (const Knob& k : table) {
    values_.push_back(k.default_text.empty() ? KnobValue{} : knob_value(k, k.default_text));
  }
}

const Knob* Settings::find(std::string_view name) const {
  for (const Knob& k : *table_) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::size_t Settings::index(std::string_view name) const {
  for (std::size_t i = 0; i < table_->size(); ++i) {
    if ((*table_)[i].name == name) return i;
  }
  no_such_knob(name);
}

void Settings::set_text(std::string_view name, const std::string& text) {
  const std::size_t i = index(name);
  values_[i] = knob_value((*table_)[i], text);
  given_[i] = true;
}

void Settings::set(std::string_view name, const KnobValue& value) {
  const std::size_t i = index(name);
  const Knob& k = (*table_)[i];
  if (std::holds_alternative<std::monostate>(value)) {
    if (!k.optional) throw ConfigError("required: it has no 'not given' value", "", k.name, 0, 0);
    values_[i] = value;
    given_[i] = true;
    return;
  }
  const bool fits = k.type == KnobType::count ? std::holds_alternative<std::uint64_t>(value)
                    : k.type == KnobType::decimal
                        ? std::holds_alternative<double>(value) || std::holds_alternative<std::uint64_t>(value)
                    : k.type == KnobType::flag ? std::holds_alternative<bool>(value)
                                               : std::holds_alternative<std::string>(value);
  if (!fits) {
    static constexpr const char* kExpected[] = {"a whole number", "a number",      "a string",
                                                "a path",         "true or false", "a string"};
    throw ConfigError(fmt::format("expected {}", kExpected[static_cast<int>(k.type)]), "", k.name, 0, 0);
  }
  set_text(name, knob_text(value));
}

void Settings::reset(std::string_view name) {
  const std::size_t i = index(name);
  const Knob& k = (*table_)[i];
  values_[i] = k.default_text.empty() ? KnobValue{} : knob_value(k, k.default_text);
  given_[i] = false;
}

bool Settings::given(std::string_view name) const { return given_[index(name)]; }

const KnobValue& Settings::value(std::string_view name) const { return values_[index(name)]; }

std::uint64_t Settings::count(std::string_view name) const { return optional_count(name).value_or(0); }

std::optional<std::uint64_t> Settings::optional_count(std::string_view name) const {
  const KnobValue& v = value(name);
  if (std::holds_alternative<std::monostate>(v)) return std::nullopt;
  if (const auto* n = std::get_if<std::uint64_t>(&v)) return *n;
  throw std::logic_error(fmt::format("knob {} is not a count", name));
}

double Settings::decimal(std::string_view name) const {
  const std::optional<double> v = optional_decimal(name);
  if (!v) throw std::logic_error(fmt::format("knob {} has no value", name));
  return *v;
}

std::optional<double> Settings::optional_decimal(std::string_view name) const {
  const KnobValue& v = value(name);
  if (std::holds_alternative<std::monostate>(v)) return std::nullopt;
  if (const auto* d = std::get_if<double>(&v)) return *d;
  throw std::logic_error(fmt::format("knob {} is not a decimal", name));
}

const std::string& Settings::text(std::string_view name) const {
  static const std::string kNothing;
  const KnobValue& v = value(name);
  if (std::holds_alternative<std::monostate>(v)) return kNothing;
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  throw std::logic_error(fmt::format("knob {} is not a text", name));
}

bool Settings::flag(std::string_view name) const {
  if (const auto* b = std::get_if<bool>(&value(name))) return *b;
  throw std::logic_error(fmt::format("knob {} is not a flag", name));
}

std::string Settings::text_of(std::string_view name) const { return knob_text(value(name)); }

bool Settings::operator==(const Settings& other) const { return table_ == other.table_ && values_ == other.values_; }

}  // namespace g5sim
