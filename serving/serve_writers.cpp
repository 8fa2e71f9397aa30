// The serve's outputs (g5sim/serve.hpp): the per-request CSV, the summary JSON and table, the
// Perfetto trace. The engine's knobs are echoed from the knob table (g5sim/knobs.hpp): the JSON's
// "engine" object by each row's place, the table's "engine" line by its rows so marked.

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "api/csv_cell.hpp"
#include "api/json_text.hpp"
#include "g5sim/report_fields.hpp"
#include "g5sim/serve.hpp"
#include "serving/serving_engine.hpp"

namespace g5sim {

using api::csv_cell;
using serving::distribution;

namespace {

std::string ms(double v) { return fmt::format("{:.3f}", v); }

// A knob's value in a JSON echo: a word quoted, a number as it is, nothing null.
std::string json_value(const KnobValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "null";
  if (const auto* s = std::get_if<std::string>(&v)) return api::json_string(*s);
  return knob_text(v);
}

// serve's JSON "engine" object: the rows with a place there, by their place.
std::string engine_echo_json(const ServeSettings& s) {
  std::vector<const Knob*> rows;
  for (const Knob& k : s.table()) {
    if (k.engine_echo > 0) rows.push_back(&k);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Knob* a, const Knob* b) { return a->engine_echo < b->engine_echo; });
  std::string out;
  for (const Knob* k : rows) {
    out += fmt::format("{}\"{}\": {}", out.empty() ? "" : ", ", k->name, json_value(effective_value(s, *k)));
  }
  return out;
}

// The table's "engine" line: each marked row's name and value in effect, comma separated.
// The table's "step cache" line under auto.
std::string auto_cache_line(const g5sim::AutoStepCache& a) {
  const std::string head = fmt::format("step cache    auto:{}: ", a.bound_percent);
  if (a.exact && a.rounds == 0) {
    return head + fmt::format("exact (the serve has at most {} distinct steps: each simulated)", a.exact_budget);
  }
  if (a.exact) {
    return head + fmt::format(
                      "exact: a {} % grid missed the bound after {} round{} and the steps left cost less "
                      "than a finer one ({} simulated to check)",
                      a.grid_percent, a.rounds, a.rounds == 1 ? "" : "s", a.samples);
  }
  std::string checks;
  for (const g5sim::StepCacheCheck& c : a.checks) {
    checks += fmt::format("{}{} {:+.2f} %", checks.empty() ? "" : ", ", c.metric, 100 * c.error);
  }
  return head + fmt::format("anchors on a {} % grid after {} round{}; {} steps simulated exactly to check: {} ({})",
                            a.grid_percent, a.rounds, a.rounds == 1 ? "" : "s", a.samples, checks,
                            a.met ? fmt::format("within {} %, p99 {} %", a.bound_percent, 3 * a.bound_percent)
                                  : fmt::format("NOT within {} %, p99 {} %, on the finest grid", a.bound_percent,
                                                3 * a.bound_percent));
}

std::string engine_line(const ServeSettings& s) {
  std::string out;
  for (const Knob& k : s.table()) {
    if (k.engine_line) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", k.name, knob_text(effective_value(s, k)));
  }
  return out;
}

}  // namespace

void write_request_csv(std::ostream& out, const ServeReport& report) {
  out << csv_header(report_named(serve_reports(), "serve_requests")) << '\n';
  for (const RequestOutcome& r : report.run.requests) {
    std::string tpot, itl_p50, itl_max;
    if (r.output_tokens > 1) {
      tpot = ms(static_cast<double>(r.finish_ps - r.first_token_ps) / static_cast<double>(r.output_tokens - 1) / 1e9);
      std::vector<double> gaps;
      for (std::uint64_t g : r.itl_ps) gaps.push_back(static_cast<double>(g) / 1e9);
      const Distribution d = distribution(gaps);
      itl_p50 = ms(d.p50);
      itl_max = ms(d.max);
    }
    fmt::print(out, "{},{:.6f},{:.6f},{:.6f},{},{},{},{},{:.6f},{},{},{},{},{}\n", csv_cell(r.id),
               static_cast<double>(r.arrival_ps) / 1e12, static_cast<double>(r.first_token_ps) / 1e12,
               static_cast<double>(r.finish_ps) / 1e12, ms(static_cast<double>(r.first_token_ps - r.arrival_ps) / 1e9),
               tpot, itl_p50, itl_max, static_cast<double>(r.finish_ps - r.arrival_ps) / 1e12,
               ms(static_cast<double>(r.finish_ps - r.arrival_ps) / 1e9), r.input_tokens, r.output_tokens,
               r.preemptions, r.cached_tokens);
  }
}

