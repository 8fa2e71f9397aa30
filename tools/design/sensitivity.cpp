#include "tools/design/sensitivity.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <set>

#include "api/json_text.hpp"
#include "g5sim/run_options.hpp"
#include "hw/config_error.hpp"
#include "hw/input_file.hpp"
#include "tools/csv_cell.hpp"
#include "tools/parallel_for.hpp"
#include "tools/validation/chip_fields.hpp"

namespace tools {
namespace {

std::string number(double v) { return fmt::format("{}", v); }
std::string number(const std::optional<double>& v) { return v ? number(*v) : std::string(); }
std::string json_number(const std::optional<double>& v) { return v ? number(*v) : std::string("null"); }

// A field's value for the table: whole numbers in full (2097152, not 2.09715e+06).
std::string readable(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:.6g}", v);
}

bool is_member(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

std::string joined(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& s : list) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// One variant of the chip: a field at another value, or the config's refusal of it.
struct Variant {
  std::optional<double> value;  ///< as the config holds it; none when there is no such side
  std::optional<g5sim::Chip> chip;
  std::string note;
};

// The field at `value`: its chip, or the config's refusal (the variant's note).
Variant variant_at(const ChipText& chip, const validation::ChipField& field, double value, int sign) {
  Variant v;
  if (!(value > 0)) {
    v.note = fmt::format("{} {} would be {}: no logarithm", field.path, sign < 0 ? "-" : "+",
                         validation::format_field_value(field, value));
    return v;
  }
  try {
    v.chip = g5sim::Chip::from_yaml(validation::with_field_values(chip.text, {field}, {value}), chip.source);
    v.value = value;
  } catch (const g5sim::ConfigError& e) {
    v.note = fmt::format("{} = {}: {}", field.path, validation::format_field_value(field, value), e.what());
  }
  return v;
}

// The field moved by `sign` x delta, as the config will hold it. A value written as a whole
// number may be a count (cores) or a real that happens to be whole (an efficiency of 1): the
// exact fraction is tried first, and where the config wants a whole number the move rounds, by
// at least 1 (5 % of 8 rounds back to 8).
Variant make_variant(const ChipText& chip, const validation::ChipField& field, double delta, int sign) {
  const double target = field.value * (1.0 + sign * delta);
  validation::ChipField real = field;
  real.integer = false;
  if (!field.integer) return variant_at(chip, real, std::stod(validation::format_field_value(real, target)), sign);
  // Written whole: a whole target stays whole (2^37 bytes x 0.95), else the fraction first.
  if (target == std::floor(target)) return variant_at(chip, field, target, sign);
  Variant fraction = variant_at(chip, real, std::stod(validation::format_field_value(real, target)), sign);
  if (fraction.chip) return fraction;
  double whole = std::stod(validation::format_field_value(field, target));
  if (whole == field.value) whole = field.value + sign;
  Variant counted = variant_at(chip, field, whole, sign);
  // Refused either way: the refusal of the change asked for says most.
  return counted.chip ? counted : fraction;
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

}  // namespace

ChipText chip_text_of(const std::string& name_or_path) {
  ChipText chip;
  chip.source = g5sim::chip_path(name_or_path);
  try {
    chip.text = hw::read_input_file(chip.source, hw::kMaxConfigFileBytes);
  } catch (const hw::ConfigError& e) {
    throw g5sim::ConfigError(e.what(), chip.source, "", 0, 0);
  }
  return chip;
}

const std::vector<std::string>& run_metrics() {
  static const std::vector<std::string> names = {"step_ms", "tokens_per_s_per_chip"};
  return names;
}

const std::vector<std::string>& serve_metrics() {
  static const std::vector<std::string> names = {"ttft_p50_ms",
                                                 "ttft_p99_ms",
                                                 "tpot_p50_ms",
                                                 "tpot_p99_ms",
                                                 "itl_p99_ms",
                                                 "e2e_p50_s",
                                                 "output_tokens_per_s_per_chip",
                                                 "goodput_requests_per_s"};
  return names;
}

double run_metric(const std::string& metric, const g5sim::Result& r) {
  if (metric == "step_ms") return static_cast<double>(r.total_ps) / 1e9;
  if (metric == "tokens_per_s_per_chip") return r.tokens_per_s_per_chip;
  throw hw::InputError("metric", fmt::format("metric: {} is not a run's (a run's: {})", metric, joined(run_metrics())));
}

double serve_metric(const std::string& metric, const ServeReport& report) {
  const ServeSummary& s = report.summary;
  if (metric == "ttft_p50_ms") return s.ttft_ms.p50;
  if (metric == "ttft_p99_ms") return s.ttft_ms.p99;
  if (metric == "tpot_p50_ms") return s.tpot_ms.p50;
  if (metric == "tpot_p99_ms") return s.tpot_ms.p99;
  if (metric == "itl_p99_ms") return s.itl_ms.p99;
  if (metric == "e2e_p50_s") return s.e2e_s.p50;
  if (metric == "output_tokens_per_s_per_chip") return s.output_tokens_per_s_per_chip;
  if (metric == "goodput_requests_per_s") return s.goodput_requests_per_s;
  throw hw::InputError("metric",
                       fmt::format("metric: {} is not a serve's (a serve's: {})", metric, joined(serve_metrics())));
}

SensitivityReport sensitivity(const SensitivitySpec& spec,
                              const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  namespace v = validation;
  if (!(spec.delta > 0 && spec.delta <= 0.5)) {
    throw hw::InputError("delta", fmt::format("delta: {} is not in (0, 0.5] (a relative step)", spec.delta));
  }
  const bool serving = spec.serve.has_value();
  const std::string metric = !spec.metric.empty() ? spec.metric : serving ? "tpot_p50_ms" : "step_ms";
  if (!is_member(serving ? serve_metrics() : run_metrics(), metric)) {
    const bool other = is_member(serving ? run_metrics() : serve_metrics(), metric);
    throw hw::InputError(
        "metric", fmt::format("metric: {} {} (metrics of a {}: {})", metric,
                              other ? (serving ? "is a run's, not a serve's" : "is a serve's: give a serve workload")
                                    : "is not a metric",
                              serving ? "serve" : "run", joined(serving ? serve_metrics() : run_metrics())));
  }
  if (metric == "goodput_requests_per_s" && !spec.slo_ttft_ms && !spec.slo_tpot_ms) {
    throw hw::InputError("metric", "metric: goodput_requests_per_s needs an SLO (slo_ttft_ms, slo_tpot_ms)");
  }
  if (serving) {
    // A serve's engine makes its steps' sequences: the run's shape is not its own.
    const g5sim::Request defaults;
    for (const g5sim::RunOption& o : g5sim::run_options()) {
      if ((o.takes & g5sim::kServe) == 0 && (o.takes & g5sim::kRun) != 0 &&
          g5sim::get_option(spec.base, o) != g5sim::get_option(defaults, o)) {
        throw hw::InputError(o.name, fmt::format("{}: with a serve workload the load makes the steps' sequences "
                                                 "(the serve's lengths are its input_len and output_len)",
                                                 o.name));
      }
    }
  }
  if (serving && !spec.contexts.empty()) {
    throw hw::InputError("ctx", "ctx: a serve's load sets the contexts; a context list is a run's points");
  }
  const std::vector<std::string> names =
      spec.fields.empty() ? v::numeric_chip_fields(spec.chip.text, spec.chip.source) : spec.fields;
  if (names.empty()) throw hw::InputError("fields", fmt::format("{}: the chip has no numeric field", spec.chip.source));
  std::vector<v::ChipField> fields;
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (!seen.insert(name).second) throw hw::InputError("fields", fmt::format("fields: {} is given twice", name));
    fields.push_back(v::find_chip_field(spec.chip.text, spec.chip.source, name));
  }
  const g5sim::Chip base_chip = g5sim::Chip::from_yaml(spec.chip.text, spec.chip.source);

  // The workload's points, each with its own base request.
  std::vector<g5sim::Request> requests;
  if (serving || spec.contexts.empty()) {
    requests.push_back(spec.base);
  } else {
    for (std::uint64_t ctx : spec.contexts) {
      g5sim::Request r = spec.base;
      r.ctx = ctx;
      requests.push_back(r);
    }
  }
  ServeSettings settings;
  std::vector<ServeRequest> load;
  ServeOptions serve_options;
  if (serving) {
    settings = serve_settings_of(*spec.serve);
    load = requests_of(settings.load);
    serve_options = settings.resolved();
    serve_options.limits.jobs = 1;  // the variants are the parallelism
    serve_options.slo_ttft_ms = spec.slo_ttft_ms;
    serve_options.slo_tpot_ms = spec.slo_tpot_ms;
  }

  const std::size_t points = requests.size();
  const std::uint64_t total = points * (1 + 2 * fields.size());
  std::uint64_t done = 0;
  std::mutex progress_mutex;
  auto tick = [&] {
    if (!progress) return;
    const std::lock_guard<std::mutex> lock(progress_mutex);
    progress(++done, total);
  };
  // One simulation of `chip` at point p: the metric, and the base's limiting resource.
  struct Outcome {
    double metric = 0;
    std::string bound_by, note;
    double bound_share = 0;
    g5sim::Deployment deployment;
    std::vector<std::string> warnings;
    bool ok = false;
  };
  auto measure = [&](const g5sim::Chip& chip, const g5sim::Request& request) {
    Outcome o;
    if (serving) {
      const ServeReport report = serve(chip, spec.model, request, load, serve_options);
      o.metric = serve_metric(metric, report);
      o.deployment = report.memory.deployment;
    } else {
      const g5sim::Result result = g5sim::simulate(chip, spec.model, request);
      o.metric = run_metric(metric, result);
      o.bound_by = result.bound_by;
      o.bound_share = result.bound_share;
      o.deployment = g5sim::Deployment{result.tp, result.ep, result.dp, result.batch, result.automatic_sharding};
      o.warnings = result.warnings;
    }
    o.ok = true;
    return o;
  };

  // The base runs: their errors are the user's (a bad request), thrown as they are.
  std::vector<Outcome> base(points);
  parallel_for(points, spec.jobs, [&](std::size_t p) {
    base[p] = measure(base_chip, requests[p]);
    tick();
  });
  for (std::size_t p = 0; p < points; ++p) {
    if (!(base[p].metric > 0)) {
      throw hw::InputError("metric", fmt::format("metric: {} is {} in the base run: it has no elasticity", metric,
                                                 number(base[p].metric)));
    }
    // The deployment held: a variant changes the chip, not the sharding.
    requests[p].tp = base[p].deployment.tp;
    requests[p].ep = base[p].deployment.ep;
    requests[p].dp = base[p].deployment.dp;
  }

  // Variants: each field down and up (made once, run at every point).
  std::vector<Variant> variants(2 * fields.size());
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (!(fields[f].value > 0)) continue;
    variants[2 * f] = make_variant(spec.chip, fields[f], spec.delta, -1);
    variants[2 * f + 1] = make_variant(spec.chip, fields[f], spec.delta, +1);
  }
  std::vector<Outcome> outcomes(variants.size() * points);
  parallel_for(outcomes.size(), spec.jobs, [&](std::size_t i) {
    const Variant& variant = variants[i / points];
    if (variant.chip) {
      try {
        outcomes[i] = measure(*variant.chip, requests[i % points]);
        if (!(outcomes[i].metric > 0)) {
          outcomes[i].ok = false;
          outcomes[i].note = fmt::format("{} is {} there: no logarithm", metric, number(outcomes[i].metric));
        }
      } catch (const g5sim::ConfigError& e) {
        outcomes[i].note = e.what();
      }
    }
    tick();
  });

