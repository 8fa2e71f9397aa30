#pragma once
// `g5sim serve --step-cache auto:PCT` (the default, auto:1): the serve's step times from a model
// of its own steps, refined until a sample of those steps simulated exactly agrees to PCT %.
//
// 1. Exact when that is cheap: the serve runs with every distinct step simulated, up to
//    kExactBudget distinct steps (half of what one check may simulate); a serve that needs no more is
//    exact, and says so.
// 2. Otherwise rounds r = 0, 1, ...: the serve runs with each step interpolated from anchor steps
//    on a P_r % grid (serving/step_bucketing.hpp: the fullest DP rank's decodes by count and mean
//    history, its prompt chunks by count, length and history), P_0 = 50, P_{r+1} =
//    max(kFinestGridPercent, floor(P_r / 2)), except the steps this serve has already simulated (anchors, the first
//    phase's steps, every check's samples), which take their simulated time.
// 3. A round's check: seven strata of its steps, each a weight w_s per step s:
//      mean_step  1                                                (mean step time, throughput)
//      ttft_mean  the requests waiting for their first token at s's start (arrival <= start < first)
//      ttft_p50   the same of the requests whose TTFT ranks in the middle tenth
//      ttft_p99   the same of the slowest fiftieth by TTFT (at least one request)
//      tpot_mean, tpot_p50, tpot_p99: the same by TPOT, of the requests decoding at s's start
//    A stratum's chance of a step is p_k(s) = w_s d_s / sum w d, d_s the step's whole duration
//    (scheduler CPU and drafts included). One pool of kDraws steps is drawn from the strata's
//    even mixture q = mean over k of p_k (a seeded generator: the same draws on every run), each
//    simulated exactly (e_s) beside the time the round gave it (m_s). A stratum's estimate weighs
//    each draw by r = p_k(s) / q(s):
//        x^ = sum r (m_s - e_s) / d_s / sum r,    error = x^ / (1 - x^)
//    which estimates sum_s w_s (m_s - e_s) / sum_s w_s (exact duration of s): the relative error of
//    the metric the stratum makes (a request's TTFT and TPOT are sums of the steps they span; the
//    mean step of all). Its standard error is sqrt(sum r^2 (x - x^)^2) / sum r / (1 - x^). Every
//    |error| within its bound (PCT %; 3 PCT % for the p99 strata, whose requests are few and whose
//    steps are the long prompts') ends the search. A round whose every miss lies within one
//    standard error of its bound (|error| - standard error <= bound: the draws cannot tell it
//    from a pass) is drawn again once, 2 kDraws from the same generator (the first kDraws are
//    the same steps, known already), and decided on those: a new round costs its anchors and
//    their draws, an estimate twice as close costs about kDraws steps. Else the next round, on a finer grid, with the
//    samples now known exactly, unless simulating the rest is the cheaper way to the bound: the
//    steps the serve took and has not simulated number at most three times those simulated so
//    far (about what two finer rounds would cost), or at most kStalledExactFactor times when the
//    round did not halve the last round's largest error over its bound (a finer grid that does
//    not close in says the grid's coarseness is not what misses: kernel tiling's bumps in a
//    prompt's length, a decode split's in a history; more rounds would likely each pay their
//    anchors and draws and miss again). Then the serve runs exactly. A miss at
//    kFinestGridPercent with more left stands, reported as not met.
// Why a model from the serve's own steps rather than one grid for every serve: the grid that
// keeps one load within 1 % wastes simulations on another, and a grid's error was measured but
// not bounded (bucket:PCT); here the measure decides the grid.
// Cost: the first phase's steps and the samples are simulated once and reused by every round; a
// round re-runs the engine alone (milliseconds per thousand steps) and its new anchors.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "serving/serving_engine.hpp"

namespace serving {

/// Distinct steps a serve may have and still be simulated exactly under auto.
inline constexpr std::uint64_t kExactBudget = 32;
/// Steps drawn per round, for every stratum at once.
inline constexpr std::uint64_t kDraws = 64;
/// The first round's grid and the finest, in percent.
inline constexpr std::uint64_t kFirstGridPercent = 50;
inline constexpr std::uint64_t kFinestGridPercent = 6;
/// Rounds a serve can take at most: one per grid from the first, halved, to the finest (4).
constexpr std::uint64_t max_auto_rounds() {
  std::uint64_t rounds = 1;
  for (std::uint64_t p = kFirstGridPercent; p > kFinestGridPercent; p = std::max(kFinestGridPercent, p / 2)) ++rounds;
  return rounds;
}
/// When refining stalls, the serve runs exactly if its steps left number at most this many times
/// those simulated so far: more rounds would likely miss again, and exact meets the bound for at
/// most ten times what the search has spent.
inline constexpr std::uint64_t kStalledExactFactor = 10;

/// Serves `requests` under `step_cache auto:setup.auto_percent` (setup.auto_percent > 0) on the
/// serve's chips (serve_requests'; their hooks' prefetch is used, the rest is this search's):
/// bucket_percent is set per round; the run's distinct_steps counts every step simulated (anchors,
/// first phase, samples; drafts aside), its auto_cache says how the times were found.
ServeRun serve_auto(const std::vector<ServeRequest>& requests, const ServeSettings& settings, ServeSetup setup,
                    const std::vector<ChipSteps>& chips,
                    const std::function<void(const g5sim::ServeProgress&)>& progress);
/// The same on one chip: `timer`, `draft_timer`, and its steps ahead `prefetch`.
/// bucket_percent is set per round; the run's distinct_steps counts every step simulated (anchors,
/// first phase, samples; drafts aside), its auto_cache says how the times were found.
ServeRun serve_auto(const std::vector<ServeRequest>& requests, const ServeSettings& settings, ServeSetup setup,
                    const StepTimer& timer, const std::function<void(const g5sim::ServeProgress&)>& progress,
                    const StepTimer& draft_timer, const StepPrefetch& prefetch = {});

/// A drawn step: the time the round gave it, its exact time, its whole duration in the round, and
/// its stratum's chance over the pool's (1 when the pool is the stratum's own).
struct Draw {
  std::uint64_t model_ps = 0, exact_ps = 0, duration_ps = 0;
  double ratio = 1;
  /// (model - exact) / duration.
  double off() const {
    return (static_cast<double>(model_ps) - static_cast<double>(exact_ps)) /
           static_cast<double>(duration_ps > 0 ? duration_ps : 1);
  }
};
/// A stratum's estimated relative error (the model's metric over the exact one, minus 1) and the
/// estimate's standard error.
struct StratumError {
  double error = 0, standard_error = 0;
};
StratumError stratum_error(const std::vector<Draw>& draws);

/// Whether a check misses its bound and every miss lies within one standard error of it
/// (|error| - standard error <= bound): the draws cannot tell the round from a pass, and it is
/// drawn again with 2 kDraws.
bool miss_within_noise(const std::vector<g5sim::StepCacheCheck>& checks);

/// The strata's weights over `run`'s steps (in run.steps' order), in the order mean_step,
/// ttft_mean, ttft_p50, ttft_p99, tpot_mean, tpot_p50, tpot_p99 (a stratum with no request is all
/// zeros).
std::vector<std::vector<std::uint64_t>> strata_weights(const ServeRun& run);

}  // namespace serving
