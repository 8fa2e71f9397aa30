#pragma once
// g5sim sensitivity: which chip field would buy the most. For a metric M of a workload (a step's
// time or throughput at each context length, or a serve's latency or throughput) and each numeric
// field x of the chip config (and, when the run names a runtime, of the runtime's: "runtime." and
// its path, as runtime.step.cpu_ns; the variant is written to a scratch file the run names), the
// elasticity
//
//     e = d ln M / d ln x  ~  (ln M(x+) - ln M(x-)) / (ln x+ - ln x-),   x+- = x (1 +- delta)
//
// by central differences of real simulations: the chip's YAML with only that value rewritten
// (hw/chip_fields.hpp), read and simulated again. x+- are the values as the config
// holds them (an integer field rounds, and moves by at least 1), so the quotient is the slope of
// the two runs that happened. e = -1 for a field that alone sets the time (a bandwidth that binds
// every op), 0 for one the workload never feels; a +1 % change of x moves M by about e %.
//
// A side the config refuses (an efficiency above 1, an outstanding count of 0) or the run refuses
// leaves a one-sided difference against the base run (method "forward" or "backward"); a field
// whose value is 0 has no relative change ("none"), nor does a metric that is 0 on a side.
//
// Each side's one-sided slope against the base run is kept too (elasticity_down, elasticity_up):
// where they disagree (their difference above 0.1 and above half the larger) the metric is not
// smooth in the field here, and the field is marked `uneven`: a core count that no longer divides
// the work, a burst size that rounds transfers differently. The central value is then the
// average slope over +-delta, not a derivative.
//
// The deployment is held: the base run's tp, ep and dp are given to every variant, so a field
// that would change the automatic sharding (DDR capacity) changes only what it changes within it.
// The limiting resource of each point is the base run's (g5sim::Result::bound_by): the field that
// binds it is the one whose elasticity is near -1.

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/design.hpp"
#include "g5sim/g5sim.hpp"

namespace g5sim {

inline constexpr int kSensitivitySchemaVersion = 1;

struct SensitivitySpec {
  DesignWorkload workload;              ///< a run (its base request) or a serve
  std::vector<std::uint64_t> contexts;  ///< a run's points: these context lengths (empty: base.ctx once)
  std::vector<std::string>
      fields;  ///< empty: every numeric field of the chip but `energy`'s, then the runtime's ("runtime.step.cpu_ns")
  std::string metric;   ///< empty: step_ms for a run, tpot_p50_ms for a serve
  double delta = 0.05;  ///< the relative step, (0, 0.5]
  unsigned jobs = 1;
  std::size_t top = 10;  ///< fields the table lists per point (the JSON and CSV have every one)
};

struct FieldSensitivity {
  std::string field;
  double value = 0;  ///< as the config holds it
  /// The variants' values and their metric; none on a side that did not run (see note).
  std::optional<double> low_value, high_value, metric_low, metric_high;
  std::optional<double> elasticity;
  std::optional<double> elasticity_down, elasticity_up;  ///< each side against the base run
  bool uneven = false;                                   ///< the two sides disagree (above)
  std::string method;                                    ///< "central", "forward", "backward" or "none"
  std::string note;  ///< why a side is missing (the config's or the run's error), or ""
};

struct SensitivityPoint {
  std::optional<std::uint64_t> ctx;  ///< a run's context length; none for a serve
  double metric_base = 0;
  std::string bound_by;  ///< the base run's limiting resource ("" for a serve)
  double bound_share = 0;
  std::vector<FieldSensitivity> fields;  ///< largest |elasticity| first, then by field; none last
};

struct SensitivityReport {
  std::string chip, model, chip_source, model_source, metric, workload;  ///< workload: one line
  std::string runtime, runtime_source;  ///< the run's runtime (name and version, its file); "" for none
  double delta = 0;
  Deployment deployment;
  std::uint64_t runs = 0;             ///< simulations (or serves), the base ones included
  std::vector<std::string> warnings;  ///< the base runs' (a step that does not fit DDR, ...)
  std::vector<SensitivityPoint> points;
  std::size_t top = 10;  ///< the spec's
};

/// Throws ConfigError (a field the chip does not have, a metric the workload does not have) or
/// InputError before any simulation; progress(done, total) as runs finish.
SensitivityReport sensitivity(const SensitivitySpec& spec,
                              const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});

/// The table: each point's base and limiting resource, then its `top` fields by |elasticity|.
void write_sensitivity_table(std::ostream& out, const SensitivityReport& report);
/// A row per point and field: ctx,field,value,low_value,high_value,metric,metric_base,metric_low,
/// metric_high,elasticity,elasticity_down,elasticity_up,uneven,method,rank,bound_by,note.
void write_sensitivity_csv(std::ostream& out, const SensitivityReport& report);
/// schema_version, the set-up, and per point its fields in rank order.
void write_sensitivity_json(std::ostream& out, const SensitivityReport& report);

/// A sensitivity from knob items, as the command line's flags and g5sim.sensitivity()'s keywords
/// give them (the kSensitivityKnob rows: serve, ctx, fields, metric, delta_pct, top, the SLOs,
/// jobs), for `chip` and `model` with the run as `base`. Throws ConfigError naming the knob.
SensitivitySpec sensitivity_spec_of(ChipText chip, Model model, Request base, const KnobItems& items);

}  // namespace g5sim
