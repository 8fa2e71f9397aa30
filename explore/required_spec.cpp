#include "explore/required_spec.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "api/csv_cell.hpp"
#include "api/json_text.hpp"
#include "api/parallel_for.hpp"
#include "api/public_errors.hpp"
#include "g5sim/reports.hpp"
#include "hw/config_error.hpp"
#include "hw/number_text.hpp"

namespace g5sim {

using api::csv_cell;
using api::parallel_for;
using explore::chip_fields_named;
using explore::chip_with;
using explore::Measurement;
using explore::number_text;
using explore::value_text;
using explore::with_deployment;
using explore::WorkloadMeter;
using explore::write_design_json_head;
namespace {

std::optional<double> parse_number(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return hw::read_decimal_number(text);
}

// The log distance still to go for one target (0 when met).
double shortfall_of(const Target& t, double metric) {
  if (!(metric > 0)) return t.at_most ? 0.0 : std::numeric_limits<double>::infinity();
  const double gap = t.at_most ? std::log(metric / t.bound) : std::log(t.bound / metric);
  return std::max(0.0, gap);
}

// Several fields' log space: u_i = ln(x_i / x0_i), x0 the chip as it is, each u_i within its
// range's logs [lo_i, hi_i], and w_i the cost of a relative change of field i.
struct LogSpace {
  std::vector<double> x0, lo, hi, w;
  // The fields' values at u: x_i = x0_i e^{u_i}.
  std::vector<double> values_at(const Eigen::VectorXd& u) const {
    const std::size_t n = x0.size();
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = x0[i] * std::exp(u[static_cast<Eigen::Index>(i)]);
    return v;
  }
};

// The violated targets A, linearised at the current point: J_A u' = r_A + J_A u (rows of J, and r
// the log distance to each bound with a 0.1 % margin).
struct LinearisedTargets {
  Eigen::MatrixXd a;
  Eigen::VectorXd r;
};

// The least-cost step that meets the linearised targets, du = W^-1 J_A^T (J_A W^-1 J_A^T)^-1 r_A;
// none when J_A W^-1 J_A^T is 0 (no varied field moves the missed targets' metrics).
std::optional<Eigen::VectorXd> least_cost_step(const LinearisedTargets& targets, const std::vector<double>& w) {
  const Eigen::VectorXd w_inv =
      Eigen::Map<const Eigen::VectorXd>(w.data(), static_cast<Eigen::Index>(w.size())).cwiseInverse();
  const Eigen::MatrixXd gram = targets.a * w_inv.asDiagonal() * targets.a.transpose();
  if (gram.norm() == 0) return std::nullopt;
  const Eigen::VectorXd lambda = gram.completeOrthogonalDecomposition().solve(targets.r);
  return Eigen::VectorXd(w_inv.asDiagonal() * targets.a.transpose() * lambda);
}

// How a step's halvings ended: a point closer to the targets, or none.
enum class StepOutcome { closer, ranges_exhausted, not_closer };

// What one solve needs while it runs: the chip's fields, the meter, the trials so far.
class Solver {
 public:
  Solver(const SolveSpec& spec, std::vector<Target> targets, const std::function<void(std::uint64_t)>& progress)
      : spec_(spec),
        targets_(std::move(targets)),
        meter_(spec.workload, metrics_of(targets_), "target"),
        progress_(progress) {}

  SolveReport run();

 private:
  static std::vector<std::string> metrics_of(const std::vector<Target>& targets) {
    std::vector<std::string> m;
    for (const Target& t : targets) m.push_back(t.metric);
    return m;
  }

