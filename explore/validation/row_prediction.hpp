#pragma once
// Predicting a measured row: simulate what the row describes and read its metric off the run.
//
//   step, block  g5sim::simulate with the row's phase, batch, ctx, q_len, dtypes, sharding, cores
//                and options (mla_mode, prefill_mla_mode, attn_split, kv_read_engine,
//                micro_batches, layers)
//   matmul, fa2  the op alone (g5sim op) on the row's cores, shape from the options
// Metrics (T = the run's time, in s):
// (T: the step as its runtime runs it, Result::step_ps: the chip's time without one.)
//   step_ms 1e3 T;  first_token_s T;  kernel_us 1e6 T;  tflops FLOPs / T / 1e12;
//   tokens_per_s    the simulated chip's tokens / T = batch x q_len / dp / T;
//   op_us           the mean interval, in us, of the ops named `op` in the run.
// A row whose run raises ConfigError (a feature or config the simulator lacks, a shape it refuses)
// is "skipped" with that message; so is a row whose chip or model config does not exist.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/parallel_for.hpp"
#include "explore/validation/measured_rows.hpp"
#include "g5sim/g5sim.hpp"
#include "g5sim/serve.hpp"
#include "hw/error_band.hpp"

namespace explore::validation {

using api::parallel_for;

/// Resolves the chip and model cells of a table: a cell with a '/' or ending in .yaml/.json is
/// a path (relative to the table's folder unless absolute); otherwise the stem of a shipped config
/// (data_dir()/configs/chips/STEM.yaml). With `calibrated`, STEM.calibrated.yaml is used where it
/// exists. Loaded configs are cached. Throws ConfigError when a config is missing or invalid.
class ConfigResolver {
 public:
  ConfigResolver(std::string table_path, bool calibrated);
  std::string chip_path(const std::string& cell) const;
  std::string model_path(const std::string& cell) const;
  g5sim::Chip chip(const std::string& cell);
  g5sim::Model model(const std::string& cell);

 private:
  std::string resolve(const std::string& cell, const std::string& folder, const std::string& extension) const;
  std::string table_dir_;
  bool calibrated_;
  std::vector<std::pair<std::string, g5sim::Chip>> chips_;
  std::vector<std::pair<std::string, g5sim::Model>> models_;
};

/// A config's stem: "configs/chips/bm1684x.calibrated.yaml" -> "bm1684x".
std::string config_stem(const std::string& path);

struct Prediction {
  std::optional<double> value;  ///< empty: skipped
  std::string skipped;          ///< why, when skipped
  std::uint64_t commands = 0;   ///< simulated commands
};

/// The kind of work a row measures, as error bands group rows (hw/error_band.hpp): an op alone,
/// or one op of a step (op_us), is a kernel; a block a block; a step a decode or prefill step.
hw::BandKind band_kind_of(const MeasuredRow& row);
/// The row's time ratio predicted / measured: the metric's ratio for a time, its inverse for a
/// rate (tokens_per_s, tflops).
double time_ratio(const MeasuredRow& row, double predicted);

/// What a prediction may change of the rows it runs: the runtime of step, block and serve rows
/// (a name or path; "" keeps each row's own), and a step store the serves share (a fit's trials
/// price the same chip steps under each trial runtime).
struct RowOverrides {
  std::string runtime;
  std::shared_ptr<g5sim::SharedStepTimes> shared_steps;
};

/// Predicts one row with the given chip (and, for step and block rows, model).
Prediction predict(const MeasuredRow& row, const g5sim::Chip& chip, const g5sim::Model* model,
                   std::uint64_t max_commands, const RowOverrides& overrides = {});
/// What decides a row's run (all but its identity, metric, value and the `op` it reads): rows
/// with the same key share one simulation.
std::string run_key(const MeasuredRow& row);
/// Predicts rows that share one run key with a single simulation.
std::vector<Prediction> predict_all(const std::vector<const MeasuredRow*>& rows, const g5sim::Chip& chip,
                                    const g5sim::Model* model, std::uint64_t max_commands,
                                    const RowOverrides& overrides = {});

}  // namespace explore::validation