namespace {

std::string json_number(double v) { return fmt::format("{}", v); }

// A tier's blocks in bytes (never past 2^64: a tier holds at most 2^20 GB, its counts are blocks
// moved, each at most that; a sum that would is held at the largest value).
std::uint64_t tier_bytes(const g5sim::KvTierUse& t, std::uint64_t blocks) {
  try {
    return hw::checked("a tier's bytes", [&] { return (hw::Count(blocks) * t.block_bytes).value(); });
  } catch (const hw::ConfigError&) {
    return std::numeric_limits<std::uint64_t>::max();
  }
}

std::string json_distribution(const Distribution& d, const std::optional<double>& low,
                              const std::optional<double>& high) {
  std::string out =
      fmt::format(R"({{"count": {}, "mean": {}, "p50": {}, "p90": {}, "p99": {}, "max": {})", d.count,
                  json_number(d.mean), json_number(d.p50), json_number(d.p90), json_number(d.p99), json_number(d.max));
  if (low && high && d.count > 0) {
    out += fmt::format(
        R"(, "band_low": {{"mean": {}, "p50": {}, "p99": {}}}, "band_high": {{"mean": {}, "p50": {}, "p99": {}}})",
        json_number(d.mean * *low), json_number(d.p50 * *low), json_number(d.p99 * *low), json_number(d.mean * *high),
        json_number(d.p50 * *high), json_number(d.p99 * *high));
  }
  return out + "}";
}

std::string json_optional(const std::optional<double>& v) { return v ? json_number(*v) : "null"; }

// serve JSON's first keys: the schema, the chip and model with their sources, the deployment.
void write_serve_json_identity(std::ostream& out, const ServeReport& r) {
  const g5sim::Deployment& d = r.memory.deployment;
  fmt::print(out, "{{\n  \"schema_version\": {},\n", kServeSchemaVersion);
  fmt::print(out, "  \"chip\": {},\n  \"model\": {},\n", api::json_string(r.chip), api::json_string(r.model));
  fmt::print(out, "  \"chip_source\": {},\n  \"model_source\": {},\n", api::json_string(r.chip_source),
             api::json_string(r.model_source));
  fmt::print(out, "  \"deployment\": {{\"tp\": {}, \"ep\": {}, \"dp\": {}, \"chips\": {}, \"automatic\": {}}},\n", d.tp,
             d.ep, d.dp, d.chips(), d.automatic ? "true" : "false");
}

// One role of the "disaggregation" object: its chip, instances, sharding, cache and link.
std::string role_json(const g5sim::ServeRole& role) {
  const g5sim::Deployment& d = role.memory.deployment;
  return fmt::format(
      "{{\"chip\": {}, \"chip_source\": {}, \"instances\": {}, \"deployment\": {{\"tp\": {}, \"ep\": {}, \"dp\": {}, "
      "\"chips\": {}}}, \"kv_tokens\": {}, \"kv_bytes_per_token\": {}, \"link\": {}, \"bandwidth_gb_per_s\": {}, "
      "\"latency_ns\": {}}}",
      api::json_string(role.chip), api::json_string(role.chip_source), role.instances, d.tp, d.ep, d.dp, d.chips(),
      role.kv_tokens, role.memory.kv_bytes_per_token, api::json_string(role.link.link),
      json_number(role.link.bandwidth_gb_per_s), json_number(role.link.latency_ns));
}

// serve JSON's "disaggregation" object (null without prefill instances).
void write_serve_json_disaggregation(std::ostream& out, const ServeReport& r) {
  if (r.setup.prefill_instances > 0 && r.roles) {
    const KvTransfer& t = r.setup.kv_transfer;
    fmt::print(out,
               "  \"disaggregation\": {{\"prefill_instances\": {}, \"decode_instances\": {}, \"chips\": {}, "
               "\"link\": {}, \"bandwidth_gb_per_s\": {}, \"latency_ns\": {}, \"kv_transfer_bytes\": {}, "
               "\"bytes_per_token\": {}, \"own_chips\": {}, \"prefill\": {}, \"decode\": {}}},\n",
               r.setup.prefill_instances, r.setup.decode_instances, r.chips, api::json_string(t.link),
               json_number(t.bandwidth_gb_per_s), json_number(t.latency_ns), r.run.kv_transfer_bytes, t.bytes_per_token,
               r.roles->own_chips ? "true" : "false", role_json(r.roles->prefill), role_json(r.roles->decode));
  } else {
    out << "  \"disaggregation\": null,\n";
  }
}

// serve JSON's "afd" object (null without attention-FFN disaggregation).
void write_serve_json_afd(std::ostream& out, const ServeReport& r) {
  if (!r.afd) {
    out << "  \"afd\": null,\n";
    return;
  }
  const g5sim::ServeAfd& a = *r.afd;
  fmt::print(out,
             "  \"afd\": {{\"attention_chips\": {}, \"ffn_chips\": {}, \"ffn_chip\": {}, \"ffn_chip_source\": {}, "
             "\"ffn_weight_bytes\": {}, \"micro_batches\": {}, \"attention_link\": {}, \"ffn_link\": {}, "
             "\"bandwidth_gb_per_s\": {}, \"latency_ns\": {}, \"dispatch_bytes\": {}, \"combine_bytes\": {}}},\n",
             a.attention_chips, a.ffn_chips, api::json_string(a.ffn_chip), api::json_string(a.ffn_chip_source),
             a.ffn_weight_bytes, a.micro_batches, api::json_string(a.link.attention_link),
             api::json_string(a.link.ffn_link), json_number(a.link.bandwidth_gb_per_s), json_number(a.link.latency_ns),
             a.dispatch_bytes, a.combine_bytes);
}

// serve JSON's "mtp" object (null without multi-token prediction).
void write_serve_json_mtp(std::ostream& out, const ServeReport& r) {
  if (r.settings.count("mtp") > 0) {
    std::string rates;
    for (double p : r.setup.accept) rates += (rates.empty() ? "" : ", ") + json_number(p);
    fmt::print(
        out,
        "  \"mtp\": {{\"draft_tokens\": {}, \"accept\": [{}], \"mode\": \"{}\", \"seed\": {}, "
        "\"verifies\": {}, \"tokens_per_verify\": {}}},\n",
        r.settings.count("mtp"), rates, r.settings.optional_count("accept_draw").has_value() ? "drawn" : "expected",
        r.settings.optional_count("accept_draw").has_value() ? std::to_string(r.settings.count("accept_draw")) : "null",
        r.run.mtp_verifies,
        json_number(r.run.mtp_verifies > 0
                        ? static_cast<double>(r.run.mtp_tokens) / static_cast<double>(r.run.mtp_verifies)
                        : 0.0));
  } else {
    out << "  \"mtp\": null,\n";
  }
}

// serve JSON's engine echo and "kv_cache" object: the knobs in effect and the cache's size.
void write_serve_json_engine(std::ostream& out, const ServeReport& r) {
  fmt::print(out, "  \"engine\": {{{}}},\n", engine_echo_json(r.settings));
  fmt::print(
      out,
      "  \"kv_cache\": {{\"tokens\": {}, \"blocks\": {}, \"bytes_per_token\": {}, \"window_bytes_per_token\": {}, "
      "\"window_tokens\": {}, \"state_bytes_per_sequence\": {}, \"weight_bytes\": {}, \"capacity_bytes\": {}, "
      "\"memory_utilization\": {}}},\n",
      r.settings.count("kv_tokens"), r.run.kv_blocks, r.memory.kv_bytes_per_token, r.memory.kv.window_per_token,
      r.memory.kv.window, r.memory.kv.fixed, r.memory.weight_bytes, r.memory.capacity_bytes,
      json_number(r.settings.decimal("memory_utilization")));
}

// serve JSON's "runtime" object, with a runtime: what it is and the means of TTFT and TPOT split
// between the chip and it.
void write_serve_json_runtime(std::ostream& out, const ServeReport& r) {
  if (!r.setup.runtime) return;
  const Runtime& rt = *r.setup.runtime;
  const ServeSummary& s = r.summary;
  std::uint64_t cpu_ps = 0, runtime_ps = 0;
  for (const StepLog& st : r.run.steps) cpu_ps += st.cpu_ps, runtime_ps += st.runtime_ps;
  fmt::print(out,
             "  \"runtime\": {{\"name\": {}, \"version\": {}, \"source\": {}, \"sha256\": \"{}\", \"adds\": {}, "
             "\"ttft_ms\": {{\"chip\": {}, \"runtime\": {}}}, \"tpot_ms\": {{\"chip\": {}, \"runtime\": {}}}, "
             "\"steps_runtime_s\": {}, \"steps_cpu_s\": {}, \"not_modelled\": \"activation memory, the network "
             "stack, kernels on concurrent streams\"}},\n",
             api::json_string(rt.name), api::json_string(rt.version), api::json_string(rt.source), rt.sha256,
             api::json_string(rt.adds), json_number(s.ttft_chip_ms), json_number(s.ttft_runtime_ms),
             json_number(s.tpot_chip_ms), json_number(s.tpot_runtime_ms),
             json_number(static_cast<double>(runtime_ps) / 1e12), json_number(static_cast<double>(cpu_ps) / 1e12));
}

// serve JSON's request totals and latency distributions (TTFT, TPOT, ITL, E2E in s, and in ms
// as vLLM names it, e2el_ms).
void write_serve_json_latencies(std::ostream& out, const ServeReport& r) {
  const ServeSummary& s = r.summary;
  std::optional<double> lo = r.run.band_low_ratio, hi = r.run.band_high_ratio;
  std::optional<double> ttft_lo = lo, ttft_hi = hi;
  if (const std::optional<RuntimeBands>& b = s.runtime_bands) {
    // A calibrated runtime's bands replace the chip steps' (its fit ran the chip under it).
    ttft_lo = b->ttft.low, ttft_hi = b->ttft.high, lo = b->tpot.low, hi = b->tpot.high;
  }
  fmt::print(out, "  \"requests\": {},\n  \"input_tokens\": {},\n  \"output_tokens\": {},\n  \"duration_s\": {},\n",
             s.requests, s.input_tokens, s.output_tokens, json_number(s.duration_s));
  fmt::print(out, "  \"ttft_ms\": {},\n", json_distribution(s.ttft_ms, ttft_lo, ttft_hi));
  fmt::print(out, "  \"tpot_ms\": {},\n", json_distribution(s.tpot_ms, lo, hi));
  fmt::print(out, "  \"itl_ms\": {},\n", json_distribution(s.itl_ms, lo, hi));
  fmt::print(out, "  \"e2e_s\": {},\n", json_distribution(s.e2e_s, lo, hi));
  fmt::print(out, "  \"e2el_ms\": {},\n", json_distribution(s.e2el_ms, lo, hi));
}

// serve JSON's "throughput", "goodput" and (on a chip with energy) "energy" objects.
void write_serve_json_throughput(std::ostream& out, const ServeReport& r) {
  const ServeSummary& s = r.summary;
  fmt::print(out,
             "  \"throughput\": {{\"requests_per_s\": {}, \"input_tokens_per_s\": {}, \"output_tokens_per_s\": {}, "
             "\"input_tokens_per_s_per_chip\": {}, \"output_tokens_per_s_per_chip\": {}, "
             "\"output_tokens_per_s_per_user\": {}}},\n",
             json_number(s.requests_per_s), json_number(s.input_tokens_per_s), json_number(s.output_tokens_per_s),
             json_number(s.input_tokens_per_s_per_chip), json_number(s.output_tokens_per_s_per_chip),
             json_number(s.output_tokens_per_s_per_user));
  fmt::print(out,
             "  \"goodput\": {{\"slo_ttft_ms\": {}, \"slo_tpot_ms\": {}, \"requests_met\": {}, \"requests_per_s\": "
             "{}}},\n",
             json_optional(s.slo_ttft_ms), json_optional(s.slo_tpot_ms), s.slo_met,
             json_number(s.goodput_requests_per_s));
  if (const std::optional<ServeEnergy>& e = r.energy) {
    fmt::print(out,
               "  \"energy\": {{\"total_j\": {}, \"dynamic_j\": {}, \"static_j\": {}, \"joules_per_token\": {}, "
               "\"tokens_per_joule\": {}, \"average_w_per_chip\": {}, \"tdp_w\": {}}},\n",
               json_number(e->total_j), json_number(e->dynamic_j), json_number(e->static_j),
               json_number(e->joules_per_token), json_number(e->tokens_per_joule), json_number(e->average_w),
               json_optional(e->tdp_w));
  }
}

// serve JSON's band, cache and batch use, step counts and "step_cache" object.
void write_serve_json_run_state(std::ostream& out, const ServeReport& r) {
  const ServeSummary& s = r.summary;
  const std::optional<double>& lo = r.run.band_low_ratio;
  const std::optional<double>& hi = r.run.band_high_ratio;
  fmt::print(out, "  \"band\": {{\"low_ratio\": {}, \"high_ratio\": {}, \"coverage\": {}, \"basis\": {}}},\n",
             json_optional(lo), json_optional(hi), lo ? json_number(r.band_coverage) : "null",
             api::json_string(r.band_basis));
  fmt::print(out, "  \"runtime_bands\": {},\n", runtime_bands_json(s.runtime_bands));
  fmt::print(
      out, "  \"kv_utilisation\": {{\"mean\": {}, \"peak\": {}}},\n  \"batch\": {{\"mean\": {}, \"max\": {}}},\n",
      json_number(s.kv_utilisation_mean), json_number(s.kv_utilisation_peak), json_number(s.batch_mean), s.batch_max);
  fmt::print(out, "  \"steps_taken\": {},\n  \"steps_simulated\": {},\n  \"steps_read\": {},\n  \"preemptions\": {},\n",
             r.run.steps.size(), r.run.distinct_steps, r.steps_read, r.run.preemptions);
  fmt::print(out,
             "  \"prefix_cache\": {{\"enabled\": {}, \"hit_tokens\": {}, \"computed_tokens\": {}, \"hit_rate\": {}, "
             "\"requests_hit\": {}, \"ttft_mean_ms_hit\": {}, \"ttft_mean_ms_miss\": {}}},\n",
             r.run.prefix_caching, s.prefix_hit_tokens, s.prefix_computed_tokens, json_number(s.prefix_hit_rate),
             s.prefix_requests_hit, json_number(s.ttft_hit_ms), json_number(s.ttft_miss_ms));
  std::string tiers;
  for (const g5sim::KvTierUse& t : r.run.kv_tiers) {
    tiers += fmt::format(
        "{}{{\"name\": {}, \"capacity_blocks\": {}, \"block_bytes\": {}, \"peak_blocks\": {}, \"written_blocks\": {}, "
        "\"read_blocks\": {}, \"dropped_blocks\": {}, \"written_bytes\": {}, \"read_bytes\": {}, \"load_ms\": {}}}",
        tiers.empty() ? "" : ", ", api::json_string(t.name), t.capacity_blocks, t.block_bytes, t.peak_blocks,
        t.written_blocks, t.read_blocks, t.dropped_blocks, tier_bytes(t, t.written_blocks),
        tier_bytes(t, t.read_blocks), json_number(static_cast<double>(t.read_ps) / 1e9));
  }
  fmt::print(out, "  \"kv_tiers\": [{}],\n", tiers);
  if (const std::optional<BucketError>& e = r.run.bucket_error) {
    fmt::print(out,
               "  \"step_cache\": {{\"mode\": \"bucket\", \"percent\": {}, \"error_samples\": {}, "
               "\"error_mean_abs\": {}, \"error_max_abs\": {}}},\n",
               r.setup.bucket_percent, e->samples, json_number(e->mean_abs), json_number(e->max_abs));
  } else if (const std::optional<g5sim::AutoStepCache>& a = r.run.auto_cache) {
    std::string checks;
    for (const g5sim::StepCacheCheck& c : a->checks) {
      checks += fmt::format(
          "{}{{\"metric\": \"{}\", \"draws\": {}, \"error\": {}, \"standard_error\": {}, \"bound_percent\": {}}}",
          checks.empty() ? "" : ", ", c.metric, c.draws, json_number(c.error), json_number(c.standard_error),
          json_number(c.bound_percent));
    }
    fmt::print(out,
               "  \"step_cache\": {{\"mode\": \"auto\", \"bound_percent\": {}, \"exact\": {}, \"exact_budget\": {}, "
               "\"grid_percent\": {}, \"rounds\": {}, \"samples\": {}, \"met\": {}, \"checks\": [{}]}},\n",
               json_number(a->bound_percent), a->exact, a->exact_budget, a->grid_percent, a->rounds, a->samples, a->met,
               checks);
  } else {
    out << "  \"step_cache\": {\"mode\": \"exact\"},\n";
  }
}

// serve JSON's "per_request" array: each request's TTFT, TPOT (null for one output token) and
// E2E (s, and ms: e2el_ms), for CDFs (python3 -m g5sim plot).
void write_serve_json_per_request(std::ostream& out, const ServeReport& r) {
  out << "  \"per_request\": [";
  for (std::size_t i = 0; i < r.run.requests.size(); ++i) {
    const RequestOutcome& q = r.run.requests[i];
    const std::string tpot = q.output_tokens > 1 ? json_number(static_cast<double>(q.finish_ps - q.first_token_ps) /
                                                               static_cast<double>(q.output_tokens - 1) / 1e9)
                                                 : "null";
    fmt::print(out, "{}\n    {{\"id\": {}, \"ttft_ms\": {}, \"tpot_ms\": {}, \"e2e_s\": {}, \"e2el_ms\": {}}}",
               i == 0 ? "" : ",", api::json_string(q.id),
               json_number(static_cast<double>(q.first_token_ps - q.arrival_ps) / 1e9), tpot,
               json_number(static_cast<double>(q.finish_ps - q.arrival_ps) / 1e12),
               json_number(static_cast<double>(q.finish_ps - q.arrival_ps) / 1e9));
  }
  out << "\n  ],\n";
}

// serve JSON's last key, the "steps" array of every step taken, and the document's closing brace.
void write_serve_json_steps(std::ostream& out, const ServeReport& r) {
  out << "  \"steps\": [";
  for (std::size_t i = 0; i < r.run.steps.size(); ++i) {
    const StepLog& st = r.run.steps[i];
    fmt::print(out,
               "{}\n    {{\"instance\": {}, \"start_s\": {}, \"duration_ms\": {}, \"sequences\": {}, "
               "\"prefill_tokens\": {}, \"decode_tokens\": {}, \"kv_blocks_used\": {}, \"waiting\": {}}}",
               i == 0 ? "" : ",", st.instance, json_number(static_cast<double>(st.start_ps) / 1e12),
               json_number(static_cast<double>(st.duration_ps) / 1e9), st.sequences, st.prefill_tokens,
               st.decode_tokens, st.kv_blocks_used, st.waiting);
  }
  out << "\n  ]\n}\n";
}

}  // namespace

