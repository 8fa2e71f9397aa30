// MiniCPM (minicpm: MiniCPM 1/2 and MiniCPM4) and MiniCPM3 (minicpm3): muP-scaled models. MiniCPM
// has Llama's GQA layout; MiniCPM3 has MLA attention (q and KV low-rank, a value head of
// hidden_size / num_attention_heads, which its config.json leaves implicit) and a dense FFN. Both
// scale the embedding by scale_emb, each residual branch by scale_depth / sqrt(layers) and the
// final hidden state by dim_model_base / hidden_size: element-wise products fused into the
// embedding, the residual adds and the final norm, so the step's costs do not change; they are
// read (the config says them) and kept in the spec.

#include <fmt/format.h>

#include "models/families/families.hpp"
#include "models/families/parts.hpp"

namespace models::families {
namespace {

using K = FieldKind;

std::vector<Field> mup_fields() {
  return {{"scale_emb", K::number, 0, 1e6, false, KeySchema::both, true},
          {"scale_depth", K::number, 0, 1e6, false, KeySchema::both, true},
          {"dim_model_base", K::count, 1, kMaxWidth}};
}

void read_mup(Fields& f, ModelSpec& s) {
  MupScalars mup;
  mup.scale_emb = f.number("scale_emb");
  mup.scale_depth = f.number("scale_depth");
  mup.dim_model_base = f.count("dim_model_base");
  s.mup = mup;
}

void build_minicpm(Fields& f, ModelSpec& s) {
  read_decoder(f, s);
  read_gqa(f, s, false);
  read_mup(f, s);
}

// MiniCPM3's MLA without v_head_dim: the value head is hidden_size / num_attention_heads.
std::vector<Field> minicpm3_mla_fields() {
  return {
      {"q_lora_rank", K::count_or_null, 1, kMaxWidth},         {"kv_lora_rank", K::count, 1, double(kMaxHeadDim)},
      {"qk_nope_head_dim", K::count, 1, double(kMaxHeadDim)},  {"qk_rope_head_dim", K::count, 1, double(kMaxHeadDim)},
      {"num_key_value_heads", K::count, 1, double(kMaxHeads)}, {"tie_word_embeddings", K::flag, 0, 0, true}};
}

void build_minicpm3(Fields& f, ModelSpec& s) {
  read_decoder(f, s);
  s.attention = AttentionKind::mla;
  s.q_lora_rank = f.count_or_null("q_lora_rank");
  s.kv_lora_rank = f.count("kv_lora_rank");
  s.qk_nope_head_dim = f.count("qk_nope_head_dim");
  s.qk_rope_head_dim = f.count("qk_rope_head_dim");
  if (s.hidden_size % s.num_attention_heads != 0) {
    f.fail("num_attention_heads", fmt::format("{} does not divide hidden_size {} (the value head is their quotient)",
                                              s.num_attention_heads, s.hidden_size));
  }
  s.v_head_dim = s.hidden_size / s.num_attention_heads;
  // MLA has one latent KV for all heads; the config's KV head count (the heads' count, as
  // Hugging Face's code expands the cache) is read and must say so.
  if (const std::uint64_t kv = f.count("num_key_value_heads"); kv != s.num_attention_heads) {
    f.fail("num_key_value_heads", fmt::format("{} differs from num_attention_heads {}: MiniCPM3's MLA expands the "
                                              "latent cache to every head",
                                              kv, s.num_attention_heads));
  }
  s.tie_word_embeddings = f.maybe_flag("tie_word_embeddings").value_or(false);
  read_mup(f, s);
}

}  // namespace

const ModelFamily& minicpm() {
  static const ModelFamily family{"MiniCPM (GQA, muP scalars)",
                                  {"minicpm"},
                                  {{"MiniCPMForCausalLM", "minicpm"}},
                                  decoder_fields() + gqa_fields() + mup_fields(),
                                  build_minicpm};
  return family;
}

const ModelFamily& minicpm3() {
  static const ModelFamily family{"MiniCPM3 (MLA, dense, muP scalars)",
                                  {"minicpm3"},
                                  {{"MiniCPM3ForCausalLM", "minicpm3"}},
                                  decoder_fields() + minicpm3_mla_fields() + mup_fields(),
                                  build_minicpm3};
  return family;
}

}  // namespace models::families
