// The public API (g5sim/g5sim.hpp) over the layers below: the only place where a request becomes a
// deployment (sharding, batch, capacity) and where internal errors become g5sim::ConfigError.

#include "g5sim/g5sim.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "api/op_run.hpp"
#include "api/public_errors.hpp"
#include "api/report.hpp"
#include "api/result_state.hpp"
#include "api/runtime_charge.hpp"
#include "api/simulation.hpp"
#include "api/trace_writer.hpp"
#include "g5sim/run_options.hpp"
#include "g5sim/runtime.hpp"
#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"
#include "models/expert_routing.hpp"
#include "models/kv_cache.hpp"
#include "models/memory_footprint.hpp"
#include "sim/cancellation.hpp"
#include "sim/progress.hpp"

namespace g5sim {
namespace {

using api::public_errors;

// "attention" and "ffn" are a step's sides (models::StepPart), which api/afd_step.cpp simulates
// apart; the run-option table does not offer them (a front end refuses them), and a run of one
// reports itself as a step.
api::Scope parse_scope(const std::string& text) {
  if (text == "block") return api::Scope::block;
  if (text == "step" || text == "attention" || text == "ffn") return api::Scope::step;
  throw hw::InputError("scope", fmt::format("expected block or step, got '{}'", text));
}

models::StepPart step_part(const std::string& scope) {
  return scope == "attention" ? models::StepPart::attention
         : scope == "ffn"     ? models::StepPart::ffn
                              : models::StepPart::whole;
}

ops::AttentionSplit parse_split(const std::string& text) {
  if (text == "seq") return ops::AttentionSplit::seq;
  if (text == "head") return ops::AttentionSplit::head;
  throw hw::InputError("attn_split", fmt::format("expected seq or head, got '{}'", text));
}

// A step's groups given as values, classified as a mix's (models::parse_mix) are.
std::vector<models::SequenceGroup> groups_of(const std::vector<SequenceRecord>& records, std::uint64_t decode_max_q) {
  if (records.size() > models::kMaxSequenceGroups) {
    throw hw::InputError("mix", fmt::format("more than {} groups", models::kMaxSequenceGroups));
  }
  std::vector<models::SequenceGroup> groups;
  for (const SequenceRecord& g : records) {
    groups.push_back(models::classify_group(g.count, g.q_len, g.history, decode_max_q));
  }
  return groups;
}

models::Workload workload_of(const Request& r, const models::ModelSpec& model, std::uint64_t batch) {
  if ((!r.mix.empty()) + (!r.seqs.empty()) + (!r.groups.empty()) > 1) {
    throw hw::InputError("mix", "give the step's sequences once: --mix or --seqs, not both");
  }
  if (r.decode_max_q == 0 || r.decode_max_q > models::kMaxContext) {
    throw hw::InputError("decode_max_q",
                         fmt::format("{} is outside 1..{} tokens", r.decode_max_q, models::kMaxContext));
  }
  const models::KvFormat format = models::parse_kv_format(r.kv_dtype);
  models::Workload w =
      !r.groups.empty() ? models::make_mixed_workload(groups_of(r.groups, r.decode_max_q), format, "mix")
      : !r.mix.empty()  ? models::make_mixed_workload(models::parse_mix(r.mix, r.decode_max_q), format, "mix")
      : !r.seqs.empty()
          ? models::make_mixed_workload(models::read_sequence_file(r.seqs, r.decode_max_q), format, "seqs")
          : models::make_workload(models::parse_phase(r.phase), batch, r.ctx, r.q_len, format);
  // simulate() has filled these from the runtime or the defaults (resolved_with_runtime).
  w.prefill_attention = models::parse_prefill_attention(r.prefill_attention);
  w.kv_append = models::parse_kv_append(r.kv_append);
  w.lm_head_weights = models::parse_lm_head_weights(r.lm_head_weights);
  w.mla_mode = models::parse_mla_mode(r.mla_mode, "mla_mode");
  w.prefill_mla_mode = models::parse_mla_mode(r.prefill_mla_mode, "prefill_mla_mode");
  w.weight_dtype = r.weight_dtype.empty() ? model.weight_dtype : models::parse_weight_dtype(r.weight_dtype);
  w.weight_group = r.weight_group.value_or(model.weight_group);
  w.act_dtype = models::parse_act_dtype(r.act_dtype);
  models::check_act_dtype(w.weight_dtype, w.act_dtype);
  if (w.weight_group > models::kMaxWeightGroup) {
    throw hw::InputError("weight_group", fmt::format("expected 0 (one scale per column) .. {}, got {}",
                                                     models::kMaxWeightGroup, w.weight_group));
  }
  return w;
}

// The sharding and the global step: as given (missing factors 1), or, when none of tp, ep, dp is
// given, the smallest that fits the chip's DDR. Without a batch (or a mix), one sequence per DP rank.
struct ChosenDeployment {
  models::Parallelism parallelism;
  bool automatic = false;
  models::Workload workload;
};
ChosenDeployment choose_deployment(const hw::Chip& chip, const models::ModelSpec& model, const Request& r) {
  if (!r.tp && !r.ep && !r.dp) {
    const bool batch_given =
        r.batch.has_value() || !r.mix.empty() || !r.seqs.empty() || !r.groups.empty();  // a mix gives its own
    const auto chosen =
        models::auto_sharding(model, workload_of(r, model, r.batch.value_or(1)), batch_given, chip.ddr_capacity_bytes);
    return {chosen.parallelism, true, workload_of(r, model, chosen.batch)};
  }
  const models::Parallelism p{r.tp.value_or(1), r.ep.value_or(1), r.dp.value_or(1)};
  return {p, false, workload_of(r, model, r.batch.value_or(p.dp))};
}

void deploy(const hw::Chip& chip, const models::ModelSpec& model, const Request& r, Result::State& s,
            std::vector<std::string>& warnings) {
  ChosenDeployment chosen = choose_deployment(chip, model, r);
  s.parallelism = chosen.parallelism;
  s.automatic_sharding = chosen.automatic;
  s.workload = std::move(chosen.workload);
  models::validate_parallelism(s.parallelism, model, s.workload);
  s.footprint = models::chip_footprint(model, s.workload, s.parallelism, s.part);
  // A block is a piece of a chip's share: the deployment's capacity is checked for whole steps.
  if (s.scope == api::Scope::step && s.footprint.total() > chip.ddr_capacity_bytes) {
    auto gib = [](std::uint64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1u << 30)); };
    const std::string message = fmt::format(
        "{} needs {} a chip (weights {}, KV cache {}; {} bytes) with tp {} ep {} dp {}, but {} has {} "
        "(ddr.capacity_bytes {}): it does not fit",
        model.name, gib(s.footprint.total()), gib(s.footprint.weight_bytes), gib(s.footprint.kv_cache_bytes),
        s.footprint.total(), s.parallelism.tp, s.parallelism.ep, s.parallelism.dp, chip.name,
        gib(chip.ddr_capacity_bytes), chip.ddr_capacity_bytes);
    if (r.strict_capacity) throw hw::InputError("strict_capacity", message);
    warnings.push_back(message);
  }
}

