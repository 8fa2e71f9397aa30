#pragma once
// g5sim's public C++ API: load a chip and a model, describe a workload, simulate it, read the
// result. This header and <g5sim/config_error.hpp> are all a program needs (standard library
// types only); link g5sim::g5sim (find_package(g5sim CONFIG REQUIRED)).
//
//   #include <g5sim/g5sim.hpp>
//   const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
//   const g5sim::Model model = g5sim::Model::from_file(g5sim::shipped_model_path());
//   g5sim::Request request;                // the CLI's defaults: decode, ctx 4096, a whole step
//   request.scope = "block";
//   const g5sim::Result r = g5sim::simulate(chip, model, request);
//   r.op("kv_cache_read").op_end_ps;     // exact integer picoseconds
//
// Every input error throws g5sim::ConfigError (a document's field, or a Request parameter); any
// other exception is a bug. Objects are immutable once built: Chip and Model share their data
// and are cheap to copy, and simulate() may run on several threads at once.

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "g5sim/config_error.hpp"
#include "g5sim/op_run.hpp"

namespace g5sim {

/// The project version, "MAJOR.MINOR.PATCH".
const char* version();

/// The folder of the shipped configs (holding configs/chips/ and configs/models/): the
/// environment variable G5SIM_DATA_DIR when set, else the first `share/g5sim` found in the folder
/// of the program or library holding this code or in one of its five parent folders. So a build
/// tree (build/share/g5sim) and an install tree (PREFIX/share/g5sim, PREFIX/bin/g5sim) find their
/// own, wherever they are moved. Throws ConfigError when there is none.
std::string data_dir();
/// data_dir()/configs/chips/sg2262.yaml and data_dir()/configs/models/deepseek-v3.yaml.
std::string shipped_chip_path();
std::string shipped_model_path();
/// The shipped configs by stem (file name without ".yaml"), sorted: "h100", "h100.calibrated", ...
std::vector<std::string> shipped_chips();
std::vector<std::string> shipped_models();
/// The file a chip (model) is named by: a value with a '/', a config extension (.yaml, .yml, .json)
/// or naming an existing file is that path; any other is a shipped config's stem ("h100" ->
/// data_dir()/configs/chips/h100.yaml). Throws ConfigError for a stem nothing ships, listing the
/// ones that do (with a did-you-mean).
std::string chip_path(const std::string& name_or_path);
/// The shipped KV tier files (configs/hosts/: a serving host's memory below its chips, for
/// `g5sim serve --kv-tiers`), and a name's or a path's file, as chip_path finds chips.
std::vector<std::string> shipped_kv_tiers();
std::string kv_tiers_path(const std::string& name_or_path);
std::string model_path(const std::string& name_or_path);
/// A config's path as outputs write it (chip_source, model_source): "shipped:NAME" for a shipped
/// config (data_dir()/configs/{chips,models,runtimes}/NAME.yaml), a path under the working folder
/// relative to it, any other as given. So outputs of the same configs agree between machines and
/// checkouts (their sha256 columns say which bytes were read).
std::string source_label(const std::string& path);

/// A chip config: cores, engines, memories, links (docs/design.md, README "Config ranges").
class Chip {
 public:
  struct Data;  ///< the library's internal form
  /// A YAML file; errors name the path, line and column.
  static Chip from_file(const std::string& path);
  /// YAML text held in memory; errors name "<memory:SOURCE>" with line and column.
  static Chip from_yaml(const std::string& text, const std::string& source_name);
  /// A document built in memory (a Python dict) serialised as JSON: errors name `source_name` as
  /// given and the dotted field, without line or column.
  static Chip from_document(const std::string& json_text, const std::string& source_name);

  std::string name() const;
  std::string source() const;
  std::string sha256() const;  ///< of the text it was read from: tells same-named configs apart
  std::uint32_t cores() const;
  std::vector<std::string> engines() const;  ///< a core's engines, in declaration order
  /// The same chip with only its first `cores` cores (1..cores()); throws ConfigError otherwise.
  Chip with_cores(std::uint32_t cores) const;
  std::uint64_t ddr_capacity_bytes() const;
  /// One line: "SG2262: 64 cores, cube bf16 peak 131.1 TFLOPS, DDR 8601.6 GB/s, 128 GiB" (g5sim list).
  std::string summary() const;
  /// A calibrated config's record in one line: its fit (MAPE on its rows, held out) and the fields
  /// the fit moved; "" for a config g5sim calibrate did not write.
  std::string calibration_summary() const;
  const Data& data() const { return *data_; }

