// Fuzzes the measurement table's reader (`g5sim validate --measured FILE`), serve rows' options
// included: no crash, no hang; a table it accepts has unique ids, a positive measured value per
// row, and serve rows whose options set a serve again without an error.
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

#include "explore/validation/measured_rows.hpp"
#include "fuzz_common.hpp"
#include "g5sim/serve.hpp"
#include "hw/config_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::text_of(data, size);
  namespace v = explore::validation;
  try {
    const v::MeasuredTable table = v::read_measured_text(text, "fuzz.csv");
    std::set<std::string> ids;
    for (const v::MeasuredRow& row : table.rows) {
      if (!ids.insert(row.id).second || !(row.measured > 0) || !std::isfinite(row.measured)) std::abort();
      if (row.workload != v::WorkloadKind::serve) continue;
      // A serve row's options were checked when read: setting them again cannot fail.
      g5sim::ServeSettings settings;
      for (const auto& [key, value] : row.options) {
        if (const g5sim::Knob* k = settings.find(key); k && k->takes_in(g5sim::kServeItem))
          settings.set_text(key, value);
      }
      g5sim::check_pairs(settings);
    }
  } catch (const hw::ConfigError&) {
  }
  return 0;
}
