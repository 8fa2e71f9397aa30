#include "explore/sensitivity.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>

#include "api/csv_cell.hpp"
#include "api/json_text.hpp"
#include "api/parallel_for.hpp"
#include "api/public_errors.hpp"
#include "explore/context_list.hpp"
#include "explore/scratch_file.hpp"
#include "g5sim/reports.hpp"
#include "g5sim/runtime.hpp"
#include "hw/chip_fields.hpp"
#include "hw/config_error.hpp"
#include "hw/input_file.hpp"

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

std::string number(double v) { return number_text(v); }
std::string number(const std::optional<double>& v) { return v ? number_text(*v) : std::string(); }
std::string json_or_null(const std::optional<double>& v) { return v ? number_text(*v) : std::string("null"); }

// A field varied: the chip's, or (named "runtime." + its path) the runtime's the run names.
struct SensitiveField {
  hw::ChipField field;
  std::string name;  ///< as the report names it
  bool runtime = false;
};

// The configs the fields come from: the chip's and, when the run names one, the runtime's.
struct VariedConfigs {
  const ChipText& chip;
  std::optional<ChipText> runtime;
};

constexpr std::string_view kRuntimePrefix = "runtime.";

// One variant: a field at another value (the chip so changed, or the runtime so changed written to
// a scratch file the variant's runs name), or the config's refusal of it.
struct Variant {
  std::optional<double> value;  ///< as the config holds it; none when there is no such side
  std::optional<g5sim::Chip> chip;
  std::shared_ptr<const explore::ScratchFile> runtime;
  std::string note;
  bool made() const { return chip.has_value() || runtime != nullptr; }
};

// The field at `value`: its chip or runtime, or the config's refusal (the variant's note).
Variant variant_at(const VariedConfigs& configs, const SensitiveField& varied, const hw::ChipField& field, double value,
                   int sign) {
  Variant v;
  if (!(value > 0)) {
    v.note = fmt::format("{} {} would be {}: no logarithm", varied.name, sign < 0 ? "-" : "+",
                         hw::format_field_value(field, value));
    return v;
  }
  try {
    if (varied.runtime) {
      const std::string text = hw::with_field_values(configs.runtime->text, {field}, {value});
      (void)g5sim::Runtime::from_yaml(text, configs.runtime->source);  // refused here, named by its field
      auto file = std::make_shared<explore::ScratchFile>("sensitivity: a runtime variant");
      file->write(text);
      v.runtime = std::move(file);
    } else {
      v.chip = chip_with(configs.chip, {field}, {value});
    }
    v.value = value;
  } catch (const g5sim::ConfigError& e) {
    v.note = fmt::format("{} = {}: {}", varied.name, hw::format_field_value(field, value), e.what());
  }
  return v;
}

// The field moved by `sign` x delta, as the config will hold it. A value written as a whole
// number may be a count (cores) or a real that happens to be whole (an efficiency of 1): the
// exact fraction is tried first, and where the config wants a whole number the move rounds, by
// at least 1 (5 % of 8 rounds back to 8).
Variant make_variant(const VariedConfigs& configs, const SensitiveField& varied, double delta, int sign) {
  const hw::ChipField& field = varied.field;
  const double target = field.value * (1.0 + sign * delta);
  hw::ChipField real = field;
  real.integer = false;
  if (!field.integer) return variant_at(configs, varied, real, hw::held_value(real, target), sign);
  // Written whole: a whole target stays whole (2^37 bytes x 0.95), else the fraction first.
  if (target == std::floor(target)) return variant_at(configs, varied, field, target, sign);
  Variant fraction = variant_at(configs, varied, real, hw::held_value(real, target), sign);
  if (fraction.made()) return fraction;
  // The nearest whole value the config accepts on the move's side: outward from the rounded
  // target, each distance below then above it (a MAC rate must be a multiple of cube_n: 128 at
  // -5 % is 121.6, and 122 and 121 are refused, so 120; at +5 %, 136). At most a doubling or a
  // halving away, and kMaxWholeTries configs read.
  constexpr int kMaxWholeTries = 64;
  const double rounded = hw::held_value(field, target);
  const double lowest = std::max(1.0, field.value / 2), highest = field.value * 2;
  int tries = 0;
  for (double d = 0; tries < kMaxWholeTries && d <= field.value; ++d) {
    const std::vector<double> wholes =
        d == 0 ? std::vector<double>{rounded} : std::vector<double>{rounded - d, rounded + d};
    for (const double whole : wholes) {
      const bool on_side = sign < 0 ? whole < field.value && whole >= lowest : whole > field.value && whole <= highest;
      if (!on_side || tries++ >= kMaxWholeTries) continue;
      Variant counted = variant_at(configs, varied, field, whole, sign);
      if (counted.made()) return counted;
    }
  }
  // Refused everywhere: the refusal of the change asked for says most.
  return fraction;
}

