// Fuzzes `g5sim diff`'s reader of run JSON files and the diff itself: the input is two documents
// split at the first "@@@@" (one document: it is diffed with itself); each is read strictly
// (explore/run_diff.hpp), then diffed and written as a table and as JSON to a null stream.
#include <sstream>
#include <string>

#include "explore/run_diff.hpp"
#include "fuzz_common.hpp"
#include "g5sim/config_error.hpp"
#include "hw/config_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::text_of(data, size);
  const auto split = text.find("@@@@");
  const std::string first = text.substr(0, split);
  const std::string second = split == std::string::npos ? first : text.substr(split + 4);
  try {
    const explore::RunFile a = explore::read_run_file(first, "a.json");
    const explore::RunFile b = explore::read_run_file(second, "b.json");
    const explore::RunDiff d = explore::diff_runs(a, b);
    std::ostringstream sink;
    explore::write_diff_table(sink, d, 10);
    explore::write_diff_json(sink, d, 10);
  } catch (const g5sim::ConfigError&) {
  } catch (const hw::ConfigError&) {
  }
  return 0;
}
