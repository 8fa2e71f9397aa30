// gpt-oss (gpt_oss): GQA with a bias on q, k and v, attention sinks (one learned logit per query
// head), layers alternating sliding_attention over sliding_window positions and full_attention
// as layer_types lists them, and routed experts of intermediate_size on every layer
// (num_local_experts, num_experts_per_tok; no shared expert). The released checkpoints quantise
// the experts alone to MXFP4 (quantization_config, models/model_spec.cpp). Sources and figures:
// docs/models_2026.md.

#include "models/families/families.hpp"
#include "models/families/parts.hpp"
#include "models/run_limits.hpp"

namespace models::families {
namespace {

using K = FieldKind;

constexpr MoeKeys kGptOssMoe{"num_local_experts", "num_experts_per_tok", "", "intermediate_size", "", "", "", ""};

std::vector<Field> gpt_oss_fields() {
  return {{"num_hidden_layers", K::count, 1, double(kMaxLayers)},
          {"vocab_size", K::count, 1, kMaxVocab},
          {"layer_types", K::text_list},
          {"sliding_window", K::count, 1, double(kMaxContext)}};
}

void build_gpt_oss(Fields& f, ModelSpec& s) {
  s.num_hidden_layers = f.count("num_hidden_layers");
  s.vocab_size = f.count("vocab_size");
  s.num_attention_heads = f.count("num_attention_heads");
  read_gqa(f, s, true);
  read_layer_types(f, s, {"sliding_attention", "full_attention"});
  s.sliding_window = f.count("sliding_window");
  s.attention_sinks = true;
  read_moe(f, s, kGptOssMoe);
  s.intermediate_size = s.moe->moe_intermediate_size;  // every layer's FFN is the experts'
}

}  // namespace

const ModelFamily& gpt_oss() {
  static const ModelFamily family{"gpt-oss (GQA with sinks, sliding and full layers, routed experts)",
                                  {"gpt_oss"},
                                  {{"GptOssForCausalLM", "gpt_oss"}},
                                  gpt_oss_fields() + gqa_fields() + moe_fields(kGptOssMoe),
                                  build_gpt_oss};
  return family;
}

}  // namespace models::families
