// Llama, Mistral, Qwen2: GQA attention (MHA when the KV heads are the heads) and a dense FFN.
// Qwen2 has a bias on q, k and v; Llama's config says so in attention_bias.

#include "models/families/families.hpp"
#include "models/families/parts.hpp"

namespace models::families {
namespace {

void build_llama(Fields& f, ModelSpec& s) {
  read_decoder(f, s);
  read_gqa(f, s, s.model_type == "qwen2");
}

}  // namespace

const ModelFamily& llama() {
  static const ModelFamily family{
      "Llama (GQA, dense)",
      {"llama", "mistral", "qwen2"},
      {{"LlamaForCausalLM", "llama"}, {"MistralForCausalLM", "mistral"}, {"Qwen2ForCausalLM", "qwen2"}},
      decoder_fields() + gqa_fields(),
      build_llama};
  return family;
}

}  // namespace models::families
