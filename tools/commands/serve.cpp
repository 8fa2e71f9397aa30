// g5sim serve: requests in (a trace, or a synthetic open or closed loop), TTFT / TPOT / ITL /
// goodput per request and per chip out, each step of the continuous batching simulated on the
// instruction-level model (g5sim/serve.hpp). Its flags are the serve table's knobs
// (g5sim/knobs.hpp) and the run options a step takes.

#include "g5sim/serve.hpp"

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

class ServeCommand final : public Command {
 public:
  explicit ServeCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "serve", "serve requests with continuous batching and chunked prefill: TTFT, TPOT, ITL, goodput per chip")),
        options_(app(), g5sim::kServe),
        knobs_(app(), g5sim::kServeKnob) {
    add_config_flags(app(), chip_, model_);
    CLI::App* a = app();
    a->add_option("--csv", csv_, "write the per-request CSV to PATH ('-' for stdout only)")->check(non_empty_path());
    a->add_option("--json", json_, "also write the summary JSON to PATH ('-' for stdout only)")
        ->check(non_empty_path());
    a->add_option("--perfetto", perfetto_,
                  "also write a Chrome trace-event JSON (Perfetto): a track per instance with its steps, a track per "
                  "request slot with each request's queued, prefill and decode")
        ->check(non_empty_path());
  }

  int run(const CliLimits& limits) override {
    try {
      return serve_command(limits);
    } catch (const g5sim::ConfigError& e) {
      throw_as_command_line("serve", g5sim::kServeKnob, e);
    }
  }

 private:
  int serve_command(const CliLimits& limits) {
    const g5sim::Request step = options_.request(limits);
    const g5sim::Chip chip = chip_of(chip_);
    const g5sim::Model model = model_of(model_);
    g5sim::ServeSettings settings;
    for (const auto& [knob, text] : knobs_.items()) settings.set_text(knob, text);
    std::vector<g5sim::ServeRequest> requests = g5sim::requests_of(settings);
    // Outputs are opened (checked) before the long part.
    OutputSet outputs({{"--csv", csv_}, {"--json", json_}, {"--perfetto", perfetto_}});
    // A line on a terminal (tools/progress_line.hpp, ServePace).
    std::optional<ProgressLine> progress;
    if (isatty(STDERR_FILENO) != 0) progress.emplace();
    g5sim::ServeControls controls;
    controls.max_steps = limits.max_serve_steps;
    ServePace pace;
    std::string shown_stage;
    controls.progress = [&](const g5sim::ServeProgress& p) {
      if (!progress) return;
      const double seconds = progress->seconds();
      const std::string line = pace.line(p, seconds);
      // A new pass is shown at once (a round's check is told once, then runs for seconds).
      const bool new_stage = p.stage != shown_stage && seconds >= 1;
      if (progress->due() || new_stage) progress->show(line), shown_stage = p.stage;
    };
    const g5sim::ServeReport report = g5sim::serve(chip, model, step, std::move(requests), settings, controls);
    if (progress) progress->clear();
    if (!outputs.on_stdout()) g5sim::write_serve_table(std::cout, report);
    if (OutputFile* csv = outputs.get("--csv")) g5sim::write_request_csv(csv->stream(), report);
    if (OutputFile* json = outputs.get("--json")) g5sim::write_serve_json(json->stream(), report);
    if (OutputFile* perfetto = outputs.get("--perfetto")) g5sim::write_serve_perfetto(perfetto->stream(), report);
    outputs.close();
    return 0;
  }

  RunOptionFlags options_;
  KnobFlags knobs_;
  std::string chip_, model_, csv_, json_, perfetto_;
};

}  // namespace

CommandPtr make_serve(CLI::App& app) { return std::make_unique<ServeCommand>(app); }

}  // namespace tools
