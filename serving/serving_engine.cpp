#include "serving/serving_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>
#include <optional>
#include <random>
#include <tuple>
#include <utility>

#include "api/parallel_for.hpp"
#include "g5sim/run_options.hpp"
#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"
#include "models/run_limits.hpp"
#include "serving/step_bucketing.hpp"

namespace serving {

using api::parallel_for;
namespace {

constexpr std::uint64_t kNone = ~std::uint64_t{0};

std::uint64_t blocks_for(std::uint64_t tokens, std::uint64_t block_tokens) {
  return tokens / block_tokens + (tokens % block_tokens != 0 ? 1 : 0);
}

struct Live {
  std::uint64_t prompt = 0;  ///< tokens to compute before the next token: input + generated at preemption
  std::uint64_t computed = 0, generated = 0, blocks = 0;
  std::uint64_t last_token_ps = 0;
  double credit = 0;  ///< MTP, expected acceptance: the fraction of a token carried to the next step
  bool started = false;
  bool leaving = false;  ///< done on its instance this step (finished, or its cache in transfer)
};

void check_limits(const ServeLimits& l) {
  auto in_range = [](const char* field, std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
    if (v < lo || v > hi) throw hw::InputError(field, fmt::format("{} is outside {}..{}", v, lo, hi));
  };
  in_range("max_seqs", l.max_seqs, 1, kMaxServeSeqs);
  in_range("max_batched_tokens", l.max_batched_tokens, 1, kMaxBatchedTokens);
  in_range("chunk", l.chunk, 0, kMaxBatchedTokens);
  in_range("block_tokens", l.block_tokens, 1, kMaxBlockTokens);
  in_range("bucket_percent", l.bucket_percent, 0, 100);
  in_range("bucket_samples", l.bucket_samples, 0, 1u << 20);
  in_range("dp", l.dp, 1, models::kMaxDegree);
  in_range("jobs", l.jobs, 1, g5sim::run_limits().max_jobs);
  in_range("prefill_instances", l.prefill_instances, 0, kMaxServeInstances);
  in_range("decode_instances", l.decode_instances, 0, kMaxServeInstances);
  if ((l.prefill_instances == 0) != (l.decode_instances == 0)) {
    throw hw::InputError("disagg", "disaggregation needs at least one prefill and one decode instance");
  }
  if (l.prefill_instances > 0 && !(l.kv_transfer.bandwidth_gb_per_s > 0 && l.kv_transfer.latency_ns >= 0)) {
    throw hw::InputError("disagg", "disaggregation needs a KV transfer link with a positive bandwidth");
  }
  in_range("mtp", l.mtp, 0, kMaxMtpDrafts);
  if (l.mtp > 0) {
    if (l.accept.size() != 1 && l.accept.size() != l.mtp) {
      throw hw::InputError("accept", fmt::format("{} acceptance rates for {} drafts: give one, or one per draft",
                                                 l.accept.size(), l.mtp));
    }
    for (double p : l.accept) {
      if (!(p >= 0 && p <= 1)) throw hw::InputError("accept", fmt::format("{} is not a rate in [0, 1]", p));
    }
  }
  if (l.kv_tokens < l.block_tokens) {
    throw hw::InputError("kv_tokens", fmt::format("the KV cache holds {} tokens, less than one block of {}",
                                                  l.kv_tokens, l.block_tokens));
  }
}

}  // namespace

Schedule parse_schedule(const std::string& text) {
  if (text == "mixed") return Schedule::mixed;
  if (text == "prefill-first") return Schedule::prefill_first;
  throw hw::InputError("schedule", fmt::format("expected mixed or prefill-first, got '{}'", text));
}

std::string name_of(Schedule s) { return s == Schedule::mixed ? "mixed" : "prefill-first"; }

std::uint64_t KvTransfer::picoseconds(std::uint64_t bytes) const {
  // GB/s is bytes per nanosecond: bytes / bandwidth ns, x 1,000 ps.
  return static_cast<std::uint64_t>(
      std::llround(latency_ns * 1000.0 + static_cast<double>(bytes) * 1000.0 / bandwidth_gb_per_s));
}

namespace {

// One engine instance: its queue, its running requests, its KV blocks and its clock.
struct Instance {
  enum class Role { colocated, prefill, decode } role = Role::colocated;
  std::multimap<std::pair<std::uint64_t, std::uint64_t>, std::size_t> pending;  // (arrival, seq) -> request
  std::deque<std::size_t> waiting;                                              // arrived, head first
  std::vector<std::size_t> running;                                             // admission order
  std::uint64_t free_blocks = 0, now = 0;