OpRecord record_of(const ops::OpTiming& t) {
  OpRecord o;
  o.id = t.id;
  o.name = t.name;
  o.layer = t.layer;
  o.kind = std::string(ops::kind_name(t.kind));
  o.shape = t.shape;
  o.engines = t.engines;
  o.op_start_ps = t.start;
  o.op_end_ps = t.end;
  o.hbm_bytes = t.hbm_bytes;
  o.unique_bytes = t.unique_bytes;
  o.c2c_bytes = t.c2c_bytes;
  o.message_bytes = t.message_bytes;
  o.flops = t.flops;
  o.kv_bytes = t.kv_bytes;
  o.peak_lmem_bytes = t.peak_lmem_bytes;
  o.roofline_ns = t.roofline_ns;
  o.compute_ns = t.compute_ns;
  o.regime = std::string(ops::regime_name(t.regime));
  o.bound_by = t.bound_by;
  o.bound_share = t.bound_share;
  o.energy_j = t.energy_pj * 1e-12;
  o.idle_gap_ps = t.idle_gap;
  return o;
}

// The workload's formats and modes as a result echoes them.
void fill_formats(Result& r, const models::Workload& w) {
  r.prefill_attention = std::string(models::name_of(w.prefill_attention));
  r.kv_append = std::string(models::name_of(w.kv_append));
  r.lm_head_weights = std::string(models::name_of(w.lm_head_weights));
  r.kv_dtype = std::string(models::name_of(w.kv_format));
  r.mla_mode = std::string(models::name_of(w.mla_mode));
  r.prefill_mla_mode = std::string(models::name_of(w.prefill_mla_mode));
  r.weight_dtype = std::string(models::name_of(w.weight_dtype));
  r.weight_group = w.weight_group;
  r.act_dtype = std::string(models::name_of(w.act_dtype));
}

