#include "explore/design_workload.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "api/json_text.hpp"
#include "api/public_errors.hpp"
#include "g5sim/run_options.hpp"
#include "hw/config_error.hpp"
#include "hw/input_file.hpp"

namespace explore {

using g5sim::ServeSummary;
namespace {

bool is_member(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

std::string joined(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& s : list) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The given knobs of a serve as KEY=VALUE items, in table order.
std::string given_items(const g5sim::ServeSettings& s) {
  std::string out;
  for (const g5sim::Knob& k : s.table()) {
    if (s.given(k.name)) out += (out.empty() ? "" : " ") + k.name + "=" + s.text_of(k.name);
  }
  return out;
}

double run_metric(const std::string& metric, const g5sim::Result& r) {
  // The step as its software runs it (the chip's time plus the runtime's; the chip's alone without one).
  if (metric == "step_ms") return static_cast<double>(r.step_ps) / 1e9;
  return r.tokens_per_s_per_chip;  // tokens_per_s_per_chip: the names are checked when made
}

double serve_metric(const std::string& metric, const ServeSummary& s) {
  if (metric == "ttft_p50_ms") return s.ttft_ms.p50;
  if (metric == "ttft_p99_ms") return s.ttft_ms.p99;
  if (metric == "tpot_p50_ms") return s.tpot_ms.p50;
  if (metric == "tpot_p99_ms") return s.tpot_ms.p99;
  if (metric == "itl_p99_ms") return s.itl_ms.p99;
  if (metric == "e2e_p50_s") return s.e2e_s.p50;
  if (metric == "output_tokens_per_s_per_chip") return s.output_tokens_per_s_per_chip;
  return s.goodput_requests_per_s;  // goodput_requests_per_s
}

}  // namespace

std::vector<hw::ChipField> chip_fields_named(const ChipText& chip, const std::vector<std::string>& names,
                                             const std::string& what) {
  std::vector<hw::ChipField> fields;
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (!seen.insert(name).second) throw hw::InputError(what, fmt::format("{}: {} is given twice", what, name));
    fields.push_back(hw::find_chip_field(chip.text, chip.source, name));
  }
  return fields;
}

g5sim::Chip chip_with(const ChipText& chip, const std::vector<hw::ChipField>& fields,
                      const std::vector<double>& values) {
  // The variant's errors name the config as outputs do (shipped:NAME, a relative path).
  return g5sim::Chip::from_yaml(hw::with_field_values(chip.text, fields, values), g5sim::source_label(chip.source));
}

void take_design_items(const g5sim::KnobItems& items, unsigned use, unsigned named_use, const std::string& command,
                       g5sim::DesignSettings& design, g5sim::ServeSettings& serve) {
  for (const auto& [key, value] : items) {
    const g5sim::Knob* own = design.find(key);
    const g5sim::Knob* served = serve.find(key);
    if (own && own->takes_in(use)) {
      design.set_text(key, value);
    } else if (served && served->takes_in(use)) {
      serve.set_text(key, value);
    } else {
      std::vector<std::string> names;
      for (const g5sim::Knob* k : g5sim::knobs_taking(named_use)) names.push_back(k->name);
      throw hw::InputError(key, fmt::format("not a {} keyword (keywords: {})", command, fmt::join(names, ", ")));
    }
  }
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

WorkloadMeter::WorkloadMeter(const DesignWorkload& workload, std::vector<std::string> metrics, const std::string& what)
    : workload_(workload), metrics_(std::move(metrics)), serving_(workload.serve.has_value()) {
  const std::vector<std::string>& mine = serving_ ? serve_metrics() : run_metrics();
  const std::vector<std::string>& other = serving_ ? run_metrics() : serve_metrics();
  for (const std::string& metric : metrics_) {
    if (is_member(mine, metric)) continue;
    throw hw::InputError(what, fmt::format("{}: {} {} (metrics of a {}: {})", what, metric,
                                           is_member(other, metric) ? (serving_ ? "is a run's, not a serve's"
                                                                                : "is a serve's: give a serve workload")
                                                                    : "is not a metric",
                                           serving_ ? "serve" : "run", joined(mine)));
  }
  if (is_member(metrics_, "goodput_requests_per_s") && !workload.slo_ttft_ms && !workload.slo_tpot_ms) {
    throw hw::InputError(what, fmt::format("{}: goodput_requests_per_s needs an SLO (slo_ttft_ms, slo_tpot_ms)", what));
  }
  if (!serving_ && workload.role != "both") {
    throw hw::InputError("role", fmt::format("--role {} varies one role's chip of a disaggregated serve: give "
                                             "--serve 'disagg=P:D ...'",
                                             workload.role));
  }
  if (!serving_) return;
  // A serve's engine makes its steps' sequences: the run's shape is not its own.
  const g5sim::Request defaults;
  for (const g5sim::RunOption& o : g5sim::run_options()) {
    if ((o.takes & g5sim::kServe) == 0 && (o.takes & g5sim::kRun) != 0 &&
        g5sim::get_option(workload.base, o) != g5sim::get_option(defaults, o)) {
      throw hw::InputError(o.name, fmt::format("{}: with a serve workload the load makes the steps' sequences "
                                               "(the serve's lengths are its input_len and output_len)",
                                               o.name));
    }
  }
  serve_settings_ = *workload.serve;
  if (workload.role != "both") {
    if (serve_settings_->text("disagg") == "none") {
      throw hw::InputError("role",
                           fmt::format("--role {} varies one role's chip: the serve needs disagg=P:D", workload.role));
    }
    const char* held_knob = workload.role == "decode" ? "prefill_chip" : "decode_chip";
    if (serve_settings_->text(held_knob).empty()) {
      held_ = g5sim::Chip::from_yaml(workload.chip.text, g5sim::source_label(workload.chip.source));
    }
  }
  load_ = g5sim::requests_of(*serve_settings_);
  serve_settings_->set("jobs", std::uint64_t{1});  // the measurements are the parallelism
  if (workload.slo_ttft_ms) serve_settings_->set("slo_ttft_ms", *workload.slo_ttft_ms);
  if (workload.slo_tpot_ms) serve_settings_->set("slo_tpot_ms", *workload.slo_tpot_ms);
}

Measurement WorkloadMeter::measure(const g5sim::Chip& chip, const g5sim::Request& request) const {
  Measurement m;
  if (serving_) {
    // One role's chip varied: the other's held (RoleChips take the place of the role knobs).
    // The sharding held (the base run's) is the varied role's; the other role's is its own chip's
    // (held as its chip is), unless the workload gave one for every instance.
    g5sim::RoleChips roles;
    g5sim::Request step = request;
    if (workload_.role != "both" && request.tp && !workload_.base.tp && !workload_.base.ep && !workload_.base.dp) {
      const g5sim::Deployment held{*request.tp, request.ep.value_or(1), request.dp.value_or(1), 1, false};
      (workload_.role == "decode" ? roles.decode_sharding : roles.prefill_sharding) = held;
      step.tp.reset(), step.ep.reset(), step.dp.reset();
    }
    if (workload_.role == "decode") roles.decode = chip, roles.prefill = held_;
    if (workload_.role == "prefill") roles.prefill = chip, roles.decode = held_;
    g5sim::ServeControls controls;
    controls.shared_steps = shared_steps_;
    const g5sim::ServeReport report =
        g5sim::serve(chip, workload_.model, step, load_, *serve_settings_, controls, roles);
    for (const std::string& metric : metrics_) m.metrics.push_back(serve_metric(metric, report.summary));
    // The varied chip's deployment: a role's own when one role's chip is varied.
    m.deployment = report.memory.deployment;
    if (workload_.role == "decode" && report.roles) m.deployment = report.roles->decode.memory.deployment;
  } else {
    const g5sim::Result result = g5sim::simulate(chip, workload_.model, request);
    for (const std::string& metric : metrics_) m.metrics.push_back(run_metric(metric, result));
    m.bound_by = result.bound_by;
    m.bound_share = result.bound_share;
    m.deployment = g5sim::Deployment{result.tp, result.ep, result.dp, result.batch, result.automatic_sharding};
    m.warnings = result.warnings;
  }
  return m;
}

std::string WorkloadMeter::describe(const Measurement& base) const {
  if (serving_) {
    return "serve " + (workload_.serve_items.empty() ? given_items(*workload_.serve) : workload_.serve_items) +
           (workload_.role == "both" ? "" : ", the " + workload_.role + " chip varied");
  }
  const g5sim::Request& r = workload_.base;
  return !r.mix.empty()    ? "mix " + r.mix
         : !r.seqs.empty() ? "seqs " + r.seqs
                           : fmt::format("{}, batch {}", r.phase, base.deployment.batch);
}

std::string number_text(double value) { return fmt::format("{}", value); }

std::string value_text(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return fmt::format("{}", static_cast<long long>(value));
  }
  return fmt::format("{:.6g}", value);
}

void write_design_json_head(std::ostream& out, int schema_version, const std::string& kind, const std::string& chip,
                            const std::string& chip_source, const std::string& model, const std::string& model_source,
                            const std::string& workload, const g5sim::Deployment& d) {
  using api::json_string;
  fmt::print(out, "{{\n  \"schema_version\": {},\n  \"kind\": {},\n", schema_version, json_string(kind));
  fmt::print(out, "  \"chip\": {},\n  \"chip_source\": {},\n  \"model\": {},\n  \"model_source\": {},\n",
             json_string(chip), json_string(chip_source), json_string(model), json_string(model_source));
  fmt::print(out, "  \"workload\": {},\n  \"deployment\": {{\"tp\": {}, \"ep\": {}, \"dp\": {}, \"chips\": {}}},\n",
             json_string(workload), d.tp, d.ep, d.dp, d.chips());
}

g5sim::Request with_deployment(g5sim::Request request, const g5sim::Deployment& deployment) {
  request.tp = deployment.tp;
  request.ep = deployment.ep;
  request.dp = deployment.dp;
  return request;
}

}  // namespace explore