  bool busy() const { return !running.empty() || !waiting.empty(); }
  /// When its next step can start, or nothing when it has nothing to do.
  std::optional<std::uint64_t> next_start() const {
    if (busy()) return now;
    if (pending.empty()) return std::nullopt;
    return std::max(now, pending.begin()->first.first);
  }
};

}  // namespace

ServeRun serve_requests(std::vector<ServeRequest> requests, const ServeLimits& limits, const StepTimer& timer,
                        const std::function<void(std::uint64_t, std::uint64_t)>& progress,
                        const StepTimer& draft_timer) {
  check_limits(limits);
  if (requests.empty()) throw hw::InputError("requests", "no requests to serve");
  const bool closed = limits.concurrency > 0;
  if (!closed) {
    std::stable_sort(requests.begin(), requests.end(),
                     [](const ServeRequest& a, const ServeRequest& b) { return a.arrival_ps < b.arrival_ps; });
  }
  const std::uint64_t chunk = limits.chunk == 0 ? limits.max_batched_tokens : limits.chunk;
  const bool disaggregated = limits.prefill_instances > 0;
  ServeRun run;
  run.kv_blocks = limits.kv_tokens / limits.block_tokens;
  for (const ServeRequest& r : requests) {
    // At its end: every token but the last in the cache, and a verify's drafts beside them.
    const std::uint64_t tokens = r.input_tokens + r.output_tokens - 1 + limits.mtp;
    const std::uint64_t need = blocks_for(tokens, limits.block_tokens);
    if (need > run.kv_blocks) {
      throw hw::InputError("requests",
                           fmt::format("request '{}' needs {} tokens of KV cache ({} blocks of {}) at its end, but the "
                                       "deployment holds {} blocks ({} tokens): it can never run",
                                       r.id, tokens, need, limits.block_tokens, run.kv_blocks, limits.kv_tokens));
    }
  }
  const std::size_t n = requests.size();
  std::vector<Live> live(n);
  run.requests.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    RequestOutcome& o = run.requests[i];
    o.id = requests[i].id;
    o.input_tokens = requests[i].input_tokens;
    o.output_tokens = requests[i].output_tokens;
    live[i].prompt = requests[i].input_tokens;
    if (closed) requests[i].arrival_ps = 0;
    o.arrival_ps = requests[i].arrival_ps;
  }

  // The instances: one colocated, or the prefill ones then the decode ones.
  std::vector<Instance> instances(disaggregated ? limits.prefill_instances + limits.decode_instances : 1);
  for (std::size_t k = 0; k < instances.size(); ++k) {
    instances[k].free_blocks = run.kv_blocks;
    if (disaggregated) {
      instances[k].role = k < limits.prefill_instances ? Instance::Role::prefill : Instance::Role::decode;
    }
  }
  const std::size_t entry_instances = disaggregated ? limits.prefill_instances : 1;
  std::uint64_t sequence = 0;     // arrival order among equal times
  std::uint64_t transferred = 0;  // requests sent to decode instances (round robin)
  // Requests arrive at the prefill (or the one) instances round robin, in arrival order.
  auto arrive = [&](std::size_t i, std::uint64_t at) {
    instances[i % entry_instances].pending.emplace(std::pair{at, sequence++}, i);
  };
  const std::size_t first_clients = closed ? std::min<std::size_t>(limits.concurrency, n) : n;
  for (std::size_t i = 0; i < first_clients; ++i) arrive(i, requests[i].arrival_ps);
  std::size_t next_client = first_clients;

  std::uint64_t finished = 0;
  std::map<std::string, StepTime> cache;
  std::vector<std::pair<std::uint64_t, StepGroups>> first_exact;  // bucketed steps: time, exact groups
  double band_low = 0, band_high = 0, time_sum = 0;

