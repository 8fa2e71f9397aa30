#pragma once
// The software that runs the model, as data (configs/runtimes/*.yaml): what a serving runtime adds
// to the chip's time, and the choices it makes for the graph and the scheduler. The chip's
// simulation stays the chip's; the runtime's charge is added to it and reported apart.
//
// A step of K launched kernels (every op except the kinds the runtime fuses into a neighbour and
// the host launches), kernel k taking t_k on the simulated chip, C collectives of message sizes
// b_c, L layers and the step's S sequences and T new tokens (its DP rank's with a scheduler per
// rank, else the deployment's):
//
//   kernel_floor = sum_k max(0, floor - t_k)       each kernel lasts at least `floor` (launch, fill, drain)
//   kernel_compute = sum_k max(0, c_k / e_k - max(t_k, floor))   a matrix kernel of the runtime reaches
//                                                  at most e_k of the chip's peak: expert_tensor_efficiency
//                                                  for the routed experts' grouped matrices when tensor
//                                                  parallelism splits each expert (ep 1, tp > 1: a fused
//                                                  MoE kernel over thin slices), tensor_efficiency for
//                                                  the others (whole experts under EP too); c_k is its
//                                                  arithmetic at the tensor engine's peak rate for its
//                                                  dtype (0 for other kernels); e_k = 1 charges nothing
//   kernel_gap   = K x gap                         the idle time between one kernel's end and the next's start
//   kernel_launch = sum_k w_k                      the device waiting for the host to issue kernels: the
//                  host issues kernel k at h_k = h_{k-1} + launch_k from the step's start (launch_k:
//                  expert_launch for a routed-expert op, the engine's MoE issued from Python:
//                  routing, alignment, quantisation and its Triton kernels; launch for any other);
//                  the device, free at g_k (the end of kernel k - 1 as charged so far, plus gap),
//                  starts it at max(g_k, h_k) and waits w_k = max(0, h_k - g_k); kernel k then lasts
//                  max(t_k, floor) + its compute charge + its collective's latency. A step of
//                  kernels shorter than their launches costs about sum_k launch_k (the host bound,
//                  as an eager Python engine is); one of long kernels hides all but the first
//   collective   = sum_c latency(kind_c, b_c)      the library's fixed cost of a collective (first row
//                                                  of its kind's table whose up_to_bytes >= b_c)
//   layer_launch = L x host_launch                 the host launching each layer's program (a graph op:
//                                                  the chip idles meanwhile; already inside the chip's timeline)
//   step_cpu     = cpu + S x cpu_per_sequence + T x cpu_per_token   scheduling, input preparation, sampling
//                  hidden behind the previous step's device time when the runtime overlaps them:
//                  max(0, step_cpu - previous step's device time) (a lone run: its own device time)
//   runtime      = kernel_floor + kernel_compute + kernel_gap + kernel_launch + collective + layer_launch
//                  + step_cpu
//   step time    = chip time + runtime        (chip time = the simulated timeline less layer_launch)
//
// Why a compute floor: the chip's calibration holds its best kernels (a tuned GEMM's shape search,
// DeepSeek's own prefill), while a serving engine runs its own (Triton's fused MoE over TP-split
// experts, per-token-group fp8 quantisation): at a compute-bound prefill they reach a fraction of
// that; a memory-bound decode kernel (c_k far below t_k) is not touched. The experts apart because
// that is where the engines fall furthest behind: DeepSeek-R1's prefill on 8 H200 at TP8 runs at
// 15-17k tokens/s in vLLM and SGLang (GPUStack, 2K-4K prompts) where the chip model runs 38k, while
// a dense 70B model's prompts on H100 run near the chip model's (SGLang's Llama-3.1-70B TTFTs).
// floor, gap and launch are the `graph` pair for a step of decodes alone with at most
// graph_max_batch sequences on the chip (CUDA graphs are captured for decode batches up to a
// size); for any other step of at most piecewise_max_tokens new tokens on the chip, piecewise:
// the attention's kernels (kv_cache_write, kv_cache_read, fa2, fa2_combine) take the `eager` pair
// and the others the `graph` pair (vLLM's piecewise graphs: the pieces between attentions are
// replayed, each attention runs eagerly between them); else `eager` for every kernel.
// A request adds `before_scheduler` + input_tokens x per_input_token before it reaches the
// scheduler (HTTP, tokenisation) and `after_token` between a token's step and the client (detoken-
// isation, streaming): TTFT grows by both, TPOT and ITL by neither (every token is delayed alike).
// Of the front end, one process (an API server's, a tokenizer manager's) does a part for one job at
// a time, jobs in the order they reach it (time, then arrival sequence): a request's input,
// serial + input_tokens x serial_per_input_token, and each step's output for a request, its k new
// tokens (k > 1 only when drafts are accepted) at k x serial_per_output_token (detokenisation and
// streaming). A job reaching it at a_j leaves it at
//   f_j = max(a_j, f_{j-1}) + cost_j
// a request then reaches the scheduler at f_j + before_scheduler + input_tokens x per_input_token,
// and a token the client at f_j + after_token: a burst of requests queues at the tokenizer, as
// 1,000 requests sent at once do, and the tokens of the running ones wait behind it (GPUStack's
// bursts: no first token before most inputs are in); or, with tokens_behind_inputs false, tokens
// queue in a process of their own by the same rule (SGLang's detokenizer: its 1,000-prompt bursts'
// median TTFT is half the inputs' time, not all of it). Without any serial cost there is no such
// process: a token reaches the client at its step's end + after_token.
//
// Not modelled by any runtime: activation memory (the KV cache is sized from weights alone), the
// network stack between client and server, kernels the runtime runs concurrently on several streams
// (the charge is additive: an upper bound where micro-batches overlap).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "g5sim/config_error.hpp"
#include "g5sim/g5sim.hpp"

