// g5sim's command line (tools/cli.hpp). run_cli() is the only place where errors become exit
// codes: 0 success, 2 bad input (one line on stderr), 1 a failed write or an internal error (a bug:
// please report it with the command line).

#include "tools/cli.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "hw/cost_model.hpp"
#include "models/expert_routing.hpp"
#include "models/memory_footprint.hpp"
#include "models/model_spec.hpp"
#include "models/workload.hpp"
#include "tools/context_list.hpp"
#include "tools/op_run.hpp"
#include "tools/output_file.hpp"
#include "tools/report.hpp"
#include "tools/simulation.hpp"
#include "tools/trace_writer.hpp"

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
      {"mla_mode", "--mla-mode"},
      {"prefill_mla_mode", "--prefill-mla-mode"},
      {"kv_read_engine", "--kv-read-engine"},
      {"tp", "--tp"},
      {"ep", "--ep"},
      {"dp", "--dp"},
      {"sharding", "--tp/--ep/--dp"},
      {"layers", "--layers"},
      {"expert_load", "--expert-load"},
      {"max_commands", "--max-commands"},
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

struct CommonOptions {
  std::string chip = tools::default_chip_path();
  std::string model = tools::default_model_path();
  std::string phase = "decode";
  std::optional<std::uint64_t> batch;
  std::string ctx = "4096";
  std::optional<std::uint64_t> q_len;
  std::string kv_dtype = "bf16";
  std::string mla_mode = "absorb";
  std::string prefill_mla_mode = "expanded";
  std::string kv_read_engine;
  std::string attn_split = "seq";
  std::string scope = "step";
  std::optional<std::uint64_t> layers;
  std::string expert_load;
  std::optional<std::uint64_t> tp, ep, dp;
  bool strict_capacity = false;
  std::uint64_t max_commands = ops::LoweringOptions{}.max_commands;
};

void add_common(CLI::App* cmd, CommonOptions& o) {
  cmd->add_option("--chip", o.chip, "chip config YAML")->capture_default_str();
  cmd->add_option("--model", o.model, "model config: YAML, or a Hugging Face config.json")->capture_default_str();
  cmd->add_option("--phase", o.phase, "decode or prefill")->capture_default_str();
  cmd->add_option("--batch", o.batch, "sequences per step over all chips (default: one per DP rank)")
      ->check(count_in(1, kMaxBatch));
  cmd->add_option("--q-len", o.q_len, "query tokens per sequence (decode default 1; prefill = ctx)")
      ->check(count_in(1, kMaxTokens));
  cmd->add_option("--kv-dtype", o.kv_dtype, "KV cache format: bf16, fp8 or fp8-flashmla")->capture_default_str();
  cmd->add_option("--mla-mode", o.mla_mode, "MLA decode mode and cache: absorb, standard or expanded")
      ->capture_default_str();
  cmd->add_option("--prefill-mla-mode", o.prefill_mla_mode, "MLA prefill compute: absorb, standard or expanded (MHA)")
      ->capture_default_str();
  cmd->add_option("--kv-read-engine", o.kv_read_engine,
                  "DMA engine of the decode history read (SG2262: gdma streams beside fa2, sdma loads it first); "
                  "default: the chip's first kv_stream engine");
  cmd->add_option("--attn-split", o.attn_split, "decode attention over cores: seq (flash decoding) or head")
      ->capture_default_str();
  cmd->add_option("--scope", o.scope, "block (one attention block) or step (the whole decoder)")->capture_default_str();
  cmd->add_option("--layers", o.layers, "step: simulate only the first N decoder layers")->check(count_in(1, 1024));
  cmd->add_option("--expert-load", o.expert_load, "step: measured routing, CSV layer,expert,tokens");
  cmd->add_option("--tp", o.tp, "tensor parallel chips (heads, FFN width, vocabulary)")->check(count_in(1, kMaxDegree));
  cmd->add_option("--ep", o.ep, "expert parallel chips (routed experts)")->check(count_in(1, kMaxDegree));
  cmd->add_option("--dp", o.dp, "data parallel chips (batch)")->check(count_in(1, kMaxDegree));
  cmd->add_flag("--strict-capacity", o.strict_capacity, "fail when a chip's weights and KV cache exceed its DDR");
  cmd->add_option("--max-commands", o.max_commands,
                  "refuse a run estimated to need more commands (64 B of memory each)")
      ->capture_default_str()
      ->check(count_in(1, std::uint64_t{1} << 40));
}

