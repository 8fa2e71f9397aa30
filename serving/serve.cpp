#include "serving/serve.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

#include "api/csv_cell.hpp"
#include "api/json_text.hpp"
#include "api/result_state.hpp"
#include "hw/checked_count.hpp"
#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "hw/number_text.hpp"
#include "models/run_limits.hpp"

namespace serving {

using api::csv_cell;
namespace {

// The step options a serve fixes for every step: its sequences come from the engine.
void check_base(const g5sim::Request& base) {
  if (!base.mix.empty() || !base.seqs.empty()) {
    throw hw::InputError("mix", "serve makes each step's sequences itself: give requests, not --mix or --seqs");
  }
  if (base.scope != "step") throw hw::InputError("scope", "serve runs whole decoder steps (scope step)");
  if (base.keep_commands) throw hw::InputError("keep_commands", "serve keeps no command records");
}

std::uint64_t kv_tokens_of(const g5sim::ServingMemory& m, double utilisation, const std::string& chip) {
  if (!(utilisation > 0 && utilisation <= 1)) {
    throw hw::InputError("memory_utilization", fmt::format("{} is outside (0, 1]", utilisation));
  }
  const double usable = std::floor(utilisation * static_cast<double>(m.capacity_bytes));
  if (usable <= static_cast<double>(m.weight_bytes)) {
    throw hw::InputError(
        "memory_utilization",
        fmt::format("{}'s weights take {} bytes per chip with tp {} ep {} dp {}, but {} x {} bytes of DDR leaves no "
                    "room for a KV cache (raise the memory utilization, or shard wider)",
                    chip, m.weight_bytes, m.deployment.tp, m.deployment.ep, m.deployment.dp, utilisation,
                    m.capacity_bytes));
  }
  const auto per_rank = static_cast<std::uint64_t>((usable - static_cast<double>(m.weight_bytes)) /
                                                   static_cast<double>(m.kv_bytes_per_token));
  return hw::checked("the KV cache tokens", [&] { return (hw::Count(per_rank) * m.deployment.dp).value(); });
}

std::string ms(double v) { return fmt::format("{:.3f}", v); }

// The deployment: as given (any of tp, ep, dp), else the smallest whose KV cache holds the
// longest request: n = 1, 2, 4, ... chips, trying dp = ep = n (tp 1), then tp = ep = n (dp 1),
// then tp = n (the automatic sharding's order, models/memory_footprint.hpp), skipping those the
// model does not divide. The cache sized as kv_tokens_of says.
g5sim::ServingMemory serving_deployment(const g5sim::Chip& chip, const g5sim::Model& model, const g5sim::Request& base,
                                        const std::vector<ServeRequest>& requests, const ServeOptions& options) {
  // A deployment given, or a cache size given (the engine then names a request it cannot hold).
  if (base.tp || base.ep || base.dp || options.limits.kv_tokens > 0) return g5sim::serving_memory(chip, model, base);
  std::uint64_t longest = 1;
  for (const ServeRequest& r : requests) longest = std::max(longest, r.input_tokens + r.output_tokens - 1);
  std::string last_reason;
  for (std::uint64_t n = 1; n <= models::kMaxChips; n *= 2) {
    for (const auto& [tp, ep, dp] :
         {std::tuple{std::uint64_t{1}, n, n}, {n, n, std::uint64_t{1}}, {n, std::uint64_t{1}, std::uint64_t{1}}}) {
      g5sim::Request r = base;
      r.tp = tp;
      r.ep = ep;
      r.dp = dp;
      r.batch = dp;
      try {
        g5sim::ServingMemory m = g5sim::serving_memory(chip, model, r);
        const std::uint64_t tokens = kv_tokens_of(m, options.memory_utilization, chip.name());
        if (tokens / dp >= longest) {
          m.deployment.automatic = true;
          return m;
        }
        last_reason =
            fmt::format("with tp {} ep {} dp {} the KV cache holds {} tokens per DP rank", tp, ep, dp, tokens / dp);
      } catch (const g5sim::ConfigError& e) {
        if (e.field() != "memory_utilization" && e.field() != "tp" && e.field() != "ep" && e.field() != "dp" &&
            e.field() != "sharding") {
          throw;
        }
        last_reason = e.what();
      } catch (const hw::InputError& e) {
        if (e.field() != "memory_utilization") throw;
        last_reason = e.what();
      }
    }
  }
  throw hw::InputError("sharding", fmt::format("no sharding up to {} chips holds {}'s weights and a KV cache for the "
                                               "longest request ({} tokens); the last tried: {}",
                                               models::kMaxChips, model.name(), longest, last_reason));
}

}  // namespace

std::vector<ServeRequest> requests_of(const LoadSpec& load) {
  const bool trace = !load.trace_path.empty() || load.trace_text.has_value();
  const int loads = (trace ? 1 : 0) + (load.rate ? 1 : 0) + (load.concurrency > 0 ? 1 : 0);
  if (loads != 1) throw hw::InputError("trace", "give the requests once: a trace, a rate or a concurrency");
  if (trace) {
    if (!load.input_len.empty() || !load.output_len.empty() || load.requests_given || load.seed_given) {
      throw hw::InputError("trace", "requests, input_len, output_len and seed shape a synthetic load, not a trace");
    }
    return load.trace_text ? parse_request_trace(*load.trace_text, load.trace_path)
                           : read_request_trace(load.trace_path);
  }
  for (const auto& [name, text] : {std::pair{"input_len", &load.input_len}, {"output_len", &load.output_len}}) {
    if (text->empty())
      throw hw::InputError(name, "a synthetic load needs both lengths: N, LO:HI tokens or a histogram file");
  }
  SyntheticLoad s;
  s.requests = load.requests;
  s.rate = load.rate.value_or(0);
  s.concurrency = load.concurrency;
  s.input = LengthDistribution::parse(load.input_len, "input_len");
  s.output = LengthDistribution::parse(load.output_len, "output_len");
  s.seed = load.seed;
  return synthetic_requests(s);
}

std::pair<std::uint64_t, std::uint64_t> parse_disagg(const std::string& text) {
  const std::size_t colon = text.find(':');
  std::uint64_t counts[2] = {0, 0};
  bool ok = colon != std::string::npos;
  for (int side = 0; ok && side < 2; ++side) {
    const std::optional<std::uint64_t> count =
        hw::read_whole_number(side == 0 ? text.substr(0, colon) : text.substr(colon + 1));
    ok = count && *count >= 1 && *count <= kMaxServeInstances;
    if (ok) counts[side] = *count;
  }
  if (!ok) {
    throw hw::InputError("disagg", fmt::format("expected P:D, prefill and decode instances 1..{} each, got '{}'",
                                               kMaxServeInstances, text));
  }
  return {counts[0], counts[1]};
}

std::optional<std::string> deployment_refusal(const g5sim::Chip& chip, const g5sim::Model& model,
                                              const g5sim::Request& base, const std::vector<ServeRequest>& requests,
                                              double memory_utilization) {
  std::uint64_t longest = 1;
  for (const ServeRequest& r : requests) longest = std::max(longest, r.input_tokens + r.output_tokens - 1);
  g5sim::Request r = base;
  r.tp = base.tp.value_or(1);
  r.ep = base.ep.value_or(1);
  r.dp = base.dp.value_or(1);
  r.batch = *r.dp;
  try {
    const g5sim::ServingMemory m = g5sim::serving_memory(chip, model, r);
    const std::uint64_t per_rank = kv_tokens_of(m, memory_utilization, chip.name()) / *r.dp;
    if (per_rank < longest) {
      return fmt::format("the KV cache of a DP rank holds {} tokens, the longest request needs {}", per_rank, longest);
    }
    return std::nullopt;
  } catch (const g5sim::ConfigError& e) {
    return std::string(e.what());
  } catch (const hw::InputError& e) {
    return std::string(e.what());
  }
}

KvTransfer kv_transfer_link(const g5sim::Chip& chip, std::uint64_t kv_bytes_per_token) {
  const hw::Chip& c = chip.data().chip;
  KvTransfer t;
  t.bytes_per_token = kv_bytes_per_token;
  if (c.nodes) {
    t.bandwidth_gb_per_s = c.nodes->rdma_bandwidth_gb_per_s;
    t.latency_ns = c.nodes->rdma_latency_ns;
    t.link = "rdma";
  } else {
    t.bandwidth_gb_per_s = c.c2c.bandwidth_gb_per_s * c.c2c.links;
    t.latency_ns = c.c2c.latency_ns;
    t.link = "c2c";
  }
  return t;
}

std::vector<double> parse_accept(const std::string& text) {
  std::vector<double> out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::optional<double> p = hw::read_decimal_number(std::string_view(text).substr(begin, comma - begin));
    if (!p || !(*p >= 0 && *p <= 1) || out.size() == kMaxMtpDrafts) {
      throw hw::InputError("accept", fmt::format("expected acceptance rates in [0, 1], one or one per draft (at most "
                                                 "{}), comma separated, got '{}'",
                                                 kMaxMtpDrafts, text));
    }
    out.push_back(*p);
    if (comma == text.size()) return out;
    begin = comma + 1;
  }
}