  // The field's value as the config will hold it (a count rounds).
  double held(std::size_t i, double v) const {
    return hw::held_value(chip_fields_[i], std::clamp(v, fields_[i].low, fields_[i].high));
  }
  // Runs the points (in parallel); each is appended as a trial of `stage`.
  std::vector<std::size_t> try_points(const std::vector<std::vector<double>>& points, const std::string& stage);
  // The chip as it is, measured once: trial 0.
  void record_base(const Measurement& m);
  std::size_t try_point(const std::vector<double>& values, const std::string& stage) {
    return try_points({values}, stage).front();
  }
  void check_budget(std::size_t more) const {
    if (report_.trials.size() + more > spec_.max_runs) {
      throw hw::InputError("max_runs",
                           fmt::format("solve: more than {} runs (the search did not settle)", spec_.max_runs));
    }
  }
  void one_field();
  void several_fields();
  // The steps of several_fields (see there).
  LogSpace log_space() const;
  Eigen::MatrixXd jacobian_at(const Eigen::VectorXd& u, const LogSpace& space);
  LinearisedTargets linearised_targets(const SolveTrial& at, const Eigen::MatrixXd& jacobian) const;
  StepOutcome take_step(Eigen::VectorXd& u, std::size_t& current, Eigen::VectorXd step, const LogSpace& space);
  void scale_back(const Eigen::VectorXd& u, std::size_t current, const LogSpace& space);
  void cannot(const std::string& why);
  std::size_t best_trial() const;