// The public fields of a result, from its state.
void fill(Result& r, const Result::State& s) {
  const hw::Chip& chip = s.chip.data().chip;
  const models::Workload& w = s.workload;
  const ops::Timeline& tl = s.timeline;
  r.chip = chip.name;
  r.model = s.model.data().spec.name;
  r.chip_source = source_label(chip.source);
  r.chip_sha256 = chip.source_sha256;
  r.model_source = source_label(s.model.data().spec.source);
  r.model_sha256 = s.model.data().spec.source_sha256;
  r.cores = chip.cores;
  r.prefetch = s.options.prefetch_weights;
  r.scope = s.scope == api::Scope::step ? "step" : "block";
  r.layers = s.layers;
  r.micro_batches = s.micro_batches;
  r.host_launch_ns = s.host_launch_ns;
  r.phase = api::phase_name(w);
  r.batch = w.sequences();
  r.q_len = w.max_q_len();
  r.kv_len = w.max_kv_len();
  const models::Workload chip_share = models::chip_workload(w, s.parallelism);
  for (const auto& [from, to] : {std::pair{&w, &r.sequences}, {&chip_share, &r.chip_sequences}}) {
    for (const models::SequenceGroup& g : from->groups) {
      to->push_back(SequenceRecord{g.count, g.q_len, g.history, g.decode ? "decode" : "prefill"});
    }
  }
  fill_formats(r, w);
  r.kv_read_engine = api::kv_read_engine_name(chip, s.options);
  r.attn_split = s.options.attn_split == ops::AttentionSplit::seq ? "seq" : "head";
  r.tp = s.parallelism.tp;
  r.ep = s.parallelism.ep;
  r.dp = s.parallelism.dp;
  r.chips = s.parallelism.chips();
  r.automatic_sharding = s.automatic_sharding;
  r.weight_bytes = s.footprint.weight_bytes;
  r.kv_cache_bytes = s.footprint.kv_cache_bytes;
  r.capacity_bytes = chip.ddr_capacity_bytes;
  r.total_ps = tl.total;
  r.chip_ps = tl.total;
  r.step_ps = tl.total;
  if (s.runtime) {
    r.runtime = s.runtime->name;
    r.runtime_version = s.runtime->version;
    r.runtime_source = s.runtime->source;
    r.runtime_sha256 = s.runtime->sha256;
    r.runtime_adds = s.runtime->adds;
    r.runtime_parts = s.runtime->parts;
    r.chip_ps = tl.total - s.runtime->parts.layer_launch_ps;
    r.step_ps = r.chip_ps + s.runtime->parts.total_ps();
  }
  {
    const api::RunBand band = api::run_band(s.description(), tl.total);
    r.has_band = band.low.has_value();
    r.band_low_ps = band.low.value_or(0);
    r.band_high_ps = band.high.value_or(0);
    r.band_coverage = band.coverage;
    r.band_basis = band.basis;
  }
  r.hbm_bytes = tl.hbm_bytes;
  r.c2c_bytes = tl.c2c_bytes;
  r.flops = tl.flops;
  r.tokens_per_s = api::tokens_per_s(w, r.step_ps);
  r.tokens_per_s_per_chip = api::tokens_per_s_per_chip(w, r.step_ps, s.parallelism);
  r.compute_ns = tl.compute_ns;
  r.memory_ns = tl.memory_ns;
  r.regime = std::string(ops::regime_name(tl.regime));
  r.bound_by = tl.bound_by;
  r.bound_share = tl.bound_share;
  r.idle_gap_ps = tl.idle_gap;
  r.idle_per_core_ps = tl.idle_per_core;
  r.simulated_commands = tl.simulated_commands;
  r.ops.reserve(tl.ops.size());
  for (const ops::OpTiming& t : tl.ops) r.ops.push_back(record_of(t));
  for (const api::KindSummary& k : api::summarize_by_kind(tl)) {
    r.kinds.push_back(KindRecord{std::string(ops::kind_name(k.kind)), k.ops, k.busy, k.hbm_bytes, k.c2c_bytes, k.flops,
                                 std::string(ops::regime_name(k.regime)), k.bound_by, k.energy_pj * 1e-12});
  }
  for (std::size_t e = 0; e < chip.engines.size(); ++e) {
    r.commands.push_back(EngineCommands{chip.engines[e].name, tl.commands[e], tl.engine_energy_pj[e] * 1e-12});
    r.command_count += tl.commands[e];
  }
  if (const std::optional<api::RunEnergy> e = api::run_energy(s.description(), tl)) {
    r.has_energy = true;
    r.energy_j = e->total_pj * 1e-12;
    r.dynamic_energy_j = e->dynamic_pj * 1e-12;
    r.static_energy_j = e->static_pj * 1e-12;
    r.average_power_w = e->average_w;
    r.tdp_w = e->tdp_w.value_or(0);
    r.joules_per_token = e->joules_per_token.value_or(0);
    r.tokens_per_joule = e->joules_per_token ? 1.0 / *e->joules_per_token : 0;
  }
  r.replayed_commands = r.command_count - r.simulated_commands;
}