 private:
  explicit Chip(std::shared_ptr<const Data> data) : data_(std::move(data)) {}
  std::shared_ptr<const Data> data_;
};

/// The two schemas of a model document: g5sim's strict YAML keys (with `name`), or a Hugging
/// Face config.json (extra keys ignored).
enum class ModelSchema { g5sim, hugging_face };

class Model {
 public:
  struct Data;
  /// ".json": a Hugging Face config.json (named after its folder); otherwise strict YAML.
  static Model from_file(const std::string& path);
  static Model from_yaml(const std::string& text, const std::string& source_name);
  static Model from_document(const std::string& json_text, const std::string& source_name,
                             ModelSchema schema = ModelSchema::g5sim);

  std::string name() const;
  std::string source() const;
  std::string sha256() const;  ///< of the text it was read from
  std::string model_type() const;
  std::string attention() const;  ///< "mla" or "gqa"
  std::uint64_t num_hidden_layers() const;
  std::uint64_t num_attention_heads() const;
  std::uint64_t kv_lora_rank() const;        ///< 0 unless MLA
  std::uint64_t qk_rope_head_dim() const;    ///< 0 unless MLA
  std::uint64_t latent_kv_elements() const;  ///< d_c + d_rope per token per layer; 0 unless MLA
  /// Every weight of every layer, the embedding and lm_head (once when tied), the norms.
  std::uint64_t parameter_count() const;
  /// The keys a config.json left out that its config class fills in, "key = value (ConfigClass)"
  /// (docs/guide.md, "A config.json's absent keys"); empty for g5sim's YAML.
  std::vector<std::string> class_defaults() const;
  /// One line: "DeepSeek-V3: deepseek_v3, 61 layers, MLA, 256 experts top 8, 671.0 B parameters".
  std::string summary() const;
  const Data& data() const { return *data_; }

