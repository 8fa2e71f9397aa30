// g5sim diff: what moved between two runs' JSON files (explore/run_diff.hpp): the totals, per op
// kind, per layer and the ops that moved most, as a table or JSON.

#include <iostream>
#include <optional>

#include "explore/run_diff.hpp"
#include "hw/input_file.hpp"
#include "tools/cli_error.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"

namespace tools {

using explore::diff_runs;
using explore::read_run_file;
using explore::RunDiff;
using explore::RunFile;
using explore::write_diff_json;
using explore::write_diff_table;
namespace {

class DiffCommand final : public Command {
 public:
  explicit DiffCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "diff", "what moved between two runs (g5sim run --json A.json, B.json): totals, kinds, layers, top ops")) {
    app()->add_option("a", a_, "the first run's JSON (g5sim run --json)")->check(non_empty_path());
    app()->add_option("b", b_, "the second run's JSON")->check(non_empty_path());
    app()
        ->add_option("--top", top_, "ops shown, the most moved first")
        ->capture_default_str()
        ->check(count_in(0, 100000));
    app()->add_option("--json", json_, "also write JSON to PATH ('-' for stdout only)")->check(non_empty_path());
  }

  int run(const CliLimits&) override {
    if (b_.empty()) throw CliError("diff: name two runs' JSON files (g5sim diff A.json B.json)");
    // Both files are read and checked before any output is opened.
    const RunFile a = read_run_file(hw::read_input_file(a_), a_);
    const RunFile b = read_run_file(hw::read_input_file(b_), b_);
    const RunDiff d = diff_runs(a, b);
    OutputSet outputs({{"--json", json_}});
    if (!outputs.on_stdout()) write_diff_table(std::cout, d, top_);
    if (OutputFile* json = outputs.get("--json")) write_diff_json(json->stream(), d, top_);
    outputs.close();
    return 0;
  }

 private:
  std::string a_, b_, json_;
  std::size_t top_ = 10;
};

}  // namespace

CommandPtr make_diff(CLI::App& app) { return std::make_unique<DiffCommand>(app); }

}  // namespace tools
