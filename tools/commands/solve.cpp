// g5sim solve: the chip spec a target needs: the least change of one field (bisection) or of
// several (weighted least change, Eigen) that meets targets on a run's or a serve's metrics, or
// why none in range does (explore/required_spec.hpp).

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <unistd.h>

#include "explore/required_spec.hpp"
#include "hw/config_error.hpp"
#include "hw/number_text.hpp"
#include "tools/cli_error.hpp"
#include "tools/commands/commands.hpp"
#include "tools/context_list.hpp"
#include "tools/output_file.hpp"
#include "tools/progress_line.hpp"

namespace tools {

using explore::number_text;
using explore::parse_target;
using explore::parse_varied_field;
using explore::set_cost;
using explore::solve;
using explore::SolveReport;
using explore::SolveSpec;
using explore::SweepPoint;
using explore::write_solve_csv;
using explore::write_solve_json;
using explore::write_solve_table;
namespace {

class SolveCommand final : public Command {
 public:
  explicit SolveCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "solve",
            "the chip spec a target needs: the least change of the --vary fields that meets every --target "
            "(bisection for one field, weighted least change for several), or what limits it instead")),
        options_(app(), g5sim::kRun) {
    add_config_flags(app(), chip_, model_);
    CLI::App* a = app();
    a->add_option("--target", targets_,
                  "METRIC<=X or METRIC>=X, repeatable: a run's step_ms, tokens_per_s_per_chip; a serve's "
                  "tpot_p50_ms, tpot_p99_ms, ttft_p50_ms, ttft_p99_ms, itl_p99_ms, e2e_p50_s, "
                  "output_tokens_per_s_per_chip, goodput_requests_per_s");
    a->add_option("--vary", vary_,
                  "chip fields to change, dotted, each optionally =LO:HI (default: a tenth to ten times its value): "
                  "ddr.bandwidth_gb_per_s or ddr.bandwidth_gb_per_s=4000:20000,engines.tiu.clock_mhz")
        ->delimiter(',')
        ->required();
    a->add_option("--cost", costs_,
                  "with several --vary fields: FIELD=W, the weight of a relative change of that field (default 1); "
                  "the answer minimises the weighted sum of squared log changes")
        ->delimiter(',');
    a->add_option("--tolerance-pct", tolerance_pct_, "the answer's precision in percent (0.0001..10)")
        ->capture_default_str()
        ->check(CLI::Range(0.0001, 10.0));
    a->add_option("--max-runs", max_runs_, "give up after this many runs")
        ->capture_default_str()
        ->check(count_in(3, 100000));
    design_.add_to(
        a, "a run: a prompt step's time at most this (a target step_ms <= T); with --serve: goodput's TTFT bound",
        "a run: a decode step's time at most this (a target step_ms <= T); with --serve: goodput's TPOT bound",
        "also write a row per run tried to PATH ('-' for stdout only)");
  }

  int run(const CliLimits& limits) override {
    try {
      return solve_command(limits);
    } catch (const hw::InputError& e) {
      throw_design_input_error(e.field(), e.what(),
                               {{"target", "--target"},
                                {"vary", "--vary"},
                                {"cost", "--cost"},
                                {"tolerance", "--tolerance-pct"},
                                {"max_runs", "--max-runs"},
                                {"slo", "--slo-tpot-ms/--slo-ttft-ms"},
                                {"slo_ttft_ms", "--slo-ttft-ms"},
                                {"slo_tpot_ms", "--slo-tpot-ms"}});
    }
  }

 private:
  int solve_command(const CliLimits& limits) {
    const g5sim::Request base = options_.request(limits);
    const std::vector<std::string> given = options_.given();
    if (design_.serve.empty()) {
      SweepPoint point;
      point.ctx = base.ctx;
      refuse_options_without_effect(given, {model_of(model_)}, {point}, base, false);
    }
    if (targets_.empty() && !(design_.slo_tpot_ms || design_.slo_ttft_ms)) {
      throw CliError("solve: give a --target (or, for a run, --slo-tpot-ms / --slo-ttft-ms)");
    }
    SolveSpec spec;
    for (const std::string& t : targets_) spec.targets.push_back(parse_target(t));
    for (const std::string& v : vary_) spec.vary.push_back(parse_varied_field(v));
    for (const std::string& c : costs_) {
      const std::size_t eq = c.find('=');
      const std::optional<double> weight =
          eq == std::string::npos ? std::nullopt : hw::read_decimal_number(std::string_view(c).substr(eq + 1));
      if (!weight) throw CliError(fmt::format("--cost: '{}' is not FIELD=W", c));
      set_cost(spec.vary, c.substr(0, eq), *weight);
    }
    spec.workload = design_.workload(chip_, model_, base, given);
    spec.tolerance = tolerance_pct_ / 100.0;
    spec.max_runs = max_runs_;
    spec.jobs = jobs_or_default(design_.jobs);
    const std::unique_ptr<OutputSet> outputs = design_.open();
    std::optional<ProgressLine> progress;
    if (isatty(STDERR_FILENO) != 0) progress.emplace();
    const SolveReport report = solve(spec, [&](std::uint64_t runs) {
      if (progress && progress->due())
        progress->show(fmt::format("solve: {} runs, {:.0f} s", runs, progress->seconds()));
    });
    if (progress) progress->clear();
    DesignFlags::write(
        *outputs, [&](std::ostream& out) { write_solve_table(out, report); },
        [&](std::ostream& out) { write_solve_csv(out, report); },
        [&](std::ostream& out) { write_solve_json(out, report); });
    // "cannot" is an answer, not an error: exit 0 (the JSON's outcome says it).
    return 0;
  }

  RunOptionFlags options_;
  DesignFlags design_;
  std::string chip_, model_;
  std::vector<std::string> targets_, vary_, costs_;
  double tolerance_pct_ = 0.1;
  std::uint64_t max_runs_ = 400;
  unsigned jobs_ = 0;
};

}  // namespace

CommandPtr make_solve(CLI::App& app) { return std::make_unique<SolveCommand>(app); }

}  // namespace tools
