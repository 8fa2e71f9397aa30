// ChatGLM2/3 and GLM-4 (chatglm): GQA and a dense FFN under ChatGLM's own config names.

#include <fmt/format.h>

#include "models/families/families.hpp"
#include "models/families/parts.hpp"
#include "models/run_limits.hpp"

namespace models::families {
namespace {

using K = FieldKind;

void build_chatglm(Fields& f, ModelSpec& s) {
  s.attention = AttentionKind::gqa;
  s.num_hidden_layers = f.count("num_layers");
  s.vocab_size = f.count("padded_vocab_size");
  s.intermediate_size = f.count("ffn_hidden_size");
  s.num_attention_heads = f.count("num_attention_heads");
  const bool grouped = f.flag("multi_query_attention");
  const std::uint64_t groups = f.count("multi_query_group_num");
  s.num_key_value_heads = grouped ? groups : s.num_attention_heads;
  s.head_dim = f.count("kv_channels");
  s.rope_dim = s.head_dim;
  s.qkv_bias = f.flag("add_qkv_bias");
  if (s.num_attention_heads % s.num_key_value_heads != 0) {
    f.fail("multi_query_group_num",
           fmt::format("{} does not divide num_attention_heads {}", s.num_key_value_heads, s.num_attention_heads));
  }
}

}  // namespace

const ModelFamily& chatglm() {
  static const ModelFamily family{"ChatGLM (GQA, dense)",
                                  {"chatglm"},
                                  {{"ChatGLMModel", "chatglm"}, {"ChatGLMForConditionalGeneration", "chatglm"}},
                                  {{"num_layers", K::count, 1, double(kMaxLayers)},
                                   {"padded_vocab_size", K::count, 1, kMaxVocab},
                                   {"ffn_hidden_size", K::count, 1, kMaxWidth},
                                   {"multi_query_attention", K::flag},
                                   {"multi_query_group_num", K::count, 1, double(kMaxHeads)},
                                   {"kv_channels", K::count, 1, double(kMaxHeadDim)},
                                   {"add_qkv_bias", K::flag}},
                                  build_chatglm};
  return family;
}

}  // namespace models::families