// The runtime a request names: "" for the chip alone ("none" is the same, and reports nothing).
std::string runtime_name(const Request& r) { return r.runtime == "none" ? std::string() : r.runtime; }

// The request with the options not given filled: from the runtime where it sets them and they
// apply to this run (why_option_does_not_apply), else the option's fallback.
Request resolved_with_runtime(const Request& given, const Runtime& runtime, const Model& model) {
  Request r = given;
  const auto fill = [&](std::string Request::*member, const std::string& from_runtime, const char* option) {
    if (!(r.*member).empty()) return;
    const bool applies = !from_runtime.empty() && why_option_does_not_apply(option, model, r).empty();
    r.*member = applies ? from_runtime : find_run_option(option)->fallback;
  };
  fill(&Request::kv_append, runtime.kv_append, "kv_append");
  fill(&Request::lm_head_weights, runtime.lm_head_weights, "lm_head_weights");
  fill(&Request::prefill_attention, runtime.prefill_attention, "prefill_attention");
  if (!r.host_launch_ns) r.host_launch_ns = r.scope == "block" ? 0 : runtime.host_launch_ns;
  return r;
}

// The request as a run takes it: its runtime read (once per process) and its options filled.
Request resolved(const Request& given, const Model& model) {
  return resolved_with_runtime(given, runtime_named(runtime_name(given)), model);
}