 private:
  explicit Model(std::shared_ptr<const Data> data) : data_(std::move(data)) {}
  std::shared_ptr<const Data> data_;
};

/// One group of the step's sequences (the JSON "sequences" entries): `count` sequences of `q_len`
/// new tokens after `history` tokens read from the KV cache, on the "decode" or "prefill" path.
struct SequenceRecord {
  std::uint64_t count = 0, q_len = 0, history = 0;
  std::string path;
};

/// The groups as --mix writes them: "64x1@4096,1x2048@0".
std::string mix_text(const std::vector<SequenceRecord>& groups);

/// One run, with the CLI's defaults (README, "Flags"): every field is checked by simulate(), and
/// a bad one is a ConfigError whose field() is the member's name. Each member is a row of the
/// run-option table (g5sim/run_options.hpp), which front ends read to take, check and echo it.
struct Request {
  std::string phase = "decode";        ///< "decode" (q_len < ctx) or "prefill" (q_len == ctx)
  std::optional<std::uint64_t> batch;  ///< sequences over all chips; default one per DP rank
  std::uint64_t ctx = 4096;            ///< kv_len: tokens each sequence attends
  std::optional<std::uint64_t> q_len;  ///< decode default 1, prefill = ctx
  /// The step as groups of sequences instead of one uniform batch (phase, batch, ctx and q_len
  /// then stay unset): "COUNTxQ_LEN@HISTORY,..." ("64x1@4096,1x2048@0"), or a CSV file of
  /// count,q_len,history rows. At most one of the two.
  std::string mix;
  std::string seqs;
  /// The step's groups as values (a serving engine's steps), as --mix would give them without
  /// its text (each group's path is the mix's rule's, by decode_max_q). At most one of mix, seqs
  /// and groups. Not a row of the run-option table: the command line and Python give a mix.
  std::vector<SequenceRecord> groups;
  std::uint64_t decode_max_q = 8;   ///< a mix's group with history and q_len <= this is a decode (or verify)
  std::string prefill_attention;    ///< prefill and chunk attention: "causal" or "full"; "": the runtime's, else causal
  std::string kv_dtype = "bf16";    ///< "bf16", "fp8" or "fp8-flashmla"
  std::string mla_mode = "absorb";  ///< decode compute and cache: absorb, standard, expanded
  std::string prefill_mla_mode = "expanded";
  std::string
      weight_dtype;  ///< bf16, fp16, fp8, int8, int4, mxfp8, mxfp6, mxfp4, nvfp4; "" = the model config's, else bf16
  std::optional<std::uint64_t>
      weight_group;                ///< int8/int4 scale group along k (0: per column); default the model's, else 128
  std::string act_dtype = "auto";  ///< projection activations: auto, bf16, fp8, mxfp8, mxfp6, mxfp4, nvfp4
  std::string kv_read_engine;      ///< "" = the chip's first kv_stream engine (SG2262: gdma)
  std::string attn_split = "seq";  ///< decode attention over cores: "seq" or "head"
  /// decode: "in-place", or "concat" (a static graph's copy of the history); "": the runtime's, else in-place
  std::string kv_append;
  std::string lm_head_weights;  ///< "bf16", or "projections" (stored as --weight-dtype); "": the runtime's, else bf16
  /// The software that runs the model (g5sim/runtime.hpp): a shipped runtime's name or a path;
  /// "" (or "none"): the chip alone. Its graph choices fill the options not given.
  std::string runtime;
  std::string scope = "step";           ///< "block" (one attention block) or "step" (the decoder)
  std::optional<std::uint64_t> layers;  ///< step: only the first N decoder layers
  std::uint64_t micro_batches = 1;      ///< step: the chip's sequences in N overlapping groups (1..64)
  /// step: the host's launch of each layer (0: one program); not given: the runtime's
  std::optional<std::uint64_t> host_launch_ns;
  std::optional<std::uint64_t> cores;                   ///< run on the chip's first N cores; none = all
  std::optional<std::uint64_t> tp, ep, dp;              ///< none given: the smallest sharding that fits DDR
  std::string expert_load;                              ///< step: measured routing CSV (layer,expert,tokens) path
  bool strict_capacity = false;                         ///< a step that does not fit DDR is an error, not a warning
  std::uint64_t max_commands = std::uint64_t{1} << 27;  ///< refuse runs estimated above this
  bool prefetch = true;                                 ///< cross-op weight prefetch (ops/lowering.hpp)
  bool keep_commands = false;                           ///< keep every command's record (for a Chrome trace)
  /// Replay identical layers exactly (each run of repeating layers simulated in part, the rest
  /// derived from a proven repetition); false simulates every command. Same results either way;
  /// keep_commands simulates every command.
  bool replay = true;
};

/// What the run's runtime added (g5sim/runtime.hpp states the sums), in picoseconds.
struct RuntimeParts {
  std::string kernel_mode;  ///< "graph", "piecewise" or "eager": which kernel costs the step took
  std::uint64_t kernels = 0, collectives = 0, layer_launches = 0;
  std::uint64_t kernel_floor_ps = 0, kernel_gap_ps = 0, collective_ps = 0, layer_launch_ps = 0, step_cpu_ps = 0;
  std::uint64_t kernel_compute_ps = 0;  ///< matrix kernels below the chip's peak (Runtime::tensor_efficiency)
  std::uint64_t kernel_launch_ps = 0;   ///< the device waiting for the host to issue kernels (eager launches)
  /// The runtime's whole charge (layer launches included).
  std::uint64_t total_ps() const {
    return kernel_floor_ps + kernel_compute_ps + kernel_gap_ps + kernel_launch_ps + collective_ps + layer_launch_ps +
           step_cpu_ps;
  }
};

/// One op of the run (the CLI's JSON "ops" entries), times in exact integer picoseconds.
struct OpRecord {
  std::uint64_t id = 0;  ///< unique in the run (name + layer may repeat: micro-batches)
  std::string name;
  int layer = -1;  ///< decoder layer, -1 for ops outside the layers (embedding, lm_head)
  std::string kind, shape, engines;
  std::uint64_t op_start_ps = 0, op_end_ps = 0;
  std::uint64_t hbm_bytes = 0, unique_bytes = 0, c2c_bytes = 0, flops = 0, kv_bytes = 0, peak_lmem_bytes = 0;
  std::uint64_t message_bytes = 0;  ///< a collective's message (the bytes it reduces or exchanges); 0 otherwise
  double roofline_ns = 0;
  double compute_ns = 0;  ///< its arithmetic at the chip's peak for its kind and dtype (the roofline's compute term)
  std::string regime;     ///< "compute", "memory" or "comm": the roofline's verdict
  /// What the simulation says limited it: "TIU", a DMA engine ("GDMA"), "DDR", "C2C", "L2", or
  /// "latency" when no resource was busy half of its interval; bound_share: how busy, 0..1.
  std::string bound_by;
  double bound_share = 0;
  /// The tensor engine's idle time before its first instruction (largest over the cores).
  std::uint64_t idle_gap_ps = 0;
  /// Its dynamic energy in joules (a chip with an `energy` section; else 0): its arithmetic
  /// and its bytes at each resource they crossed (hw/energy.hpp).
  double energy_j = 0;
  /// Nanoseconds as the JSON prints them: the double nearest to ps / 1000.
  double op_start_ns() const { return static_cast<double>(op_start_ps) / 1000.0; }
  double op_end_ns() const { return static_cast<double>(op_end_ps) / 1000.0; }
};

/// All ops of one kind (the JSON "kinds" entries); busy = the union of their intervals.
struct KindRecord {
  std::string kind;
  std::uint64_t ops = 0, busy_ps = 0, hbm_bytes = 0, c2c_bytes = 0, flops = 0;
  std::string regime, bound_by;
  double energy_j = 0;  ///< the kind's ops' dynamic energy (0 without an `energy` section)
};

struct EngineCommands {
  std::string engine;
  std::uint64_t commands = 0;
  double energy_j = 0;  ///< the dynamic energy it spent (0 without an `energy` section)
};

/// One decoder layer of a run, or (layer -1) the ops outside the layers (embedding, lm_head):
/// its span from its first op's start to its last op's end, and its ops' durations, bytes and
/// FLOPs summed (ops overlap, so busy_ps may exceed the span).
struct LayerRecord {
  int layer = -1;
  std::uint64_t ops = 0, start_ps = 0, end_ps = 0, busy_ps = 0, hbm_bytes = 0, flops = 0;
  std::uint64_t span_ps() const { return end_ps - start_ps; }
};
/// The layers of `ops` in layer order, the ops outside the layers (layer -1) last.
std::vector<LayerRecord> layers_of(const std::vector<OpRecord>& ops);

class Result {
 public:
  struct State;  ///< the library's internal record of the run

