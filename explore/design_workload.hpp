#pragma once
// The design-space commands' shared parts below their public headers (g5sim/design.hpp): the
// chip's fields by name, rewritten; a workload measured by named metrics; the JSON's head.

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/design.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/chip_fields.hpp"

namespace explore {

using g5sim::ChipText;
using g5sim::DesignWorkload;

/// The fields called `names` (dotted paths), each checked: present, a plain number, named once.
/// Throws ConfigError naming the config and the field (with a did-you-mean) or InputError naming
/// `what` ("fields", "vary") for a name given twice.
std::vector<hw::ChipField> chip_fields_named(const ChipText& chip, const std::vector<std::string>& names,
                                             const std::string& what);
/// The chip with `fields` at `values` (as format_field_value writes them). Throws ConfigError when
/// the config refuses a value (its message names the field, the file and the line).
g5sim::Chip chip_with(const ChipText& chip, const std::vector<hw::ChipField>& fields,
                      const std::vector<double>& values);

/// Takes a design command's KEY=VALUE items: each into the settings whose table has a row of its
/// name taking `use` (its own `design` knobs, else the serve's `serve` knobs; no name is both for
/// one use). Throws InputError naming the item and the keywords of `named_use` for any other.
void take_design_items(const g5sim::KnobItems& items, unsigned use, unsigned named_use, const std::string& command,
                       g5sim::DesignSettings& design, g5sim::ServeSettings& serve);

const std::vector<std::string>& run_metrics();
const std::vector<std::string>& serve_metrics();

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
  /// "decode, batch 256" or "serve rate=2 requests=100 ...": the workload as a report names it
  /// (a serve by its items as given: `serve_items`).
  std::string describe(const Measurement& base) const;

 private:
  const DesignWorkload& workload_;
  std::vector<std::string> metrics_;
  bool serving_ = false;
  std::vector<g5sim::ServeRequest> load_;
  std::optional<g5sim::ServeSettings> serve_settings_;
  std::optional<g5sim::Chip> held_;  ///< --role prefill or decode: the other role's chip, unless its item names one
  /// Steps shared by the measurements: a step is keyed by its chip's bytes, so only a chip that
  /// does not change (a held role's, a field that leaves the steps alone) shares its own.
  std::shared_ptr<g5sim::SharedStepTimes> shared_steps_ = std::make_shared<g5sim::SharedStepTimes>();
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
