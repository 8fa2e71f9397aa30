// What `g5sim check` reports of a chip and a model config (g5sim/g5sim.hpp, check_report).

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "api/result_state.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/chip.hpp"
#include "hw/cost_model.hpp"
#include "models/kv_cache.hpp"
#include "models/memory_footprint.hpp"
#include "models/model_spec.hpp"
#include "models/workload.hpp"

namespace g5sim {
namespace {

// What the chip's numbers add up to: peaks per dtype, and each DMA engine's channels over all
// cores against the DDR, with a warning when they cannot fill it (then DDR never limits a run).
void chip_totals(std::string& out, const hw::Chip& chip) {
  const hw::CostModel cost(chip);
  std::string peaks;
  for (const hw::DType t : hw::kDTypes) {
    const double cube = cost.cube_peak_flops(t), vector = cost.vector_peak_ops(t);
    if (cube > 0)
      peaks += fmt::format("{}cube {} {:.1f} TFLOPS", peaks.empty() ? "" : ", ", hw::name_of(t), cube / 1e12);
    if (vector > 0) {
      peaks += fmt::format("{}vector {} {:.2f} Tops", peaks.empty() ? "" : ", ", hw::name_of(t), vector / 1e12);
    }
  }
  out += fmt::format("peaks {}\n", peaks);
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
  out += fmt::format("dma   channels over {} cores, GB/s: {} (sum {:.1f}) vs DDR {:.1f} x eta_m {} = {:.1f}\n",
                     chip.cores, channels, reaching_ddr, chip.ddr_bandwidth_gb_per_s, chip.ddr_efficiency, ddr);
  if (reaching_ddr > 0 && reaching_ddr < ddr) {
    out += fmt::format(
        "warning: the DMA channels reaching DDR sum to {:.1f} GB/s, below the DDR's {:.1f}: DDR can never be the "
        "limiting resource on this chip (the channels are)\n",
        reaching_ddr, ddr);
  }
  if (chip.energy) {
    // The energy section's prices at the chip's rates (hw/energy.hpp): the cube at its peak (a MAC
    // is 2 FLOPs), the DDR at its sustainable bandwidth, the static power; the larger cube dtype.
    const hw::ChipEnergy& e = *chip.energy;
    auto cube_w = [&](hw::DType t) { return cost.cube_peak_flops(t) / 2 * e.pj_per_mac[static_cast<int>(t)] * 1e-12; };
    const double bf16_w = cube_w(hw::DType::bf16), fp8_w = cube_w(hw::DType::fp8);
    const double ddr_w = ddr * 1e9 * e.pj_per_byte[0] * 1e-12;
    const double static_w = e.static_w(chip.cores);
    const double peak = std::max(bf16_w, fp8_w) + ddr_w + static_w;
    // A chip without an fp8 rate (A100) lists its bf16 cube alone.
    const std::string fp8 = chip.cube_macs(hw::DType::fp8) != 0 ? fmt::format(" / fp8 {:.1f} W", fp8_w) : "";
    out += fmt::format(
        "power peak {:.1f} W: cube bf16 {:.1f} W{} at its peak, DDR {:.1f} W at {:.1f} GB/s, static {:.1f} W; {}\n",
        peak, bf16_w, fp8, ddr_w, ddr, static_w,
        e.tdp_w ? fmt::format("TDP {:.0f} W", *e.tdp_w) : std::string("no TDP stated"));
    if (e.tdp_w && peak > *e.tdp_w) {
      out += fmt::format(
          "warning: the energy prices at the chip's peak rates draw {:.1f} W, above its {:.0f} W TDP: the prices or "
          "the peaks are high (or the chip throttles, which g5sim does not model)\n",
          peak, *e.tdp_w);
    }
  }
}

// The model's size: parameters (every layer, bf16 elements, no sharing) and the KV cache one
// token adds (decode defaults: bf16 cache, absorb mode for MLA, DSA's indexer keys).
void model_totals(std::string& out, const models::ModelSpec& model) {
  const models::Workload w = models::make_workload(models::Phase::decode, 1, 2, std::nullopt, models::KvFormat::bf16);
  const std::uint64_t params = models::parameter_count(model);
  const std::uint64_t per_layer =
      models::kv_bytes_per_token_per_layer(model, w) + models::indexer_bytes_per_token_per_layer(model);
  if (model.layer_mixers.empty()) {
    out += fmt::format(
        "size  {} parameters ({:.1f} B); KV cache {} B per token per layer, {} B per token over {} layers\n", params,
        static_cast<double>(params) / 1e9, per_layer, per_layer * model.num_hidden_layers, model.num_hidden_layers);
    return;
  }
  // Unlike layers: what grows with a sequence, what its window keeps, what its states hold.
  const models::KvGrowth g = models::kv_growth(model, w, 1);
  std::string cache = fmt::format("{} B per token over {} full-attention layers", g.per_token,
                                  model.layers_of(models::LayerMixer::full_attention));
  if (g.window_per_token > 0) {
    cache += fmt::format(", {} B per token for a sequence's last {} over {} sliding-window layers", g.window_per_token,
                         g.window, model.layers_of(models::LayerMixer::sliding_attention));
  }
  if (g.fixed > 0) {
    cache += fmt::format(", {} B of state per sequence over {} linear-attention layers", g.fixed,
                         model.layers_of(models::LayerMixer::linear_attention));
  }
  out += fmt::format("size  {} parameters ({:.1f} B); KV cache {} B per token per attention layer: {}\n", params,
                     static_cast<double>(params) / 1e9, per_layer, cache);
}

// A model of unlike layers: how many of each, and what each kind is.
void layer_layout(std::string& out, const models::ModelSpec& model) {
  if (model.layer_mixers.empty()) return;
  std::vector<std::string> kinds;
  for (const models::LayerMixer m : {models::LayerMixer::full_attention, models::LayerMixer::sliding_attention,
                                     models::LayerMixer::linear_attention}) {
    const std::uint64_t n = model.layers_of(m);
    if (n == 0) continue;
    std::string what = fmt::format("{} {}", n, models::name_of(m));
    if (m == models::LayerMixer::sliding_attention) what += fmt::format(" (window {})", model.sliding_window);
    if (m == models::LayerMixer::linear_attention && model.linear_attention) {
      const models::GatedDeltaNetSpec& g = *model.linear_attention;
      what += fmt::format(" (Gated DeltaNet: {} key heads of {}, {} value heads of {}, conv {}, state {} B an element)",
                          g.num_key_heads, g.key_head_dim, g.num_value_heads, g.value_head_dim, g.conv_kernel,
                          g.state_bytes);
    }
    kinds.push_back(what);
  }
  std::string extras;
  if (model.attention_sinks) extras += "; attention sinks";
  if (model.attention_output_gate) extras += "; gated attention output";
  if (model.quantised_experts_only) extras += "; only the routed experts quantised";
  out += fmt::format("layers {}{}\n", fmt::join(kinds, ", "), extras);
}
}  // namespace

std::string Chip::summary() const {
  const hw::Chip& chip = data().chip;
  return fmt::format("{}: {} core{}, cube bf16 peak {:.1f} TFLOPS, DDR {:.1f} GB/s, {:.0f} GiB", chip.name, chip.cores,
                     chip.cores == 1 ? "" : "s", hw::CostModel(chip).cube_peak_flops(hw::DType::bf16) / 1e12,
                     chip.ddr_bandwidth_gb_per_s, static_cast<double>(chip.ddr_capacity_bytes) / (1u << 30));
}

std::string Chip::calibration_summary() const {
  const hw::Chip& chip = data().chip;
  if (!chip.calibrated) return {};
  const hw::HeldOutMape& m = chip.held_out_mape;
  std::vector<std::string> fields;
  for (const std::string& f : m.fitted) fields.push_back(f.substr(0, f.find(" in [")));
  std::string fit =
      m.transferred_from.empty()
          ? fmt::format("MAPE {:.1f} % on its rows, {:.1f} % held out (leave one out)", m.fit_rows, m.rows)
          : fmt::format("fit on {}: MAPE {:.1f} % on this chip's rows", m.transferred_from, m.rows);
  if (m.models) fit += fmt::format(", {:.1f} % with a model held out", *m.models);
  return fmt::format("calibrated: {}; fitted {}", fit,
                     fields.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(fields, ", ")));
}