  const SolveSpec& spec_;
  std::vector<Target> targets_;
  WorkloadMeter meter_;
  const std::function<void(std::uint64_t)>& progress_;
  std::vector<hw::ChipField> chip_fields_;
  std::vector<SolveField> fields_;
  g5sim::Request request_;
  SolveReport report_;
};

std::vector<std::size_t> Solver::try_points(const std::vector<std::vector<double>>& points, const std::string& stage) {
  check_budget(points.size());
  std::vector<SolveTrial> trials(points.size());
  parallel_for(points.size(), spec_.jobs, [&](std::size_t k) {
    SolveTrial& t = trials[k];
    t.stage = stage;
    for (std::size_t i = 0; i < points[k].size(); ++i) t.values.push_back(held(i, points[k][i]));
    std::optional<g5sim::Chip> chip;
    try {
      chip = chip_with(spec_.workload.chip, chip_fields_, t.values);
    } catch (const g5sim::ConfigError& e) {
      t.note = e.what();
      t.shortfall = std::numeric_limits<double>::infinity();
      return;
    }
    const Measurement m = meter_.measure(*chip, request_);
    t.metrics = m.metrics;
    t.bound_by = m.bound_by;
    t.bound_share = m.bound_share;
    for (std::size_t j = 0; j < targets_.size(); ++j) t.shortfall += shortfall_of(targets_[j], m.metrics[j]);
    t.meets = t.shortfall == 0;
  });
  std::vector<std::size_t> ids;
  for (SolveTrial& t : trials) {
    ids.push_back(report_.trials.size());
    report_.trials.push_back(std::move(t));
    if (progress_) progress_(report_.trials.size());
  }
  return ids;
}

void Solver::record_base(const Measurement& m) {
  SolveTrial t;
  t.stage = "base";
  for (const SolveField& f : fields_) t.values.push_back(f.value);
  t.metrics = m.metrics;
  t.bound_by = m.bound_by;
  t.bound_share = m.bound_share;
  for (std::size_t j = 0; j < targets_.size(); ++j) t.shortfall += shortfall_of(targets_[j], m.metrics[j]);
  t.meets = t.shortfall == 0;
  report_.trials.push_back(std::move(t));
  if (progress_) progress_(report_.trials.size());
}

std::size_t Solver::best_trial() const {
  std::size_t best = 0;
  for (std::size_t i = 1; i < report_.trials.size(); ++i) {
    // Ties go to the later trial: a range's end over the chip as it is.
    if (report_.trials[i].shortfall <= report_.trials[best].shortfall) best = i;
  }
  return best;
}

void Solver::cannot(const std::string& why) {
  report_.outcome = "cannot";
  const SolveTrial& best = report_.trials[best_trial()];
  std::string values;
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    values += fmt::format("{}{} = {}", i ? ", " : "", fields_[i].path, value_text(best.values[i]));
  }
  std::string misses;
  for (std::size_t j = 0; j < targets_.size() && !best.metrics.empty(); ++j) {
    if (shortfall_of(targets_[j], best.metrics[j]) > 0) {
      misses += fmt::format("{}{} is {:.6g}", misses.empty() ? "" : ", ", targets_[j].text(), best.metrics[j]);
    }
  }
  const std::string bound =
      best.bound_by.empty()
          ? std::string()
          : fmt::format("; that run is bound by {} ({:.0f} %), which the varied fields do not relieve enough",
                        best.bound_by, best.bound_share * 100);
  report_.reason = fmt::format("{}; the closest, {}, misses {}{}", why, values, misses, bound);
}

// One field: the range's ends and the value as it is, then bisection from the cheap end.
void Solver::one_field() {
  const SolveField& f = fields_[0];
  const std::vector<std::size_t> ends = try_points({{f.low}, {f.high}}, "range");
  const std::vector<std::size_t> ids = {ends[0], 0, ends[1]};  // by value; trial 0 is the chip as it is
  std::vector<std::size_t> order = ids;
  const std::size_t base = 0;
  const auto metric0 = [&](std::size_t t) {
    return report_.trials[t].metrics.empty() ? NAN : report_.trials[t].metrics[0];
  };
  if (std::none_of(ids.begin(), ids.end(), [&](std::size_t t) { return report_.trials[t].meets; })) {
    return cannot(
        fmt::format("no value of {} in [{}, {}] meets the targets", f.path, value_text(f.low), value_text(f.high)));
  }
  // The cheap end: where the first target's metric is worse.
  const double lo_m = metric0(ids[0]), hi_m = metric0(ids[2]);
  const bool low_is_cheap = targets_[0].at_most ? !(lo_m < hi_m) : !(lo_m > hi_m);
  if (!low_is_cheap) std::reverse(order.begin(), order.end());
  // From the cheap end, the first point that meets and the one before it.
  std::size_t k = 0;
  while (!report_.trials[order[k]].meets) ++k;
  report_.outcome = report_.trials[base].meets ? "already" : "met";
  if (k == 0) {
    report_.answer_trial = order[0];
    report_.answer = report_.trials[order[0]].values;
    return;
  }
  double fail = report_.trials[order[k - 1]].values[0], meet = report_.trials[order[k]].values[0];
  std::size_t meet_trial = order[k];
  while (true) {
    const double next = f.integer ? std::floor((fail + meet) / 2) : std::sqrt(fail * meet);
    const bool settled = f.integer ? std::fabs(meet - fail) <= 1 : std::fabs(std::log(meet / fail)) <= spec_.tolerance;
    if (settled || held(0, next) == fail || held(0, next) == meet) break;
    const std::size_t t = try_point({next}, "bisect");
    if (report_.trials[t].meets) {
      meet = report_.trials[t].values[0];
      meet_trial = t;
    } else {
      fail = report_.trials[t].values[0];
    }
  }
  report_.answer_trial = meet_trial;
  report_.answer = report_.trials[meet_trial].values;
  // The confirmation: `check` beyond the answer toward the cheap end fails.
  const double toward = fail < meet ? -1.0 : 1.0;
  const double beyond =
      f.integer ? meet + toward * std::max(1.0, std::round(meet * spec_.check)) : meet * (1 + toward * spec_.check);
  report_.check_trial = try_point({beyond}, "check");
}

// Several fields, step 1: the log space of the varied fields about the chip as it is.
LogSpace Solver::log_space() const {
  const std::size_t n = fields_.size();
  LogSpace space{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    space.x0[i] = fields_[i].value;
    space.lo[i] = std::log(fields_[i].low / space.x0[i]);
    space.hi[i] = std::log(fields_[i].high / space.x0[i]);
    space.w[i] = fields_[i].cost;
  }
  return space;
}

// Several fields, step 2: the Jacobian J = d ln M_t / d u_i at u, by central differences (+-5 %, each
// side clamped to the range), the 2n points run together; a column stays 0 where a side did not run
// or the field did not move, an entry where a metric is not above 0.
Eigen::MatrixXd Solver::jacobian_at(const Eigen::VectorXd& u, const LogSpace& space) {
  const std::size_t n = fields_.size();
  const std::size_t m = targets_.size();
  const double h = std::log(1.05);
  std::vector<std::vector<double>> points;
  for (std::size_t i = 0; i < n; ++i) {
    for (int side : {-1, 1}) {
      Eigen::VectorXd v = u;
      v[static_cast<Eigen::Index>(i)] =
          std::clamp(u[static_cast<Eigen::Index>(i)] + side * h, space.lo[i], space.hi[i]);
      points.push_back(space.values_at(v));
    }
  }
  const std::vector<std::size_t> ids = try_points(points, "gradient");
  Eigen::MatrixXd jacobian = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const SolveTrial& down = report_.trials[ids[2 * i]];
    const SolveTrial& up = report_.trials[ids[2 * i + 1]];
    const double span = std::log(up.values[i] / down.values[i]);
    if (down.metrics.empty() || up.metrics.empty() || span == 0) continue;
    for (std::size_t j = 0; j < m; ++j) {
      if (!(down.metrics[j] > 0 && up.metrics[j] > 0)) continue;
      jacobian(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(i)) =
          (std::log(up.metrics[j]) - std::log(down.metrics[j])) / span;
    }
  }
  return jacobian;
}