namespace g5sim {

ChipText chip_text_of(const std::string& name_or_path) {
  ChipText chip;
  chip.source = chip_path(name_or_path);
  try {
    chip.text = hw::read_input_file(chip.source, hw::kMaxConfigFileBytes);
  } catch (const hw::ConfigError& e) {
    throw ConfigError(e.what(), chip.source, "", 0, 0);
  }
  return chip;
}

ServeSettings serve_settings_of(const std::string& items) {
  return api::public_errors([&] {
    ServeSettings settings;
    std::set<std::string> given;
    std::vector<std::string> keys;
    for (const Knob& k : settings.table()) {
      if (k.takes_in(kServeItem)) keys.push_back(k.name);
    }
    std::size_t start = 0;
    while (start < items.size()) {
      const std::size_t end = std::min(items.find(' ', start), items.size());
      const std::string item = items.substr(start, end - start);
      start = end + 1;
      if (item.empty()) continue;
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw hw::InputError("serve",
                             fmt::format("serve: '{}' is not key=value (keys: {})", item, explore::joined(keys)));
      }
      const std::string key = item.substr(0, eq);
      if (!given.insert(key).second) throw hw::InputError("serve", fmt::format("serve: {} is given twice", key));
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        throw hw::InputError(key, fmt::format("not a serve keyword (keywords: {})", explore::joined(keys)));
      }
      settings.set_text(key, item.substr(eq + 1));
    }
    if (given.empty()) {
      throw hw::InputError("serve", "serve: no key=value items (a load: rate=R or concurrency=N, ...)");
    }
    return settings;
  });
}

}  // namespace g5sim
