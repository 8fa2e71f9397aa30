#pragma once
// The serving engine of `g5sim serve`: requests in, a step at a time, each step a mixed step
// (g5sim::Request::groups) timed by the instruction-level simulation; per-request times out.
//
// The model, as vLLM v1's scheduler runs continuous batching with chunked prefill (one scheduler
// for the deployment; its limits are the deployment's):
//   State of a request: `computed` tokens in the KV cache, `generated` output tokens, and its
//   prompt P = input_tokens + the tokens it had generated when last preempted (recompute).
//   A step at time t takes the requests serving/step_formation.hpp states (its two schedules,
//   mixed and prefill-first): running ones first, then arrivals, within the step's token budget,
//   its sequence cap and the free KV blocks, preempting the newest running request when blocks
//   run short; each takes q tokens (its prompt's next chunk, or its last token and MTP's drafts).
//   The step's sequences: each scheduled request is a group of 1 x q_len q @ history `computed`
//   (equal ones merged, sorted by q_len then history); its time d comes from the step timer. At
//   t + d: computed += q; a request whose prompt is complete (computed == P) emits a token
//   (generated += 1) at t + d, and every decoding one does; a request with generated ==
//   output_tokens finishes and frees its blocks. Nothing to run: t jumps to the next arrival.
//   Step cache (serving/step_cost.hpp): each distinct step is timed once. With bucketing
//   (step_cache bucket:P), a step
//   is keyed by its fullest DP rank, its decodes merged at their mean history and every history
//   raised to a geometric grid of P % (serving/step_bucketing.hpp), so that steps alike to
//   within P % share one simulation.
//   The error is measured: up to `bucket_samples` bucketed steps, evenly spread over the
//   distinct ones, are simulated again with their exact groups.
//   Steps ahead: an exact serve simulates every distinct step, and each step's time decides what
//   the next one holds (through the arrivals before its end), so its steps come one after the
//   other. On J > 1 threads (hooks.prefetch), when a step is not at hand the engine copies its state
//   (not its logs), runs the copy on with guessed times (a step at hand: its own; else the
//   instance's last device time) and has the first unknown steps the copy takes simulated on
//   other threads, J at once with its own step (simulated here, or waited for when it was
//   started ahead). A step the copy took is the
//   real next one unless an arrival or a front-end job falls between the guessed end and the
//   real one; then it is simply not asked for. The timer takes a step simulated ahead as if it
//   had simulated it then (its counts and the step cache folder are written when it is taken),
//   so the results are the same on any number of threads; only the time to get them changes.
//   KV blocks: floor(kv_tokens / block_tokens), kv_tokens the deployment's cache capacity in
//   tokens (serving/serve.hpp sizes it from the chip's DDR after the weights). A request
//   needs input + output - 1 tokens at its end (the last output token is never fed back; with
//   MTP, its last verify's drafts beside them): one that needs more blocks than exist is an error
//   naming it, before anything runs.
// Closed loop (concurrency N): the first N requests arrive at 0; each later one arrives when the
// request N before it ends (its client's previous).
// A runtime's front end (g5sim/runtime.hpp) delays each arrival before the scheduler and each
// token before the client; its serial part (serving/serial_front_end.hpp) is one process for
// inputs and tokens alike, taken in time order between the steps: a job is done once the next
// step starts after it. The times below are the client's: a token's is when it leaves that part.
//
// Metrics (vLLM's benchmark_serving and SGLang's bench_serving definitions):
//   TTFT = first token - arrival; TPOT = (finish - first token) / (output - 1), for output > 1
//   (the first token excluded); ITL = the gaps between a request's successive tokens after the
//   first; E2E = finish - arrival. Percentiles interpolate linearly between ranks (numpy's
//   default). Throughput over the duration first arrival .. last finish; per chip: / chips.
//   Goodput: requests meeting every SLO given (TTFT <= slo_ttft_ms, TPOT <= slo_tpot_ms) per second.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "g5sim/serve.hpp"