tools::Scope scope_of(const CommonOptions& o) {
  if (o.scope == "block") {
    if (o.layers || !o.expert_load.empty()) {
      throw hw::ConfigError("--layers and --expert-load need --scope step");
    }
    return tools::Scope::block;
  }
  if (o.scope == "step") return tools::Scope::step;
  throw hw::ConfigError(fmt::format("--scope: expected block or step, got '{}'", o.scope));
}

// The sharding and the global batch: as given (missing factors 1), or when none of --tp, --ep,
// --dp is given the smallest that fits the chip's DDR. Without --batch, one sequence per DP rank.
struct Deployment {
  models::Parallelism parallelism;
  bool automatic = false;
  models::Workload workload;
  models::MemoryFootprint footprint;
};

models::Workload workload_of(const CommonOptions& o, std::uint64_t ctx, std::uint64_t batch);

Deployment deployment_of(const CommonOptions& o, const hw::Chip& chip, const models::ModelSpec& model,
                         std::uint64_t ctx) {
  Deployment d;
  if (!o.tp && !o.ep && !o.dp) {
    const auto chosen = models::auto_sharding(model, workload_of(o, ctx, o.batch.value_or(1)), o.batch.has_value(),
                                              chip.ddr_capacity_bytes);
    d.parallelism = chosen.parallelism;
    d.automatic = true;
    d.workload = workload_of(o, ctx, chosen.batch);
  } else {
    d.parallelism = models::Parallelism{o.tp.value_or(1), o.ep.value_or(1), o.dp.value_or(1)};
    d.workload = workload_of(o, ctx, o.batch.value_or(d.parallelism.dp));
  }
  models::validate_parallelism(d.parallelism, model, d.workload);
  d.footprint = models::chip_footprint(model, d.workload, d.parallelism);
  // A block is a piece of a chip's share: the deployment's capacity is checked for whole steps.
  if (scope_of(o) == tools::Scope::step && d.footprint.total() > chip.ddr_capacity_bytes) {
    const std::string message = fmt::format(
        "{} needs {} bytes per chip (weights {}, KV cache {}) with tp {} ep {} dp {}, but {} has {} "
        "(ddr.capacity_bytes)",
        model.name, d.footprint.total(), d.footprint.weight_bytes, d.footprint.kv_cache_bytes, d.parallelism.tp,
        d.parallelism.ep, d.parallelism.dp, chip.name, chip.ddr_capacity_bytes);
    if (o.strict_capacity) throw hw::ConfigError("--strict-capacity: " + message);
    std::cerr << "g5sim: warning: " << message << '\n';
  }
  return d;
}

// Runs the scope the options ask for; `layers` receives the number of decoder layers simulated.
tools::Simulation simulate(const hw::Chip& chip, const models::ModelSpec& model, const Deployment& d,
                           const CommonOptions& o, const ops::LoweringOptions& opts,
                           const std::optional<models::ExpertLoad>& load, std::uint64_t& layers) {
  if (scope_of(o) == tools::Scope::block) {
    layers = 1;
    return tools::simulate_block(chip, model, d.workload, opts, d.parallelism);
  }
  models::StepOptions step;
  step.layers = o.layers;
  step.expert_load = load ? &*load : nullptr;
  step.parallelism = d.parallelism;
  layers = o.layers.value_or(model.num_hidden_layers);
  return tools::simulate_step(chip, model, d.workload, step, opts);
}

