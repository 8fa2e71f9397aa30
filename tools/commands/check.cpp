// g5sim check: a chip and a model config validated, and what their numbers add up to (peaks per
// dtype, DMA channels against DDR, parameters, KV bytes per token).

#include <fmt/format.h>

#include "api/result_state.hpp"
#include "hw/chip.hpp"
#include "hw/cost_model.hpp"
#include "models/kv_cache.hpp"
#include "models/memory_footprint.hpp"
#include "models/model_spec.hpp"
#include "models/parallelism.hpp"
#include "models/workload.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"

namespace tools {
namespace {

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
  const models::Workload w = models::make_workload(models::Phase::decode, 1, 2, std::nullopt, models::KvFormat::bf16);
  const std::uint64_t params = models::parameter_count(model);
  const std::uint64_t per_layer =
      models::kv_bytes_per_token_per_layer(model, w) + models::indexer_bytes_per_token_per_layer(model);
  fmt::print("size  {} parameters ({:.1f} B); KV cache {} B per token per layer, {} B per token over {} layers\n",
             params, static_cast<double>(params) / 1e9, per_layer, per_layer * model.num_hidden_layers,
             model.num_hidden_layers);
}
class CheckCommand final : public Command {
 public:
  explicit CheckCommand(CLI::App& parent)
      : Command(parent.add_subcommand("check", "validate a chip and a model config")) {
    app()->add_option("--chip", chip_, "chip config YAML (default: the shipped sg2262.yaml)")->check(non_empty_path());
    app()
        ->add_option("--model", model_, "model config, YAML or config.json (default: the shipped deepseek-v3.yaml)")
        ->check(non_empty_path());
  }

  int run(const CliLimits&) override {
    const g5sim::Chip chip_config = chip_of(chip_);
    const g5sim::Model model_config = model_of(model_);
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
      const models::MoeSpec& moe = *model.moe;
      std::string rule;
      if (moe.decoder_sparse_step != 1) rule += fmt::format(", sparse every {} layers", moe.decoder_sparse_step);
      if (!moe.mlp_only_layers.empty()) rule += fmt::format(", dense layers {}", fmt::join(moe.mlp_only_layers, ","));
      fmt::print("ffn   MoE after {} dense layers{}: {} routed experts (top {}), {} shared, width {}\n",
                 moe.first_k_dense_replace, rule, moe.n_routed_experts, moe.num_experts_per_tok, moe.n_shared_experts,
                 moe.moe_intermediate_size);
    } else {
      fmt::print("ffn   dense, width {}\n", model.intermediate_size);
    }
    print_chip_totals(chip);
    print_model_totals(model);
    fmt::print("ok\n");
    check_stdout();
    return 0;
  }

 private:
  std::string chip_, model_;
};

}  // namespace

CommandPtr make_check(CLI::App& app) { return std::make_unique<CheckCommand>(app); }

}  // namespace tools
