#include "serving/auto_step_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "api/parallel_for.hpp"

namespace serving {
namespace {

// The serve's first phase asked for more distinct steps than the budget.
struct OverBudget {};

// Every step this serve simulated, by its chip and groups: what the rounds reuse and the checks
// compare with. Its timers run on up to `jobs` threads at once (a bucketed step's new anchors).
class SimulatedSteps {
 public:
  explicit SimulatedSteps(const std::vector<ChipSteps>& chips) : chips_(chips) {}

  /// The serve's chips, each timed through this record (`budget` steps at most over every chip,
  /// 0: no bound); their hooks know what it holds and record the steps taken in `taken`.
  std::vector<ChipSteps> timers(std::uint64_t budget, std::vector<StepHooks::Taken>* taken) {
    std::vector<ChipSteps> out;
    for (std::size_t k = 0; k < chips_.size(); ++k) {
      ChipSteps c;
      c.timer = [this, budget, k](const StepGroups& groups) { return timed(k, groups, false, budget); };
      if (chips_[k].draft_timer) {
        c.draft_timer = [this, k](const StepGroups& groups) { return timed(k, groups, true, 0); };
      }
      c.hooks.known = [this, k](const StepGroups& groups, bool draft) { return known(k, groups, draft); };
      c.hooks.taken = taken;
      c.hooks.prefetch = chips_[k].hooks.prefetch;  // the exact passes' steps ahead
      out.push_back(std::move(c));
    }
    return out;
  }
  std::optional<StepTime> known(std::size_t chip, const StepGroups& groups, bool draft) const {
    const Key key = key_of(chip, groups);
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto& steps = draft ? drafts_ : steps_;
    const auto it = steps.find(key);
    if (it == steps.end()) return std::nullopt;
    return it->second;
  }
  std::uint64_t size() const { return steps_.size(); }
  /// The distinct steps of `taken` not simulated yet.
  std::uint64_t unknown(const std::vector<StepHooks::Taken>& taken) const {
    std::set<Key> left;
    for (const StepHooks::Taken& t : taken) {
      Key key = key_of(t.chip, t.groups);
      if (steps_.count(key) == 0) left.insert(std::move(key));
    }
    return left.size();
  }

 private:
  // A step's groups as numbers (what its mix text says, without formatting it: a warm serve looks
  // up every step it takes), after its chip's index when that is not the first.
  using Key = std::vector<std::array<std::uint64_t, 4>>;
  static Key key_of(std::size_t chip, const StepGroups& groups) {
    Key key;
    key.reserve(groups.size() + 1);
    if (chip > 0) key.push_back({chip, ~std::uint64_t{0}, ~std::uint64_t{0}, ~std::uint64_t{0}});
    for (const g5sim::SequenceRecord& g : groups) key.push_back({g.count, g.q_len, g.history, g.path == "decode"});
    return key;
  }

  StepTime timed(std::size_t chip, const StepGroups& groups, bool draft, std::uint64_t budget) {
    Key key = key_of(chip, groups);
    auto& steps = draft ? drafts_ : steps_;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (const auto it = steps.find(key); it != steps.end()) return it->second;
      if (budget > 0 && !draft && steps.size() >= budget) throw OverBudget{};
    }
    const StepTime t = draft ? chips_[chip].draft_timer(groups) : chips_[chip].timer(groups);
    const std::lock_guard<std::mutex> lock(mutex_);
    steps.emplace(std::move(key), t);
    return t;
  }

  const std::vector<ChipSteps>& chips_;
  mutable std::mutex mutex_;
  std::map<Key, StepTime> steps_, drafts_;
};

// Adds 1 to the weight of every step (by start) in [from, to): a difference array over the steps
// in start order.
class SpanCounter {
 public:
  explicit SpanCounter(const std::vector<StepLog>& steps) : order_(steps.size()), diff_(steps.size() + 1, 0) {
    std::iota(order_.begin(), order_.end(), std::size_t{0});
    std::stable_sort(order_.begin(), order_.end(),
                     [&](std::size_t a, std::size_t b) { return steps[a].start_ps < steps[b].start_ps; });
    for (std::size_t i : order_) starts_.push_back(steps[i].start_ps);
  }
  void add(std::uint64_t from, std::uint64_t to) {
    const auto lo = std::lower_bound(starts_.begin(), starts_.end(), from) - starts_.begin();
    const auto hi = std::lower_bound(starts_.begin(), starts_.end(), to) - starts_.begin();
    if (lo >= hi) return;
    ++diff_[static_cast<std::size_t>(lo)];
    --diff_[static_cast<std::size_t>(hi)];
  }
  std::vector<std::uint64_t> weights() const {
    std::vector<std::uint64_t> w(order_.size(), 0);
    std::int64_t running = 0;
    for (std::size_t k = 0; k < order_.size(); ++k) {
      running += diff_[k];
      w[order_[k]] = static_cast<std::uint64_t>(running);
    }
    return w;
  }