// Several fields, step 3: the targets `at` misses, linearised (J_A and r_A, in ln M).
LinearisedTargets Solver::linearised_targets(const SolveTrial& at, const Eigen::MatrixXd& jacobian) const {
  const std::size_t n = fields_.size();
  const std::size_t m = targets_.size();
  std::vector<Eigen::Index> active;
  for (std::size_t j = 0; j < m; ++j) {
    if (shortfall_of(targets_[j], at.metrics[j]) > 0) active.push_back(static_cast<Eigen::Index>(j));
  }
  LinearisedTargets lin{Eigen::MatrixXd(static_cast<Eigen::Index>(active.size()), static_cast<Eigen::Index>(n)),
                        Eigen::VectorXd(static_cast<Eigen::Index>(active.size()))};
  for (std::size_t k = 0; k < active.size(); ++k) {
    const Target& t = targets_[static_cast<std::size_t>(active[k])];
    const double now = std::log(at.metrics[static_cast<std::size_t>(active[k])]);
    const double goal = t.at_most ? std::log(t.bound) - 0.001 : std::log(t.bound) + 0.001;
    lin.a.row(static_cast<Eigen::Index>(k)) = jacobian.row(active[k]);
    lin.r[static_cast<Eigen::Index>(k)] = goal - now;
  }
  return lin;
}

// Several fields, step 4: u + step clamped to the ranges, halved (up to 3 times) while it does not
// bring the shortfall down (a bottleneck that moves makes the linearisation short-sighted); u and
// `current` move to the first point that does.
StepOutcome Solver::take_step(Eigen::VectorXd& u, std::size_t& current, Eigen::VectorXd step, const LogSpace& space) {
  const std::size_t n = fields_.size();
  bool improved = false;
  for (int halving = 0; halving < 4 && !improved; ++halving, step /= 2) {
    Eigen::VectorXd next = u + step;
    for (std::size_t i = 0; i < n; ++i) {
      const auto e = static_cast<Eigen::Index>(i);
      next[e] = std::clamp(next[e], space.lo[i], space.hi[i]);
    }
    if ((next - u).norm() < 1e-9) return StepOutcome::ranges_exhausted;
    const std::size_t tried = try_point(space.values_at(next), "step");
    if (report_.trials[tried].shortfall < report_.trials[current].shortfall) {
      u = next;
      current = tried;
      improved = true;
    }
  }
  return improved ? StepOutcome::closer : StepOutcome::not_closer;
}

