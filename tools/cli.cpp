// g5sim's command line (tools/cli.hpp). run_cli() is the only place where errors become exit
// codes: 0 success, 2 bad input (one line on stderr), 1 a failed write or an internal error (a bug:
// please report it with the command line).

#include "tools/cli.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>

#include "api/op_run.hpp"
#include "api/report.hpp"
#include "api/result_state.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "hw/cost_model.hpp"
#include "hw/strict_config.hpp"
#include "models/kv_cache.hpp"
#include "models/memory_footprint.hpp"
#include "models/model_spec.hpp"
#include "models/parallelism.hpp"
#include "models/workload.hpp"
#include "tools/chip_comparison.hpp"
#include "tools/context_list.hpp"
#include "tools/grid_sweep.hpp"
#include "tools/option_scope.hpp"
#include "tools/output_file.hpp"
#include "tools/parallel_for.hpp"
#include "tools/trace_writer.hpp"
#include "tools/validation/calibration.hpp"
#include "tools/validation/validation_report.hpp"

namespace tools {
namespace {

// Set by run_cli for this call (see CliLimits).
CliLimits cli_limits;

// Messages quote input back; control bytes in it would garble the terminal: they print as \xNN.
std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

// The library names its parameters as its API does; the CLI user typed flags. The one table.
std::string flag_of(const std::string& field) {
  static const std::pair<const char*, const char*> kFlags[] = {
      {"batch", "--batch"},
      {"kv_len", "--ctx"},
      {"q_len", "--q-len"},
      {"phase", "--phase"},
      {"kv_format", "--kv-dtype"},
      {"weight_dtype", "--weight-dtype"},
      {"weight_group", "--weight-group"},
      {"mla_mode", "--mla-mode"},
      {"prefill_mla_mode", "--prefill-mla-mode"},
      {"kv_read_engine", "--kv-read-engine"},
      {"tp", "--tp"},
      {"ep", "--ep"},
      {"dp", "--dp"},
      {"sharding", "--tp/--ep/--dp"},
      {"layers", "--layers"},
      {"micro_batches", "--micro-batches"},
      {"cores", "--cores"},
      {"expert_load", "--expert-load"},
      {"max_commands", "--max-commands"},
      {"scope", "--scope"},
      {"attn_split", "--attn-split"},
      {"strict_capacity", "--strict-capacity"},
      {"replay", "--no-replay"},
  };
  for (const auto& [name, flag] : kFlags) {
    if (field == name) return flag;
  }
  return field;
}

// Every count on the command line is a whole number within its documented range (README,
// "Input limits"): no sign (CLI11 would wrap "-1" to 2^64 - 1), no overflow, checked before use.
CLI::Validator count_in(std::uint64_t lo, std::uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
          return fmt::format("expected a whole number, got '{}'", text);
        }
        std::uint64_t v = 0;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || ptr != text.data() + text.size() || v < lo || v > hi) {
          return fmt::format("{} is outside {}..{}", text, lo, hi);
        }
        return "";
      },
      fmt::format("{}..{}", lo, hi));
}

constexpr std::uint64_t kMaxBatch = std::uint64_t{1} << 20;
constexpr std::uint64_t kMaxTokens = std::uint64_t{1} << 24;
constexpr std::uint64_t kMaxDegree = 65536;

// The options `run` and `sweep` share: a g5sim::Request, the config paths (empty: the shipped
// ones) and the context text (one length, or a list for `sweep`).
struct CommonOptions {
  std::string chip, model;
  std::string ctx = "4096";
  g5sim::Request request;
  std::vector<std::string> given;  ///< the options option_scope rules on that were given
};

// The flags `run` and `sweep` share. A sweep takes lists for the grid's axes (SweepGrid), which
// it registers itself (`grid`).
void add_common(CLI::App* cmd, CommonOptions& o, bool grid = false) {
  g5sim::Request& r = o.request;
  if (!grid) {
    cmd->add_option("--chip", o.chip, "chip config YAML (default: the shipped sg2262.yaml)");
    cmd->add_option("--model", o.model,
                    "model config: YAML, or a Hugging Face config.json (default: the shipped deepseek-v3.yaml)");
    cmd->add_option("--phase", r.phase, "decode or prefill")->capture_default_str();
    cmd->add_option("--batch", r.batch, "sequences per step over all chips (default: one per DP rank)")
        ->check(count_in(1, kMaxBatch));
    cmd->add_option("--kv-dtype", r.kv_dtype, "KV cache format: bf16, fp8 or fp8-flashmla")->capture_default_str();
    cmd->add_option("--mla-mode", r.mla_mode, "MLA decode mode and cache: absorb, standard or expanded")
        ->capture_default_str();
    cmd->add_option("--weight-dtype", r.weight_dtype,
                    "projection weights: bf16, fp16, fp8 (128x128 block scales), int8 or int4 (group scales, "
                    "--weight-group); default: the model config's quantization, else bf16");
  }
  cmd->add_option("--q-len", r.q_len, "query tokens per sequence (decode default 1; prefill = ctx)")
      ->check(count_in(1, kMaxTokens));
  cmd->add_option("--weight-group", r.weight_group,
                  "int8/int4 weights: k elements per fp16 scale (0: one per column); default: the model config's, "
                  "else 128 (Sophgo's demos use 64)")
      ->check(count_in(0, models::kMaxWeightGroup));
  cmd->add_option("--prefill-mla-mode", r.prefill_mla_mode, "MLA prefill compute: absorb, standard or expanded (MHA)")
      ->capture_default_str();
  cmd->add_option("--kv-read-engine", r.kv_read_engine,
                  "DMA engine of the decode history read (SG2262: gdma streams beside fa2, sdma loads it first); "
                  "default: the chip's first kv_stream engine");
  cmd->add_option("--attn-split", r.attn_split, "decode attention over cores: seq (flash decoding) or head")
      ->capture_default_str();
  cmd->add_option("--scope", r.scope, "block (one attention block) or step (the whole decoder)")->capture_default_str();
  cmd->add_option("--layers", r.layers, "step: simulate only the first N decoder layers")->check(count_in(1, 1024));
  cmd->add_option("--micro-batches", r.micro_batches,
                  "step: split the chip's sequences into N groups whose attention overlaps the others' MoE all-to-alls")
      ->capture_default_str()
      ->check(count_in(1, 64));
  cmd->add_option("--expert-load", r.expert_load, "step: measured routing, CSV layer,expert,tokens");
  cmd->add_option("--cores", r.cores, "run on the chip's first N cores (default: all)")->check(count_in(1, 4096));
  cmd->add_option("--tp", r.tp, "tensor parallel chips (heads, FFN width, vocabulary)")->check(count_in(1, kMaxDegree));
  cmd->add_option("--ep", r.ep, "expert parallel chips (routed experts)")->check(count_in(1, kMaxDegree));
  cmd->add_option("--dp", r.dp, "data parallel chips (batch)")->check(count_in(1, kMaxDegree));
  cmd->add_flag("--strict-capacity", r.strict_capacity, "fail when a chip's weights and KV cache exceed its DDR");
  cmd->add_flag("!--no-prefetch", r.prefetch_weights,
                "no cross-op weight prefetch: every load waits for the op's producers");
  cmd->add_flag("!--no-replay", r.replay,
                "simulate every command: no exact replay of identical layers (same results, slower)");
  cmd->add_option("--max-commands", r.max_commands,
                  "refuse a run estimated to need more commands (56 B of memory each)")
      ->capture_default_str()
      ->check(count_in(1, std::uint64_t{1} << 40));
}

