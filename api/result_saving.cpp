// A Result as one string and back (g5sim/g5sim.hpp, Result::saved and Result::restore): what a
// Python pickle holds. Every public field, the JSON and the table texts; a JSON object written by
// nlohmann::json, whose doubles print with 17 significant digits and so read back bit for bit.

#include <nlohmann/json.hpp>

#include <string>
#include <utility>

#include "api/result_state.hpp"
#include "g5sim/g5sim.hpp"

namespace g5sim {
namespace {

// The fields, each once, for both directions.
template <class R, class F>
void each_field(R& r, F&& field) {
  field("chip", r.chip);
  field("model", r.model);
  field("scope", r.scope);
  field("phase", r.phase);
  field("kv_dtype", r.kv_dtype);
  field("mla_mode", r.mla_mode);
  field("prefill_mla_mode", r.prefill_mla_mode);
  field("weight_dtype", r.weight_dtype);
  field("kv_read_engine", r.kv_read_engine);
  field("attn_split", r.attn_split);
  field("prefill_attention", r.prefill_attention);
  field("kv_append", r.kv_append);
  field("lm_head_weights", r.lm_head_weights);
  field("act_dtype", r.act_dtype);
  field("chip_source", r.chip_source);
  field("chip_sha256", r.chip_sha256);
  field("model_source", r.model_source);
  field("model_sha256", r.model_sha256);
  field("layers", r.layers);
  field("batch", r.batch);
  field("q_len", r.q_len);
  field("kv_len", r.kv_len);
  field("micro_batches", r.micro_batches);
  field("host_launch_ns", r.host_launch_ns);
  field("weight_group", r.weight_group);
  field("cores", r.cores);
  field("prefetch", r.prefetch);
  field("replay", r.replay);
  field("tp", r.tp);
  field("ep", r.ep);
  field("dp", r.dp);
  field("chips", r.chips);
  field("automatic_sharding", r.automatic_sharding);
  field("weight_bytes", r.weight_bytes);
  field("kv_cache_bytes", r.kv_cache_bytes);
  field("capacity_bytes", r.capacity_bytes);
  field("total_ps", r.total_ps);
  field("runtime", r.runtime);
  field("runtime_version", r.runtime_version);
  field("runtime_source", r.runtime_source);
  field("runtime_sha256", r.runtime_sha256);
  field("runtime_adds", r.runtime_adds);
  field("kernel_mode", r.runtime_parts.kernel_mode);
  field("kernels", r.runtime_parts.kernels);
  field("collectives", r.runtime_parts.collectives);
  field("layer_launches", r.runtime_parts.layer_launches);
  field("kernel_floor_ps", r.runtime_parts.kernel_floor_ps);
  field("kernel_compute_ps", r.runtime_parts.kernel_compute_ps);
  field("kernel_gap_ps", r.runtime_parts.kernel_gap_ps);
  field("kernel_launch_ps", r.runtime_parts.kernel_launch_ps);
  field("collective_ps", r.runtime_parts.collective_ps);
  field("layer_launch_ps", r.runtime_parts.layer_launch_ps);
  field("step_cpu_ps", r.runtime_parts.step_cpu_ps);
  field("chip_ps", r.chip_ps);
  field("step_ps", r.step_ps);
  field("has_band", r.has_band);
  field("band_low_ps", r.band_low_ps);
  field("band_high_ps", r.band_high_ps);
  field("band_coverage", r.band_coverage);
  field("band_basis", r.band_basis);
  field("hbm_bytes", r.hbm_bytes);
  field("c2c_bytes", r.c2c_bytes);
  field("flops", r.flops);
  field("command_count", r.command_count);
  field("simulated_commands", r.simulated_commands);
  field("replayed_commands", r.replayed_commands);
  field("tokens_per_s", r.tokens_per_s);
  field("tokens_per_s_per_chip", r.tokens_per_s_per_chip);
  field("compute_ns", r.compute_ns);
  field("memory_ns", r.memory_ns);
  field("regime", r.regime);
  field("bound_by", r.bound_by);
  field("bound_share", r.bound_share);
  field("idle_gap_ps", r.idle_gap_ps);
  field("idle_per_core_ps", r.idle_per_core_ps);
  field("has_energy", r.has_energy);
  field("energy_j", r.energy_j);
  field("dynamic_energy_j", r.dynamic_energy_j);
  field("static_energy_j", r.static_energy_j);
  field("average_power_w", r.average_power_w);
  field("tdp_w", r.tdp_w);
  field("joules_per_token", r.joules_per_token);
  field("tokens_per_joule", r.tokens_per_joule);
  field("warnings", r.warnings);
}

template <class O, class F>
void each_op_field(O& o, F&& field) {
  field("id", o.id);
  field("name", o.name);
  field("layer", o.layer);
  field("kind", o.kind);
  field("shape", o.shape);
  field("engines", o.engines);
  field("op_start_ps", o.op_start_ps);
  field("op_end_ps", o.op_end_ps);
  field("hbm_bytes", o.hbm_bytes);
  field("unique_bytes", o.unique_bytes);
  field("c2c_bytes", o.c2c_bytes);
  field("message_bytes", o.message_bytes);
  field("flops", o.flops);
  field("kv_bytes", o.kv_bytes);
  field("peak_lmem_bytes", o.peak_lmem_bytes);
  field("roofline_ns", o.roofline_ns);
  field("compute_ns", o.compute_ns);
  field("regime", o.regime);
  field("bound_by", o.bound_by);
  field("bound_share", o.bound_share);
  field("idle_gap_ps", o.idle_gap_ps);
  field("energy_j", o.energy_j);
}

template <class K, class F>
void each_kind_field(K& k, F&& field) {
  field("kind", k.kind);
  field("ops", k.ops);
  field("busy_ps", k.busy_ps);
  field("hbm_bytes", k.hbm_bytes);
  field("c2c_bytes", k.c2c_bytes);
  field("flops", k.flops);
  field("regime", k.regime);
  field("bound_by", k.bound_by);
  field("energy_j", k.energy_j);
}

template <class S, class F>
void each_sequence_field(S& s, F&& field) {
  field("count", s.count);
  field("q_len", s.q_len);
  field("history", s.history);
  field("path", s.path);
}

constexpr int kSavedVersion = 5;

}  // namespace

std::string Result::saved() const {
  nlohmann::json doc;
  doc["g5sim_saved_result"] = kSavedVersion;
  each_field(*this, [&](const char* name, const auto& v) { doc[name] = v; });
  for (const OpRecord& o : ops) {
    nlohmann::json op;
    each_op_field(o, [&](const char* name, const auto& v) { op[name] = v; });
    doc["ops"].push_back(std::move(op));
  }
  for (const KindRecord& k : kinds) {
    nlohmann::json kind;
    each_kind_field(k, [&](const char* name, const auto& v) { kind[name] = v; });
    doc["kinds"].push_back(std::move(kind));
  }
  for (const EngineCommands& e : commands) doc["commands"].push_back({e.engine, e.commands, e.energy_j});
  for (const auto& [key, list] : {std::pair{"sequences", &sequences}, {"chip_sequences", &chip_sequences}}) {
    doc[key] = nlohmann::json::array();
    for (const SequenceRecord& g : *list) {
      nlohmann::json entry;
      each_sequence_field(g, [&](const char* name, const auto& v) { entry[name] = v; });
      doc[key].push_back(std::move(entry));
    }
  }
  doc["json"] = json();
  doc["table"] = table();
  return doc.dump();
}

Result Result::restore(const std::string& saved) {
  Result r;
  try {
    const nlohmann::json doc = nlohmann::json::parse(saved);
    if (doc.at("g5sim_saved_result").get<int>() != kSavedVersion) {
      throw ConfigError("a saved result of another version of g5sim", "", "", 0, 0);
    }
    each_field(r, [&](const char* name, auto& v) { doc.at(name).get_to(v); });
    for (const nlohmann::json& op : doc.value("ops", nlohmann::json::array())) {
      OpRecord& o = r.ops.emplace_back();
      each_op_field(o, [&](const char* name, auto& v) { op.at(name).get_to(v); });
    }
    for (const nlohmann::json& kind : doc.value("kinds", nlohmann::json::array())) {
      KindRecord& k = r.kinds.emplace_back();
      each_kind_field(k, [&](const char* name, auto& v) { kind.at(name).get_to(v); });
    }
    for (const nlohmann::json& e : doc.value("commands", nlohmann::json::array())) {
      r.commands.push_back({e.at(0).get<std::string>(), e.at(1).get<std::uint64_t>(), e.at(2).get<double>()});
    }
    for (const auto& [key, list] : {std::pair{"sequences", &r.sequences}, {"chip_sequences", &r.chip_sequences}}) {
      for (const nlohmann::json& entry : doc.at(key)) {
        SequenceRecord& g = list->emplace_back();
        each_sequence_field(g, [&](const char* name, auto& v) { entry.at(name).get_to(v); });
      }
    }
    r.saved_ =
        std::make_shared<const Saved>(Saved{doc.at("json").get<std::string>(), doc.at("table").get<std::string>()});
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(std::string("not a saved g5sim result: ") + e.what(), "", "", 0, 0);
  }
  return r;
}

bool operator==(const Result& a, const Result& b) { return a.saved() == b.saved(); }

}  // namespace g5sim
