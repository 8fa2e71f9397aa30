// A serve's metrics from its requests' times and steps (the definitions in
// serving/serving_engine.hpp, "Metrics").

#include <algorithm>
#include <cmath>
#include <numeric>

#include "serving/serving_engine.hpp"

namespace serving {
namespace {

// Prefix caching's share of the prompts and what it did to TTFT.
void summarise_prefix_reuse(const ServeRun& run, ServeSummary& s) {
  for (const StepLog& step : run.steps) s.prefix_computed_tokens += step.prefill_tokens;
  double hit_sum = 0, miss_sum = 0;
  std::uint64_t misses = 0;
  for (const RequestOutcome& r : run.requests) {
    s.prefix_hit_tokens += r.cached_tokens;
    const double ttft = static_cast<double>(r.first_token_ps - r.arrival_ps) / 1e9;
    if (r.cached_tokens > 0) {
      ++s.prefix_requests_hit;
      hit_sum += ttft;
    } else {
      ++misses;
      miss_sum += ttft;
    }
  }
  const std::uint64_t prompts = s.prefix_hit_tokens + s.prefix_computed_tokens;
  s.prefix_hit_rate = prompts > 0 ? static_cast<double>(s.prefix_hit_tokens) / static_cast<double>(prompts) : 0;
  s.ttft_hit_ms = s.prefix_requests_hit > 0 ? hit_sum / static_cast<double>(s.prefix_requests_hit) : 0;
  s.ttft_miss_ms = misses > 0 ? miss_sum / static_cast<double>(misses) : 0;
}

constexpr std::uint64_t kNone = ~std::uint64_t{0};

}  // namespace

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (rank - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Distribution distribution(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.count = values.size();
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  d.p50 = percentile(values, 50);
  d.p90 = percentile(values, 90);
  d.p99 = percentile(values, 99);
  d.max = values.back();
  return d;
}

ServeSummary summarize(const ServeRun& run, std::uint64_t chips, std::optional<double> slo_ttft_ms,
                       std::optional<double> slo_tpot_ms) {
  ServeSummary s;
  s.requests = run.requests.size();
  s.slo_ttft_ms = slo_ttft_ms;
  s.slo_tpot_ms = slo_tpot_ms;
  std::vector<double> ttft, tpot, itl, e2e, e2el, per_user;
  double ttft_runtime = 0, tpot_runtime = 0;
  std::uint64_t first_arrival = kNone, last_finish = 0;
  for (const RequestOutcome& r : run.requests) {
    s.input_tokens += r.input_tokens;
    s.output_tokens += r.output_tokens;
    first_arrival = std::min(first_arrival, r.arrival_ps);
    last_finish = std::max(last_finish, r.finish_ps);
    const double t = static_cast<double>(r.first_token_ps - r.arrival_ps) / 1e9;
    ttft.push_back(t);
    ttft_runtime += static_cast<double>(r.ttft_runtime_ps) / 1e9;
    e2e.push_back(static_cast<double>(r.finish_ps - r.arrival_ps) / 1e12);
    e2el.push_back(static_cast<double>(r.finish_ps - r.arrival_ps) / 1e9);
    bool met = !slo_ttft_ms || t <= *slo_ttft_ms;
    if (r.output_tokens > 1) {
      const double span_ps = static_cast<double>(r.finish_ps - r.first_token_ps);
      const double p = span_ps / static_cast<double>(r.output_tokens - 1) / 1e9;
      tpot.push_back(p);
      tpot_runtime += static_cast<double>(r.decode_runtime_ps) / static_cast<double>(r.output_tokens - 1) / 1e9;
      per_user.push_back(static_cast<double>(r.output_tokens - 1) / (span_ps / 1e12));
      met = met && (!slo_tpot_ms || p <= *slo_tpot_ms);
    }
    for (std::uint64_t gap : r.itl_ps) itl.push_back(static_cast<double>(gap) / 1e9);
    if (met) ++s.slo_met;
  }
  s.duration_s = static_cast<double>(last_finish - first_arrival) / 1e12;
  s.ttft_ms = distribution(ttft);
  s.tpot_ms = distribution(tpot);
  s.itl_ms = distribution(itl);
  s.e2e_s = distribution(e2e);
  s.e2el_ms = distribution(e2el);
  if (run.has_runtime) {
    // The means split: each request's runtime share, averaged as the metric is.
    s.has_runtime = true;
    s.ttft_runtime_ms = ttft.empty() ? 0 : ttft_runtime / static_cast<double>(ttft.size());
    s.ttft_chip_ms = s.ttft_ms.mean - s.ttft_runtime_ms;
    s.tpot_runtime_ms = tpot.empty() ? 0 : tpot_runtime / static_cast<double>(tpot.size());
    s.tpot_chip_ms = s.tpot_ms.mean - s.tpot_runtime_ms;
  }
  if (!per_user.empty()) {
    s.output_tokens_per_s_per_user =
        std::accumulate(per_user.begin(), per_user.end(), 0.0) / static_cast<double>(per_user.size());
  }
  if (s.duration_s > 0) {
    s.requests_per_s = static_cast<double>(s.requests) / s.duration_s;
    s.input_tokens_per_s = static_cast<double>(s.input_tokens) / s.duration_s;
    s.output_tokens_per_s = static_cast<double>(s.output_tokens) / s.duration_s;
    s.goodput_requests_per_s = static_cast<double>(s.slo_met) / s.duration_s;
  }
  s.input_tokens_per_s_per_chip = s.input_tokens_per_s / static_cast<double>(chips);
  s.output_tokens_per_s_per_chip = s.output_tokens_per_s / static_cast<double>(chips);
  double busy = 0, kv = 0, batch = 0;
  for (const StepLog& step : run.steps) {
    const double d = static_cast<double>(step.duration_ps);
    busy += d;
    // Of its instance's cache (a decode chip of its own has its own size).
    const std::uint64_t blocks = step.kv_blocks > 0 ? step.kv_blocks : run.kv_blocks;
    const double used = static_cast<double>(step.kv_blocks_used) / static_cast<double>(blocks);
    kv += used * d;
    batch += static_cast<double>(step.sequences) * d;
    s.kv_utilisation_peak = std::max(s.kv_utilisation_peak, used);
    s.batch_max = std::max(s.batch_max, step.sequences);
  }
  if (busy > 0) {
    s.kv_utilisation_mean = kv / busy;
    s.batch_mean = batch / busy;
  }
  summarise_prefix_reuse(run, s);
  return s;
}

}  // namespace serving