g5sim::Chip chip_of(const std::string& path) {
  return g5sim::Chip::from_file(path.empty() ? g5sim::shipped_chip_path() : path);
}

g5sim::Model model_of(const std::string& path) {
  return g5sim::Model::from_file(path.empty() ? g5sim::shipped_model_path() : path);
}

// The request of one context length, with the embedding program's ceiling on commands.
g5sim::Request request_for(const CommonOptions& o, std::uint64_t ctx) {
  g5sim::Request r = o.request;
  r.ctx = ctx;
  r.max_commands = std::min(r.max_commands, cli_limits.max_commands);
  return r;
}

g5sim::Result simulate_and_warn(const g5sim::Chip& chip, const g5sim::Model& model, const g5sim::Request& request) {
  g5sim::Result result = g5sim::simulate(chip, model, request);
  for (const std::string& w : result.warnings) std::cerr << "g5sim: warning: " << printable(w) << '\n';
  return result;
}

std::uint64_t single_ctx(const std::string& text) {
  const auto list = tools::parse_context_list(text);
  if (list.size() != 1) throw hw::ConfigError("--ctx: `run` takes one context length (use `sweep` for a list)");
  return list.front();
}

// The options tools/option_scope.hpp rules on that `cmd`'s command line gave (as Request fields).
std::vector<std::string> scoped_options_given(const CLI::App& cmd) {
  std::vector<std::string> given;
  for (const char* field : {"mla_mode", "prefill_mla_mode", "kv_read_engine", "attn_split", "weight_group", "replay"}) {
    if (cmd.count(flag_of(field)) > 0) given.push_back(field);
  }
  return given;
}

// Why no point of `points` feels the Request field `field` (the first point's reason), or "" when
// one does.
std::string why_no_point_feels(const std::string& field, const std::vector<g5sim::Model>& models,
                               const std::vector<tools::SweepPoint>& points, const g5sim::Request& base) {
  std::string why;
  for (const tools::SweepPoint& p : points) {
    const std::string reason = tools::why_option_does_not_apply(field, models[p.model], tools::point_request(base, p));
    if (reason.empty()) return {};
    if (why.empty()) why = reason;
  }
  return why;
}

// A given option that no run of the grid feels is an error naming its flag and why; one that some
// points feel is fine (a sweep over both phases, say). `grid`: the points stand for a sweep's or
// a comparison's grid, not one run.
void refuse_options_without_effect(const std::vector<std::string>& given, const std::vector<g5sim::Model>& models,
                                   const std::vector<tools::SweepPoint>& points, const CommonOptions& o, bool grid) {
  for (const std::string& field : given) {
    const std::string why = why_no_point_feels(field, models, points, o.request);
    if (!why.empty()) {
      throw hw::ConfigError(fmt::format("{}: changes {}: {}", flag_of(field),
                                        grid ? "no point of the grid" : "nothing in this run", why));
    }
  }
}

struct TraceOptions {
  std::string path;
  std::string layers;
};

int run_command(const CommonOptions& o, const std::string& json_path, const TraceOptions& trace_options) {
  // Outputs are opened (and the trace filter checked) before the run, which can take long.
  tools::TraceFilter filter;
  if (!trace_options.layers.empty()) {
    if (trace_options.path.empty()) throw hw::ConfigError("--trace-layers needs --trace PATH");
    filter.layers = tools::parse_layer_range(trace_options.layers);
  }
  if (trace_options.path == "-" && json_path == "-") {
    throw hw::ConfigError("--trace - and --json - both want standard output: give one of them a PATH");
  }
  std::optional<tools::OutputFile> trace, json;
  if (!trace_options.path.empty()) trace.emplace(trace_options.path, "--trace");
  if (!json_path.empty()) json.emplace(json_path, "--json");
  const g5sim::Chip chip = chip_of(o.chip);
  const g5sim::Model model = model_of(o.model);
  g5sim::Request request = request_for(o, single_ctx(o.ctx));
  tools::SweepPoint point;
  point.ctx = request.ctx;
  refuse_options_without_effect(o.given, {model}, {point}, o, false);
  request.keep_commands = trace.has_value();
  const g5sim::Result result = simulate_and_warn(chip, model, request);
  if (trace) {
    const g5sim::Result::State& s = result.state();
    tools::write_chrome_trace(trace->stream(), chip.data().chip, s.simulation->graph, s.simulation->lowered,
                              s.simulation->trace, s.timeline, filter);
    trace->close();
  }
  // A JSON or trace written to standard output replaces the table there.
  if (json_path != "-" && trace_options.path != "-") std::cout << result.table();
  if (json) {
    json->stream() << result.json();
    json->close();
  }
  tools::check_stdout();
  return 0;
}

