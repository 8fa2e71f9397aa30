// Qwen3 dense: Llama's layout with an RMSNorm on every q and k head before RoPE, and a head_dim
// of its own (Qwen3-8B: 32 heads of 128 in a hidden size of 4096; Qwen3-0.6B: 16 x 128 in 1024).

#include "models/families/families.hpp"
#include "models/families/parts.hpp"

namespace models::families {
namespace {

void build_qwen3(Fields& f, ModelSpec& s) {
  read_decoder(f, s);
  read_gqa(f, s, false);
  s.qk_norm = true;
}

}  // namespace

const ModelFamily& qwen3() {
  static const ModelFamily family{"Qwen3 (GQA with q/k norm, dense)",
                                  {"qwen3"},
                                  {{"Qwen3ForCausalLM", "qwen3"}},
                                  decoder_fields() + gqa_fields(),
                                  build_qwen3};
  return family;
}

}  // namespace models::families