// The elasticity from the sides that exist: central with both, else one-sided against the base.
void estimate(FieldSensitivity& f, double metric_base) {
  const bool low = f.low_value && f.metric_low, high = f.high_value && f.metric_high;
  const double lv = low ? *f.low_value : f.value, hv = high ? *f.high_value : f.value;
  const double lm = low ? *f.metric_low : metric_base, hm = high ? *f.metric_high : metric_base;
  if ((!low && !high) || !(f.value > 0) || hv == lv) {
    f.method = "none";
    return;
  }
  f.method = low && high ? "central" : high ? "forward" : "backward";
  auto slope = [](double m1, double m0, double v1, double v0) {
    const double e = (std::log(m1) - std::log(m0)) / (std::log(v1) - std::log(v0));
    return e == 0 ? 0.0 : e;  // no "-0" in the outputs
  };
  f.elasticity = slope(hm, lm, hv, lv);
  if (low) f.elasticity_down = slope(metric_base, lm, f.value, lv);
  if (high) f.elasticity_up = slope(hm, metric_base, hv, f.value);
  if (low && high) {
    const double a = *f.elasticity_down, b = *f.elasticity_up;
    f.uneven = std::fabs(a - b) > std::max(0.1, 0.5 * std::max(std::fabs(a), std::fabs(b)));
  }
}

// Step 1, the spec: delta a relative step in (0, 0.5], and a serve's contexts its load's; the metric,
// the spec's or the workload's default.
std::string sensitivity_metric(const SensitivitySpec& spec, bool serving) {
  if (!(spec.delta > 0 && spec.delta <= 0.5)) {
    throw hw::InputError("delta", fmt::format("delta: {} is not in (0, 0.5] (a relative step)", spec.delta));
  }
  const std::string metric = !spec.metric.empty() ? spec.metric : serving ? "tpot_p50_ms" : "step_ms";
  if (serving && !spec.contexts.empty()) {
    throw hw::InputError("ctx", "ctx: a serve's load sets the contexts; a context list is a run's points");
  }
  return metric;
}

// The runtime the run names, read whole; none for the chip alone.
std::optional<ChipText> runtime_text(const g5sim::Request& base) {
  if (base.runtime.empty() || base.runtime == "none") return std::nullopt;
  const std::string path = g5sim::runtime_path(base.runtime);
  return ChipText{hw::read_input_file(path), path};
}

