// g5sim sensitivity: the elasticity of a run's or a serve's metric to every numeric chip field
// (or the ones named), by central differences of real simulations, ranked
// (explore/sensitivity.hpp).

#include "explore/sensitivity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <unistd.h>

#include "hw/config_error.hpp"
#include "tools/cli_error.hpp"
#include "tools/commands/commands.hpp"
#include "tools/context_list.hpp"
#include "tools/output_file.hpp"
#include "tools/progress_line.hpp"

namespace tools {

using explore::sensitivity;
using explore::SensitivityReport;
using explore::SensitivitySpec;
using explore::SweepPoint;
using explore::write_sensitivity_csv;
using explore::write_sensitivity_json;
using explore::write_sensitivity_table;
namespace {

class SensitivityCommand final : public Command {
 public:
  explicit SensitivityCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "sensitivity",
            "which chip field buys the most: d ln(metric) / d ln(field) of every numeric chip field, by central "
            "differences of real runs, ranked")),
        options_(app(), g5sim::kRun, {"ctx"}) {
    add_config_flags(app(), chip_, model_);
    CLI::App* a = app();
    a->add_option("--ctx", ctx_,
                  "the run's context length, or a list of them (4096,32768 or 1024:32768:x2): a ranking per length");
    a->add_option("--fields", fields_,
                  "the chip fields to vary, dotted as errors name them (ddr.bandwidth_gb_per_s,engines.tiu.clock_mhz); "
                  "default: every numeric field of the chip")
        ->delimiter(',');
    a->add_option("--metric", metric_,
                  "what is differentiated: a run's step_ms (default) or tokens_per_s_per_chip; a serve's tpot_p50_ms "
                  "(default), tpot_p99_ms, ttft_p50_ms, ttft_p99_ms, itl_p99_ms, e2e_p50_s, "
                  "output_tokens_per_s_per_chip or goodput_requests_per_s");
    a->add_option("--delta-pct", delta_pct_, "each field is moved by this percent down and up (0.1..50)")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 50.0));
    a->add_option("--top", top_, "fields the table lists per point (the JSON and CSV have every one)")
        ->capture_default_str()
        ->check(count_in(1, 100000));
    design_.add_to(a, "with --serve: goodput counts requests whose TTFT is at most this",
                   "with --serve: goodput counts requests whose TPOT is at most this",
                   "also write a row per point and field to PATH ('-' for stdout only)");
  }

  int run(const CliLimits& limits) override {
    try {
      return sensitivity_command(limits);
    } catch (const hw::InputError& e) {
      throw_design_input_error(e.field(), e.what(),
                               {{"metric", "--metric"},
                                {"fields", "--fields"},
                                {"ctx", "--ctx"},
                                {"delta", "--delta-pct"},
                                {"slo_ttft_ms", "--slo-ttft-ms"},
                                {"slo_tpot_ms", "--slo-tpot-ms"}});
    }
  }

 private:
  int sensitivity_command(const CliLimits& limits) {
    const g5sim::Request base = options_.request(limits);
    const std::vector<std::string> given = options_.given();
    SensitivitySpec spec;
    if (!design_.serve.empty()) {
      if (!ctx_.empty()) throw CliError("--ctx: with --serve the load sets the contexts (input_len in --serve)");
    } else {
      if (design_.slo_ttft_ms || design_.slo_tpot_ms) {
        throw CliError("--slo-ttft-ms/--slo-tpot-ms: an SLO is a serve's (--serve)");
      }
      if (!ctx_.empty()) spec.contexts = parse_context_list(ctx_);
      SweepPoint point;
      point.ctx = spec.contexts.empty() ? base.ctx : spec.contexts.front();
      refuse_options_without_effect(given, {model_of(model_)}, {point}, base, false);
    }
    spec.workload = design_.workload(chip_, model_, base, given);
    spec.fields = fields_;
    spec.metric = metric_;
    spec.delta = delta_pct_ / 100.0;
    spec.jobs = jobs_or_default(design_.jobs);
    const std::unique_ptr<OutputSet> outputs = design_.open();
    std::optional<ProgressLine> progress;
    if (isatty(STDERR_FILENO) != 0) progress.emplace();
    const SensitivityReport report = sensitivity(spec, [&](std::uint64_t done, std::uint64_t total) {
      if (progress && progress->due()) {
        progress->show(fmt::format("sensitivity: {} of {} runs ({:.0f} %), {:.0f} s", done, total,
                                   100.0 * static_cast<double>(done) / static_cast<double>(total),
                                   progress->seconds()));
      }
    });
    if (progress) progress->clear();
    print_warnings(report.warnings);
    DesignFlags::write(
        *outputs, [&](std::ostream& out) { write_sensitivity_table(out, report, top_); },
        [&](std::ostream& out) { write_sensitivity_csv(out, report); },
        [&](std::ostream& out) { write_sensitivity_json(out, report); });
    return 0;
  }

  RunOptionFlags options_;
  DesignFlags design_;
  std::string chip_, model_, ctx_, metric_;
  std::vector<std::string> fields_;
  double delta_pct_ = 5;
  std::size_t top_ = 10;
};

}  // namespace

CommandPtr make_sensitivity(CLI::App& app) { return std::make_unique<SensitivityCommand>(app); }

}  // namespace tools
