// GLM-4.5 (glm4_moe): GQA with a bias on q, k and v (attention_bias), q/k norm when use_qk_norm,
// RoPE on partial_rotary_factor of each head, and DeepSeek's MoE layout: shared plus routed
// experts after first_k_dense_replace dense layers. Its multi-token-prediction layer
// (num_nextn_predict_layers) is not part of a step and is not counted.

#include "models/families/families.hpp"
#include "models/families/parts.hpp"

namespace models::families {
namespace {

std::vector<Field> glm_fields() {
  return std::vector<Field>{{"use_qk_norm", FieldKind::flag}} + partial_rotary_fields();
}

void build_glm4_moe(Fields& f, ModelSpec& s) {
  read_decoder(f, s);
  read_gqa(f, s, false);
  s.qk_norm = f.flag("use_qk_norm");
  read_partial_rotary(f, s);
  read_moe(f, s, kDeepSeekMoe);
}

}  // namespace

const ModelFamily& glm4_moe() {
  static const ModelFamily family{"GLM-4.5 (GQA, partial rotary, shared + routed experts)",
                                  {"glm4_moe"},
                                  {{"Glm4MoeForCausalLM", "glm4_moe"}},
                                  decoder_fields() + gqa_fields() + glm_fields() + moe_fields(kDeepSeekMoe),
                                  build_glm4_moe};
  return family;
}

}  // namespace models::families