// Step 2, the fields x: the spec's (a runtime's named "runtime." + its path), or by default every
// numeric field of the chip but the energy section's prices (they move no time), then every one of
// the runtime's when the run names one.
std::vector<SensitiveField> fields_to_vary(const SensitivitySpec& spec, const VariedConfigs& configs) {
  std::vector<std::string> names = spec.fields;
  if (names.empty()) {
    for (std::string& f : hw::numeric_chip_fields(configs.chip.text, configs.chip.source)) {
      if (f.rfind("energy.", 0) != 0) names.push_back(std::move(f));
    }
    if (configs.runtime) {
      for (const std::string& f : hw::numeric_chip_fields(configs.runtime->text, configs.runtime->source)) {
        names.push_back(std::string(kRuntimePrefix) + f);
      }
    }
  }
  if (names.empty()) {
    throw hw::InputError("fields", fmt::format("{}: the chip has no numeric field", configs.chip.source));
  }
  std::vector<std::string> chip_names, runtime_names;
  for (const std::string& name : names) {
    (name.rfind(kRuntimePrefix, 0) == 0 ? runtime_names : chip_names).push_back(name);
  }
  if (!runtime_names.empty() && !configs.runtime) {
    throw hw::InputError("fields", fmt::format("fields: {} is a runtime's field, but the run names no runtime (give "
                                               "--runtime NAME|PATH, g5sim list shows them)",
                                               runtime_names.front()));
  }
  std::vector<SensitiveField> fields;
  for (hw::ChipField& f : chip_fields_named(configs.chip, chip_names, "fields")) {
    std::string name = f.path;
    fields.push_back({std::move(f), std::move(name), false});
  }
  std::vector<std::string> paths;
  for (const std::string& name : runtime_names) paths.push_back(name.substr(kRuntimePrefix.size()));
  if (!paths.empty()) {
    const std::vector<hw::ChipField> found = chip_fields_named(*configs.runtime, paths, "fields");
    for (std::size_t i = 0; i < found.size(); ++i) fields.push_back({found[i], runtime_names[i], true});
  }
  return fields;
}

// Step 3, the workload's points, each with its own base request: a serve's one, or a run's at each
// context length of the list (its base's alone without one).
std::vector<g5sim::Request> point_requests(const SensitivitySpec& spec, bool serving) {
  std::vector<g5sim::Request> requests;
  if (serving || spec.contexts.empty()) {
    requests.push_back(spec.workload.base);
  } else {
    for (std::uint64_t ctx : spec.contexts) {
      g5sim::Request r = spec.workload.base;
      r.ctx = ctx;
      requests.push_back(r);
    }
  }
  return requests;
}

// The caller's progress, one tick per run finished (runs finish on any thread).
class SensitivityProgress {
 public:
  SensitivityProgress(const std::function<void(std::uint64_t, std::uint64_t)>& progress, std::uint64_t total)
      : progress_(progress), total_(total) {}
  void tick() {
    if (!progress_) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    progress_(++done_, total_);
  }

 private:
  const std::function<void(std::uint64_t, std::uint64_t)>& progress_;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  std::mutex mutex_;
};

// Step 4, the base runs M(x) at each point (in parallel): their errors are the user's (a bad request),
// thrown as they are; a metric that is not above 0 has no logarithm. Each point's request then holds
// the base run's deployment: a variant changes the chip, not the sharding.
std::vector<Measurement> run_base_points(const SensitivitySpec& spec, const WorkloadMeter& meter,
                                         const g5sim::Chip& base_chip, const std::string& metric,
                                         std::vector<g5sim::Request>& requests, SensitivityProgress& progress) {
  const std::size_t points = requests.size();
  std::vector<Measurement> base(points);
  parallel_for(points, spec.jobs, [&](std::size_t p) {
    base[p] = meter.measure(base_chip, requests[p]);
    progress.tick();
  });
  for (std::size_t p = 0; p < points; ++p) {
    if (!(base[p].metrics[0] > 0)) {
      throw hw::InputError("metric", fmt::format("metric: {} is {} in the base run: it has no elasticity", metric,
                                                 number(base[p].metrics[0])));
    }
    requests[p] = with_deployment(requests[p], base[p].deployment);
  }
  return base;
}