namespace serving {

using g5sim::BucketError;
using g5sim::Distribution;
using g5sim::KvTransfer;
using g5sim::RequestOutcome;
using g5sim::ServeRequest;
using g5sim::ServeRun;
using g5sim::ServeSettings;
using g5sim::ServeSetup;
using g5sim::ServeSummary;
using g5sim::StepLog;
using g5sim::StepTime;

/// One step's sequences as the mixed step takes them (SequenceRecord's path left empty).
using StepGroups = std::vector<g5sim::SequenceRecord>;
/// Times a step; the engine asks once per distinct step (serving/step_cost.hpp).
using StepTimer = std::function<StepTime(const StepGroups&)>;

/// Steps simulated ahead of an exact serve ("Steps ahead" above): `start` begins simulating
/// a step (draft: a pass of the MTP draft module) on a thread of its own and says whether it did
/// (not when it runs already or is at hand); `started` says whether it was; `running` counts those
/// started and not yet done; `ready` is a started step's time once done. The timer takes a started
/// step from there rather than simulating it again; nothing else changes, so the serve's results
/// do not depend on it.
struct StepPrefetch {
  std::function<bool(const StepGroups& groups, bool draft)> start;
  std::function<bool(const StepGroups& groups, bool draft)> started;
  std::function<std::size_t()> running;
  std::function<std::optional<StepTime>(const StepGroups& groups, bool draft)> ready;
  /// Steps simulated at once at most: the engine's own and those ahead.
  unsigned jobs = 1;
  bool on() const { return static_cast<bool>(start) && jobs > 1; }
};

/// What a serve under `step_cache auto` (serving/auto_step_cache.hpp) asks of the step cache
/// beside the timer: steps whose exact time is already known in this serve (they get it, not an
/// interpolation), and a record of every step taken; and of any exact serve, its steps simulated
/// ahead (on when `prefetch.on()`).
struct StepHooks {
  /// The exact time of `groups` (draft: a pass of the MTP draft module) when this serve has it.
  std::function<std::optional<StepTime>(const StepGroups& groups, bool draft)> known;
  /// One per step taken, in the engine's order (run.steps'): its exact groups and the time the
  /// cache gave the step itself (the drafts' passes aside).
  struct Taken {
    StepGroups groups;
    std::uint64_t ps = 0;
    std::size_t chip = 0;  ///< which of the serve's chips ran it (ChipSteps' index)
  };
  std::vector<Taken>* taken = nullptr;
  StepPrefetch prefetch;
};

/// The steps of one of a serve's chips: every instance's, or under disaggregation with a chip per
/// role (g5sim::ServeSetup::decode_chip) first the prefill instances' and then the decode ones'.
/// Each chip has its own step cache: a step's groups say what it runs, its chip what it costs.
struct ChipSteps {
  StepTimer timer, draft_timer;
  StepHooks hooks;
};

/// Serves `requests` with the engine's `settings` (its knobs, read by name where they act) and
/// what the serve derived (`setup`), each step timed by its instance's chip: `chips` holds one,
/// or two when setup.decode_chip is set. Throws as the overload below does.
ServeRun serve_requests(std::vector<ServeRequest> requests, const ServeSettings& settings, const ServeSetup& setup,
                        const std::vector<ChipSteps>& chips,
                        const std::function<void(const g5sim::ServeProgress&)>& progress = {});

/// Serves `requests` with the engine's `settings` (its knobs, read by name where they act) and
/// what the serve derived (`setup`), on one chip. Throws ConfigError for a request that can never fit the KV cache or
/// limits out of range, and passes on the timer's errors. `draft_timer`: one pass of the MTP draft
/// module over decodes of one token each (with mtp > 0; none: the drafts cost nothing).
ServeRun serve_requests(std::vector<ServeRequest> requests, const ServeSettings& settings, const ServeSetup& setup,
                        const StepTimer& timer, const std::function<void(const g5sim::ServeProgress&)>& progress = {},
                        const StepTimer& draft_timer = {}, const StepHooks& hooks = {});

/// numpy's default percentile (linear between ranks) of sorted values, 0 <= p <= 100.
double percentile(const std::vector<double>& sorted, double p);
Distribution distribution(std::vector<double> values);

ServeSummary summarize(const ServeRun& run, std::uint64_t chips, std::optional<double> slo_ttft_ms,
                       std::optional<double> slo_tpot_ms);

}  // namespace serving
