#pragma once
// g5sim solve: the spec a target needs. Given targets on a workload's metrics (step_ms <= 30,
// tokens_per_s_per_chip >= 1000, tpot_p99_ms <= 50, ...) and chip fields to vary, find the
// smallest change of the fields that meets every target, or say that none in range does and
// what limits the run instead.
//
// A target's shortfall at a point, over the targets t (metric M_t, bound B_t):
//
//     s = sum_t max(0, ln(M_t / B_t))  for "<=",   max(0, ln(B_t / M_t))  for ">="
//
// and the point meets the targets when s = 0.
//
// One field x (bisection): x is tried at the range's ends and at its value; the cheap end is the
// one where the first target's metric is worse (the spec it asks for is the least demanding).
// From the cheap end, the first point that meets and the failing point before it bracket the
// answer, halved (geometrically; by whole numbers for a count) until the bracket's ends are within
// `tolerance` of each other (relative) or 1 apart: the answer is the bracket's meeting end, and
// the point `check` (1 %) beyond it toward the cheap end is run to show it fails. The metric is
// taken to be monotone in x over the range (a non-monotone metric's answer is a crossing, not
// necessarily the least one).
//
// Several fields (weighted least change, Eigen): with u_i = ln(x_i / x0_i) and weights w_i (the
// cost of a relative change of field i, default 1), the cost of a change is sum_i w_i u_i^2.
// Each iteration measures the Jacobian J = d ln M_t / d u_i at the current point by central
// differences (+-5 %) and takes the least-cost step that meets the linearised violated targets
// A (J_A du = r_A, r the log distance to each bound plus a 0.1 % margin):
//
//     du = W^-1 J_A^T (J_A W^-1 J_A^T)^-1 r_A
//
// clamped to each field's range and halved (up to 3 times) while it does not reduce the
// shortfall: where the bottleneck moves (GDMA-bound, then TIU-bound) each Jacobian sees only the
// resource that binds, so the steps add up from where they are rather than jump. Once a point
// meets, the change is scaled back along its ray from the chip as it is, u(t) = t u, t bisected
// in [0, 1] to `tolerance`: the answer is the least change along the direction the steps found
// (a local answer: another mix of the fields may cost less). A field whose metric does not move
// has no column in J and stays.
//
// Cannot: when no point in range meets (the best end, or the iterations run out), the answer
// names the resource that bounds the best run tried (g5sim::Result::bound_by): the targets need a
// field that is not varied.
//
// The deployment is held as the base run chose it (tp, ep, dp), as in `g5sim sensitivity`.

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/design.hpp"
#include "g5sim/g5sim.hpp"

namespace g5sim {

inline constexpr int kSolveSchemaVersion = 1;

struct Target {
  std::string metric;
  bool at_most = true;  ///< "<=" (else ">=")
  double bound = 0;
  std::string text() const;  ///< "step_ms <= 30"
};
/// "step_ms<=30" or "tokens_per_s_per_chip>=2000" (spaces allowed). Throws InputError naming
/// "target".
Target parse_target(const std::string& text);

/// A field to vary: its dotted path, optionally its range (default x/10 .. 10x) and its weight.
struct VariedField {
  std::string path;
  std::optional<double> low, high;
  double cost = 1;
};
/// "ddr.bandwidth_gb_per_s" or "ddr.bandwidth_gb_per_s=4000:20000". Throws InputError naming "vary".
VariedField parse_varied_field(const std::string& text);

/// Sets the weight of the varied field `path` (0 < weight <= 1e6). Throws InputError naming "cost"
/// for a field not in `vary` or a weight out of range.
void set_cost(std::vector<VariedField>& vary, const std::string& path, double weight);

struct SolveSpec {
  DesignWorkload workload;
  std::vector<Target> targets;
  std::vector<VariedField> vary;
  double tolerance = 0.001;  ///< the answer's relative precision, 1e-6..0.1
  double check = 0.01;       ///< the confirming step beyond the answer (one field)
  std::uint64_t max_runs = 400;
  unsigned jobs = 1;
};

/// One point tried: the varied fields' values, the targets' metrics, whether it met them.
struct SolveTrial {
  std::string stage;  ///< base (trial 0, the chip as it is), range, bisect, gradient, step, scale, check
  std::vector<double> values, metrics;
  bool meets = false;
  double shortfall = 0;
  std::string bound_by;  ///< a run's limiting resource ("" for a serve)
  double bound_share = 0;
  std::string note;  ///< the config's refusal of a value
};

struct SolveField {
  std::string path;
  double value = 0, low = 0, high = 0, cost = 1;
  bool integer = false;
};

struct SolveReport {
  std::string chip, chip_source, model, model_source, workload;
  Deployment deployment;
  std::vector<Target> targets;
  std::vector<SolveField> fields;
  /// "met": the answer changes the fields; "already": the chip as it is meets (one field: the
  /// answer is the least demanding value that still meets; several: no change); "cannot":
  /// nothing in range meets (reason says what limits the closest run).
  std::string outcome;
  std::vector<double> answer;                            ///< the fields' values (outcome met or already)
  std::optional<std::size_t> answer_trial, check_trial;  ///< in trials
  std::string reason;                                    ///< why it cannot, naming the limiting resource
  std::vector<SolveTrial> trials;
};

/// Throws ConfigError / InputError before any run on a bad target, field or range.
SolveReport solve(const SolveSpec& spec, const std::function<void(std::uint64_t)>& progress = {});

void write_solve_table(std::ostream& out, const SolveReport& report);
/// A row per trial: trial,stage,<each field>,<each target's metric>,meets,shortfall,bound_by,note.
void write_solve_csv(std::ostream& out, const SolveReport& report);
void write_solve_json(std::ostream& out, const SolveReport& report);

/// A solve from knob items, as the command line's flags and g5sim.solve()'s keywords give them
/// (the kSolveKnob rows: serve, target, vary, cost, tolerance_pct, max_runs, the SLOs, jobs), for
/// `chip` and `model` with the run as `base`. Throws ConfigError naming the knob.
SolveSpec solve_spec_of(ChipText chip, Model model, Request base, const KnobItems& items);

}  // namespace g5sim