// Step 5, the variants x(1 -+ delta): each field down (2f) and up (2f + 1), made once, run at every
// point; a field whose value is not above 0 has none.
std::vector<Variant> make_variants(const VariedConfigs& configs, const std::vector<SensitiveField>& fields,
                                   double delta) {
  std::vector<Variant> variants(2 * fields.size());
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (!(fields[f].field.value > 0)) continue;
    variants[2 * f] = make_variant(configs, fields[f], delta, -1);
    variants[2 * f + 1] = make_variant(configs, fields[f], delta, +1);
  }
  return variants;
}

// A variant's measurement M(x-+) at one point, or why there is none.
struct VariantOutcome {
  double metric = 0;
  std::string note;
  bool ok = false;
};

// Step 6, the variant runs (in parallel): outcome i is variant i / points at point i % points.
std::vector<VariantOutcome> run_variants(const SensitivitySpec& spec, const WorkloadMeter& meter,
                                         const g5sim::Chip& base_chip, const std::string& metric,
                                         const std::vector<Variant>& variants,
                                         const std::vector<g5sim::Request>& requests, SensitivityProgress& progress) {
  const std::size_t points = requests.size();
  std::vector<VariantOutcome> outcomes(variants.size() * points);
  parallel_for(outcomes.size(), spec.jobs, [&](std::size_t i) {
    const Variant& variant = variants[i / points];
    if (variant.made()) {
      try {
        g5sim::Request request = requests[i % points];
        if (variant.runtime) request.runtime = variant.runtime->path();
        outcomes[i].metric = meter.measure(variant.chip ? *variant.chip : base_chip, request).metrics[0];
        outcomes[i].ok = outcomes[i].metric > 0;
        if (!outcomes[i].ok) {
          outcomes[i].note = fmt::format("{} is {} there: no logarithm", metric, number(outcomes[i].metric));
        }
      } catch (const g5sim::ConfigError& e) {
        outcomes[i].note = e.what();
      }
    }
    progress.tick();
  });
  return outcomes;
}

// Step 7, the report's head: the chip, model, metric, delta, deployment and runs, the base runs'
// warnings (each once, in order) and the workload as the first base run describes it.
SensitivityReport sensitivity_report_head(const SensitivitySpec& spec, const WorkloadMeter& meter,
                                          const g5sim::Chip& base_chip, const std::string& metric,
                                          const std::vector<Measurement>& base, std::uint64_t runs) {
  const DesignWorkload& workload = spec.workload;
  SensitivityReport report;
  report.top = spec.top;
  report.chip = base_chip.name();
  report.chip_source = g5sim::source_label(workload.chip.source);
  report.model = workload.model.name();
  report.model_source = g5sim::source_label(workload.model.source());
  if (!workload.base.runtime.empty() && workload.base.runtime != "none") {
    const g5sim::Runtime& rt = g5sim::runtime_named(workload.base.runtime);
    report.runtime = rt.version.empty() ? rt.name : rt.name + " " + rt.version;
    report.runtime_source = g5sim::runtime_path(workload.base.runtime);
  }
  report.metric = metric;
  report.delta = spec.delta;
  report.deployment = base.front().deployment;
  report.runs = runs;
  for (const Measurement& m : base) {
    for (const std::string& w : m.warnings) {
      if (std::find(report.warnings.begin(), report.warnings.end(), w) == report.warnings.end()) {
        report.warnings.push_back(w);
      }
    }
  }
  report.workload = meter.describe(base.front());
  return report;
}

// Step 8a, one field's elasticity at point p: its sides that ran, the notes of those that did not
// (in order: the value, then down, then up), and the estimate from them.
FieldSensitivity field_elasticity_at(const SensitiveField& varied, std::size_t f, std::size_t p, std::size_t points,
                                     const std::vector<Variant>& variants, const std::vector<VariantOutcome>& outcomes,
                                     double metric_base) {
  FieldSensitivity s;
  s.field = varied.name;
  s.value = varied.field.value;
  std::vector<std::string> notes;
  if (!(varied.field.value > 0)) notes.push_back(fmt::format("the value is {}: no relative change", s.value));
  for (int side = 0; side < 2; ++side) {
    const Variant& variant = variants[2 * f + side];
    const VariantOutcome& o = outcomes[(2 * f + side) * points + p];
    if (!variant.note.empty()) notes.push_back(variant.note);
    if (!o.note.empty()) notes.push_back(o.note);
    if (!variant.value || !o.ok) continue;
    (side == 0 ? s.low_value : s.high_value) = variant.value;
    (side == 0 ? s.metric_low : s.metric_high) = o.metric;
  }
  for (const std::string& n : notes) s.note += (s.note.empty() ? "" : "; ") + n;
  estimate(s, metric_base);
  return s;
}