struct SweepOptions {
  tools::SweepGrid grid;
  std::string csv_path = "-", json_path, sharding, shard;
  unsigned jobs = 0;
  bool head_split = false;
};

// "I/N" -> (I, N) with 0 <= I < N.
std::pair<std::size_t, std::size_t> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  std::size_t i = 0, n = 0;
  const char* end = text.data() + text.size();
  const auto a = std::from_chars(text.data(), text.data() + std::min(slash, text.size()), i);
  const auto b = slash == std::string::npos ? a : std::from_chars(text.data() + slash + 1, end, n);
  if (slash == std::string::npos || a.ec != std::errc() || b.ec != std::errc() || b.ptr != end ||
      a.ptr != text.data() + slash || n == 0 || i >= n || n > 1'000'000) {
    throw hw::ConfigError(
        fmt::format("--shard: '{}' is not I/N with 0 <= I < N (a Slurm array's task id over its size)", text));
  }
  return {i, n};
}

// Points run `jobs` at a time on as many threads; rows and warnings are written in point order
// once a batch is done, so the output is the same bytes whatever the thread count, and memory
// holds at most one batch of results. A progress line goes to stderr when it is a terminal.
int sweep_command(const CommonOptions& o, SweepOptions s) {
  s.grid.contexts = tools::parse_context_list(o.ctx);
  const auto [shard, shards] = s.shard.empty() ? std::pair<std::size_t, std::size_t>{0, 1} : parse_shard(s.shard);
  const bool fixed = o.request.tp || o.request.ep || o.request.dp;
  if (s.sharding == "auto" && fixed) {
    throw hw::ConfigError("--sharding auto chooses tp, ep and dp per point: drop --tp/--ep/--dp, or say fixed");
  }
  if (s.sharding == "fixed" && !fixed) throw hw::ConfigError("--sharding fixed needs --tp, --ep or --dp");
  if (!s.sharding.empty() && s.sharding != "auto" && s.sharding != "fixed") {
    throw hw::ConfigError(fmt::format("--sharding: expected auto or fixed, got '{}'", s.sharding));
  }
  if (s.csv_path == "-" && s.json_path == "-") {
    throw hw::ConfigError("--csv - and --json - both want standard output: give one of them a PATH");
  }
  std::vector<g5sim::Chip> chips;
  for (const std::string& path : s.grid.chips.empty() ? std::vector<std::string>{""} : s.grid.chips) {
    chips.push_back(chip_of(path));
    for (std::size_t i = 0; i + 1 < chips.size(); ++i) {
      if (chips[i].name() == chips.back().name()) {
        throw hw::ConfigError(fmt::format("--chip: two configs name their chip '{}': rows could not tell them apart",
                                          chips.back().name()));
      }
    }
  }
  std::vector<g5sim::Model> models;
  for (const std::string& path : s.grid.models.empty() ? std::vector<std::string>{""} : s.grid.models) {
    models.push_back(model_of(path));
  }
  // Over the whole grid, so that every shard of it says the same. The rules never look at the
  // batch or the context, so one of each stands for all (a large grid is checked at once).
  tools::SweepGrid rules_grid = s.grid;
  if (!s.grid.batches.empty()) rules_grid.batches = {s.grid.batches.front()};
  if (!s.grid.contexts.empty()) rules_grid.contexts = {s.grid.contexts.front()};
  const std::vector<tools::SweepPoint> rules_points = tools::grid_points(rules_grid);
  refuse_options_without_effect(o.given, models, rules_points, o, true);
  if (s.head_split && o.request.attn_split == "head") {
    throw hw::ConfigError(
        "--head-split: the points already run with --attn-split head (the columns would repeat them)");
  }
  // --head-split reruns points with attention split by heads: it applies where --attn-split does.
  if (const std::string why = s.head_split ? why_no_point_feels("attn_split", models, rules_points, o.request) : "";
      !why.empty()) {
    throw hw::ConfigError("--head-split: changes no point of the grid: " + why);
  }
  // This shard's points, made one batch at a time from their numbers: shard + k x shards.
  const std::uint64_t grid_size = tools::grid_size(s.grid);
  const std::uint64_t count = grid_size > shard ? (grid_size - shard + shards - 1) / shards : 0;
  std::optional<tools::OutputFile> csv, json;
  if (!s.csv_path.empty() && s.csv_path != "none") csv.emplace(s.csv_path, "--csv");
  if (!s.json_path.empty()) json.emplace(s.json_path, "--json");
  if (csv) tools::write_sweep_csv_header(csv->stream(), s.head_split);
  struct Done {
    std::optional<g5sim::Result> result, heads;
  };
  const bool progress = isatty(STDERR_FILENO) != 0;
  const auto started = std::chrono::steady_clock::now();
  // Per point without its context: the automatic shardings chosen (several = rows that look
  // comparable but ran on different deployments).
  std::map<std::string, std::set<std::string>> deployments;
  const std::uint64_t batch = std::max(1u, s.jobs);
  for (std::uint64_t first = 0; first < count; first += batch) {
    std::vector<tools::SweepPoint> points;
    for (std::uint64_t k = first; k < std::min(count, first + batch); ++k) {
      points.push_back(tools::grid_point(s.grid, shard + k * shards));
    }
    std::vector<Done> done(points.size());
    tools::parallel_for(done.size(), s.jobs, [&](std::size_t i) {
      const tools::SweepPoint& p = points[i];
      const g5sim::Request request = tools::point_request(request_for(o, p.ctx), p);
      try {
        done[i].result = g5sim::simulate(chips[p.chip], models[p.model], request);
        if (!s.head_split || !tools::why_option_does_not_apply("attn_split", models[p.model], request).empty()) return;
        g5sim::Request by_heads = request;
        by_heads.attn_split = "head";
        done[i].heads = g5sim::simulate(chips[p.chip], models[p.model], by_heads);
      } catch (const g5sim::ConfigError& e) {
        // One line naming the point, then what the run would have said.
        const std::string where = e.source().empty() && !e.field().empty() ? flag_of(e.field()) + ": " : "";
        throw hw::ConfigError(fmt::format("sweep point {} ({} {} {}, batch {}, ctx {}): {}{}", p.index,
                                          chips[p.chip].name(), models[p.model].name(), request.phase,
                                          p.batch ? std::to_string(*p.batch) : "default", p.ctx, where, e.what()));
      }
    });
    for (std::size_t i = 0; i < done.size(); ++i) {
      const g5sim::Result& r = *done[i].result;
      for (const std::string& w : r.warnings) std::cerr << "g5sim: warning: " << printable(w) << '\n';
      const g5sim::Result* heads = done[i].heads ? &*done[i].heads : nullptr;
      if (csv) tools::write_sweep_csv_row(csv->stream(), points[i], r, s.head_split, heads);
      if (json) tools::write_sweep_json_line(json->stream(), points[i], r, s.head_split, heads);
      if (r.automatic_sharding && s.grid.contexts.size() > 1) {
        deployments[fmt::format("{} {} {} {} {} {} {} {}", r.chip, r.model, r.phase, r.batch, r.q_len, r.kv_dtype,
                                r.mla_mode, r.weight_dtype)]
            .insert(fmt::format("tp {} ep {} dp {}", r.tp, r.ep, r.dp));
      }
    }
    if (csv) csv->stream().flush();
    if (json) json->stream().flush();
    if (progress) {
      const std::uint64_t n = first + done.size();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const double rate = seconds > 0 ? static_cast<double>(n) / seconds : 0;
      std::cerr << fmt::format("\rsweep: {}/{} points, {:.1f} points/s, {:.0f} s left   ", n, count, rate,
                               rate > 0 ? static_cast<double>(count - n) / rate : 0.0)
                << std::flush;
    }
  }
  if (progress && count > 0) std::cerr << '\n';
  for (const auto& [group, chosen] : deployments) {
    if (chosen.size() > 1) {
      std::cerr << "g5sim: warning: the automatic sharding changes with the context (" << printable(group) << ": "
                << fmt::format("{}", fmt::join(chosen, ", "))
                << "); the tp, ep and dp columns say which, --tp/--ep/--dp fix one\n";
    }
  }
  if (csv) csv->close();
  if (json) json->close();
  return 0;
}