// What the runtime adds to the simulated step (g5sim/runtime.hpp): its device side from the
// ops, its scheduling CPU from the step's sequences and tokens (the chip's DP rank's when the
// runtime runs a scheduler per rank), overlapped with the step's own device time when it overlaps.
api::RuntimeReport runtime_report(const Runtime& runtime, const Result::State& s) {
  const models::Workload chip_share = models::chip_workload(s.workload, s.parallelism);
  const models::Workload& scheduled = runtime.scheduler_per_dp_rank ? chip_share : s.workload;
  api::RuntimeReport report{runtime.name,
                            runtime.version,
                            runtime.source,
                            runtime.sha256,
                            runtime.adds,
                            {},
                            std::min(runtime.tensor_efficiency, runtime.expert_tensor_efficiency),
                            runtime.graph.launch_ns > 0 || runtime.eager.launch_ns > 0};
  report.parts = device_charge(
      runtime, api::step_ops(s.timeline.ops, !s.workload.has_prefill(), chip_share.sequences(), chip_share.tokens(),
                             api::experts_split(s.parallelism.tp, s.parallelism.ep)));
  if (s.scope == api::Scope::step) {
    const std::uint64_t device = s.timeline.total + report.parts.total_ps() - report.parts.layer_launch_ps;
    std::uint64_t tokens = 0;
    for (const models::SequenceGroup& g : scheduled.groups) tokens += g.count * g.q_len;
    report.parts.step_cpu_ps = api::step_cpu_ps(runtime, scheduled.sequences(), tokens, device);
  }
  return report;
}

}  // namespace

const char* version() { return G5SIM_VERSION; }

std::string mix_text(const std::vector<SequenceRecord>& groups) {
  std::vector<models::SequenceGroup> as_groups;
  for (const SequenceRecord& g : groups) as_groups.push_back({g.count, g.q_len, g.history, g.path == "decode"});
  return models::mix_text(as_groups);
}

Chip Chip::from_file(const std::string& path) {
  return public_errors([&] { return Chip(std::make_shared<const Data>(Data{hw::load_chip(path)})); });
}

Chip Chip::from_yaml(const std::string& text, const std::string& source_name) {
  return public_errors([&] { return Chip(std::make_shared<const Data>(Data{hw::chip_from_yaml(text, source_name)})); });
}

Chip Chip::from_document(const std::string& json_text, const std::string& source_name) {
  return public_errors(
      [&] { return Chip(std::make_shared<const Data>(Data{hw::chip_from_document(json_text, source_name)})); });
}

std::string Chip::name() const { return data_->chip.name; }
std::string Chip::source() const { return data_->chip.source; }
std::string Chip::sha256() const { return data_->chip.source_sha256; }
std::uint32_t Chip::cores() const { return data_->chip.cores; }
std::uint64_t Chip::ddr_capacity_bytes() const { return data_->chip.ddr_capacity_bytes; }

Chip Chip::with_cores(std::uint32_t cores) const {
  if (cores == 0 || cores > data_->chip.cores) {
    throw ConfigError(fmt::format("{} has {} cores, asked for {}", data_->chip.name, data_->chip.cores, cores), "",
                      "cores", 0, 0);
  }
  Data copy = *data_;
  copy.chip.cores = cores;
  return Chip(std::make_shared<const Data>(std::move(copy)));
}

std::vector<std::string> Chip::engines() const {
  std::vector<std::string> out;
  for (const hw::EngineSpec& e : data_->chip.engines) out.push_back(e.name);
  return out;
}

Model Model::from_file(const std::string& path) {
  return public_errors([&] { return Model(std::make_shared<const Data>(Data{models::load_model(path)})); });
}

Model Model::from_yaml(const std::string& text, const std::string& source_name) {
  return public_errors(
      [&] { return Model(std::make_shared<const Data>(Data{models::model_from_yaml(text, source_name)})); });
}

Model Model::from_document(const std::string& json_text, const std::string& source_name, ModelSchema schema) {
  return public_errors([&] {
    const auto s = schema == ModelSchema::g5sim ? models::ModelSchema::g5sim : models::ModelSchema::hugging_face;
    return Model(std::make_shared<const Data>(Data{models::model_from_document(json_text, source_name, s)}));
  });
}

std::string Model::name() const { return data_->spec.name; }
std::string Model::source() const { return data_->spec.source; }
std::string Model::sha256() const { return data_->spec.source_sha256; }
std::string Model::model_type() const { return data_->spec.model_type; }
std::string Model::attention() const { return data_->spec.attention == models::AttentionKind::mla ? "mla" : "gqa"; }
std::uint64_t Model::num_hidden_layers() const { return data_->spec.num_hidden_layers; }
std::uint64_t Model::num_attention_heads() const { return data_->spec.num_attention_heads; }
std::uint64_t Model::kv_lora_rank() const {
  return data_->spec.attention == models::AttentionKind::mla ? data_->spec.kv_lora_rank : 0;
}
std::uint64_t Model::qk_rope_head_dim() const {
  return data_->spec.attention == models::AttentionKind::mla ? data_->spec.qk_rope_head_dim : 0;
}
std::uint64_t Model::parameter_count() const { return models::parameter_count(data_->spec); }
std::vector<std::string> Model::class_defaults() const { return data_->spec.class_defaults_taken; }

