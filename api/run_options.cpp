// The run-option table (g5sim/run_options.hpp): one row per Request member, with everything a
// front end needs to take, check, document and echo it, and the rule for when it changes nothing.

#include "g5sim/run_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "api/result_state.hpp"
#include "hw/config_error.hpp"
#include "hw/number_text.hpp"
#include "models/model_spec.hpp"
#include "models/run_limits.hpp"
#include "models/weight_format.hpp"
#include "models/workload.hpp"

namespace g5sim {
namespace {

using Member = std::variant<std::string Request::*, std::optional<std::uint64_t> Request::*, std::uint64_t Request::*,
                            bool Request::*>;
/// Why the option changes nothing for this model and request ("" when it applies).
using Scope = std::string (*)(const Model&, const Request&);

/// The value a run resolved for the option (run_identity), for the rows that are columns.
using Resolved = std::string (*)(const Result&);

struct Row {
  RunOption option;
  Member member;
  Scope does_not_apply = nullptr;
  Resolved resolved = nullptr;
};

template <std::string Result::*field>
std::string word(const Result& r) {
  return r.*field;
}
template <std::uint64_t Result::*field>
std::string number(const Result& r) {
  return std::to_string(r.*field);
}
// The step's groups as --mix writes them (a uniform batch: one group).
std::string mix_of(const Result& r) { return mix_text(r.sequences); }

template <bool Result::*field>
std::string yes_no(const Result& r) {
  return r.*field ? "true" : "false";
}

std::string mla_only(const Model& model, const Request&) {
  if (model.attention() == "mla") return {};
  return fmt::format("{} has GQA attention: MLA modes apply to MLA models only", model.name());
}

std::string mla_prefill_only(const Model& model, const Request& request) {
  if (std::string why = mla_only(model, request); !why.empty()) return why;
  return request.phase == "decode" ? "it sets MLA prefill compute, and this is a decode step" : "";
}

bool mixed(const Request& request) { return !request.mix.empty() || !request.seqs.empty() || !request.groups.empty(); }

std::string uniform_only(const Model&, const Request& request) {
  if (!mixed(request)) return {};
  return fmt::format("the step's sequences are given by {}", !request.seqs.empty() ? "--seqs" : "--mix");
}

std::string mixed_only(const Model&, const Request& request) {
  return mixed(request) ? "" : "it classifies the groups of --mix and --seqs; --phase says what a uniform step is";
}

std::string with_prefill_only(const Model&, const Request& request) {
  if (!request.seqs.empty() || !request.groups.empty()) return {};
  if (!request.mix.empty()) {
    try {
      const auto groups = models::parse_mix(request.mix, request.decode_max_q);
      if (std::any_of(groups.begin(), groups.end(), [](const models::SequenceGroup& g) { return !g.decode; }))
        return {};
    } catch (const hw::ConfigError&) {
      return {};  // the run itself says what is wrong with the mix
    }
    return "every group of --mix is a decode: there is no prefill attention";
  }
  return request.phase == "decode" ? "a decode step has no prefill attention" : "";
}

std::string decode_history_only(const Model&, const Request& request) {
  if (request.phase != "prefill") return {};
  return "a prefill step reads no KV history (it has no kv_cache_read): the engine is decode's";
}

std::string decode_split_only(const Model&, const Request& request) {
  if (request.phase != "prefill") return {};
  return "it splits decode attention over the cores; prefill attention splits by query blocks";
}

std::string gqa_decode_only(const Model& model, const Request& request) {
  if (model.attention() == "mla") {
    return fmt::format(
        "{} has MLA attention: the decode reads its latent cache in place (concat models the "
        "static graphs of GQA/MHA models)",
        model.name());
  }
  return decode_history_only(model, request);
}

std::string step_only(const Model&, const Request& request) {
  return request.scope == "block" ? "an attention block has no output layer (--scope step has)" : "";
}

std::string whole_step_only(const Model&, const Request& request) {
  return request.scope == "block" ? "an attention block is one layer: no host launches between layers (--scope step)"
                                  : "";
}

std::string grouped_weights_only(const Model& model, const Request& request) {
  const std::string dtype = request.weight_dtype.empty() ? std::string(models::name_of(model.data().spec.weight_dtype))
                                                         : request.weight_dtype;
  if (dtype == "int8" || dtype == "int4") return {};
  return fmt::format("the weights are {}: scale groups apply to int8 and int4 weights", dtype);
}

std::string replayable(const Model&, const Request& request) {
  // One block has no layers; in prefill its chunk loops may still be (ops/loop_replay.hpp).
  return request.scope == "block" && request.phase != "prefill"
             ? "one decode attention block has no layers to replay and no prefill chunk loops"
             : "";
}

constexpr unsigned kAxis = kRun | kGridAxis;
constexpr unsigned kFixed = kRun | kGridFixed;
using T = OptionType;

// The table. Its order is the order of help texts and of simulate()'s keywords. Each row names
// only the fields it sets (designated initializers); the rest keep RunOption's defaults, which
// GCC's -Wextra would report as missing.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
// A uniform step's shape: its phase, batch, context and query length.
std::vector<Row> uniform_step_rows() {
  return {
      {{.name = "phase",
        .flag = "--phase",
        .type = T::text,
        .choices = "decode,prefill",
        .doc = "decode (q_len < ctx: the history comes from the KV cache) or prefill (q_len == ctx)",
        .takes = kAxis,
        .json_key = "phase"},
       &Request::phase,
       uniform_only,
       word<&Result::phase>},
      {{.name = "batch",
        .flag = "--batch",
        .type = T::count,
        .min = 1,
        .max = models::kMaxBatch,
        .optional = true,
        .default_doc = "one per DP rank",
        .unit = "sequences",
        .doc = "sequences per step over all chips",
        .takes = kAxis,
        .json_key = "batch"},
       &Request::batch,
       uniform_only,
       number<&Result::batch>},
      {{.name = "ctx",
        .flag = "--ctx",
        .type = T::count,
        .min = 1,
        .max = models::kMaxContext,
        .unit = "tokens",
        .doc = "context length kv_len: the tokens each sequence attends",
        .takes = kAxis,
        .json_key = "kv_len",
        .library_names = {"kv_len"}},
       &Request::ctx,
       uniform_only,
       number<&Result::kv_len>},
      {{.name = "q_len",
        .flag = "--q-len",
        .type = T::count,
        .min = 1,
        .max = models::kMaxContext,
        .optional = true,
        .default_doc = "1 in decode, ctx in prefill",
        .unit = "tokens",
        .doc = "query tokens per sequence",
        .takes = kAxis,
        .json_key = "q_len"},
       &Request::q_len,
       uniform_only,
       number<&Result::q_len>},
  };
}

// A mixed step's sequences, as groups (--mix) or from a file (--seqs), and how a group is classified.
std::vector<Row> mixed_step_rows() {
  return {
      {{.name = "mix",
        .flag = "--mix",
        .type = T::text,
        .optional = true,
        .default_doc = "one group: --batch sequences of --q-len tokens at --ctx",
        .unit = "groups",
        .doc = "the step's sequences as groups COUNTxQ_LEN@HISTORY,... (64x1@4096,1x2048@0: 64 decodes at 4096 "
               "beside a 2048-token prompt; HISTORY: tokens read from the KV cache); a grid takes mixes separated "
               "by ';'",
        .takes = kAxis | kValidation,
        .list_delimiter = ';'},
       &Request::mix,
       nullptr,
       mix_of},
      {{.name = "seqs",
        .flag = "--seqs",
        .type = T::path,
        .optional = true,
        .default_doc = "one group: --batch sequences of --q-len tokens at --ctx",
        .doc = "the step's sequences from a CSV file: header count,q_len,history, then a group per row",
        .takes = kFixed},
       &Request::seqs,
       nullptr,
       nullptr},
      {{.name = "decode_max_q",
        .flag = "--decode-max-q",
        .type = T::count,
        .min = 1,
        .max = models::kMaxContext,
        .unit = "tokens",
        .doc = "a --mix/--seqs group with history and at most this q_len runs the decode kernel (a decode or a "
               "speculative verify); a longer one is a prefill chunk",
        .takes = kFixed | kValidation | kServe},
       &Request::decode_max_q,
       mixed_only,
       nullptr},
  };
}

// The formats and modes: the KV cache's format, MLA's modes, prefill's mask, the weights' format.
std::vector<Row> format_rows() {
  return {
      {{.name = "kv_dtype",
        .flag = "--kv-dtype",
        .type = T::text,
        .choices = "bf16,fp8,fp8-flashmla,mxfp8,mxfp6,mxfp4,nvfp4",
        .doc = "KV cache format (mx*: a scale per 32 elements; nvfp4: per 16)",
        .takes = kAxis | kServe,
        .json_key = "kv_dtype",
        .library_names = {"kv_format"}},
       &Request::kv_dtype,
       nullptr,
       word<&Result::kv_dtype>},
      {{.name = "mla_mode",
        .flag = "--mla-mode",
        .type = T::text,
        .choices = "absorb,standard,expanded",
        .doc = "MLA decode mode and cache",
        .takes = kAxis | kValidation | kServe,
        .json_key = "mla_mode"},
       &Request::mla_mode,
       mla_only,
       word<&Result::mla_mode>},
      {{.name = "prefill_mla_mode",
        .flag = "--prefill-mla-mode",
        .type = T::text,
        .choices = "absorb,standard,expanded",
        .doc = "MLA prefill compute (expanded: MHA after the up-projection)",
        .takes = kFixed | kValidation | kServe,
        .json_key = "prefill_mla_mode"},
       &Request::prefill_mla_mode,
       mla_prefill_only,
       word<&Result::prefill_mla_mode>},
      {{.name = "prefill_attention",
        .flag = "--prefill-attention",
        .type = T::text,
        .optional = true,
        .choices = "causal,full",
        .default_doc = "the runtime's, else causal",
        .fallback = "causal",
        .doc = "prefill and chunk attention: causal (each query sees the keys up to itself) or full (every key, a "
               "padded static mask as Sophgo's compiled demos run)",
        .takes = kFixed | kValidation | kServe,
        .json_key = "prefill_attention"},
       &Request::prefill_attention,
       with_prefill_only,
       word<&Result::prefill_attention>},
      {{.name = "weight_dtype",
        .flag = "--weight-dtype",
        .type = T::text,
        .optional = true,
        .choices = "bf16,fp16,fp8,int8,int4,mxfp8,mxfp6,mxfp4,nvfp4",
        .default_doc = "the model config's quantization, else bf16",
        .doc = "projection weights (fp8: 128x128 block scales; int8/int4: group scales, --weight-group; mxfp8/6/4: "
               "an e8m0 scale per 32, nvfp4: an e4m3 scale per 16; microscaled weights run in their element type "
               "where the chip's cube has it, else dequantised to bf16)",
        .takes = kAxis | kServe,
        .json_key = "weight_dtype"},
       &Request::weight_dtype,
       nullptr,
       word<&Result::weight_dtype>},
      {{.name = "weight_group",
        .flag = "--weight-group",
        .type = T::count,
        .min = 0,
        .max = models::kMaxWeightGroup,
        .optional = true,
        .default_doc = "the model config's, else 128 (Sophgo's demos use 64)",
        .unit = "elements",
        .doc = "int8/int4 weights: k elements per fp16 scale (0: one per column)",
        .takes = kFixed | kServe,
        .json_key = "weight_group_size"},
       &Request::weight_group,
       grouped_weights_only},
      {{.name = "act_dtype",
        .flag = "--act-dtype",
        .type = T::text,
        .choices = "auto,bf16,fp8,mxfp8,mxfp6,mxfp4,nvfp4",
        .doc = "projection activations: auto (the weights decide: their element where the chip's cube has it, "
               "else bf16), bf16 (weight-only), or a format the activations are stored and multiplied in (fp8: "
               "a scale per 128; mx*: per 32; nvfp4: per 16; refused where the cube lacks it)",
        .takes = kAxis | kServe,
        .json_key = "act_dtype"},
       &Request::act_dtype,
       nullptr,
       word<&Result::act_dtype>},
  };
}

// The lowering switches: the KV history's engine, decode's split and append, the output layer's weights.
std::vector<Row> lowering_rows() {
  return {
      {{.name = "kv_read_engine",
        .flag = "--kv-read-engine",
        .type = T::text,
        .optional = true,
        .default_doc = "the chip's first kv_stream engine",
        .doc = "DMA engine of the decode history read (SG2262: gdma streams beside fa2, sdma loads it first)",
        .takes = kFixed | kValidation | kServe,
        .json_key = "kv_read_engine"},
       &Request::kv_read_engine,
       decode_history_only,
       word<&Result::kv_read_engine>},
      {{.name = "attn_split",
        .flag = "--attn-split",
        .type = T::text,
        .choices = "seq,head",
        .doc = "decode attention over cores: seq (flash decoding) or head",
        .takes = kFixed | kValidation | kServe,
        .json_key = "attn_split"},
       &Request::attn_split,
       decode_split_only,
       word<&Result::attn_split>},
      {{.name = "kv_append",
        .flag = "--kv-append",
        .type = T::text,
        .optional = true,
        .choices = "in-place,concat",
        .default_doc = "the runtime's, else in-place",
        .fallback = "in-place",
        .doc = "decode: the new K/V written into the cache the attention reads (in-place), or concat: a static "
               "graph's torch.cat(past, new) copies the history into a fresh tensor first (Sophgo's exported "
               "demos), reading it twice and writing it once",
        .takes = kFixed | kValidation | kServe,
        .json_key = "kv_append"},
       &Request::kv_append,
       gqa_decode_only,
       nullptr},
      {{.name = "lm_head_weights",
        .flag = "--lm-head-weights",
        .type = T::text,
        .optional = true,
        .choices = "bf16,projections",
        .default_doc = "the runtime's, else bf16",
        .fallback = "bf16",
        .doc = "the output layer's weights: bf16, or stored as the projections are (--weight-dtype; Sophgo's Qwen, "
               "GLM-4 and MiniCPM demos compile it so)",
        .takes = kFixed | kValidation | kServe,
        .json_key = "lm_head_weights"},
       &Request::lm_head_weights,
       step_only,
       nullptr},
  };
}

// What part of the model runs and how: a step or a block, its layers, micro-batches, host launches.
std::vector<Row> extent_rows() {
  return {
      {{.name = "scope",
        .flag = "--scope",
        .type = T::text,
        .choices = "step,block",
        .doc = "step (the whole decoder) or block (one attention block)",
        .takes = kFixed},
       &Request::scope,
       nullptr,
       word<&Result::scope>},
      {{.name = "layers",
        .flag = "--layers",
        .type = T::count,
        .min = 1,
        .max = models::kMaxLayers,
        .optional = true,
        .default_doc = "all",
        .unit = "layers",
        .doc = "step: simulate only the first N decoder layers",
        .takes = kFixed | kValidation | kServe},
       &Request::layers,
       nullptr,
       number<&Result::layers>},
      {{.name = "micro_batches",
        .flag = "--micro-batches",
        .type = T::count,
        .min = 1,
        .max = models::kMaxMicroBatches,
        .doc = "step: the chip's sequences in N groups whose attention overlaps the others' MoE all-to-alls",
        .takes = kFixed | kValidation | kServe},
       &Request::micro_batches,
       nullptr,
       number<&Result::micro_batches>},
      {{.name = "host_launch_ns",
        .flag = "--host-launch-ns",
        .type = T::count,
        .min = 0,
        .max = models::kMaxHostLaunchNs,
        .optional = true,
        .default_doc = "the runtime's, else 0",
        .fallback = "0",
        .unit = "ns",
        .doc = "step: the host launches each decoder layer as a program of its own, the chip idle meanwhile "
               "(Sophgo's demos: one network per block; 0: the step is one program)",
        .takes = kFixed | kValidation | kServe},
       &Request::host_launch_ns,
       whole_step_only,
       number<&Result::host_launch_ns>},
      {{.name = "runtime",
        .flag = "--runtime",
        .type = T::text,
        .optional = true,
        .default_doc = "none: the chip alone",
        .doc = "the software that runs the model (configs/runtimes/: vllm, sglang, trtllm, sophgo-demo-cpp, ...; "
               "or a YAML path): its kernel, collective, layer and step costs added to the chip's time and "
               "reported apart, its graph choices for the options not given",
        .takes = kFixed | kValidation | kServe},
       &Request::runtime},
  };
}

// The deployment: the cores used, the sharding over chips and the experts' routing.
std::vector<Row> deployment_rows() {
  return {
      {{.name = "cores",
        .flag = "--cores",
        .type = T::count,
        .min = 1,
        .max = models::kMaxCores,
        .optional = true,
        .default_doc = "all",
        .unit = "cores",
        .doc = "run on the chip's first N cores",
        .takes = kAxis | kServe},
       &Request::cores,
       nullptr,
       number<&Result::cores>},
      {{.name = "tp",
        .flag = "--tp",
        .type = T::count,
        .min = 1,
        .max = models::kMaxDegree,
        .optional = true,
        .default_doc = "none of tp, ep, dp: the smallest sharding that fits DDR",
        .unit = "chips",
        .doc = "tensor parallel chips (heads, FFN width, vocabulary)",
        .takes = kAxis | kServe},
       &Request::tp,
       nullptr,
       number<&Result::tp>},
      {{.name = "ep",
        .flag = "--ep",
        .type = T::count,
        .min = 1,
        .max = models::kMaxDegree,
        .optional = true,
        .default_doc = "1 when tp or dp is given",
        .unit = "chips",
        .doc = "expert parallel chips (routed experts)",
        .takes = kAxis | kServe},
       &Request::ep,
       nullptr,
       number<&Result::ep>},
      {{.name = "dp",
        .flag = "--dp",
        .type = T::count,
        .min = 1,
        .max = models::kMaxDegree,
        .optional = true,
        .default_doc = "1 when tp or ep is given",
        .unit = "chips",
        .doc = "data parallel chips (batch)",
        .takes = kAxis | kServe},
       &Request::dp,
       nullptr,
       number<&Result::dp>},
      {{.name = "expert_load",
        .flag = "--expert-load",
        .type = T::path,
        .optional = true,
        .default_doc = "uniform routing",
        .doc = "step: measured routing, a CSV of layer,expert,tokens",
        .takes = kFixed | kServe},
       &Request::expert_load},
  };
}

// The simulation's checks and switches: DDR capacity, the command limit, weight prefetch, replay.
std::vector<Row> control_rows() {
  return {
      {{.name = "strict_capacity",
        .flag = "--strict-capacity",
        .type = T::flag,
        .doc = "fail when a chip's weights and KV cache exceed its DDR (else a warning)",
        .takes = kFixed},
       &Request::strict_capacity},
      {{.name = "max_commands",
        .flag = "--max-commands",
        .type = T::count,
        .min = 1,
        .max = models::kMaxCommandsCeiling,
        .unit = "commands",
        .doc = "refuse a run estimated to need more commands (about 12 B of memory each)",
        .takes = kFixed | kServe,
        .same_results = true},
       &Request::max_commands},
      {{.name = "prefetch",
        .flag = "--no-prefetch",
        .type = T::flag,
        .doc = "cross-op weight prefetch (--no-prefetch: every load waits for the op's producers)",
        .takes = kFixed | kServe,
        .json_key = "prefetch_weights"},
       &Request::prefetch,
       nullptr,
       yes_no<&Result::prefetch>},
      {{.name = "replay",
        .flag = "--no-replay",
        .type = T::flag,
        .doc = "exact replay of identical layers and of fa2's repeated prefill chunk iterations (--no-replay: "
               "simulate every command; same results, slower)",
        .takes = kFixed | kServe,
        .same_results = true},
       &Request::replay,
       replayable,
       yes_no<&Result::replay>},
  };
}

// The whole table: the groups above, in order.
const std::vector<Row>& rows() {
  static const std::vector<Row> table = [] {
    std::vector<Row> all;
    for (const std::vector<Row>& group : {uniform_step_rows(), mixed_step_rows(), format_rows(), lowering_rows(),
                                          extent_rows(), deployment_rows(), control_rows()}) {
      all.insert(all.end(), group.begin(), group.end());
    }
    return all;
  }();
  return table;
}
#pragma GCC diagnostic pop

const Row& row_of(const RunOption& option) {
  for (const Row& r : rows()) {
    if (r.option.name == option.name) return r;
  }
  throw std::logic_error("run option '" + option.name + "' is not in the table");
}

[[noreturn]] void fail(const RunOption& option, const std::string& message) {
  throw ConfigError(message, "", option.name, 0, 0);
}

void check_count(const RunOption& option, std::uint64_t v) {
  if (v < option.min || v > option.max) fail(option, fmt::format("{} is outside {}..{}", v, option.min, option.max));
}

}  // namespace

const std::vector<RunOption>& run_options() {
  static const std::vector<RunOption> options = [] {
    std::vector<RunOption> out;
    const Request defaults;
    for (const Row& r : rows()) {
      RunOption& o = out.emplace_back(r.option);
      o.scoped = r.does_not_apply != nullptr;
      o.column = r.resolved != nullptr;
      // An option whose default is a plain value says it; the others say what "not given" means.
      if (o.default_doc.empty()) o.default_doc = option_text(get_option(defaults, o));
    }
    return out;
  }();
  return options;
}

const RunOption* find_run_option(const std::string& name) {
  for (const RunOption& o : run_options()) {
    if (o.name == name || std::find(o.library_names.begin(), o.library_names.end(), name) != o.library_names.end()) {
      return &o;
    }
  }
  return nullptr;
}

OptionValue get_option(const Request& request, const RunOption& option) {
  return std::visit(
      [&](auto member) -> OptionValue {
        const auto& v = request.*member;
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::optional<std::uint64_t>>) {
          return v ? OptionValue{*v} : OptionValue{};
        } else if constexpr (std::is_same_v<V, std::string>) {
          return v.empty() && option.optional ? OptionValue{} : OptionValue{v};
        } else {
          return OptionValue{v};
        }
      },
      row_of(option).member);
}

