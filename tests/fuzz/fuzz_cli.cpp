// Fuzzes the command line: the input is split at newlines into at most 16 arguments after "g5sim",
// on the shipped default configs. Arguments holding '/' are dropped, so that no fuzzed option can
// read or overwrite a file outside the scratch directory the campaign runs in. Runs are capped at
// 20,000 commands (bigger ones are refused by the work bound before they are built), `validate`
// and `calibrate` to the first 4 rows of their table (all 123 took ~50 s, past libFuzzer's
// timeout), `serve` to 200 steps, output goes to a null stream, and the exit status must be 0, 1 (a write), 2 (bad
// input) or 3 (a sweep --keep-going with failed points).
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <vector>

#include "fuzz_common.hpp"
#include "tools/cli.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"g5sim"};
  std::istringstream lines(fuzz::text_of(data, size));
  for (std::string line; std::getline(lines, line) && args.size() <= 16;) {
    if (line.find('/') == std::string::npos && line.size() <= 64) args.push_back(line);
  }
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream sink;
  auto* out = std::cout.rdbuf(sink.rdbuf());
  auto* err = std::cerr.rdbuf(sink.rdbuf());
  tools::CliLimits limits;
  limits.max_commands = 20'000;
  limits.max_table_rows = 4;
  limits.max_serve_steps = 200;
  const int status = tools::run_cli(static_cast<int>(argv.size()), argv.data(), limits);
  std::cout.rdbuf(out);
  std::cerr.rdbuf(err);
  if (status < 0 || status > 3) std::abort();
  // Exit 1 is only for a failed write: an internal error (a bug) says so.
  if (status == 1 && sink.str().find("internal error") != std::string::npos) std::abort();
  return 0;
}