// Step 8b, a point's ranking: largest |elasticity| first, then by field; uneven fields (a cliff
// or a step at the value: their central slope says little of either side) after the even ones,
// ranked apart; fields without one last.
bool ranks_before(const FieldSensitivity& a, const FieldSensitivity& b) {
  if (a.elasticity.has_value() != b.elasticity.has_value()) return a.elasticity.has_value();
  if (a.uneven != b.uneven) return !a.uneven;
  if (a.elasticity && std::fabs(*a.elasticity) != std::fabs(*b.elasticity)) {
    return std::fabs(*a.elasticity) > std::fabs(*b.elasticity);
  }
  return a.field < b.field;
}

}  // namespace

SensitivityReport sensitivity(const SensitivitySpec& spec,
                              const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  return api::public_errors([&] {
    const DesignWorkload& workload = spec.workload;
    const bool serving = workload.serve.has_value();
    const std::string metric = sensitivity_metric(spec, serving);
    const WorkloadMeter meter(workload, {metric}, "metric");
    const ChipText& chip = workload.chip;
    const VariedConfigs configs{chip, runtime_text(workload.base)};
    const std::vector<SensitiveField> fields = fields_to_vary(spec, configs);
    const g5sim::Chip base_chip = g5sim::Chip::from_yaml(chip.text, chip.source);
    std::vector<g5sim::Request> requests = point_requests(spec, serving);

    const std::size_t points = requests.size();
    const std::uint64_t total = points * (1 + 2 * fields.size());
    SensitivityProgress run_progress(progress, total);
    const std::vector<Measurement> base = run_base_points(spec, meter, base_chip, metric, requests, run_progress);
    const std::vector<Variant> variants = make_variants(configs, fields, spec.delta);
    const std::vector<VariantOutcome> outcomes =
        run_variants(spec, meter, base_chip, metric, variants, requests, run_progress);

    // Step 8, each point's elasticities, ranked.
    SensitivityReport report = sensitivity_report_head(spec, meter, base_chip, metric, base, total);
    for (std::size_t p = 0; p < points; ++p) {
      SensitivityPoint point;
      if (!serving) point.ctx = requests[p].ctx;
      point.metric_base = base[p].metrics[0];
      point.bound_by = base[p].bound_by;
      point.bound_share = base[p].bound_share;
      for (std::size_t f = 0; f < fields.size(); ++f) {
        point.fields.push_back(field_elasticity_at(fields[f], f, p, points, variants, outcomes, point.metric_base));
      }
      std::stable_sort(point.fields.begin(), point.fields.end(), ranks_before);
      report.points.push_back(std::move(point));
    }
    return report;
  });
}

