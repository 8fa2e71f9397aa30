#include "explore/validation/calibration.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <yaml-cpp/yaml.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>

#include "api/parallel_for.hpp"
#include "api/result_state.hpp"
#include "explore/scratch_file.hpp"
#include "explore/validation/row_prediction.hpp"
#include "g5sim/g5sim.hpp"
#include "g5sim/runtime.hpp"
#include "hw/config_error.hpp"
#include "hw/input_file.hpp"
#include "hw/number_text.hpp"

namespace explore::validation {

using hw::ChipField;
using hw::find_chip_field;
using hw::format_field_value;
using hw::held_value;
using hw::with_field_values;

using api::parallel_for;
namespace {

// How far past max_commands a row admitted at the starting values may go at a trial point.
constexpr std::uint64_t kTrialCommandFactor = 4;

constexpr double kStep = 0.03;       // forward-difference step in z (3 %) ...
constexpr double kFineStep = 0.005;  // ... then 0.5 % to settle in the minimum found
constexpr double kLambda0 = 1e-2;

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch && *epoch) t = std::strtoll(epoch, nullptr, 10);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// Loads a config's text as what is calibrated (a chip, or a runtime), or throws naming the field.
using ConfigCheck = void (*)(const std::string& text, const std::string& source);
void check_chip(const std::string& text, const std::string& source) { (void)g5sim::Chip::from_yaml(text, source); }
void check_runtime(const std::string& text, const std::string& source) {
  (void)g5sim::Runtime::from_yaml(text, source);
}

// "FIELD" or "FIELD=LO:HI" -> the field with its bounds. Defaults: an efficiency in [0.05, 1];
// another positive value within a factor of 10 either way; a zero needs explicit bounds.
FittedField parse_fit(const std::string& spec, const std::string& text, const std::string& source, ConfigCheck check) {
  const std::size_t eq = spec.find('=');
  FittedField f;
  f.field = find_chip_field(text, source, spec.substr(0, eq));
  const double v = f.field.value;
  auto fail = [&](const std::string& message) {
    throw hw::ConfigError(fmt::format("--fit {}: {}", spec, message), hw::ErrorSite{"", "fit", 0, 0});
  };
  if (eq == std::string::npos) {
    const std::string& p = f.field.path;
    if (p.size() >= 10 && p.compare(p.size() - 10, 10, "efficiency") == 0) {
      f.lower = 0.05;
      f.upper = 1.0;
    } else if (v > 0) {
      f.lower = v / 10;
      f.upper = v * 10;
    } else {
      fail("the value is 0: give bounds as FIELD=LO:HI");
    }
  } else {
    const std::string bounds = spec.substr(eq + 1);
    const std::size_t colon = bounds.find(':');
    if (colon == std::string::npos) fail("expected FIELD=LO:HI");
    const std::string lo = bounds.substr(0, colon), hi = bounds.substr(colon + 1);
    const std::optional<double> lower = hw::read_decimal_number(lo), upper = hw::read_decimal_number(hi);
    if (!lower) fail(fmt::format("'{}' is not a number", lo));
    if (!upper) fail(fmt::format("'{}' is not a number", hi));
    f.lower = *lower;
    f.upper = *upper;
    if (!std::isfinite(f.lower) || !std::isfinite(f.upper) || f.lower < 0 || f.upper <= f.lower) {
      fail("bounds must be finite with 0 <= LO < HI");
    }
  }
  if (v < f.lower || v > f.upper) fail(fmt::format("the config's value {} is outside [{}, {}]", v, f.lower, f.upper));
  f.log_scale = f.lower > 0;
  f.fitted = v;
  // "1" may be a fraction written whole (an efficiency): when the reader takes a fraction there,
  // the field is fitted as a real number.
  if (f.field.integer) {
    ChipField probe = f.field;
    probe.integer = false;
    try {
      check(with_field_values(text, {probe}, {v == 0 ? 0.5 : v * 0.999}), source);
      f.field.integer = false;
    } catch (const g5sim::ConfigError&) {
    }
  }
  // Both bounds must be values the chip reader accepts (its documented range), or the fit would
  // fail half-way on a trial value.
  for (const double bound : {f.lower, f.upper}) {
    try {
      check(with_field_values(text, {f.field}, {bound}), source);
    } catch (const g5sim::ConfigError& e) {
      fail(fmt::format("{} {} is outside what the {} config accepts there ({})", bound == f.lower ? "LO" : "HI",
                       format_field_value(f.field, bound), check == check_chip ? "chip" : "runtime", e.what()));
    }
  }
  return f;
}

struct Problem {
  std::string base_text, source;
  ConfigCheck check = check_chip;
  // A runtime's fit (check_runtime): each row on its own chip, its runtime the trial text written
  // to `trial`, the serves' chip steps shared across trials (only the runtime's prices change).
  std::vector<std::optional<g5sim::Chip>> chips;
  const explore::ScratchFile* trial = nullptr;
  std::shared_ptr<g5sim::SharedStepTimes> shared;
  std::vector<FittedField> fields;
  std::vector<const MeasuredRow*> rows;
  std::vector<std::optional<g5sim::Model>> models;
  unsigned jobs = 1;
  std::uint64_t max_commands = 0;
  std::size_t simulations = 0;
  double relative_step = kStep;
  // The progress hook (CalibrationOptions::progress): the stage and its best point's MAPE.
  std::function<void(const CalibrationProgress&)> progress;
  std::string stage;
  double stage_mape = -1;

  void begin_stage(std::string name) {
    stage = std::move(name);
    stage_mape = -1;
    report();
  }
  void report() const {
    if (progress) progress(CalibrationProgress{stage, simulations, stage_mape});
  }
  // The MAPE of log residuals r (a row's error is exp(r) - 1).
  static double mape_of_residuals(const Eigen::VectorXd& r) {
    if (r.size() == 0) return 0;
    return 100.0 * r.unaryExpr([](double x) { return std::abs(std::exp(x) - 1.0); }).mean();
  }