  SensitivityReport report;
  report.chip = base_chip.name();
  report.chip_source = spec.chip.source;
  report.model = spec.model.name();
  report.model_source = spec.model.source();
  report.metric = metric;
  report.delta = spec.delta;
  report.deployment = base.front().deployment;
  report.runs = total;
  for (std::size_t p = 0; p < points; ++p) {
    for (const std::string& w : base[p].warnings) {
      if (!is_member(report.warnings, w)) report.warnings.push_back(w);
    }
  }
  if (serving) {
    report.workload = "serve " + *spec.serve;
  } else {
    const g5sim::Request& r = spec.base;
    report.workload = !r.mix.empty()    ? "mix " + r.mix
                      : !r.seqs.empty() ? "seqs " + r.seqs
                                        : fmt::format("{}, batch {}", r.phase, base.front().deployment.batch);
  }
  for (std::size_t p = 0; p < points; ++p) {
    SensitivityPoint point;
    if (!serving) point.ctx = requests[p].ctx;
    point.metric_base = base[p].metric;
    point.bound_by = base[p].bound_by;
    point.bound_share = base[p].bound_share;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      FieldSensitivity s;
      s.field = fields[f].path;
      s.value = fields[f].value;
      std::vector<std::string> notes;
      if (!(fields[f].value > 0)) notes.push_back(fmt::format("the value is {}: no relative change", s.value));
      for (int side = 0; side < 2; ++side) {
        const Variant& variant = variants[2 * f + side];
        const Outcome& o = outcomes[(2 * f + side) * points + p];
        if (!variant.note.empty()) notes.push_back(variant.note);
        if (!o.note.empty()) notes.push_back(o.note);
        if (!variant.value || !o.ok) continue;
        (side == 0 ? s.low_value : s.high_value) = variant.value;
        (side == 0 ? s.metric_low : s.metric_high) = o.metric;
      }
      for (const std::string& n : notes) s.note += (s.note.empty() ? "" : "; ") + n;
      estimate(s, point.metric_base);
      point.fields.push_back(std::move(s));
    }
    std::stable_sort(point.fields.begin(), point.fields.end(),
                     [](const FieldSensitivity& a, const FieldSensitivity& b) {
                       if (a.elasticity.has_value() != b.elasticity.has_value()) return a.elasticity.has_value();
                       if (a.elasticity && std::fabs(*a.elasticity) != std::fabs(*b.elasticity)) {
                         return std::fabs(*a.elasticity) > std::fabs(*b.elasticity);
                       }
                       return a.field < b.field;
                     });
    report.points.push_back(std::move(point));
  }
  return report;
}