std::uint64_t Model::latent_kv_elements() const {
  return data_->spec.attention == models::AttentionKind::mla ? data_->spec.latent_kv_elements() : 0;
}

const OpRecord& Result::op(const std::string& name, std::optional<int> layer) const {
  const OpRecord* found = nullptr;
  std::vector<int> layers_with_it;
  for (const OpRecord& o : ops) {
    if (o.name != name || (layer && o.layer != *layer)) continue;
    if (found == nullptr) found = &o;
    layers_with_it.push_back(o.layer);
  }
  if (found == nullptr) {
    throw std::out_of_range(layer ? fmt::format("no op '{}' in layer {}", name, *layer)
                                  : fmt::format("no op named '{}'", name));
  }
  if (!layer && layers_with_it.size() > 1) {
    throw std::out_of_range(fmt::format("op '{}' is in {} layers ({} to {}): name the layer", name,
                                        layers_with_it.size(), layers_with_it.front(), layers_with_it.back()));
  }
  return *found;
}

std::string Result::json() const {
  if (saved_) return saved_->json;
  std::ostringstream out;
  api::write_json(out, state_->description(), state_->timeline);
  return out.str();
}

std::string Result::table() const {
  if (saved_) return saved_->table;
  std::ostringstream out;
  api::write_table(out, state_->description(), state_->timeline);
  return out.str();
}

namespace {

// A trace's layer range, checked against the run: a range no layer of the run is in would write
// an empty trace.
void check_trace_layers(const std::optional<std::pair<int, int>>& range, std::uint64_t layers) {
  if (!range) return;
  if (range->first < 0 || range->second < range->first) {
    throw ConfigError(fmt::format("layers {}..{}: expected 0 <= first <= last", range->first, range->second), "",
                      "trace_layers", 0, 0);
  }
  if (static_cast<std::uint64_t>(range->first) >= layers) {
    throw ConfigError(
        fmt::format("layers {}..{}: the run has decoder layers 0..{}", range->first, range->second, layers - 1), "",
        "trace_layers", 0, 0);
  }
}

}  // namespace

std::uint64_t Result::chrome_trace_bytes(std::optional<std::pair<int, int>> layer_range) const {
  if (!state_ || !state_->simulation) return 0;
  check_trace_layers(layer_range, layers);
  const api::Simulation& s = *state_->simulation;
  auto wanted = [&](int layer) {
    return !layer_range || (layer >= layer_range->first && layer <= layer_range->second);
  };
  std::uint64_t traced_commands = 0, traced_ops = 0;
  for (const auto& core : s.lowered.program.cores) {
    for (const auto& queue : core.queues) {
      for (const sim::Command& c : queue) traced_commands += wanted(s.graph[c.op].layer) ? 1 : 0;
    }
  }
  for (const ops::OpTiming& t : state_->timeline.ops) traced_ops += wanted(t.layer) ? 1 : 0;
  return api::trace_bytes_estimate(traced_commands, traced_ops);
}

void Result::write_chrome_trace(std::ostream& out, std::optional<std::pair<int, int>> layer_range) const {
  if (!state_ || !state_->simulation) {
    throw ConfigError("the run kept no command records: simulate with keep_commands to write a trace", "",
                      "keep_commands", 0, 0);
  }
  check_trace_layers(layer_range, layers);
  const api::Simulation& s = *state_->simulation;
  api::write_chrome_trace(out, state_->chip.data().chip, s.graph, s.lowered, s.trace, state_->timeline,
                          api::TraceFilter{layer_range}, state_->runtime ? &*state_->runtime : nullptr);
}