  double to_p(std::size_t j, double z) const { return fields[j].log_scale ? std::exp(z) : z; }
  double to_z(std::size_t j, double p) const { return fields[j].log_scale ? std::log(p) : p; }
  double z_lo(std::size_t j) const { return to_z(j, fields[j].lower); }
  double z_hi(std::size_t j) const { return to_z(j, fields[j].upper); }

  std::vector<double> values(const Eigen::VectorXd& z) const {
    std::vector<double> p(fields.size());
    for (std::size_t j = 0; j < fields.size(); ++j) p[j] = to_p(j, z[static_cast<Eigen::Index>(j)]);
    return p;
  }
  std::vector<ChipField> chip_fields() const {
    std::vector<ChipField> f;
    for (const FittedField& x : fields) f.push_back(x.field);
    return f;
  }
  std::string text_at(const Eigen::VectorXd& z) const { return with_field_values(base_text, chip_fields(), values(z)); }

  // Predictions of the rows in `which` at z (a config the reader refuses is an error naming the values).
  std::vector<double> predict_rows(const Eigen::VectorXd& z, const std::vector<std::size_t>& which) {
    const std::string text = text_at(z);
    std::optional<g5sim::Chip> chip;
    RowOverrides overrides;
    if (check == check_runtime) {
      check_runtime(text, source);
      trial->write(text);
      overrides = RowOverrides{trial->path(), shared};
    } else {
      chip = g5sim::Chip::from_yaml(text, source);
    }
    std::vector<double> out(which.size());
    std::vector<std::string> failures(which.size());
    // Rows of one run (row_prediction.hpp, run_key) share a simulation.
    std::vector<std::vector<std::size_t>> groups;
    std::map<std::string, std::size_t> group_of;
    for (std::size_t k = 0; k < which.size(); ++k) {
      const auto [it, fresh] = group_of.try_emplace(run_key(*rows[which[k]]), groups.size());
      if (fresh) groups.emplace_back();
      groups[it->second].push_back(k);
    }
    parallel_for(groups.size(), jobs, [&](std::size_t g) {
      std::vector<const MeasuredRow*> group_rows;
      for (std::size_t k : groups[g]) group_rows.push_back(rows[which[k]]);
      const std::size_t first = which[groups[g].front()];
      // A row admitted at the starting values (within max_commands) may need more commands at a
      // trial point (the work split follows the costs): it keeps running up to kTrialCommandFactor
      // times the limit rather than ending the fit.
      const std::uint64_t trial_limit =
          max_commands > ~std::uint64_t{0} / kTrialCommandFactor ? max_commands : max_commands * kTrialCommandFactor;
      const std::vector<Prediction> p = predict_all(group_rows, chip ? *chip : *chips[first],
                                                    models[first] ? &*models[first] : nullptr, trial_limit, overrides);
      for (std::size_t j = 0; j < p.size(); ++j) {
        const std::size_t k = groups[g][j];
        if (p[j].value) {
          out[k] = *p[j].value;
        } else {
          failures[k] = p[j].skipped;
        }
      }
    });
    simulations += groups.size();
    report();
    for (std::size_t k = 0; k < which.size(); ++k) {
      if (!failures[k].empty()) {
        throw hw::ConfigError(
            fmt::format("row {} cannot run with the trial values: {}", rows[which[k]]->id, failures[k]));
      }
    }
    return out;
  }

  Eigen::VectorXd residuals(const Eigen::VectorXd& z, const std::vector<std::size_t>& which) {
    const std::vector<double> pred = predict_rows(z, which);
    Eigen::VectorXd r(static_cast<Eigen::Index>(which.size()));
    for (std::size_t k = 0; k < which.size(); ++k) {
      r[static_cast<Eigen::Index>(k)] = std::log(pred[k] / rows[which[k]]->measured);
    }
    return r;
  }

  // The difference step of field j at z: 3 % in z, at least one unit for a whole-number field,
  // taken downwards when upwards would leave the bounds.
  double step(std::size_t j, double z) const {
    double h = relative_step;
    if (!fields[j].log_scale) {
      // A field from 0 moves by a share of its range (at least one unit when whole): a step of
      // one nanosecond on a field of milliseconds would see no change.
      h = relative_step * (fields[j].upper - fields[j].lower);
      if (fields[j].field.integer) h = std::max(h, 1.01);
    } else if (fields[j].field.integer) {
      const double p = to_p(j, z);
      h = std::max(h, std::log((p + 1.0) / p) * 1.01);
    }
    return z + h <= z_hi(j) ? h : -h;
  }

  // Coarse difference steps first (robust on step functions), then fine ones near the minimum.
  Eigen::VectorXd fit(const Eigen::VectorXd& z0, const std::vector<std::size_t>& which, int max_iterations,
                      int* iterations) {
    int coarse = 0, fine = 0;
    relative_step = kStep;
    const Eigen::VectorXd z = fit_with_step(z0, which, max_iterations, &coarse);
    relative_step = kFineStep;
    const Eigen::VectorXd refined = fit_with_step(z, which, max_iterations, &fine);
    relative_step = kStep;
    if (iterations) *iterations = coarse + fine;
    return refined;
  }

