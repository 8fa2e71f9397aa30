#pragma once
// The serving engine of `g5sim serve`: requests in, a step at a time, each step a mixed step
// (g5sim::Request::mix) timed by the instruction-level simulation; per-request times out.
//
// The model, as vLLM v1's scheduler runs continuous batching with chunked prefill (one scheduler
// for the deployment; its limits are the deployment's):
//   State of a request: `computed` tokens in the KV cache, `generated` output tokens, and its
//   prompt P = input_tokens + the tokens it had generated when last preempted (recompute).
//   A step at time t, with a token budget T = max_batched_tokens:
//     1. running requests, oldest admission first: one still in its prompt takes
//        q = min(P - computed, chunk, T) tokens, a decoding one q = 1 (its last output token);
//        each needs ceil((computed + q) / block_tokens) KV blocks; when the free blocks are too
//        few, the newest running request is preempted (its blocks freed, computed = 0, back to
//        the head of the queue), until they suffice or the request itself was the newest;
//     2. then, when nothing was preempted, waiting requests that have arrived by t, in arrival
//        order, while fewer than max_seqs run and T > 0: q = min(P, chunk, T), admitted if its
//        ceil(q / block_tokens) blocks are free (else admission stops for this step).
//   Schedule prefill_first (SGLang's default, without its mixed chunks): a step is a prefill step
//   or a decode step, never both. When a running request is still in its prompt, or the oldest
//   waiting one has arrived, fewer than max_seqs run and its first chunk's blocks are free, the
//   step takes only prompts (1. over the running ones in their prompt, then 2.); else it takes
//   every decode (1. over the others) and admits nothing. Decodes wait while prompts run.
//   The step's sequences: each scheduled request is a group of 1 x q_len q @ history `computed`
//   (equal ones merged, sorted by q_len then history); its time d comes from the step timer. At
//   t + d: computed += q; a request whose prompt is complete (computed == P) emits a token
//   (generated += 1) at t + d, and every decoding one does; a request with generated ==
//   output_tokens finishes and frees its blocks. Nothing to run: t jumps to the next arrival.
//   Step cache: each distinct step is timed once. With bucketing (bucket_percent P > 0), a step
//   is keyed by its fullest DP rank, its decodes merged at their mean history and every history
//   raised to a geometric grid of P % (serving/step_bucketing.hpp), so that steps alike to
//   within P % share one simulation.
//   The error is measured: up to `bucket_samples` bucketed steps, evenly spread over the
//   distinct ones, are simulated again with their exact groups.
//   KV blocks: floor(kv_tokens / block_tokens), kv_tokens the deployment's cache capacity in
//   tokens (tools/commands/serve.cpp sizes it from the chip's DDR after the weights). A request
//   needs input + output - 1 tokens at its end (the last output token is never fed back; with
//   MTP, its last verify's drafts beside them): one that needs more blocks than exist is an error
//   naming it, before anything runs.
// Closed loop (concurrency N): the first N requests arrive at 0; each later one arrives when the
// request N before it ends (its client's previous).
//
// Metrics (vLLM's benchmark_serving and SGLang's bench_serving definitions):
//   TTFT = first token - arrival; TPOT = (finish - first token) / (output - 1), for output > 1
//   (the first token excluded); ITL = the gaps between a request's successive tokens after the
//   first; E2E = finish - arrival. Percentiles interpolate linearly between ranks (numpy's
//   default). Throughput over the duration first arrival .. last finish; per chip: / chips.
//   Goodput: requests meeting every SLO given (TTFT <= slo_ttft_ms, TPOT <= slo_tpot_ms) per second.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "serving/request_load.hpp"