// Several fields, step 5: the change that met (`current`, at u) scaled back along its ray, u(t) = t u
// with t bisected in [0, 1] to the tolerance: the least t u that meets is the answer.
void Solver::scale_back(const Eigen::VectorXd& u, std::size_t current, const LogSpace& space) {
  double fail_t = 0, meet_t = 1;
  std::size_t meet_trial = current;
  while (meet_t - fail_t > spec_.tolerance) {
    const double t = (fail_t + meet_t) / 2;
    const std::size_t id = try_point(space.values_at(t * u), "scale");
    if (report_.trials[id].meets) {
      meet_t = t;
      meet_trial = id;
    } else {
      fail_t = t;
    }
  }
  report_.outcome = "met";
  report_.answer_trial = meet_trial;
  report_.answer = report_.trials[meet_trial].values;
}

// Several fields: least weighted change in log space, by linearised steps, then scaled back.
void Solver::several_fields() {
  const LogSpace space = log_space();
  const std::size_t base = 0;
  if (report_.trials[base].meets) {
    report_.outcome = "already";
    report_.answer_trial = base;
    report_.answer = report_.trials[base].values;
    return;
  }
  Eigen::VectorXd u = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(fields_.size()));
  std::size_t current = base;
  constexpr int kSteps = 12;
  for (int iteration = 0; iteration < kSteps; ++iteration) {
    const Eigen::MatrixXd jacobian = jacobian_at(u, space);
    const std::optional<Eigen::VectorXd> step =
        least_cost_step(linearised_targets(report_.trials[current], jacobian), space.w);
    if (!step) return cannot("no varied field moves the missed targets' metrics");
    const StepOutcome taken = take_step(u, current, *step, space);
    if (taken == StepOutcome::ranges_exhausted) return cannot("the fields' ranges are exhausted");
    if (taken == StepOutcome::not_closer) return cannot("no step along the linearised targets brings them closer");
    if (report_.trials[current].meets) break;
  }
  if (!report_.trials[current].meets) {
    return cannot(fmt::format("{} linearised steps did not meet the targets", kSteps));
  }
  scale_back(u, current, space);
}

SolveReport Solver::run() {
  const DesignWorkload& w = spec_.workload;
  if (targets_.empty()) throw hw::InputError("target", "target: give at least one (step_ms<=30, ...)");
  if (spec_.vary.empty()) throw hw::InputError("vary", "vary: give at least one chip field");
  if (!(spec_.tolerance >= 1e-6 && spec_.tolerance <= 0.1)) {
    throw hw::InputError("tolerance", fmt::format("tolerance: {} is not in 1e-6..0.1", spec_.tolerance));
  }
  std::vector<std::string> names;
  for (const VariedField& v : spec_.vary) names.push_back(v.path);
  chip_fields_ = chip_fields_named(w.chip, names, "vary");
  for (std::size_t i = 0; i < chip_fields_.size(); ++i) {
    const hw::ChipField& c = chip_fields_[i];
    const VariedField& v = spec_.vary[i];
    SolveField f;
    f.path = c.path;
    f.value = c.value;
    f.integer = c.integer;
    f.cost = v.cost;
    if (!(c.value > 0)) {
      throw hw::InputError("vary", fmt::format("vary: {} is {}: a relative change of it is none", c.path, c.value));
    }
    f.low = v.low.value_or(c.value / 10);
    f.high = v.high.value_or(c.value * 10);
    if (c.integer) {
      f.low = std::max(1.0, std::ceil(f.low));
      f.high = std::floor(f.high);
    }
    if (!(f.low <= c.value && c.value <= f.high)) {
      throw hw::InputError("vary", fmt::format("vary: {}'s range [{}, {}] does not hold its value {}", c.path,
                                               value_text(f.low), value_text(f.high), value_text(c.value)));
    }
    fields_.push_back(f);
  }
  // The deployment held: the base run's.
  const g5sim::Chip base_chip = g5sim::Chip::from_yaml(w.chip.text, w.chip.source);
  const Measurement base = meter_.measure(base_chip, w.base);
  request_ = with_deployment(w.base, base.deployment);
  record_base(base);
  report_.chip = base_chip.name();
  report_.chip_source = g5sim::source_label(w.chip.source);
  report_.model = w.model.name();
  report_.model_source = g5sim::source_label(w.model.source());
  report_.workload = meter_.describe(base);
  report_.deployment = base.deployment;
  report_.targets = targets_;
  report_.fields = fields_;
  if (fields_.size() == 1) {
    one_field();
  } else {
    several_fields();
  }
  return report_;
}

}  // namespace

