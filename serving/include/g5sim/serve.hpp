#pragma once
// Serving from C++: requests in, TTFT / TPOT / ITL / goodput per request and per chip out, each
// distinct step simulated once on the instruction-level model (`g5sim serve`, g5sim.serve()).
//
//   #include <g5sim/serve.hpp>
//   g5sim::ServeSettings s;                         // the knobs (g5sim/knobs.hpp), at their defaults
//   s.set_text("rate", "2");
//   s.set_text("input_len", "1024");
//   s.set_text("output_len", "128");
//   const g5sim::ServeReport r = g5sim::serve(chip, model, g5sim::Request{}, s);
//   r.summary.tpot_ms.p50;                          // ms
//   g5sim::write_serve_json(std::cout, r);          // `g5sim serve --json -`, byte for byte
//
// The model of the engine is stated in serving/serving_engine.hpp, the KV cache's sizing in
// serving/serve.hpp, bucketing in serving/step_bucketing.hpp. Every input error throws
// g5sim::ConfigError whose field() names the knob or the run option (source empty) or the file
// (a trace, a length histogram); any other exception is a bug.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/afd.hpp"
#include "g5sim/g5sim.hpp"
#include "g5sim/knobs.hpp"
#include "g5sim/report_fields.hpp"
#include "g5sim/runtime.hpp"

