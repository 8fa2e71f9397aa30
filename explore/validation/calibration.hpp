#pragma once
// `g5sim calibrate`: fit a few chip fields to measurements.
//
// Model. Rows i = 1..n of the table whose chip is the one calibrated, fields p = (p_1..p_m) of its
// config, each within bounds [lo_j, hi_j]. Residual r_i(p) = ln(predicted_i(p) / measured_i):
// log error, so a row counts by its ratio, not its units. Minimise S(p) = sum r_i(p)^2 by
// Levenberg-Marquardt in coordinates z_j = ln p_j when lo_j > 0 (factors act multiplicatively),
// else z_j = p_j:
//   J_ij = (r_i(z + h_j e_j) - r_i(z)) / h_j      (forward differences: one simulation per row and
//                                                  field; h_j = 0.03, then 0.005 from the first
//                                                  minimum; at least one unit for a whole number)
//   (J^T J + lambda diag(J^T J)) dz = -J^T r       (Eigen LDLT; lambda starts at 1e-2, /3 on an
//                                                  accepted step, x4 on a rejected one)
//   z <- clamp(z + dz, bounds)                      (bounds respected by projection)
// until S improves by less than 1e-6 relative, the step is below 1e-4, or max_iterations.
// Predictions are step functions of p (whole cycles, whole bytes), hence the wide difference step.
// Rows are those of the chip that run at the starting values within max_commands; at a trial
// point a row may take up to 4x that (the work split follows the costs) before the fit stops.
// Cross-validation: rows split into K folds by position (i mod K; K = the row count, i.e.
// leave-one-out, up to 20 rows, else 10), each fold refitted without its rows (from the starting
// values, as the full fit starts: a refit begun at the full fit would carry what the held-out rows
// taught it) and its rows predicted; the mean |error| of those predictions is the honest error of the
// calibrated chip on rows it has not seen. By group (--cv): leave one *model* out (rows of one
// model config; op rows by their workload, matmul or fa2) and leave one *set-up* out (rows of one
// `hardware` cell: an SDK, a kernel library, a serving engine on its GPUs), each group refitted
// without its rows: how the fit carries to the next model or SDK, which row folds (mostly the same
// model) flatter. Between the two, leave one *run* out: the rows one benchmark run measured (the
// same hardware, model, shape and options, its metrics and statistics apart: a serving run's
// TTFT, TPOT and throughput at one concurrency or rate) — how the fit carries to the next load on
// a deployment it has seen, a serving set-up as published results state one (engine version,
// GPUs, parallelism, lengths, concurrency or rate).
// Error bands (hw/error_band.hpp): from the row folds' held-out predictions, per kind of work, the
// 10th and 90th percentiles of predicted / measured time, written to the record's `bands`.
// Transfer (--transfer-from SOURCE): no fit. The fields SOURCE's record lists as fitted take
// SOURCE's values in the target config (a chip of the same silicon: H200 from H100's fit), its
// bands come along (their basis says from where), and the target's own rows, none of them seen by
// the fit, check the transfer: their MAPE is the record's held-out figure.

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "explore/validation/measured_rows.hpp"
#include "hw/chip_fields.hpp"
#include "hw/error_band.hpp"

namespace explore::validation {

/// Where a calibration is, after each batch of simulations: the stage ("the fit over 19 rows",
/// "row fold 2 of 3", "set-up out 1 of 3: H200 x4 ..."), the simulations so far, and the MAPE of
/// the stage's best point so far (in percent; negative before its first evaluation).
struct CalibrationProgress {
  std::string stage;
  std::size_t simulations = 0;
  double mape = -1;
};

struct CalibrationOptions {
  std::vector<std::string> fit;   ///< "FIELD" or "FIELD=LO:HI"
  std::vector<std::string> rows;  ///< non-empty: only these row ids
  unsigned jobs = 1;
  int max_iterations = 30;
  bool leave_one_out = true;  ///< the cross-validation refits (row folds, and the groups below)
  std::size_t folds = 0;      ///< 0: leave-one-out up to 20 rows, else 10
  /// Group cross-validations to run besides the row folds: "model", "setup", "run" (see above).
  std::vector<std::string> cv_groups{"model"};
  std::uint64_t max_commands = std::uint64_t{1} << 25;
  std::string date;                     ///< recorded in the output ("" = now, or SOURCE_DATE_EPOCH when set)
  std::string chip_label, table_label;  ///< how the record names them ("" = the paths read)
  std::string transfer_from;            ///< non-empty: take this calibrated config's fit (above), no --fit
  std::string transfer_label;           ///< how the record names it ("" = the path read)
  /// Called after each batch of simulations (a progress line); may be empty.
  std::function<void(const CalibrationProgress&)> progress;
};

struct FittedField {
  hw::ChipField field;  ///< with the starting value
  double lower = 0, upper = 0, fitted = 0;
  bool log_scale = true;
};

struct CalibratedRow {
  std::string id;
  double measured = 0, before = 0, after = 0, leave_one_out = 0;  ///< predictions
  bool has_leave_one_out = false;
  /// Predicted with its model's / set-up's / benchmark run's rows left out.
  std::optional<double> model_out, setup_out, run_out;
  std::string model_group, setup_group, run_group;  ///< the groups it belongs to
};

/// A group cross-validation's outcome: how many groups, and the MAPE of its held-out predictions
/// (over the rows whose group could be left out: a fit needs as many rows as fields).
struct GroupValidation {
  std::size_t groups = 0, rows = 0;
  double mape = 0;
};

struct CalibrationResult {
  std::string chip_path, table_path, date;
  std::vector<FittedField> fields;
  std::vector<CalibratedRow> rows;
  std::vector<std::string> dropped;  ///< rows that could not run, with the reason
  int iterations = 0;
  std::size_t folds = 0;
  std::size_t simulations = 0;
  double rms_log_before = 0, rms_log_after = 0;
  double mape_before = 0, mape_after = 0, mape_leave_one_out = 0;
  std::optional<GroupValidation> leave_model_out, leave_setup_out, leave_run_out;
  std::optional<hw::ErrorBands> bands;  ///< from the row folds' held-out predictions
  /// Per band (in bands->bands order): the share of its rows inside a band built from its other
  /// rows alone (leave-one-out over the ratios): what the coverage is worth on the next row.
  std::vector<double> band_row_coverage;
  std::vector<double> after_predictions;  ///< each row's prediction with the fitted values (rows' order)
  std::string calibrated_yaml;            ///< the chip config with the fitted values and a `calibration` record
  std::string transferred_from;           ///< non-empty: the fit came from this calibrated config, not from the rows
  bool runtime_fit = false;               ///< a runtime's fit (calibrate_runtime): its record is not read back
};

/// Throws hw::ConfigError on bad fields, bounds, rows or configs.
CalibrationResult calibrate(const std::string& chip_path, const MeasuredTable& table,
                            const CalibrationOptions& options);

/// A runtime's fields fitted the same way (the model above) to the rows whose options name it
/// (serve and step rows), each row on its chip as `validate --calibrated` runs it: the chips keep
/// their own fits (kernel and step rows), the runtime takes what the software adds. A trial
/// runtime prices the serves' chip steps without simulating them again (g5sim::ChipStep), so a
/// trial costs the serving engine's loops. No error bands (a runtime's rows are latencies, not a
/// kind of work). Throws hw::ConfigError as calibrate().
CalibrationResult calibrate_runtime(const std::string& runtime_path, const MeasuredTable& table,
                                    const CalibrationOptions& options);

void write_calibration_report(std::ostream& out, const CalibrationResult& result);

}  // namespace explore::validation