std::string Model::summary() const {
  const models::ModelSpec& model = data().spec;
  const std::string ffn =
      model.moe ? fmt::format("{} experts top {}", model.moe->n_routed_experts, model.moe->num_experts_per_tok)
                : std::string("dense");
  std::string attention = model.attention == models::AttentionKind::mla ? "MLA" : "GQA";
  if (const std::uint64_t sliding = model.layers_of(models::LayerMixer::sliding_attention); sliding > 0) {
    attention += fmt::format(" ({} of them sliding over {})", sliding, model.sliding_window);
  }
  if (const std::uint64_t linear = model.layers_of(models::LayerMixer::linear_attention); linear > 0) {
    attention += fmt::format(" on {} layers, Gated DeltaNet on {}", model.num_hidden_layers - linear, linear);
  }
  return fmt::format("{}: {}, {} layers, {}, {}, {:.1f} B parameters", model.name, model.model_type,
                     model.num_hidden_layers, attention, ffn,
                     static_cast<double>(models::parameter_count(model)) / 1e9);
}

std::string check_report(const Chip& chip_config, const Model& model_config) {
  const hw::Chip& chip = chip_config.data().chip;
  const models::ModelSpec& model = model_config.data().spec;
  std::string out;
  out += fmt::format("chip  {}: {} ({} cores, cube bf16 peak {:.1f} TFLOPS, DDR {:.1f} GB/s x eta_m {})\n", chip.source,
                     chip.name, chip.cores, hw::CostModel(chip).cube_peak_flops(hw::DType::bf16) / 1e12,
                     chip.ddr_bandwidth_gb_per_s, chip.ddr_efficiency);
  if (model.attention == models::AttentionKind::mla) {
    out += fmt::format(
        "model {}: {} ({}, {} layers, MLA: heads {}, kv_lora_rank {}, qk_rope_head_dim {}, latent {} "
        "elements/token/layer)\n",
        model.source, model.name, model.model_type, model.num_hidden_layers, model.num_attention_heads,
        model.kv_lora_rank, model.qk_rope_head_dim, model.latent_kv_elements());
  } else {
    out += fmt::format("model {}: {} ({}, {} layers, GQA: heads {}, kv heads {}, head_dim {})\n", model.source,
                       model.name, model.model_type, model.num_hidden_layers, model.num_attention_heads,
                       model.num_key_value_heads, model.head_dim);
  }
  layer_layout(out, model);
  if (!model.class_defaults_taken.empty()) {
    out += fmt::format("absent {}: left out of the config.json, so its config class's defaults\n",
                       fmt::join(model.class_defaults_taken, ", "));
  }
  if (model.moe) {
    const models::MoeSpec& moe = *model.moe;
    std::string rule;
    if (moe.decoder_sparse_step != 1) rule += fmt::format(", sparse every {} layers", moe.decoder_sparse_step);
    if (!moe.mlp_only_layers.empty()) rule += fmt::format(", dense layers {}", fmt::join(moe.mlp_only_layers, ","));
    out += fmt::format("ffn   MoE after {} dense layers{}: {} routed experts (top {}), {} shared, width {}\n",
                       moe.first_k_dense_replace, rule, moe.n_routed_experts, moe.num_experts_per_tok,
                       moe.n_shared_experts, moe.moe_intermediate_size);
  } else {
    out += fmt::format("ffn   dense, width {}\n", model.intermediate_size);
  }
  chip_totals(out, chip);
  model_totals(out, model);
  return out;
}

}  // namespace g5sim