void write_serve_json(std::ostream& out, const ServeReport& r) {
  write_serve_json_identity(out, r);
  write_serve_json_disaggregation(out, r);
  write_serve_json_afd(out, r);
  write_serve_json_mtp(out, r);
  write_serve_json_engine(out, r);
  write_serve_json_runtime(out, r);
  write_serve_json_latencies(out, r);
  write_serve_json_throughput(out, r);
  write_serve_json_run_state(out, r);
  write_serve_json_per_request(out, r);
  write_serve_json_steps(out, r);
}

// With a runtime, a host track per instance beside its steps (process 3): each step's scheduler
// CPU at its start, then its device-side runtime charge (kernel floors and gaps, collectives,
// layer launches), which is spread through the step on the chip and drawn here as one slice.
void write_runtime_tracks(std::ostream& out, const ServeReport& r, std::uint64_t instances) {
  if (!r.setup.runtime) return;
  auto us = [](std::uint64_t ps) { return json_number(static_cast<double>(ps) / 1e6); };
  fmt::print(out, ",\n  {{\"ph\": \"M\", \"pid\": 3, \"name\": \"process_name\", \"args\": {{\"name\": {}}}}}",
             api::json_string("host: " + r.setup.runtime->name));
  for (std::uint64_t k = 0; k < instances; ++k) {
    fmt::print(out,
               ",\n  {{\"ph\": \"M\", \"pid\": 3, \"tid\": {}, \"name\": \"thread_name\", \"args\": {{\"name\": "
               "\"instance {}\"}}}}",
               k, k);
  }
  for (std::size_t i = 0; i < r.run.steps.size(); ++i) {
    const StepLog& st = r.run.steps[i];
    const std::uint64_t device = st.runtime_ps - st.cpu_ps;
    if (st.cpu_ps > 0) {
      fmt::print(out,
                 ",\n  {{\"ph\": \"X\", \"pid\": 3, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"name\": \"scheduler "
                 "CPU\", \"args\": {{\"step\": {}}}}}",
                 st.instance, us(st.start_ps), us(st.cpu_ps), i);
    }
    if (device > 0) {
      fmt::print(out,
                 ",\n  {{\"ph\": \"X\", \"pid\": 3, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"name\": \"kernel and "
                 "collective overheads\", \"args\": {{\"step\": {}}}}}",
                 st.instance, us(st.start_ps + st.cpu_ps), us(device), i);
    }
  }
}

