// g5sim search: the deployments of a model on one or more chips serving the same requests, the
// Pareto front of output tokens/s per chip against per user on each chip, and the best point
// meeting an SLO (g5sim/search.hpp). Its flags are the knob tables' search rows (g5sim/knobs.hpp,
// g5sim/design.hpp): a searchable knob takes a list.

#include "g5sim/search.hpp"

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

constexpr unsigned kSearchUse = g5sim::kSearchKnob | g5sim::kSearchList;

// The run options search takes as lists (a grid dimension each: micro-batches, the formats) and
// the sharding it searches itself: not also flags of one value.
std::vector<std::string> options_searched() {
  std::vector<std::string> out{"tp", "ep", "dp"};
  for (const g5sim::Knob* k : g5sim::knobs_taking(g5sim::kSearchList)) {
    if (k->run_option) out.push_back(k->name);
  }
  return out;
}

class SearchCommand final : public Command {
 public:
  explicit SearchCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "search",
            "the best deployment under an SLO: every sharding, batch cap, chunk, disaggregation and MTP of a model "
            "on one or more chips serves the same requests; the Pareto front of tokens/s per chip against per user")),
        options_(app(), g5sim::kServe, options_searched()),
        knobs_(app(), kSearchUse) {
    CLI::App* a = app();
    a->add_option("--chip", chips_, "the chips, comma separated: config files or shipped names (sg2262,h100)")
        ->delimiter(',');
    a->add_option("--model", model_, "the model: a config file or a shipped name [default: deepseek-v3]")
        ->check(non_empty_path());
    a->add_option("--csv", csv_, "write every point to PATH ('-' for stdout only)")->check(non_empty_path());
    a->add_option("--json", json_, "also write the report to PATH ('-' for stdout only)")->check(non_empty_path());
  }

  int run(const CliLimits& limits) override {
    try {
      return search_command(limits);
    } catch (const g5sim::ConfigError& e) {
      throw_as_command_line("search", kSearchUse, e);
    }
  }

 private:
  int search_command(const CliLimits& limits) {
    std::vector<g5sim::Chip> chips;
    if (chips_.empty()) chips_.push_back("");
    for (const std::string& c : chips_) chips.push_back(chip_of(c));
    g5sim::SearchSpec spec =
        g5sim::search_spec_of(std::move(chips), model_of(model_), options_.request(limits), knobs_.items());
    spec.max_steps = limits.max_serve_steps;
    // Outputs are opened (checked) before the long part.
    OutputSet outputs({{"--csv", csv_}, {"--json", json_}});
    std::optional<ProgressLine> progress;
    if (isatty(STDERR_FILENO) != 0) progress.emplace();
    const g5sim::SearchReport report =
        g5sim::search(spec, [&](std::size_t done, std::size_t total, std::uint64_t pass) {
          if (progress && progress->due()) {
            // The pass's points so far: a refining pass adds points, so the time left is the
            // current pass's.
            const double seconds = progress->seconds();
            progress->show(fmt::format("search: {} of {} points (pass {}), {:.0f} s{}", done, total, pass, seconds,
                                       pace(done, total, seconds, "points")));
          }
        });
    if (progress) progress->clear();
    write_outputs(
        outputs, [&](std::ostream& out) { g5sim::write_search_table(out, report); },
        [&](std::ostream& out) { g5sim::write_search_csv(out, report); },
        [&](std::ostream& out) { g5sim::write_search_json(out, report); });
    return 0;
  }

  RunOptionFlags options_;
  KnobFlags knobs_;
  std::vector<std::string> chips_;
  std::string model_, csv_, json_;
};

}  // namespace

CommandPtr make_search(CLI::App& app) { return std::make_unique<SearchCommand>(app); }

}  // namespace tools
