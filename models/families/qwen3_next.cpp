// Qwen3-Next (qwen3_next): a hybrid of Gated DeltaNet layers (linear attention: a fixed recurrent
// state instead of a KV history) and gated full attention, one full layer every
// full_attention_interval (layer l is full when (l + 1) % interval == 0, Qwen3NextConfig's rule),
// or as layer_types lists them; every layer's FFN is routed experts (num_experts,
// num_experts_per_tok, moe_intermediate_size, Qwen3-MoE's decoder_sparse_step and
// mlp_only_layers) beside one shared expert of shared_expert_intermediate_size. The full layers
// are Qwen3's GQA with q/k norm, partial rotary and an output gate (q_proj yields a gate per
// query element). The recurrent state's element is mamba_ssm_dtype (bfloat16 as vLLM keeps it by
// default, float32 as SGLang does). Sources and figures: docs/models_2026.md.

#include <fmt/format.h>

#include "models/families/families.hpp"
#include "models/families/parts.hpp"
#include "models/run_limits.hpp"

namespace models::families {
namespace {

using K = FieldKind;

constexpr MoeKeys kQwen3NextMoe{"num_experts",         "num_experts_per_tok", "", "moe_intermediate_size", "",
                                "decoder_sparse_step", "mlp_only_layers",     ""};

std::vector<Field> linear_attention_fields() {
  return {{"full_attention_interval", K::count, 1, double(kMaxLayers), true},
          {"layer_types", K::text_list, 0, 0, true},
          {"linear_num_key_heads", K::count, 1, double(kMaxHeads)},
          {"linear_num_value_heads", K::count, 1, double(kMaxHeads)},
          {"linear_key_head_dim", K::count, 1, double(kMaxHeadDim)},
          {"linear_value_head_dim", K::count, 1, double(kMaxHeadDim)},
          {"linear_conv_kernel_dim", K::count, 1, 64},
          {"mamba_ssm_dtype", K::text},
          {"shared_expert_intermediate_size", K::count, 0, kMaxWidth}};
}

void read_linear_attention(Fields& f, ModelSpec& s) {
  if (f.has("layer_types")) {
    read_layer_types(f, s, {"linear_attention", "full_attention"});
  } else {
    const std::uint64_t interval = f.count("full_attention_interval", s.num_hidden_layers);
    for (std::uint64_t l = 0; l < s.num_hidden_layers; ++l) {
      s.layer_mixers.push_back((l + 1) % interval == 0 ? LayerMixer::full_attention : LayerMixer::linear_attention);
    }
  }
  GatedDeltaNetSpec g;
  g.num_key_heads = f.count("linear_num_key_heads");
  g.num_value_heads = f.count("linear_num_value_heads");
  g.key_head_dim = f.count("linear_key_head_dim");
  g.value_head_dim = f.count("linear_value_head_dim");
  g.conv_kernel = f.count("linear_conv_kernel_dim");
  if (g.num_value_heads % g.num_key_heads != 0) {
    f.fail("linear_num_value_heads",
           fmt::format("{} is not a multiple of linear_num_key_heads {}", g.num_value_heads, g.num_key_heads));
  }
  g.state_bytes = f.text("mamba_ssm_dtype", {"bfloat16", "float16", "float32"}) == "float32" ? 4 : 2;
  s.linear_attention = g;
}

void build_qwen3_next(Fields& f, ModelSpec& s) {
  read_decoder(f, s);
  read_gqa(f, s, false);
  s.qk_norm = true;
  s.attention_output_gate = true;
  read_partial_rotary(f, s);
  read_linear_attention(f, s);
  read_moe(f, s, kQwen3NextMoe);
  if (const std::uint64_t shared = f.count("shared_expert_intermediate_size"); shared > 0) {
    s.moe->n_shared_experts = 1;
    s.moe->shared_intermediate_size = shared;
  }
}

}  // namespace

const ModelFamily& qwen3_next() {
  static const ModelFamily family{
      "Qwen3-Next (Gated DeltaNet and gated full attention, routed + shared experts)",
      {"qwen3_next"},
      {{"Qwen3NextForCausalLM", "qwen3_next"}},
      decoder_fields() + gqa_fields() + partial_rotary_fields() + linear_attention_fields() + moe_fields(kQwen3NextMoe),
      build_qwen3_next};
  return family;
}

}  // namespace models::families