std::optional<models::ExpertLoad> expert_load_of(const CommonOptions& o) {
  if (o.expert_load.empty()) return std::nullopt;
  return models::ExpertLoad::from_csv_file(o.expert_load);
}

ops::LoweringOptions lowering_options(const CommonOptions& o) {
  ops::LoweringOptions opts;
  opts.kv_read_engine = o.kv_read_engine;
  opts.max_commands = std::min(o.max_commands, cli_limits.max_commands);
  if (o.attn_split == "seq") {
    opts.attn_split = ops::AttentionSplit::seq;
  } else if (o.attn_split == "head") {
    opts.attn_split = ops::AttentionSplit::head;
  } else {
    throw hw::ConfigError(fmt::format("--attn-split: expected seq or head, got '{}'", o.attn_split));
  }
  return opts;
}

// The workload of one context length, with the KV format and MLA modes of the options.
models::Workload workload_of(const CommonOptions& o, std::uint64_t ctx, std::uint64_t batch) {
  models::Workload w =
      models::make_workload(models::parse_phase(o.phase), batch, ctx, o.q_len, models::parse_kv_format(o.kv_dtype));
  w.mla_mode = models::parse_mla_mode(o.mla_mode, "mla_mode");
  w.prefill_mla_mode = models::parse_mla_mode(o.prefill_mla_mode, "prefill_mla_mode");
  return w;
}

std::uint64_t single_ctx(const std::string& text) {
  const auto list = tools::parse_context_list(text);
  if (list.size() != 1) throw hw::ConfigError("--ctx: `run` takes one context length (use `sweep` for a list)");
  return list.front();
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
  std::optional<tools::OutputFile> trace, json;
  if (!trace_options.path.empty()) trace.emplace(trace_options.path, "--trace");
  if (!json_path.empty()) json.emplace(json_path, "--json");
  const hw::Chip chip = hw::load_chip(o.chip);
  const models::ModelSpec model = models::load_model(o.model);
  const Deployment d = deployment_of(o, chip, model, single_ctx(o.ctx));
  const ops::LoweringOptions opts = lowering_options(o);
  std::uint64_t layers = 0;
  const tools::Simulation result = simulate(chip, model, d, o, opts, expert_load_of(o), layers);
  const tools::RunDescription run{chip,   model,         d.workload,  opts,       scope_of(o),
                                  layers, d.parallelism, d.automatic, d.footprint};
  if (trace) {
    tools::write_chrome_trace(trace->stream(), chip, result.graph, result.lowered, result.trace, result.timeline,
                              filter);
    trace->close();
  }
  if (json_path != "-") tools::write_table(std::cout, run, result.timeline);
  if (json) {
    tools::write_json(json->stream(), run, result.timeline);
    json->close();
  }
  tools::check_stdout();
  return 0;
}

int sweep_command(const CommonOptions& o, const std::string& csv_path) {
  const hw::Chip chip = hw::load_chip(o.chip);
  const models::ModelSpec model = models::load_model(o.model);
  const ops::LoweringOptions opts = lowering_options(o);
  const auto contexts = tools::parse_context_list(o.ctx);
  const auto load = expert_load_of(o);
  tools::OutputFile csv(csv_path, "--csv");
  std::ostream& out = csv.stream();
  tools::write_sweep_header(out);
  for (std::uint64_t ctx : contexts) {
    const Deployment d = deployment_of(o, chip, model, ctx);
    std::uint64_t layers = 0;
    const tools::Simulation result = simulate(chip, model, d, o, opts, load, layers);
    ops::LoweringOptions by_heads = opts;
    by_heads.attn_split = ops::AttentionSplit::head;
    const tools::Simulation heads = simulate(chip, model, d, o, by_heads, load, layers);
    tools::write_sweep_row(out, d.workload, result.timeline, heads.timeline);
    out.flush();
  }
  csv.close();
  return 0;
}