void set_option(Request& request, const RunOption& option, const OptionValue& value) {
  const bool nothing = std::holds_alternative<std::monostate>(value);
  if (nothing && !option.optional) fail(option, "required: it has no 'not given' value");
  std::visit(
      [&](auto member) {
        auto& v = request.*member;
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::optional<std::uint64_t>> || std::is_same_v<V, std::uint64_t>) {
          if (nothing) {
            if constexpr (std::is_same_v<V, std::optional<std::uint64_t>>) v.reset();
            return;
          }
          const auto* n = std::get_if<std::uint64_t>(&value);
          if (n == nullptr) fail(option, "expected a whole number");
          check_count(option, *n);
          v = *n;
        } else if constexpr (std::is_same_v<V, std::string>) {
          if (nothing) {
            v.clear();
            return;
          }
          const auto* s = std::get_if<std::string>(&value);
          if (s == nullptr) fail(option, option.type == OptionType::path ? "expected a path" : "expected a string");
          if (s->empty() && option.type == OptionType::path) fail(option, "an empty path names no file");
          if (s->empty() && !option.optional) fail(option, "expected a value, got an empty string");
          v = *s;
        } else {
          const auto* b = std::get_if<bool>(&value);
          if (b == nullptr) fail(option, "expected true or false");
          v = *b;
        }
      },
      row_of(option).member);
}