void write_sensitivity_table(std::ostream& out, const SensitivityReport& r) {
  const std::size_t top = r.top;
  const g5sim::Deployment& d = r.deployment;
  fmt::print(out,
             "sensitivity of {} to the fields of {}{}, {}, {} (tp {}, ep {}, dp {}): each field x (1 +- {} %), "
             "{} runs\n",
             r.metric, r.chip, r.runtime.empty() ? std::string() : " and of runtime " + r.runtime, r.model, r.workload,
             d.tp, d.ep, d.dp, number(r.delta * 100), r.runs);
  for (const SensitivityPoint& p : r.points) {
    const std::string where = p.ctx ? fmt::format("ctx {}", *p.ctx) : std::string("serve");
    const std::string bound =
        p.bound_by.empty() ? std::string() : fmt::format(", bound by {} ({:.0f} %)", p.bound_by, p.bound_share * 100);
    fmt::print(out, "{}: {} {:.6g}{}\n", where, r.metric, p.metric_base, bound);
    std::size_t width = 42;
    for (const FieldSensitivity& f : p.fields) width = std::max(width, f.field.size());
    fmt::print(out, "  {:>4}  {:<{}} {:>14} {:>11}  {}\n", "rank", "field", width, "value", "elasticity",
               fmt::format("{} at -/+", r.metric));
    std::size_t shown = 0, small = 0, none = 0, uneven_shown = 0;
    bool uneven_head = false;
    for (const FieldSensitivity& f : p.fields) {
      if (!f.elasticity) {
        ++none;
        continue;
      }
      if (f.uneven && !uneven_head) {
        uneven_head = true;
        fmt::print(out, "  uneven: the slopes below and above the value differ (a step or a cliff), ranked apart\n");
      }
      if ((f.uneven ? uneven_shown : shown - uneven_shown) >= top) {
        ++small;
        continue;
      }
      ++shown;
      uneven_shown += f.uneven ? 1 : 0;
      const std::string sides = fmt::format("{} / {}", f.metric_low ? fmt::format("{:.6g}", *f.metric_low) : "-",
                                            f.metric_high ? fmt::format("{:.6g}", *f.metric_high) : "-");
      const std::string remark = f.uneven
                                     ? fmt::format(" ({:.3f} down, {:.3f} up)", *f.elasticity_down, *f.elasticity_up)
                                 : f.method != "central" ? fmt::format(" ({})", f.method)
                                                         : std::string();
      fmt::print(out, "  {:>4}  {:<{}} {:>14} {:>11.4f}  {}{}\n", shown, f.field, width, value_text(f.value),
                 *f.elasticity, sides, remark);
    }
    if (small > 0) fmt::print(out, "  ... {} more fields (--top N lists more)\n", small);
    if (none > 0) {
      std::string list;
      for (const FieldSensitivity& f : p.fields) {
        if (!f.elasticity) list += (list.empty() ? "" : ", ") + f.field;
      }
      fmt::print(out, "  no elasticity ({}; the JSON and CSV notes say why): {}\n", none, list);
    }
  }
}

void write_sensitivity_csv(std::ostream& out, const SensitivityReport& r) {
  out << csv_header(report_named(design_reports(), "sensitivity_points")) << '\n';
  for (const SensitivityPoint& p : r.points) {
    std::size_t rank = 0;
    for (const FieldSensitivity& f : p.fields) {
      out << (p.ctx ? std::to_string(*p.ctx) : std::string()) << ',' << csv_cell(f.field) << ',' << number(f.value)
          << ',' << number(f.low_value) << ',' << number(f.high_value) << ',' << r.metric << ','
          << number(p.metric_base) << ',' << number(f.metric_low) << ',' << number(f.metric_high) << ','
          << number(f.elasticity) << ',' << number(f.elasticity_down) << ',' << number(f.elasticity_up) << ','
          << (f.uneven ? "true" : "false") << ',' << f.method << ',' << (f.elasticity ? std::to_string(++rank) : "")
          << ',' << csv_cell(p.bound_by) << ',' << csv_cell(f.note) << '\n';
    }
  }
}

