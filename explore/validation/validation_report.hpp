#pragma once
// `g5sim validate`: predict every row of a measurement table and compare.
//   error_i = (predicted_i - measured_i) / measured_i x 100 %
//   MAPE    = mean over the rows that ran of |error_i|, per chip config and overall
// Rows marked `exclude` are listed, not run; rows the simulator cannot run are listed as skipped
// with the reason (row_prediction.hpp). Neither counts in a MAPE. Serving rows (workload serve:
// TTFT, TPOT, throughput of a whole serve) have MAPEs of their own, per metric and together, and
// are not in the chips' MAPE: that one is of the steps and ops a calibration fits.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "explore/validation/measured_rows.hpp"
#include "explore/validation/row_prediction.hpp"
#include "hw/error_band.hpp"

namespace explore::validation {

struct RowOutcome {
  MeasuredRow row;          ///< a copy: the report outlives the table
  std::string chip_config;  ///< the config file the row ran on ("" when it was not found)
  std::string status;       ///< "ok", "skipped" or "excluded"
  std::string reason;       ///< why skipped or excluded
  double predicted = 0, error_pct = 0;
  std::uint64_t commands = 0;
};

struct ChipSummary {
  std::string chip;  ///< the rows' chip cell
  std::size_t rows = 0, skipped = 0, excluded = 0;
  double mape = 0;
  /// A calibrated config's record: its held-out MAPEs (row folds, models, set-ups left out).
  std::optional<hw::HeldOutMape> held_out;
};

struct MetricSummary {
  std::string metric;
  std::size_t rows = 0;
  double mape = 0;
};

struct ServingSummary {
  std::size_t rows = 0, skipped = 0, excluded = 0;  ///< rows: ran
  double mape = 0;
  std::vector<MetricSummary> metrics;  ///< in order of first appearance
};

struct ValidationReport {
  std::string table_path;
  bool calibrated = false;
  std::vector<RowOutcome> rows;    ///< in table order
  std::vector<ChipSummary> chips;  ///< in order of first appearance
  std::size_t ran = 0;
  double mape = 0;         ///< overall (serving rows aside)
  ServingSummary serving;  ///< the serving rows
};

struct ValidateOptions {
  bool calibrated = false;  ///< use STEM.calibrated.yaml where one exists (chips, and the runtimes rows name)
  unsigned jobs = 1;
  std::uint64_t max_commands = std::uint64_t{1} << 26;
  std::vector<std::string> only_chips;  ///< non-empty: only rows of these chip cells (each must be one)
  /// Non-empty: only rows of these workloads (step, block, matmul, fa2, serve). A serve row is a
  /// whole serve, about a minute each: `--workload serve` runs them alone, the others without them.
  std::vector<std::string> only_workloads;
  bool progress = false;  ///< a progress line on stderr
  /// Non-empty: every step, block and serve row runs with this runtime (a name or path; "none": the
  /// chip alone) instead of the one its options name.
  std::string runtime;
};

ValidationReport validate_table(const MeasuredTable& table, const ValidateOptions& options);

void write_validation_table(std::ostream& out, const ValidationReport& report);
void write_validation_csv(std::ostream& out, const ValidationReport& report);
void write_validation_json(std::ostream& out, const ValidationReport& report);

}  // namespace explore::validation