 private:
  std::vector<std::size_t> order_;
  std::vector<std::uint64_t> starts_;
  std::vector<std::int64_t> diff_;
};

// `count` step indices drawn with probability `chance` (a distribution over the steps); the first
// n of a larger count are those of count n.
std::vector<std::size_t> draw(const std::vector<double>& chance, std::uint64_t seed, std::uint64_t count) {
  std::vector<double> cumulative(chance.size());
  double total = 0;
  for (std::size_t i = 0; i < chance.size(); ++i) cumulative[i] = total += chance[i];
  std::vector<std::size_t> out;
  if (!(total > 0)) return out;
  std::mt19937_64 generator(seed);  // its sequence is the standard's: the same draws everywhere
  for (std::uint64_t k = 0; k < count; ++k) {
    // 53 random bits as a fraction of the total (the same doubles everywhere, unlike the
    // library's distributions).
    const double u = static_cast<double>(generator() >> 11) * 0x1.0p-53 * total;
    const auto at = std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin();
    out.push_back(std::min(static_cast<std::size_t>(at), chance.size() - 1));
  }
  return out;
}

const char* const kStrata[] = {"mean_step", "ttft_mean", "ttft_p50", "ttft_p99", "tpot_mean", "tpot_p50", "tpot_p99"};

// Each stratum's chance of a step, w_s d_s / sum w d (all zeros for a stratum of no weight).
std::vector<std::vector<double>> chances(const ServeRun& run, const std::vector<std::vector<std::uint64_t>>& strata) {
  std::vector<std::vector<double>> out;
  for (const std::vector<std::uint64_t>& w : strata) {
    std::vector<double> p(w.size());
    double total = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      total += p[i] = static_cast<double>(w[i]) * static_cast<double>(run.steps[i].duration_ps);
    }
    for (double& x : p) x = total > 0 ? x / total : 0;
    out.push_back(std::move(p));
  }
  return out;
}

// The round's check (the header's step 3): its strata's errors from `draws_count` draws; the samples
// simulated through `steps`.
std::vector<g5sim::StepCacheCheck> check(const ServeRun& run, const std::vector<StepHooks::Taken>& taken,
                                         SimulatedSteps& steps, const std::vector<ChipSteps>& exact,
                                         std::uint64_t round, unsigned jobs, double bound, std::uint64_t draws_count) {
  const std::vector<std::vector<double>> p = chances(run, strata_weights(run));
  // One pool for every stratum, drawn from their even mixture.
  std::vector<double> mixture(run.steps.size(), 0);
  double strata = 0;
  for (const std::vector<double>& pk : p) {
    if (std::any_of(pk.begin(), pk.end(), [](double x) { return x > 0; })) {
      ++strata;
      for (std::size_t i = 0; i < pk.size(); ++i) mixture[i] += pk[i];
    }
  }
  for (double& q : mixture) q /= std::max(1.0, strata);
  const std::vector<std::size_t> drawn = draw(mixture, 0x9e3779b97f4a7c15ULL * (round + 1), draws_count);
  // Steps to simulate: (chip, mix text) -> a step index.
  std::map<std::pair<std::size_t, std::string>, std::size_t> fresh;
  for (std::size_t i : drawn) {
    const StepHooks::Taken& t = taken[i];
    if (!steps.known(t.chip, t.groups, false)) fresh.emplace(std::pair{t.chip, g5sim::mix_text(t.groups)}, i);
  }
  std::vector<std::size_t> order;
  for (const auto& [key, i] : fresh) order.push_back(i);
  api::parallel_for(order.size(), jobs, [&](std::size_t j) {
    const StepHooks::Taken& t = taken[order[j]];
    exact[t.chip].timer(t.groups);
  });
  // Each drawn step's exact time, looked up once for every stratum.
  std::vector<std::uint64_t> exact_ps;
  for (std::size_t i : drawn) exact_ps.push_back(steps.known(taken[i].chip, taken[i].groups, false)->ps);
  std::vector<g5sim::StepCacheCheck> out;
  for (std::size_t k = 0; k < p.size(); ++k) {
    std::vector<Draw> draws;
    for (std::size_t j = 0; j < drawn.size(); ++j) {
      const std::size_t i = drawn[j];
      if (p[k][i] > 0) draws.push_back({taken[i].ps, exact_ps[j], run.steps[i].duration_ps, p[k][i] / mixture[i]});
    }
    if (draws.empty()) continue;
    const StratumError e = stratum_error(draws);
    // A tail's bound is three times the serve's: its requests are few, its steps the chunks'.
    const bool tail = std::string_view(kStrata[k]).ends_with("_p99");
    out.push_back({kStrata[k], draws.size(), e.error, e.standard_error, (tail ? 3 : 1) * bound});
  }
  return out;
}

