// g5sim compare: the same workloads on several chips, one row per workload with each chip's
// latency, tokens/s, tokens/s per chip, deployment and speedup over the first
// (explore/chip_comparison.hpp). Every chip of a workload runs on one deployment unless
// --sharding auto: the one --tp/--ep/--dp give, else the smallest that fits every chip's DDR
// (the automatic sharding of the chip with the least DDR, which fits the others as the footprint
// does not depend on the chip), so that a speedup compares chips, not chip counts.

#include <fmt/format.h>

#include <atomic>
#include <iostream>
#include <mutex>
#include <optional>
#include <unistd.h>

#include "api/parallel_for.hpp"
#include "explore/chip_comparison.hpp"
#include "tools/cli_error.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"

namespace tools {

using explore::chip_labels;
using explore::ComparedRun;
using explore::grid_fingerprint;
using explore::grid_points;
using explore::grid_size;
using explore::point_request;
using explore::SweepGrid;
using explore::SweepPoint;
using explore::write_comparison_csv;
using explore::write_comparison_table;

using api::parallel_for;
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
        ->add_option("--sharding", sharding_,
                     "fixed: every chip of a workload on one deployment (--tp/--ep/--dp, else the smallest that "
                     "fits every chip); auto: each chip its own smallest (then the table adds x/chip)")
        ->capture_default_str()
        ->check(CLI::IsMember({"fixed", "auto"}));
    app()
        ->add_option("--jobs", jobs_, "points simulated at once (default: the machine's cores)")
        ->check(count_in(1, g5sim::run_limits().max_jobs));
  }

  // Points run as a sweep's (the chip outermost, so workload w of chip c is point
  // c x workloads + w), then one row per workload.
  int run(const CliLimits& limits) override {
    const g5sim::Request base = options_.request(limits);
    if (grid_.chips.size() < 2) throw CliError("--chip: compare needs two chips or more (A.yaml,B.yaml)");
    if (grid_.values("batch").empty() && grid_.values("mix").empty() && base.seqs.empty()) {
      throw CliError(
          "--batch: compare needs it, or --mix / --seqs (one sequence per DP rank would differ between chips)");
    }
    const SweepGrid grid = grid_.grid(base);
    std::vector<g5sim::Chip> chips;
    for (const std::string& path : grid.chips) chips.push_back(chip_of(path));
    for (std::size_t i = 0; i < chips.size(); ++i) {
      for (std::size_t j = i + 1; j < chips.size(); ++j) {
        if (chips[i].sha256() == chips[j].sha256()) {
          print_warnings(
              {fmt::format("--chip: {} and {} are the same config (the same bytes): their speedup is 1 by "
                           "construction",
                           grid.chips[i], grid.chips[j])});
        }
      }
    }
    const std::vector<g5sim::Model> models = models_of(grid);
    OutputSet outputs({{"--csv", csv_path_}});
    const std::uint64_t size = grid_size(grid);
    if (size / chips.size() > explore::kMaxComparedWorkloads) {
      throw CliError(fmt::format("compare: {} workloads, more than {} (g5sim sweep --chip ... writes any number)",
                                 size / chips.size(), explore::kMaxComparedWorkloads));
    }
    const std::vector<SweepPoint> points = grid_points(grid);
    refuse_options_without_effect(grid_.given(options_), models, points, base, true);
    const std::size_t workloads = points.size() / chips.size();
    std::vector<g5sim::Request> requests;
    for (const SweepPoint& p : points) requests.push_back(point_request(base, p));
    const auto failed = [&](std::size_t i, const g5sim::ConfigError& e) {
      const SweepPoint& p = points[i];
      return CliError(fmt::format("compare on {} ({}, {}): {}", chips[p.chip].name(), models[p.model].name(),
                                  p.describe(), cli_message(e)));
    };
    const bool given = base.tp || base.ep || base.dp || !grid_.values("tp").empty() || !grid_.values("ep").empty() ||
                       !grid_.values("dp").empty();
    if (sharding_ == "auto" && given) {
      throw CliError("--sharding auto chooses tp, ep and dp per chip: drop --tp/--ep/--dp, or say fixed");
    }
    if (sharding_ == "fixed" && !given) one_deployment(chips, models, points, workloads, requests, failed);
    const std::vector<std::string> labels = chip_labels(chips);
    std::vector<ComparedRun> runs(points.size());
    const bool progress = isatty(STDERR_FILENO) != 0;
    std::atomic<std::size_t> finished{0};
    std::mutex print;
    parallel_for(points.size(), jobs_or_default(jobs_), [&](std::size_t i) {
      const SweepPoint& p = points[i];
      try {
        runs[i] = ComparedRun::of(g5sim::simulate(chips[p.chip], models[p.model], requests[i]));
        runs[i].chip = labels[p.chip];
      } catch (const g5sim::ConfigError& e) {
        throw failed(i, e);
      }
      if (progress) {
        const std::lock_guard<std::mutex> lock(print);
        std::cerr << fmt::format("\rcompare: {}/{} runs   ", ++finished, points.size()) << std::flush;
      }
    });
    if (progress) std::cerr << '\n';
    std::vector<std::vector<ComparedRun>> rows(workloads);
    for (std::size_t c = 0; c < chips.size(); ++c) {
      for (std::size_t w = 0; w < workloads; ++w) rows[w].push_back(std::move(runs[c * workloads + w]));
    }
    for (const auto& row : rows) {
      for (const ComparedRun& r : row) print_warnings(r.warnings);
    }
    if (!outputs.on_stdout()) write_comparison_table(std::cout, rows);
    if (OutputFile* csv = outputs.get("--csv")) {
      write_comparison_csv(csv->stream(),
                           fmt::format("# g5sim {} compare grid {} points sha256 {} sharding {}", g5sim::version(),
                                       points.size(), grid_fingerprint(grid, chips, models, base, false), sharding_),
                           rows);
    }
    outputs.close();
    return 0;
  }

 private:
  // Each workload's chips on the automatic sharding of the one with the least DDR (the first of
  // those with as little): it fits every other, whose DDR is as large.
  template <class Failed>
  static void one_deployment(const std::vector<g5sim::Chip>& chips, const std::vector<g5sim::Model>& models,
                             const std::vector<SweepPoint>& points, std::size_t workloads,
                             std::vector<g5sim::Request>& requests, const Failed& failed) {
    std::size_t smallest = 0;
    for (std::size_t c = 1; c < chips.size(); ++c) {
      if (chips[c].ddr_capacity_bytes() < chips[smallest].ddr_capacity_bytes()) smallest = c;
    }
    for (std::size_t w = 0; w < workloads; ++w) {
      const std::size_t i = smallest * workloads + w;
      g5sim::Deployment d;
      try {
        d = g5sim::deployment(chips[smallest], models[points[i].model], requests[i]);
      } catch (const g5sim::ConfigError& e) {
        throw failed(i, e);
      }
      for (std::size_t c = 0; c < chips.size(); ++c) {
        g5sim::Request& r = requests[c * workloads + w];
        r.tp = d.tp;
        r.ep = d.ep;
        r.dp = d.dp;
      }
    }
  }

  RunOptionFlags options_;
  GridFlags grid_;
  std::string csv_path_, sharding_ = "fixed";
  unsigned jobs_ = 0;
};

}  // namespace

CommandPtr make_compare(CLI::App& app) { return std::make_unique<CompareCommand>(app); }

}  // namespace tools