void write_serve_perfetto(std::ostream& out, const ServeReport& r) {
  auto us = [](std::uint64_t ps) { return json_number(static_cast<double>(ps) / 1e6); };
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  out << R"(  {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "steps"}},)"
      << "\n";
  out << R"(  {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "requests"}})";
  const std::uint64_t instances =
      r.setup.prefill_instances > 0 ? r.setup.prefill_instances + r.setup.decode_instances : 1;
  for (std::uint64_t k = 0; k < instances; ++k) {
    const std::string name = r.setup.prefill_instances == 0 ? std::string("engine")
                             : k < r.setup.prefill_instances
                                 ? fmt::format("prefill instance {}", k)
                                 : fmt::format("decode instance {}", k - r.setup.prefill_instances);
    fmt::print(out,
               ",\n  {{\"ph\": \"M\", \"pid\": 1, \"tid\": {}, \"name\": \"thread_name\", \"args\": {{\"name\": {}}}}}",
               k, api::json_string(name));
  }
  write_runtime_tracks(out, r, instances);
  for (std::size_t i = 0; i < r.run.steps.size(); ++i) {
    const StepLog& st = r.run.steps[i];
    fmt::print(out,
               ",\n  {{\"ph\": \"X\", \"pid\": 1, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"name\": \"{} seq{}\", "
               "\"args\": {{\"step\": {}, \"prefill_tokens\": {}, \"decode_tokens\": {}, \"kv_blocks_used\": {}, "
               "\"waiting\": {}}}}}",
               st.instance, us(st.start_ps), us(st.duration_ps), st.sequences, st.sequences == 1 ? "" : "s", i,
               st.prefill_tokens, st.decode_tokens, st.kv_blocks_used, st.waiting);
  }
  // Slots: requests by arrival (stable), each into the lowest slot free at its arrival.
  std::vector<std::size_t> order(r.run.requests.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return r.run.requests[a].arrival_ps < r.run.requests[b].arrival_ps;
  });
  std::size_t slots = 0;
  std::set<std::size_t> free_slots;
  std::multimap<std::uint64_t, std::size_t> busy;  // end -> slot
  for (std::size_t i : order) {
    const RequestOutcome& q = r.run.requests[i];
    while (!busy.empty() && busy.begin()->first <= q.arrival_ps) {
      free_slots.insert(busy.begin()->second);
      busy.erase(busy.begin());
    }
    std::size_t slot = slots;
    if (!free_slots.empty()) {
      slot = *free_slots.begin();
      free_slots.erase(free_slots.begin());
    } else {
      ++slots;
      fmt::print(out,
                 ",\n  {{\"ph\": \"M\", \"pid\": 2, \"tid\": {}, \"name\": \"thread_name\", \"args\": {{\"name\": "
                 "\"slot {}\"}}}}",
                 slot, slot);
    }
    busy.emplace(q.finish_ps, slot);
    const std::string args = fmt::format(R"({{"id": {}, "input_tokens": {}, "output_tokens": {}, "preemptions": {}}})",
                                         api::json_string(q.id), q.input_tokens, q.output_tokens, q.preemptions);
    const std::uint64_t bounds[4] = {q.arrival_ps, q.first_step_ps, q.first_token_ps, q.finish_ps};
    static constexpr const char* kPhases[3] = {"queued", "prefill", "decode"};
    for (int p = 0; p < 3; ++p) {
      if (bounds[p + 1] <= bounds[p]) continue;
      fmt::print(out,
                 ",\n  {{\"ph\": \"X\", \"pid\": 2, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"name\": \"{}\", "
                 "\"args\": {}}}",
                 slot, us(bounds[p]), us(bounds[p + 1] - bounds[p]), kPhases[p], args);
    }
  }
  out << "\n]}\n";
}

