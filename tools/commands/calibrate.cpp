// g5sim calibrate: chip fields fitted to measurements (Levenberg-Marquardt on the log error), or
// a calibrated config's fit transferred to a chip of the same silicon (--transfer-from),
// written as a calibrated chip YAML with its record (explore/validation/calibration.hpp).

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <optional>
#include <unistd.h>

#include "explore/validation/calibration.hpp"
#include "explore/validation/row_prediction.hpp"
#include "g5sim/run_options.hpp"
#include "g5sim/runtime.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/progress_line.hpp"

namespace tools {
namespace {

class CalibrateCommand final : public Command {
 public:
  explicit CalibrateCommand(CLI::App& parent)
      : Command(
            parent.add_subcommand("calibrate",
                                  "fit chip fields (kernel and step rows) or runtime fields (the serve and step rows "
                                  "naming the runtime) to measurements (Levenberg-Marquardt on log error)")) {
    CLI::Option* chip = app()->add_option("--chip", chip_, "chip config YAML, or a shipped chip's stem (bm1684x)");
    CLI::Option* runtime =
        app()
            ->add_option("--runtime", runtime_,
                         "instead of --chip: a runtime config (configs/runtimes/ name or YAML path), fitted to the "
                         "rows whose options name it, each on its calibrated chip")
            ->excludes(chip);
    chip->excludes(runtime);
    app()
        ->add_option("--measured", measured_,
                     "measurement table (default: the shipped validation/measured.csv); rows of this chip are fitted")
        ->check(non_empty_path());
    app()
        ->add_option("--fit", fit_,
                     "fields to fit, dotted (ddr.efficiency,engines.tiu.cube_efficiency; a runtime's step.cpu_ns,"
                     "kernels.graph.gap_ns), each optionally =LO:HI; default bounds: an efficiency 0.05..1, another "
                     "value x/10..10x")
        ->delimiter(',');
    app()
        ->add_option("--transfer-from", transfer_from_,
                     "instead of --fit: take the fit of a calibrated config of the same silicon (its record's "
                     "fitted fields and error bands; H200 from h100.calibrated.yaml), checked on this chip's rows")
        ->excludes("--fit")
        ->check(non_empty_path());
    app()
        ->add_option("--out", out_, "calibrated chip YAML to write ('-' for stdout)")
        ->required()
        ->check(non_empty_path());
    app()->add_option("--rows", rows_, "only these row ids")->delimiter(',');
    app()
        ->add_option("--jobs", jobs_, "threads (default: the machine's cores)")
        ->check(count_in(1, g5sim::run_limits().max_jobs));
    app()
        ->add_option("--max-iterations", max_iterations_, "Levenberg-Marquardt iterations")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    app()->add_flag("--no-leave-one-out", no_leave_one_out_, "skip the cross-validation refits");
    app()
        ->add_option("--folds", folds_,
                     "cross-validation folds (rows i mod K held out); default: leave-one-out up to 20 rows, else 10")
        ->check(count_in(2, 100000));
    app()
        ->add_option("--cv", cv_,
                     "group cross-validations besides the row folds: model (leave one model out), setup (leave one "
                     "hardware set-up, an SDK or kernel library or a serving engine on its GPUs, out), run (leave "
                     "one benchmark run out: a serving run's metrics at one concurrency or rate); default: model")
        ->delimiter(',')
        ->check(CLI::IsMember({"model", "setup", "run"}));
    app()
        ->add_option("--max-commands", max_commands_, "drop rows estimated to need more commands")
        ->capture_default_str()
        ->check(count_in(1, g5sim::run_limits().max_commands));
  }

  int run(const CliLimits& limits) override {
    namespace v = explore::validation;
    if (chip_.empty() == runtime_.empty()) {
      throw CliError("calibrate: give --chip (a chip's fit) or --runtime (a runtime's fit)");
    }
    v::MeasuredTable table = v::read_measured_file(v::measured_path_or_shipped(measured_));
    if (table.rows.size() > limits.max_table_rows) table.rows.resize(limits.max_table_rows);
    // A file that exists as given (from the working directory) is that file; otherwise a stem
    // names a shipped config, and a path is the table's, as in its chip column.
    const std::string chip_path = !runtime_.empty() ? g5sim::runtime_path(runtime_)
                                  : std::filesystem::is_regular_file(chip_)
                                      ? chip_
                                      : v::ConfigResolver(table.path, false).chip_path(chip_);
    // As --chip: a file as given, else a shipped config's stem.
    const std::string transfer_path = transfer_from_.empty() || std::filesystem::is_regular_file(transfer_from_)
                                          ? transfer_from_
                                          : v::ConfigResolver(table.path, false).chip_path(transfer_from_);
    OutputSet outputs({{"--out", out_}});
    v::CalibrationOptions options;
    options.fit = fit_;
    options.rows = rows_;
    options.jobs = jobs_or_default(jobs_);
    options.max_iterations = max_iterations_;
    options.leave_one_out = !no_leave_one_out_;
    options.folds = folds_;
    if (!cv_.empty()) options.cv_groups = cv_;
    options.chip_label = runtime_.empty() ? chip_ : runtime_;
    options.table_label = measured_.empty() ? "validation/measured.csv (shipped)" : measured_;
    options.max_commands = std::min(max_commands_, limits.max_commands);
    options.transfer_from = transfer_path;
    options.transfer_label = transfer_from_;
    // A fit and its cross-validation refits take minutes: a progress line on a terminal.
    std::optional<ProgressLine> progress;
    if (isatty(STDERR_FILENO) != 0) progress.emplace();
    options.progress = [&](const v::CalibrationProgress& p) {
      if (!progress || !progress->due()) return;
      constexpr std::size_t kStageWidth = 60;
      const std::string stage = p.stage.size() > kStageWidth ? p.stage.substr(0, kStageWidth - 3) + "..." : p.stage;
      const std::string mape = p.mape < 0 ? std::string() : fmt::format(", MAPE {:.1f} %", p.mape);
      progress->show(
          fmt::format("calibrate: {}{}; {} simulations, {:.0f} s", stage, mape, p.simulations, progress->seconds()));
    };
    const v::CalibrationResult result =
        runtime_.empty() ? v::calibrate(chip_path, table, options) : v::calibrate_runtime(chip_path, table, options);
    if (progress) progress->clear();
    outputs.get("--out")->stream() << result.calibrated_yaml;
    outputs.close();
    v::write_calibration_report(outputs.on_stdout() ? std::cerr : std::cout, result);
    check_stdout();
    return 0;
  }

 private:
  std::string chip_, runtime_, measured_, out_, transfer_from_;
  std::vector<std::string> cv_;
  std::vector<std::string> fit_, rows_;
  unsigned jobs_ = 0;
  int max_iterations_ = 30;
  bool no_leave_one_out_ = false;
  std::size_t folds_ = 0;
  std::uint64_t max_commands_ = std::uint64_t{1} << 25;
};

}  // namespace

CommandPtr make_calibrate(CLI::App& app) { return std::make_unique<CalibrateCommand>(app); }

}  // namespace tools