namespace serving {

constexpr std::uint64_t kMaxServeSeqs = 4096;          ///< --max-seqs (a step's groups are at most this many)
constexpr std::uint64_t kMaxBatchedTokens = 1u << 24;  ///< --max-batched-tokens, --chunk
constexpr std::uint64_t kMaxBlockTokens = 1u << 16;    ///< --block-tokens
constexpr std::uint64_t kMaxServeSteps = 100'000'000;  ///< a serve that takes more steps is an error
constexpr std::uint64_t kMaxMtpDrafts =
    7;  ///< --mtp: a verify of 1 + 7 tokens is the mixed step's decode at most (decode_max_q 8)
constexpr std::uint64_t kMaxServeInstances = 1024;  ///< prefill or decode instances (--disagg)

/// One step's sequences as the mixed step takes them (SequenceRecord's path left empty).
using StepGroups = std::vector<g5sim::SequenceRecord>;

/// A step's time and its error band (the simulation's, when the chip has one), and the dynamic
/// energy of the chip it simulated (the fullest DP rank's; 0 without the chip's `energy` section).
struct StepTime {
  std::uint64_t ps = 0;
  bool has_band = false;
  std::uint64_t band_low_ps = 0, band_high_ps = 0;
  double dynamic_pj = 0;
};

/// Times a step; the engine asks once per distinct step (a cache keyed by the mix text).
using StepTimer = std::function<StepTime(const StepGroups&)>;

/// How a finished prompt's KV cache moves from a prefill instance to a decode one: the bytes
/// the chip holding the sequence keeps per cached token (all layers), over a link of
/// `bandwidth_gb_per_s` after `latency_ns`.
struct KvTransfer {
  std::uint64_t bytes_per_token = 0;
  double bandwidth_gb_per_s = 0, latency_ns = 0;
  std::string link;  ///< "rdma" or "c2c": which of the chip's links (for the report)
  /// latency + bytes / bandwidth, rounded to the nearest picosecond.
  std::uint64_t picoseconds(std::uint64_t bytes) const;
};

/// How a step is formed: vLLM v1's mixed steps (decodes first, then prompt chunks in the same
/// step) or SGLang's prefill-first steps (a step of prompts whenever one can run, else a step of
/// decodes).
enum class Schedule : std::uint8_t { mixed, prefill_first };
/// "mixed" or "prefill-first"; throws hw::InputError naming "schedule".
Schedule parse_schedule(const std::string& text);
std::string name_of(Schedule s);

struct ServeLimits {
  Schedule schedule = Schedule::mixed;
  std::uint64_t max_seqs = 256;
  std::uint64_t max_batched_tokens = 8192;
  std::uint64_t chunk = 0;  ///< a prompt's tokens per step at most; 0: max_batched_tokens
  std::uint64_t block_tokens = 16;
  std::uint64_t kv_tokens = 0;        ///< the deployment's KV cache, in tokens
  std::uint64_t concurrency = 0;      ///< closed loop when > 0
  std::uint64_t bucket_percent = 0;   ///< 0: every step exact; else the history grid's step, 1..100 %
  std::uint64_t bucket_samples = 16;  ///< bucketed steps re-simulated exactly to measure the error
  std::uint64_t dp = 1;               ///< the DP ranks a step is dealt over (bucketing keys a step by its fullest)
  unsigned jobs = 1;  ///< threads for a bucketed step's new anchors and the error samples (same results)
  std::uint64_t max_steps = kMaxServeSteps;  ///< more is an error (the load never drains, or a caller's bound)
  /// Disaggregation: prefill_instances P >= 1 and decode_instances D >= 1 of the deployment each
  /// (0 and 0: one instance doing both). Requests arrive at the prefill instances round robin;
  /// a finished prompt leaves its instance, its KV cache crosses `kv_transfer`, and it is queued
  /// at the decode instances round robin on arrival, its first token with it (TTFT includes the
  /// transfer). Each instance has the whole KV cache of a deployment (kv_tokens) and its own clock.
  std::uint64_t prefill_instances = 0, decode_instances = 0;
  KvTransfer kv_transfer;
  /// MTP / speculative decoding: a decoding request verifies 1 + mtp tokens a step (its last
  /// token and mtp drafts; a speculative verify of the mixed step); accept[j] is the chance that
  /// draft j + 1 is accepted when the ones before it were (one value: every draft). Accepted
  /// drafts and the target's own next token come out of the step; the drafts' own work is
  /// mtp passes of the draft timer over the step's decodes. Drawn (accept_drawn, seeded) or
  /// expected (a running credit per request: the same tokens on average, no randomness).
  std::uint64_t mtp = 0;
  std::vector<double> accept;
  bool accept_drawn = false;
  std::uint64_t accept_seed = 0;
};

/// The bucketing's error, from steps re-simulated exactly: (bucketed - exact) / exact.
struct BucketError {
  std::uint64_t samples = 0;
  double mean_abs = 0, max_abs = 0;
};

struct RequestOutcome {
  std::string id;
  std::uint64_t arrival_ps = 0, first_token_ps = 0, finish_ps = 0;
  std::uint64_t first_step_ps = 0;  ///< the start of the first step that ran it (its queueing ends)
  std::uint64_t input_tokens = 0, output_tokens = 0, preemptions = 0;
  std::uint64_t kv_transfer_bytes = 0;  ///< moved prefill -> decode (disaggregation)
  std::vector<std::uint64_t> itl_ps;    ///< gaps between successive tokens after the first
};

struct StepLog {
  std::uint64_t instance = 0;  ///< which instance ran it (disaggregation: prefill ones first)
  std::uint64_t start_ps = 0, duration_ps = 0;
  std::uint64_t sequences = 0, prefill_tokens = 0, decode_tokens = 0;
  std::uint64_t kv_blocks_used = 0;  ///< after the step's allocation
  std::uint64_t waiting = 0;         ///< arrived, not admitted, at the step's start
};

struct ServeRun {
  std::vector<RequestOutcome> requests;  ///< by arrival (stable); the closed loop: as given
  std::vector<StepLog> steps;
  std::uint64_t kv_blocks = 0;
  std::uint64_t distinct_steps = 0;         ///< steps the timer was asked for (samples aside)
  std::optional<BucketError> bucket_error;  ///< with bucketing
  std::uint64_t preemptions = 0;
  std::uint64_t kv_transfer_bytes = 0;             ///< over every request (disaggregation)
  std::uint64_t mtp_verifies = 0, mtp_tokens = 0;  ///< MTP: verify steps of a request, the tokens they gave
  /// The step times' bands summed along the run's steps (every request's times scale with them):
  /// the ratio band / time applied to each metric. Absent when a step had none.
  std::optional<double> band_low_ratio, band_high_ratio;
  /// One chip's dynamic energy summed over the steps taken (each step's simulated chip, drafts
  /// included), in picojoules; 0 without an `energy` section.
  double dynamic_energy_pj = 0;
};

/// Serves `requests`; throws ConfigError for a request that
/// can never fit the KV cache or limits out of range, and passes on the timer's errors.
/// `draft_timer`: one pass of the MTP draft module over decodes of one token each (with mtp > 0;
/// none: the drafts cost nothing).
ServeRun serve_requests(std::vector<ServeRequest> requests, const ServeLimits& limits, const StepTimer& timer,
                        const std::function<void(std::uint64_t done, std::uint64_t total)>& progress = {},
                        const StepTimer& draft_timer = {});

/// One metric's summary.
struct Distribution {
  std::uint64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
/// numpy's default percentile (linear between ranks) of sorted values, 0 <= p <= 100.
double percentile(const std::vector<double>& sorted, double p);
Distribution distribution(std::vector<double> values);

struct ServeSummary {
  std::uint64_t requests = 0, input_tokens = 0, output_tokens = 0;
  double duration_s = 0;
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_s;
  double requests_per_s = 0, input_tokens_per_s = 0, output_tokens_per_s = 0;
  double output_tokens_per_s_per_chip = 0, input_tokens_per_s_per_chip = 0;
  double output_tokens_per_s_per_user = 0;  ///< the mean over requests of (output - 1) / (finish - first token)
  std::optional<double> slo_ttft_ms, slo_tpot_ms;
  std::uint64_t slo_met = 0;
  double goodput_requests_per_s = 0;
  double kv_utilisation_mean = 0, kv_utilisation_peak = 0;  ///< blocks used / blocks, time-weighted mean
  double batch_mean = 0;                                    ///< sequences per step, time-weighted
  std::uint64_t batch_max = 0;
};

ServeSummary summarize(const ServeRun& run, std::uint64_t chips, std::optional<double> slo_ttft_ms,
                       std::optional<double> slo_tpot_ms);

}  // namespace serving