std::string Target::text() const { return fmt::format("{} {} {}", metric, at_most ? "<=" : ">=", value_text(bound)); }

Target parse_target(const std::string& text) {
  return api::public_errors([&] {
    const std::size_t le = text.find("<="), ge = text.find(">=");
    if ((le == std::string::npos) == (ge == std::string::npos)) {
      throw hw::InputError("target", fmt::format("target: '{}' is not METRIC<=X or METRIC>=X", text));
    }
    const std::size_t at = le != std::string::npos ? le : ge;
    Target t;
    t.at_most = le != std::string::npos;
    t.metric = text.substr(0, at);
    while (!t.metric.empty() && t.metric.back() == ' ') t.metric.pop_back();
    while (!t.metric.empty() && t.metric.front() == ' ') t.metric.erase(0, 1);
    const std::optional<double> bound = parse_number(std::string_view(text).substr(at + 2));
    if (t.metric.empty() || !bound || !(*bound > 0)) {
      throw hw::InputError("target", fmt::format("target: '{}' is not METRIC<=X or METRIC>=X with X > 0", text));
    }
    t.bound = *bound;
    return t;
  });
}

VariedField parse_varied_field(const std::string& text) {
  return api::public_errors([&] {
    VariedField v;
    const std::size_t eq = text.find('=');
    v.path = text.substr(0, eq);
    if (v.path.empty()) throw hw::InputError("vary", fmt::format("vary: '{}' names no field", text));
    if (eq == std::string::npos) return v;
    const std::string range = text.substr(eq + 1);
    const std::size_t colon = range.find(':');
    const std::optional<double> low =
        colon == std::string::npos ? std::nullopt : parse_number(std::string_view(range).substr(0, colon));
    const std::optional<double> high =
        colon == std::string::npos ? std::nullopt : parse_number(std::string_view(range).substr(colon + 1));
    if (!low || !high || !(*low > 0) || !(*low < *high)) {
      throw hw::InputError("vary", fmt::format("vary: '{}': the range is not LO:HI with 0 < LO < HI", text));
    }
    v.low = low;
    v.high = high;
    return v;
  });
}

void set_cost(std::vector<VariedField>& vary, const std::string& path, double weight) {
  return api::public_errors([&] {
    const auto it = std::find_if(vary.begin(), vary.end(), [&](const VariedField& v) { return v.path == path; });
    if (it == vary.end()) throw hw::InputError("cost", fmt::format("cost: {} is not a varied field", path));
    if (!(weight > 0 && weight <= 1e6)) {
      throw hw::InputError("cost", fmt::format("cost: {}'s weight {} is not in (0, 1e6]", path, weight));
    }
    it->cost = weight;
  });
}

SolveReport solve(const SolveSpec& spec, const std::function<void(std::uint64_t)>& progress) {
  return api::public_errors([&] {
    std::vector<Target> targets = spec.targets;
    const DesignWorkload& w = spec.workload;
    // A run's SLO is its step's time: TPOT of a decode step, TTFT of a prompt's.
    if (!w.serve) {
      for (const std::optional<double>& slo : {w.slo_tpot_ms, w.slo_ttft_ms}) {
        if (slo) {
          if (!(*slo > 0)) throw hw::InputError("slo", fmt::format("slo: {} ms is not above 0", *slo));
          targets.push_back(Target{"step_ms", true, *slo});
        }
      }
    }
    return Solver(spec, std::move(targets), progress).run();
  });
}

