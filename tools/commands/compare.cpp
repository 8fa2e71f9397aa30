// g5sim compare: the same workloads on several chips, one row per workload with each chip's
// latency, tokens/s, deployment and speedup over the first (tools/chip_comparison.hpp).

#include <fmt/format.h>

#include <iostream>
#include <optional>

#include "tools/chip_comparison.hpp"
#include "tools/cli_error.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/parallel_for.hpp"

namespace tools {
namespace {

class CompareCommand final : public Command {
 public:
  explicit CompareCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "compare", "the same workloads on several chips (--chip A.yaml,B.yaml): one table, with speedups")),
        options_(app(), g5sim::kGridFixed) {
    grid_.add_to(app());
    app()->add_option("--csv", csv_path_, "also write CSV to PATH ('-' for stdout only)")->check(non_empty_path());
    app()
        ->add_option("--jobs", jobs_, "points simulated at once (default: the machine's cores)")
        ->check(count_in(1, g5sim::run_limits().max_jobs));
  }

  // Points run as a sweep's (the chip outermost, so workload w of chip c is point
  // c x workloads + w), then one row per workload.
  int run(const CliLimits& limits) override {
    const g5sim::Request base = options_.request(limits);
    if (grid_.chips.size() < 2) throw CliError("--chip: compare needs two chips or more (A.yaml,B.yaml)");
    if (grid_.values("batch").empty()) {
      throw CliError("--batch: compare needs it (one sequence per DP rank would differ between chips)");
    }
    const SweepGrid grid = grid_.grid();
    std::vector<g5sim::Chip> chips;
    for (const std::string& path : grid.chips) chips.push_back(chip_of(path));
    const std::vector<g5sim::Model> models = models_of(grid);
    std::optional<OutputFile> csv;
    if (!csv_path_.empty()) csv.emplace(csv_path_, "--csv");
    const std::uint64_t size = grid_size(grid);
    if (size / chips.size() > kMaxComparedWorkloads) {
      throw CliError(fmt::format("compare: {} workloads, more than {} (g5sim sweep --chip ... writes any number)",
                                 size / chips.size(), kMaxComparedWorkloads));
    }
    const std::vector<SweepPoint> points = grid_points(grid);
    refuse_options_without_effect(grid_.given(options_), models, points, base, true);
    std::vector<ComparedRun> runs(points.size());
    parallel_for(points.size(), jobs_or_default(jobs_), [&](std::size_t i) {
      const SweepPoint& p = points[i];
      const g5sim::Request request = point_request(base, p);
      try {
        runs[i] = ComparedRun::of(g5sim::simulate(chips[p.chip], models[p.model], request));
      } catch (const g5sim::ConfigError& e) {
        throw CliError(fmt::format("compare on {} ({}, {}): {}", chips[p.chip].name(), models[p.model].name(),
                                   p.describe(), cli_message(e)));
      }
    });
    const std::size_t workloads = points.size() / chips.size();
    std::vector<std::vector<ComparedRun>> rows(workloads);
    for (std::size_t c = 0; c < chips.size(); ++c) {
      for (std::size_t w = 0; w < workloads; ++w) rows[w].push_back(std::move(runs[c * workloads + w]));
    }
    for (const auto& row : rows) {
      for (const ComparedRun& r : row) print_warnings(r.warnings);
    }
    if (csv_path_ != "-") write_comparison_table(std::cout, rows);
    if (csv) {
      write_comparison_csv(csv->stream(), rows);
      csv->close();
    }
    check_stdout();
    return 0;
  }

 private:
  RunOptionFlags options_;
  GridFlags grid_;
  std::string csv_path_;
  unsigned jobs_ = 0;
};

}  // namespace

CommandPtr make_compare(CLI::App& app) { return std::make_unique<CompareCommand>(app); }

}  // namespace tools
