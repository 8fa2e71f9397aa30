#include "hw/chip_fields.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "hw/config_error.hpp"
#include "hw/number_text.hpp"
#include "hw/strict_config.hpp"

namespace hw {

ChipField find_chip_field(const std::string& yaml_text, const std::string& source, const std::string& path) {
  auto fail = [&](const std::string& message) -> ChipField {
    throw hw::ConfigError(fmt::format("{}: {}: {}", source, path, message), hw::ErrorSite{source, path, 0, 0});
  };
  YAML::Node node;
  try {
    node = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return fail(fmt::format("the config does not parse: {}", e.what()));
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty() || !node.IsMap() || !node[key]) {
      const std::string near = hw::closest_match(path, numeric_chip_fields(yaml_text, source));
      return fail(near.empty() ? "no such field in the chip config"
                               : fmt::format("no such field in the chip config (did you mean {}?)", near));
    }
    node = node[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!node.IsScalar()) return fail("not a number (a section or a list)");
  const std::string text = node.Scalar();
  const std::optional<double> v = hw::read_decimal_number(text);
  if (!v) return fail(fmt::format("not a number: '{}'", text));
  ChipField f;
  f.path = path;
  f.value = *v;
  f.integer = text.find_first_of(".eE") == std::string::npos;
  const YAML::Mark mark = node.Mark();
  f.offset = static_cast<std::size_t>(mark.pos);
  // The value as written: the scalar's own characters at its mark (plain numbers only).
  if (yaml_text.compare(f.offset, text.size(), text) != 0) return fail("a quoted or folded number cannot be rewritten");
  f.length = text.size();
  return f;
}

namespace {

bool is_number(const std::string& text) { return hw::read_decimal_number(text).has_value(); }

void collect_numeric(const YAML::Node& map, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& entry : map) {
    const std::string key = entry.first.Scalar();
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (prefix.empty() && (key == "calibration" || key == "name")) continue;
    if (entry.second.IsMap()) {
      collect_numeric(entry.second, path, out);
    } else if (entry.second.IsScalar() && entry.second.Tag() != "!" && is_number(entry.second.Scalar())) {
      // (a quoted scalar, tagged "!", is text that reads as a number: a version "0.11")
      out.push_back(path);
    }
  }
}

}  // namespace

std::vector<std::string> numeric_chip_fields(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw hw::ConfigError(fmt::format("{}: the config does not parse: {}", source, e.what()),
                          hw::ErrorSite{source, "", 0, 0});
  }
  std::vector<std::string> fields;
  if (root.IsMap()) collect_numeric(root, "", fields);
  return fields;
}

std::string format_field_value(const ChipField& field, double value) {
  if (field.integer) return fmt::format("{}", static_cast<long long>(std::llround(value)));
  std::string text = fmt::format("{:.6g}", value);
  // Keep it a fraction for the reader: "1" -> "1.0".
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

double held_value(const ChipField& field, double value) {
  // Always a number: format_field_value writes digits, a point and an exponent only.
  return hw::read_decimal_number(format_field_value(field, value)).value();
}

std::string with_field_values(const std::string& yaml_text, const std::vector<ChipField>& fields,
                              const std::vector<double>& values) {
  std::vector<std::size_t> order(fields.size());
  std::iota(order.begin(), order.end(), 0);
  // Last first, so earlier offsets stay valid.
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return fields[a].offset > fields[b].offset; });
  std::string text = yaml_text;
  for (std::size_t i : order)
    text.replace(fields[i].offset, fields[i].length, format_field_value(fields[i], values[i]));
  return text;
}

}  // namespace hw