namespace g5sim {

inline constexpr std::uint64_t kMaxRuntimeNs = 10'000'000'000;  ///< any one runtime duration: 10 s
inline constexpr std::uint64_t kMaxRuntimeBatch = 65536;        ///< graph.max_batch
inline constexpr double kMinTensorEfficiency = 0.05;            ///< kernels.tensor_efficiency's floor

struct KernelCosts {
  std::uint64_t floor_ns = 0;          ///< a kernel lasts at least this long
  std::uint64_t gap_ns = 0;            ///< idle between successive kernels
  std::uint64_t launch_ns = 0;         ///< the host's time to issue one kernel (0: a graph the device replays)
  std::uint64_t expert_launch_ns = 0;  ///< the same for a routed-expert op (the engine's MoE, from Python)
};

/// One row of a collective's latency table: messages of at most up_to_bytes (none: any size).
struct CollectiveLatency {
  std::optional<std::uint64_t> up_to_bytes;
  std::string algorithm;  ///< what the runtime uses at that size ("custom one-shot", "nccl ring"), for reports
  std::uint64_t latency_ns = 0;
};

/// How a step's kernels are issued (Runtime::kernel_mode).
enum class KernelMode : std::uint8_t { graph, piecewise, eager };
/// "graph", "piecewise", "eager".
const char* kernel_mode_name(KernelMode mode);

struct Runtime {
  std::string name;     ///< "SGLang"
  std::string version;  ///< the engine version its numbers are for ("0.4.6")
  std::string source, sha256;
  // Per kernel.
  std::uint64_t graph_max_batch = 0;  ///< decode steps of at most this many sequences replay a graph
  /// Other steps of at most this many new tokens on the chip replay piecewise graphs, attention
  /// eager between the pieces (0: none).
  std::uint64_t piecewise_max_tokens = 0;
  KernelCosts graph, eager;
  std::vector<std::string> fused_kinds;  ///< op kinds never launched on their own (part of a neighbour)
  /// The fraction of the chip's tensor peak its matrix kernels reach at most, (0, 1]; 1: the chip's own.
  double tensor_efficiency = 1;
  /// The same for the routed experts' grouped matrices when TP splits each expert, (0, 1].
  double expert_tensor_efficiency = 1;
  // Per collective, ascending up_to_bytes, the last row unbounded.
  std::vector<CollectiveLatency> all_reduce, all_to_all;
  // Per layer.
  std::uint64_t host_launch_ns = 0;
  // Per step.
  std::uint64_t cpu_ns = 0, cpu_ns_per_sequence = 0, cpu_ns_per_token = 0;
  bool overlap = false;
  // Per request.
  std::uint64_t before_scheduler_ns = 0, per_input_token_ns = 0, after_token_ns = 0;
  /// The front end's part one process does for one request at a time (an API server's, a
  /// tokenizer manager's: chat template, tokenisation): requests queue for it in arrival order.
  std::uint64_t serial_ns = 0, serial_ns_per_input_token = 0;
  /// The same process's time to detokenise and stream each output token (tokens queue there too).
  std::uint64_t serial_ns_per_output_token = 0;
  /// Whether tokens queue in that same process behind the inputs (vLLM's API server), or in one
  /// of their own (SGLang's detokenizer: the inputs' queue does not hold them).
  bool tokens_behind_inputs = true;
  // The graph it runs (run options; an option given to a run overrides its runtime's).
  std::string kv_append, lm_head_weights, prefill_attention;
  // The scheduler (serve knobs; a knob given overrides).
  std::string schedule;
  std::uint64_t max_seqs = 0, max_batched_tokens = 0;
  bool scheduler_per_dp_rank = false;  ///< one scheduler per DP rank (SGLang's DP attention), else one
  std::string first_token;             ///< disaggregation: "prefill" (streamed from it) or "after-transfer"
  std::string adds;                    ///< one line: what it adds, for tables
  /// A calibrated runtime's held-out errors (the `calibration` record g5sim calibrate --runtime
  /// writes): per kind of row it was fitted to (ttft, tpot, throughput for serve rows; decode,
  /// prefill for step rows; all), the quantiles low_ratio and high_ratio of predicted / measured
  /// time (a rate's inverse) that held `band_coverage` of its rows, each predicted by a fit that
  /// did not see it. A prediction t of that kind then has the band [t / high_ratio, t /
  /// low_ratio] (a rate r: [r low_ratio, r high_ratio]). Empty: not calibrated.
  struct Band {
    std::string kind;
    std::uint64_t rows = 0;
    double low_ratio = 1, high_ratio = 1;
  };
  std::vector<Band> bands;
  double band_coverage = 0;
  std::string band_basis;  ///< how its rows were held out ("2 folds")
  /// The band of `kind`, else the `all` band; null when neither was recorded.
  const Band* band_for(const std::string& kind) const;

