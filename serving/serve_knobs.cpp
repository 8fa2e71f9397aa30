// The serve table (g5sim/knobs.hpp): one row per knob of a serve, its load, engine, step cache,
// SLOs, disaggregation and MTP, in documentation order. Ranges are the engine's and the load's
// limits (g5sim/serve.hpp); a text knob's check is the parser that reads it where it acts.

#include <limits>

#include "g5sim/knobs.hpp"
#include "g5sim/run_options.hpp"
#include "g5sim/serve.hpp"
#include "hw/config_error.hpp"
#include "models/run_limits.hpp"
#include "serving/serve.hpp"

namespace g5sim {
namespace {

void check_length(const std::string& text) { serving::check_length_text(text); }
void check_step_cache(const std::string& text) { serving::parse_step_cache(text); }
void check_disagg(const std::string& text) { serving::parse_disagg_or_none(text); }
void check_accept(const std::string& text) { serving::parse_accept(text); }
// A role's chip names a shipped chip or a config file (read when the serve runs); empty, the
// serve's chip (as a search point's knobs write it when not given).
void check_role_chip(const std::string& field, const std::string& text) {
  if (text.empty()) return;
  try {
    chip_path(text);
  } catch (const ConfigError& e) {
    throw hw::InputError(field, e.what());
  }
}
void check_prefill_chip(const std::string& text) { check_role_chip("prefill_chip", text); }
void check_decode_chip(const std::string& text) { check_role_chip("decode_chip", text); }
void check_ffn_chip(const std::string& text) { check_role_chip("ffn_chip", text); }
void check_afd(const std::string& text) { serving::parse_afd_or_none(text); }
void check_kv_tiers(const std::string& text) {
  if (text == "none") return;
  try {
    kv_tiers_path(text);
  } catch (const ConfigError& e) {
    throw hw::InputError("kv_tiers", e.what());
  }
}

// chunk 0 defers to the step's token budget.
KnobValue budget_chunk(const Settings& s) {
  return s.count("chunk") == 0 ? s.value("max_batched_tokens") : s.value("chunk");
}

constexpr unsigned kAnyServe = kServeKnob | kServeItem | kSearchKnob;
constexpr double kUnbounded = std::numeric_limits<double>::infinity();
using T = KnobType;

// Each row names only the fields it sets (designated initializers); the rest keep Knob's defaults,
// which GCC's -Wextra would report as missing.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

// A search list of one of the step's run options: its type, range, choices and help are the
// run-option table's; a format's column is shown only when the search varies it.
Knob run_option_list(const std::string& name, const std::string& label, int width) {
  const RunOption* o = find_run_option(name);
  const bool text = o->type == g5sim::OptionType::text;
  Knob k{.name = name,
         .flag = o->flag,
         .type = text ? T::text : T::count,
         .min = o->min,
         .max = o->max,
         .optional = o->optional,
         .choices = o->choices,
         .default_text = text ? option_text(get_option(Request{}, *o)) : "1",
         .default_doc = o->default_doc,
         .doc = o->doc,
         .group = "run",
         .takes = kSearchList,
         .run_option = true,
         .label = label,
         .width = width,
         .quiet_at_default = text};
  return k;
}

// A role's own tp, ep or dp (--decode-ep 32): that role's instances sharded so, the other role's
// as --tp/--ep/--dp (or the smallest that holds the load) shard it.
Knob role_sharding_row(const std::string& role, const std::string& dim, const std::string& what) {
  Knob k{.name = role + "_" + dim,
         .flag = "--" + role + "-" + dim,
         .type = T::count,
         .min = 1,
         .max = models::kMaxDegree,
         .optional = true,
         .default_doc = "--" + dim + " (else the smallest sharding of the role's chip that holds the load)",
         .unit = "chips",
         .doc = "with --disagg: each " + role + " instance's " + what + " (its other two from --tp/--ep/--dp)",
         .group = "disagg",
         .takes = kServeKnob | kServeItem};
  return k;
}

std::vector<Knob> load_rows() {
  return {
      {.name = "trace",
       .flag = "--trace",
       .type = T::path,
       .optional = true,
       .doc = "requests: a CSV (arrival_s,input_tokens,output_tokens[,id]) or JSON-lines (.jsonl) file",
       .group = "load",
       .takes = kServeKnob | kSearchKnob},
      {.name = "rate",
       .flag = "--rate",
       .type = T::decimal,
       .low = 0,
       .high = kMaxRate,
       .low_open = true,
       .optional = true,
       .unit = "requests/s",
       .doc = "requests: an open loop of Poisson arrivals at R requests/s",
       .group = "load",
       .takes = kAnyServe | kSweepAxis},
      {.name = "concurrency",
       .flag = "--concurrency",
       .type = T::count,
       .min = 0,
       .max = kMaxConcurrency,
       .default_text = "0",
       .default_doc = "0: none (a rate or a trace)",
       .unit = "clients",
       .doc = "requests: a closed loop of N clients, each sending on its last reply",
       .group = "load",
       .takes = kAnyServe | kSweepAxis,
       .engine_echo = 6},
      {.name = "requests",
       .flag = "--requests",
       .keyword = "num_requests",
       .type = T::count,
       .min = 1,
       .max = kMaxServeRequests,
       .default_text = "100",
       .doc = "synthetic load: how many requests",
       .group = "load",
       .takes = kAnyServe},
      {.name = "input_len",
       .flag = "--input-len",
       .type = T::text,
       .optional = true,
       .unit = "tokens",
       .doc = "synthetic load: prompt tokens, N, a uniform range LO:HI, or a histogram file (CSV low,high,weight)",
       .group = "load",
       .takes = kAnyServe,
       .pair = true,
       .check = check_length},
      {.name = "output_len",
       .flag = "--output-len",
       .type = T::text,
       .optional = true,
       .unit = "tokens",
       .doc = "synthetic load: output tokens, N, a uniform range LO:HI, or a histogram file (CSV low,high,weight)",
       .group = "load",
       .takes = kAnyServe,
       .pair = true,
       .check = check_length},
      {.name = "seed",
       .flag = "--seed",
       .type = T::count,
       .min = 0,
       .max = std::numeric_limits<std::uint64_t>::max(),
       .default_text = "0",
       .doc = "synthetic load: the generator's seed",
       .group = "load",
       .takes = kAnyServe},
  };
}

// A synthetic load of conversations (serving/request_load.hpp, SyntheticLoad).
std::vector<Knob> conversation_rows() {
  return {
      {.name = "turns",
       .flag = "--turns",
       .type = T::count,
       .min = 1,
       .max = kMaxServeRequests,
       .default_text = "1",
       .doc = "synthetic load: turns of each conversation; a turn's prompt is the conversation so far and its own "
              "input_len new tokens (with a rate: conversations per second)",
       .group = "load",
       .takes = kAnyServe | kSweepAxis},
      {.name = "think_s",
       .flag = "--think-s",
       .type = T::decimal,
       .low = 0,
       .high = kMaxArrivalSeconds,
       .default_text = "0",
       .unit = "s",
       .doc = "synthetic load: a user's pause between a reply's last token and the conversation's next turn",
       .group = "load",
       .takes = kAnyServe},
      {.name = "system_prompt",
       .flag = "--system-prompt",
       .type = T::count,
       .min = 0,
       .max = models::kMaxContext,
       .default_text = "0",
       .unit = "tokens",
       .doc = "synthetic load: tokens every conversation (every request, with one turn) starts with, the same for all",
       .group = "load",
       .takes = kAnyServe | kSweepAxis},
  };
}

std::vector<Knob> engine_rows() {
  std::vector<Knob> rows{
      {.name = "schedule",
       .flag = "--schedule",
       .type = T::text,
       .choices = "mixed,prefill-first",
       .default_text = "mixed",
       .doc = "how a step is formed: mixed (vLLM v1: decodes and prompt chunks in one step) or prefill-first "
              "(SGLang's default: a step of prompts whenever one can run, else a step of decodes)",
       .group = "engine",
       .takes = kAnyServe,
       .engine_echo = 1},
      {.name = "max_seqs",
       .flag = "--max-seqs",
       .type = T::count,
       .min = 1,
       .max = kMaxServeSeqs,
       .default_text = "256",
       .unit = "sequences",
       .doc = "sequences a step runs at most (vLLM's max_num_seqs)",
       .group = "engine",
       .takes = kAnyServe | kSearchList | kSweepAxis,
       .engine_echo = 2,
       .engine_line = true,
       .width = 8},
      {.name = "max_batched_tokens",
       .flag = "--max-batched-tokens",
       .type = T::count,
       .min = 1,
       .max = kMaxBatchedTokens,
       .default_text = "8192",
       .unit = "tokens",
       .doc = "tokens a step computes at most (vLLM's max_num_batched_tokens)",
       .group = "engine",
       .takes = kAnyServe | kSearchList | kSweepAxis,
       .engine_echo = 3,
       .engine_line = true,
       .label = "mbt",
       .width = 6},
      {.name = "chunk",
       .flag = "--chunk",
       .type = T::count,
       .min = 0,
       .max = kMaxBatchedTokens,
       .default_text = "0",
       .default_doc = "0: the budget, max_batched_tokens",
       .unit = "tokens",
       .doc = "a prompt's tokens per step at most (chunked prefill)",
       .group = "engine",
       .takes = kAnyServe | kSearchList | kSweepAxis,
       .resolved = budget_chunk,
       .engine_echo = 4,
       .engine_line = true,
       .width = 6},
  };
  rows.push_back({.name = "prefix_caching",
                  .flag = "--prefix-caching",
                  .type = T::text,
                  .choices = "auto,on,off",
                  .default_text = "auto",
                  .default_doc = "auto: on, unless the model keeps sliding windows or recurrent states",
                  .doc = "reuse a prompt's cached leading blocks across requests (vLLM's automatic prefix caching, "
                         "LRU eviction; serving/prefix_cache.hpp)",
                  .group = "engine",
                  .takes = kAnyServe | kSweepAxis});
  rows.push_back({.name = "kv_tiers",
                  .flag = "--kv-tiers",
                  .type = T::text,
                  .default_text = "none",
                  .default_doc = "none: what the prefix cache evicts is gone",
                  .doc = "memory below each instance's chips the prefix cache spills into and reloads from: a "
                         "shipped host (configs/hosts/, g5sim list) or a YAML file of tiers with capacity, bandwidth "
                         "and latency",
                  .group = "engine",
                  .takes = kAnyServe | kSweepAxis,
                  .check = check_kv_tiers});
  rows.push_back(run_option_list("micro_batches", "mb", 3));
  rows.push_back(run_option_list("weight_dtype", "weights", 7));
  rows.push_back(run_option_list("act_dtype", "acts", 5));
  rows.push_back(run_option_list("kv_dtype", "kv", 12));
  return rows;
}

std::vector<Knob> cache_rows() {
  return {
      {.name = "block_tokens",
       .flag = "--block-tokens",
       .type = T::count,
       .min = 1,
       .max = kMaxBlockTokens,
       .default_text = "16",
       .unit = "tokens",
       .doc = "tokens per KV cache block (paged attention)",
       .group = "engine",
       .takes = kAnyServe,
       .engine_echo = 5},
      {.name = "memory_utilization",
       .flag = "--memory-utilization",
       .type = T::decimal,
       .low = 0,
       .high = 1,
       .low_open = true,
       .default_text = "0.9",
       .doc = "share of the chip's DDR for weights and KV cache (vLLM's gpu_memory_utilization)",
       .group = "engine",
       .takes = kAnyServe},
      {.name = "kv_tokens",
       .flag = "--kv-tokens",
       .type = T::count,
       .min = 1,
       .max = std::uint64_t{1} << 50,
       .optional = true,
       .default_doc = "sized from the chip's DDR after the weights",
       .unit = "tokens",
       .doc = "the deployment's KV cache in tokens, instead of sizing it from DDR",
       .group = "engine",
       .takes = kServeKnob | kServeItem},
      {.name = "step_cache",
       .flag = "--step-cache",
       .type = T::text,
       .default_text = "auto:1",
       .default_doc = "auto:1 (search: bucket:10; a search serves many times)",
       .doc = "auto:PCT: exact up to 32 distinct steps, else steps interpolated from anchor steps on a grid refined "
              "until a sample of steps simulated exactly puts the mean step, mean TTFT and p50/p99 TPOT within PCT %; "
              "exact: every distinct step simulated; bucket:PCT: anchor steps on a fixed PCT % grid (its fullest DP "
              "rank's decodes, their mean history and its mean prompt chunk)",
       .group = "cache",
       .takes = kAnyServe,
       .check = check_step_cache},
      {.name = "step_cache_dir",
       .flag = "--step-cache-dir",
       .type = T::path,
       .optional = true,
       .default_doc = "$G5SIM_STEP_CACHE_DIR, else $XDG_CACHE_HOME/g5sim/steps, else ~/.cache/g5sim/steps; off: none",
       .doc = "a folder keeping every simulated step (keyed by the sha256 of the build, chip, model, deployment and "
              "options) for later serves and searches; the results are the same",
       .group = "cache",
       .takes = kServeKnob | kSearchKnob},
  };
}

// A role's own chip under disaggregation.
std::vector<Knob> role_rows() {
  return {
      {.name = "prefill_chip",
       .flag = "--prefill-chip",
       .type = T::text,
       .optional = true,
       .default_doc = "the serve's chip",
       .doc = "with --disagg: the prefill instances' own chip (a shipped chip's stem or a YAML path), each instance "
              "sharded for it",
       .group = "disagg",
       .takes = kAnyServe | kSearchList,
       .check = check_prefill_chip,
       .label = "prefill chip",
       .width = 12,
       .quiet_at_default = true},
      {.name = "decode_chip",
       .flag = "--decode-chip",
       .type = T::text,
       .optional = true,
       .default_doc = "the serve's chip",
       .doc = "with --disagg: the decode instances' own chip (a shipped chip's stem or a YAML path); the KV cache "
              "crosses over the slower side's link",
       .group = "disagg",
       .takes = kAnyServe | kSearchList,
       .check = check_decode_chip,
       .label = "decode chip",
       .width = 12,
       .quiet_at_default = true},
      role_sharding_row("prefill", "tp", "tensor parallel chips"),
      role_sharding_row("prefill", "ep", "expert parallel chips"),
      role_sharding_row("prefill", "dp", "data parallel chips"),
      role_sharding_row("decode", "tp", "tensor parallel chips"),
      role_sharding_row("decode", "ep", "expert parallel chips"),
      role_sharding_row("decode", "dp", "data parallel chips"),
      {.name = "afd",
       .flag = "--afd",
       .type = T::text,
       .default_text = "none",
       .doc = "A:F attention-FFN disaggregation: each instance's attention (and KV cache) on A chips, its FFN on F "
              "chips, activations crossing every layer, --micro-batches pipelining them (none: every chip runs "
              "both)",
       .group = "afd",
       .takes = kAnyServe | kSearchList,
       .pair = true,
       .check = check_afd,
       .width = 6,
       .quiet_at_default = true},
      {.name = "ffn_chip",
       .flag = "--ffn-chip",
       .type = T::text,
       .optional = true,
       .default_doc = "the serve's chip",
       .doc = "with --afd: the FFN chips' config (a shipped chip's stem or a YAML path)",
       .group = "afd",
       .takes = kAnyServe | kSearchList,
       .check = check_ffn_chip,
       .label = "ffn chip",
       .width = 12,
       .quiet_at_default = true},
  };
}

std::vector<Knob> slo_and_mode_rows() {
  return {
      {.name = "slo_ttft_ms",
       .flag = "--slo-ttft-ms",
       .type = T::decimal,
       .low = 0,
       .high = kUnbounded,
       .low_open = true,
       .optional = true,
       .unit = "ms",
       .doc = "the TTFT SLO: goodput counts requests whose TTFT is at most this (search: a point meets it at "
              "--slo-stat)",
       .group = "slo",
       .takes = kServeKnob | kSearchKnob | kSensitivityKnob | kSolveKnob},
      {.name = "slo_tpot_ms",
       .flag = "--slo-tpot-ms",
       .type = T::decimal,
       .low = 0,
       .high = kUnbounded,
       .low_open = true,
       .optional = true,
       .unit = "ms",
       .doc = "the TPOT SLO: goodput counts requests whose TPOT is at most this (search: a point meets it at "
              "--slo-stat)",
       .group = "slo",
       .takes = kServeKnob | kSearchKnob | kSensitivityKnob | kSolveKnob},
      {.name = "disagg",
       .flag = "--disagg",
       .type = T::text,
       .default_text = "none",
       .doc = "P:D prefill and decode instances of the deployment each; prompts' KV caches move between them "
              "(none: one instance doing both)",
       .group = "disagg",
       .takes = kAnyServe | kSearchList,
       .pair = true,
       .check = check_disagg,
       .width = 6},
      {.name = "mtp",
       .flag = "--mtp",
       .type = T::count,
       .min = 0,
       .max = kMaxMtpDrafts,
       .default_text = "0",
       .doc = "MTP / speculative decoding: drafts each decode verifies a step (0: none); above 0 needs --accept",
       .group = "mtp",
       .takes = kAnyServe | kSearchList,
       .width = 3},
      {.name = "accept",
       .flag = "--accept",
       .type = T::text,
       .optional = true,
       .doc = "with --mtp: each draft's acceptance rate, one or one per draft (0.8 or 0.9,0.8)",
       .group = "mtp",
       .takes = kAnyServe,
       .check = check_accept},
      {.name = "accept_draw",
       .flag = "--accept-draw",
       .type = T::count,
       .min = 0,
       .max = std::numeric_limits<std::uint64_t>::max(),
       .optional = true,
       .default_doc = "the expected tokens, no randomness",
       .doc = "with --mtp: draw acceptances with this seed",
       .group = "mtp",
       .takes = kServeKnob | kServeItem},
      {.name = "jobs",
       .flag = "--jobs",
       .type = T::count,
       .min = 1,
       .max = run_limits().max_jobs,
       .optional = true,
       .default_doc = "the machine's cores; the results are the same",
       .doc = "steps simulated at once, on as many threads: a grid's new anchor steps, an exact serve's next steps "
              "ahead of it",
       .group = "cache",
       .takes = kServeKnob},
  };
}
#pragma GCC diagnostic pop

}  // namespace

const std::vector<Knob>& serve_knobs() {
  static const std::vector<Knob> table = [] {
    std::vector<Knob> out;
    for (auto&& part :
         {load_rows(), conversation_rows(), engine_rows(), cache_rows(), slo_and_mode_rows(), role_rows()}) {
      out.insert(out.end(), part.begin(), part.end());
    }
    return out;
  }();
  return table;
}

}  // namespace g5sim