namespace g5sim {

inline constexpr int kServeSchemaVersion = 1;

// The limits of a serve (the knobs' ranges, g5sim/knobs.hpp).
constexpr std::uint64_t kMaxServeSeqs = 4096;          ///< sequences of a step
constexpr std::uint64_t kMaxBatchedTokens = 1u << 24;  ///< tokens of a step, of a prompt chunk
constexpr std::uint64_t kMaxBlockTokens = 1u << 16;    ///< tokens of a KV cache block
constexpr std::uint64_t kMaxServeSteps = 100'000'000;  ///< a serve that takes more steps is an error
/// Drafts of a verify: 1 + 7 tokens is the mixed step's decode at most (decode_max_q 8).
constexpr std::uint64_t kMaxMtpDrafts = 7;
constexpr std::uint64_t kMaxServeInstances = 1024;      ///< prefill or decode instances (disagg)
constexpr std::uint64_t kMaxAfdChips = 65536;           ///< attention or FFN chips of an instance (afd)
constexpr double kMaxArrivalSeconds = 1e6;              ///< about 11.6 days
constexpr std::uint64_t kMaxServeRequests = 1'000'000;  ///< requests of one serve
constexpr double kMaxRate = 1e6;                        ///< requests per second
constexpr std::uint64_t kMaxConcurrency = 1u << 20;     ///< closed-loop clients

struct ServeRequest {
  std::string id;
  std::uint64_t arrival_ps = 0;  ///< open loop; closed loop: set when its client's last request ends
  std::uint64_t input_tokens = 0, output_tokens = 0;
  /// A conversation the request is a turn of ("": none). Its first shared_prefix prompt tokens are
  /// the conversation so far: its previous turn's (in arrival order) prompt and output; a first
  /// turn's are the load's system prompt, the same for every first turn (serving/prefix_cache.hpp).
  std::string session = {};
  std::uint64_t shared_prefix = 0;
  /// A synthetic multi-turn load: the turn it follows, which it is sent think_ps after the client
  /// has that one's last token (its arrival_ps is set then). None: arrival_ps as given.
  std::optional<std::size_t> after = std::nullopt;
  std::uint64_t think_ps = 0;
};

/// The requests the settings' load makes: exactly one of a trace (a file, or trace_text named by
/// the trace knob), a rate and a concurrency; a synthetic load needs both lengths. Throws
/// ConfigError naming the knob ("trace", "input_len", ...) or the trace's file, line and column.
std::vector<ServeRequest> requests_of(const ServeSettings& settings);

/// A step's time and its error band (the simulation's, when the chip has one), and the dynamic
/// energy of the chip it simulated (the fullest DP rank's; 0 without the chip's `energy` section).
/// With a runtime, ps holds the runtime's device-side charge (kernels, collectives, layer
/// launches: runtime_ps of it) and the band is the chip's band plus that charge; the scheduler's
/// CPU is the engine's to add, as it depends on the step before.
struct StepTime {
  std::uint64_t ps = 0;
  bool has_band = false;
  std::uint64_t band_low_ps = 0, band_high_ps = 0;
  double dynamic_j = 0;
  std::uint64_t runtime_ps = 0;
};

/// A step as the chip ran it: its simulated time (layer launches included: they are ops of the
/// step), band and dynamic energy, and its ops as any runtime charges them (g5sim::StepOps), so
/// that the step is priced under another runtime without simulating it again.
struct ChipStep {
  StepTime chip;  ///< runtime_ps 0: the chip's timeline alone
  StepOps ops;
  std::uint64_t parts = 1;  ///< chip is the step's time over this many (a draft pass: one of its layers)
  std::string band_basis;   ///< the simulation's (g5sim::Result::band_basis, band_coverage)
  double band_coverage = 0;
};

/// Steps shared by serves (g5sim search's points, calibrate's trials): a step one serve simulated
/// is not simulated again by another with the same chip, model, deployment, micro-batches and
/// graph (the keys hold them; a runtime's costs are not in the key: each serve prices a shared
/// step with its own runtime). Thread-safe. The times are the simulation's, so a serve's results
/// are the same with or without it; its simulated_commands, simulate_seconds and band basis then
/// count only the simulations it ran itself.
class SharedStepTimes {
 public:
  std::shared_ptr<const ChipStep> find(const std::string& key) const;
  void put(const std::string& key, std::shared_ptr<const ChipStep> step);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const ChipStep>> steps_;
};

/// The memory tiers below a chip's own that a serve's prefix cache spills into (host DRAM, CXL
/// memory, an SSD): host data, a YAML file of their own (configs/hosts/; serving/kv_tier_file.hpp
/// reads it, docs/serving.md states every field and its range).
struct KvTier {
  std::string name;
  std::uint64_t capacity_bytes = 0;  ///< of it, one serving instance's cache's
  double bandwidth_gb_per_s = 0;     ///< of the path between it and the chip's memory
  std::uint64_t latency_ps = 0;      ///< before a transfer's first byte
  /// latency + bytes / bandwidth, in picoseconds (rounded to the nearest); throws ConfigError past 2^64.
  std::uint64_t transfer_ps(std::uint64_t bytes) const;
};
struct KvTiers {
  std::string name, source;
  std::vector<KvTier> tiers;  ///< nearest the chip first
};
/// A tier file: a shipped name (configs/hosts/NAME.yaml) or a path. Throws ConfigError naming the
/// file, line and field.
KvTiers load_kv_tiers(const std::string& name_or_path);
/// The same from text; `source_name` names it in errors.
KvTiers kv_tiers_from_yaml(const std::string& text, const std::string& source_name);

/// How a finished prompt's KV cache moves from a prefill instance to a decode one: the bytes the
/// chip holding the sequence keeps per cached token (all layers), over a link of
/// `bandwidth_gb_per_s` after `latency_ns`.
struct KvTransfer {
  std::uint64_t bytes_per_token = 0;
  double bandwidth_gb_per_s = 0, latency_ns = 0;
  std::string link;  ///< "rdma" or "c2c": which of the chip's links (for the report)
  /// latency + bytes / bandwidth, rounded to the nearest picosecond.
  std::uint64_t picoseconds(std::uint64_t bytes) const;
};

/// What a serve derives from its settings, the chip and the deployment, beside the settings the
/// engine reads by name.
struct ServeSetup {
  std::uint64_t dp = 1;               ///< the DP ranks a step is dealt over (bucketing keys a step by its fullest)
  std::uint64_t bucket_percent = 0;   ///< step_cache: 0 exact, else bucket:PCT's PCT (auto: its round's grid)
  double auto_percent = 0;            ///< step_cache auto:PCT's bound, in percent; 0: not auto
  std::uint64_t bucket_samples = 16;  ///< bucketed steps re-simulated exactly to measure the error
  std::uint64_t prefill_instances = 0, decode_instances = 0;  ///< disagg P:D; 0 and 0: one instance
  KvTransfer kv_transfer;                                     ///< with disagg
  /// The memory tiers below each instance's device memory (the kv_tiers knob: hw/kv_tiers.hpp);
  /// none: evicted prefix blocks are gone.
  std::optional<KvTiers> kv_tiers;
  /// How a sequence's cache grows on the serve's chip (blocks for the bytes that do not grow with
  /// it: serving/engine_state.hpp); all zero (the default): a cached token is a token of kv_tokens.
  KvGrowth kv;
  /// Disaggregation with a chip per role (RoleChips): the decode instances' chip's DP ranks and each
  /// decode instance's KV cache in tokens (the prefill instances': dp and the kv_tokens knob).
  /// None: every instance runs the serve's chip.
  struct DecodeChip {
    std::uint64_t dp = 1, kv_tokens = 0;
    KvGrowth kv;  ///< how a sequence's cache grows there
  };
  std::optional<DecodeChip> decode_chip;
  /// Attention-FFN disaggregation (the afd knob, g5sim/afd.hpp): each instance's attention chips
  /// (its DP ranks: dp is this) and FFN chips. 0 and 0: none.
  std::uint64_t afd_attention_chips = 0, afd_ffn_chips = 0;
  std::vector<double> accept;  ///< mtp's acceptance rates, one or one per draft
  /// The runtime (Request::runtime other than none): its request front end, its scheduler's CPU
  /// per step and whether it overlaps the step before, its schedulers per DP rank, where a
  /// disaggregated request's first token is streamed from. None: the chip alone.
  std::optional<Runtime> runtime;
  unsigned jobs = 1;                         ///< threads for a bucketed step's new anchors and the samples
  std::uint64_t max_steps = kMaxServeSteps;  ///< more is an error (the load never drains, or a caller's bound)
};

/// The bucketing's error, from steps re-simulated exactly: (bucketed - exact) / exact.
struct BucketError {
  std::uint64_t samples = 0;
  double mean_abs = 0, max_abs = 0;
};

/// One check of `step_cache auto` (serving/auto_step_cache.hpp): a metric's steps, drawn by how
/// much each counts in it and simulated exactly; the metric's relative error estimated from them
/// (signed: the model's minus the exact, over the exact).
struct StepCacheCheck {
  std::string metric;  ///< "mean_step", "ttft_mean", "ttft_p50", "ttft_p99", "tpot_mean", "tpot_p50", "tpot_p99"
  std::uint64_t draws = 0;
  double error = 0;
  double standard_error = 0;  ///< of `error`, from the draws' spread
  double bound_percent = 0;   ///< |error| x 100 at most this meets it (the p99 checks: 3 x the serve's)
};
/// How `step_cache auto:PCT` found the serve's step times.
struct AutoStepCache {
  double bound_percent = 1;
  /// Every distinct step simulated: the serve had at most exact_budget of them (rounds 0), or a
  /// round missed the bound and the steps left cost less than a finer grid (rounds > 0; checks
  /// are then that round's).
  bool exact = false;
  std::uint64_t exact_budget = 0;
  std::uint64_t grid_percent = 0;      ///< the last round's grid (0 when exact)
  std::uint64_t rounds = 0;            ///< serves on a grid (0 when exact)
  std::uint64_t samples = 0;           ///< distinct steps the checks simulated exactly, over every round
  std::vector<StepCacheCheck> checks;  ///< the last round's
  bool met = true;                     ///< every check of the last round within the bound
};

struct RequestOutcome {
  std::string id;
  std::uint64_t arrival_ps = 0, first_token_ps = 0, finish_ps = 0;
  std::uint64_t first_step_ps = 0;  ///< the start of the first step that ran it (its queueing ends)
  std::uint64_t input_tokens = 0, output_tokens = 0, preemptions = 0;
  std::uint64_t kv_transfer_bytes = 0;  ///< moved prefill -> decode (disaggregation)
  /// Prompt tokens it reused from the prefix cache instead of computing (over its admissions).
  std::uint64_t cached_tokens = 0;
  std::vector<std::uint64_t> itl_ps;  ///< gaps between successive tokens after the first
  /// With a runtime: what of its TTFT and of its first token .. finish span the runtime took (its
  /// front end, and the runtime's share of every step while it waited or ran, pro rata).
  std::uint64_t ttft_runtime_ps = 0, decode_runtime_ps = 0;
};

/// One memory tier below the device's over a serve, summed over the instances:
/// its blocks, the most it held at once (the largest instance's), the blocks written down into it,
/// read back up from it and dropped from it (the last tier's), and the time its loads took.
struct KvTierUse {
  std::string name;
  std::uint64_t capacity_blocks = 0, peak_blocks = 0;
  std::uint64_t written_blocks = 0, read_blocks = 0, dropped_blocks = 0;
  std::uint64_t read_ps = 0;
  std::uint64_t block_bytes = 0;  ///< bytes of a block (block_tokens x the cache's bytes a token)
};

struct StepLog {
  std::uint64_t instance = 0;  ///< which instance ran it (disaggregation: prefill ones first)
  std::uint64_t start_ps = 0, duration_ps = 0;
  std::uint64_t sequences = 0, prefill_tokens = 0, decode_tokens = 0;
  std::uint64_t kv_blocks_used = 0;  ///< after the step's allocation
  std::uint64_t kv_blocks = 0;       ///< its instance's KV cache (not written: run.kv_blocks, or the decode chip's)
  std::uint64_t waiting = 0;         ///< arrived, not admitted, at the step's start
  /// Of duration_ps, the runtime's: its scheduler CPU (first: cpu_ps) and its device-side charge.
  std::uint64_t runtime_ps = 0, cpu_ps = 0;
};

struct ServeRun {
  std::vector<RequestOutcome> requests;  ///< by arrival (stable); the closed loop: as given
  std::vector<StepLog> steps;
  std::uint64_t kv_blocks = 0;
  std::uint64_t distinct_steps = 0;         ///< steps the timer was asked for (samples aside)
  std::optional<BucketError> bucket_error;  ///< with bucketing
  std::optional<AutoStepCache> auto_cache;  ///< with step_cache auto
  std::uint64_t preemptions = 0;
  /// Prefix caching (the prefix_caching knob, serving/prefix_cache.hpp): whether it was on.
  bool prefix_caching = false;
  /// The tiers below device memory the prefix cache spilled into (the kv_tiers knob), nearest first.
  std::vector<KvTierUse> kv_tiers;
  bool has_runtime = false;                        ///< a runtime's shares are in the requests and steps
  std::uint64_t kv_transfer_bytes = 0;             ///< over every request (disaggregation)
  std::uint64_t mtp_verifies = 0, mtp_tokens = 0;  ///< MTP: verify steps of a request, the tokens they gave
  /// The step times' bands summed along the run's steps (every request's times scale with them):
  /// the ratio band / time applied to each metric. Absent when a step had none.
  std::optional<double> band_low_ratio, band_high_ratio;
  /// One chip's dynamic energy summed over the steps taken (each step's simulated chip, drafts
  /// included), in joules; 0 without an `energy` section.
  double dynamic_energy_j = 0;
  /// With a decode chip of its own (ServeSetup::decode_chip): dynamic_energy_j is the prefill
  /// chip's steps', this the decode chip's; and each decode instance's KV cache in blocks.
  double decode_chip_dynamic_energy_j = 0;
  std::uint64_t decode_kv_blocks = 0;
};

/// A calibrated runtime's held-out band on one of a serve's metrics (g5sim::Runtime::bands): the
/// multipliers [low, high] of the metric's values within which `coverage` of the runtime's fit's
/// rows of that kind measured (a time's [1 / high_ratio, 1 / low_ratio], a rate's [low_ratio,
/// high_ratio]); `kind` the band's (the metric's own, else "all"), `rows` how many rows it held.
struct MetricBand {
  std::string kind;
  std::uint64_t rows = 0;
  double low = 1, high = 1;
};
/// The three a serve carries: TTFT's, TPOT's (also ITL's and E2E's: the rows of a request's later
/// tokens) and the output throughput's, with the runtime's coverage and how its rows were held out.
struct RuntimeBands {
  double coverage = 0;
  std::string basis;
  MetricBand ttft, tpot, throughput;
};
/// The bands of `runtime`'s record on a serve's metrics; none when it has none.
std::optional<RuntimeBands> runtime_bands_of(const g5sim::Runtime& runtime);
/// As JSON (an object, or null) and as a table's words ("80 % of its held-out rows (2 folds): TTFT
/// x0.800 .. x1.250 (7 ttft rows); ..."), the same in serve's and search's reports.
std::string runtime_bands_json(const std::optional<RuntimeBands>& bands);
std::string runtime_bands_text(const RuntimeBands& bands);
/// Their JSON's fields (`runtime_bands` and below), for the reports that hold them.
std::vector<ReportField> runtime_band_rows();

/// One metric's summary.
struct Distribution {
  std::uint64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

struct ServeSummary {
  std::uint64_t requests = 0, input_tokens = 0, output_tokens = 0;
  double duration_s = 0;
  /// e2e_s and e2el_ms: one latency, arrival to last token, in seconds and (as vLLM's benchmarks
  /// report it) in milliseconds.
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_s, e2el_ms;
  double requests_per_s = 0, input_tokens_per_s = 0, output_tokens_per_s = 0;
  double output_tokens_per_s_per_chip = 0, input_tokens_per_s_per_chip = 0;
  double output_tokens_per_s_per_user = 0;  ///< the mean over requests of (output - 1) / (finish - first token)
  std::optional<double> slo_ttft_ms, slo_tpot_ms;
  std::uint64_t slo_met = 0;
  double goodput_requests_per_s = 0;
  double kv_utilisation_mean = 0, kv_utilisation_peak = 0;  ///< blocks used / blocks, time-weighted mean
  /// With a runtime: the means of TTFT and TPOT split into the chip's part and the runtime's
  /// (RequestOutcome's shares), ms; ttft_ms.mean = ttft_chip_ms + ttft_runtime_ms.
  bool has_runtime = false;
  double ttft_chip_ms = 0, ttft_runtime_ms = 0, tpot_chip_ms = 0, tpot_runtime_ms = 0;
  /// A calibrated runtime's bands on TTFT, TPOT and throughput (they replace the chip steps' band
  /// on those metrics: the runtime was fitted with the chip under it). None without one.
  std::optional<RuntimeBands> runtime_bands;
  double batch_mean = 0;  ///< sequences per step, time-weighted
  std::uint64_t batch_max = 0;
  /// Prefix caching: prompt tokens reused (prefill saved), prompt tokens computed (every step's
  /// prefill tokens), hit_tokens / (hit_tokens + computed); requests that reused any, and the
  /// mean TTFT of those and of the others (0 when there are none).
  std::uint64_t prefix_hit_tokens = 0, prefix_computed_tokens = 0, prefix_requests_hit = 0;
  double prefix_hit_rate = 0, ttft_hit_ms = 0, ttft_miss_ms = 0;
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

/// One role of a disaggregated serve: its chip, its instances and each one's sharding and KV
/// cache, and its side of the KV transfer (bytes_per_token: what one of its chips holds of a token).
struct ServeRole {
  std::string chip, chip_source;
  std::uint64_t instances = 0, kv_tokens = 0;
  ServingMemory memory;
  KvTransfer link;
};
/// An instance under attention-FFN disaggregation: its FFN side (the attention side is the
/// report's chip and memory), the link between them, and the micro-batches pipelining them.
struct ServeAfd {
  std::uint64_t attention_chips = 0, ffn_chips = 0, micro_batches = 1;
  std::string ffn_chip, ffn_chip_source;
  std::uint64_t ffn_weight_bytes = 0, ffn_capacity_bytes = 0;  ///< per FFN chip
  AfdLink link;
  /// Over every step taken, each way.
  std::uint64_t dispatch_bytes = 0, combine_bytes = 0;
};

/// A disaggregated serve's roles. own_chips: the roles are sized apart, the decode instances on a
/// chip (RoleChips) or a sharding (--decode-ep, ...) of their own; the transfer then runs over the
/// slower side (ServeSetup::kv_transfer).
struct ServeRoles {
  ServeRole prefill, decode;
  bool own_chips = false;
};

struct ServeReport {
  /// chip: every instance's, or with a chip per role the prefill instances' (roles says).
  std::string chip, model, chip_source, model_source;
  Request step;  ///< what every step ran with (its mix aside)
  ServingMemory memory;
  /// As served: the given knobs, kv_tokens sized from the chip when not given, chunk the budget
  /// when 0, jobs the threads used.
  ServeSettings settings;
  ServeSetup setup;
  ServeRun run;
  ServeSummary summary;
  std::uint64_t chips = 0;  ///< the deployment's chips x its instances (disaggregation)
  std::string band_basis;   ///< the steps' band basis (g5sim::Result::band_basis)
  double band_coverage = 0;
  std::uint64_t simulated_commands = 0;  ///< over the distinct steps
  std::uint64_t steps_read = 0;          ///< distinct steps read from the step cache's folder, not simulated
  double simulate_seconds = 0;           ///< wall time of the distinct steps' simulations
  std::optional<ServeEnergy> energy;     ///< a chip with an `energy` section (with a chip per role: both)
  std::optional<ServeRoles> roles;       ///< with disagg
  std::optional<ServeAfd> afd;           ///< with afd
};

/// How far a serve is, told after each finished request: requests finished of all, and the steps
/// the engine has taken so far in this pass.
struct ServeProgress {
  std::uint64_t requests_done = 0, requests = 0, steps = 0;
  /// Under step_cache auto, which pass over the requests this is ("exact if at most 32 distinct
  /// steps", "round 2 of at most 4, 25 % grid", "exact"): each pass counts from 0 again. Empty:
  /// the serve's one pass.
  std::string stage;
  /// Distinct steps this serve has simulated so far, over every pass (steps read from the step
  /// cache's folder or shared with other serves cost nothing and are not counted): what its time
  /// goes to.
  std::uint64_t simulated = 0;
  /// In step_cache auto's exact pass after its rounds: about the distinct steps it has to simulate
  /// (those the last round took that no pass had simulated; the exact pass takes steps like the
  /// round's, not the same ones), so its end can be told; 0 otherwise.
  std::uint64_t to_simulate = 0;
};

/// How a serve runs, beside what it computes: who is told of progress, what bounds it, and step
/// times shared with other serves.
struct ServeControls {
  std::function<void(const ServeProgress&)> progress;  ///< after each finished request
  std::uint64_t max_steps = kMaxServeSteps;
  std::shared_ptr<SharedStepTimes> shared_steps;  ///< none: this serve's own cache alone
};

/// The chip of each role of a disaggregated serve where it is not the serve's chip (`serve --disagg
/// P:D --prefill-chip A --decode-chip B`; sensitivity --role decode varies one with the other held).
struct RoleChips {
  std::optional<Chip> prefill, decode;
  /// A role's sharding held (its tp, ep and dp; sensitivity and solve hold the varied role's), in
  /// place of the step's; not given: the step's when it has one, else the role chip's smallest
  /// that holds the load.
  std::optional<Deployment> prefill_sharding, decode_sharding;
};

/// Serves `requests` on `chip` running `model`, each step as `step` (its run options; its
/// sequences are the engine's) with `settings`' engine. The deployment is `step`'s tp, ep, dp
/// when given, else the smallest whose KV cache holds the longest request (with a chip per role:
/// each role's own). The settings' prefill_chip and decode_chip (a shipped chip's stem or a
/// config's path) give a role its own chip; `roles`' chips, when set, take their place.
ServeReport serve(const Chip& chip, const Model& model, const Request& step, std::vector<ServeRequest> requests,
                  const ServeSettings& settings, const ServeControls& controls = {}, const RoleChips& roles = {});
/// The same with the requests the settings' load makes (requests_of).
ServeReport serve(const Chip& chip, const Model& model, const Request& step, const ServeSettings& settings,
                  const ServeControls& controls = {});

/// Checks what the knobs' ranges alone do not: mtp and accept go together (accept_draw with them).
/// Throws ConfigError naming mtp.
void check_pairs(const ServeSettings& settings);

/// Why `step`'s deployment (its tp, ep and dp, each 1 when not given) cannot serve `requests`:
/// the model does not divide over it, or its weights leave no KV cache at the settings' memory
/// utilization, or the cache of a DP rank cannot hold the longest request; none when it can.
std::optional<std::string> deployment_refusal(const Chip& chip, const Model& model, const Request& step,
                                              const std::vector<ServeRequest>& requests, const ServeSettings& settings);

/// The reports a serve writes (g5sim/report_fields.hpp): "serve" (--json), "serve_requests"
/// (--csv), "serve_sweep" (g5sim.serve_sweep()'s DataFrame); serving/serve_reports.cpp.
const std::vector<Report>& serve_reports();

/// The per-request CSV: the columns of serve_reports()'s "serve_requests", a row per request in
/// the order given (tpot and itl empty for one output token).
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

}  // namespace g5sim
