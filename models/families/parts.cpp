#include "models/families/parts.hpp"

#include <fmt/format.h>

#include <cmath>

#include "hw/config_error.hpp"
#include "models/run_limits.hpp"

namespace models::families {

using K = FieldKind;

std::vector<Field> operator+(std::vector<Field> a, const std::vector<Field>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<Field> decoder_fields() {
  return {{"num_hidden_layers", K::count, 1, double(kMaxLayers)},
          {"vocab_size", K::count, 1, kMaxVocab},
          {"intermediate_size", K::count, 1, kMaxWidth}};
}

void read_decoder(Fields& f, ModelSpec& s) {
  s.num_hidden_layers = f.count("num_hidden_layers");
  s.vocab_size = f.count("vocab_size");
  s.intermediate_size = f.count("intermediate_size");
  s.num_attention_heads = f.count("num_attention_heads");
}

std::vector<Field> gqa_fields() {
  return {{"num_key_value_heads", K::count, 1, double(kMaxHeads)},
          {"head_dim", K::count, 1, double(kMaxHeadDim), true},
          {"qkv_bias", K::flag, 0, 0, true, KeySchema::yaml},
          {"attention_bias", K::flag, 0, 0, true, KeySchema::hugging_face},
          {"tie_word_embeddings", K::flag, 0, 0, true}};
}

void read_gqa(Fields& f, ModelSpec& s, bool bias_by_default) {
  s.attention = AttentionKind::gqa;
  s.num_key_value_heads = f.count("num_key_value_heads");
  if (const auto d = f.maybe_count("head_dim")) {
    s.head_dim = *d;
  } else if (s.hidden_size % s.num_attention_heads == 0) {
    s.head_dim = s.hidden_size / s.num_attention_heads;  // Hugging Face's definition
  } else {
    throw hw::ConfigError(fmt::format("{}: missing required field 'head_dim' (hidden_size {} is not a multiple of "
                                      "num_attention_heads {})",
                                      f.map().where(), s.hidden_size, s.num_attention_heads),
                          f.map().site("head_dim"));
  }
  if (s.num_attention_heads % s.num_key_value_heads != 0) {
    f.fail("num_key_value_heads",
           fmt::format("{} does not divide num_attention_heads {}", s.num_key_value_heads, s.num_attention_heads));
  }
  s.qkv_bias = f.maybe_flag(f.yaml() ? "qkv_bias" : "attention_bias").value_or(bias_by_default);
  s.tie_word_embeddings = f.maybe_flag("tie_word_embeddings").value_or(false);
  s.rope_dim = s.head_dim;
}

std::vector<Field> partial_rotary_fields() {
  return {{"partial_rotary_factor", K::number, 0, 1, false, KeySchema::both, true}};
}

void read_partial_rotary(Fields& f, ModelSpec& s) {
  const double factor = f.number("partial_rotary_factor");
  const double rotary = static_cast<double>(s.head_dim) * factor;
  if (rotary != std::floor(rotary) || static_cast<std::uint64_t>(rotary) % 2 != 0) {
    f.fail("partial_rotary_factor",
           fmt::format("head_dim {} x {} = {} is not an even number of rotary elements", s.head_dim, factor, rotary));
  }
  s.rope_dim = static_cast<std::uint64_t>(rotary);
}

void read_layer_types(Fields& f, ModelSpec& s, const std::vector<std::string>& options) {
  const std::vector<std::string> words = f.text_list("layer_types", options);
  if (words.size() != s.num_hidden_layers) {
    f.fail("layer_types",
           fmt::format("lists {} layers, the model has {} (num_hidden_layers)", words.size(), s.num_hidden_layers));
  }
  s.layer_mixers.clear();
  for (const std::string& w : words) {
    s.layer_mixers.push_back(w == "sliding_attention"  ? LayerMixer::sliding_attention
                             : w == "linear_attention" ? LayerMixer::linear_attention
                                                       : LayerMixer::full_attention);
  }
}

std::vector<Field> mla_fields() {
  return {
      {"q_lora_rank", K::count_or_null, 1, kMaxWidth},        {"kv_lora_rank", K::count, 1, double(kMaxHeadDim)},
      {"qk_nope_head_dim", K::count, 1, double(kMaxHeadDim)}, {"qk_rope_head_dim", K::count, 1, double(kMaxHeadDim)},
      {"v_head_dim", K::count, 1, double(kMaxHeadDim)},       {"tie_word_embeddings", K::flag, 0, 0, true}};
}

void read_mla(Fields& f, ModelSpec& s) {
  s.attention = AttentionKind::mla;
  s.q_lora_rank = f.count_or_null("q_lora_rank");
  s.kv_lora_rank = f.count("kv_lora_rank");
  s.qk_nope_head_dim = f.count("qk_nope_head_dim");
  s.qk_rope_head_dim = f.count("qk_rope_head_dim");
  s.v_head_dim = f.count("v_head_dim");
  s.tie_word_embeddings = f.maybe_flag("tie_word_embeddings").value_or(false);
}

std::vector<Field> moe_fields(const MoeKeys& k) {
  std::vector<Field> out{{k.experts, K::count, 1, kMaxExperts},
                         {k.experts_per_token, K::count, 1, kMaxExperts},
                         {k.width, K::count, 1, kMaxWidth}};
  if (!k.shared_experts.empty()) out.push_back({k.shared_experts, K::count, 0, kMaxExperts});
  if (!k.first_dense.empty()) out.push_back({k.first_dense, K::count, 0, double(kMaxLayers)});
  if (!k.sparse_step.empty()) out.push_back({k.sparse_step, K::count, 1, double(kMaxLayers)});
  if (!k.dense_layers.empty()) out.push_back({k.dense_layers, K::count_list, 0, double(kMaxLayers - 1)});
  if (!k.scaling.empty()) out.push_back({k.scaling, K::number, 0, 1e6, false, KeySchema::both, true});
  return out;
}

void read_moe(Fields& f, ModelSpec& s, const MoeKeys& k) {
  MoeSpec moe;
  moe.n_routed_experts = f.count(k.experts);
  moe.num_experts_per_tok = f.count(k.experts_per_token);
  if (!k.shared_experts.empty()) moe.n_shared_experts = f.count(k.shared_experts);
  moe.moe_intermediate_size = f.count(k.width);
  if (!k.first_dense.empty()) moe.first_k_dense_replace = f.count(k.first_dense, s.num_hidden_layers);
  moe.routed_scaling_factor = k.scaling.empty() ? 1.0 : f.number(k.scaling);
  if (!k.sparse_step.empty()) moe.decoder_sparse_step = f.count(k.sparse_step);
  if (!k.dense_layers.empty()) {
    moe.mlp_only_layers = f.count_list(k.dense_layers);
    for (const std::uint64_t l : moe.mlp_only_layers) {
      if (l >= s.num_hidden_layers) {
        f.fail(k.dense_layers, fmt::format("layer {} is beyond the model's {} layers", l, s.num_hidden_layers));
      }
    }
  }
  if (moe.num_experts_per_tok > moe.n_routed_experts) {
    f.fail(k.experts_per_token,
           fmt::format("{} exceeds {} {}", moe.num_experts_per_tok, k.experts, moe.n_routed_experts));
  }
  s.moe = moe;
}

}  // namespace models::families