  // What ran (echoing the request with its defaults resolved).
  /// phase: "decode", "prefill", or "mixed" (groups on both paths).
  std::string chip, model, scope, phase, kv_dtype, mla_mode, prefill_mla_mode, weight_dtype, kv_read_engine, attn_split;
  std::string prefill_attention;  ///< "causal" or "full"
  std::string kv_append;          ///< "in-place" or "concat"
  std::string lm_head_weights;    ///< "bf16" or "projections"
  std::string act_dtype;          ///< the projections' activations as asked: "auto", "bf16", "fp8", ...
  /// The step's sequences over all chips, group by group (a uniform batch: one group). batch is
  /// their count, q_len and kv_len the largest of any group (a uniform batch's own).
  std::vector<SequenceRecord> sequences;
  /// The groups the simulated chip ran (its DP rank's share; the fullest rank of a mix).
  std::vector<SequenceRecord> chip_sequences;
  /// The config files: Chip::source() / Model::source() and the SHA-256 of their text.
  std::string chip_source, chip_sha256, model_source, model_sha256;
  std::uint64_t layers = 0, batch = 0, q_len = 0, kv_len = 0, micro_batches = 1, weight_group = 0;
  std::uint64_t host_launch_ns = 0;  ///< Request::host_launch_ns as the run took it (its runtime's when not given)
  /// The runtime (Request::runtime): "" for the chip alone (none), else its config's name and
  /// version, file and text's SHA-256; runtime_parts what it added. chip_ps is the chip's time
  /// (total_ps less the layer launches, which are graph ops), step_ps = chip_ps + the runtime's
  /// total: the step as its software runs it (total_ps without a runtime).
  std::string runtime, runtime_version, runtime_source, runtime_sha256, runtime_adds;
  RuntimeParts runtime_parts;
  std::uint64_t chip_ps = 0, step_ps = 0;
  std::uint64_t cores = 0;              ///< the chip's cores the run used (Request::cores, else all)
  bool prefetch = true, replay = true;  ///< Request::prefetch and Request::replay as the run took them
  std::uint64_t tp = 1, ep = 1, dp = 1, chips = 1;
  bool automatic_sharding = false;
  std::uint64_t weight_bytes = 0, kv_cache_bytes = 0, capacity_bytes = 0;
  // What it took.
  std::uint64_t total_ps = 0, hbm_bytes = 0, c2c_bytes = 0, flops = 0, command_count = 0;
  /// Of command_count: commands the event kernel ran, and commands derived by layer replay.
  std::uint64_t simulated_commands = 0, replayed_commands = 0;
  /// The error band of total_ps (hw/error_band.hpp): where `band_coverage` of the measured times
  /// of held-out rows like this run fell around their predictions, from the chip config's
  /// calibration record. has_band false (bounds 0) for a chip without one; band_basis says which
  /// rows stand behind the band, or why there is none.
  bool has_band = false;
  std::uint64_t band_low_ps = 0, band_high_ps = 0;
  double band_coverage = 0;
  std::string band_basis;
  double tokens_per_s = 0;           ///< new tokens per second over the whole deployment
  double tokens_per_s_per_chip = 0;  ///< tokens_per_s / chips: what one chip of the deployment delivers
  double compute_ns = 0, memory_ns = 0;
  std::string regime;
  std::string bound_by;  ///< the limiting resource over the whole run (as OpRecord::bound_by)
  double bound_share = 0;
  std::uint64_t idle_gap_ps = 0;  ///< the ops' idle gaps summed
  /// Each core's tensor engine waiting at op boundaries, averaged over the cores (at most total_ps).
  std::uint64_t idle_per_core_ps = 0;
  /// Energy (the chip's `energy` section, hw/energy.hpp): the ops' dynamic energy, the chip's
  /// static power over the run, their sum and its average power, the chip's TDP; per token of
  /// the chip's share of a step (0 for a block); tdp_w 0 when the config states none. has_energy
  /// false and all 0 without the section.
  bool has_energy = false;
  double energy_j = 0, dynamic_energy_j = 0, static_energy_j = 0, average_power_w = 0, tdp_w = 0;
  double joules_per_token = 0, tokens_per_joule = 0;
  std::vector<OpRecord> ops;             ///< in emission (topological) order
  std::vector<KindRecord> kinds;         ///< busiest first
  std::vector<EngineCommands> commands;  ///< per engine, chip order
  std::vector<std::string> warnings;     ///< e.g. the step does not fit DDR (without strict_capacity)

