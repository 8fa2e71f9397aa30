// g5sim solve: the least change of chip fields that meets targets on a run's or a serve's metrics,
// or what limits it instead (g5sim/solve.hpp). Its flags are the knob tables' solve rows
// (g5sim/design.hpp) and the run options.

#include "g5sim/solve.hpp"

#include <fmt/format.h>

#include <iostream>
#include <optional>
#include <string>
#include <unistd.h>

#include "tools/cli_error.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/progress_line.hpp"

namespace tools {
namespace {

class SolveCommand final : public Command {
 public:
  explicit SolveCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "solve",
            "the chip spec a target needs: the least change of the --vary fields that meets every --target "
            "(bisection for one field, weighted least change for several), or what limits it instead")),
        options_(app(), g5sim::kRun),
        knobs_(app(), g5sim::kSolveKnob) {
    add_config_flags(app(), chip_, model_);
    app()->add_option("--json", json_, "also write the JSON to PATH ('-' for stdout only)")->check(non_empty_path());
    app()
        ->add_option("--csv", csv_, "also write a row per run tried to PATH ('-' for stdout only)")
        ->check(non_empty_path());
  }

  int run(const CliLimits& limits) override {
    try {
      return solve_command(limits);
    } catch (const g5sim::ConfigError& e) {
      throw_as_command_line("solve", g5sim::kSolveKnob, e);
    }
  }

 private:
  int solve_command(const CliLimits& limits) {
    const g5sim::Request base = options_.request(limits);
    const std::vector<std::string> given = options_.given();
    if (knobs_.given("serve")) {
      refuse_step_shape_beside_serve(given);
    } else {
      explore::SweepPoint point;
      point.ctx = base.ctx;
      refuse_options_without_effect(given, {model_of(model_)}, {point}, base, false);
    }
    const g5sim::SolveSpec spec =
        g5sim::solve_spec_of(g5sim::chip_text_of(chip_.empty() ? g5sim::shipped_chip_path() : chip_), model_of(model_),
                             base, knobs_.items());
    OutputSet outputs({{"--csv", csv_}, {"--json", json_}});
    std::optional<ProgressLine> progress;
    if (isatty(STDERR_FILENO) != 0) progress.emplace();
    const g5sim::SolveReport report = g5sim::solve(spec, [&](std::uint64_t runs) {
      if (progress && progress->due())
        progress->show(fmt::format("solve: {} runs, {:.0f} s", runs, progress->seconds()));
    });
    if (progress) progress->clear();
    write_outputs(
        outputs, [&](std::ostream& out) { g5sim::write_solve_table(out, report); },
        [&](std::ostream& out) { g5sim::write_solve_csv(out, report); },
        [&](std::ostream& out) { g5sim::write_solve_json(out, report); });
    // "cannot" is an answer, not an error: exit 0 (the JSON's outcome says it).
    return 0;
  }

  RunOptionFlags options_;
  KnobFlags knobs_;
  std::string chip_, model_, json_, csv_;
};

}  // namespace

CommandPtr make_solve(CLI::App& app) { return std::make_unique<SolveCommand>(app); }

}  // namespace tools