  // A step's time: its exact groups simulated once; with bucketing, its anchors' times (each
  // simulated once) interpolated. `prefix` keeps the draft module's steps apart in the cache; a
  // step that needed a new simulation and is not its own anchor is a candidate error sample.
  auto step_time = [&](const StepGroups& exact, const std::string& prefix, const StepTimer& simulate,
                       std::uint64_t verify_width) -> StepTime {
    auto cached = [&](const StepGroups& groups) -> const StepTime& {
      const std::string key = prefix + g5sim::mix_text(groups);
      auto it = cache.find(key);
      if (it == cache.end()) {
        it = cache.emplace(key, simulate(groups)).first;
        if (prefix.empty()) ++run.distinct_steps;
      }
      return it->second;
    };
    if (limits.bucket_percent == 0) return cached(exact);
    const std::vector<StepAnchor> anchors = bucketed_step(exact, limits.bucket_percent, limits.dp, verify_width);
    // The anchors not yet simulated, simulated at once on up to `jobs` threads (each its own slot:
    // the same times whatever the threads), then cached in the anchors' order.
    std::vector<const StepAnchor*> fresh;
    for (const StepAnchor& a : anchors) {
      if (cache.count(prefix + a.mix) == 0) fresh.push_back(&a);
    }
    std::vector<StepTime> times(fresh.size());
    parallel_for(fresh.size(), limits.jobs, [&](std::size_t i) { times[i] = simulate(fresh[i]->groups); });
    for (std::size_t i = 0; i < fresh.size(); ++i) {
      cache.emplace(prefix + fresh[i]->mix, times[i]);
      if (prefix.empty()) ++run.distinct_steps;
    }
    double ps = 0, low = 0, high = 0, pj = 0;
    bool banded = true;
    for (const StepAnchor& a : anchors) {
      const StepTime& t = cache.at(prefix + a.mix);
      ps += a.weight * static_cast<double>(t.ps);
      low += a.weight * static_cast<double>(t.band_low_ps);
      high += a.weight * static_cast<double>(t.band_high_ps);
      pj += a.weight * t.dynamic_pj;
      banded = banded && t.has_band;
    }
    const StepTime interpolated{static_cast<std::uint64_t>(std::llround(ps)), banded,
                                static_cast<std::uint64_t>(std::llround(low)),
                                static_cast<std::uint64_t>(std::llround(high)), pj};
    const bool own_anchor = anchors.size() == 1 && anchors[0].mix == g5sim::mix_text(exact);
    if (!fresh.empty() && !own_anchor && prefix.empty()) first_exact.emplace_back(interpolated.ps, exact);
    return interpolated;
  };
  bool every_step_banded = true;

  auto finish = [&](std::size_t i, std::uint64_t at) {
    run.requests[i].finish_ps = at;
    ++finished;
    if (progress) progress(finished, n);
    if (closed && next_client < n) {
      requests[next_client].arrival_ps = at;
      run.requests[next_client].arrival_ps = at;
      arrive(next_client++, at);
    }
  };

  // MTP: how many of a verify's drafts are accepted: drawn position by position (each accepted
  // with its chance given the ones before, until the first rejection), or the expected number
  // E = sum_j prod_{i<=j} accept_i carried as a running credit (whole tokens out, the fraction kept).
  std::mt19937_64 accept_rng(limits.accept_seed);
  double expected = 0;
  {
    double product = 1;
    for (std::uint64_t j = 0; j < limits.mtp; ++j) {
      product *= limits.accept.size() == 1 ? limits.accept[0] : limits.accept[j];
      expected += product;
    }
  }
  auto accepted_drafts = [&](Live& l) -> std::uint64_t {
    std::uint64_t a = 0;
    if (limits.accept_drawn) {
      while (a < limits.mtp) {
        const double p = limits.accept.size() == 1 ? limits.accept[0] : limits.accept[a];
        if (unit_draw(accept_rng) >= p) break;
        ++a;
      }
      return a;
    }
    l.credit += expected;
    a = std::min<std::uint64_t>(limits.mtp, static_cast<std::uint64_t>(std::floor(l.credit)));
    l.credit -= static_cast<double>(a);
    return a;
  };