void write_solve_table(std::ostream& out, const SolveReport& r) {
  const g5sim::Deployment& d = r.deployment;
  std::string targets;
  for (const Target& t : r.targets) targets += (targets.empty() ? "" : ", ") + t.text();
  fmt::print(out, "solve: {}, {}, {} (tp {}, ep {}, dp {}): {}\n", r.chip, r.model, r.workload, d.tp, d.ep, d.dp,
             targets);
  for (const SolveField& f : r.fields) {
    fmt::print(out, "vary: {} = {} in [{}, {}]{}\n", f.path, value_text(f.value), value_text(f.low), value_text(f.high),
               r.fields.size() > 1 ? fmt::format(", cost {}", value_text(f.cost)) : std::string());
  }
  const auto metrics_of = [&](const SolveTrial& t) {
    std::string s;
    for (std::size_t j = 0; j < r.targets.size(); ++j) {
      s += fmt::format("{}{} {:.6g}", j ? ", " : "", r.targets[j].metric, t.metrics[j]);
    }
    return s;
  };
  if (r.outcome == "cannot") {
    fmt::print(out, "cannot: {}\n", r.reason);
  } else {
    const SolveTrial& a = r.trials[*r.answer_trial];
    std::string change;
    for (std::size_t i = 0; i < r.fields.size(); ++i) {
      const SolveField& f = r.fields[i];
      change += fmt::format("{}{} = {} ({:+.2f} %)", i ? ", " : "", f.path, value_text(r.answer[i]),
                            100 * (r.answer[i] / f.value - 1));
    }
    if (r.outcome == "already") {
      fmt::print(out, "already met as it is: {}; the least it needs: {}: {}\n", metrics_of(r.trials[0]), change,
                 metrics_of(a));
    } else {
      fmt::print(out, "met: {}: {}\n", change, metrics_of(a));
    }
    if (r.check_trial) {
      const SolveTrial& c = r.trials[*r.check_trial];
      fmt::print(out, "  at {} = {}: {}{}\n", r.fields[0].path, value_text(c.values[0]),
                 c.metrics.empty() ? c.note : metrics_of(c),
                 c.meets ? " (meets too: the metric is flat here)" : ": misses");
    }
  }
  fmt::print(out, "{} runs\n", r.trials.size());
}

void write_solve_csv(std::ostream& out, const SolveReport& r) {
  // The report table's columns (explore/design_reports.cpp) with, after `stage`, a column per
  // varied field and one per target.
  for (const std::string& column : report_named(design_reports(), "solve_runs").column_names()) {
    out << (column == "trial" ? "" : ",") << column;
    if (column != "stage") continue;
    for (const SolveField& f : r.fields) out << ',' << csv_cell(f.path);
    for (const Target& t : r.targets) out << ',' << t.metric;
  }
  out << '\n';
  for (std::size_t k = 0; k < r.trials.size(); ++k) {
    const SolveTrial& t = r.trials[k];
    out << k << ',' << t.stage;
    for (double v : t.values) out << ',' << number_text(v);
    for (std::size_t j = 0; j < r.targets.size(); ++j)
      out << ',' << (t.metrics.empty() ? "" : number_text(t.metrics[j]));
    out << ',' << (t.meets ? "true" : "false") << ',' << (std::isfinite(t.shortfall) ? number_text(t.shortfall) : "")
        << ',' << csv_cell(t.bound_by) << ',' << csv_cell(t.note) << '\n';
  }
}

