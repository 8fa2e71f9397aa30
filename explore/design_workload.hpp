#pragma once
// What the design-space commands (sensitivity, solve) share: a chip config held as text, so that
// any numeric field can be set and the chip read again (hw/chip_fields.hpp); and a
// workload, a run or a serve, measured on such a chip by named metrics.
//
// A run's metrics: step_ms (the step's time) and tokens_per_s_per_chip. A serve's: ttft_p50_ms,
// ttft_p99_ms, tpot_p50_ms, tpot_p99_ms, itl_p99_ms, e2e_p50_s, output_tokens_per_s_per_chip and
// goodput_requests_per_s (which needs an SLO). A serve keeps its requests (load, seed, lengths)
// for every chip it is measured on.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "hw/chip_fields.hpp"
#include "serving/serve_settings.hpp"

namespace explore {

/// A chip config as text: what sensitivity and solve rewrite. `source` names it in errors.
struct ChipText {
  std::string text, source;
};
/// The config a chip name or path names (g5sim::chip_path), read whole. Throws ConfigError.
ChipText chip_text_of(const std::string& name_or_path);

/// The fields called `names` (dotted paths), each checked: present, a plain number, named once.
/// Throws ConfigError naming the config and the field (with a did-you-mean) or InputError naming
/// `what` ("fields", "vary") for a name given twice.
std::vector<hw::ChipField> chip_fields_named(const ChipText& chip, const std::vector<std::string>& names,
                                             const std::string& what);
/// The chip with `fields` at `values` (as format_field_value writes them). Throws ConfigError when
/// the config refuses a value (its message names the field, the file and the line).
g5sim::Chip chip_with(const ChipText& chip, const std::vector<hw::ChipField>& fields,
                      const std::vector<double>& values);

const std::vector<std::string>& run_metrics();
const std::vector<std::string>& serve_metrics();

/// A run (base's step) or a serve (`serve`: g5sim serve's settings as space-separated key=value
/// items, its steps' options in base).
struct DesignWorkload {
  ChipText chip;
  g5sim::Model model = g5sim::Model::from_file(g5sim::shipped_model_path());
  g5sim::Request base;
  std::optional<std::string> serve;
  std::optional<double> slo_ttft_ms, slo_tpot_ms;
};

/// serve's settings from key=value items separated by spaces. Throws hw::InputError naming
/// "serve" or the keyword.
serving::ServeSettings serve_settings_of(const std::string& items);

/// One measurement: the metrics asked for, in their order, and what limited the run.
struct Measurement {
  std::vector<double> metrics;
  std::string bound_by;  ///< a run's limiting resource ("" for a serve)
  double bound_share = 0;
  g5sim::Deployment deployment;
  std::vector<std::string> warnings;
};

class WorkloadMeter {
 public:
  /// Checks the workload and the metric names (an unknown one, a serve's for a run, goodput
  /// without an SLO: InputError naming `what`); a serve's items are read and its requests made.
  WorkloadMeter(const DesignWorkload& workload, std::vector<std::string> metrics, const std::string& what);

  bool serving() const { return serving_; }
  /// The workload on `chip`, its run as `request` (the base, or the base at another context).
  /// Throws what simulate() or serve() throws.
  Measurement measure(const g5sim::Chip& chip, const g5sim::Request& request) const;
  /// "decode, batch 256" or "serve rate=2 requests=100 ...": the workload as a report names it.
  std::string describe(const Measurement& base) const;

 private:
  const DesignWorkload& workload_;
  std::vector<std::string> metrics_;
  bool serving_ = false;
  std::vector<serving::ServeRequest> load_;
  serving::ServeOptions serve_options_;
};

/// A number as the CSV and JSON write it (the shortest text that reads back the same double).
std::string number_text(double value);
/// A field's value as a table shows it: whole numbers in full (2097152, not 2.09715e+06), else six
/// significant digits.
std::string value_text(double value);
/// The opening of a design command's JSON, up to the deployment: schema_version, kind, chip,
/// chip_source, model, model_source, workload, deployment (each line ends in ",\n").
void write_design_json_head(std::ostream& out, int schema_version, const std::string& kind, const std::string& chip,
                            const std::string& chip_source, const std::string& model, const std::string& model_source,
                            const std::string& workload, const g5sim::Deployment& deployment);

/// `request` with the deployment held: tp, ep and dp as `deployment`'s.
g5sim::Request with_deployment(g5sim::Request request, const g5sim::Deployment& deployment);

}  // namespace explore