  double total_ns() const { return static_cast<double>(total_ps) / 1000.0; }
  double band_low_ns() const { return static_cast<double>(band_low_ps) / 1000.0; }
  double band_high_ns() const { return static_cast<double>(band_high_ps) / 1000.0; }
  /// The op named `name` (in `layer` when given). Throws std::out_of_range when there is none,
  /// or when `layer` is not given and several layers have one.
  const OpRecord& op(const std::string& name, std::optional<int> layer = std::nullopt) const;
  /// Where the time goes by layer: layers_of(ops).
  std::vector<LayerRecord> per_layer() const { return layers_of(ops); }
  /// The CLI's outputs, byte for byte: `g5sim run --json` and the table `g5sim run` prints.
  std::string json() const;
  std::string table() const;
  /// `g5sim run --trace`: Chrome trace-event JSON (Perfetto) of every command and op, only the
  /// ops of decoder layers first..last when `layer_range` is given. Needs a run with
  /// Request::keep_commands (ConfigError otherwise).
  void write_chrome_trace(std::ostream& out, std::optional<std::pair<int, int>> layer_range = std::nullopt) const;
  /// About how many bytes write_chrome_trace writes (0 without keep_commands): for a warning
  /// before a large trace.
  std::uint64_t chrome_trace_bytes(std::optional<std::pair<int, int>> layer_range = std::nullopt) const;
  /// Every field, the JSON and the table as one string (what a Python pickle holds), and back:
  /// restore(saved()) compares equal to this result and writes the same JSON and table (it keeps
  /// no command records: no Chrome trace). Throws ConfigError for a string that is not one.
  std::string saved() const;
  static Result restore(const std::string& saved);