  // Levenberg-Marquardt from z over the rows in `which`; returns the fitted z.
  Eigen::VectorXd fit_with_step(Eigen::VectorXd z, const std::vector<std::size_t>& which, int max_iterations,
                                int* iterations) {
    const Eigen::Index m = z.size();
    Eigen::VectorXd r = residuals(z, which);
    double cost = r.squaredNorm();
    stage_mape = mape_of_residuals(r);
    double lambda = kLambda0;
    int it = 0;
    for (; it < max_iterations && cost > 0; ++it) {
      Eigen::MatrixXd J(r.size(), m);
      for (Eigen::Index j = 0; j < m; ++j) {
        Eigen::VectorXd zh = z;
        const double h = step(static_cast<std::size_t>(j), z[j]);
        zh[j] += h;
        J.col(j) = (residuals(zh, which) - r) / h;
      }
      const Eigen::MatrixXd JtJ = J.transpose() * J;
      const Eigen::VectorXd g = J.transpose() * r;
      bool accepted = false;
      for (int tries = 0; tries < 8 && !accepted; ++tries) {
        Eigen::MatrixXd A = JtJ;
        for (Eigen::Index j = 0; j < m; ++j) A(j, j) += lambda * std::max(JtJ(j, j), 1e-12);
        Eigen::VectorXd dz = A.ldlt().solve(-g);
        Eigen::VectorXd zn = z + dz;
        for (Eigen::Index j = 0; j < m; ++j) {
          zn[j] = std::clamp(zn[j], z_lo(static_cast<std::size_t>(j)), z_hi(static_cast<std::size_t>(j)));
        }
        if ((zn - z).norm() < 1e-4) {
          tries = 8;
          break;
        }
        const Eigen::VectorXd rn = residuals(zn, which);
        const double next = rn.squaredNorm();
        if (next < cost) {
          const double gain = (cost - next) / cost;
          z = zn;
          r = rn;
          cost = next;
          stage_mape = mape_of_residuals(r);
          lambda = std::max(lambda / 3, 1e-9);
          accepted = true;
          if (gain < 1e-6) it = max_iterations;
        } else {
          lambda *= 4;
        }
      }
      if (!accepted) break;
    }
    if (iterations) *iterations = std::min(it, max_iterations);
    return z;
  }
};

double mape_of(const std::vector<double>& predicted, const std::vector<const MeasuredRow*>& rows) {
  double sum = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) sum += std::abs(predicted[i] / rows[i]->measured - 1.0);
  return rows.empty() ? 0 : 100.0 * sum / static_cast<double>(rows.size());
}

double rms_log(const std::vector<double>& predicted, const std::vector<const MeasuredRow*>& rows) {
  double sum = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) sum += std::pow(std::log(predicted[i] / rows[i]->measured), 2);
  return rows.empty() ? 0 : std::sqrt(sum / static_cast<double>(rows.size()));
}

// The config without an earlier calibration record (always the last section: cut it).
std::string without_record(const std::string& text) {
  const std::size_t at = text.rfind("\ncalibration:");
  return at == std::string::npos ? text : text.substr(0, at + 1);
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string record_of(const CalibrationResult& r) {
  std::string ids, fitted;
  for (const CalibratedRow& row : r.rows) ids += (ids.empty() ? "" : ", ") + quoted(row.id);
  for (const FittedField& f : r.fields) {
    const std::string from = format_field_value(f.field, f.field.value), to = format_field_value(f.field, f.fitted);
    fitted += fmt::format("    - {}\n",
                          quoted(r.transferred_from.empty()
                                     ? fmt::format("{} {} -> {} in [{}, {}]", f.field.path, from, to, f.lower, f.upper)
                                     : fmt::format("{} {} -> {} (transferred)", f.field.path, from, to)));
  }
  std::string extra;
  if (r.leave_model_out) extra += fmt::format("  leave_one_model_out_mape_pct: {:.2f}\n", r.leave_model_out->mape);
  if (r.leave_setup_out) extra += fmt::format("  leave_one_setup_out_mape_pct: {:.2f}\n", r.leave_setup_out->mape);
  if (r.leave_run_out) extra += fmt::format("  leave_one_run_out_mape_pct: {:.2f}\n", r.leave_run_out->mape);
  if (r.bands) {
    extra += fmt::format(
        "  bands:                           # {:.0f} % of the held-out rows' predicted / measured time fell in "
        "[low, high]\n    coverage: {}\n    basis: {}\n",
        100 * r.bands->coverage, r.bands->coverage, quoted(r.bands->basis));
    for (const hw::ErrorBand& b : r.bands->bands) {
      extra += fmt::format("    {}: {{rows: {}, low: {:.4f}, high: {:.4f}}}\n", hw::name_of(b.kind), b.rows,
                           b.low_ratio, b.high_ratio);
    }
  }
  return fmt::format(
      "calibration:                     # written by g5sim calibrate: a record; {}\n"
      "  g5sim: {}\n  date: {}\n  base: {}\n  measured: {}\n  rows: [{}]\n{}  fitted:\n{}"
      "  mape_before_pct: {:.2f}\n  mape_after_pct: {:.2f}\n  leave_one_out_mape_pct: {:.2f}\n{}",
      "only `bands` is read (a result's band)", quoted(g5sim::version()), quoted(r.date), quoted(r.chip_path),
      quoted(r.table_path), ids,
      r.transferred_from.empty() ? std::string() : fmt::format("  transferred_from: {}\n", quoted(r.transferred_from)),
      fitted, r.mape_before, r.mape_after, r.mape_leave_one_out, extra);
}

}  // namespace

