// g5sim sensitivity: d ln(metric) / d ln(field) of every numeric chip field, by central differences
// of real runs (g5sim/sensitivity.hpp). Its flags are the knob tables' sensitivity rows
// (g5sim/design.hpp) and the run options.

#include "g5sim/sensitivity.hpp"

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

class SensitivityCommand final : public Command {
 public:
  explicit SensitivityCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "sensitivity",
            "which chip field buys the most: d ln(metric) / d ln(field) of every numeric chip field, by central "
            "differences of real runs, ranked")),
        options_(app(), g5sim::kRun, {"ctx"}),
        knobs_(app(), g5sim::kSensitivityKnob) {
    add_config_flags(app(), chip_, model_);
    app()->add_option("--json", json_, "also write the JSON to PATH ('-' for stdout only)")->check(non_empty_path());
    app()
        ->add_option("--csv", csv_, "also write a row per point and field to PATH ('-' for stdout only)")
        ->check(non_empty_path());
  }

  int run(const CliLimits& limits) override {
    try {
      return sensitivity_command(limits);
    } catch (const g5sim::ConfigError& e) {
      throw_as_command_line("sensitivity", g5sim::kSensitivityKnob, e);
    }
  }

 private:
  int sensitivity_command(const CliLimits& limits) {
    const g5sim::Request base = options_.request(limits);
    const std::vector<std::string> given = options_.given();
    if (knobs_.given("serve")) refuse_step_shape_beside_serve(given);
    const g5sim::SensitivitySpec spec =
        g5sim::sensitivity_spec_of(g5sim::chip_text_of(chip_.empty() ? g5sim::shipped_chip_path() : chip_),
                                   model_of(model_), base, knobs_.items());
    if (!spec.workload.serve) {
      explore::SweepPoint point;
      point.ctx = spec.contexts.empty() ? base.ctx : spec.contexts.front();
      refuse_options_without_effect(given, {spec.workload.model}, {point}, base, false);
    }
    OutputSet outputs({{"--csv", csv_}, {"--json", json_}});
    std::optional<ProgressLine> progress;
    if (isatty(STDERR_FILENO) != 0) progress.emplace();
    const g5sim::SensitivityReport report = g5sim::sensitivity(spec, [&](std::uint64_t done, std::uint64_t total) {
      if (progress && progress->due()) {
        progress->show(fmt::format("sensitivity: {} of {} runs ({:.0f} %), {:.0f} s", done, total,
                                   100.0 * static_cast<double>(done) / static_cast<double>(total),
                                   progress->seconds()));
      }
    });
    if (progress) progress->clear();
    print_warnings(report.warnings);
    write_outputs(
        outputs, [&](std::ostream& out) { g5sim::write_sensitivity_table(out, report); },
        [&](std::ostream& out) { g5sim::write_sensitivity_csv(out, report); },
        [&](std::ostream& out) { g5sim::write_sensitivity_json(out, report); });
    return 0;
  }

  RunOptionFlags options_;
  KnobFlags knobs_;
  std::string chip_, model_, json_, csv_;
};

}  // namespace

CommandPtr make_sensitivity(CLI::App& app) { return std::make_unique<SensitivityCommand>(app); }

}  // namespace tools