ServeSettings serve_settings_of(const std::string& items) {
  ServeSettings settings;
  std::set<std::string> given;
  std::size_t start = 0;
  while (start < items.size()) {
    const std::size_t end = std::min(items.find(' ', start), items.size());
    const std::string item = items.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw hw::InputError("serve",
                           fmt::format("serve: '{}' is not key=value (keys: {})", item, joined(serve_keywords())));
    }
    const std::string key = item.substr(0, eq);
    if (!given.insert(key).second) throw hw::InputError("serve", fmt::format("serve: {} is given twice", key));
    set_serve_keyword(settings, key, item.substr(eq + 1));
  }
  if (given.empty()) throw hw::InputError("serve", "serve: no key=value items (a load: rate=R or concurrency=N, ...)");
  return settings;
}

void write_sensitivity_table(std::ostream& out, const SensitivityReport& r, std::size_t top) {
  const g5sim::Deployment& d = r.deployment;
  fmt::print(out,
             "sensitivity of {} to the fields of {}, {}, {} (tp {}, ep {}, dp {}): each field x (1 +- {} %), "
             "{} runs\n",
             r.metric, r.chip, r.model, r.workload, d.tp, d.ep, d.dp, number(r.delta * 100), r.runs);
  for (const SensitivityPoint& p : r.points) {
    const std::string where = p.ctx ? fmt::format("ctx {}", *p.ctx) : std::string("serve");
    const std::string bound =
        p.bound_by.empty() ? std::string() : fmt::format(", bound by {} ({:.0f} %)", p.bound_by, p.bound_share * 100);
    fmt::print(out, "{}: {} {:.6g}{}\n", where, r.metric, p.metric_base, bound);
    fmt::print(out, "  {:>4}  {:<42} {:>14} {:>11}  {}\n", "rank", "field", "value", "elasticity",
               fmt::format("{} at -/+", r.metric));
    std::size_t shown = 0, small = 0, none = 0;
    for (const FieldSensitivity& f : p.fields) {
      if (!f.elasticity) {
        ++none;
        continue;
      }
      if (shown >= top) {
        ++small;
        continue;
      }
      ++shown;
      const std::string sides = fmt::format("{} / {}", f.metric_low ? fmt::format("{:.6g}", *f.metric_low) : "-",
                                            f.metric_high ? fmt::format("{:.6g}", *f.metric_high) : "-");
      const std::string remark =
          f.uneven ? fmt::format(" (uneven: {:.3f} down, {:.3f} up)", *f.elasticity_down, *f.elasticity_up)
          : f.method != "central" ? fmt::format(" ({})", f.method)
                                  : std::string();
      fmt::print(out, "  {:>4}  {:<42} {:>14} {:>11.4f}  {}{}\n", shown, f.field, readable(f.value), *f.elasticity,
                 sides, remark);
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
  out << "ctx,field,value,low_value,high_value,metric,metric_base,metric_low,metric_high,elasticity,elasticity_down,"
         "elasticity_up,uneven,method,rank,bound_by,note\n";
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
  const g5sim::Deployment& d = r.deployment;
  fmt::print(out, "{{\n  \"schema_version\": {},\n  \"kind\": \"sensitivity\",\n", kSensitivitySchemaVersion);
  fmt::print(out, "  \"chip\": {},\n  \"chip_source\": {},\n  \"model\": {},\n  \"model_source\": {},\n",
             json_string(r.chip), json_string(r.chip_source), json_string(r.model), json_string(r.model_source));
  fmt::print(out, "  \"workload\": {},\n  \"deployment\": {{\"tp\": {}, \"ep\": {}, \"dp\": {}, \"chips\": {}}},\n",
             json_string(r.workload), d.tp, d.ep, d.dp, d.chips());
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
          i ? "," : "", json_string(f.field), number(f.value), json_number(f.low_value), json_number(f.high_value),
          json_number(f.metric_low), json_number(f.metric_high), json_number(f.elasticity),
          json_number(f.elasticity_down), json_number(f.elasticity_up), f.uneven ? "true" : "false",
          json_string(f.method), f.note.empty() ? "null" : json_string(f.note));
    }
    out << "\n    ]}";
  }
  out << "\n  ]\n}\n";
}

}  // namespace tools