// The serve table's head: the model on its chip (each role's with a chip per role), and with a
// disaggregation its instances, the cache moved and the link.
void write_serve_table_head(std::ostream& out, const ServeReport& r) {
  const ServeSummary& s = r.summary;
  const g5sim::Deployment& d = r.memory.deployment;
  const bool disagg = r.setup.prefill_instances > 0;
  if (r.afd) {
    const g5sim::ServeAfd& a = *r.afd;
    fmt::print(out,
               "g5sim serve: {}, attention on {} x {} (dp {}), FFN on {} x {} (ep {}), {} chips, {} requests, {} in / "
               "{} out tokens\n",
               r.model, a.attention_chips, r.chip, a.attention_chips, a.ffn_chips, a.ffn_chip, a.ffn_chips, r.chips,
               s.requests, s.input_tokens, s.output_tokens);
    fmt::print(out,
               "afd           {} micro-batches a step; {} bytes of activations each way over {} GB/s ({} side {}, {} "
               "side {}) after {} ns; FFN weights {} bytes a chip\n",
               a.micro_batches, a.dispatch_bytes, a.link.bandwidth_gb_per_s, r.chip, a.link.attention_link, a.ffn_chip,
               a.link.ffn_link, a.link.latency_ns, a.ffn_weight_bytes);
  } else if (r.roles && r.roles->own_chips) {
    const g5sim::Deployment& p = r.roles->prefill.memory.deployment;
    const g5sim::Deployment& q = r.roles->decode.memory.deployment;
    fmt::print(out,
               "g5sim serve: {}, prefill on {} (tp {} ep {} dp {} an instance), decode on {} (tp {} ep {} dp {} an "
               "instance), {} chips in all, {} requests, {} in / {} out tokens\n",
               r.model, r.roles->prefill.chip, p.tp, p.ep, p.dp, r.roles->decode.chip, q.tp, q.ep, q.dp, r.chips,
               s.requests, s.input_tokens, s.output_tokens);
  } else {
    fmt::print(out, "g5sim serve: {} on {} (tp {} ep {} dp {}{}, {} chip{}{}), {} requests, {} in / {} out tokens\n",
               r.model, r.chip, d.tp, d.ep, d.dp, disagg ? " an instance" : "", r.chips, r.chips == 1 ? "" : "s",
               disagg ? " in all" : "", s.requests, s.input_tokens, s.output_tokens);
  }
  if (disagg) {
    const KvTransfer& t = r.setup.kv_transfer;
    // A chip config without a nodes section names no link between instances: its chip-to-chip
    // links stand in, which the reader should know is an assumption.
    fmt::print(out,
               "disagg        {} prefill + {} decode instances; {} bytes ({:.3f} GiB) of KV cache moved over {} ({} "
               "GB/s, {} ns){}\n",
               r.setup.prefill_instances, r.setup.decode_instances, r.run.kv_transfer_bytes,
               static_cast<double>(r.run.kv_transfer_bytes) / (1u << 30), t.link, t.bandwidth_gb_per_s, t.latency_ns,
               t.link == "c2c" ? "; assumed: the chip config has no nodes section, so its chip-to-chip links" : "");
    if (r.roles && r.roles->own_chips) {
      const g5sim::ServeRole& p = r.roles->prefill;
      const g5sim::ServeRole& q = r.roles->decode;
      fmt::print(out,
                 "roles         prefill {} x {} chips ({} {} GB/s), decode {} x {} chips ({} {} GB/s): the cache "
                 "crosses at the slower side's rate, {} bytes a token\n",
                 p.instances, p.memory.deployment.chips(), p.link.link, p.link.bandwidth_gb_per_s, q.instances,
                 q.memory.deployment.chips(), q.link.link, q.link.bandwidth_gb_per_s,
                 r.setup.kv_transfer.bytes_per_token);
    }
  }
}

