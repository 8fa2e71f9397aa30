// g5sim validate: every published measurement of validation/measured.csv predicted and compared
// (MAPE per chip and overall), explore/validation/.

#include <iostream>
#include <optional>
#include <unistd.h>

#include "explore/validation/validation_report.hpp"
#include "g5sim/run_options.hpp"
#include "g5sim/runtime.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"

namespace tools {
namespace {

class ValidateCommand final : public Command {
 public:
  explicit ValidateCommand(CLI::App& parent)
      : Command(parent.add_subcommand("validate", "predict every published measurement and compare (MAPE)")) {
    app()
        ->add_option("--measured", measured_, "measurement table (default: the shipped validation/measured.csv)")
        ->check(non_empty_path());
    app()->add_flag("--calibrated", calibrated_,
                    "use CHIP.calibrated.yaml and a row's RUNTIME.calibrated.yaml where one is shipped");
    app()->add_option("--chip", chips_, "only rows of this chip (repeatable)");
    app()
        ->add_option("--runtime", runtime_,
                     "run every step, block and serve row with this runtime (configs/runtimes/ name or a YAML path; "
                     "none: the chip alone) instead of the one its options name")
        ->check(non_empty_path());
    app()
        ->add_option("--workload", workloads_,
                     "only rows of these workloads: step, block, matmul, fa2, serve (a comma list; a serve row is a "
                     "whole serve, about a minute each)")
        ->delimiter(',');
    app()->add_option("--csv", csv_path_, "also write CSV to PATH ('-' for stdout only)")->check(non_empty_path());
    app()->add_option("--json", json_path_, "also write JSON to PATH ('-' for stdout only)")->check(non_empty_path());
    app()
        ->add_option("--jobs", jobs_, "threads (default: the machine's cores)")
        ->check(count_in(1, g5sim::run_limits().max_jobs));
    app()
        ->add_option("--max-commands", max_commands_, "skip rows estimated to need more commands")
        ->capture_default_str()
        ->check(count_in(1, g5sim::run_limits().max_commands));
  }

  int run(const CliLimits& limits) override {
    namespace v = explore::validation;
    v::MeasuredTable table = v::read_measured_file(v::measured_path_or_shipped(measured_));
    if (table.rows.size() > limits.max_table_rows) table.rows.resize(limits.max_table_rows);
    OutputSet outputs({{"--csv", csv_path_}, {"--json", json_path_}});
    v::ValidateOptions options;
    options.calibrated = calibrated_;
    options.jobs = jobs_or_default(jobs_);
    options.max_commands = std::min(max_commands_, limits.max_commands);
    options.only_chips = chips_;
    options.only_workloads = workloads_;
    options.progress = isatty(STDERR_FILENO) != 0;
    if (!runtime_.empty()) g5sim::runtime_path(runtime_);  // an unknown name fails before any row runs
    options.runtime = runtime_;
    const v::ValidationReport report = v::validate_table(table, options);
    if (!outputs.on_stdout()) v::write_validation_table(std::cout, report);
    if (OutputFile* csv = outputs.get("--csv")) v::write_validation_csv(csv->stream(), report);
    if (OutputFile* json = outputs.get("--json")) v::write_validation_json(json->stream(), report);
    outputs.close();
    return 0;
  }

 private:
  std::string measured_, csv_path_, json_path_, runtime_;
  std::vector<std::string> chips_, workloads_;
  bool calibrated_ = false;
  unsigned jobs_ = 0;
  std::uint64_t max_commands_ = std::uint64_t{1} << 26;
};

}  // namespace

CommandPtr make_validate(CLI::App& app) { return std::make_unique<ValidateCommand>(app); }

}  // namespace tools