Result simulate(const Chip& whole_chip, const Model& model, const Request& given) {
  const Runtime& runtime = public_errors([&]() -> const Runtime& { return runtime_named(runtime_name(given)); });
  const Request request = public_errors([&] { return resolved_with_runtime(given, runtime, model); });
  if (request.cores && *request.cores > models::kMaxCores) {
    throw ConfigError(fmt::format("{} is outside 1..{}", *request.cores, models::kMaxCores), "", "cores", 0, 0);
  }
  const Chip chip = request.cores ? whole_chip.with_cores(static_cast<std::uint32_t>(*request.cores)) : whole_chip;
  return public_errors([&] {
    auto state = std::make_shared<Result::State>(chip, model);
    Result result;
    state->scope = parse_scope(request.scope);
    state->part = step_part(request.scope);
    if (state->scope == api::Scope::block && (request.layers || !request.expert_load.empty())) {
      throw hw::InputError(request.layers ? "layers" : "expert_load", "layers and expert_load need scope step");
    }
    if (state->scope == api::Scope::block && request.micro_batches != 1) {
      throw hw::InputError("micro_batches", "micro-batches need scope step (a block is one attention)");
    }
    if (state->scope == api::Scope::block && request.host_launch_ns.value_or(0) != 0) {
      throw hw::InputError("host_launch_ns", "a host launch per layer needs scope step (a block is one attention)");
    }
    state->options.kv_read_engine = request.kv_read_engine;
    state->options.max_commands = request.max_commands;
    state->options.attn_split = parse_split(request.attn_split);
    state->options.prefetch_weights = request.prefetch;
    if (request.max_commands == 0) throw hw::InputError("max_commands", "must be a positive integer");
    const hw::Chip& c = chip.data().chip;
    const models::ModelSpec& m = model.data().spec;
    deploy(c, m, request, *state, result.warnings);
    api::Simulation sim;
    if (state->scope == api::Scope::block) {
      state->layers = 1;
      sim = api::simulate_block(c, m, state->workload, state->options, state->parallelism,
                                request.replay && !request.keep_commands);
    } else {
      std::optional<models::ExpertLoad> load;
      if (!request.expert_load.empty()) load = models::ExpertLoad::from_csv_file(request.expert_load);
      models::StepOptions step;
      step.layers = request.layers;
      step.micro_batches = request.micro_batches;
      step.host_launch_ns = *request.host_launch_ns;
      step.expert_load = load ? &*load : nullptr;
      step.parallelism = state->parallelism;
      step.part = state->part;
      state->layers = request.layers.value_or(m.num_hidden_layers);
      state->micro_batches = request.micro_batches;
      state->host_launch_ns = *request.host_launch_ns;
      sim = api::simulate_step(c, m, state->workload, step, state->options, request.replay && !request.keep_commands);
    }
    state->timeline = std::move(sim.timeline);
    if (!runtime_name(given).empty()) state->runtime = runtime_report(runtime, *state);
    if (request.keep_commands) state->simulation = std::move(sim);
    fill(result, *state);
    result.replay = request.replay;
    result.state_ = std::move(state);
    return result;
  });
}

std::vector<LayerRecord> layers_of(const std::vector<OpRecord>& ops) {
  std::map<int, LayerRecord> by_layer;
  for (const OpRecord& o : ops) {
    auto [it, fresh] = by_layer.try_emplace(o.layer);
    LayerRecord& l = it->second;
    if (fresh) {
      l.layer = o.layer;
      l.start_ps = o.op_start_ps;
      l.end_ps = o.op_end_ps;
    }
    ++l.ops;
    l.start_ps = std::min(l.start_ps, o.op_start_ps);
    l.end_ps = std::max(l.end_ps, o.op_end_ps);
    l.busy_ps += o.op_end_ps - o.op_start_ps;
    l.hbm_bytes += o.hbm_bytes;
    l.flops += o.flops;
  }
  std::vector<LayerRecord> out;
  for (const auto& [layer, l] : by_layer) {
    if (layer >= 0) out.push_back(l);
  }
  if (const auto outside = by_layer.find(-1); outside != by_layer.end()) out.push_back(outside->second);
  return out;
}

