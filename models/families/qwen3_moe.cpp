// Qwen3-MoE: Qwen3's attention and routed experts without shared ones. A layer is sparse when
// (l + 1) % decoder_sparse_step == 0 and it is not in mlp_only_layers; the others have a dense
// FFN of intermediate_size.

#include "models/families/families.hpp"
#include "models/families/parts.hpp"

namespace models::families {
namespace {

constexpr MoeKeys kQwen3Moe{"num_experts",         "num_experts_per_tok", "", "moe_intermediate_size", "",
                            "decoder_sparse_step", "mlp_only_layers",     ""};

void build_qwen3_moe(Fields& f, ModelSpec& s) {
  read_decoder(f, s);
  read_gqa(f, s, false);
  s.qk_norm = true;
  read_moe(f, s, kQwen3Moe);
}

}  // namespace

const ModelFamily& qwen3_moe() {
  static const ModelFamily family{"Qwen3-MoE (GQA with q/k norm, routed experts)",
                                  {"qwen3_moe"},
                                  {{"Qwen3MoeForCausalLM", "qwen3_moe"}},
                                  decoder_fields() + gqa_fields() + moe_fields(kQwen3Moe),
                                  build_qwen3_moe};
  return family;
}

}  // namespace models::families