void set_option_text(Request& request, const RunOption& option, const std::string& text) {
  switch (option.type) {
    case OptionType::count: {
      const std::optional<std::uint64_t> v = hw::read_whole_number(text);
      if (!v || *v < option.min || *v > option.max) {
        fail(option, hw::whole_number_expected(text, option.min, option.max));
      }
      set_option(request, option, *v);
      return;
    }
    case OptionType::flag:
      if (text != "true" && text != "false") fail(option, fmt::format("expected true or false, got '{}'", text));
      set_option(request, option, text == "true");
      return;
    case OptionType::text:
    case OptionType::path: set_option(request, option, text); return;
  }
}

std::string option_text(const OptionValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>) {
          return "";
        } else if constexpr (std::is_same_v<V, std::uint64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<V, bool>) {
          return v ? "true" : "false";
        } else {
          return v;
        }
      },
      value);
}

std::string why_option_does_not_apply(const std::string& option, const Model& model, const Request& request) {
  for (const Row& r : rows()) {
    if (r.option.name == option) return r.does_not_apply ? r.does_not_apply(model, request) : std::string();
  }
  return {};
}

std::string flag_of(const std::string& field) {
  if (field == "sharding") return "--tp/--ep/--dp";
  const RunOption* o = find_run_option(field);
  return o ? o->flag : field;
}

const RunLimits& run_limits() {
  static const RunLimits limits{models::kMaxGridPoints, models::kMaxContextList,    models::kMaxComparedWorkloads,
                                models::kMaxJobs,       models::kMaxChips,          models::kMaxBatch,
                                models::kMaxContext,    models::kMaxHeads,          models::kMaxHeadDim,
                                models::kMaxCores,      models::kMaxCommandsCeiling};
  return limits;
}

std::vector<IdentityField> run_identity(const Result& result) {
  std::vector<IdentityField> out{{"chip", result.chip, true}, {"model", result.model, true}};
  for (const Row& r : rows()) {
    if (r.resolved) {
      const bool word = r.option.type == OptionType::text || r.option.type == OptionType::path;
      out.push_back({r.option.name, r.resolved(result), word});
    }
  }
  out.push_back({"chips", std::to_string(result.chips), false});
  for (const auto& [name, value] : {std::pair{"chip_source", &result.chip_source},
                                    {"chip_sha256", &result.chip_sha256},
                                    {"model_source", &result.model_source},
                                    {"model_sha256", &result.model_sha256}}) {
    out.push_back({name, *value, true});
  }
  return out;
}

}  // namespace g5sim