// The table's lines of the tiers below device memory and of what prefix caching reused.
void write_reuse_lines(std::ostream& out, const ServeReport& r, const ServeSummary& s) {
  for (const g5sim::KvTierUse& t : r.run.kv_tiers) {
    fmt::print(
        out,
        "kv tier       {}: {} blocks of {} B, {:.1f} % full at peak; {} blocks written down, {} read back ({:.3f} "
        "GB), {} dropped; loads {:.3f} ms in all\n",
        t.name, t.capacity_blocks, t.block_bytes,
        t.capacity_blocks ? 100.0 * static_cast<double>(t.peak_blocks) / static_cast<double>(t.capacity_blocks) : 0.0,
        t.written_blocks, t.read_blocks, static_cast<double>(tier_bytes(t, t.read_blocks)) / 1e9, t.dropped_blocks,
        static_cast<double>(t.read_ps) / 1e9);
  }
  if (r.run.prefix_caching && s.prefix_hit_tokens > 0) {  // said when it reused something
    fmt::print(out,
               "prefix cache  {:.1f} % of prompt tokens reused ({} prefill tokens saved), {} of {} requests hit; TTFT "
               "mean {:.3f} ms with a hit, {:.3f} ms without\n",
               100 * s.prefix_hit_rate, s.prefix_hit_tokens, s.prefix_requests_hit, s.requests, s.ttft_hit_ms,
               s.ttft_miss_ms);
  }
}