std::uint64_t parse_step_cache(const std::string& text) {
  if (text == "exact") return 0;
  const std::string prefix = "bucket:";
  if (text.rfind(prefix, 0) == 0) {
    const std::optional<std::uint64_t> pct = hw::read_whole_number(std::string_view(text).substr(prefix.size()));
    if (pct && *pct >= 1 && *pct <= 100) return *pct;
  }
  throw hw::InputError("step_cache",
                       fmt::format("expected exact or bucket:PCT (a whole percent 1..100), got '{}'", text));
}

ServeReport serve(const g5sim::Chip& chip, const g5sim::Model& model, g5sim::Request base,
                  std::vector<ServeRequest> requests, const ServeOptions& options,
                  const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  check_base(base);
  if (!(options.memory_utilization > 0 && options.memory_utilization <= 1)) {
    throw hw::InputError("memory_utilization", fmt::format("{} is outside (0, 1]", options.memory_utilization));
  }
  ServeReport report;
  report.chip = chip.name();
  report.model = model.name();
  report.chip_source = chip.source();
  report.model_source = model.source();
  report.memory = serving_deployment(chip, model, base, requests, options);
  // Every step runs on the deployment sized once, whatever its sequences.
  base.tp = report.memory.deployment.tp;
  base.ep = report.memory.deployment.ep;
  base.dp = report.memory.deployment.dp;
  base.batch.reset();
  base.q_len.reset();
  report.step = base;
  report.memory_utilization = options.memory_utilization;
  report.limits = options.limits;
  if (report.limits.kv_tokens == 0) {
    report.limits.kv_tokens = kv_tokens_of(report.memory, options.memory_utilization, report.chip);
  }
  if (report.limits.chunk == 0) report.limits.chunk = report.limits.max_batched_tokens;
  report.limits.dp = report.memory.deployment.dp;
  if (report.limits.prefill_instances > 0) {
    report.limits.kv_transfer = kv_transfer_link(chip, report.memory.kv_bytes_per_token);
  }
  for (const auto& [name, slo] :
       {std::pair{"slo_ttft_ms", options.slo_ttft_ms}, {"slo_tpot_ms", options.slo_tpot_ms}}) {
    if (slo && !(std::isfinite(*slo) && *slo > 0)) {
      throw hw::InputError(name, fmt::format("{} is not a positive number of milliseconds", *slo));
    }
  }
  // The timers run on up to limits.jobs threads at once (a bucketed step's new anchors): the
  // report's tallies under a lock; the band's basis and coverage are those of the simulated step
  // whose mix text sorts first (whatever the threads' order).
  std::mutex tally;
  std::optional<std::string> band_step;
  // A step's key in a store shared with other serves: the deployment and micro-batches first.
  const std::string shared_prefix = fmt::format("tp{} ep{} dp{} mb{} ", base.tp.value_or(1), base.ep.value_or(1),
                                                base.dp.value_or(1), base.micro_batches);
  auto shared = [&](const std::string& key, const std::function<StepTime()>& simulate_step) {
    if (!options.shared_steps) return simulate_step();
    if (const std::optional<StepTime> t = options.shared_steps->find(shared_prefix + key)) return *t;
    const StepTime t = simulate_step();
    options.shared_steps->put(shared_prefix + key, t);
    return t;
  };
  const StepTimer timer = [&](const StepGroups& groups) {
    const std::string mix = g5sim::mix_text(groups);
    return shared(mix, [&] {
      g5sim::Request r = base;
      r.mix = mix;
      const auto started = std::chrono::steady_clock::now();
      const g5sim::Result result = g5sim::simulate(chip, model, r);
      const std::lock_guard<std::mutex> lock(tally);
      report.simulate_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      report.simulated_commands += result.simulated_commands;
      if (!band_step || mix < *band_step) {
        band_step = mix;
        report.band_basis = result.band_basis;
        report.band_coverage = result.band_coverage;
      }
      return StepTime{result.total_ps, result.has_band, result.band_low_ps, result.band_high_ps,
                      result.dynamic_energy_pj};
    });
  };
  // One pass of the MTP draft module: DeepSeek's MTP module is one decoder layer with the
  // model's embedding and head, priced as the mean layer of the same decodes' step (its time and
  // energy over its layers, the embedding and head spread over them).
  const StepTimer draft_timer = [&](const StepGroups& groups) {
    const std::string mix = g5sim::mix_text(groups);
    return shared("draft " + mix, [&] {
      g5sim::Request r = base;
      r.mix = mix;
      const g5sim::Result result = g5sim::simulate(chip, model, r);
      const std::lock_guard<std::mutex> lock(tally);
      report.simulated_commands += result.simulated_commands;
      return StepTime{result.total_ps / result.layers, false, 0, 0,
                      result.dynamic_energy_pj / static_cast<double>(result.layers)};
    });
  };
  if (report.limits.mtp > 0 && 1 + report.limits.mtp > base.decode_max_q) {
    throw hw::InputError("mtp", fmt::format("a verify of 1 + {} tokens is a prefill chunk to the step: raise "
                                            "decode_max_q to {} at least",
                                            report.limits.mtp, 1 + report.limits.mtp));
  }
  report.run = serve_requests(std::move(requests), report.limits, timer, progress, draft_timer);
  const std::uint64_t instances =
      report.limits.prefill_instances > 0 ? report.limits.prefill_instances + report.limits.decode_instances : 1;
  report.chips = report.memory.deployment.chips() * instances;
  report.summary = summarize(report.run, report.chips, options.slo_ttft_ms, options.slo_tpot_ms);
  if (const std::optional<hw::ChipEnergy>& price = chip.data().chip.energy) {
    // W x s = J; the static power of the cores the steps run on.
    const std::uint32_t cores = base.cores ? static_cast<std::uint32_t>(*base.cores) : chip.cores();
    ServeEnergy e;
    e.dynamic_j = report.run.dynamic_energy_pj * 1e-12 * static_cast<double>(report.memory.deployment.chips());
    e.static_j = price->static_w(cores) * static_cast<double>(report.chips) * report.summary.duration_s;
    e.total_j = e.dynamic_j + e.static_j;
    if (report.summary.output_tokens > 0 && e.total_j > 0) {
      e.joules_per_token = e.total_j / static_cast<double>(report.summary.output_tokens);
      e.tokens_per_joule = 1.0 / e.joules_per_token;
    }
    if (report.summary.duration_s > 0) {
      e.average_w = e.total_j / (static_cast<double>(report.chips) * report.summary.duration_s);
    }
    e.tdp_w = price->tdp_w;
    report.energy = e;
  }
  return report;
}