namespace {

// The fields to fit, each once, from their --fit specs.
void add_fields(Problem& problem, const std::vector<std::string>& specs, const std::string& chip_path) {
  for (const std::string& spec : specs) {
    FittedField f = parse_fit(spec, problem.base_text, chip_path, problem.check);
    for (const FittedField& g : problem.fields) {
      if (g.field.path == f.field.path) throw hw::ConfigError(fmt::format("--fit: {} is named twice", f.field.path));
    }
    problem.fields.push_back(std::move(f));
  }
}

// The candidate rows that run at the starting values join the problem (with their model, and
// their chip for a runtime's fit: `chips` empty for a chip's), their predictions returned; the
// others are dropped with the reason. `predict_one` runs candidate i, on `jobs` threads.
std::vector<double> admit_rows(Problem& problem, const std::vector<const MeasuredRow*>& candidates,
                               const std::vector<std::optional<g5sim::Model>>& models,
                               const std::vector<std::optional<g5sim::Chip>>& chips, const CalibrationOptions& options,
                               CalibrationResult& result, const std::function<Prediction(std::size_t)>& predict_one) {
  std::vector<std::string> failure(candidates.size());
  std::vector<double> first(candidates.size()), before;
  std::mutex done_mutex;  // the progress hook is called from one thread at a time
  problem.simulations = 0;
  parallel_for(candidates.size(), options.jobs, [&](std::size_t i) {
    const Prediction p = predict_one(i);
    if (p.value) {
      first[i] = *p.value;
    } else {
      failure[i] = p.skipped;
    }
    const std::lock_guard<std::mutex> lock(done_mutex);
    ++problem.simulations;
    problem.report();
  });
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!failure[i].empty()) {
      result.dropped.push_back(fmt::format("{}: {}", candidates[i]->id, failure[i]));
      continue;
    }
    problem.rows.push_back(candidates[i]);
    problem.models.push_back(models[i]);
    if (!chips.empty()) problem.chips.push_back(chips[i]);
    before.push_back(first[i]);
  }
  problem.simulations = candidates.size();
  return before;
}

// The rows of this chip (by config stem), loadable, and running at the starting values: they join
// the problem with their starting predictions (returned); the others are dropped with the reason.
std::vector<double> select_rows(Problem& problem, const MeasuredTable& table, const std::string& chip_path,
                                const CalibrationOptions& options, CalibrationResult& result) {
  ConfigResolver resolver(table.path, false);
  const std::string stem = config_stem(chip_path);
  for (const std::string& id : options.rows) {
    const auto named =
        std::find_if(table.rows.begin(), table.rows.end(), [&](const MeasuredRow& r) { return r.id == id; });
    if (named == table.rows.end()) throw hw::ConfigError(fmt::format("--rows: no row '{}' in {}", id, table.path));
    if (named->workload == WorkloadKind::serve) {
      throw hw::ConfigError(fmt::format("--rows: '{}' is a serving row; a fit uses step and op rows", id));
    }
  }
  std::vector<const MeasuredRow*> candidates;
  std::vector<std::optional<g5sim::Model>> models;
  for (const MeasuredRow& row : table.rows) {
    // Serving rows check the serving on top of the steps; the fit is of the steps (docs/validation.md).
    if (config_stem(row.chip) != stem || !row.exclude.empty() || row.workload == WorkloadKind::serve) continue;
    if (!options.rows.empty() && std::find(options.rows.begin(), options.rows.end(), row.id) == options.rows.end()) {
      continue;
    }
    try {
      models.emplace_back(row.model.empty() ? std::nullopt : std::optional<g5sim::Model>(resolver.model(row.model)));
      candidates.push_back(&row);
    } catch (const std::exception& e) {
      result.dropped.push_back(fmt::format("{}: {}", row.id, e.what()));
    }
  }
  const g5sim::Chip start = g5sim::Chip::from_yaml(problem.base_text, chip_path);
  const std::vector<double> before = admit_rows(problem, candidates, models, {}, options, result, [&](std::size_t i) {
    return predict(*candidates[i], start, models[i] ? &*models[i] : nullptr, options.max_commands);
  });
  if (problem.rows.size() < problem.fields.size()) {
    throw hw::ConfigError(fmt::format("{} rows of chip '{}' ran in {}, fewer than the {} fields to fit",
                                      problem.rows.size(), stem, table.path, problem.fields.size()));
  }
  return before;
}

// Whether a row runs with this runtime: its options name it (a shipped name or a path), and it
// is a serve or a step (what a runtime changes).
bool names_runtime(const MeasuredRow& row, const std::string& runtime_path) {
  const auto it = row.options.find("runtime");
  if (it == row.options.end() || !row.exclude.empty()) return false;
  if (row.workload != WorkloadKind::serve && row.workload != WorkloadKind::step) return false;
  std::error_code ec;
  return std::filesystem::weakly_canonical(g5sim::runtime_path(it->second), ec) ==
         std::filesystem::weakly_canonical(runtime_path, ec);
}

// The rows that name this runtime, each on its chip as validate --calibrated runs it (the chips'
// own fits stand: the runtime is fitted on top of them), running at the starting values: they join
// the problem with their starting predictions (returned); the others are dropped with the reason.
std::vector<double> select_runtime_rows(Problem& problem, const MeasuredTable& table, const std::string& runtime_path,
                                        const CalibrationOptions& options, CalibrationResult& result) {
  ConfigResolver resolver(table.path, true);
  std::vector<const MeasuredRow*> candidates;
  std::vector<std::optional<g5sim::Model>> models;
  std::vector<std::optional<g5sim::Chip>> chips;
  for (const MeasuredRow& row : table.rows) {
    if (!names_runtime(row, runtime_path)) continue;
    if (!options.rows.empty() && std::find(options.rows.begin(), options.rows.end(), row.id) == options.rows.end()) {
      continue;
    }
    try {
      chips.emplace_back(resolver.chip(row.chip));
      models.emplace_back(resolver.model(row.model));
      candidates.push_back(&row);
    } catch (const std::exception& e) {
      result.dropped.push_back(fmt::format("{}: {}", row.id, e.what()));
    }
  }
  const RowOverrides at_start{runtime_path, problem.shared};
  const std::vector<double> before = admit_rows(
      problem, candidates, models, chips, options, result,
      [&](std::size_t i) { return predict(*candidates[i], *chips[i], &*models[i], options.max_commands, at_start); });
  if (problem.rows.size() < problem.fields.size()) {
    throw hw::ConfigError(fmt::format("{} rows naming runtime {} ran in {}, fewer than the {} fields to fit",
                                      problem.rows.size(), runtime_path, table.path, problem.fields.size()));
  }
  return before;
}