ScopedCancelCheck::ScopedCancelCheck(bool (*check)(void* context), void* context)
    : scope_(std::make_shared<sim::ScopedCancelCheck>(check, context)) {}

ScopedCancelCheck::~ScopedCancelCheck() = default;

ScopedProgress::ScopedProgress(void (*report)(void*, const char*, std::uint64_t, std::uint64_t), void* context)
    : scope_(std::make_shared<sim::ScopedProgress>(report, context)) {}

ScopedProgress::~ScopedProgress() = default;

Deployment deployment(const Chip& chip, const Model& model, const Request& given) {
  return public_errors([&] {
    const Request request = resolved(given, model);
    const ChosenDeployment chosen = choose_deployment(chip.data().chip, model.data().spec, request);
    const models::Parallelism& p = chosen.parallelism;
    return Deployment{p.tp, p.ep, p.dp, chosen.workload.sequences(), chosen.automatic};
  });
}

void check_deployment(const Chip& chip, const Model& model, const Request& given) {
  public_errors([&] {
    const Request request = resolved(given, model);
    Result::State s(chip, model);
    s.scope = parse_scope(request.scope);
    std::vector<std::string> warnings;
    deploy(chip.data().chip, model.data().spec, request, s, warnings);
  });
}

namespace {
models::KvGrowth internal(const KvGrowth& g) { return {g.per_token, g.window_per_token, g.window, g.fixed}; }
}  // namespace

std::uint64_t KvGrowth::bounded(std::uint64_t tokens) const {
  return public_errors(
      [&] { return hw::checked("the KV cache bytes of a sequence", [&] { return internal(*this).bounded(tokens); }); });
}

std::uint64_t KvGrowth::bytes(std::uint64_t tokens) const {
  return public_errors(
      [&] { return hw::checked("the KV cache bytes of a sequence", [&] { return internal(*this).bytes(tokens); }); });
}

ServingMemory serving_memory(const Chip& chip, const Model& model, const Request& given) {
  return public_errors([&] {
    const Request request = resolved(given, model);
    const hw::Chip& c = chip.data().chip;
    const models::ModelSpec& m = model.data().spec;
    const ChosenDeployment chosen = choose_deployment(c, m, request);
    const models::Parallelism& p = chosen.parallelism;
    models::validate_parallelism(p, m, chosen.workload);
    ServingMemory out;
    out.deployment = Deployment{p.tp, p.ep, p.dp, chosen.workload.sequences(), chosen.automatic};
    out.capacity_bytes = c.ddr_capacity_bytes;
    // A side of attention-FFN disaggregation (scope attention or ffn) holds its side's weights.
    out.weight_bytes = models::chip_footprint(m, chosen.workload, p, step_part(request.scope)).weight_bytes;
    const models::KvGrowth g = models::kv_growth(m, chosen.workload, p.tp);
    out.kv = KvGrowth{g.per_token, g.window_per_token, g.window, g.fixed};
    out.kv_bytes_per_token = out.kv.unit();
    if (out.kv_bytes_per_token == 0) {
      throw hw::InputError("model", fmt::format("{} keeps no KV history in any layer: a serve sizes its cache in "
                                                "tokens of one",
                                                m.name));
    }
    return out;
  });
}

OpResult simulate_matmul(const Chip& chip, const MatmulOp& op, std::uint32_t cores) {
  return public_errors([&] {
    const api::MatmulRequest request = api::matmul_request(op.m, op.n, op.k, op.dtype, "--dtype");
    return api::run_matmul(chip.data().chip, request, cores);
  });
}

OpResult simulate_attention(const Chip& chip, const AttentionOp& op, std::uint32_t cores) {
  return public_errors([&] { return api::run_fa2(chip.data().chip, op, cores); });
}

OpResult simulate_collective(const Chip& chip, const CollectiveOp& op) {
  return public_errors([&] { return api::run_collective(chip.data().chip, op); });
}

}  // namespace g5sim