// The largest |error| of the checks, each over its bound (1 or less: every check met).
double largest_error(const std::vector<g5sim::StepCacheCheck>& checks) {
  double largest = 0;
  for (const g5sim::StepCacheCheck& c : checks) largest = std::max(largest, std::abs(c.error) * 100 / c.bound_percent);
  return largest;
}

}  // namespace

bool miss_within_noise(const std::vector<g5sim::StepCacheCheck>& checks) {
  return std::any_of(checks.begin(), checks.end(),
                     [](const g5sim::StepCacheCheck& c) { return std::abs(c.error) * 100 > c.bound_percent; }) &&
         std::all_of(checks.begin(), checks.end(), [](const g5sim::StepCacheCheck& c) {
           return (std::abs(c.error) - c.standard_error) * 100 <= c.bound_percent;
         });
}

StratumError stratum_error(const std::vector<Draw>& draws) {
  StratumError out;
  // x = (m - e) / d for each draw, weighed by r = p / q (the stratum's chance of the step over the
  // pool's): x^ = sum r x / sum r estimates sum w (m - e) / sum w d; over the exact duration,
  // x^ / (1 - x^). Its variance: sum r^2 (x - x^)^2 / (sum r)^2.
  double weights = 0, sum = 0;
  for (const Draw& d : draws) {
    weights += d.ratio, sum += d.ratio * d.off();
  }
  if (!(weights > 0)) return out;
  const double mean = sum / weights;
  double spread = 0;
  for (const Draw& d : draws) {
    spread += d.ratio * d.ratio * (d.off() - mean) * (d.off() - mean);
  }
  out.error = mean / (1 - mean);
  out.standard_error = std::sqrt(spread) / weights / (1 - mean);
  return out;
}

std::vector<std::vector<std::uint64_t>> strata_weights(const ServeRun& run) {
  // Requests ranked by a metric: (value, request), ascending, ties by request.
  std::vector<std::pair<double, std::size_t>> ttft, tpot;
  for (std::size_t r = 0; r < run.requests.size(); ++r) {
    const RequestOutcome& o = run.requests[r];
    ttft.emplace_back(static_cast<double>(o.first_token_ps - o.arrival_ps), r);
    if (o.output_tokens > 1) {
      tpot.emplace_back(static_cast<double>(o.finish_ps - o.first_token_ps) / static_cast<double>(o.output_tokens - 1),
                        r);
    }
  }
  std::stable_sort(ttft.begin(), ttft.end());
  std::stable_sort(tpot.begin(), tpot.end());
  // The steps the requests ranked lo .. hi - 1 span: from arrival (TTFT) or first token (TPOT).
  auto spanned = [&](const std::vector<std::pair<double, std::size_t>>& ranked, std::size_t lo, std::size_t hi,
                     bool first_token) {
    SpanCounter counter(run.steps);
    for (std::size_t k = lo; k < hi && k < ranked.size(); ++k) {
      const RequestOutcome& o = run.requests[ranked[k].second];
      if (first_token) {
        counter.add(o.arrival_ps, o.first_token_ps);
      } else {
        counter.add(o.first_token_ps, o.finish_ps);
      }
    }
    return counter.weights();
  };
  // All, the middle tenth (at least the median's request) and the slowest fiftieth (at least one).
  auto three = [&](const std::vector<std::pair<double, std::size_t>>& ranked, bool first_token) {
    const std::size_t n = ranked.size();
    const std::size_t mid_lo = n * 45 / 100, mid_hi = std::max(mid_lo + 1, (n * 55 + 99) / 100);
    return std::array<std::vector<std::uint64_t>, 3>{
        spanned(ranked, 0, n, first_token), spanned(ranked, mid_lo, mid_hi, first_token),
        spanned(ranked, n == 0 ? 0 : std::min(n - 1, n * 98 / 100), n, first_token)};
  };
  std::vector<std::vector<std::uint64_t>> out;
  out.emplace_back(run.steps.size(), 1);
  for (auto& w : three(ttft, true)) out.push_back(std::move(w));
  for (auto& w : three(tpot, false)) out.push_back(std::move(w));
  return out;
}