// The fit's starting point: the config's own values of the fitted fields. Every refit of the
// cross-validations starts here too, never at the fit over all rows: that fit has seen the rows a
// fold holds out, and on the step-like objectives of whole serves (a median TTFT jumps when a
// prompt meets another step) a refit started there stays there, so the held-out predictions came
// out as the full fit's (sglang.calibrated's set-ups out: 6.43 % from the full fit, 8.38 % from
// the config's values).
Eigen::VectorXd starting_point(const Problem& problem) {
  Eigen::VectorXd z0(static_cast<Eigen::Index>(problem.fields.size()));
  for (std::size_t j = 0; j < problem.fields.size(); ++j) {
    z0[static_cast<Eigen::Index>(j)] = problem.to_z(j, problem.fields[j].field.value);
  }
  return z0;
}

// The point `z` as the config will hold it: each value rounded as written, back in z.
Eigen::VectorXd as_written(const Problem& problem, const Eigen::VectorXd& z) {
  const std::vector<double> p = problem.values(z);
  Eigen::VectorXd written(z.size());
  for (std::size_t j = 0; j < problem.fields.size(); ++j) {
    written[static_cast<Eigen::Index>(j)] = problem.to_z(j, held_value(problem.fields[j].field, p[j]));
  }
  return written;
}

// K-fold cross-validation (rows i mod K held out), each fold refitted from the starting point:
// each row's prediction by a fit that did not see it, and their MAPE.
void cross_validate(Problem& problem, const CalibrationOptions& options, CalibrationResult& result) {
  const std::size_t n = problem.rows.size();
  const std::size_t folds = options.folds != 0 ? std::min<std::size_t>(options.folds, n) : n <= 20 ? n : 10;
  result.folds = folds;
  if (!options.leave_one_out || folds < 2 || n - (n + folds - 1) / folds < problem.fields.size()) return;
  double sum = 0;
  for (std::size_t f = 0; f < folds; ++f) {
    std::vector<std::size_t> others, held;
    for (std::size_t k = 0; k < n; ++k) (k % folds == f ? held : others).push_back(k);
    problem.begin_stage(fmt::format("row fold {} of {}", f + 1, folds));
    const Eigen::VectorXd zi = problem.fit(starting_point(problem), others, options.max_iterations, nullptr);
    const std::vector<double> predicted = problem.predict_rows(as_written(problem, zi), held);
    for (std::size_t h = 0; h < held.size(); ++h) {
      CalibratedRow& row = result.rows[held[h]];
      row.leave_one_out = predicted[h];
      row.has_leave_one_out = true;
      sum += std::abs(row.leave_one_out / row.measured - 1.0);
    }
  }
  result.mape_leave_one_out = 100.0 * sum / static_cast<double>(n);
}

// Leave one group out: each group's rows predicted by a fit of the other groups' rows (a group
// whose others are fewer than the fields keeps no prediction). Null with fewer than two groups.
std::optional<GroupValidation> leave_groups_out(Problem& problem, const CalibrationOptions& options,
                                                CalibrationResult& result, std::string CalibratedRow::*group,
                                                std::optional<double> CalibratedRow::*held_out, const char* kind) {
  const std::size_t n = problem.rows.size();
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::find(names.begin(), names.end(), result.rows[i].*group) == names.end()) {
      names.push_back(result.rows[i].*group);
    }
  }
  if (names.size() < 2) return std::nullopt;
  GroupValidation v;
  v.groups = names.size();
  double sum = 0;
  for (std::size_t g = 0; g < names.size(); ++g) {
    const std::string& name = names[g];
    std::vector<std::size_t> others, held;
    for (std::size_t k = 0; k < n; ++k) (result.rows[k].*group == name ? held : others).push_back(k);
    if (others.size() < problem.fields.size()) continue;
    problem.begin_stage(fmt::format("{} out {} of {}: {}", kind, g + 1, names.size(), name));
    const Eigen::VectorXd zi = problem.fit(starting_point(problem), others, options.max_iterations, nullptr);
    const std::vector<double> predicted = problem.predict_rows(as_written(problem, zi), held);
    for (std::size_t h = 0; h < held.size(); ++h) {
      CalibratedRow& row = result.rows[held[h]];
      row.*held_out = predicted[h];
      sum += std::abs(predicted[h] / row.measured - 1.0);
      ++v.rows;
    }
  }
  if (v.rows == 0) return std::nullopt;
  v.mape = 100.0 * sum / static_cast<double>(v.rows);
  return v;
}

// The error bands of the row folds' held-out predictions (hw/error_band.hpp): per kind with at
// least kBandLeastRows rows, and over all rows.
constexpr std::size_t kBandLeastRows = 5;
constexpr double kBandCoverage = 0.8;
// The share of `sorted` ratios inside the band of the others (each left out in turn).
double left_out_coverage(const std::vector<double>& sorted, double tail) {
  if (sorted.size() < 3) return 0;
  std::size_t inside = 0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    std::vector<double> others = sorted;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    const double lo = hw::interpolated_quantile(others, tail), hi = hw::interpolated_quantile(others, 1.0 - tail);
    inside += sorted[i] >= lo && sorted[i] <= hi ? 1 : 0;
  }
  return static_cast<double>(inside) / static_cast<double>(sorted.size());
}

