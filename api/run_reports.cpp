// The run floor's reports as data (g5sim/report_fields.hpp): `g5sim run --json`, the two tables
// `g5sim run` prints, `g5sim op ... --json`, and the Python module's two DataFrames of a run.
// One row per key or column, in the order the writers emit them (api/report.cpp write_json and
// write_table, api/op_run.cpp write_op_json, python/g5sim/__init__.py).

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "g5sim/report_fields.hpp"
#include "g5sim/run_options.hpp"
#include "ops/op_kinds.hpp"

namespace g5sim {

// Each row names only the fields it sets (designated initializers); the rest keep ReportField's
// defaults, which GCC's -Wextra would report as missing.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace {

// The op kinds, from the op-kind table (ops/op_kinds.hpp), in its order.
std::string op_kinds() {
  std::string names;
  for (std::size_t i = 0; i < ops::kOpKindCount; ++i) {
    if (i > 0) names += ',';
    names += ops::kind_name(static_cast<ops::OpKind>(i));
  }
  return names;
}

// A run option's words, from the run-option table (g5sim/run_options.hpp).
std::string option_choices(const std::string& option) {
  for (const RunOption& o : run_options()) {
    if (o.name == option) return o.choices;
  }
  throw std::logic_error("no run option is named " + option);
}
// An op's or a kind's roofline verdict (host: the host_launch op, which has no roofline).
const char* const kOpRegimes = "compute,memory,comm,host";
const char* const kEnergyWhen = "the chip config has an energy section";

void append(std::vector<ReportField>& to, std::vector<ReportField> rows) {
  for (ReportField& r : rows) to.push_back(std::move(r));
}

// The keys of one group of a step's sequences: "sequences[]" or "chip_sequences[]".
std::vector<ReportField> sequence_group_rows(const std::string& parent) {
  return {
      {.path = parent + "[].count",
       .type = FieldType::integer,
       .description = "how many sequences the group holds",
       .minimum = 1},
      {.path = parent + "[].q_len",
       .type = FieldType::integer,
       .unit = "tokens",
       .description = "new tokens each sequence of the group brings to the step",
       .minimum = 1},
      {.path = parent + "[].history",
       .type = FieldType::integer,
       .unit = "tokens",
       .description = "tokens each sequence of the group already holds in the KV cache and reads",
       .minimum = 0},
      {.path = parent + "[].path",
       .type = FieldType::text,
       .description = "the kernel the group runs: the decode path (history, short q_len) or a prefill (chunk)",
       .choices = "decode,prefill"},
  };
}

// What was run: the document's version, the chip and model with their sources, the run's extent.
std::vector<ReportField> run_identity_rows() {
  return {
      {.path = "schema_version",
       .type = FieldType::integer,
       .description = "the layout version of this document (3); it moves when a key changes meaning or type"},
      {.path = "g5sim_version", .type = FieldType::text, .description = "the release of g5sim that wrote the document"},
      {.path = "chip", .type = FieldType::text, .description = "the chip's name from its config"},
      {.path = "model", .type = FieldType::text, .description = "the model's name from its config"},
      {.path = "chip_source",
       .type = FieldType::text,
       .description = "where the chip config came from: shipped:NAME for a shipped config, its file path (relative to "
                      "the working folder when under it), <memory:NAME>, or the source given with a dict"},
      {.path = "chip_sha256",
       .type = FieldType::text,
       .description = "SHA-256 digest of the chip config's text, 64 hex digits"},
      {.path = "model_source",
       .type = FieldType::text,
       .description = "where the model config came from: shipped:NAME for a shipped config, its file path (relative "
                      "to the working folder when under it), <memory:NAME>, or the source given with a dict"},
      {.path = "model_sha256",
       .type = FieldType::text,
       .description = "SHA-256 digest of the model config's text, 64 hex digits"},
      {.path = "cores",
       .type = FieldType::integer,
       .description = "cores of the chip the run used (--cores, else all of them)",
       .minimum = 1},
      {.path = "scope",
       .type = FieldType::text,
       .description = "what was simulated: a whole decoder step or a single attention block",
       .choices = option_choices("scope")},
      {.path = "layers",
       .type = FieldType::integer,
       .description = "decoder layers simulated (a step: --layers or all of the model's; a block: 1)",
       .minimum = 1},
      {.path = "micro_batches",
       .type = FieldType::integer,
       .description = "groups the chip's sequences were split into so attention overlaps the MoE all-to-alls",
       .minimum = 1},
      {.path = "host_launch_ns",
       .type = FieldType::integer,
       .unit = "ns",
       .description = "time the host takes to launch each decoder layer's program (0: the step runs as one program)",
       .minimum = 0},
  };
}

// The step as asked for and resolved: its shape, formats and lowering choices (workload.*).
std::vector<ReportField> run_workload_rows() {
  return {
      {.path = "workload",
       .type = FieldType::object,
       .description = "the step as asked for and resolved: its shape, formats and lowering choices"},
      {.path = "workload.phase",
       .type = FieldType::text,
       .description = "whether the step's sequences decode, prefill, or both (mixed: groups on both paths)",
       .choices = "decode,prefill,mixed"},
      {.path = "workload.batch",
       .type = FieldType::integer,
       .description = "sequences in the step, summed over all chips",
       .minimum = 1},
      {.path = "workload.q_len",
       .type = FieldType::integer,
       .unit = "tokens",
       .description = "new tokens per sequence: the largest over the groups (a uniform batch's own)",
       .minimum = 1},
      {.path = "workload.kv_len",
       .type = FieldType::integer,
       .unit = "tokens",
       .description = "keys a sequence attends to: the largest over the groups",
       .minimum = 1},
      {.path = "workload.prefill_attention",
       .type = FieldType::text,
       .description = "the mask of prefill and chunk attention: causal, or full (every key, a padded static mask)",
       .choices = option_choices("prefill_attention")},
      {.path = "workload.kv_dtype",
       .type = FieldType::text,
       .description = "the storage format of the KV cache",
       .choices = option_choices("kv_dtype")},
      {.path = "workload.mla_mode",
       .type = FieldType::text,
       .description = "how MLA decode computes attention and what its cache holds (also written for GQA models)",
       .choices = option_choices("mla_mode")},
      {.path = "workload.prefill_mla_mode",
       .type = FieldType::text,
       .description = "how MLA prefill computes attention (also written for GQA models)",
       .choices = option_choices("prefill_mla_mode")},
      {.path = "workload.weight_dtype",
       .type = FieldType::text,
       .description = "the storage format of the projection weights",
       .choices = option_choices("weight_dtype")},
      {.path = "workload.weight_group_size",
       .type = FieldType::integer,
       .description =
           "int8/int4 weights: k elements sharing one scale (0: one scale per column); written for any dtype",
       .minimum = 0},
      {.path = "workload.act_dtype",
       .type = FieldType::text,
       .description = "the projections' activations as asked: auto (the weights decide), bf16 (weight-only), or "
                      "the format they are stored and multiplied in",
       .choices = option_choices("act_dtype")},
      {.path = "workload.kv_read_engine",
       .type = FieldType::text,
       .description = "the chip's DMA engine, by its config name, that streams the decode KV history"},
      {.path = "workload.attn_split",
       .type = FieldType::text,
       .description = "how decode attention is spread over cores: by the history (seq) or by heads",
       .choices = option_choices("attn_split")},
      {.path = "workload.kv_append",
       .type = FieldType::text,
       .description = "how decode adds new K/V: written into the cache, or a copy of history plus new (concat)",
       .choices = option_choices("kv_append")},
      {.path = "workload.lm_head_weights",
       .type = FieldType::text,
       .description = "the output layer's weight format: bf16, or the same as the projections",
       .choices = option_choices("lm_head_weights")},
      {.path = "workload.prefetch_weights",
       .type = FieldType::flag,
       .description = "true when an op's weights may load before its producers finish (off with --no-prefetch)"},
  };
}

// The step's sequences over all chips, then the simulated chip's own, each as groups.
std::vector<ReportField> run_sequence_rows() {
  std::vector<ReportField> f = {
      {.path = "sequences",
       .type = FieldType::records,
       .description = "the step's sequences over all chips, as groups of equal sequences"},
  };
  append(f, sequence_group_rows("sequences"));
  f.push_back({.path = "chip_sequences",
               .type = FieldType::records,
               .description = "the sequences of the simulated chip alone (its data-parallel rank's share)"});
  append(f, sequence_group_rows("chip_sequences"));
  return f;
}

// How the model is sharded over the chips, and the simulated chip's DDR footprint.
std::vector<ReportField> run_deployment_rows() {
  return {
      {.path = "parallelism",
       .type = FieldType::object,
       .description = "how the model is sharded over the deployment's chips"},
      {.path = "parallelism.tp",
       .type = FieldType::integer,
       .description = "tensor-parallel degree: chips sharing heads, FFN width and vocabulary",
       .minimum = 1},
      {.path = "parallelism.ep",
       .type = FieldType::integer,
       .description = "expert-parallel degree: chips sharing the routed experts",
       .minimum = 1},
      {.path = "parallelism.dp",
       .type = FieldType::integer,
       .description = "data-parallel degree: chips sharing the batch",
       .minimum = 1},
      {.path = "parallelism.chips",
       .type = FieldType::integer,
       .description = "chips in the whole deployment",
       .minimum = 1},
      {.path = "parallelism.automatic",
       .type = FieldType::flag,
       .description = "true when g5sim picked the smallest sharding that fits DDR (no --tp, --ep or --dp given)"},
      {.path = "memory", .type = FieldType::object, .description = "the simulated chip's DDR footprint"},
      {.path = "memory.weight_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "weights one chip stores",
       .minimum = 0},
      {.path = "memory.kv_cache_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "KV cache one chip stores for its sequences over every layer of the model",
       .minimum = 0},
      {.path = "memory.capacity_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "DDR capacity of one chip",
       .minimum = 0},
      {.path = "memory.fits",
       .type = FieldType::flag,
       .description = "true when weights plus KV cache fit in one chip's DDR"},
  };
}

// The run's totals: its time and error band, throughput, roofline verdict, idle gaps, bytes and FLOPs.
std::vector<ReportField> run_totals_rows() {
  return {
      {.path = "total_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "the simulated chip's time for the run: the end of its last command",
       .minimum = 0},
      {.path = "total_ps",
       .type = FieldType::integer,
       .unit = "ps",
       .description = "total_ns as exact integer picoseconds",
       .minimum = 0},
      {.path = "band_low_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "lower end of the calibrated error band around total_ns; null when the chip config has no band",
       .minimum = 0,
       .nullable = true},
      {.path = "band_high_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "upper end of the calibrated error band around total_ns; null when the chip config has no band",
       .minimum = 0,
       .nullable = true},
      {.path = "band_coverage",
       .type = FieldType::number,
       .unit = "ratio",
       .description = "fraction of held-out measurements that fell inside the band (0..1); null without a band",
       .minimum = 0,
       .nullable = true},
      {.path = "band_basis",
       .type = FieldType::text,
       .description = "which held-out rows the band rests on, or why there is no band"},
      {.path = "tokens_per_s",
       .type = FieldType::number,
       .unit = "tokens/s",
       .description = "the step's tokens over all chips divided by total_ns, or by runtime.step_ns with a runtime (a "
                      "block: as if the step took that long)",
       .minimum = 0},
      {.path = "tokens_per_s_per_chip",
       .type = FieldType::number,
       .unit = "tokens/s",
       .description = "tokens_per_s divided by the deployment's chips",
       .minimum = 0},
      {.path = "regime",
       .type = FieldType::text,
       .description = "the run's roofline verdict from its summed compute, memory and link times",
       .choices = "compute,memory,comm"},
      {.path = "bound_by",
       .type = FieldType::text,
       .description = "the resource the simulation found busiest over the run: an engine, DDR, C2C, L2, or latency"},
      {.path = "bound_share",
       .type = FieldType::number,
       .unit = "ratio",
       .description = "fraction of the run that bound_by was busy (0..1)",
       .minimum = 0},
      {.path = "idle_gap_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "the tensor engine's waits at op boundaries, summed over ops",
       .minimum = 0},
      {.path = "idle_gap_ps",
       .type = FieldType::integer,
       .unit = "ps",
       .description = "idle_gap_ns as exact integer picoseconds",
       .minimum = 0},
      {.path = "idle_per_core_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "each core's tensor engine waiting at op boundaries (its gaps are disjoint), averaged over "
                      "the cores: at most total_ns, unlike idle_gap_ns (the ops' largest gaps, from different cores, "
                      "overlap)",
       .minimum = 0},
      {.path = "idle_per_core_ps",
       .type = FieldType::integer,
       .unit = "ps",
       .description = "idle_per_core_ns as exact integer picoseconds",
       .minimum = 0},
      {.path = "idle_share",
       .type = FieldType::number,
       .unit = "ratio",
       .description = "idle_per_core_ns over total_ns (0..1)",
       .minimum = 0},
      {.path = "hbm_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "bytes the simulated chip's DMA commands moved to or from DDR, over all ops",
       .minimum = 0},
      {.path = "flops",
       .type = FieldType::integer,
       .unit = "FLOPs",
       .description = "arithmetic the simulated chip did, over all ops",
       .minimum = 0},
  };
}

// What the runtime added (g5sim/runtime.hpp): present when the run names one other than none.
std::vector<ReportField> run_runtime_rows() {
  const char* const when = "the run names a runtime other than none (--runtime)";
  const auto ns = [](const char* path, const char* description) {
    return ReportField{.path = path, .type = FieldType::number, .unit = "ns", .description = description, .minimum = 0};
  };
  const auto count = [](const char* path, const char* description) {
    return ReportField{.path = path, .type = FieldType::integer, .description = description, .minimum = 0};
  };
  const auto text = [](const char* path, const char* description) {
    return ReportField{.path = path, .type = FieldType::text, .description = description};
  };
  return {
      {.path = "runtime",
       .type = FieldType::object,
       .description = "the software that runs the model and what it added to the chip's time",
       .when = when},
      text("runtime.name", "the runtime config's name (configs/runtimes/)"),
      text("runtime.version", "the engine version its numbers are for"),
      text("runtime.source", "the runtime config file"),
      text("runtime.sha256", "SHA-256 of the runtime config's text"),
      text("runtime.adds", "what the runtime adds, in one line"),
      ns("runtime.chip_ns", "the chip's time: total_ns less the layer launches"),
      ns("runtime.runtime_ns", "the runtime's whole charge, the sum of its parts"),
      ns("runtime.step_ns", "the step as its software runs it: chip_ns + runtime_ns"),
      {.path = "runtime.kernel_mode",
       .type = FieldType::text,
       .description = "the kernel costs the step took: graph (decodes alone within the graph batch), piecewise "
                      "(within the piecewise graphs' tokens: attention eager, the rest graphed) or eager",
       .choices = "graph,piecewise,eager"},
      count("runtime.kernels", "ops launched as kernels (all but the runtime's fused kinds and host launches)"),
      count("runtime.collectives", "collective ops charged their library latency"),
      count("runtime.layer_launches", "host launches of a layer's program"),
      {.path = "runtime.parts", .type = FieldType::object, .description = "runtime_ns by part"},
      ns("runtime.parts.kernel_floor_ns", "the kernels' time raised to the runtime's floor, summed"),
      ns("runtime.parts.kernel_compute_ns",
         "the matrix kernels' time raised to their arithmetic at the runtime's tensor_efficiency of peak, summed"),
      ns("runtime.parts.kernel_gap_ns", "the gap between kernels times the kernels"),
      ns("runtime.parts.kernel_launch_ns",
         "the device waiting for the host to issue kernels (launch_ns an op, expert_launch_ns a routed-expert op; 0 "
         "for graphs)"),
      ns("runtime.parts.collective_ns", "the collectives' fixed latency by size"),
      ns("runtime.parts.layer_launch_ns", "the host launches of layers (graph ops on the chip's timeline)"),
      ns("runtime.parts.step_cpu_ns", "the scheduler's CPU not hidden behind device time"),
      text("runtime.not_modelled", "what no runtime config models"),
  };
}

// The simulated chip's energy over the run, dynamic and static, and per engine.
std::vector<ReportField> run_energy_rows() {
  return {
      {.path = "energy",
       .type = FieldType::object,
       .description = "the simulated chip's energy over the run (dynamic from its work, static from its cores)",
       .when = kEnergyWhen},
      {.path = "energy.total_j",
       .type = FieldType::number,
       .unit = "J",
       .description = "dynamic plus static energy of one chip over total_ns",
       .minimum = 0},
      {.path = "energy.deployment_j",
       .type = FieldType::number,
       .unit = "J",
       .description = "total_j over the deployment's chips (parallelism.chips of them, each running its share alike)",
       .minimum = 0},
      {.path = "energy.dynamic_j",
       .type = FieldType::number,
       .unit = "J",
       .description = "energy of the chip's arithmetic and data movement, summed over ops",
       .minimum = 0},
      {.path = "energy.static_j",
       .type = FieldType::number,
       .unit = "J",
       .description = "the used cores' static power times total_ns",
       .minimum = 0},
      {.path = "energy.average_w",
       .type = FieldType::number,
       .unit = "W",
       .description = "total_j divided by total_ns",
       .minimum = 0},
      {.path = "energy.tdp_w",
       .type = FieldType::number,
       .unit = "W",
       .description = "the chip's thermal design power from its config; null when the config gives none",
       .minimum = 0,
       .nullable = true},
      {.path = "energy.joules_per_token",
       .type = FieldType::number,
       .unit = "J/token",
       .description = "total_j over the chip's share of the step's tokens; null for a block or a step of no tokens",
       .minimum = 0,
       .nullable = true},
      {.path = "energy.tokens_per_joule",
       .type = FieldType::number,
       .unit = "tokens/J",
       .description = "the inverse of joules_per_token; null where that is null",
       .minimum = 0,
       .nullable = true},
      {.path = "energy.by_engine_j",
       .type = FieldType::map,
       .unit = "J",
       .description = "dynamic energy split by the chip's engines, keyed by engine name in chip order"},
      {.path = "energy.by_engine_j.*",
       .type = FieldType::number,
       .unit = "J",
       .description = "one engine's dynamic energy: the tensor engine's arithmetic, a DMA engine's bytes moved",
       .minimum = 0},
  };
}

// The KV cache one chip keeps, per token and layer and in total.
std::vector<ReportField> run_kv_cache_rows() {
  return {
      {.path = "kv_cache",
       .type = FieldType::object,
       .description = "the KV cache one chip keeps, per token and layer and in total"},
      {.path = "kv_cache.bytes_per_token_per_layer",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "cache bytes per token per layer on one chip: attention's plus the indexer's",
       .minimum = 0},
      {.path = "kv_cache.attention_bytes_per_token_per_layer",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "attention's share of it: K/V or MLA latent, in the run's mode and format",
       .minimum = 0},
      {.path = "kv_cache.indexer_bytes_per_token_per_layer",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "the DSA indexer's keys' share of it (0 for models without one)",
       .minimum = 0},
      {.path = "kv_cache.total_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "one chip's whole cache: its sequences x kv_len x every model layer x bytes_per_token_per_layer",
       .minimum = 0},
  };
}

// One record per op kind that ran (kinds[]).
std::vector<ReportField> run_kind_rows() {
  return {
      {.path = "kinds", .type = FieldType::records, .description = "one entry per op kind that ran, the busiest first"},
      {.path = "kinds[].kind", .type = FieldType::text, .description = "the op kind", .choices = op_kinds()},
      {.path = "kinds[].ops", .type = FieldType::integer, .description = "how many ops of this kind ran", .minimum = 1},
      {.path = "kinds[].busy_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "time covered by the union of this kind's op intervals (kinds overlap one another)",
       .minimum = 0},
      {.path = "kinds[].hbm_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "DDR bytes moved, summed over this kind's ops",
       .minimum = 0},
      {.path = "kinds[].c2c_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "bytes sent to other chips, summed over this kind's ops",
       .minimum = 0},
      {.path = "kinds[].flops",
       .type = FieldType::integer,
       .unit = "FLOPs",
       .description = "arithmetic summed over this kind's ops",
       .minimum = 0},
      {.path = "kinds[].regime",
       .type = FieldType::text,
       .description = "roofline verdict from the kind's summed compute, memory and link times (host: host_launch)",
       .choices = kOpRegimes},
      {.path = "kinds[].bound_by",
       .type = FieldType::text,
       .description = "the limiting resource that accounts for most of this kind's op time"},
      {.path = "kinds[].energy_j",
       .type = FieldType::number,
       .unit = "J",
       .description = "dynamic energy summed over this kind's ops",
       .minimum = 0,
       .when = kEnergyWhen},
  };
}

// One record per op (ops[]): what it is and when it ran.
std::vector<ReportField> run_op_timing_rows() {
  return {
      {.path = "ops",
       .type = FieldType::records,
       .description = "one entry per op the simulated chip ran, in emission order"},
      {.path = "ops[].id",
       .type = FieldType::integer,
       .description = "the op's number, unique within the run",
       .minimum = 0},
      {.path = "ops[].name",
       .type = FieldType::text,
       .description = "the op's name; repeats across layers and micro-batches"},
      {.path = "ops[].layer",
       .type = FieldType::integer,
       .description = "the decoder layer the op belongs to; null outside the layers (embedding, lm_head)",
       .minimum = 0,
       .nullable = true},
      {.path = "ops[].kind", .type = FieldType::text, .description = "the op's kind", .choices = op_kinds()},
      {.path = "ops[].shape", .type = FieldType::text, .description = "the op's dimensions as readable text"},
      {.path = "ops[].engines",
       .type = FieldType::text,
       .description = "the engines its commands ran on, in chip order joined by + (- for none)"},
      {.path = "ops[].op_start_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "when the op's first data or compute command began",
       .minimum = 0},
      {.path = "ops[].op_end_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "when the op's last data or compute command finished",
       .minimum = 0},
      {.path = "ops[].op_start_ps",
       .type = FieldType::integer,
       .unit = "ps",
       .description = "op_start_ns as exact integer picoseconds",
       .minimum = 0},
      {.path = "ops[].op_end_ps",
       .type = FieldType::integer,
       .unit = "ps",
       .description = "op_end_ns as exact integer picoseconds",
       .minimum = 0},
  };
}

// One record per op (ops[]): what it moved and computed, its roofline and limiting resource, its energy.
std::vector<ReportField> run_op_work_rows() {
  return {
      {.path = "ops[].hbm_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "bytes the op's DMA commands moved to or from DDR",
       .minimum = 0},
      {.path = "ops[].unique_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "the least DDR traffic the op needs, each operand moved once whatever the tiling",
       .minimum = 0},
      {.path = "ops[].c2c_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "bytes the op's collective commands sent to other chips",
       .minimum = 0},
      {.path = "ops[].flops",
       .type = FieldType::integer,
       .unit = "FLOPs",
       .description = "the op's arithmetic",
       .minimum = 0},
      {.path = "ops[].kv_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "KV cache bytes the op reads or writes",
       .minimum = 0},
      {.path = "ops[].peak_lmem_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "the largest local-memory footprint of the op's tiles on one core",
       .minimum = 0},
      {.path = "ops[].roofline_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "the op's ideal time: the longest of its compute, memory and link times",
       .minimum = 0},
      {.path = "ops[].regime",
       .type = FieldType::text,
       .description = "which of compute, memory or links sets roofline_ns (host: a host_launch op)",
       .choices = kOpRegimes},
      {.path = "ops[].bound_by",
       .type = FieldType::text,
       .description = "what the simulation found limiting over the op's interval: an engine, DDR, C2C, L2, "
                      "latency, host, or - for an empty interval"},
      {.path = "ops[].bound_share",
       .type = FieldType::number,
       .unit = "ratio",
       .description = "fraction of the op's interval that bound_by was busy (0..1)",
       .minimum = 0},
      {.path = "ops[].idle_gap_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "the tensor engine's wait before the op's first instruction, the largest over cores",
       .minimum = 0},
      {.path = "ops[].idle_gap_ps",
       .type = FieldType::integer,
       .unit = "ps",
       .description = "idle_gap_ns as exact integer picoseconds",
       .minimum = 0},
      {.path = "ops[].energy_j",
       .type = FieldType::number,
       .unit = "J",
       .description = "the op's dynamic energy",
       .minimum = 0,
       .when = kEnergyWhen},
  };
}

// The commands each engine ran, and how many were simulated or replayed.
std::vector<ReportField> run_command_rows() {
  return {
      {.path = "commands",
       .type = FieldType::map,
       .description = "commands each engine of the chip ran or was credited by replay, keyed by engine name"},
      {.path = "commands.*",
       .type = FieldType::integer,
       .description = "one engine's command count over the run, messages included",
       .minimum = 0},
      {.path = "replay",
       .type = FieldType::object,
       .description = "how much of the run was simulated command by command and how much was replayed"},
      {.path = "replay.simulated_commands",
       .type = FieldType::integer,
       .description = "commands the simulator actually executed",
       .minimum = 0},
      {.path = "replay.replayed_commands",
       .type = FieldType::integer,
       .description = "commands derived from identical simulated ones instead of executed",
       .minimum = 0},
      {.path = "replay.not_replayed",
       .type = FieldType::text,
       .description = "why nothing was replayed; null when some commands were",
       .nullable = true},
  };
}

// The keys of `g5sim run --json`, in the order write_json emits them.
std::vector<ReportField> run_json_fields() {
  std::vector<ReportField> f = run_identity_rows();
  append(f, run_workload_rows());
  append(f, run_sequence_rows());
  append(f, run_deployment_rows());
  append(f, run_totals_rows());
  append(f, run_runtime_rows());
  append(f, run_energy_rows());
  append(f, run_kv_cache_rows());
  append(f, run_kind_rows());
  append(f, run_op_timing_rows());
  append(f, run_op_work_rows());
  append(f, run_command_rows());
  return f;
}

std::vector<ReportField> run_kinds_fields() {
  return {
      {.path = "kind", .type = FieldType::text, .description = "the op kind", .choices = op_kinds()},
      {.path = "ops", .type = FieldType::integer, .description = "how many ops of this kind ran", .minimum = 1},
      {.path = "busy_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "time covered by the union of this kind's op intervals",
       .minimum = 0},
      {.path = "share_%",
       .type = FieldType::number,
       .unit = "%",
       .description = "busy_ns as a percentage of total_ns, one decimal (kinds overlap, so shares may sum past 100)",
       .minimum = 0},
      {.path = "hbm_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "DDR bytes moved, summed over this kind's ops",
       .minimum = 0},
      {.path = "c2c_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "bytes sent to other chips, summed over this kind's ops",
       .minimum = 0},
      {.path = "flops",
       .type = FieldType::integer,
       .unit = "FLOPs",
       .description = "arithmetic summed over this kind's ops",
       .minimum = 0},
      {.path = "regime",
       .type = FieldType::text,
       .description = "roofline verdict from the kind's summed compute, memory and link times",
       .choices = kOpRegimes},
      {.path = "bound_by",
       .type = FieldType::text,
       .description = "the limiting resource that accounts for most of this kind's op time"},
  };
}

std::vector<ReportField> run_ops_fields() {
  return {
      {.path = "op", .type = FieldType::text, .description = "the op's name"},
      {.path = "kind", .type = FieldType::text, .description = "the op's kind", .choices = op_kinds()},
      {.path = "engines",
       .type = FieldType::text,
       .description = "the engines its commands ran on, in chip order joined by + (- for none)"},
      {.path = "op_start_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "when the op's first data or compute command began",
       .minimum = 0},
      {.path = "op_end_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "when the op's last data or compute command finished",
       .minimum = 0},
      {.path = "hbm_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "bytes the op's DMA commands moved to or from DDR",
       .minimum = 0},
      {.path = "flops",
       .type = FieldType::integer,
       .unit = "FLOPs",
       .description = "the op's arithmetic",
       .minimum = 0},
      {.path = "roofline_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "the op's ideal time: the longest of its compute, memory and link times",
       .minimum = 0},
      {.path = "regime",
       .type = FieldType::text,
       .description = "which of compute, memory or links sets roofline_ns",
       .choices = kOpRegimes},
      {.path = "bound_by",
       .type = FieldType::text,
       .description = "what the simulation found limiting over the op's interval"},
  };
}

std::vector<ReportField> op_json_fields() {
  return {
      {.path = "schema_version",
       .type = FieldType::integer,
       .description = "the layout version of this document (2); it moves when a key changes meaning or type"},
      {.path = "op",
       .type = FieldType::text,
       .description = "the op that was simulated",
       .choices = "matmul,fa2,all_reduce,all_to_all"},
      {.path = "shape", .type = FieldType::text, .description = "the op's dimensions and dtype as readable text"},
      {.path = "cores",
       .type = FieldType::integer,
       .description = "cores of the chip the op ran on (--cores, else all of them)",
       .minimum = 1},
      {.path = "total_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "the op's time alone on the chip: the end of its last command",
       .minimum = 0},
      {.path = "ddr_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "bytes its commands moved to or from DDR",
       .minimum = 0},
      {.path = "c2c_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "bytes a collective sent to other chips over links or the network interface",
       .minimum = 0},
      {.path = "unique_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "the least traffic the op needs: each operand once (a collective: its per-chip buffer)",
       .minimum = 0},
      {.path = "tiu_utilization",
       .type = FieldType::number,
       .unit = "ratio",
       .description = "FLOPs over total time times the used cores' cube peak in the op's dtype (0..1)",
       .minimum = 0},
      {.path = "peak_lmem_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "the largest local-memory footprint of the op's tiles on one core",
       .minimum = 0},
      {.path = "flops",
       .type = FieldType::integer,
       .unit = "FLOPs",
       .description = "the op's arithmetic",
       .minimum = 0},
      {.path = "commands",
       .type = FieldType::integer,
       .description = "commands the lowered program holds, summed over all engines",
       .minimum = 0},
      {.path = "energy_j",
       .type = FieldType::number,
       .unit = "J",
       .description = "dynamic plus static energy of the op over total_ns",
       .minimum = 0,
       .when = kEnergyWhen},
      {.path = "dynamic_energy_j",
       .type = FieldType::number,
       .unit = "J",
       .description = "energy of the op's arithmetic and bytes moved through each resource",
       .minimum = 0,
       .when = kEnergyWhen},
      {.path = "static_energy_j",
       .type = FieldType::number,
       .unit = "J",
       .description = "the used cores' static power times total_ns",
       .minimum = 0,
       .when = kEnergyWhen},
  };
}

// Result.to_dataframe()'s columns: the JSON's op keys (ops[].X) that every run writes, the same
// rows: Op.to_dict() is the JSON entry.
std::vector<ReportField> ops_frame_fields() {
  const std::string prefix = "ops[].";
  std::vector<ReportField> columns;
  for (const std::vector<ReportField>& part : {run_op_timing_rows(), run_op_work_rows()}) {
    for (const ReportField& f : part) {
      if (f.path.rfind(prefix, 0) != 0 || !f.when.empty()) continue;
      ReportField column = f;
      column.path = f.path.substr(prefix.size());
      columns.push_back(std::move(column));
    }
  }
  return columns;
}

std::vector<ReportField> layers_frame_fields() {
  return {
      {.path = "layer",
       .type = FieldType::integer,
       .description = "the decoder layer (pandas Int64); missing on the last row, the ops outside the layers",
       .minimum = 0,
       .nullable = true},
      {.path = "ops", .type = FieldType::integer, .description = "how many ops the layer ran", .minimum = 1},
      {.path = "start_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "when the layer's earliest op began",
       .minimum = 0},
      {.path = "end_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "when the layer's latest op finished",
       .minimum = 0},
      {.path = "span_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "end_ns minus start_ns",
       .minimum = 0},
      {.path = "busy_ns",
       .type = FieldType::number,
       .unit = "ns",
       .description = "the layer's op durations summed (ops overlap, so it can exceed span_ns)",
       .minimum = 0},
      {.path = "start_ps",
       .type = FieldType::integer,
       .unit = "ps",
       .description = "start_ns as exact integer picoseconds",
       .minimum = 0},
      {.path = "end_ps",
       .type = FieldType::integer,
       .unit = "ps",
       .description = "end_ns as exact integer picoseconds",
       .minimum = 0},
      {.path = "hbm_bytes",
       .type = FieldType::integer,
       .unit = "bytes",
       .description = "DDR bytes moved, summed over the layer's ops",
       .minimum = 0},
      {.path = "flops",
       .type = FieldType::integer,
       .unit = "FLOPs",
       .description = "arithmetic summed over the layer's ops",
       .minimum = 0},
  };
}

}  // namespace