int merge_command(const std::vector<std::string>& paths, const std::string& out_path) {
  const std::string merged = tools::merge_sweeps(paths);
  tools::OutputFile out(out_path, "--out");
  out.stream() << merged;
  out.close();
  return 0;
}

// What the chip's numbers add up to: peaks per dtype, and each DMA engine's channels over all
// cores against the DDR, with a warning when they cannot fill it (then DDR never limits a run).
void print_chip_totals(const hw::Chip& chip) {
  const hw::CostModel cost(chip);
  std::string peaks;
  for (const hw::DType t : {hw::DType::fp8, hw::DType::bf16, hw::DType::fp32}) {
    const double cube = cost.cube_peak_flops(t), vector = cost.vector_peak_ops(t);
    if (cube > 0)
      peaks += fmt::format("{}cube {} {:.1f} TFLOPS", peaks.empty() ? "" : ", ", hw::name_of(t), cube / 1e12);
    if (vector > 0) {
      peaks += fmt::format("{}vector {} {:.2f} Tops", peaks.empty() ? "" : ", ", hw::name_of(t), vector / 1e12);
    }
  }
  fmt::print("peaks {}\n", peaks);
  const double ddr = chip.ddr_bandwidth_gb_per_s * chip.ddr_efficiency;
  double reaching_ddr = 0;
  std::string channels;
  for (std::size_t e = 0; e < chip.engines.size(); ++e) {
    const hw::EngineSpec& spec = chip.engines[e];
    if (spec.kind != hw::EngineKind::dma) continue;
    const double sum = cost.channel_gb_per_s(static_cast<hw::EngineId>(e)) * chip.cores;
    channels += fmt::format("{}{} {:.1f}", channels.empty() ? "" : ", ", spec.display_name(), sum);
    for (std::uint32_t r : spec.crosses) {
      if (chip.resources[r].name == "ddr") reaching_ddr += sum;
    }
  }
  fmt::print("dma   channels over {} cores, GB/s: {} (sum {:.1f}) vs DDR {:.1f} x eta_m {} = {:.1f}\n", chip.cores,
             channels, reaching_ddr, chip.ddr_bandwidth_gb_per_s, chip.ddr_efficiency, ddr);
  if (reaching_ddr > 0 && reaching_ddr < ddr) {
    fmt::print(
        "warning: the DMA channels reaching DDR sum to {:.1f} GB/s, below the DDR's {:.1f}: DDR can never be the "
        "limiting resource on this chip (the channels are)\n",
        reaching_ddr, ddr);
  }
}

