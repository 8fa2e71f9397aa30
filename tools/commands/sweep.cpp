// g5sim sweep: every point of a grid (chips x models x phases x formats x modes x batches x
// contexts), one tidy CSV row or JSON line each (explore/grid_sweep.hpp), in shards when asked.

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unistd.h>

#include "api/parallel_for.hpp"
#include "hw/input_file.hpp"
#include "hw/number_text.hpp"
#include "tools/cli_error.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"

namespace tools {

using explore::chip_labels;
using explore::csv_cell_count;
using explore::failed_point_identity;
using explore::grid_fingerprint;
using explore::grid_point;
using explore::grid_points;
using explore::grid_size;
using explore::GridAxis;
using explore::GridHeader;
using explore::point_request;
using explore::SweepColumns;
using explore::SweepGrid;
using explore::SweepPoint;
using explore::SweepRow;
using explore::write_sweep_csv_header;
using explore::write_sweep_csv_row;
using explore::write_sweep_json_line;

using api::parallel_for;
namespace {

// "I/N" -> (I, N) with 0 <= I < N.
std::pair<std::uint64_t, std::uint64_t> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  const std::optional<std::uint64_t> i = hw::read_whole_number(std::string_view(text).substr(0, slash));
  const std::optional<std::uint64_t> n =
      slash == std::string::npos ? std::nullopt : hw::read_whole_number(std::string_view(text).substr(slash + 1));
  if (!i || !n || *n == 0 || *i >= *n || *n > 1'000'000) {
    throw CliError(
        fmt::format("--shard: '{}' is not I/N with 0 <= I < N (a Slurm array's task id over its size)", text));
  }
  return {*i, *n};
}

// One point's runs: as asked, and (--head-split) with attention split by heads; or (--keep-going)
// why it failed; or (--resume) its row as the earlier file has it.
struct Done {
  std::optional<g5sim::Result> result, heads;
  std::string error;
  std::string kept_row;
};

// The rows an earlier run of this very grid and shard left (--resume): PATH.partial when an
// interrupt or an error left one, else PATH. Rows that failed (an error cell) or were cut are
// run again.
std::map<std::uint64_t, std::string> rows_to_keep(const std::string& path, const GridHeader& header,
                                                  std::string& read_from) {
  std::map<std::uint64_t, std::string> rows;
  std::error_code ec;
  read_from = std::filesystem::exists(path + ".partial", ec) ? path + ".partial" : path;
  if (!std::filesystem::exists(read_from, ec)) return rows;
  std::istringstream in(hw::read_input_file(read_from));
  std::string line;
  if (!std::getline(in, line)) return rows;
  const GridHeader earlier = GridHeader::parse(line, read_from);
  if (earlier.line() != header.line()) {
    throw CliError(fmt::format("--resume: {} is of another grid or shard ('{}'; this sweep is '{}')", read_from, line,
                               header.line()));
  }
  std::string columns;
  std::getline(in, columns);
  const std::size_t cells = csv_cell_count(columns);
  const bool error_column = columns.size() >= 6 && columns.compare(columns.size() - 6, 6, ",error") == 0;
  while (std::getline(in, line)) {
    if (in.eof() || csv_cell_count(line) != cells) break;  // the last line, cut by the interrupt
    if (error_column && line.back() != ',') continue;      // a failed point: run it again
    const std::optional<std::uint64_t> point = hw::read_whole_number(line.substr(0, line.find(',')));
    if (!point || line.find(',') == std::string::npos) break;
    rows.emplace(*point, line);
  }
  return rows;
}

class SweepCommand final : public Command {
 public:
  explicit SweepCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "sweep", "simulate a grid (chips x models x phases x formats x modes x batches x contexts), tidy CSV out")),
        options_(app(), g5sim::kGridFixed) {
    grid_.add_to(app());
    app()->add_option("--sharding", sharding_,
                      "auto (the smallest that fits DDR, per point) or fixed (--tp/--ep/--dp); default: fixed when "
                      "one of them is given");
    app()->add_option("--shard", shard_, "run only points p with p mod N == I (I/N, e.g. a Slurm array task)");
    app()
        ->add_option("--csv", csv_path_, "CSV destination ('-' = stdout, 'none' = no CSV)")
        ->capture_default_str()
        ->check(non_empty_path());
    app()
        ->add_option("--json", json_path_, "also write JSON lines, one object per point, to PATH ('-': stdout)")
        ->check(non_empty_path());
    app()
        ->add_option("--jobs", jobs_, "points simulated at once, on as many threads (default: the machine's cores)")
        ->check(count_in(1, g5sim::run_limits().max_jobs));
    app()->add_flag("--head-split", head_split_,
                    "also simulate each point with --attn-split head: columns head_split_total_ns, "
                    "head_split_kv_cache_read_bytes");
    app()->add_flag("--keep-going", keep_going_,
                    "run every point: a point that fails gets its message in an `error` column (and the others "
                    "their figures); exit 3 when any failed");
    app()->add_flag("--resume", resume_,
                    "keep the rows an earlier run of this grid left at --csv PATH (or PATH.partial, which an "
                    "interrupt or an error leaves) and run only the other points");
  }

  int run(const CliLimits& limits) override {
    const g5sim::Request base = options_.request(limits);
    const SweepGrid grid = grid_.grid(base);
    const auto [shard, shards] = shard_.empty() ? std::pair<std::uint64_t, std::uint64_t>{0, 1} : parse_shard(shard_);
    check_sharding(base);
    const std::vector<g5sim::Chip> chips = load_chips(grid);
    const std::vector<g5sim::Model> models = models_of(grid);
    refuse_without_effect(grid, models, base);
    // This shard's points, made one batch at a time from their numbers: shard + k x shards.
    const std::uint64_t size = grid_size(grid);
    const std::uint64_t count = size > shard ? (size - shard + shards - 1) / shards : 0;
    labels_ = chip_labels(chips);
    columns_ = SweepColumns{head_split_, keep_going_};
    const GridHeader header{g5sim::version(), size, grid_fingerprint(grid, chips, models, base, head_split_), shard,
                            shards};
    const bool to_file = csv_path_ != "-" && csv_path_ != "none";
    if (resume_ && (!to_file || !json_path_.empty())) {
      throw CliError(
          "--resume keeps the rows of a CSV file: give --csv PATH, and no --json (its lines would lack them)");
    }
    std::string resumed_from;
    const std::map<std::uint64_t, std::string> kept =
        resume_ ? rows_to_keep(csv_path_, header, resumed_from) : std::map<std::uint64_t, std::string>{};
    if (!keep_going_) check_every_point(grid, chips, models, base, shard, shards, count);
    OutputSet outputs({{"--csv", csv_path_ == "none" ? "" : csv_path_}, {"--json", json_path_}});
    OutputFile* csv = outputs.get("--csv");
    OutputFile* json = outputs.get("--json");
    // An interrupt or an error keeps the rows written so far for --resume.
    if (to_file) csv->keep_unfinished_at(csv_path_ + ".partial");
    if (csv) write_sweep_csv_header(csv->stream(), header, columns_);
    std::uint64_t failed = 0;
    const bool progress = isatty(STDERR_FILENO) != 0;
    const auto started = std::chrono::steady_clock::now();
    const unsigned jobs = jobs_or_default(jobs_);
    for (std::uint64_t first = 0; first < count; first += jobs) {
      std::vector<SweepPoint> points;
      for (std::uint64_t k = first; k < std::min(count, first + jobs); ++k) {
        points.push_back(grid_point(grid, shard + k * shards));
      }
      std::vector<Done> done(points.size());
      parallel_for(done.size(), jobs, [&](std::size_t i) {
        if (const auto row = kept.find(points[i].index); row != kept.end()) {
          done[i].kept_row = row->second;
        } else {
          done[i] = simulate_point(chips, models, base, points[i]);
        }
      });
      for (std::size_t i = 0; i < done.size(); ++i) {
        if (!done[i].error.empty()) ++failed;
        write_point(points[i], done[i], grid, chips, models, base, csv, json);
      }
      if (csv) csv->stream().flush();
      if (json) json->stream().flush();
      if (progress) print_progress(first + done.size(), count, started);
    }
    if (progress && count > 0) std::cerr << '\n';
    warn_changing_deployments();
    outputs.close();
    std::error_code ec;
    if (to_file) std::filesystem::remove(csv_path_ + ".partial", ec);  // the whole file is there now
    if (resume_) {
      std::cerr << fmt::format("g5sim: resumed: {} of {} points kept from {}, {} run\n", kept.size(), count,
                               resumed_from, count - std::min<std::uint64_t>(count, kept.size()));
    }
    if (failed > 0) {
      std::cerr << fmt::format("g5sim: {} of {} points failed (their `error` cells say why)\n", failed, count);
      return 3;
    }
    return 0;
  }

 private:
  void check_sharding(const g5sim::Request& base) const {
    const bool fixed = base.tp || base.ep || base.dp || !grid_.values("tp").empty() || !grid_.values("ep").empty() ||
                       !grid_.values("dp").empty();
    if (sharding_ == "auto" && fixed) {
      throw CliError("--sharding auto chooses tp, ep and dp per point: drop --tp/--ep/--dp, or say fixed");
    }
    if (sharding_ == "fixed" && !fixed) throw CliError("--sharding fixed needs --tp, --ep or --dp");
    if (!sharding_.empty() && sharding_ != "auto" && sharding_ != "fixed") {
      throw CliError(fmt::format("--sharding: expected auto or fixed, got '{}'", sharding_));
    }
  }

  static std::vector<g5sim::Chip> load_chips(const SweepGrid& grid) {
    std::vector<g5sim::Chip> chips;
    for (const std::string& path : grid.chips.empty() ? std::vector<std::string>{""} : grid.chips) {
      chips.push_back(chip_of(path));
    }
    return chips;
  }

  // Over the whole grid, so that every shard of it says the same. The rules never look at the
  // batch or the context, so one of each stands for all (a large grid is checked at once).
  void refuse_without_effect(const SweepGrid& grid, const std::vector<g5sim::Model>& models,
                             const g5sim::Request& base) const {
    SweepGrid rules_grid = grid;
    if (const GridAxis* batches = grid.axis("batch")) rules_grid.set_axis("batch", {batches->values.front()});
    if (!grid.contexts.empty()) rules_grid.contexts = {grid.contexts.front()};
    const std::vector<SweepPoint> rules_points = grid_points(rules_grid);
    refuse_options_without_effect(grid_.given(options_), models, rules_points, base, true);
    if (head_split_ && base.attn_split == "head") {
      throw CliError("--head-split: the points already run with --attn-split head (the columns would repeat them)");
    }
    // --head-split reruns points with attention split by heads: it applies where --attn-split does.
    if (const std::string why = head_split_ ? why_no_point_feels("attn_split", models, rules_points, base) : "";
        !why.empty()) {
      throw CliError("--head-split: changes no point of the grid: " + why);
    }
  }

  // Every point's deployment of this shard, before the first runs: a combination of list values
  // that cannot run (ep 16 over 8 chips, no sharding that holds the KV cache) fails now, not after
  // the points before it. No simulation: a few microseconds a point.
  void check_every_point(const SweepGrid& grid, const std::vector<g5sim::Chip>& chips,
                         const std::vector<g5sim::Model>& models, const g5sim::Request& base, std::uint64_t shard,
                         std::uint64_t shards, std::uint64_t count) const {
    for (std::uint64_t k = 0; k < count; ++k) {
      const SweepPoint p = grid_point(grid, shard + k * shards);
      try {
        g5sim::check_deployment(chips[p.chip], models[p.model], point_request(base, p));
      } catch (const g5sim::ConfigError& e) {
        throw CliError(
            fmt::format("sweep point {} ({} {}, {}): {} (checked before any point ran; --keep-going runs "
                        "the others and gives this one an error cell)",
                        p.index, labels_[p.chip], models[p.model].name(), p.describe(), cli_message(e)));
      }
    }
  }

  Done simulate_point(const std::vector<g5sim::Chip>& chips, const std::vector<g5sim::Model>& models,
                      const g5sim::Request& base, const SweepPoint& p) const {
    const g5sim::Request request = point_request(base, p);
    Done done;
    try {
      done.result = g5sim::simulate(chips[p.chip], models[p.model], request);
      if (!head_split_ || !g5sim::why_option_does_not_apply("attn_split", models[p.model], request).empty()) {
        return done;
      }
      g5sim::Request by_heads = request;
      by_heads.attn_split = "head";
      done.heads = g5sim::simulate(chips[p.chip], models[p.model], by_heads);
    } catch (const g5sim::ConfigError& e) {
      if (keep_going_) {
        done = Done{};
        done.error = cli_message(e);
        return done;
      }
      // One line naming the point, then what the run would have said.
      throw CliError(
          fmt::format("sweep point {} ({} {}, {}): {} (--keep-going runs the other points and gives this "
                      "one an error cell)",
                      p.index, labels_[p.chip], models[p.model].name(), p.describe(), cli_message(e)));
    }
    return done;
  }

  void write_point(const SweepPoint& point, const Done& done, const SweepGrid& grid,
                   const std::vector<g5sim::Chip>& chips, const std::vector<g5sim::Model>& models,
                   const g5sim::Request& base, OutputFile* csv, OutputFile* json) {
    if (!done.kept_row.empty()) {
      csv->stream() << done.kept_row << '\n';
      return;
    }
    SweepRow row;
    row.point = &point;
    row.chip_label = labels_[point.chip];
    if (!done.result) {
      row.error = done.error;
      row.identity = failed_point_identity(point, base, chips[point.chip], models[point.model]);
      if (csv) write_sweep_csv_row(csv->stream(), row, columns_);
      if (json) write_sweep_json_line(json->stream(), row, columns_);
      return;
    }
    const g5sim::Result& r = *done.result;
    print_warnings(r.warnings);
    row.result = &r;
    row.head_split = done.heads ? &*done.heads : nullptr;
    if (csv) write_sweep_csv_row(csv->stream(), row, columns_);
    if (json) write_sweep_json_line(json->stream(), row, columns_);
    if (r.automatic_sharding && grid.contexts.size() > 1) {
      // The points that differ only by their context; without a batch axis the batch is the
      // deployment's (one sequence per DP rank) and may change with it.
      std::string group = fmt::format("{} {}", labels_[point.chip], r.model);
      for (const auto& [option, value] : point.settings) group += fmt::format(", {} {}", option, value);
      Chosen& chosen = deployments_[group];
      chosen.shardings.insert(fmt::format("tp {} ep {} dp {}", r.tp, r.ep, r.dp));
      chosen.batches.insert(r.batch);
    }
  }

  static void print_progress(std::uint64_t n, std::uint64_t count, std::chrono::steady_clock::time_point started) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const double rate = seconds > 0 ? static_cast<double>(n) / seconds : 0;
    std::cerr << fmt::format("\rsweep: {}/{} points, {:.1f} points/s, {:.0f} s left   ", n, count, rate,
                             rate > 0 ? static_cast<double>(count - n) / rate : 0.0)
              << std::flush;
  }

  // Per point without its context, the automatic shardings chosen: several are rows that look
  // comparable but ran on different deployments.
  void warn_changing_deployments() const {
    for (const auto& [group, chosen] : deployments_) {
      if (chosen.shardings.size() < 2) continue;
      std::string batch;
      if (chosen.batches.size() > 1) {
        batch = fmt::format(", and the batch with it (one sequence per DP rank: {}; --batch fixes it)",
                            fmt::join(chosen.batches, ", "));
      }
      std::cerr << "g5sim: warning: the automatic sharding changes with the context (" << printable(group) << ": "
                << fmt::format("{}", fmt::join(chosen.shardings, ", ")) << ")" << batch
                << "; the tp, ep, dp and chips columns say which, --tp/--ep/--dp fix one\n";
    }
  }

  RunOptionFlags options_;
  GridFlags grid_;
  std::string csv_path_ = "-", json_path_, sharding_, shard_;
  unsigned jobs_ = 0;
  bool head_split_ = false, keep_going_ = false, resume_ = false;
  SweepColumns columns_;
  struct Chosen {
    std::set<std::string> shardings;
    std::set<std::uint64_t> batches;
  };
  std::map<std::string, Chosen> deployments_;
  std::vector<std::string> labels_;  // the chips as rows name them
};

}  // namespace

CommandPtr make_sweep(CLI::App& app) { return std::make_unique<SweepCommand>(app); }

}  // namespace tools