void write_serve_table(std::ostream& out, const ServeReport& r) {
  const ServeSummary& s = r.summary;
  const bool disagg = r.setup.prefill_instances > 0;
  write_serve_table_head(out, r);
  if (r.settings.count("mtp") > 0) {
    fmt::print(
        out, "mtp           {} drafts a step, acceptance {} ({}): {:.3f} tokens per verify over {} verifies\n",
        r.settings.count("mtp"), fmt::join(r.setup.accept, ","),
        r.settings.optional_count("accept_draw").has_value() ? "drawn" : "expected",
        r.run.mtp_verifies > 0 ? static_cast<double>(r.run.mtp_tokens) / static_cast<double>(r.run.mtp_verifies) : 0.0,
        r.run.mtp_verifies);
  }
  const bool own_chips = r.roles && r.roles->own_chips;
  fmt::print(out, "engine        {}{}{}, KV {} tokens ({} blocks of {}){}\n", disagg ? "each instance: " : "",
             r.settings.text("schedule") == "prefill-first" ? "prefill-first steps, " : "", engine_line(r.settings),
             r.settings.count("kv_tokens"), r.run.kv_blocks, r.settings.count("block_tokens"),
             own_chips ? fmt::format(" a prefill one, {} ({} blocks) a decode one", r.roles->decode.kv_tokens,
                                     r.run.decode_kv_blocks)
                       : std::string());
  if (r.setup.runtime) {
    const Runtime& rt = *r.setup.runtime;
    fmt::print(out, "runtime       {} {}: {}\n", rt.name, rt.version, rt.adds);
  }
  fmt::print(out, "steps         {} taken, {} simulated{}, {} preemptions; duration {:.3f} s\n", r.run.steps.size(),
             r.run.distinct_steps,
             r.steps_read > 0 ? fmt::format(" ({} of them read from the step cache folder)", r.steps_read) : "",
             r.run.preemptions, s.duration_s);
  if (const std::optional<BucketError>& e = r.run.bucket_error) {
    fmt::print(out,
               "step cache    bucket:{}: {} bucketed steps simulated exactly differ by {:.2f} % on average, {:.2f} % "
               "at most\n",
               r.setup.bucket_percent, e->samples, 100 * e->mean_abs, 100 * e->max_abs);
  }
  if (const std::optional<g5sim::AutoStepCache>& a = r.run.auto_cache) fmt::print(out, "{}\n", auto_cache_line(*a));
  fmt::print(out, "{:<13} {:>10} {:>10} {:>10} {:>10}\n", "metric", "mean", "p50", "p90", "p99");
  for (const auto& [name, dist] : {std::pair{"ttft_ms", &s.ttft_ms},
                                   {"tpot_ms", &s.tpot_ms},
                                   {"itl_ms", &s.itl_ms},
                                   {"e2e_s", &s.e2e_s},
                                   {"e2el_ms", &s.e2el_ms}}) {
    fmt::print(out, "{:<13} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f}\n", name, dist->mean, dist->p50, dist->p90,
               dist->p99);
  }
  if (s.has_runtime) {
    fmt::print(out,
               "split         TTFT mean {:.3f} ms = chip {:.3f} + runtime {:.3f}; TPOT mean {:.3f} ms = chip {:.3f} + "
               "runtime {:.3f}\n",
               s.ttft_ms.mean, s.ttft_chip_ms, s.ttft_runtime_ms, s.tpot_ms.mean, s.tpot_chip_ms, s.tpot_runtime_ms);
    fmt::print(out, "not modelled  activation memory, the network stack, kernels on concurrent streams\n");
  } else {
    // The chip alone: what every measured serve also pays is 0 here, and the reader must know.
    fmt::print(out,
               "not modelled  the serving software: host, scheduler, kernel launches and collectives' fixed "
               "latency take 0 (--runtime names a runtime that adds them: g5sim list); activation memory, the network "
               "stack\n");
  }
  fmt::print(
      out, "throughput    {:.3f} requests/s, {:.1f} in + {:.1f} out tokens/s ({:.1f} out per chip, {:.1f} per user)\n",
      s.requests_per_s, s.input_tokens_per_s, s.output_tokens_per_s, s.output_tokens_per_s_per_chip,
      s.output_tokens_per_s_per_user);
  if (s.slo_ttft_ms || s.slo_tpot_ms) {
    fmt::print(out, "goodput       {:.3f} requests/s ({} of {} meet{}{})\n", s.goodput_requests_per_s, s.slo_met,
               s.requests, s.slo_ttft_ms ? fmt::format(" TTFT <= {} ms", *s.slo_ttft_ms) : "",
               s.slo_tpot_ms ? fmt::format(" TPOT <= {} ms", *s.slo_tpot_ms) : "");
  }
  if (const std::optional<ServeEnergy>& e = r.energy) {
    fmt::print(out,
               "energy        {:.3f} J over the {} chips (dynamic {:.3f}, static {:.3f}), {:.3f} mJ/token, {:.2f} "
               "tokens/J; {:.1f} W a chip on average{}\n",
               e->total_j, r.chips, e->dynamic_j, e->static_j, e->joules_per_token * 1e3, e->tokens_per_joule,
               e->average_w, e->tdp_w ? fmt::format(" of {:.0f} W TDP", *e->tdp_w) : std::string(" (no TDP stated)"));
  }
  fmt::print(out, "kv cache      {}{:.1f} % used on average, {:.1f} % at peak; batch {:.1f} on average, {} at most\n",
             disagg ? "each instance's: " : "", 100 * s.kv_utilisation_mean, 100 * s.kv_utilisation_peak, s.batch_mean,
             s.batch_max);
  write_reuse_lines(out, r, s);
  if (const std::optional<RuntimeBands>& b = s.runtime_bands) {
    fmt::print(out, "band          the runtime's: {}\n", runtime_bands_text(*b));
  } else if (r.run.band_low_ratio) {
    fmt::print(out, "band          the step times' band: x{:.3f} .. x{:.3f} on every time above ({})\n",
               *r.run.band_low_ratio, *r.run.band_high_ratio, r.band_basis);
  } else {
    fmt::print(out, "band          {}\n", r.band_basis.empty() ? "none" : r.band_basis);
  }
}