const std::vector<Report>& run_reports() {
  static const std::vector<Report> reports = {
      {.name = "run",
       .format = ReportFormat::json,
       .command = "g5sim run --json PATH",
       .schema_version = 3,
       .description = "one chip's share of a decoder step (or of one attention block): what was run, where, how it "
                      "was sharded, its time with the calibrated band, throughput, energy, a summary per op kind "
                      "and a record per op; times in ns with three exact decimals, beside integer ps",
       .fields = run_json_fields()},
      {.name = "run_kinds",
       .format = ReportFormat::table,
       .command = "g5sim run (a step)",
       .description = "the table a step prints: one row per op kind, the kind busiest over the step first",
       .fields = run_kinds_fields()},
      {.name = "run_ops",
       .format = ReportFormat::table,
       .command = "g5sim run --scope block",
       .description = "the table an attention block prints: one row per op, in emission order",
       .fields = run_ops_fields()},
      {.name = "op",
       .format = ReportFormat::json,
       .command = "g5sim op KIND ... (OpRunResult::json())",
       .schema_version = 2,
       .description = "one op simulated alone on a chip (matmul, flash attention or a collective): its time, "
                      "traffic, utilization and, with an energy section, energy; one JSON object on one line",
       .fields = op_json_fields()},
      {.name = "ops",
       .format = ReportFormat::frame,
       .command = "g5sim.Result.to_dataframe()",
       .description = "a run's ops as a pandas DataFrame, one row per op in emission order (the run JSON's ops "
                      "entries without energy)",
       .fields = ops_frame_fields()},
      {.name = "layers",
       .format = ReportFormat::frame,
       .command = "g5sim.Result.per_layer()",
       .description = "a run's time by decoder layer as a pandas DataFrame: one row per layer in order, then one "
                      "row for the ops outside the layers",
       .fields = layers_frame_fields()},
  };
  return reports;
}

#pragma GCC diagnostic pop

}  // namespace g5sim