void write_solve_json(std::ostream& out, const SolveReport& r) {
  using api::json_string;
  write_design_json_head(out, kSolveSchemaVersion, "solve", r.chip, r.chip_source, r.model, r.model_source, r.workload,
                         r.deployment);
  out << "  \"targets\": [";
  for (std::size_t j = 0; j < r.targets.size(); ++j) {
    const Target& t = r.targets[j];
    fmt::print(out, "{}{{\"metric\": {}, \"op\": \"{}\", \"bound\": {}}}", j ? ", " : "", json_string(t.metric),
               t.at_most ? "<=" : ">=", number_text(t.bound));
  }
  out << "],\n  \"fields\": [";
  for (std::size_t i = 0; i < r.fields.size(); ++i) {
    const SolveField& f = r.fields[i];
    fmt::print(out, "{}{{\"field\": {}, \"value\": {}, \"low\": {}, \"high\": {}, \"cost\": {}, \"answer\": {}}}",
               i ? ", " : "", json_string(f.path), number_text(f.value), number_text(f.low), number_text(f.high),
               number_text(f.cost), r.answer.empty() ? "null" : number_text(r.answer[i]));
  }
  fmt::print(out, "],\n  \"outcome\": {},\n  \"reason\": {},\n  \"answer_trial\": {},\n  \"check_trial\": {},\n",
             json_string(r.outcome), r.reason.empty() ? "null" : json_string(r.reason),
             r.answer_trial ? std::to_string(*r.answer_trial) : "null",
             r.check_trial ? std::to_string(*r.check_trial) : "null");
  out << "  \"trials\": [";
  for (std::size_t k = 0; k < r.trials.size(); ++k) {
    const SolveTrial& t = r.trials[k];
    std::string values, metrics;
    for (double v : t.values) values += (values.empty() ? "" : ", ") + number_text(v);
    for (double v : t.metrics) metrics += (metrics.empty() ? "" : ", ") + number_text(v);
    fmt::print(out,
               "{}\n    {{\"stage\": {}, \"values\": [{}], \"metrics\": [{}], \"meets\": {}, \"shortfall\": {}, "
               "\"bound_by\": {}, \"note\": {}}}",
               k ? "," : "", json_string(t.stage), values, metrics, t.meets ? "true" : "false",
               std::isfinite(t.shortfall) ? number_text(t.shortfall) : "null",
               t.bound_by.empty() ? "null" : json_string(t.bound_by), t.note.empty() ? "null" : json_string(t.note));
  }
  out << "\n  ]\n}\n";
}

namespace {

std::vector<std::string> comma_items(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t start = 0; !text.empty() && start <= text.size();) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

SolveSpec solve_spec_of(ChipText chip, Model model, Request base, const KnobItems& items) {
  return api::public_errors([&] {
    SolveSpec spec;
    spec.workload.chip = std::move(chip);
    spec.workload.model = std::move(model);
    spec.workload.base = std::move(base);
    DesignSettings design;
    ServeSettings slo;
    explore::take_design_items(items, kSolveKnob, kSolveKnob, "solve", design, slo);
    DesignWorkload& w = spec.workload;
    w.slo_ttft_ms = slo.optional_decimal("slo_ttft_ms");
    w.slo_tpot_ms = slo.optional_decimal("slo_tpot_ms");
    if (design.given("serve")) {
      w.serve_items = design.text("serve");
      w.serve = serve_settings_of(w.serve_items);
    }
    w.role = design.text("role");
    if (!design.given("target") && !w.slo_tpot_ms && !w.slo_ttft_ms) {
      throw hw::InputError("target",
                           "give a target (step_ms<=30, ...) or, for a run, an SLO (slo_tpot_ms, slo_ttft_ms)");
    }
    if (!design.given("vary")) throw hw::InputError("vary", "give the chip fields to vary");
    for (const std::string& t : comma_items(design.text("target"))) spec.targets.push_back(parse_target(t));
    for (const std::string& v : comma_items(design.text("vary"))) spec.vary.push_back(parse_varied_field(v));
    for (const std::string& c : comma_items(design.text("cost"))) {
      const std::size_t eq = c.find('=');
      const std::optional<double> weight =
          eq == std::string::npos ? std::nullopt : hw::read_decimal_number(std::string_view(c).substr(eq + 1));
      if (!weight) throw hw::InputError("cost", fmt::format("'{}' is not FIELD=W", c));
      set_cost(spec.vary, c.substr(0, eq), *weight);
    }
    spec.tolerance = design.decimal("tolerance_pct") / 100.0;
    spec.max_runs = design.count("max_runs");
    spec.jobs = static_cast<unsigned>(design.optional_count("jobs").value_or(api::default_jobs()));
    return spec;
  });
}

}  // namespace g5sim