std::optional<hw::ErrorBands> bands_of(const Problem& problem, CalibrationResult& result) {
  std::vector<std::vector<double>> ratios(hw::kBandKindCount);
  for (std::size_t i = 0; i < problem.rows.size(); ++i) {
    const CalibratedRow& row = result.rows[i];
    if (!row.has_leave_one_out) continue;
    const double r = time_ratio(*problem.rows[i], row.leave_one_out);
    ratios[static_cast<std::size_t>(band_kind_of(*problem.rows[i]))].push_back(r);
    ratios[static_cast<std::size_t>(hw::BandKind::all)].push_back(r);
  }
  hw::ErrorBands bands;
  bands.coverage = kBandCoverage;
  bands.basis = result.folds == problem.rows.size() ? "leave-one-out" : fmt::format("{} folds", result.folds);
  for (std::size_t k = 0; k < hw::kBandKindCount; ++k) {
    std::vector<double>& r = ratios[k];
    const bool all = static_cast<hw::BandKind>(k) == hw::BandKind::all;
    if (r.size() < (all ? 2 : kBandLeastRows)) continue;
    std::sort(r.begin(), r.end());
    const double tail = (1.0 - kBandCoverage) / 2;
    bands.bands.push_back(hw::ErrorBand{static_cast<hw::BandKind>(k), r.size(), hw::interpolated_quantile(r, tail),
                                        hw::interpolated_quantile(r, 1.0 - tail)});
    result.band_row_coverage.push_back(left_out_coverage(r, tail));
  }
  if (bands.bands.empty()) return std::nullopt;
  return bands;
}

// The calibrated config: the base text with the fitted values, each fitted line saying so (its
// old comment, a source for the value it replaced, goes), and the calibration record.
std::string calibrated_yaml(const Problem& problem, const CalibrationResult& result, const std::string& chip_path) {
  std::vector<double> fitted_values;
  for (const FittedField& f : result.fields) fitted_values.push_back(f.fitted);
  std::string text = with_field_values(problem.base_text, problem.chip_fields(), fitted_values);
  for (const FittedField& f : result.fields) {
    const ChipField at = find_chip_field(text, chip_path, f.field.path);
    const std::size_t end = std::min(text.find('\n', at.offset), text.size());
    const std::size_t hash = text.find('#', at.offset);
    const std::size_t from = hash < end ? hash : end;
    const std::string note = result.transferred_from.empty()
                                 ? fmt::format("# CALIBRATED (g5sim calibrate, was {}): see `calibration` below",
                                               format_field_value(f.field, f.field.value))
                                 : fmt::format("# CALIBRATED (transferred from {}, was {}): see `calibration` below",
                                               result.transferred_from, format_field_value(f.field, f.field.value));
    text.replace(from, end - from, hash < end ? note : "  " + note);
  }
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text + record_of(result);
}

}  // namespace

