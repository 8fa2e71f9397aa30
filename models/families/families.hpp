#pragma once
// The built-in model families, one file each; models/model_family.cpp registers them.

#include "models/model_family.hpp"

namespace models::families {

const ModelFamily& deepseek();      ///< deepseek_v2, deepseek_v3 (Kimi-K2 too): MLA + MoE
const ModelFamily& deepseek_dsa();  ///< deepseek_v32: MLA + MoE + the DSA indexer
const ModelFamily& llama();         ///< llama, mistral, qwen2: GQA, dense
const ModelFamily& chatglm();       ///< chatglm: GQA under ChatGLM's names, dense
const ModelFamily& qwen3();         ///< qwen3: GQA with q/k norm, dense
const ModelFamily& qwen3_moe();     ///< qwen3_moe: GQA with q/k norm, routed experts
/// glm4_moe (GLM-4.5): GQA, q/k norm, partial rotary, shared + routed experts
const ModelFamily& glm4_moe();
const ModelFamily& minicpm();   ///< minicpm (MiniCPM4): GQA, dense, muP scalars
const ModelFamily& minicpm3();  ///< minicpm3: MLA, dense, muP scalars
/// gpt_oss: GQA with sinks, alternating sliding-window and full layers, routed experts
const ModelFamily& gpt_oss();
/// qwen3_next: Gated DeltaNet and gated full-attention layers, routed + shared experts
const ModelFamily& qwen3_next();

}  // namespace models::families
