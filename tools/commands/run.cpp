// g5sim run: one chip's share of a decoder step (or --scope block: one attention block), its
// per-op timings as a table, JSON (--json) and a Chrome trace (--trace).

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#include "tools/cli_error.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/progress_line.hpp"

namespace tools {

using explore::SweepPoint;
namespace {

// Above this a trace gets a warning: Perfetto's web UI loads a few hundred MB at most.
constexpr std::uint64_t kLargeTraceBytes = 100'000'000;

// A run's progress line (tools/progress_line.hpp): the stage and its count.
class RunProgress {
 public:
  RunProgress() : scope_(&RunProgress::report, this) {}
  RunProgress(const RunProgress&) = delete;
  RunProgress& operator=(const RunProgress&) = delete;
  void finish() { line_.clear(); }

 private:
  static void report(void* self, const char* stage, std::uint64_t done, std::uint64_t total) {
    static_cast<RunProgress*>(self)->show(stage, done, total);
  }
  void show(const char* stage, std::uint64_t done, std::uint64_t total) {
    if (!line_.due()) return;
    line_.show(fmt::format("run: {} {} of {} {} ({:.0f} %), {:.0f} s", stage, done, total,
                           std::string_view(stage) == "lowering" ? "ops" : "commands",
                           total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
                           line_.seconds()));
  }

  ProgressLine line_;
  g5sim::ScopedProgress scope_;
};

class RunCommand final : public Command {
 public:
  explicit RunCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "run",
            "simulate one chip's share of a decoder step (or --scope block: one attention block); per-op timings")),
        options_(app(), g5sim::kRun) {
    add_config_flags(app(), chip_, model_);
    app()->add_option("--json", json_, "also write JSON to PATH ('-' for stdout only)")->check(non_empty_path());
    app()
        ->add_option(
            "--trace", trace_,
            "write a Chrome trace-event JSON (Perfetto) to PATH ('-' for stdout only); simulates every command")
        ->check(non_empty_path());
    app()->add_option("--trace-layers", trace_layers_, "trace only decoder layers I..J (I:J or I)");
    app()
        ->add_option("--top", top_, "after the table, the N ops that take longest (op_end - op_start) and the layers")
        ->check(count_in(1, 100000));
  }

  int run(const CliLimits& limits) override {
    // Outputs are opened (and the trace filter checked) before the run, which can take long.
    std::optional<std::pair<int, int>> layers;
    if (!trace_layers_.empty()) {
      if (trace_.empty()) throw CliError("--trace-layers needs --trace PATH");
      layers = parse_layer_range(trace_layers_);
    }
    OutputSet outputs({{"--trace", trace_}, {"--json", json_}});
    OutputFile* trace = outputs.get("--trace");
    OutputFile* json = outputs.get("--json");
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
    request.keep_commands = trace != nullptr;
    std::optional<RunProgress> progress;
    if (isatty(STDERR_FILENO) != 0) progress.emplace();
    const g5sim::Result result = g5sim::simulate(chip, model, request);
    if (progress) progress->finish();
    print_warnings(result.warnings);
    if (trace) {
      if (const std::uint64_t bytes = result.chrome_trace_bytes(layers); bytes > kLargeTraceBytes) {
        print_warnings(
            {fmt::format("the trace takes about {} MB ({} commands in all); --trace-layers I:J traces a few "
                         "layers",
                         bytes / 1'000'000, result.command_count)});
      }
      result.write_chrome_trace(trace->stream(), layers);
    }
    // A JSON or trace written to standard output replaces the table there.
    if (!outputs.on_stdout()) {
      std::cout << result.table();
      if (top_ > 0) std::cout << top_ops(result, top_);
    }
    if (json) json->stream() << result.json();
    outputs.close();
    return 0;
  }

 private:
  // Where the time goes: the longest ops, then each layer's span (runs of equal layers as one line).
  static std::string top_ops(const g5sim::Result& r, std::size_t n) {
    std::vector<const g5sim::OpRecord*> ops;
    for (const g5sim::OpRecord& o : r.ops) ops.push_back(&o);
    std::stable_sort(ops.begin(), ops.end(), [](const g5sim::OpRecord* a, const g5sim::OpRecord* b) {
      return a->op_end_ps - a->op_start_ps > b->op_end_ps - b->op_start_ps;
    });
    const double total = static_cast<double>(r.total_ps);
    std::string out =
        fmt::format("\ntop {} ops by time (op_end_ns - op_start_ns; ops overlap, so shares add past 100):\n",
                    std::min(n, ops.size()));
    out +=
        fmt::format("  {:<22} {:>6} {:<16} {:>16} {:>7}  {}\n", "op", "layer", "kind", "time_ns", "share", "bound_by");
    for (std::size_t i = 0; i < std::min(n, ops.size()); ++i) {
      const g5sim::OpRecord& o = *ops[i];
      const auto ps = o.op_end_ps - o.op_start_ps;
      out += fmt::format("  {:<22} {:>6} {:<16} {:>16.3f} {:>6.1f}%  {}\n", o.name,
                         o.layer < 0 ? std::string("-") : std::to_string(o.layer), o.kind,
                         static_cast<double>(ps) / 1000.0, total > 0 ? 100.0 * static_cast<double>(ps) / total : 0.0,
                         o.bound_by);
    }
    out += "layers (span: first op's start to last op's end):\n";
    const std::vector<g5sim::LayerRecord> layers = r.per_layer();
    for (std::size_t i = 0; i < layers.size();) {
      std::size_t j = i + 1;
      while (j < layers.size() && layers[j].layer >= 0 && layers[j].span_ps() == layers[i].span_ps()) ++j;
      const g5sim::LayerRecord& l = layers[i];
      const std::string name = l.layer < 0  ? std::string("outside (busy)")
                               : j - i == 1 ? std::to_string(l.layer)
                                            : fmt::format("{}..{} (each)", l.layer, layers[j - 1].layer);
      const auto ps = l.layer < 0 ? l.busy_ps : l.span_ps();
      out += fmt::format("  {:<22} {:>16.3f} ns {:>6.1f}%\n", name, static_cast<double>(ps) / 1000.0,
                         total > 0 ? 100.0 * static_cast<double>(ps) / total : 0.0);
      i = j;
    }
    return out;
  }

  RunOptionFlags options_;
  std::string chip_, model_, json_, trace_, trace_layers_;
  std::size_t top_ = 0;
};

}  // namespace

CommandPtr make_run(CLI::App& app) { return std::make_unique<RunCommand>(app); }

}  // namespace tools