// The model's size: parameters (every layer, bf16 elements, no sharing) and the KV cache one
// token adds (decode defaults: bf16 cache, absorb mode for MLA, DSA's indexer keys).
void print_model_totals(const models::ModelSpec& model) {
  models::Workload w = models::make_workload(models::Phase::decode, 1, 2, std::nullopt, models::KvFormat::bf16);
  w.weight_dtype = models::WeightDtype::bf16;
  const std::uint64_t params = models::chip_footprint(model, w, models::Parallelism{1, 1, 1}).weight_bytes / 2;
  const std::uint64_t per_layer =
      models::kv_bytes_per_token_per_layer(model, w) + models::indexer_bytes_per_token_per_layer(model);
  fmt::print("size  {} parameters ({:.1f} B); KV cache {} B per token per layer, {} B per token over {} layers\n",
             params, static_cast<double>(params) / 1e9, per_layer, per_layer * model.num_hidden_layers,
             model.num_hidden_layers);
}

int check_command(const std::string& chip_path, const std::string& model_path) {
  const g5sim::Chip chip_config = chip_of(chip_path);
  const g5sim::Model model_config = model_of(model_path);
  const hw::Chip& chip = chip_config.data().chip;
  const models::ModelSpec& model = model_config.data().spec;
  fmt::print("chip  {}: {} ({} cores, cube bf16 peak {:.1f} TFLOPS, DDR {:.1f} GB/s x eta_m {})\n", chip.source,
             chip.name, chip.cores, hw::CostModel(chip).cube_peak_flops(hw::DType::bf16) / 1e12,
             chip.ddr_bandwidth_gb_per_s, chip.ddr_efficiency);
  if (model.attention == models::AttentionKind::mla) {
    fmt::print(
        "model {}: {} ({}, {} layers, MLA: heads {}, kv_lora_rank {}, qk_rope_head_dim {}, latent {} "
        "elements/token/layer)\n",
        model.source, model.name, model.model_type, model.num_hidden_layers, model.num_attention_heads,
        model.kv_lora_rank, model.qk_rope_head_dim, model.latent_kv_elements());
  } else {
    fmt::print("model {}: {} ({}, {} layers, GQA: heads {}, kv heads {}, head_dim {})\n", model.source, model.name,
               model.model_type, model.num_hidden_layers, model.num_attention_heads, model.num_key_value_heads,
               model.head_dim);
  }
  if (model.moe) {
    fmt::print("ffn   MoE after {} dense layers: {} routed experts (top {}), {} shared, width {}\n",
               model.moe->first_k_dense_replace, model.moe->n_routed_experts, model.moe->num_experts_per_tok,
               model.moe->n_shared_experts, model.moe->moe_intermediate_size);
  } else {
    fmt::print("ffn   dense, width {}\n", model.intermediate_size);
  }
  print_chip_totals(chip);
  print_model_totals(model);
  fmt::print("ok\n");
  tools::check_stdout();
  return 0;
}

std::string default_measured_path() { return g5sim::data_dir() + "/validation/measured.csv"; }

struct ValidateArgs {
  std::string measured, csv_path, json_path;
  std::vector<std::string> chips;
  bool calibrated = false;
  unsigned jobs = 0;
  std::uint64_t max_commands = std::uint64_t{1} << 26;
};

int validate_command(const ValidateArgs& a) {
  namespace v = tools::validation;
  const v::MeasuredTable table = v::read_measured_file(a.measured.empty() ? default_measured_path() : a.measured);
  std::optional<tools::OutputFile> csv, json;
  if (!a.csv_path.empty()) csv.emplace(a.csv_path, "--csv");
  if (!a.json_path.empty()) json.emplace(a.json_path, "--json");
  v::ValidateOptions options;
  options.calibrated = a.calibrated;
  options.jobs = a.jobs == 0 ? tools::default_jobs() : a.jobs;
  options.max_commands = std::min(a.max_commands, cli_limits.max_commands);
  options.only_chips = a.chips;
  const v::ValidationReport report = v::validate_table(table, options);
  if (a.csv_path != "-" && a.json_path != "-") v::write_validation_table(std::cout, report);
  if (csv) {
    v::write_validation_csv(csv->stream(), report);
    csv->close();
  }
  if (json) {
    v::write_validation_json(json->stream(), report);
    json->close();
  }
  tools::check_stdout();
  return 0;
}

struct CalibrateArgs {
  std::string chip, measured, out;
  std::vector<std::string> fit, rows;
  unsigned jobs = 0;
  int max_iterations = 30;
  bool no_leave_one_out = false;
  std::size_t folds = 0;
  std::uint64_t max_commands = std::uint64_t{1} << 25;
};

int calibrate_command(const CalibrateArgs& a) {
  namespace v = tools::validation;
  const v::MeasuredTable table = v::read_measured_file(a.measured.empty() ? default_measured_path() : a.measured);
  // A stem names a shipped config, as in the table's chip column.
  const std::string chip_path = v::ConfigResolver(table.path, false).chip_path(a.chip);
  tools::OutputFile out(a.out, "--out");
  v::CalibrationOptions options;
  options.fit = a.fit;
  options.rows = a.rows;
  options.jobs = a.jobs == 0 ? tools::default_jobs() : a.jobs;
  options.max_iterations = a.max_iterations;
  options.leave_one_out = !a.no_leave_one_out;
  options.folds = a.folds;
  options.chip_label = a.chip;
  options.table_label = a.measured.empty() ? "validation/measured.csv (shipped)" : a.measured;
  options.max_commands = std::min(a.max_commands, cli_limits.max_commands);
  const v::CalibrationResult result = v::calibrate(chip_path, table, options);
  out.stream() << result.calibrated_yaml;
  out.close();
  v::write_calibration_report(a.out == "-" ? std::cerr : std::cout, result);
  tools::check_stdout();
  return 0;
}

}  // namespace

// "; did you mean --ctx?" for the first --option on the command line that the chosen subcommand
// (or the top level) does not have, when one of its options is near it (hw::closest_match); else "".
std::string did_you_mean(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* scope = &app;
  for (int i = 1; i < argc; ++i) {
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == argv[i]) scope = sub;
    }
    if (scope != &app) break;
  }
  std::vector<std::string> known;
  for (const CLI::Option* o : scope->get_options({})) {
    for (const std::string& name : o->get_lnames()) known.push_back("--" + name);
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 3 || arg.rfind("--", 0) != 0) continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), arg) != known.end()) continue;
    const std::string best = hw::closest_match(arg, known);  // the config readers' suggestion rule
    return best.empty() ? std::string() : "; did you mean " + best + "?";
  }
  return {};
}