 private:
  friend Result simulate(const Chip&, const Model&, const Request&);
  struct Saved;
  std::shared_ptr<const State> state_;
  std::shared_ptr<const Saved> saved_;  ///< a restored result's outputs (it has no state)
};

/// Two results are equal when every field, the JSON and the table are: identical runs compare
/// equal, whatever thread or process ran them.
bool operator==(const Result& a, const Result& b);
inline bool operator!=(const Result& a, const Result& b) { return !(a == b); }

/// What `g5sim check` prints of a chip and a model before its "ok": each config's identity, the
/// chip's peaks per dtype and DMA channels against DDR (with a warning when they cannot fill it),
/// the model's FFN, parameters and KV cache bytes per token. Lines end in '\n'.
std::string check_report(const Chip& chip, const Model& model);

/// Simulates `request` on one chip of the deployment. Throws ConfigError on bad input, Cancelled
/// when the calling thread's cancel check (below) said stop.
Result simulate(const Chip& chip, const Model& model, const Request& request);

/// A run stopped by its thread's cancel check: no result.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("the run was cancelled") {}
};

/// For the scope's life, simulations on the calling thread ask `check(context)` every 65,536
/// events (a few milliseconds) and stop with Cancelled when it returns true: how a host makes
/// Ctrl-C stop a long run (the Python module polls the interpreter's signals).
class ScopedCancelCheck {
 public:
  ScopedCancelCheck(bool (*check)(void* context), void* context);
  ~ScopedCancelCheck();
  ScopedCancelCheck(const ScopedCancelCheck&) = delete;
  ScopedCancelCheck& operator=(const ScopedCancelCheck&) = delete;

 private:
  std::shared_ptr<void> scope_;
};

/// For the scope's life, simulations on the calling thread tell `report(context, stage, done,
/// total)` how far they are: stage "lowering" after each op (ops done of total), "simulating"
/// every 65,536 events and once at the end (commands completed of the simulated program's; with
/// replay that is the few layers and iterations simulated, not the step). How a front end draws
/// a progress line; `report` must not throw.
class ScopedProgress {
 public:
  ScopedProgress(void (*report)(void* context, const char* stage, std::uint64_t done, std::uint64_t total),
                 void* context);
  ~ScopedProgress();
  ScopedProgress(const ScopedProgress&) = delete;
  ScopedProgress& operator=(const ScopedProgress&) = delete;

 private:
  std::shared_ptr<void> scope_;
};

/// The deployment simulate() runs `request` on, without simulating: tp, ep, dp as given (missing
/// ones 1) or, when none is given, the smallest sharding that fits the chip's DDR; and the global
/// batch (default one sequence per DP rank). simulate() also checks that it divides the model.
struct Deployment {
  std::uint64_t tp = 1, ep = 1, dp = 1, batch = 1;
  bool automatic = false;
  std::uint64_t chips() const { return tp * dp; }
};
Deployment deployment(const Chip& chip, const Model& model, const Request& request);
/// Throws what simulate() would say of the request's deployment (a degree that does not divide the
/// model or the chips, no automatic sharding that fits, a strict capacity exceeded), without
/// simulating: a sweep checks every point this way before the first one runs.
void check_deployment(const Chip& chip, const Model& model, const Request& request);

/// What one chip of the deployment holds when it serves requests (g5sim serve): its DDR, its
/// share of the weights, and the KV cache bytes each cached token takes on the chip that holds
/// its sequence (all num_hidden_layers; the request's kv_dtype and mla_mode decide the layout,
/// models/kv_cache.hpp; DSA's index keys included). The deployment as simulate() chooses it.
/// How one sequence's KV cache grows on the chip that holds it (models/kv_cache.hpp): n cached
/// tokens take bytes(n) = per_token n + window_per_token min(n, window) + fixed (full-attention
/// layers, sliding-window layers, linear-attention states).
struct KvGrowth {
  std::uint64_t per_token = 0, window_per_token = 0, window = 0, fixed = 0;
  /// Throws g5sim::ConfigError past 2^64.
  std::uint64_t bytes(std::uint64_t tokens) const;
  /// Of them, those that do not grow with the sequence: window_per_token min(tokens, window) + fixed.
  std::uint64_t bounded(std::uint64_t tokens) const;
  /// The bytes one token of kv_tokens (and of a block) stands for: per_token, or, when no layer
  /// keeps the whole history, window_per_token.
  std::uint64_t unit() const { return per_token != 0 ? per_token : window_per_token; }
};

struct ServingMemory {
  Deployment deployment;
  /// kv_bytes_per_token: kv.unit(), what a token of the cache's capacity stands for.
  std::uint64_t capacity_bytes = 0, weight_bytes = 0, kv_bytes_per_token = 0;
  KvGrowth kv;
};
ServingMemory serving_memory(const Chip& chip, const Model& model, const Request& request);

}  // namespace g5sim
