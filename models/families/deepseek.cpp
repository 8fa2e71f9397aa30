// DeepSeek-V2/V3 (and models of their layout: Kimi-K2): MLA attention and a MoE FFN after
// first_k_dense_replace dense layers; V3.2 adds DSA's indexer.

#include "models/families/families.hpp"
#include "models/families/parts.hpp"
#include "models/run_limits.hpp"

namespace models::families {
namespace {

void build_deepseek(Fields& f, ModelSpec& s) {
  read_decoder(f, s);
  read_mla(f, s);
  read_moe(f, s, kDeepSeekMoe);
}

std::vector<Field> dsa_fields() {
  return {{"index_n_heads", FieldKind::count, 1, double(kMaxHeads)},
          {"index_head_dim", FieldKind::count, 1, double(kMaxHeadDim)},
          {"index_topk", FieldKind::count, 1, double(kMaxContext)}};
}

void build_dsa(Fields& f, ModelSpec& s) {
  build_deepseek(f, s);
  DsaSpec dsa;
  dsa.index_n_heads = f.count("index_n_heads");
  dsa.index_head_dim = f.count("index_head_dim");
  dsa.index_topk = f.count("index_topk");
  s.dsa = dsa;
}

}  // namespace

const ModelFamily& deepseek() {
  static const ModelFamily family{"DeepSeek (MLA + MoE)",
                                  // kimi_k2: Kimi-K2's config.json may say so; its layout is V3's.
                                  {"deepseek_v2", "deepseek_v3", "kimi_k2"},
                                  {{"DeepseekV2ForCausalLM", "deepseek_v2"}, {"DeepseekV3ForCausalLM", "deepseek_v3"}},
                                  decoder_fields() + mla_fields() + moe_fields(kDeepSeekMoe),
                                  build_deepseek};
  return family;
}

const ModelFamily& deepseek_dsa() {
  static const ModelFamily family{"DeepSeek-V3.2 (MLA + MoE + DSA)",
                                  {"deepseek_v32"},
                                  {{"DeepseekV32ForCausalLM", "deepseek_v32"}},
                                  decoder_fields() + mla_fields() + moe_fields(kDeepSeekMoe) + dsa_fields(),
                                  build_dsa};
  return family;
}

}  // namespace models::families