ServeRun serve_auto(const std::vector<ServeRequest>& requests, const ServeSettings& settings, ServeSetup setup,
                    const StepTimer& timer, const std::function<void(const g5sim::ServeProgress&)>& progress,
                    const StepTimer& draft_timer, const StepPrefetch& prefetch) {
  std::vector<ChipSteps> chips{ChipSteps{timer, draft_timer, {}}};
  chips[0].hooks.prefetch = prefetch;
  return serve_auto(requests, settings, std::move(setup), chips, progress);
}

ServeRun serve_auto(const std::vector<ServeRequest>& requests, const ServeSettings& settings, ServeSetup setup,
                    const std::vector<ChipSteps>& chips,
                    const std::function<void(const g5sim::ServeProgress&)>& progress) {
  SimulatedSteps steps(chips);
  g5sim::AutoStepCache report;
  report.bound_percent = setup.auto_percent;
  report.exact_budget = kExactBudget;
  // Each pass tells its progress under its own name; the exact pass after rounds, its steps to
  // simulate.
  auto staged = [&](std::string stage,
                    std::uint64_t to_simulate = 0) -> std::function<void(const g5sim::ServeProgress&)> {
    if (!progress) return {};
    // The pass begins: nothing done yet (its pace counts from here).
    progress(g5sim::ServeProgress{0, requests.size(), 0, stage, 0, to_simulate});
    return [&progress, stage = std::move(stage), to_simulate](const g5sim::ServeProgress& p) {
      g5sim::ServeProgress named = p;
      named.stage = stage;
      named.to_simulate = to_simulate;
      progress(named);
    };
  };
  try {
    setup.bucket_percent = 0;
    ServeRun run = serve_requests(requests, settings, setup, steps.timers(kExactBudget, nullptr),
                                  staged(fmt::format("exact if at most {} distinct steps", kExactBudget)));
    report.exact = true;
    run.auto_cache = report;
    return run;
  } catch (const OverBudget&) {
  }
  setup.bucket_samples = 0;
  double last_largest = 0;  // the last round's largest error over its bound
  for (std::uint64_t percent = kFirstGridPercent;; percent = std::max(kFinestGridPercent, percent / 2)) {
    setup.bucket_percent = percent;
    std::vector<StepHooks::Taken> taken;
    const std::vector<ChipSteps> verify = steps.timers(0, &taken);
    ServeRun run = serve_requests(
        requests, settings, setup, verify,
        staged(fmt::format("round {} of at most {}, {} % grid", report.rounds + 1, max_auto_rounds(), percent)));
    const std::uint64_t simulated = steps.size();
    report.grid_percent = percent;
    ++report.rounds;
    // The check simulates its draws (on the serve's threads): said, so the line does not stand still.
    auto checking = [&](std::uint64_t draws) {
      if (!progress) return;
      progress(g5sim::ServeProgress{
          requests.size(), requests.size(), run.steps.size(),
          fmt::format("round {} of at most {}: checking {} steps drawn", report.rounds, max_auto_rounds(), draws), 0,
          0});
    };
    checking(kDraws);
    report.checks = check(run, taken, steps, verify, report.rounds, setup.jobs, setup.auto_percent, kDraws);
    if (miss_within_noise(report.checks)) {
      // The header's step 3: a miss within the draws' noise is drawn again, twice as many.
      checking(2 * kDraws);
      report.checks = check(run, taken, steps, verify, report.rounds, setup.jobs, setup.auto_percent, 2 * kDraws);
    }
    report.samples += steps.size() - simulated;
    const double largest = largest_error(report.checks);
    report.met = largest <= 1;
    // Missed: the serve exactly when its steps not yet simulated number at most three times those
    // simulated so far (about what two finer rounds would cost), or kStalledExactFactor times when
    // this round did not halve the last one's error (the header's step 3).
    const std::uint64_t left = steps.unknown(taken);
    const bool stalled = report.rounds > 1 && largest > last_largest / 2;
    const bool exact =
        !report.met && (left <= 3 * steps.size() || (stalled && left <= kStalledExactFactor * steps.size()));
    last_largest = largest;
    if (exact) {
      setup.bucket_percent = 0;
      run = serve_requests(requests, settings, setup, verify, staged("exact", left));
      report.exact = true;
      report.met = true;
    }
    if (report.met || percent == kFinestGridPercent) {
      run.bucket_error.reset();
      run.distinct_steps = steps.size();
      run.auto_cache = report;
      return run;
    }
  }
}

}  // namespace serving