// The same workloads on every chip of --chip: points run as a sweep's (the chip outermost, so
// workload w of chip c is point c x workloads + w), then one row per workload.
int compare_command(const CommonOptions& o, SweepOptions s, const std::string& csv_path) {
  if (s.grid.chips.size() < 2) throw hw::ConfigError("--chip: compare needs two chips or more (A.yaml,B.yaml)");
  if (s.grid.batches.empty()) {
    throw hw::ConfigError("--batch: compare needs it (one sequence per DP rank would differ between chips)");
  }
  s.grid.contexts = tools::parse_context_list(o.ctx);
  std::vector<g5sim::Chip> chips;
  for (const std::string& path : s.grid.chips) chips.push_back(chip_of(path));
  std::vector<g5sim::Model> models;
  for (const std::string& path : s.grid.models.empty() ? std::vector<std::string>{""} : s.grid.models) {
    models.push_back(model_of(path));
  }
  std::optional<tools::OutputFile> csv;
  if (!csv_path.empty()) csv.emplace(csv_path, "--csv");
  const std::uint64_t size = tools::grid_size(s.grid);
  if (size / chips.size() > tools::kMaxComparedWorkloads) {
    throw hw::ConfigError(fmt::format("compare: {} workloads, more than {} (g5sim sweep --chip ... writes any number)",
                                      size / chips.size(), tools::kMaxComparedWorkloads));
  }
  const std::vector<tools::SweepPoint> points = tools::grid_points(s.grid);
  refuse_options_without_effect(o.given, models, points, o, true);
  std::vector<tools::ComparedRun> runs(points.size());
  tools::parallel_for(points.size(), s.jobs, [&](std::size_t i) {
    const tools::SweepPoint& p = points[i];
    const g5sim::Request request = tools::point_request(request_for(o, p.ctx), p);
    try {
      runs[i] = tools::ComparedRun::of(g5sim::simulate(chips[p.chip], models[p.model], request));
    } catch (const g5sim::ConfigError& e) {
      const std::string where = e.source().empty() && !e.field().empty() ? flag_of(e.field()) + ": " : "";
      throw hw::ConfigError(fmt::format("compare on {} ({} {}, batch {}, ctx {}): {}{}", chips[p.chip].name(),
                                        models[p.model].name(), request.phase, *p.batch, p.ctx, where, e.what()));
    }
  });
  const std::size_t workloads = points.size() / chips.size();
  std::vector<std::vector<tools::ComparedRun>> rows(workloads);
  for (std::size_t c = 0; c < chips.size(); ++c) {
    for (std::size_t w = 0; w < workloads; ++w) rows[w].push_back(std::move(runs[c * workloads + w]));
  }
  for (const auto& row : rows) {
    for (const tools::ComparedRun& r : row) {
      for (const std::string& w : r.warnings) std::cerr << "g5sim: warning: " << printable(w) << '\n';
    }
  }
  if (csv_path != "-") tools::write_comparison_table(std::cout, rows);
  if (csv) {
    tools::write_comparison_csv(csv->stream(), rows);
    csv->close();
  }
  tools::check_stdout();
  return 0;
}

// The grid's axes, comma lists (a sweep's and a comparison's).
void add_grid(CLI::App* cmd, CommonOptions& sweep_opts, SweepOptions& sweep_args) {
  tools::SweepGrid& grid = sweep_args.grid;
  cmd->add_option("--chip", grid.chips, "chip config YAMLs, comma list (default: the shipped sg2262.yaml)")
      ->delimiter(',');
  cmd->add_option("--model", grid.models, "model configs, comma list (default: the shipped deepseek-v3.yaml)")
      ->delimiter(',');
  cmd->add_option("--phase", grid.phases, "decode and/or prefill (default decode)")->delimiter(',');
  cmd->add_option("--batch", grid.batches, "sequences per step over all chips, comma list (default: one per DP rank)")
      ->delimiter(',')
      ->check(count_in(1, kMaxBatch));
  cmd->add_option("--kv-dtype", grid.kv_dtypes, "KV cache formats, comma list (default bf16)")->delimiter(',');
  cmd->add_option("--mla-mode", grid.mla_modes, "MLA decode modes, comma list (default absorb)")->delimiter(',');
  cmd->add_option("--weight-dtype", grid.weight_dtypes,
                  "weight formats, comma list (default: the model config's quantization, else bf16)")
      ->delimiter(',');
  cmd->add_option("--ctx", sweep_opts.ctx, "comma list or START:STOP:xFACTOR")->required();
}

