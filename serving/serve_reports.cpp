// The fields of the serve floor's reports (g5sim/report_fields.hpp): `g5sim serve --json`, its
// per-request CSV (`--csv`) and the Python serve sweep's DataFrame, one row per key or column in
// the order the writers (serving/serve_writers.cpp, python/g5sim/serving.py) emit them.

#include <algorithm>
#include <string>
#include <vector>

#include "g5sim/knobs.hpp"
#include "g5sim/report_fields.hpp"
#include "g5sim/serve.hpp"

namespace g5sim {

const std::vector<Report>& serve_reports();

namespace {

using F = FieldType;

// Each row names only the fields it sets (designated initializers); the rest keep ReportField's
// defaults, which GCC's -Wextra would report as missing.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

// A latency distribution over requests (or over token gaps) at `key`, in `unit`: its count, mean,
// percentiles and maximum, then the error band's scaled mean, p50 and p99 when the steps have one.
void add_distribution(std::vector<ReportField>& rows, const std::string& key, const std::string& unit,
                      const std::string& what, const std::string& samples) {
  rows.push_back({.path = key, .type = F::object, .description = what + ": its distribution over " + samples});
  rows.push_back({.path = key + ".count",
                  .type = F::integer,
                  .description = "how many " + samples + " the distribution is over",
                  .minimum = 0});
  const std::string empty = " (0 when there is no sample)";
  rows.push_back(
      {.path = key + ".mean", .type = F::number, .unit = unit, .description = "mean " + what + empty, .minimum = 0});
  rows.push_back({.path = key + ".p50",
                  .type = F::number,
                  .unit = unit,
                  .description = "median " + what + ", interpolated between samples" + empty,
                  .minimum = 0});
  rows.push_back({.path = key + ".p90",
                  .type = F::number,
                  .unit = unit,
                  .description = "90th percentile " + what + empty,
                  .minimum = 0});
  rows.push_back({.path = key + ".p99",
                  .type = F::number,
                  .unit = unit,
                  .description = "99th percentile " + what + empty,
                  .minimum = 0});
  rows.push_back(
      {.path = key + ".max", .type = F::number, .unit = unit, .description = "largest " + what + empty, .minimum = 0});
  const std::string band_when =
      "the steps have an error band (a calibrated chip) or the runtime one (a calibrated runtime: its ttft band on "
      "ttft_ms, its tpot band on the others) and count is above 0";
  for (const auto& [side, ratio] :
       {std::pair<std::string, std::string>{"band_low", "band.low_ratio"}, {"band_high", "band.high_ratio"}}) {
    const std::string bound = side == "band_low" ? "lower" : "upper";
    rows.push_back(
        {.path = key + "." + side,
         .type = F::object,
         .description = "the " + bound + " end of the error band of " + what + ": each figure times " + ratio,
         .when = band_when});
    for (const auto& [stat, name] :
         {std::pair<std::string, std::string>{"mean", "mean"}, {"p50", "median"}, {"p99", "99th percentile"}}) {
      rows.push_back({.path = key + "." + side + "." + stat,
                      .type = F::number,
                      .unit = unit,
                      .description = "the band's " + bound + " bound of the " + name + " " + what,
                      .minimum = 0});
    }
  }
}

// Appends `more` to `rows`.
void append(std::vector<ReportField>& rows, const std::vector<ReportField>& more) {
  rows.insert(rows.end(), more.begin(), more.end());
}

// The document's version, the chip and model served, and one instance's sharding.
std::vector<ReportField> serve_identity_rows() {
  return {
      {.path = "schema_version",
       .type = F::integer,
       .description = "version of this document's layout, raised when a key changes meaning or goes",
       .minimum = 1},
      {.path = "chip", .type = F::text, .description = "the chip config's name"},
      {.path = "model", .type = F::text, .description = "the model config's name"},
      {.path = "chip_source",
       .type = F::text,
       .description = "the chip config read: shipped:NAME, or its path (relative to the working folder when under it)"},
      {.path = "model_source",
       .type = F::text,
       .description =
           "the model config read: shipped:NAME, or its path (relative to the working folder when under it)"},
      {.path = "deployment", .type = F::object, .description = "the sharding of one serving instance over chips"},
      {.path = "deployment.tp",
       .type = F::integer,
       .description = "tensor-parallel chips of one instance",
       .minimum = 1},
      {.path = "deployment.ep",
       .type = F::integer,
       .description = "expert-parallel chips of one instance",
       .minimum = 1},
      {.path = "deployment.dp", .type = F::integer, .description = "data-parallel ranks of one instance", .minimum = 1},
      {.path = "deployment.chips",
       .type = F::integer,
       .description = "chips of one instance (tp x dp); disaggregation.chips counts every instance",
       .minimum = 1},
      {.path = "deployment.automatic",
       .type = F::flag,
       .description = "true when g5sim picked the smallest sharding that holds the load (no --tp, --ep, --dp given)"},
  };
}

// Prefill/decode disaggregation: its instances and the KV cache moved between them.
std::vector<ReportField> serve_disaggregation_rows() {
  return {
      {.path = "disaggregation",
       .type = F::object,
       .description = "prefill/decode disaggregation: its instances and the KV cache moved between them; null "
                      "without --disagg",
       .nullable = true},
      {.path = "disaggregation.prefill_instances",
       .type = F::integer,
       .description = "instances that only run prompts",
       .minimum = 1},
      {.path = "disaggregation.decode_instances",
       .type = F::integer,
       .description = "instances that only generate tokens",
       .minimum = 1},
      {.path = "disaggregation.chips",
       .type = F::integer,
       .description = "chips over every prefill and decode instance",
       .minimum = 1},
      {.path = "disaggregation.link",
       .type = F::text,
       .description = "the chip link the KV caches travel over",
       .choices = "rdma,c2c"},
      {.path = "disaggregation.bandwidth_gb_per_s",
       .type = F::number,
       .unit = "GB/s",
       .description = "bandwidth of that link for one transfer",
       .minimum = 0},
      {.path = "disaggregation.latency_ns",
       .type = F::number,
       .unit = "ns",
       .description = "fixed latency added to each KV cache transfer",
       .minimum = 0},
      {.path = "disaggregation.kv_transfer_bytes",
       .type = F::integer,
       .unit = "bytes",
       .description = "KV cache bytes moved from prefill to decode instances, summed over all requests",
       .minimum = 0},
      {.path = "disaggregation.bytes_per_token",
       .type = F::integer,
       .unit = "bytes",
       .description = "bytes a token's KV cache moves per transfer: a chip's share of it, the larger of the two "
                      "roles' shares when they differ",
       .minimum = 1},
      {.path = "disaggregation.own_chips",
       .type = F::flag,
       .description = "true when the roles are sized apart: chips of their own (--prefill-chip, --decode-chip; the "
                      "cache then crosses at the slower side's bandwidth after the longer latency) or shardings of "
                      "their own (--prefill-tp, --decode-ep, ...)"},
  };
}

// Attention-FFN disaggregation: the FFN side, the link and the activations moved.
std::vector<ReportField> serve_afd_rows() {
  return {
      {.path = "afd",
       .type = F::object,
       .description = "attention-FFN disaggregation (--afd A:F): each instance's attention on the chip above (its "
                      "deployment, dp A), its FFN on chips of its own; null without --afd",
       .nullable = true},
      {.path = "afd.attention_chips",
       .type = F::integer,
       .description = "attention chips of an instance",
       .minimum = 1},
      {.path = "afd.ffn_chips", .type = F::integer, .description = "FFN chips of an instance", .minimum = 1},
      {.path = "afd.ffn_chip", .type = F::text, .description = "the FFN chips' config name"},
      {.path = "afd.ffn_chip_source",
       .type = F::text,
       .description = "that config: shipped:NAME, or its path (relative to the working folder when under it)"},
      {.path = "afd.ffn_weight_bytes",
       .type = F::integer,
       .unit = "bytes",
       .description = "the FFN side's weights on one FFN chip (experts / F, the dense FFNs whole)",
       .minimum = 0},
      {.path = "afd.micro_batches",
       .type = F::integer,
       .description = "micro-batches a step is dealt into (--micro-batches; a step of fewer sequences runs fewer)",
       .minimum = 1},
      {.path = "afd.attention_link",
       .type = F::text,
       .description = "the attention chip's link (rdma: its nodes section; c2c: its chip-to-chip links together)",
       .choices = "rdma,c2c"},
      {.path = "afd.ffn_link", .type = F::text, .description = "the FFN chip's link", .choices = "rdma,c2c"},
      {.path = "afd.bandwidth_gb_per_s",
       .type = F::number,
       .unit = "GB/s",
       .description = "the activations' bandwidth: min(A x the attention link's, F x the FFN link's)",
       .minimum = 0},
      {.path = "afd.latency_ns",
       .type = F::number,
       .unit = "ns",
       .description = "the longer of the two links' latencies, added to each layer's transfer",
       .minimum = 0},
      {.path = "afd.dispatch_bytes",
       .type = F::integer,
       .unit = "bytes",
       .description = "activations sent attention to FFN over every step taken: each step's new tokens x hidden x 2 x "
                      "(top_k + 1 with shared experts) per MoE layer, x 1 per dense layer",
       .minimum = 0},
      {.path = "afd.combine_bytes",
       .type = F::integer,
       .unit = "bytes",
       .description = "the FFN outputs sent back, as many",
       .minimum = 0},
  };
}

// One role of a disaggregation (prefill or decode): its chip, instances, sharding, cache and link.
std::vector<ReportField> serve_role_rows(const std::string& role) {
  const std::string key = "disaggregation." + role;
  return {
      {.path = key, .type = F::object, .description = "the " + role + " instances: their chip, sharding and link"},
      {.path = key + ".chip", .type = F::text, .description = "the chip config's name the " + role + " instances run"},
      {.path = key + ".chip_source",
       .type = F::text,
       .description = "that chip config: shipped:NAME, or its path (relative to the working folder when under it)"},
      {.path = key + ".instances", .type = F::integer, .description = role + " instances", .minimum = 1},
      {.path = key + ".deployment",
       .type = F::object,
       .description = "the sharding of one " + role +
                      " instance (its own chip's smallest that holds the load, "
                      "unless --tp, --ep, --dp are given)"},
      {.path = key + ".deployment.tp", .type = F::integer, .description = "tensor-parallel chips", .minimum = 1},
      {.path = key + ".deployment.ep", .type = F::integer, .description = "expert-parallel chips", .minimum = 1},
      {.path = key + ".deployment.dp", .type = F::integer, .description = "data-parallel ranks", .minimum = 1},
      {.path = key + ".deployment.chips", .type = F::integer, .description = "chips of one instance", .minimum = 1},
      {.path = key + ".kv_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "KV cache of one " + role + " instance",
       .minimum = 1},
      {.path = key + ".kv_bytes_per_token",
       .type = F::integer,
       .unit = "bytes",
       .description = "KV cache bytes a token takes on one of its chips (every layer)",
       .minimum = 1},
      {.path = key + ".link",
       .type = F::text,
       .description = "its chip's link for KV caches (rdma: its nodes section; c2c: its chip-to-chip links together)",
       .choices = "rdma,c2c"},
      {.path = key + ".bandwidth_gb_per_s",
       .type = F::number,
       .unit = "GB/s",
       .description = "that link's bandwidth",
       .minimum = 0},
      {.path = key + ".latency_ns",
       .type = F::number,
       .unit = "ns",
       .description = "that link's latency",
       .minimum = 0},
  };
}

// Multi-token prediction: its drafts and how they were accepted.
std::vector<ReportField> serve_mtp_rows() {
  return {
      {.path = "mtp",
       .type = F::object,
       .description = "multi-token prediction (speculative decoding): its drafts and how they were accepted; null "
                      "without --mtp",
       .nullable = true},
      {.path = "mtp.draft_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "draft tokens each decode verifies per step",
       .minimum = 1},
      {.path = "mtp.accept",
       .type = F::values,
       .unit = "ratio",
       .description = "acceptance rate of each draft as given: one for all drafts or one per draft"},
      {.path = "mtp.mode",
       .type = F::text,
       .description = "expected: the mean accepted tokens, no randomness; drawn: acceptances drawn at random",
       .choices = "drawn,expected"},
      {.path = "mtp.seed",
       .type = F::integer,
       .description = "seed of the drawn acceptances (--accept-draw); null in expected mode",
       .minimum = 0,
       .nullable = true},
      {.path = "mtp.verifies",
       .type = F::integer,
       .description = "verify steps summed over all requests",
       .minimum = 0},
      {.path = "mtp.tokens_per_verify",
       .type = F::number,
       .unit = "tokens",
       .description = "tokens a verify yielded on average (0 when there was none)",
       .minimum = 0},
  };
}

// The engine's knobs in effect.
std::vector<ReportField> serve_engine_rows() {
  // The knob table's rows with engine_echo > 0, by engine_echo (serving/serve_knobs.cpp), each as
  // its row declares it: an echoed knob brings its key with it.
  std::vector<const Knob*> echoed;
  for (const Knob& k : serve_knobs()) {
    if (k.engine_echo > 0) echoed.push_back(&k);
  }
  std::stable_sort(echoed.begin(), echoed.end(),
                   [](const Knob* a, const Knob* b) { return a->engine_echo < b->engine_echo; });
  std::vector<ReportField> rows{{.path = "engine",
                                 .type = F::object,
                                 .description = "the engine's knobs in effect, echoed from the serve knob table"}};
  for (const Knob* k : echoed) {
    ReportField f{.path = "engine." + k->name, .unit = k->unit, .description = k->doc, .choices = k->choices};
    f.type = k->type == KnobType::count     ? F::integer
             : k->type == KnobType::decimal ? F::number
             : k->type == KnobType::flag    ? F::flag
                                            : F::text;
    if (k->type == KnobType::count) f.minimum = static_cast<double>(k->min);
    if (k->resolved != nullptr) {
      f.description += " (as in effect)";
      f.minimum = std::max<double>(1, static_cast<double>(k->min));
    }
    rows.push_back(std::move(f));
  }
  return rows;
}

// How the KV cache was sized.
std::vector<ReportField> serve_kv_cache_rows() {
  return {
      {.path = "kv_cache", .type = F::object, .description = "how the KV cache was sized"},
      {.path = "kv_cache.tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "KV cache of one instance in tokens, over its DP ranks (given by --kv-tokens or sized from "
                      "DDR)",
       .minimum = 1},
      {.path = "kv_cache.blocks",
       .type = F::integer,
       .description = "KV cache blocks of one instance: tokens / block_tokens, rounded down",
       .minimum = 0},
      {.path = "kv_cache.bytes_per_token",
       .type = F::integer,
       .unit = "bytes",
       .description = "KV cache bytes a cached token takes on the chip holding its sequence, over the layers that "
                      "keep every token (full attention; a sliding-window-only model's sliding layers)",
       .minimum = 1},
      {.path = "kv_cache.window_bytes_per_token",
       .type = F::integer,
       .unit = "bytes",
       .description = "bytes a token takes in the sliding-window layers while it is among a sequence's last "
                      "window_tokens (0: none, or they are bytes_per_token's)",
       .minimum = 0},
      {.path = "kv_cache.window_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "the sliding window: tokens of a sequence its sliding-window layers keep (0: none)",
       .minimum = 0},
      {.path = "kv_cache.state_bytes_per_sequence",
       .type = F::integer,
       .unit = "bytes",
       .description = "bytes a sequence's linear-attention states take whatever its length, all such layers (0: "
                      "none); windows and states take whole blocks of their own",
       .minimum = 0},
      {.path = "kv_cache.weight_bytes",
       .type = F::integer,
       .unit = "bytes",
       .description = "the model weights held by one chip",
       .minimum = 0},
      {.path = "kv_cache.capacity_bytes",
       .type = F::integer,
       .unit = "bytes",
       .description = "one chip's DDR capacity",
       .minimum = 1},
      {.path = "kv_cache.memory_utilization",
       .type = F::number,
       .unit = "ratio",
       .description = "share of a chip's DDR allowed for weights plus KV cache",
       .minimum = 0},
  };
}

// What was served: the requests, their tokens, and the serve's duration.
std::vector<ReportField> serve_volume_rows() {
  return {
      {.path = "requests", .type = F::integer, .description = "requests served", .minimum = 1},
      {.path = "input_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "prompt tokens summed over all requests",
       .minimum = 1},
      {.path = "output_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "generated tokens summed over all requests",
       .minimum = 1},
      {.path = "duration_s",
       .type = F::number,
       .unit = "s",
       .description = "serve clock from the first request's arrival to the last one's finish",
       .minimum = 0},
  };
}

// The latency distributions over requests: TTFT, TPOT, ITL and end-to-end.
std::vector<ReportField> serve_latency_rows() {
  std::vector<ReportField> rows;
  add_distribution(rows, "ttft_ms", "ms", "time to first token", "requests");
  add_distribution(rows, "tpot_ms", "ms", "time per output token after the first",
                   "requests with more than one output token");
  add_distribution(rows, "itl_ms", "ms", "inter-token latency", "gaps between successive tokens of every request");
  add_distribution(rows, "e2e_s", "s", "end-to-end latency (arrival to last token)", "requests");
  add_distribution(rows, "e2el_ms", "ms", "end-to-end latency (arrival to last token, vLLM's E2EL)", "requests");
  return rows;
}

// The rates over the serve's duration, and the requests meeting the latency SLOs.
std::vector<ReportField> serve_throughput_rows() {
  return {
      {.path = "throughput", .type = F::object, .description = "rates over duration_s"},
      {.path = "throughput.requests_per_s",
       .type = F::number,
       .unit = "requests/s",
       .description = "requests finished per second of the serve",
       .minimum = 0},
      {.path = "throughput.input_tokens_per_s",
       .type = F::number,
       .unit = "tokens/s",
       .description = "prompt tokens per second, whole deployment",
       .minimum = 0},
      {.path = "throughput.output_tokens_per_s",
       .type = F::number,
       .unit = "tokens/s",
       .description = "generated tokens per second, whole deployment",
       .minimum = 0},
      {.path = "throughput.input_tokens_per_s_per_chip",
       .type = F::number,
       .unit = "tokens/s",
       .description = "prompt tokens per second divided by every chip (all instances)",
       .minimum = 0},
      {.path = "throughput.output_tokens_per_s_per_chip",
       .type = F::number,
       .unit = "tokens/s",
       .description = "generated tokens per second divided by every chip (all instances)",
       .minimum = 0},
      {.path = "throughput.output_tokens_per_s_per_user",
       .type = F::number,
       .unit = "tokens/s",
       .description = "decode speed one request sees after its first token, mean over requests with more than one "
                      "output token (0 when none has)",
       .minimum = 0},
      {.path = "goodput", .type = F::object, .description = "requests meeting the latency SLOs"},
      {.path = "goodput.slo_ttft_ms",
       .type = F::number,
       .unit = "ms",
       .description = "the TTFT target a request must meet; null without --slo-ttft-ms",
       .minimum = 0,
       .nullable = true},
      {.path = "goodput.slo_tpot_ms",
       .type = F::number,
       .unit = "ms",
       .description = "the TPOT target a request must meet; null without --slo-tpot-ms",
       .minimum = 0,
       .nullable = true},
      {.path = "goodput.requests_met",
       .type = F::integer,
       .description = "requests meeting every SLO given (all requests when none is)",
       .minimum = 0},
      {.path = "goodput.requests_per_s",
       .type = F::number,
       .unit = "requests/s",
       .description = "requests_met over duration_s",
       .minimum = 0},
  };
}

// With a runtime (g5sim/runtime.hpp): what it is and the TTFT and TPOT means split.
std::vector<ReportField> serve_runtime_rows() {
  const auto ms = [](const char* path, const char* description) {
    return ReportField{.path = path, .type = F::number, .unit = "ms", .description = description};
  };
  const auto text = [](const char* path, const char* description) {
    return ReportField{.path = path, .type = F::text, .description = description};
  };
  return {
      {.path = "runtime",
       .type = F::object,
       .description = "the software that runs the model and its share of the latencies",
       .when = "the serve names a runtime other than none (--runtime)"},
      text("runtime.name", "the runtime config's name (configs/runtimes/)"),
      text("runtime.version", "the engine version its numbers are for"),
      text("runtime.source", "the runtime config file"),
      text("runtime.sha256", "SHA-256 of the runtime config's text"),
      text("runtime.adds", "what the runtime adds, in one line"),
      {.path = "runtime.ttft_ms", .type = F::object, .description = "ttft_ms.mean split"},
      ms("runtime.ttft_ms.chip", "the mean TTFT less the runtime's part (may be below 0 only by rounding)"),
      ms("runtime.ttft_ms.runtime",
         "the mean over requests of the front end plus the runtime's share of every step while it waited or ran"),
      {.path = "runtime.tpot_ms", .type = F::object, .description = "tpot_ms.mean split"},
      ms("runtime.tpot_ms.chip", "the mean TPOT less the runtime's part"),
      ms("runtime.tpot_ms.runtime", "the mean over requests of the runtime's share of its decode span per token"),
      {.path = "runtime.steps_runtime_s",
       .type = F::number,
       .unit = "s",
       .description = "the runtime's charge summed over the steps taken (device side and scheduler CPU)",
       .minimum = 0},
      {.path = "runtime.steps_cpu_s",
       .type = F::number,
       .unit = "s",
       .description = "of it, the scheduler CPU not hidden behind the step before",
       .minimum = 0},
      text("runtime.not_modelled", "what no runtime config models"),
  };
}

// The energy over the serve, every chip of every instance.
std::vector<ReportField> serve_energy_rows() {
  return {
      {.path = "energy",
       .type = F::object,
       .description = "energy over the serve, every chip of every instance: the steps' dynamic energy plus static "
                      "power for duration_s",
       .when = "the chip config has an energy section"},
      {.path = "energy.total_j",
       .type = F::number,
       .unit = "J",
       .description = "dynamic plus static energy over all chips",
       .minimum = 0},
      {.path = "energy.dynamic_j",
       .type = F::number,
       .unit = "J",
       .description = "each step's dynamic energy times the chips of the instance that ran it, summed over steps",
       .minimum = 0},
      {.path = "energy.static_j",
       .type = F::number,
       .unit = "J",
       .description = "static power times duration_s, over every chip (all instances), idle or not",
       .minimum = 0},
      {.path = "energy.joules_per_token",
       .type = F::number,
       .unit = "J/token",
       .description = "total_j per generated token (0 with no energy or no token)",
       .minimum = 0},
      {.path = "energy.tokens_per_joule",
       .type = F::number,
       .unit = "tokens/J",
       .description = "generated tokens per joule, the inverse of joules_per_token (0 when that is 0)",
       .minimum = 0},
      {.path = "energy.average_w_per_chip",
       .type = F::number,
       .unit = "W",
       .description = "mean power of one chip: total_j over chips and duration_s",
       .minimum = 0},
      {.path = "energy.tdp_w",
       .type = F::number,
       .unit = "W",
       .description = "the chip's thermal design power from its config; null where the config states none",
       .minimum = 0,
       .nullable = true},
  };
}

// A calibrated runtime's bands (g5sim::RuntimeBands), as serve's and search's JSON hold them.
std::vector<ReportField> band_rows_of_runtime() {
  std::vector<ReportField> rows{
      {.path = "runtime_bands",
       .type = F::object,
       .description = "a calibrated runtime's held-out bands (g5sim calibrate --runtime) on TTFT, TPOT (and ITL, "
                      "E2E) and output throughput; they replace the chip's band on the latencies; null without a "
                      "runtime or with one not calibrated",
       .nullable = true},
      {.path = "runtime_bands.coverage",
       .type = F::number,
       .unit = "ratio",
       .description = "share of the runtime fit's held-out rows each band held",
       .minimum = 0},
      {.path = "runtime_bands.basis", .type = F::text, .description = "how those rows were held out (2 folds)"},
  };
  for (const std::string metric : {"ttft", "tpot", "throughput"}) {
    const std::string key = "runtime_bands." + metric;
    rows.push_back({.path = key,
                    .type = F::object,
                    .description = "the band on " + metric +
                                   ": measured within [low, high] times the value; null "
                                   "when the fit had no " +
                                   metric + " or all band",
                    .nullable = true});
    rows.push_back({.path = key + ".kind",
                    .type = F::text,
                    .description = "the band recorded for it: its own, else all",
                    .choices = metric + ",all"});
    rows.push_back({.path = key + ".rows", .type = F::integer, .description = "held-out rows behind it", .minimum = 1});
    rows.push_back({.path = key + ".low",
                    .type = F::number,
                    .unit = "ratio",
                    .description = "the lower multiplier",
                    .minimum = 0});
    rows.push_back({.path = key + ".high",
                    .type = F::number,
                    .unit = "ratio",
                    .description = "the upper multiplier",
                    .minimum = 0});
  }
  return rows;
}

// The error band applied to every latency.
std::vector<ReportField> serve_band_rows() {
  std::vector<ReportField> rows{
      {.path = "band",
       .type = F::object,
       .description = "the error band applied to every latency above, from the chip's calibration"},
      {.path = "band.low_ratio",
       .type = F::number,
       .unit = "ratio",
       .description = "the steps' summed lower band bound over their summed time: the factor of every band_low; null "
                      "without a band",
       .minimum = 0,
       .nullable = true},
      {.path = "band.high_ratio",
       .type = F::number,
       .unit = "ratio",
       .description = "the steps' summed upper band bound over their summed time: the factor of every band_high; null "
                      "without a band",
       .minimum = 0,
       .nullable = true},
      {.path = "band.coverage",
       .type = F::number,
       .unit = "ratio",
       .description = "share of held-out measurements that fell inside the band; null without a band",
       .minimum = 0,
       .nullable = true},
      {.path = "band.basis", .type = F::text, .description = "where the band comes from, or why there is none"},
  };
  for (ReportField& f : band_rows_of_runtime()) rows.push_back(std::move(f));
  return rows;
}

// How the engine ran: KV cache use, batch sizes, steps, preemptions.
std::vector<ReportField> serve_engine_run_rows() {
  return {
      {.path = "kv_utilisation", .type = F::object, .description = "share of KV cache blocks in use"},
      {.path = "kv_utilisation.mean",
       .type = F::number,
       .unit = "ratio",
       .description = "blocks used over blocks after each step, weighted by step time",
       .minimum = 0},
      {.path = "kv_utilisation.peak",
       .type = F::number,
       .unit = "ratio",
       .description = "the highest blocks used over blocks after any step",
       .minimum = 0},
      {.path = "batch", .type = F::object, .description = "sequences a step ran"},
      {.path = "batch.mean",
       .type = F::number,
       .unit = "sequences",
       .description = "sequences per step, weighted by step time",
       .minimum = 0},
      {.path = "batch.max",
       .type = F::integer,
       .unit = "sequences",
       .description = "the most sequences of any step",
       .minimum = 0},
      {.path = "steps_taken", .type = F::integer, .description = "engine steps over every instance", .minimum = 0},
      {.path = "steps_simulated",
       .type = F::integer,
       .description = "distinct steps this serve simulated (the rest reused a cached time)",
       .minimum = 0},
      {.path = "steps_read",
       .type = F::integer,
       .description = "of steps_simulated, those read from the step cache folder instead (--step-cache-dir)",
       .minimum = 0},
      {.path = "preemptions",
       .type = F::integer,
       .description = "times a running request was evicted for lack of KV cache, over all requests",
       .minimum = 0},
  };
}

// What prefix caching reused, and the tiers below device memory (serving/prefix_cache.hpp,
// serving/kv_tiers.hpp).
std::vector<ReportField> serve_reuse_rows() {
  return {
      {.path = "prefix_cache",
       .type = F::object,
       .description = "prefix caching: prompts' leading blocks reused across requests (serving/prefix_cache.hpp)"},
      {.path = "prefix_cache.enabled", .type = F::flag, .description = "whether prefix caching was on"},
      {.path = "prefix_cache.hit_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "prompt tokens reused instead of computed: the prefill saved",
       .minimum = 0},
      {.path = "prefix_cache.computed_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "prompt tokens computed, over every step",
       .minimum = 0},
      {.path = "prefix_cache.hit_rate",
       .type = F::number,
       .unit = "ratio",
       .description = "hit_tokens / (hit_tokens + computed_tokens)",
       .minimum = 0},
      {.path = "prefix_cache.requests_hit",
       .type = F::integer,
       .unit = "requests",
       .description = "requests that reused any cached block",
       .minimum = 0},
      {.path = "prefix_cache.ttft_mean_ms_hit",
       .type = F::number,
       .unit = "ms",
       .description = "mean TTFT of the requests that reused cached blocks (0: none did)",
       .minimum = 0},
      {.path = "prefix_cache.ttft_mean_ms_miss",
       .type = F::number,
       .unit = "ms",
       .description = "mean TTFT of the others (0: none)",
       .minimum = 0},
      {.path = "kv_tiers",
       .type = F::records,
       .description = "the tiers below device memory the prefix cache spilled into (--kv-tiers), nearest first; "
                      "counts summed over instances; empty without tiers"},
      {.path = "kv_tiers[].name", .type = F::text, .description = "the tier's name in its file", .when = "--kv-tiers"},
      {.path = "kv_tiers[].capacity_blocks",
       .type = F::integer,
       .description = "blocks one instance's share of it holds: its capacity / block_bytes",
       .minimum = 0,
       .when = "--kv-tiers"},
      {.path = "kv_tiers[].block_bytes",
       .type = F::integer,
       .unit = "bytes",
       .description = "bytes of a block: block_tokens x the cache's bytes a token",
       .minimum = 1,
       .when = "--kv-tiers"},
      {.path = "kv_tiers[].peak_blocks",
       .type = F::integer,
       .description = "the most blocks it held at once (the fullest instance's)",
       .minimum = 0,
       .when = "--kv-tiers"},
      {.path = "kv_tiers[].written_blocks",
       .type = F::integer,
       .description = "blocks written down into it (evicted from the tier above)",
       .minimum = 0,
       .when = "--kv-tiers"},
      {.path = "kv_tiers[].read_blocks",
       .type = F::integer,
       .description = "blocks read back up for a prompt that starts with them",
       .minimum = 0,
       .when = "--kv-tiers"},
      {.path = "kv_tiers[].dropped_blocks",
       .type = F::integer,
       .description = "blocks the last tier let go when full",
       .minimum = 0,
       .when = "--kv-tiers"},
      {.path = "kv_tiers[].written_bytes",
       .type = F::integer,
       .unit = "bytes",
       .description = "written_blocks x block_bytes: the traffic down the path",
       .minimum = 0,
       .when = "--kv-tiers"},
      {.path = "kv_tiers[].read_bytes",
       .type = F::integer,
       .unit = "bytes",
       .description = "read_blocks x block_bytes: the traffic up to the chip",
       .minimum = 0,
       .when = "--kv-tiers"},
      {.path = "kv_tiers[].load_ms",
       .type = F::number,
       .unit = "ms",
       .description = "time its loads took, summed over the loads (latency + bytes / bandwidth each)",
       .minimum = 0,
       .when = "--kv-tiers"},
  };
}

// How step times were found (serving/auto_step_cache.hpp, serving/step_bucketing.hpp).
std::vector<ReportField> serve_step_cache_rows() {
  return {
      {.path = "step_cache", .type = F::object, .description = "how step times were found"},
      {.path = "step_cache.mode",
       .type = F::text,
       .description = "auto: exact when small, else a step-time model refined until a sample simulated exactly "
                      "agrees; exact: every distinct step simulated; bucket: steps interpolated from anchor steps",
       .choices = "auto,exact,bucket"},
      {.path = "step_cache.bound_percent",
       .type = F::number,
       .unit = "%",
       .description = "auto's bound on the checked metrics' estimated error",
       .minimum = 0,
       .when = "--step-cache auto[:PCT]"},
      {.path = "step_cache.exact",
       .type = F::flag,
       .description = "every distinct step simulated: at most exact_budget of them, or (rounds > 0) after a round "
                      "missed the bound, when the steps left cost less than a finer grid",
       .when = "--step-cache auto[:PCT]"},
      {.path = "step_cache.exact_budget",
       .type = F::integer,
       .description = "distinct steps auto simulates exactly before it models the rest",
       .minimum = 0,
       .when = "--step-cache auto[:PCT]"},
      {.path = "step_cache.grid_percent",
       .type = F::integer,
       .unit = "%",
       .description = "the last round's anchor grid (0 when exact)",
       .minimum = 0,
       .when = "--step-cache auto[:PCT]"},
      {.path = "step_cache.rounds",
       .type = F::integer,
       .description = "serves on a grid, each checked (0 when exact)",
       .minimum = 0,
       .when = "--step-cache auto[:PCT]"},
      {.path = "step_cache.samples",
       .type = F::integer,
       .description = "distinct steps the checks simulated exactly, over every round",
       .minimum = 0,
       .when = "--step-cache auto[:PCT]"},
      {.path = "step_cache.met",
       .type = F::flag,
       .description = "every check of the last round within bound_percent",
       .when = "--step-cache auto[:PCT]"},
      {.path = "step_cache.checks",
       .type = F::records,
       .description = "the last round's checks, one per metric",
       .when = "--step-cache auto[:PCT]"},
      {.path = "step_cache.checks[].metric",
       .type = F::text,
       .description = "the metric whose steps were drawn",
       .choices = "mean_step,ttft_mean,ttft_p50,ttft_p99,tpot_mean,tpot_p50,tpot_p99"},
      {.path = "step_cache.checks[].draws",
       .type = F::integer,
       .description = "steps drawn (in proportion to how much each makes the metric)",
       .minimum = 0},
      {.path = "step_cache.checks[].error",
       .type = F::number,
       .unit = "ratio",
       .description = "estimated (model - exact) / exact of the metric"},
      {.path = "step_cache.checks[].bound_percent",
       .type = F::number,
       .unit = "%",
       .description = "the check meets it when |error| x 100 is at most this (p99 checks: 3 x bound_percent)",
       .minimum = 0},
      {.path = "step_cache.checks[].standard_error",
       .type = F::number,
       .unit = "ratio",
       .description = "the estimate's standard error, from the draws' spread",
       .minimum = 0},
      {.path = "step_cache.percent",
       .type = F::integer,
       .unit = "%",
       .description = "grid spacing of the bucket anchors",
       .minimum = 1,
       .when = "--step-cache bucket:N"},
      {.path = "step_cache.error_samples",
       .type = F::integer,
       .description = "bucketed steps also simulated exactly to measure the error",
       .minimum = 0,
       .when = "--step-cache bucket:N"},
      {.path = "step_cache.error_mean_abs",
       .type = F::number,
       .unit = "ratio",
       .description = "mean of |bucketed - exact| / exact over those samples",
       .minimum = 0,
       .when = "--step-cache bucket:N"},
      {.path = "step_cache.error_max_abs",
       .type = F::number,
       .unit = "ratio",
       .description = "largest |bucketed - exact| / exact over those samples",
       .minimum = 0,
       .when = "--step-cache bucket:N"},
  };
}

// One record per request, for latency CDFs.
std::vector<ReportField> serve_per_request_rows() {
  return {
      {.path = "per_request",
       .type = F::records,
       .description = "one object per request in serve order, for latency CDFs"},
      {.path = "per_request[].id",
       .type = F::text,
       .description = "the request's id (its row number when the load "
                      "has no ids)"},
      {.path = "per_request[].ttft_ms",
       .type = F::number,
       .unit = "ms",
       .description = "the request's time from arrival to its first token",
       .minimum = 0},
      {.path = "per_request[].tpot_ms",
       .type = F::number,
       .unit = "ms",
       .description = "the request's mean time per output token after the first; null with one output token",
       .minimum = 0,
       .nullable = true},
      {.path = "per_request[].e2e_s",
       .type = F::number,
       .unit = "s",
       .description = "the request's time from arrival to its last token",
       .minimum = 0},
      {.path = "per_request[].e2el_ms",
       .type = F::number,
       .unit = "ms",
       .description = "the request's time from arrival to its last token, in ms",
       .minimum = 0},
  };
}

// One record per engine step taken.
std::vector<ReportField> serve_step_rows() {
  return {
      {.path = "steps", .type = F::records, .description = "one object per engine step taken, in order"},
      {.path = "steps[].instance",
       .type = F::integer,
       .description = "instance that ran the step (disaggregation: prefill instances first)",
       .minimum = 0},
      {.path = "steps[].start_s",
       .type = F::number,
       .unit = "s",
       .description = "serve clock at the step's start",
       .minimum = 0},
      {.path = "steps[].duration_ms", .type = F::number, .unit = "ms", .description = "the step's time", .minimum = 0},
      {.path = "steps[].sequences",
       .type = F::integer,
       .unit = "sequences",
       .description = "sequences the step ran",
       .minimum = 0},
      {.path = "steps[].prefill_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "prompt tokens the step computed",
       .minimum = 0},
      {.path = "steps[].decode_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "decode tokens the step computed (with --mtp, each decode's 1 + draft tokens)",
       .minimum = 0},
      {.path = "steps[].kv_blocks_used",
       .type = F::integer,
       .description = "KV cache blocks in use after the step's allocation",
       .minimum = 0},
      {.path = "steps[].waiting",
       .type = F::integer,
       .unit = "requests",
       .description = "requests arrived and left waiting once the step has admitted what it can",
       .minimum = 0},
  };
}

// The keys of `g5sim serve --json`, in the order write_serve_json emits them.
std::vector<ReportField> serve_json_fields() {
  std::vector<ReportField> rows = serve_identity_rows();
  append(rows, serve_disaggregation_rows());
  append(rows, serve_role_rows("prefill"));
  append(rows, serve_role_rows("decode"));
  append(rows, serve_afd_rows());
  append(rows, serve_mtp_rows());
  append(rows, serve_engine_rows());
  append(rows, serve_kv_cache_rows());
  append(rows, serve_runtime_rows());
  append(rows, serve_volume_rows());
  append(rows, serve_latency_rows());
  append(rows, serve_throughput_rows());
  append(rows, serve_energy_rows());
  append(rows, serve_band_rows());
  append(rows, serve_engine_run_rows());
  append(rows, serve_reuse_rows());
  append(rows, serve_step_cache_rows());
  append(rows, serve_per_request_rows());
  append(rows, serve_step_rows());
  return rows;
}

std::vector<ReportField> request_csv_fields() {
  return {
      {.path = "id", .type = F::text, .description = "the request's id (its row number when the load has no ids)"},
      {.path = "arrival_s",
       .type = F::number,
       .unit = "s",
       .description = "serve clock when the request arrived",
       .minimum = 0},
      {.path = "first_token_s",
       .type = F::number,
       .unit = "s",
       .description = "serve clock when its first token came out",
       .minimum = 0},
      {.path = "finish_s",
       .type = F::number,
       .unit = "s",
       .description = "serve clock when its last token came out",
       .minimum = 0},
      {.path = "ttft_ms",
       .type = F::number,
       .unit = "ms",
       .description = "time from arrival to the first token",
       .minimum = 0},
      {.path = "tpot_ms",
       .type = F::number,
       .unit = "ms",
       .description = "mean time per output token after the first; empty with one output token",
       .minimum = 0,
       .nullable = true},
      {.path = "itl_p50_ms",
       .type = F::number,
       .unit = "ms",
       .description = "median gap between its successive tokens; empty with one output token",
       .minimum = 0,
       .nullable = true},
      {.path = "itl_max_ms",
       .type = F::number,
       .unit = "ms",
       .description = "largest gap between its successive tokens; empty with one output token",
       .minimum = 0,
       .nullable = true},
      {.path = "e2e_s",
       .type = F::number,
       .unit = "s",
       .description = "time from arrival to the last token",
       .minimum = 0},
      {.path = "e2el_ms",
       .type = F::number,
       .unit = "ms",
       .description = "time from arrival to the last token, in ms (vLLM's E2EL)",
       .minimum = 0},
      {.path = "input_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "the request's prompt tokens",
       .minimum = 1},
      {.path = "output_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "the request's generated tokens",
       .minimum = 1},
      {.path = "preemptions",
       .type = F::integer,
       .description = "times the request was evicted for lack of KV cache",
       .minimum = 0},
      {.path = "cached_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "prompt tokens it reused from the prefix cache instead of computing",
       .minimum = 0},
  };
}

// A grid axis's column of the serve sweep's frame: the point's value as the grid lists it.
ReportField grid_axis_column(const std::string& name, FieldType type, const std::string& what) {
  return ReportField{.path = name,
                     .type = type,
                     .description = "the point's " + what + " as the grid lists it",
                     .minimum = type == F::integer ? std::optional<double>(1) : std::nullopt,
                     .when = name + " is a grid axis"};
}

// The point: its number, its grid axis values, the served chip and model and the sharding it ran with.
std::vector<ReportField> sweep_point_columns() {
  return {
      {.path = "point", .type = F::integer, .description = "the point's place in point order, from 0", .minimum = 0},
      grid_axis_column("chip", F::text, "chip (a shipped name, a path, or a chip object's text)"),
      grid_axis_column("model", F::text, "model (a shipped name, a path, or a model object's text)"),
      grid_axis_column("tp", F::integer, "tensor-parallel chips"),
      grid_axis_column("ep", F::integer, "expert-parallel chips"),
      grid_axis_column("dp", F::integer, "data-parallel ranks"),
      // Each swept serve knob (serve_sweep.axes after dp) adds its column here.
      {.path = "chip_name", .type = F::text, .description = "the served chip config's name (the summary's chip)"},
      {.path = "model_name", .type = F::text, .description = "the served model config's name (the summary's model)"},
      {.path = "chips", .type = F::integer, .description = "chips of one instance (deployment.chips)", .minimum = 1},
      {.path = "deployment_tp",
       .type = F::integer,
       .description = "tensor-parallel chips the serve ran with",
       .minimum = 1},
      {.path = "deployment_ep",
       .type = F::integer,
       .description = "expert-parallel chips the serve ran with",
       .minimum = 1},
      {.path = "deployment_dp",
       .type = F::integer,
       .description = "data-parallel ranks the serve ran with",
       .minimum = 1},
  };
}

// What the point's serve served and its rates.
std::vector<ReportField> sweep_throughput_columns() {
  return {
      {.path = "requests", .type = F::integer, .description = "requests served", .minimum = 1},
      {.path = "output_tokens",
       .type = F::integer,
       .unit = "tokens",
       .description = "generated tokens summed over all requests",
       .minimum = 1},
      {.path = "duration_s",
       .type = F::number,
       .unit = "s",
       .description = "first arrival to last finish",
       .minimum = 0},
      {.path = "requests_per_s",
       .type = F::number,
       .unit = "requests/s",
       .description = "requests finished per second",
       .minimum = 0},
      {.path = "output_tokens_per_s",
       .type = F::number,
       .unit = "tokens/s",
       .description = "generated tokens per second, whole deployment",
       .minimum = 0},
      {.path = "output_tokens_per_s_per_chip",
       .type = F::number,
       .unit = "tokens/s",
       .description = "generated tokens per second divided by every chip",
       .minimum = 0},
      {.path = "output_tokens_per_s_per_user",
       .type = F::number,
       .unit = "tokens/s",
       .description = "mean decode speed one request sees after its first token",
       .minimum = 0},
  };
}

// The point's latency percentiles and goodput.
std::vector<ReportField> sweep_latency_columns() {
  return {
      {.path = "ttft_p50_ms",
       .type = F::number,
       .unit = "ms",
       .description = "median time to first token over requests",
       .minimum = 0},
      {.path = "ttft_p99_ms",
       .type = F::number,
       .unit = "ms",
       .description = "99th percentile time to first token over requests",
       .minimum = 0},
      {.path = "tpot_p50_ms",
       .type = F::number,
       .unit = "ms",
       .description = "median time per output token over requests with more than one",
       .minimum = 0},
      {.path = "tpot_p99_ms",
       .type = F::number,
       .unit = "ms",
       .description = "99th percentile time per output token over requests with more than one",
       .minimum = 0},
      {.path = "itl_p99_ms",
       .type = F::number,
       .unit = "ms",
       .description = "99th percentile gap between successive tokens over all requests",
       .minimum = 0},
      {.path = "e2e_p50_s",
       .type = F::number,
       .unit = "s",
       .description = "median end-to-end latency over requests",
       .minimum = 0},
      {.path = "e2el_p50_ms",
       .type = F::number,
       .unit = "ms",
       .description = "median end-to-end latency over requests, in ms",
       .minimum = 0},
      {.path = "goodput_requests_per_s",
       .type = F::number,
       .unit = "requests/s",
       .description = "requests meeting every SLO given, per second",
       .minimum = 0},
      {.path = "requests_met",
       .type = F::integer,
       .description = "requests meeting every SLO given (all when none is)",
       .minimum = 0},
  };
}

// How the point's engine ran: batch size, KV cache peak, preemptions and steps.
std::vector<ReportField> sweep_engine_columns() {
  return {
      {.path = "batch_mean",
       .type = F::number,
       .unit = "sequences",
       .description = "sequences per step, weighted by step time",
       .minimum = 0},
      {.path = "kv_peak",
       .type = F::number,
       .unit = "ratio",
       .description = "the highest share of KV cache blocks in use after any step",
       .minimum = 0},
      {.path = "preemptions",
       .type = F::integer,
       .description = "KV cache evictions summed over requests",
       .minimum = 0},
      {.path = "steps_taken", .type = F::integer, .description = "engine steps over every instance", .minimum = 0},
      {.path = "steps_simulated",
       .type = F::integer,
       .description = "distinct steps the point's serve simulated",
       .minimum = 0},
  };
}

// The point's energy per token and tokens per joule.
std::vector<ReportField> sweep_energy_columns() {
  return {
      {.path = "joules_per_token",
       .type = F::number,
       .unit = "J/token",
       .description = "energy per generated token over every chip; empty for a chip without an energy section",
       .minimum = 0,
       .nullable = true},
      {.path = "tokens_per_joule",
       .type = F::number,
       .unit = "tokens/J",
       .description = "generated tokens per joule; empty for a chip without an energy section",
       .minimum = 0,
       .nullable = true},
  };
}

// The columns of g5sim.serve_sweep()'s DataFrame, in the order python/g5sim/serving.py makes them.
std::vector<ReportField> sweep_frame_fields() {
  std::vector<ReportField> rows = sweep_point_columns();
  append(rows, sweep_throughput_columns());
  append(rows, sweep_latency_columns());
  append(rows, sweep_engine_columns());
  append(rows, sweep_energy_columns());
  return rows;
}

#pragma GCC diagnostic pop

}  // namespace

std::vector<ReportField> runtime_band_rows() { return band_rows_of_runtime(); }

const std::vector<Report>& serve_reports() {
  static const std::vector<Report> reports = {
      {.name = "serve",
       .format = ReportFormat::json,
       .command = "g5sim serve --json PATH",
       .schema_version = kServeSchemaVersion,
       .description = "one serve's summary: the deployment, disaggregation and MTP set-up, the engine's knobs, the "
                      "KV cache's sizing, latency distributions over requests (TTFT, TPOT, ITL, end-to-end), "
                      "throughput, goodput, energy, the error band, then each request's latencies and each step",
       .fields = serve_json_fields()},
      {.name = "serve_requests",
       .format = ReportFormat::csv,
       .command = "g5sim serve --csv PATH",
       .description = "one row per request in serve order: when it arrived, got its first token and finished, and "
                      "its latencies and token counts",
       .fields = request_csv_fields()},
      {.name = "serve_sweep",
       .format = ReportFormat::frame,
       .command = "g5sim.serve_sweep()",
       .description = "one row per point of the grid in point order: the point's number, its axis values (chip, "
                      "model, tp, ep, dp as the grid lists them; each swept serve knob adds its column after dp, in "
                      "serve_sweep.axes order), the served chip and model names, then figures of the point's serve "
                      "summary",
       .fields = sweep_frame_fields()},
  };
  return reports;
}

}  // namespace g5sim