std::optional<StepTime> SharedStepTimes::find(const std::string& key) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = times_.find(key);
  if (it == times_.end()) return std::nullopt;
  return it->second;
}

void SharedStepTimes::put(const std::string& key, const StepTime& time) {
  const std::lock_guard<std::mutex> lock(mutex_);
  times_.emplace(key, time);
}

void write_request_csv(std::ostream& out, const ServeReport& report) {
  out << "id,arrival_s,first_token_s,finish_s,ttft_ms,tpot_ms,itl_p50_ms,itl_max_ms,e2e_s,input_tokens,output_tokens,"
         "preemptions\n";
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
    fmt::print(out, "{},{:.6f},{:.6f},{:.6f},{},{},{},{},{:.6f},{},{},{}\n", csv_cell(r.id),
               static_cast<double>(r.arrival_ps) / 1e12, static_cast<double>(r.first_token_ps) / 1e12,
               static_cast<double>(r.finish_ps) / 1e12, ms(static_cast<double>(r.first_token_ps - r.arrival_ps) / 1e9),
               tpot, itl_p50, itl_max, static_cast<double>(r.finish_ps - r.arrival_ps) / 1e12, r.input_tokens,
               r.output_tokens, r.preemptions);
  }
}

namespace {

std::string json_number(double v) { return fmt::format("{}", v); }

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

}  // namespace

