// Fuzzes the measurement table's reader (`g5sim validate --measured FILE`), serve rows' options
// included: no crash, no hang; a table it accepts has unique ids, a positive measured value per
// row, and serve rows whose options set a serve again without an error.
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

#include "explore/validation/measured_rows.hpp"
#include "fuzz_common.hpp"
#include "hw/config_error.hpp"
#include "serving/serve_settings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::text_of(data, size);
  namespace v = explore::validation;
  try {
    const v::MeasuredTable table = v::read_measured_text(text, "fuzz.csv");
    std::set<std::string> ids;
    for (const v::MeasuredRow& row : table.rows) {
      if (!ids.insert(row.id).second || !(row.measured > 0) || !std::isfinite(row.measured)) std::abort();
      if (row.workload != v::WorkloadKind::serve) continue;
      serving::ServeSettings settings;
      const auto& keys = serving::serve_keywords();
      for (const auto& [key, value] : row.options) {
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) serving::set_serve_keyword(settings, key, value);
      }
      settings.resolved();
    }
  } catch (const hw::ConfigError&) {
  }
  return 0;
}