void write_sensitivity_json(std::ostream& out, const SensitivityReport& r) {
  using api::json_string;
  write_design_json_head(out, kSensitivitySchemaVersion, "sensitivity", r.chip, r.chip_source, r.model, r.model_source,
                         r.workload, r.deployment);
  fmt::print(out, "  \"runtime\": {},\n  \"runtime_source\": {},\n",
             r.runtime.empty() ? "null" : json_string(r.runtime),
             r.runtime_source.empty() ? "null" : json_string(r.runtime_source));
  fmt::print(out, "  \"metric\": {},\n  \"delta\": {},\n  \"runs\": {},\n", json_string(r.metric), number(r.delta),
             r.runs);
  out << "  \"warnings\": [";
  for (std::size_t i = 0; i < r.warnings.size(); ++i) out << (i ? ", " : "") << json_string(r.warnings[i]);
  out << "],\n  \"points\": [";
  for (std::size_t p = 0; p < r.points.size(); ++p) {
    const SensitivityPoint& pt = r.points[p];
    fmt::print(out, "{}\n    {{\"ctx\": {}, \"metric_base\": {}, \"bound_by\": {}, \"bound_share\": {}, \"fields\": [",
               p ? "," : "", pt.ctx ? std::to_string(*pt.ctx) : "null", number(pt.metric_base),
               pt.bound_by.empty() ? "null" : json_string(pt.bound_by), number(pt.bound_share));
    for (std::size_t i = 0; i < pt.fields.size(); ++i) {
      const FieldSensitivity& f = pt.fields[i];
      fmt::print(
          out,
          "{}\n      {{\"field\": {}, \"value\": {}, \"low_value\": {}, \"high_value\": {}, \"metric_low\": {}, "
          "\"metric_high\": {}, \"elasticity\": {}, \"elasticity_down\": {}, \"elasticity_up\": {}, \"uneven\": {}, "
          "\"method\": {}, \"note\": {}}}",
          i ? "," : "", json_string(f.field), number(f.value), json_or_null(f.low_value), json_or_null(f.high_value),
          json_or_null(f.metric_low), json_or_null(f.metric_high), json_or_null(f.elasticity),
          json_or_null(f.elasticity_down), json_or_null(f.elasticity_up), f.uneven ? "true" : "false",
          json_string(f.method), f.note.empty() ? "null" : json_string(f.note));
    }
    out << "\n    ]}";
  }
  out << "\n  ]\n}\n";
}

SensitivitySpec sensitivity_spec_of(ChipText chip, Model model, Request base, const KnobItems& items) {
  return api::public_errors([&] {
    SensitivitySpec spec;
    spec.workload.chip = std::move(chip);
    spec.workload.model = std::move(model);
    spec.workload.base = std::move(base);
    DesignSettings design;
    ServeSettings slo;
    explore::take_design_items(items, kSensitivityKnob, kSensitivityKnob, "sensitivity", design, slo);
    DesignWorkload& w = spec.workload;
    w.slo_ttft_ms = slo.optional_decimal("slo_ttft_ms");
    w.slo_tpot_ms = slo.optional_decimal("slo_tpot_ms");
    if (design.given("serve")) {
      if (design.given("ctx")) throw hw::InputError("ctx", "with a serve the load sets the contexts (its input_len)");
      w.serve_items = design.text("serve");
      w.serve = serve_settings_of(w.serve_items);
    } else if (w.slo_ttft_ms || w.slo_tpot_ms) {
      throw hw::InputError(w.slo_ttft_ms ? "slo_ttft_ms" : "slo_tpot_ms", "an SLO is a serve's (give a serve)");
    }
    w.role = design.text("role");
    if (design.given("ctx")) spec.contexts = explore::parse_context_list(design.text("ctx"));
    for (std::size_t start = 0; !design.text("fields").empty() && start <= design.text("fields").size();) {
      const std::string& fields = design.text("fields");
      const std::size_t comma = std::min(fields.find(',', start), fields.size());
      spec.fields.push_back(fields.substr(start, comma - start));
      start = comma + 1;
    }
    spec.metric = design.text("metric");
    spec.delta = design.decimal("delta_pct") / 100.0;
    spec.top = design.count("top");
    spec.jobs = static_cast<unsigned>(design.optional_count("jobs").value_or(api::default_jobs()));
    return spec;
  });
}

}  // namespace g5sim
