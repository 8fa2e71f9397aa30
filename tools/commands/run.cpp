// g5sim run: one chip's share of a decoder step (or --scope block: one attention block), its
// per-op timings as a table, JSON (--json) and a Chrome trace (--trace).

#include <fmt/format.h>

#include <iostream>
#include <optional>

#include "tools/cli_error.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"

namespace tools {
namespace {

// Above this a trace gets a warning: Perfetto's web UI loads a few hundred MB at most.
constexpr std::uint64_t kLargeTraceBytes = 100'000'000;

class RunCommand final : public Command {
 public:
  explicit RunCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "run",
            "simulate one chip's share of a decoder step (or --scope block: one attention block); per-op timings")),
        options_(app(), g5sim::kRun) {
    app()
        ->add_option("--chip", chip_, "chip config YAML, or a shipped chip's name (g5sim list) [default: sg2262]")
        ->check(non_empty_path());
    app()
        ->add_option("--model", model_,
                     "model config (YAML or a Hugging Face config.json), or a shipped model's name (g5sim list) "
                     "[default: deepseek-v3]")
        ->check(non_empty_path());
    app()->add_option("--json", json_, "also write JSON to PATH ('-' for stdout only)")->check(non_empty_path());
    app()
        ->add_option(
            "--trace", trace_,
            "write a Chrome trace-event JSON (Perfetto) to PATH ('-' for stdout only); simulates every command")
        ->check(non_empty_path());
    app()->add_option("--trace-layers", trace_layers_, "trace only decoder layers I..J (I:J or I)");
  }

  int run(const CliLimits& limits) override {
    // Outputs are opened (and the trace filter checked) before the run, which can take long.
    std::optional<std::pair<int, int>> layers;
    if (!trace_layers_.empty()) {
      if (trace_.empty()) throw CliError("--trace-layers needs --trace PATH");
      layers = parse_layer_range(trace_layers_);
    }
    if (trace_ == "-" && json_ == "-") {
      throw CliError("--trace - and --json - both want standard output: give one of them a PATH");
    }
    refuse_shared_outputs({{"--trace", trace_}, {"--json", json_}});
    std::optional<OutputFile> trace, json;
    if (!trace_.empty()) trace.emplace(trace_, "--trace");
    if (!json_.empty()) json.emplace(json_, "--json");
    const g5sim::Chip chip = chip_of(chip_);
    const g5sim::Model model = model_of(model_);
    g5sim::Request request = options_.request(limits);
    // A range of layers the run does not have would write an empty trace: refused before the run.
    const std::uint64_t run_layers = request.scope == "block" ? 1 : request.layers.value_or(model.num_hidden_layers());
    if (layers && static_cast<std::uint64_t>(layers->first) >= run_layers) {
      throw CliError(
          fmt::format("--trace-layers: {}: the run has decoder layers 0..{}", trace_layers_, run_layers - 1));
    }
    SweepPoint point;
    point.ctx = request.ctx;
    refuse_options_without_effect(options_.given(), {model}, {point}, request, false);
    request.keep_commands = trace.has_value();
    const g5sim::Result result = g5sim::simulate(chip, model, request);
    print_warnings(result.warnings);
    if (trace) {
      if (const std::uint64_t bytes = result.chrome_trace_bytes(layers); bytes > kLargeTraceBytes) {
        print_warnings(
            {fmt::format("the trace takes about {} MB ({} commands in all); --trace-layers I:J traces a few "
                         "layers",
                         bytes / 1'000'000, result.command_count)});
      }
      result.write_chrome_trace(trace->stream(), layers);
      trace->close();
    }
    // A JSON or trace written to standard output replaces the table there.
    if (json_ != "-" && trace_ != "-") std::cout << result.table();
    if (json) {
      json->stream() << result.json();
      json->close();
    }
    check_stdout();
    return 0;
  }

 private:
  RunOptionFlags options_;
  std::string chip_, model_, json_, trace_, trace_layers_;
};

}  // namespace

CommandPtr make_run(CLI::App& app) { return std::make_unique<RunCommand>(app); }

}  // namespace tools