int check_command(const std::string& chip_path, const std::string& model_path) {
  const hw::Chip chip = hw::load_chip(chip_path);
  const models::ModelSpec model = models::load_model(model_path);
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
  fmt::print("ok\n");
  tools::check_stdout();
  return 0;
}

}  // namespace

int run_cli(int argc, const char* const* argv, const CliLimits& limits) {
  cli_limits = limits;
  CLI::App app{"g5sim: instruction-level performance simulator of MLA attention on SG2262-class TPUs"};
  app.require_subcommand(0, 1);

  CommonOptions run_opts;
  std::string json_path;
  CLI::App* run = app.add_subcommand("run", "simulate one attention block and print per-op timings");
  add_common(run, run_opts);
  run->add_option("--ctx", run_opts.ctx, "context length kv_len")->capture_default_str();
  run->add_option("--json", json_path, "also write JSON to PATH ('-' for stdout only)");
  TraceOptions trace_options;
  run->add_option("--trace", trace_options.path, "write a Chrome trace-event JSON (Perfetto) to PATH");
  run->add_option("--trace-layers", trace_options.layers, "trace only decoder layers I..J (I:J or I)");

  CommonOptions sweep_opts;
  std::string csv_path = "-";
  CLI::App* sweep = app.add_subcommand("sweep", "simulate a list of context lengths, CSV out");
  add_common(sweep, sweep_opts);
  sweep->add_option("--ctx", sweep_opts.ctx, "comma list or START:STOP:xFACTOR")->required();
  sweep->add_option("--csv", csv_path, "CSV destination ('-' = stdout)")->capture_default_str();

  CLI::App* op = app.add_subcommand("op", "simulate one op alone (microbenchmark)");
  op->require_subcommand(1);
  std::string op_chip = tools::default_chip_path();
  std::uint32_t op_cores = 0;
  std::string op_json;
  auto add_op_common = [&](CLI::App* cmd) {
    cmd->add_option("--chip", op_chip, "chip config YAML")->capture_default_str();
    cmd->add_option("--cores", op_cores, "cores to use (default: all)")->check(count_in(0, 4096));
    cmd->add_option("--json", op_json, "write JSON to PATH ('-' for stdout only)");
  };
  tools::MatmulRequest mm;
  std::string mm_dtype = "bf16";
  CLI::App* op_matmul = op->add_subcommand("matmul", "[m, k] x [k, n]");
  op_matmul->add_option("--m", mm.m, "rows")->required()->check(count_in(1, kMaxTokens));
  op_matmul->add_option("--n", mm.n, "columns")->required()->check(count_in(1, kMaxTokens));
  op_matmul->add_option("--k", mm.k, "reduction")->required()->check(count_in(1, kMaxTokens));
  op_matmul->add_option("--dtype", mm_dtype, "bf16 or fp8")->capture_default_str();
  add_op_common(op_matmul);
  tools::Fa2Request fa;
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
  add_op_common(op_fa2);

  std::string check_chip = tools::default_chip_path();
  std::string check_model = tools::default_model_path();
  CLI::App* check = app.add_subcommand("check", "validate a chip and a model config");
  check->add_option("--chip", check_chip, "chip config YAML")->capture_default_str();
  check->add_option("--model", check_model, "model config (YAML or config.json)")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, like every other input error.
    std::cerr << "g5sim: error: " << printable(e.what()) << '\n';
    return 2;
  }
  try {
    if (*sweep) return sweep_command(sweep_opts, csv_path);
    if (*check) return check_command(check_chip, check_model);
    if (*op) {
      const hw::Chip chip = hw::load_chip(op_chip);
      tools::OpRunResult result;
      if (*op_matmul) {
        mm.dtype = hw::parse_dtype(mm_dtype, "--dtype");
        result = tools::run_matmul(chip, mm, op_cores);
      } else {
        result = tools::run_fa2(chip, fa, op_cores);
      }
      if (op_json != "-") tools::write_op_table(std::cout, result);
      if (!op_json.empty()) {
        tools::OutputFile out(op_json, "--json");
        tools::write_op_json(out.stream(), result);
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
