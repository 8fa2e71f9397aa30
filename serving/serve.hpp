#pragma once
// `g5sim serve` as a library call (the CLI and the Python module both call it): a deployment
// fixed once, its KV cache sized from the chip's DDR, every distinct step simulated once on the
// instruction-level model (g5sim::simulate with Request::mix), and the report's outputs.
//
// KV cache, per DP rank (each rank's chips hold its sequences; serving/serving_engine.hpp
// schedules the deployment as one pool of dp times a rank's blocks):
//     kv_tokens_per_rank = floor((memory_utilization x ddr.capacity_bytes - weight bytes per chip)
//                                / KV bytes per token per chip)
// with g5sim::serving_memory's weight and per-token bytes (memory_utilization as vLLM's
// gpu_memory_utilization: the share of the DDR the engine may use; activations are not sized).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "serving/request_load.hpp"
#include "serving/serving_engine.hpp"

namespace serving {

inline constexpr int kServeSchemaVersion = 1;

/// Step times shared by the serves of one chip, model and step options (g5sim search's points):
/// a step one serve simulated is not simulated again by another with the same deployment and
/// micro-batches (both are in the key). Thread-safe. The times are the simulation's, so a serve's
/// results are the same with or without it; its simulated_commands, simulate_seconds and band
/// basis then count only the simulations it ran itself.
class SharedStepTimes {
 public:
  std::optional<StepTime> find(const std::string& key) const;
  void put(const std::string& key, const StepTime& time);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, StepTime> times_;
};

struct ServeOptions {
  ServeLimits limits;               ///< kv_tokens 0: sized from the chip (above)
  double memory_utilization = 0.9;  ///< (0, 1]
  std::optional<double> slo_ttft_ms, slo_tpot_ms;
  std::shared_ptr<SharedStepTimes> shared_steps;  ///< none: this serve's own cache alone
};

/// A serve's energy (a chip with an `energy` section): every chip of the deployment spends, each
/// step, the dynamic energy of the chip the step simulated (its fullest DP rank's: an upper bound
/// for the others), and its static power from the first arrival to the last finish, idle or not:
///     total_j = chips_per_instance x sum over steps of dynamic_j + chips x static_w x duration_s
/// joules_per_token over the output tokens; average_w per chip.
struct ServeEnergy {
  double dynamic_j = 0, static_j = 0, total_j = 0;
  double joules_per_token = 0, tokens_per_joule = 0, average_w = 0;
  std::optional<double> tdp_w;
};

struct ServeReport {
  std::string chip, model, chip_source, model_source;
  g5sim::Request step;  ///< what every step ran with (its mix aside)
  g5sim::ServingMemory memory;
  ServeLimits limits;  ///< resolved (kv_tokens, chunk)
  double memory_utilization = 0;
  ServeRun run;
  ServeSummary summary;
  std::uint64_t chips = 0;  ///< the deployment's chips x its instances (disaggregation)
  std::string band_basis;   ///< the steps' band basis (g5sim::Result::band_basis)
  double band_coverage = 0;
  std::uint64_t simulated_commands = 0;  ///< over the distinct steps
  double simulate_seconds = 0;           ///< wall time of the distinct steps' simulations
  std::optional<ServeEnergy> energy;     ///< a chip with an `energy` section
};

/// Where the requests come from, as `g5sim serve` and g5sim.serve() take it: a trace (a file, or
/// its text with a name for errors) or a synthetic load (rate or concurrency, lengths, seed).
/// `requests_given` / `seed_given`: the count or seed was given (refused beside a trace).
struct LoadSpec {
  std::string trace_path;
  std::optional<std::string> trace_text;  ///< the trace's text; trace_path then only names it
  std::optional<double> rate;
  std::uint64_t concurrency = 0;
  std::uint64_t requests = 100;
  std::string input_len, output_len;
  std::uint64_t seed = 0;
  bool requests_given = false, seed_given = false;
};
/// The requests: exactly one of a trace, a rate and a concurrency; a synthetic load needs both
/// lengths. Throws InputError naming the keyword ("trace", "input_len", ...) or the trace's
/// ConfigError (file, line, column).
std::vector<ServeRequest> requests_of(const LoadSpec& load);

/// Why `base`'s deployment (its tp, ep and dp, each 1 when not given) cannot serve `requests`:
/// the model does not divide over it, or its weights leave no KV cache at `memory_utilization`
/// (0, 1], or the cache of a DP rank cannot hold the longest request; none when it can.
std::optional<std::string> deployment_refusal(const g5sim::Chip& chip, const g5sim::Model& model,
                                              const g5sim::Request& base, const std::vector<ServeRequest>& requests,
                                              double memory_utilization);

/// --disagg: "P:D", P prefill and D decode instances, each 1..kMaxServeInstances. Throws
/// InputError naming "disagg".
std::pair<std::uint64_t, std::uint64_t> parse_disagg(const std::string& text);

/// The chip's link a disaggregated deployment moves KV caches over: its network interface
/// (nodes.rdma_*) when the chip has one, else its C2C links used together (bandwidth x links).
KvTransfer kv_transfer_link(const g5sim::Chip& chip, std::uint64_t kv_bytes_per_token);

/// --accept: "P" or "P1,P2,..." rates in [0, 1]. Throws InputError naming "accept".
std::vector<double> parse_accept(const std::string& text);

/// --step-cache: "exact" (0) or "bucket:PCT" with PCT a whole percent 1..100. Throws InputError
/// naming "step_cache".
std::uint64_t parse_step_cache(const std::string& text);

/// Serves `requests` on `chip` running `model` as `base` (run options; its sequences are the
/// engine's). `progress(done, total)` after each finished request. Throws ConfigError on bad input.
ServeReport serve(const g5sim::Chip& chip, const g5sim::Model& model, g5sim::Request base,
                  std::vector<ServeRequest> requests, const ServeOptions& options,
                  const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});

/// The per-request CSV (columns id,arrival_s,first_token_s,finish_s,ttft_ms,tpot_ms,itl_p50_ms,
/// itl_max_ms,e2e_s,input_tokens,output_tokens,preemptions; tpot and itl empty for one output token).
void write_request_csv(std::ostream& out, const ServeReport& report);
/// The summary JSON (schema_version, the set-up, the metrics, the steps over time).
void write_serve_json(std::ostream& out, const ServeReport& report);
/// A Chrome trace-event JSON (Perfetto, chrome://tracing) of the serve: process "steps" with a
/// track per instance and a slice per step (its sequences and tokens), process "requests" with
/// a track per request slot (a request takes the lowest slot free at its arrival) and a slice
/// per phase of each request: queued (arrival to its first step), prefill (to its first token),
/// decode (to its end). Times in microseconds, as the format has them.
void write_serve_perfetto(std::ostream& out, const ServeReport& report);
/// The summary as the terminal shows it.
void write_serve_table(std::ostream& out, const ServeReport& report);

}  // namespace serving