void write_serve_json(std::ostream& out, const ServeReport& r) {
  const ServeSummary& s = r.summary;
  const g5sim::Deployment& d = r.memory.deployment;
  const std::optional<double>& lo = r.run.band_low_ratio;
  const std::optional<double>& hi = r.run.band_high_ratio;
  fmt::print(out, "{{\n  \"schema_version\": {},\n", kServeSchemaVersion);
  fmt::print(out, "  \"chip\": {},\n  \"model\": {},\n", api::json_string(r.chip), api::json_string(r.model));
  fmt::print(out, "  \"chip_source\": {},\n  \"model_source\": {},\n", api::json_string(r.chip_source),
             api::json_string(r.model_source));
  fmt::print(out, "  \"deployment\": {{\"tp\": {}, \"ep\": {}, \"dp\": {}, \"chips\": {}, \"automatic\": {}}},\n", d.tp,
             d.ep, d.dp, d.chips(), d.automatic ? "true" : "false");
  if (r.limits.prefill_instances > 0) {
    const KvTransfer& t = r.limits.kv_transfer;
    fmt::print(out,
               "  \"disaggregation\": {{\"prefill_instances\": {}, \"decode_instances\": {}, \"chips\": {}, "
               "\"link\": {}, \"bandwidth_gb_per_s\": {}, \"latency_ns\": {}, \"kv_transfer_bytes\": {}}},\n",
               r.limits.prefill_instances, r.limits.decode_instances, r.chips, api::json_string(t.link),
               json_number(t.bandwidth_gb_per_s), json_number(t.latency_ns), r.run.kv_transfer_bytes);
  } else {
    out << "  \"disaggregation\": null,\n";
  }
  if (r.limits.mtp > 0) {
    std::string rates;
    for (double p : r.limits.accept) rates += (rates.empty() ? "" : ", ") + json_number(p);
    fmt::print(out,
               "  \"mtp\": {{\"draft_tokens\": {}, \"accept\": [{}], \"mode\": \"{}\", \"seed\": {}, "
               "\"verifies\": {}, \"tokens_per_verify\": {}}},\n",
               r.limits.mtp, rates, r.limits.accept_drawn ? "drawn" : "expected",
               r.limits.accept_drawn ? std::to_string(r.limits.accept_seed) : "null", r.run.mtp_verifies,
               json_number(r.run.mtp_verifies > 0
                               ? static_cast<double>(r.run.mtp_tokens) / static_cast<double>(r.run.mtp_verifies)
                               : 0.0));
  } else {
    out << "  \"mtp\": null,\n";
  }
  fmt::print(out,
             "  \"engine\": {{\"schedule\": \"{}\", \"max_seqs\": {}, \"max_batched_tokens\": {}, \"chunk\": {}, "
             "\"block_tokens\": {}, \"concurrency\": {}}},\n",
             name_of(r.limits.schedule), r.limits.max_seqs, r.limits.max_batched_tokens, r.limits.chunk,
             r.limits.block_tokens, r.limits.concurrency);
  fmt::print(out,
             "  \"kv_cache\": {{\"tokens\": {}, \"blocks\": {}, \"bytes_per_token\": {}, \"weight_bytes\": {}, "
             "\"capacity_bytes\": {}, \"memory_utilization\": {}}},\n",
             r.limits.kv_tokens, r.run.kv_blocks, r.memory.kv_bytes_per_token, r.memory.weight_bytes,
             r.memory.capacity_bytes, json_number(r.memory_utilization));
  fmt::print(out, "  \"requests\": {},\n  \"input_tokens\": {},\n  \"output_tokens\": {},\n  \"duration_s\": {},\n",
             s.requests, s.input_tokens, s.output_tokens, json_number(s.duration_s));
  fmt::print(out, "  \"ttft_ms\": {},\n", json_distribution(s.ttft_ms, lo, hi));
  fmt::print(out, "  \"tpot_ms\": {},\n", json_distribution(s.tpot_ms, lo, hi));
  fmt::print(out, "  \"itl_ms\": {},\n", json_distribution(s.itl_ms, lo, hi));
  fmt::print(out, "  \"e2e_s\": {},\n", json_distribution(s.e2e_s, lo, hi));
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
  fmt::print(out, "  \"band\": {{\"low_ratio\": {}, \"high_ratio\": {}, \"coverage\": {}, \"basis\": {}}},\n",
             json_optional(lo), json_optional(hi), lo ? json_number(r.band_coverage) : "null",
             api::json_string(r.band_basis));
  fmt::print(
      out, "  \"kv_utilisation\": {{\"mean\": {}, \"peak\": {}}},\n  \"batch\": {{\"mean\": {}, \"max\": {}}},\n",
      json_number(s.kv_utilisation_mean), json_number(s.kv_utilisation_peak), json_number(s.batch_mean), s.batch_max);
  fmt::print(out, "  \"steps_taken\": {},\n  \"steps_simulated\": {},\n  \"preemptions\": {},\n", r.run.steps.size(),
             r.run.distinct_steps, r.run.preemptions);
  if (const std::optional<BucketError>& e = r.run.bucket_error) {
    fmt::print(out,
               "  \"step_cache\": {{\"mode\": \"bucket\", \"percent\": {}, \"error_samples\": {}, "
               "\"error_mean_abs\": {}, \"error_max_abs\": {}}},\n",
               r.limits.bucket_percent, e->samples, json_number(e->mean_abs), json_number(e->max_abs));
  } else {
    out << "  \"step_cache\": {\"mode\": \"exact\"},\n";
  }
  // Each request's TTFT, TPOT (null for one output token) and E2E, for CDFs (python3 -m g5sim plot).
  out << "  \"per_request\": [";
  for (std::size_t i = 0; i < r.run.requests.size(); ++i) {
    const RequestOutcome& q = r.run.requests[i];
    const std::string tpot = q.output_tokens > 1 ? json_number(static_cast<double>(q.finish_ps - q.first_token_ps) /
                                                               static_cast<double>(q.output_tokens - 1) / 1e9)
                                                 : "null";
    fmt::print(out, "{}\n    {{\"id\": {}, \"ttft_ms\": {}, \"tpot_ms\": {}, \"e2e_s\": {}}}", i == 0 ? "" : ",",
               api::json_string(q.id), json_number(static_cast<double>(q.first_token_ps - q.arrival_ps) / 1e9), tpot,
               json_number(static_cast<double>(q.finish_ps - q.arrival_ps) / 1e12));
  }
  out << "\n  ],\n";
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

void write_serve_perfetto(std::ostream& out, const ServeReport& r) {
  auto us = [](std::uint64_t ps) { return json_number(static_cast<double>(ps) / 1e6); };
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  out << R"(  {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "steps"}},)"
      << "\n";
  out << R"(  {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "requests"}})";
  const std::uint64_t instances =
      r.limits.prefill_instances > 0 ? r.limits.prefill_instances + r.limits.decode_instances : 1;
  for (std::uint64_t k = 0; k < instances; ++k) {
    const std::string name = r.limits.prefill_instances == 0 ? std::string("engine")
                             : k < r.limits.prefill_instances
                                 ? fmt::format("prefill instance {}", k)
                                 : fmt::format("decode instance {}", k - r.limits.prefill_instances);
    fmt::print(out,
               ",\n  {{\"ph\": \"M\", \"pid\": 1, \"tid\": {}, \"name\": \"thread_name\", \"args\": {{\"name\": {}}}}}",
               k, api::json_string(name));
  }
  for (std::size_t i = 0; i < r.run.steps.size(); ++i) {
    const StepLog& st = r.run.steps[i];
    fmt::print(out,
               ",\n  {{\"ph\": \"X\", \"pid\": 1, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"name\": \"{} seqs\", "
               "\"args\": {{\"step\": {}, \"prefill_tokens\": {}, \"decode_tokens\": {}, \"kv_blocks_used\": {}, "
               "\"waiting\": {}}}}}",
               st.instance, us(st.start_ps), us(st.duration_ps), st.sequences, i, st.prefill_tokens, st.decode_tokens,
               st.kv_blocks_used, st.waiting);
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

void write_serve_table(std::ostream& out, const ServeReport& r) {
  const ServeSummary& s = r.summary;
  const g5sim::Deployment& d = r.memory.deployment;
  fmt::print(out, "g5sim serve: {} on {} (tp {} ep {} dp {}, {} chips), {} requests, {} in / {} out tokens\n", r.model,
             r.chip, d.tp, d.ep, d.dp, r.chips, s.requests, s.input_tokens, s.output_tokens);
  if (r.limits.prefill_instances > 0) {
    const KvTransfer& t = r.limits.kv_transfer;
    fmt::print(
        out,
        "disagg        {} prefill + {} decode instances ({} chips); {} bytes of KV cache moved over {} ({} GB/s, "
        "{} ns)\n",
        r.limits.prefill_instances, r.limits.decode_instances, r.chips, r.run.kv_transfer_bytes, t.link,
        t.bandwidth_gb_per_s, t.latency_ns);
  }
  if (r.limits.mtp > 0) {
    fmt::print(
        out, "mtp           {} drafts a step, acceptance {} ({}): {:.3f} tokens per verify over {} verifies\n",
        r.limits.mtp, fmt::join(r.limits.accept, ","), r.limits.accept_drawn ? "drawn" : "expected",
        r.run.mtp_verifies > 0 ? static_cast<double>(r.run.mtp_tokens) / static_cast<double>(r.run.mtp_verifies) : 0.0,
        r.run.mtp_verifies);
  }
  fmt::print(out, "engine        {}max_seqs {}, max_batched_tokens {}, chunk {}, KV {} tokens ({} blocks of {})\n",
             r.limits.schedule == Schedule::prefill_first ? "prefill-first steps, " : "", r.limits.max_seqs,
             r.limits.max_batched_tokens, r.limits.chunk, r.limits.kv_tokens, r.run.kv_blocks, r.limits.block_tokens);
  fmt::print(out, "steps         {} taken, {} simulated, {} preemptions; duration {:.3f} s\n", r.run.steps.size(),
             r.run.distinct_steps, r.run.preemptions, s.duration_s);
  if (const std::optional<BucketError>& e = r.run.bucket_error) {
    fmt::print(out,
               "step cache    bucket:{}: {} bucketed steps simulated exactly differ by {:.2f} % on average, {:.2f} % "
               "at most\n",
               r.limits.bucket_percent, e->samples, 100 * e->mean_abs, 100 * e->max_abs);
  }
  fmt::print(out, "{:<13} {:>10} {:>10} {:>10} {:>10}\n", "metric", "mean", "p50", "p90", "p99");
  for (const auto& [name, dist] :
       {std::pair{"ttft_ms", &s.ttft_ms}, {"tpot_ms", &s.tpot_ms}, {"itl_ms", &s.itl_ms}, {"e2e_s", &s.e2e_s}}) {
    fmt::print(out, "{:<13} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f}\n", name, dist->mean, dist->p50, dist->p90,
               dist->p99);
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
               "energy        {:.3f} J (dynamic {:.3f}, static {:.3f}), {:.3f} mJ/token, {:.2f} tokens/J; "
               "{:.1f} W a chip on average{}\n",
               e->total_j, e->dynamic_j, e->static_j, e->joules_per_token * 1e3, e->tokens_per_joule, e->average_w,
               e->tdp_w ? fmt::format(" of {:.0f} W TDP", *e->tdp_w) : std::string(" (no TDP stated)"));
  }
  fmt::print(out, "kv cache      {:.1f} % used on average, {:.1f} % at peak; batch {:.1f} on average, {} at most\n",
             100 * s.kv_utilisation_mean, 100 * s.kv_utilisation_peak, s.batch_mean, s.batch_max);
  if (r.run.band_low_ratio) {
    fmt::print(out, "band          the step times' band: x{:.3f} .. x{:.3f} on every time above ({})\n",
               *r.run.band_low_ratio, *r.run.band_high_ratio, r.band_basis);
  } else {
    fmt::print(out, "band          {}\n", r.band_basis.empty() ? "none" : r.band_basis);
  }
}

}  // namespace serving