  while (finished < n) {
    // The instance whose next step starts first (then the lowest index): a step can only add
    // arrivals after its own start, so every arrival before a step's start is known by then.
    std::size_t k = instances.size();
    std::uint64_t start = 0;
    for (std::size_t j = 0; j < instances.size(); ++j) {
      const std::optional<std::uint64_t> s = instances[j].next_start();
      if (s && (k == instances.size() || *s < start)) k = j, start = *s;
    }
    if (k == instances.size()) throw std::logic_error("serve: requests left but no instance has work");
    Instance& in = instances[k];
    in.now = start;
    while (!in.pending.empty() && in.pending.begin()->first.first <= in.now) {
      in.waiting.push_back(in.pending.begin()->second);
      in.pending.erase(in.pending.begin());
    }
    if (run.steps.size() == std::min(limits.max_steps, kMaxServeSteps)) {
      throw hw::InputError("requests", fmt::format("more than {} steps", std::min(limits.max_steps, kMaxServeSteps)));
    }
    StepLog log;
    log.instance = k;
    log.start_ps = in.now;
    log.waiting = in.waiting.size();
    std::uint64_t budget = limits.max_batched_tokens;
    std::vector<std::pair<std::size_t, std::uint64_t>> scheduled;  // request, q_len
    // A prompt: its next chunk; a decode: its last token and the MTP drafts it verifies.
    auto wants = [&](const Live& l) {
      return l.computed < l.prompt ? std::min({l.prompt - l.computed, chunk, budget}) : 1 + limits.mtp;
    };
    // Prefill-first: a step of prompts when one can run (a running one's next chunk, or the
    // oldest arrival's first chunk with its blocks free), else a step of decodes.
    bool prompts_only = false, decodes_only = false;
    if (limits.schedule == Schedule::prefill_first) {
      for (const std::size_t i : in.running) prompts_only = prompts_only || live[i].computed < live[i].prompt;
      if (!prompts_only && !in.waiting.empty() && in.running.size() < limits.max_seqs) {
        const Live& w = live[in.waiting.front()];
        prompts_only = blocks_for(w.computed + wants(w), limits.block_tokens) <= in.free_blocks;
      }
      decodes_only = !prompts_only;
    }
    bool preempted = false;
    for (std::size_t r = 0; r < in.running.size() && budget > 0; ++r) {
      const std::size_t i = in.running[r];
      Live& l = live[i];
      if (prompts_only && l.computed >= l.prompt) continue;  // decodes wait for the prompts
      const std::uint64_t q = wants(l);
      const std::uint64_t need = blocks_for(l.computed + q, limits.block_tokens) - l.blocks;
      bool self_preempted = false;
      while (in.free_blocks < need) {
        // The newest running request gives its blocks back and recomputes later.
        const std::size_t victim = in.running.back();
        in.running.pop_back();
        Live& v = live[victim];
        in.free_blocks += v.blocks;
        v.blocks = 0;
        v.computed = 0;
        v.prompt = requests[victim].input_tokens + v.generated;
        ++run.requests[victim].preemptions;
        ++run.preemptions;
        in.waiting.push_front(victim);
        preempted = true;
        if (victim == i) {
          self_preempted = true;
          break;
        }
      }
      if (self_preempted) break;
      in.free_blocks -= need;
      l.blocks += need;
      scheduled.emplace_back(i, q);
      budget -= q;
    }
    while (!preempted && !decodes_only && !in.waiting.empty() && in.running.size() < limits.max_seqs && budget > 0) {
      const std::size_t i = in.waiting.front();
      Live& l = live[i];
      const std::uint64_t q = wants(l);
      const std::uint64_t need = blocks_for(l.computed + q, limits.block_tokens);
      if (need > in.free_blocks) break;
      in.waiting.pop_front();
      in.free_blocks -= need;
      l.blocks = need;
      in.running.push_back(i);
      if (!l.started) run.requests[i].first_step_ps = in.now, l.started = true;
      scheduled.emplace_back(i, q);
      budget -= q;
    }
    if (scheduled.empty()) {
      // Only preemptions this step (every running request gave its blocks back): the next step
      // admits from the queue. A queue that cannot be admitted with all blocks free cannot happen:
      // every request fits alone (checked above).
      continue;
    }

    // The step: groups of equal (q_len, history), sorted.
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> counts;
    for (const auto& [i, q] : scheduled) {
      ++counts[{q, live[i].computed}];
      (live[i].computed < live[i].prompt ? log.prefill_tokens : log.decode_tokens) += q;
    }
    StepGroups exact;
    for (const auto& [key, count] : counts) exact.push_back(g5sim::SequenceRecord{count, key.first, key.second, ""});
    const StepTime d = step_time(exact, "", timer, 1 + limits.mtp);
    if (d.ps == 0) throw std::logic_error("serve: a step took no time");
    std::uint64_t step_ps = d.ps;
    run.dynamic_energy_pj += d.dynamic_pj;
    if (limits.mtp > 0 && draft_timer && log.decode_tokens > 0) {
      // The drafts: mtp passes of the draft module over the step's decodes (one token each).
      std::map<std::uint64_t, std::uint64_t> histories;  // of the decodes
      for (const auto& [i, q] : scheduled) {
        if (live[i].computed == live[i].prompt) ++histories[live[i].computed];
      }
      StepGroups drafts;
      for (const auto& [history, count] : histories) drafts.push_back(g5sim::SequenceRecord{count, 1, history, ""});
      if (!drafts.empty()) {
        const StepTime draft = step_time(drafts, "draft ", draft_timer, 1);
        run.dynamic_energy_pj += draft.dynamic_pj * static_cast<double>(limits.mtp);
        step_ps = hw::checked("the step's time in picoseconds",
                              [&] { return (hw::Count(draft.ps) * limits.mtp + step_ps).value(); });
      }
    }
    log.duration_ps = step_ps;
    log.sequences = scheduled.size();
    log.kv_blocks_used = run.kv_blocks - in.free_blocks;
    time_sum += static_cast<double>(step_ps);
    if (d.has_band) {
      // The band's ratios of the verify step, applied to the whole step.
      band_low += static_cast<double>(step_ps) * static_cast<double>(d.band_low_ps) / static_cast<double>(d.ps);
      band_high += static_cast<double>(step_ps) * static_cast<double>(d.band_high_ps) / static_cast<double>(d.ps);
    } else {
      every_step_banded = false;
    }
    in.now = hw::checked("the serve's time in picoseconds", [&] { return (hw::Count(in.now) + step_ps).value(); });
    const std::uint64_t end = in.now;
    run.steps.push_back(log);

    // A request done on this instance gives its blocks back and leaves its running list.
    auto leave = [&](Live& l) {
      in.free_blocks += l.blocks;
      l.blocks = 0;
      l.leaving = true;
    };

    // The step's tokens, at its end.
    for (const auto& [i, q] : scheduled) {
      Live& l = live[i];
      RequestOutcome& o = run.requests[i];
      if (limits.mtp > 0 && l.computed == l.prompt) {
        // A verify: the fed token and the accepted drafts stay in the cache, and as many tokens
        // come out (the last one the target's own); the rejected positions' blocks go back.
        const std::uint64_t tokens = std::min(1 + accepted_drafts(l), o.output_tokens - l.generated);
        l.computed += tokens;
        l.generated += tokens;
        l.prompt = l.computed;
        const std::uint64_t keep = blocks_for(l.computed, limits.block_tokens);
        in.free_blocks += l.blocks - keep;
        l.blocks = keep;
        o.itl_ps.push_back(end - l.last_token_ps);
        l.last_token_ps = end;
        run.mtp_tokens += tokens;
        ++run.mtp_verifies;
        if (l.generated == o.output_tokens) {
          leave(l);
          finish(i, end);
        }
        continue;
      }
      l.computed += q;
      if (l.computed < l.prompt) continue;  // a prompt chunk: no token yet
      ++l.generated;
      l.prompt = l.computed;  // decoding: each step feeds the token before
      const bool leaves = in.role == Instance::Role::prefill && l.generated < o.output_tokens;
      if (leaves) {
        // Its prompt's KV cache moves to a decode instance; the first token comes with it.
        const std::uint64_t bytes = hw::checked("the KV transfer bytes", [&] {
          return (hw::Count(l.computed) * limits.kv_transfer.bytes_per_token).value();
        });
        const std::uint64_t transfer = limits.kv_transfer.picoseconds(bytes);
        o.kv_transfer_bytes += bytes;
        run.kv_transfer_bytes += bytes;
        const std::uint64_t arrival =
            hw::checked("the serve's time in picoseconds", [&] { return (hw::Count(end) + transfer).value(); });
        if (l.generated == 1) o.first_token_ps = arrival;
        l.last_token_ps = arrival;
        leave(l);  // it holds blocks on no instance until a decode one admits it
        Instance& to = instances[limits.prefill_instances + transferred++ % limits.decode_instances];
        to.pending.emplace(std::pair{arrival, sequence++}, i);
        continue;
      }
      if (l.generated == 1) {
        o.first_token_ps = end;
      } else {
        o.itl_ps.push_back(end - l.last_token_ps);
      }
      l.last_token_ps = end;
      if (l.generated == o.output_tokens) {
        leave(l);
        finish(i, end);
      }
    }
    in.running.erase(std::remove_if(in.running.begin(), in.running.end(),
                                    [&](std::size_t i) { return std::exchange(live[i].leaving, false); }),
                     in.running.end());
  }
  if (limits.bucket_percent > 0) {
    // Evenly spread samples of the steps that bucketing changed, simulated exactly.
    BucketError e;
    const std::size_t m = first_exact.size();
    const std::size_t samples = std::min<std::size_t>(m, limits.bucket_samples);
    std::vector<StepTime> exact(samples);
    parallel_for(samples, limits.jobs, [&](std::size_t s) { exact[s] = timer(first_exact[s * m / samples].second); });
    for (std::size_t s = 0; s < samples; ++s) {
      const std::uint64_t bucketed_ps = first_exact[s * m / samples].first;
      const double error = std::abs(static_cast<double>(bucketed_ps) - static_cast<double>(exact[s].ps)) /
                           static_cast<double>(exact[s].ps);
      e.mean_abs += error;
      e.max_abs = std::max(e.max_abs, error);
      ++e.samples;
    }
    if (e.samples > 0) e.mean_abs /= static_cast<double>(e.samples);
    run.bucket_error = e;
  }
  if (every_step_banded && time_sum > 0) {
    run.band_low_ratio = band_low / time_sum;
    run.band_high_ratio = band_high / time_sum;
  }
  return run;
}

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
  std::vector<double> ttft, tpot, itl, e2e, per_user;
  std::uint64_t first_arrival = kNone, last_finish = 0;
  for (const RequestOutcome& r : run.requests) {
    s.input_tokens += r.input_tokens;
    s.output_tokens += r.output_tokens;
    first_arrival = std::min(first_arrival, r.arrival_ps);
    last_finish = std::max(last_finish, r.finish_ps);
    const double t = static_cast<double>(r.first_token_ps - r.arrival_ps) / 1e9;
    ttft.push_back(t);
    e2e.push_back(static_cast<double>(r.finish_ps - r.arrival_ps) / 1e12);
    bool met = !slo_ttft_ms || t <= *slo_ttft_ms;
    if (r.output_tokens > 1) {
      const double span_ps = static_cast<double>(r.finish_ps - r.first_token_ps);
      const double p = span_ps / static_cast<double>(r.output_tokens - 1) / 1e9;
      tpot.push_back(p);
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
    const double used = static_cast<double>(step.kv_blocks_used) / static_cast<double>(run.kv_blocks);
    kv += used * d;
    batch += static_cast<double>(step.sequences) * d;
    s.kv_utilisation_peak = std::max(s.kv_utilisation_peak, used);
    s.batch_max = std::max(s.batch_max, step.sequences);
  }
  if (busy > 0) {
    s.kv_utilisation_mean = kv / busy;
    s.batch_mean = batch / busy;
  }
  return s;
}

}  // namespace serving