std::string runtime_bands_json(const std::optional<RuntimeBands>& bands) {
  if (!bands) return "null";
  auto one = [](const MetricBand& m) {
    return m.rows == 0 ? std::string("null")
                       : fmt::format(R"({{"kind": {}, "rows": {}, "low": {}, "high": {}}})", api::json_string(m.kind),
                                     m.rows, json_number(m.low), json_number(m.high));
  };
  return fmt::format(R"({{"coverage": {}, "basis": {}, "ttft": {}, "tpot": {}, "throughput": {}}})",
                     json_number(bands->coverage), api::json_string(bands->basis), one(bands->ttft), one(bands->tpot),
                     one(bands->throughput));
}

std::string runtime_bands_text(const RuntimeBands& b) {
  auto one = [](const char* what, const MetricBand& m) {
    return m.rows == 0 ? fmt::format("{} none", what)
                       : fmt::format("{} x{:.3f} .. x{:.3f} ({} {} rows)", what, m.low, m.high, m.rows, m.kind);
  };
  return fmt::format("{:.0f} % of its held-out rows ({}): {}; {} (also ITL, E2E); {}", 100 * b.coverage, b.basis,
                     one("TTFT", b.ttft), one("TPOT", b.tpot), one("throughput", b.throughput));
}

}  // namespace g5sim
