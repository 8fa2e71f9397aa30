#pragma once
// Numeric fields of a chip config, addressed by their dotted path as errors name them
// ("ddr.efficiency", "engines.tiu.cube_efficiency", "engines.gdma.startup_ns"), read from the YAML
// text and rewritten in place: only the value's characters change, so comments, sources and
// layout survive a calibration.

#include <string>
#include <vector>

namespace hw {

struct ChipField {
  std::string path;
  double value = 0;
  bool integer = false;                ///< written without a fraction or exponent: stays a whole number
  std::size_t offset = 0, length = 0;  ///< the value's characters in the text
};

/// Throws hw::ConfigError naming `source` and the path when the field is absent or not a number.
ChipField find_chip_field(const std::string& yaml_text, const std::string& source, const std::string& path);

/// Every numeric field of the chip config (a plain number, in a map: list entries are names), by
/// dotted path in document order; the `calibration` record (what a fit wrote, not the chip) and
/// `name` are not fields. Throws hw::ConfigError naming `source` when the text does not parse.
std::vector<std::string> numeric_chip_fields(const std::string& yaml_text, const std::string& source);

/// The value as the config will hold it: rounded to a whole number for integer fields, else to six
/// significant digits.
std::string format_field_value(const ChipField& field, double value);
/// The number format_field_value's text reads back as (a subnormal one too: the chip reader then
/// refuses it with the field's file:line, where a parse that throws would end in "internal error").
double held_value(const ChipField& field, double value);

/// The text with each field's value replaced (fields from the same text, distinct).
std::string with_field_values(const std::string& yaml_text, const std::vector<ChipField>& fields,
                              const std::vector<double>& values);

}  // namespace hw