int run_cli(int argc, const char* const* argv, const CliLimits& limits) {
  cli_limits = limits;
  CLI::App app{
      "g5sim: instruction-level performance simulator of LLM inference steps (DeepSeek MLA first) on "
      "SG2262-class TPUs and other chips described in YAML"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("g5sim ") + g5sim::version());

  CommonOptions run_opts;
  std::string json_path;
  CLI::App* run = app.add_subcommand(
      "run", "simulate one chip's share of a decoder step (or --scope block: one attention block); per-op timings");
  add_common(run, run_opts);
  run->add_option("--ctx", run_opts.ctx, "context length kv_len")->capture_default_str();
  run->add_option("--json", json_path, "also write JSON to PATH ('-' for stdout only)");
  TraceOptions trace_options;
  run->add_option("--trace", trace_options.path,
                  "write a Chrome trace-event JSON (Perfetto) to PATH ('-' for stdout only); simulates every command");
  run->add_option("--trace-layers", trace_options.layers, "trace only decoder layers I..J (I:J or I)");

  CommonOptions sweep_opts;
  SweepOptions sweep_args;
  CLI::App* sweep = app.add_subcommand(
      "sweep", "simulate a grid (chips x models x phases x formats x modes x batches x contexts), tidy CSV out");
  add_common(sweep, sweep_opts, true);
  add_grid(sweep, sweep_opts, sweep_args);
  sweep->add_option("--sharding", sweep_args.sharding,
                    "auto (the smallest that fits DDR, per point) or fixed (--tp/--ep/--dp); default: fixed when "
                    "one of them is given");
  sweep->add_option("--shard", sweep_args.shard, "run only points p with p mod N == I (I/N, e.g. a Slurm array task)");
  sweep->add_option("--csv", sweep_args.csv_path, "CSV destination ('-' = stdout, 'none' = no CSV)")
      ->capture_default_str();
  sweep->add_option("--json", sweep_args.json_path,
                    "also write JSON lines, one object per point, to PATH ('-': stdout)");
  sweep
      ->add_option("--jobs", sweep_args.jobs,
                   "points simulated at once, on as many threads (default: the machine's cores)")
      ->check(count_in(1, 1024));
  sweep->add_flag("--head-split", sweep_args.head_split,
                  "also simulate each point with --attn-split head: columns head_split_total_ns, "
                  "head_split_kv_cache_read_bytes");

  CommonOptions compare_opts;
  SweepOptions compare_args;
  std::string compare_csv;
  CLI::App* compare = app.add_subcommand(
      "compare", "the same workloads on several chips (--chip A.yaml,B.yaml): one table, with speedups");
  add_common(compare, compare_opts, true);
  add_grid(compare, compare_opts, compare_args);
  compare->add_option("--csv", compare_csv, "also write CSV to PATH ('-' for stdout only)");
  compare->add_option("--jobs", compare_args.jobs, "points simulated at once (default: the machine's cores)")
      ->check(count_in(1, 1024));

  std::vector<std::string> merge_paths;
  std::string merge_out = "-";
  CLI::App* merge = app.add_subcommand("merge", "join sweep CSV shards (--shard I/N) into the unsharded file");
  merge->add_option("files", merge_paths, "the shards' CSV files")->required();
  merge->add_option("--out", merge_out, "destination ('-' = stdout)")->capture_default_str();

  CLI::App* op = app.add_subcommand("op", "simulate one op alone (microbenchmark)");
  op->require_subcommand(1);
  std::string op_chip;
  std::uint32_t op_cores = 0;
  std::string op_json;
  auto add_op_common = [&](CLI::App* cmd) {
    cmd->add_option("--chip", op_chip, "chip config YAML (default: the shipped sg2262.yaml)");
    cmd->add_option("--cores", op_cores, "cores to use (default: all)")->check(count_in(0, 4096));
    cmd->add_option("--json", op_json, "write JSON to PATH ('-' for stdout only)");
  };
  api::MatmulRequest mm;
  std::string mm_dtype = "bf16";
  CLI::App* op_matmul = op->add_subcommand("matmul", "[m, k] x [k, n]");
  op_matmul->add_option("--m", mm.m, "rows")->required()->check(count_in(1, kMaxTokens));
  op_matmul->add_option("--n", mm.n, "columns")->required()->check(count_in(1, kMaxTokens));
  op_matmul->add_option("--k", mm.k, "reduction")->required()->check(count_in(1, kMaxTokens));
  op_matmul->add_option("--dtype", mm_dtype, "bf16 or fp8")->capture_default_str();
  add_op_common(op_matmul);
  api::Fa2Request fa;
  CLI::App* op_fa2 = op->add_subcommand("fa2", "flash attention (decode when q-len < kv-len)");
  op_fa2->add_option("--batch", fa.batch, "sequences")->capture_default_str()->check(count_in(1, kMaxBatch));
  op_fa2->add_option("--q-len", fa.q_len, "query tokens per sequence")
      ->capture_default_str()
      ->check(count_in(1, kMaxTokens));
  op_fa2->add_option("--kv-len", fa.kv_len, "tokens attended")->required()->check(count_in(1, kMaxTokens));
  op_fa2->add_option("--heads", fa.heads, "query heads")->required()->check(count_in(1, 4096));
  op_fa2->add_option("--kv-heads", fa.kv_heads, "KV heads")->capture_default_str()->check(count_in(1, 4096));
  op_fa2->add_option("--qk-dim", fa.qk_dim, "score dimension")->required()->check(count_in(1, 65536));
  op_fa2->add_option("--v-dim", fa.v_dim, "value dimension")->required()->check(count_in(1, 65536));
  op_fa2->add_flag("--shared-kv", fa.shared_kv, "V is the first v-dim elements of K (MLA latent)");
  op_fa2->add_flag("--causal", fa.causal, "prefill: each query attends the keys up to itself (skips the rest)");
  add_op_common(op_fa2);

  std::string check_chip, check_model;
  CLI::App* check = app.add_subcommand("check", "validate a chip and a model config");
  check->add_option("--chip", check_chip, "chip config YAML (default: the shipped sg2262.yaml)");
  check->add_option("--model", check_model,
                    "model config, YAML or config.json (default: the shipped deepseek-v3.yaml)");

  ValidateArgs validate_args;
  CLI::App* validate = app.add_subcommand("validate", "predict every published measurement and compare (MAPE)");
  validate->add_option("--measured", validate_args.measured,
                       "measurement table (default: the shipped validation/measured.csv)");
  validate->add_flag("--calibrated", validate_args.calibrated, "use CHIP.calibrated.yaml where one is shipped");
  validate->add_option("--chip", validate_args.chips, "only rows of this chip (repeatable)");
  validate->add_option("--csv", validate_args.csv_path, "also write CSV to PATH ('-' for stdout only)");
  validate->add_option("--json", validate_args.json_path, "also write JSON to PATH ('-' for stdout only)");
  validate->add_option("--jobs", validate_args.jobs, "threads (default: the machine's cores)")
      ->check(count_in(1, 1024));
  validate->add_option("--max-commands", validate_args.max_commands, "skip rows estimated to need more commands")
      ->capture_default_str()
      ->check(count_in(1, std::uint64_t{1} << 40));

  CalibrateArgs calibrate_args;
  CLI::App* calibrate =
      app.add_subcommand("calibrate", "fit chip fields to measurements (Levenberg-Marquardt on log error)");
  calibrate->add_option("--chip", calibrate_args.chip, "chip config YAML, or a shipped chip's stem (bm1684x)")
      ->required();
  calibrate->add_option(
      "--measured", calibrate_args.measured,
      "measurement table (default: the shipped validation/measured.csv); rows of this chip are fitted");
  calibrate
      ->add_option("--fit", calibrate_args.fit,
                   "chip fields to fit, dotted (ddr.efficiency,engines.tiu.cube_efficiency), each optionally "
                   "=LO:HI; default bounds: an efficiency 0.05..1, another value x/10..10x")
      ->required()
      ->delimiter(',');
  calibrate->add_option("--out", calibrate_args.out, "calibrated chip YAML to write ('-' for stdout)")->required();
  calibrate->add_option("--rows", calibrate_args.rows, "only these row ids")->delimiter(',');
  calibrate->add_option("--jobs", calibrate_args.jobs, "threads (default: the machine's cores)")
      ->check(count_in(1, 1024));
  calibrate->add_option("--max-iterations", calibrate_args.max_iterations, "Levenberg-Marquardt iterations")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  calibrate->add_flag("--no-leave-one-out", calibrate_args.no_leave_one_out, "skip the cross-validation refits");
  calibrate
      ->add_option("--folds", calibrate_args.folds,
                   "cross-validation folds (rows i mod K held out); default: leave-one-out up to 20 rows, else 10")
      ->check(count_in(2, 100000));
  calibrate->add_option("--max-commands", calibrate_args.max_commands, "drop rows estimated to need more commands")
      ->capture_default_str()
      ->check(count_in(1, std::uint64_t{1} << 40));

  std::vector<std::string> help_topic;
  CLI::App* help = app.add_subcommand("help", "print this help, or a subcommand's: g5sim help run");
  help->add_option("subcommand", help_topic, "a subcommand (run, sweep, op, check, validate, calibrate)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, like every other input error, with the nearest option when one was misspelt.
    std::cerr << "g5sim: error: " << printable(e.what()) << did_you_mean(app, argc, argv) << '\n';
    return 2;
  }
  if (*help) {
    CLI::App* topic = &app;
    std::string path;
    for (const std::string& name : help_topic) {
      CLI::App* sub = nullptr;
      for (CLI::App* candidate : topic->get_subcommands({})) {
        if (candidate->get_name() == name) sub = candidate;
      }
      if (sub == nullptr || sub == help) {
        std::cerr << "g5sim: error: help: no subcommand '"
                  << printable(path.empty() ? name : path.substr(1) + " " + name) << "' (g5sim help lists them)\n";
        return 2;
      }
      topic = sub;
      path += " " + name;
    }
    // App::help() would describe the help subcommand itself (it follows the parsed subcommand).
    std::cout << app.get_formatter()->make_help(topic, "g5sim" + path, CLI::AppFormatMode::Normal);
    tools::check_stdout();
    return 0;
  }
  run_opts.given = scoped_options_given(*run);
  sweep_opts.given = scoped_options_given(*sweep);
  compare_opts.given = scoped_options_given(*compare);
  try {
    if (*sweep) {
      if (sweep_args.jobs == 0) sweep_args.jobs = tools::default_jobs();
      return sweep_command(sweep_opts, sweep_args);
    }
    if (*merge) return merge_command(merge_paths, merge_out);
    if (*compare) {
      if (compare_args.jobs == 0) compare_args.jobs = tools::default_jobs();
      return compare_command(compare_opts, compare_args, compare_csv);
    }
    if (*validate) return validate_command(validate_args);
    if (*calibrate) return calibrate_command(calibrate_args);
    if (*check) return check_command(check_chip, check_model);
    if (*op) {
      const g5sim::Chip chip = chip_of(op_chip);
      api::OpRunResult result;
      if (*op_matmul) {
        mm.dtype = hw::parse_dtype(mm_dtype, "--dtype");
        result = api::run_matmul(chip.data().chip, mm, op_cores);
      } else {
        result = api::run_fa2(chip.data().chip, fa, op_cores);
      }
      if (op_json != "-") api::write_op_table(std::cout, result);
      if (!op_json.empty()) {
        tools::OutputFile out(op_json, "--json");
        api::write_op_json(out.stream(), result);
        out.close();
      }
      tools::check_stdout();
      return 0;
    }
    // `g5sim` alone behaves as `g5sim run`: the default block on the shipped configs.
    return run_command(run_opts, json_path, trace_options);
  } catch (const tools::WriteError& e) {
    std::cerr << "g5sim: error: " << printable(e.what()) << '\n';
    return 1;
  } catch (const g5sim::ConfigError& e) {
    // A request parameter has no source: say which flag it came from.
    if (e.source().empty() && !e.field().empty()) {
      std::cerr << "g5sim: error: " << flag_of(e.field()) << ": " << printable(e.what()) << '\n';
    } else {
      std::cerr << "g5sim: error: " << printable(e.what()) << '\n';
    }
    return 2;
  } catch (const hw::InputError& e) {
    std::cerr << "g5sim: error: " << flag_of(e.field()) << ": " << printable(e.what()) << '\n';
    return 2;
  } catch (const hw::ConfigError& e) {
    std::cerr << "g5sim: error: " << printable(e.what()) << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "g5sim: internal error: " << printable(e.what()) << '\n';
    return 1;
  }
}

}  // namespace tools