namespace {

// The problem's starting config (which must load) and limits, and the names the record gives.
Problem start_problem(const std::string& chip_path, const MeasuredTable& table, const CalibrationOptions& options,
                      CalibrationResult& result, ConfigCheck check = check_chip) {
  Problem problem;
  problem.check = check;
  problem.source = chip_path;
  problem.base_text = without_record(hw::read_input_file(chip_path));
  problem.jobs = options.jobs;
  problem.max_commands = options.max_commands;
  problem.progress = options.progress;
  problem.stage = "the rows at the starting values";
  check(problem.base_text, chip_path);
  result.chip_path = options.chip_label.empty() ? chip_path : options.chip_label;
  result.table_path = options.table_label.empty() ? table.path : options.table_label;
  result.date = options.date.empty() ? utc_now() : options.date;
  return problem;
}

// Each row's record: measured, predicted before and after, and the groups it belongs to.
void record_rows(const Problem& problem, const std::vector<double>& before, const std::vector<double>& after,
                 CalibrationResult& result) {
  for (std::size_t i = 0; i < problem.rows.size(); ++i) {
    const MeasuredRow& r = *problem.rows[i];
    CalibratedRow& row = result.rows.emplace_back();
    row.id = r.id;
    row.measured = r.measured;
    row.before = before[i];
    row.after = after[i];
    row.model_group = r.model.empty() ? std::string(name_of(r.workload)) + " op" : r.model;
    row.setup_group = r.hardware;
    // A benchmark run: the rows one simulation predicts (row_prediction.hpp, run_key: every column
    // but the metric, the `stat=` and the `op` it reads), on one hardware cell.
    row.run_group = r.hardware + " | " + run_key(r);
  }
}

// The result's summary figures and the config it writes (which must load).
void finish(const Problem& problem, const std::vector<double>& before, const std::vector<double>& after,
            const std::string& chip_path, CalibrationResult& result) {
  result.fields = problem.fields;
  result.simulations = problem.simulations;
  result.mape_before = mape_of(before, problem.rows);
  result.mape_after = mape_of(after, problem.rows);
  result.rms_log_before = rms_log(before, problem.rows);
  result.rms_log_after = rms_log(after, problem.rows);
  result.calibrated_yaml = calibrated_yaml(problem, result, chip_path);
  problem.check(result.calibrated_yaml, chip_path);
}

// The dotted paths of the fields a calibrated config's record lists as fitted (each entry starts
// with its path: "engines.tensor.cube_efficiency 1.0 -> 0.9 in [0.05, 1]").
std::vector<std::string> fitted_paths(const std::string& text, const std::string& source) {
  std::vector<std::string> paths;
  try {
    const YAML::Node fitted = YAML::Load(text)["calibration"]["fitted"];
    for (const YAML::Node& entry : fitted) {
      const std::string s = entry.as<std::string>();
      paths.push_back(s.substr(0, s.find(' ')));
    }
  } catch (const YAML::Exception& e) {
    throw hw::ConfigError(fmt::format("--transfer-from: {}: calibration.fitted: {}", source, e.what()));
  }
  if (paths.empty()) {
    throw hw::ConfigError(fmt::format("--transfer-from: {}: its calibration record lists no fitted field", source));
  }
  return paths;
}

CalibrationResult transfer(const std::string& chip_path, const MeasuredTable& table,
                           const CalibrationOptions& options) {
  const std::string source_text = hw::read_input_file(options.transfer_from);
  const g5sim::Chip source = g5sim::Chip::from_yaml(source_text, options.transfer_from);
  const hw::Chip& source_data = source.data().chip;
  if (!source_data.calibrated) {
    throw hw::ConfigError(
        fmt::format("--transfer-from: {} has no calibration record: name a config g5sim "
                    "calibrate wrote (CHIP.calibrated.yaml)",
                    options.transfer_from));
  }
  CalibrationResult result;
  Problem problem = start_problem(chip_path, table, options, result);
  result.transferred_from = options.transfer_label.empty() ? options.transfer_from : options.transfer_label;
  // Rows first (no field is fitted, so none is too few), then the fields.
  const std::vector<double> before = select_rows(problem, table, chip_path, options, result);
  if (problem.rows.empty()) {
    throw hw::ConfigError(
        fmt::format("--transfer-from: no row of chip '{}' ran in {}: a transfer is checked on "
                    "the target's own rows",
                    config_stem(chip_path), table.path));
  }
  Eigen::VectorXd z(0);
  for (const std::string& path : fitted_paths(source_text, options.transfer_from)) {
    FittedField f = parse_fit(path, problem.base_text, chip_path, problem.check);
    f.fitted = find_chip_field(source_text, options.transfer_from, path).value;
    problem.fields.push_back(f);
    z.conservativeResize(z.size() + 1);
    z[z.size() - 1] = problem.to_z(problem.fields.size() - 1, f.fitted);
  }
  std::vector<std::size_t> all(problem.rows.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::vector<double> after = problem.predict_rows(z, all);
  record_rows(problem, before, after, result);
  // Every row is held out of the fit: its prediction after the transfer is its held-out one.
  for (CalibratedRow& row : result.rows) {
    row.leave_one_out = row.after;
    row.has_leave_one_out = true;
  }
  result.folds = problem.rows.size();
  if (source_data.error_bands) {
    result.bands = *source_data.error_bands;
    result.bands->basis = fmt::format("{} of {}, transferred", result.bands->basis, result.transferred_from);
    // The share of the target's rows inside each band: the transfer's own check of it.
    for (const hw::ErrorBand& b : result.bands->bands) {
      std::size_t of = 0, inside = 0;
      for (std::size_t i = 0; i < problem.rows.size(); ++i) {
        if (b.kind != hw::BandKind::all && band_kind_of(*problem.rows[i]) != b.kind) continue;
        const double r = time_ratio(*problem.rows[i], after[i]);
        ++of;
        inside += r >= b.low_ratio && r <= b.high_ratio ? 1 : 0;
      }
      result.band_row_coverage.push_back(of == 0 ? 0.0 : static_cast<double>(inside) / static_cast<double>(of));
    }
  }
  result.mape_leave_one_out = mape_of(after, problem.rows);
  finish(problem, before, after, chip_path, result);
  return result;
}

// The fit from the config's values over every row, the fitted values as the config holds them,
// the predictions there, the row folds and the group cross-validations; the error bands (a
// chip's, per kind of work) when `bands`.
void fit_and_check(Problem& problem, const std::vector<double>& before, const CalibrationOptions& options,
                   CalibrationResult& result, bool bands) {
  std::vector<std::size_t> all(problem.rows.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  problem.begin_stage(fmt::format("the fit over {} rows", all.size()));
  const Eigen::VectorXd z = problem.fit(starting_point(problem), all, options.max_iterations, &result.iterations);
  const Eigen::VectorXd written = as_written(problem, z);
  const std::vector<double> p = problem.values(z);
  for (std::size_t j = 0; j < problem.fields.size(); ++j) {
    problem.fields[j].fitted = held_value(problem.fields[j].field, p[j]);
  }
  result.after_predictions = problem.predict_rows(written, all);
  record_rows(problem, before, result.after_predictions, result);
  cross_validate(problem, options, result);
  if (!options.leave_one_out) return;
  for (const std::string& g : options.cv_groups) {
    if (g == "model") {
      result.leave_model_out =
          leave_groups_out(problem, options, result, &CalibratedRow::model_group, &CalibratedRow::model_out, "model");
    } else if (g == "setup") {
      result.leave_setup_out =
          leave_groups_out(problem, options, result, &CalibratedRow::setup_group, &CalibratedRow::setup_out, "set-up");
    } else if (g == "run") {
      result.leave_run_out =
          leave_groups_out(problem, options, result, &CalibratedRow::run_group, &CalibratedRow::run_out, "run");
    } else {
      throw hw::ConfigError(fmt::format("--cv: '{}' is not a group; valid: model, setup, run", g),
                            hw::ErrorSite{"", "cv", 0, 0});
    }
  }
  if (bands) result.bands = bands_of(problem, result);
}

}  // namespace

CalibrationResult calibrate(const std::string& chip_path, const MeasuredTable& table,
                            const CalibrationOptions& options) {
  if (!options.transfer_from.empty()) {
    if (!options.fit.empty()) {
      throw hw::ConfigError("--fit: not with --transfer-from (a transfer takes the source's fitted fields)",
                            hw::ErrorSite{"", "fit", 0, 0});
    }
    return transfer(chip_path, table, options);
  }
  if (options.fit.empty()) {
    throw hw::ConfigError("--fit: name at least one chip field (or --transfer-from a calibrated config)",
                          hw::ErrorSite{"", "fit", 0, 0});
  }
  CalibrationResult result;
  Problem problem = start_problem(chip_path, table, options, result);
  add_fields(problem, options.fit, chip_path);
  const std::vector<double> before = select_rows(problem, table, chip_path, options, result);
  fit_and_check(problem, before, options, result, true);
  finish(problem, before, result.after_predictions, chip_path, result);
  return result;
}

CalibrationResult calibrate_runtime(const std::string& runtime_path, const MeasuredTable& table,
                                    const CalibrationOptions& options) {
  if (options.fit.empty()) {
    throw hw::ConfigError("--fit: name at least one runtime field (step.cpu_ns, kernels.graph.gap_ns, ...)",
                          hw::ErrorSite{"", "fit", 0, 0});
  }
  if (!options.transfer_from.empty()) {
    throw hw::ConfigError("--transfer-from: a chip's fit; a runtime is fitted to its own rows",
                          hw::ErrorSite{"", "transfer_from", 0, 0});
  }
  CalibrationResult result;
  result.runtime_fit = true;
  Problem problem = start_problem(runtime_path, table, options, result, check_runtime);
  const explore::ScratchFile trial("calibrate: the trial runtimes");
  problem.trial = &trial;
  problem.shared = std::make_shared<g5sim::SharedStepTimes>();
  add_fields(problem, options.fit, runtime_path);
  const std::vector<double> before = select_runtime_rows(problem, table, runtime_path, options, result);
  fit_and_check(problem, before, options, result, true);
  finish(problem, before, result.after_predictions, runtime_path, result);
  return result;
}

void write_calibration_report(std::ostream& out, const CalibrationResult& r) {
  fmt::print(out, "g5sim calibrate: {} against {} ({} rows, {} iterations, {} simulations)\n", r.chip_path,
             r.table_path, r.rows.size(), r.iterations, r.simulations);
  for (const std::string& d : r.dropped) fmt::print(out, "  dropped {}\n", d);
  fmt::print(out, "{:<36} {:>12} {:>12} {:>24}\n", "field", "before", "fitted", "bounds");
  for (const FittedField& f : r.fields) {
    fmt::print(out, "{:<36} {:>12} {:>12} {:>24}\n", f.field.path, format_field_value(f.field, f.field.value),
               format_field_value(f.field, f.fitted), fmt::format("[{:g}, {:g}]", f.lower, f.upper));
  }
  fmt::print(out, "\n{:<10} {:>12} {:>12} {:>8} {:>12} {:>8} {:>12} {:>8}\n", "row", "measured", "before", "err%",
             "after", "err%", "left out", "err%");
  for (const CalibratedRow& row : r.rows) {
    const auto pct = [&](double v) { return fmt::format("{:+.1f}", (v / row.measured - 1.0) * 100.0); };
    fmt::print(out, "{:<10} {:>12.6g} {:>12.6g} {:>8} {:>12.6g} {:>8} {:>12} {:>8}\n", row.id, row.measured, row.before,
               pct(row.before), row.after, pct(row.after),
               row.has_leave_one_out ? fmt::format("{:.6g}", row.leave_one_out) : "-",
               row.has_leave_one_out ? pct(row.leave_one_out) : "-");
  }
  for (const CalibratedRow& row : r.rows) {
    if (!row.model_out && !row.setup_out && !row.run_out) continue;
    const auto pct = [&](const std::optional<double>& v) {
      return v ? fmt::format("{:+.1f}", (*v / row.measured - 1.0) * 100.0) : std::string("-");
    };
    // The groups asked for (--cv); a run's name is long (every option), so only the progress line
    // of its stage names it.
    std::string line = fmt::format("{:<10}", row.id);
    if (r.leave_model_out || r.leave_setup_out) {
      line += fmt::format(" model out {:>8} ({})  set-up out {:>8} ({})", pct(row.model_out), row.model_group,
                          pct(row.setup_out), row.setup_group);
    }
    if (r.leave_run_out) line += fmt::format("  run out {:>8}", pct(row.run_out));
    fmt::print(out, "{}\n", line);
  }
  const bool held = !r.rows.empty() && r.rows.front().has_leave_one_out;
  if (r.leave_model_out) {
    fmt::print(out, "leave-one-model-out MAPE {:.2f} % ({} groups, {} rows)\n", r.leave_model_out->mape,
               r.leave_model_out->groups, r.leave_model_out->rows);
  }
  if (r.leave_setup_out) {
    fmt::print(out, "leave-one-set-up-out MAPE {:.2f} % ({} groups, {} rows)\n", r.leave_setup_out->mape,
               r.leave_setup_out->groups, r.leave_setup_out->rows);
  }
  if (r.leave_run_out) {
    fmt::print(out, "leave-one-run-out MAPE {:.2f} % ({} groups, {} rows)\n", r.leave_run_out->mape,
               r.leave_run_out->groups, r.leave_run_out->rows);
  }
  if (r.bands) {
    for (std::size_t i = 0; i < r.bands->bands.size(); ++i) {
      const hw::ErrorBand& b = r.bands->bands[i];
      if (!r.transferred_from.empty()) {
        fmt::print(out,
                   "band {:<8} {:.0f} % of {}'s {} held-out rows: measured time = predicted / [{:.3f}, {:.3f}]; "
                   "this chip's rows inside it: {:.0f} %\n",
                   hw::name_of(b.kind), 100 * r.bands->coverage, r.transferred_from, b.rows, b.low_ratio, b.high_ratio,
                   100 * r.band_row_coverage[i]);
        continue;
      }
      fmt::print(out,
                 "band {:<8} {:.0f} % of {} held-out rows: measured time = predicted / [{:.3f}, {:.3f}]; a row left "
                 "out of its band falls in the others' band {:.0f} % of the time\n",
                 hw::name_of(b.kind), 100 * r.bands->coverage, b.rows, b.low_ratio, b.high_ratio,
                 100 * r.band_row_coverage[i]);
    }
  }
  if (!r.transferred_from.empty()) {
    fmt::print(out,
               "\nMAPE {:.2f} % -> {:.2f} % (rms log error {:.4f} -> {:.4f}); the fit transferred from {}: every "
               "row held out\n",
               r.mape_before, r.mape_after, r.rms_log_before, r.rms_log_after, r.transferred_from);
    return;
  }
  fmt::print(
      out, "\nMAPE {:.2f} % -> {:.2f} % (rms log error {:.4f} -> {:.4f}); {} MAPE {}\n", r.mape_before, r.mape_after,
      r.rms_log_before, r.rms_log_after,
      held && r.folds == r.rows.size() ? std::string("leave-one-out") : fmt::format("held-out ({} folds)", r.folds),
      held ? fmt::format("{:.2f} %", r.mape_leave_one_out) : std::string("not computed"));
}

}  // namespace explore::validation