  /// A YAML file (configs/runtimes/ holds the shipped ones); errors name file, line and field.
  static Runtime from_file(const std::string& path);
  static Runtime from_yaml(const std::string& text, const std::string& source_name);
  /// How a step's kernels run: graph when it is decodes alone of at most graph_max_batch sequences
  /// on the chip, else piecewise when it has at most piecewise_max_tokens new tokens on the chip
  /// (and piecewise_max_tokens > 0), else eager.
  KernelMode kernel_mode(bool decode_only, std::uint64_t chip_sequences, std::uint64_t chip_tokens) const;
  /// The (floor, gap, launch) costs of one kernel of a step in `mode`: piecewise takes the eager
  /// pair for the attention's kernels (`attention`) and the graph pair for the others.
  const KernelCosts& kernels_for(KernelMode mode, bool attention) const;
  /// The latency of a collective of `kind` ("all_reduce", "all_to_all") of `bytes`.
  const CollectiveLatency& collective(const std::string& kind, std::uint64_t bytes) const;
  /// Scheduling CPU of a step of `sequences` and `tokens`, before any overlap.
  std::uint64_t step_cpu_ns(std::uint64_t sequences, std::uint64_t tokens) const;
  /// before_scheduler + input_tokens x per_input_token.
  std::uint64_t request_in_ns(std::uint64_t input_tokens) const;
  /// serial + input_tokens x serial_per_input_token: the request's turn at the serial front end.
  std::uint64_t serial_in_ns(std::uint64_t input_tokens) const;
  /// Whether any part of the front end is serial (its process then carries inputs and tokens).
  bool has_serial_front_end() const;
  /// One line (g5sim list): "SGLang 0.4-0.5: kernels floor 2.0 us, gap 0.6 us (graphs to 512) / 4.5 us, ...".
  std::string summary() const;
};

/// A step's ops as a runtime charges them, for any runtime: each op's kind, its duration on the
/// simulated chip and a collective's message; and whether the step is decodes alone, on how many
/// sequences of the chip (which kernel pair applies). Kept beside a step's chip time, it prices
/// the step under another runtime without simulating it again (a serve's step store, calibrate).
struct StepOps {
  struct Op {
    std::uint8_t kind = 0;  ///< index in kind_names
    std::uint64_t duration_ps = 0, message_bytes = 0;
    std::uint64_t tensor_ps = 0;  ///< its arithmetic at the tensor engine's peak (a matrix op; else 0)
    bool expert = false;          ///< the routed experts' grouped matrices (expert_launch, expert_tensor_efficiency)
  };
  std::vector<Op> ops;
  bool split_experts = false;  ///< tensor parallelism splits each routed expert (expert_tensor_efficiency)
  bool decode_only = true;
  std::uint64_t chip_sequences = 0;
  std::uint64_t chip_tokens = 0;  ///< the step's new tokens on the chip (piecewise graphs' bound)
  /// The op kinds' names by index ("matmul", "all_reduce", "host_launch", ...).
  static const std::vector<std::string>& kind_names();
};

/// The step's ops of a result (its ops' kinds, intervals and collective messages).
StepOps step_ops_of(const Result& result);

/// The device side of the runtime's charge of a step (g5sim/runtime.hpp's sums): kernel floors
/// and gaps, collectives' latency, layer launches (which are ops of the step); no scheduler CPU.
RuntimeParts device_charge(const Runtime& runtime, const StepOps& step);

/// The shipped runtimes by stem, sorted ("none", "sglang", ...), and the file a name means (a
/// path, or a shipped stem: data_dir()/configs/runtimes/NAME.yaml; a did-you-mean otherwise).
std::vector<std::string> shipped_runtimes();
std::string runtime_path(const std::string& name_or_path);
/// A runtime by name or path, read once per process and kept (thread-safe): serving and sweeps
/// name it for every step. "" and "none" are the chip alone (configs/runtimes/none.yaml).
const Runtime& runtime_named(const std::string& name_or_path);

}  // namespace g5sim
