// Fuzzes what `g5sim sensitivity` and `g5sim calibrate` do to a chip config's text: list its
// numeric fields, rewrite each in place and read it back. No crash, no hang; a rewritten field
// reads back as the value written, and the text still loads as a chip or is refused cleanly.
#include <cstdlib>
#include <string>

#include "fuzz_common.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/chip_fields.hpp"
#include "hw/config_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace v = hw;
  const std::string text = fuzz::text_of(data, size);
  try {
    const std::vector<std::string> fields = v::numeric_chip_fields(text, "fuzz.yaml");
    std::size_t tried = 0;
    for (const std::string& path : fields) {
      if (++tried > 16) break;  // a few a document: the rewrite is per field
      v::ChipField field;
      try {
        field = v::find_chip_field(text, "fuzz.yaml", path);
      } catch (const hw::ConfigError&) {
        continue;  // a quoted number, an alias: listed, but not rewritable
      }
      const double target = field.value * 1.05;
      const std::string rewritten = v::with_field_values(text, {field}, {target});
      // strtod, not stod: a subnormal value (4.9e-324 x 1.05) underflows, which stod throws on.
      const std::string text_written = v::format_field_value(field, target);
      const double written = std::strtod(text_written.c_str(), nullptr);
      if (v::find_chip_field(rewritten, "fuzz.yaml", path).value != written) std::abort();
      try {
        (void)g5sim::Chip::from_yaml(rewritten, "fuzz.yaml");
      } catch (const g5sim::ConfigError&) {
      }
    }
  } catch (const hw::ConfigError&) {
  }
  return 0;
}
