// Model families as registered units (models/model_family.hpp): the new families load from their
// shipped YAML with the published parameter counts, run a decode and a prefill step, read a
// config.json by its architectures entry, and keep their schema in one declaration.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "g5sim/g5sim.hpp"
#include "hw/config_error.hpp"
#include "hw/input_file.hpp"
#include "models/model_family.hpp"
#include "models/model_spec.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_model_families {

namespace {

std::string source(const std::string& path) { return std::string(G5SIM_TEST_SOURCE_DIR) + "/" + path; }

g5sim::Model shipped(const std::string& name) { return g5sim::Model::from_file(source("configs/models/" + name)); }

std::string model_error(const std::string& yaml) {
  try {
    models::model_from_yaml(yaml, "m");
  } catch (const hw::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("every registered family has its own model types and architectures", "[models][families]") {
  std::set<std::string_view> types;
  for (const models::ModelFamily* f : models::model_families()) {
    INFO(f->name);
    for (std::string_view t : f->model_types) CHECK(types.insert(t).second);
    for (const auto& [architecture, type] : f->architectures) {
      CHECK(std::find(f->model_types.begin(), f->model_types.end(), type) != f->model_types.end());
    }
    CHECK(f->build != nullptr);
  }
}

TEST_CASE("the new families' parameter counts are the published ones", "[models][families]") {
  // Qwen3-8B (model card: 8.2B, 6.95B without embeddings): embeddings 2 x 151,936 x 4,096 =
  // 1,244,659,712 and the final norm 4,096; per layer norms 8,192, qkv 4,096 x 48 x 128 =
  // 25,165,824, o 16,777,216, q/k norms 256, FFN 3 x 4,096 x 12,288 = 150,994,944: 192,946,432
  // x 36 = 6,946,071,552.
  CHECK(shipped("qwen3-8b.yaml").parameter_count() == 8'190'735'360);
  // Qwen3-30B-A3B (30.5B, 29.9B without embeddings): embeddings 622,329,856 + 2,048; per layer
  // norms 4,096, qkv 2,048 x 40 x 128 = 10,485,760, o 8,388,608, q/k norms 256, router 262,144,
  // experts 128 x 3 x 2,048 x 768 = 603,979,776: 623,120,640 x 48 = 29,909,790,720.
  CHECK(shipped("qwen3-30b-a3b.yaml").parameter_count() == 30'532'122'624);
  // GLM-4.5 (355B with its MTP layer): embeddings 1,551,892,480 + 5,120; attention per layer
  // 136,339,712 (norms 10,240, qkv 73,400,320 + bias 14,336, o 62,914,560, q/k norms 256) x 92;
  // 3 dense FFNs of 188,743,680; 89 MoE FFNs of 3,799,285,760 (router 819,200, one shared
  // expert 23,592,960, 160 routed experts 3,774,873,600). The MTP layer (one more MoE layer and
  // its projection, ~4B) is not a step's, so 352.8B sits 0.6 % under the published 355B.
  const std::uint64_t glm = shipped("glm-4.5.yaml").parameter_count();
  CHECK(glm == 352'797'814'784);
  CHECK(glm > 0.99 * 355e9);
  // Kimi-K2 (published "1T"): DeepSeek-V3's layout with 384 experts; 60 MoE layers of
  // 16.96B dominate.
  const std::uint64_t kimi = shipped("kimi-k2.yaml").parameter_count();
  CHECK(kimi == 1'026'408'209'408);
  CHECK(shipped("kimi-k2.yaml").model_type() == "deepseek_v3");
  // MiniCPM3-4B (published 4B; tied embedding 73,448 x 2,560 = 188,026,880 + 2,560): per layer
  // norms 5,120, q_a 2,560 x 768 + its norm 768, q_b 768 x 40 x 96, kv_a 2,560 x 288 + its norm
  // 256, kv_b 256 x 40 x 128, o 40 x 64 x 2,560, FFN 3 x 2,560 x 6,400: 62,673,408 x 62.
  CHECK(shipped("minicpm3-4b.yaml").parameter_count() == 4'073'875'968);
  // MiniCPM4-8B (published 8B): embeddings 2 x 73,448 x 4,096 + 4,096; per layer norms 8,192,
  // qkv 4,096 x 36 x 128, o 16,777,216, FFN 3 x 4,096 x 16,384: 236,986,368 x 32.
  CHECK(shipped("minicpm4-8b.yaml").parameter_count() == 8'185'253'888);
}

TEST_CASE("the Qwen2.5 configs' parameter counts are the published ones", "[models][families]") {
  // Qwen2.5-7B (7,615,616,512 on its model page): untied embeddings 2 x 152,064 x 3,584 =
  // 1,089,994,752 and the final norm 3,584; per layer q 3,584 x 3,584 + bias 3,584 = 12,848,640,
  // k and v 3,584 x 512 + bias 512 = 1,835,520 each, o 12,845,056, FFN 3 x 3,584 x 18,944 =
  // 203,685,888, norms 7,168: 233,057,792 x 28 = 6,525,618,176.
  CHECK(shipped("qwen2.5-7b.yaml").parameter_count() == 7'615'616'512);
  // Qwen2.5-1.5B (1,543,714,304): one embedding tied to the output layer, 151,936 x 1,536 =
  // 233,373,696, and the final norm 1,536; per layer q 1,536 x 1,536 + 1,536 = 2,360,832, k and v
  // 1,536 x 256 + 256 = 393,472 each, o 2,359,296, FFN 3 x 1,536 x 8,960 = 41,287,680, norms
  // 3,072: 46,797,824 x 28 = 1,310,339,072.
  CHECK(shipped("qwen2.5-1.5b.yaml").parameter_count() == 1'543'714'304);
}

TEST_CASE("each new family runs a decode and a prefill step", "[models][families][step]") {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
  for (const char* name : {"qwen3-8b.yaml", "qwen3-30b-a3b.yaml", "glm-4.5.yaml", "kimi-k2.yaml", "minicpm3-4b.yaml",
                           "minicpm4-8b.yaml", "gpt-oss-20b.yaml", "qwen3-next-80b-a3b.yaml"}) {
    INFO(name);
    const g5sim::Model model = shipped(name);
    g5sim::Request decode;
    decode.batch = 8;
    decode.ctx = 4096;
    const g5sim::Result d = g5sim::simulate(chip, model, decode);
    CHECK(d.total_ps > 0);
    CHECK(d.layers == model.num_hidden_layers());
    g5sim::Request prefill;
    prefill.phase = "prefill";
    prefill.batch = 1;
    prefill.ctx = 1024;
    prefill.layers = 4;
    const g5sim::Result p = g5sim::simulate(chip, model, prefill);
    CHECK(p.total_ps > 0);
    // Qwen3-Next's q/k norm is on its 12 full-attention layers (its Gated DeltaNet ones have an
    // L2 norm of their own, qk_l2norm).
    const bool qk_norm = std::string(name).rfind("qwen3", 0) == 0 || std::string(name) == "glm-4.5.yaml";
    const long normed = std::string(name) == "qwen3-next-80b-a3b.yaml" ? 12 : static_cast<long>(d.layers);
    CHECK((std::count_if(d.ops.begin(), d.ops.end(), [](const g5sim::OpRecord& o) { return o.name == "qk_norm"; }) ==
           (qk_norm ? normed : 0)));
  }
}

TEST_CASE("GLM-4.5 rotates half of each head", "[models][families]") {
  const models::ModelSpec glm = models::load_model(source("configs/models/glm-4.5.yaml"));
  CHECK(glm.head_dim == 128);
  CHECK(glm.rope_dim == 64);  // 128 x partial_rotary_factor 0.5
  CHECK(glm.qkv_bias);
  CHECK(!glm.is_moe_layer(2));
  CHECK(glm.is_moe_layer(3));
  CHECK(model_error(R"(name: g
model_type: glm4_moe
hidden_size: 64
num_hidden_layers: 2
vocab_size: 100
intermediate_size: 128
num_attention_heads: 4
num_key_value_heads: 2
head_dim: 16
use_qk_norm: true
partial_rotary_factor: 0.3
n_routed_experts: 4
num_experts_per_tok: 2
n_shared_experts: 1
moe_intermediate_size: 32
first_k_dense_replace: 1
routed_scaling_factor: 1
)") == "<memory:m>:11:1: partial_rotary_factor: head_dim 16 x 0.3 = 4.8 is not an even number of rotary elements");
}

TEST_CASE("Qwen3-MoE's layer rule: decoder_sparse_step and mlp_only_layers", "[models][families]") {
  const std::string yaml = R"(name: q
model_type: qwen3_moe
hidden_size: 64
num_hidden_layers: 6
vocab_size: 100
intermediate_size: 128
num_attention_heads: 4
num_key_value_heads: 2
head_dim: 16
num_experts: 8
num_experts_per_tok: 2
moe_intermediate_size: 32
decoder_sparse_step: 2
mlp_only_layers: [3]
)";
  const models::ModelSpec m = models::model_from_yaml(yaml, "q");
  // Sparse when (l + 1) % 2 == 0 and l is not 3: layers 1 and 5.
  for (std::uint64_t l = 0; l < 6; ++l) CHECK(m.is_moe_layer(l) == (l == 1 || l == 5));
  CHECK(m.why_dense(0) == "decoder_sparse_step = 2");
  CHECK(m.why_dense(3) == "mlp_only_layers");
  CHECK(m.why_dense(5).empty());
  // The schema is the family's declaration: a key it does not declare is refused, listing them.
  CHECK(model_error(yaml + "shared_experts: 1\n") ==
        "<memory:m>:15:1: shared_experts: unknown key; valid keys: decoder_sparse_step, head_dim, hidden_size, "
        "intermediate_size, mlp_only_layers, model_type, moe_intermediate_size, name, num_attention_heads, "
        "num_experts, num_experts_per_tok, num_hidden_layers, num_key_value_heads, qkv_bias, quantised_layers, "
        "tie_word_embeddings, "
        "vocab_size, weight_dtype, weight_group_size");
  std::string beyond = yaml;
  beyond.replace(beyond.find("[3]"), 3, "[6]");
  CHECK(model_error(beyond) == "<memory:m>:14:1: mlp_only_layers: layer 6 is beyond the model's 6 layers");
}

TEST_CASE("a config.json without model_type is read by its architectures entry", "[models][families]") {
  const std::string body = R"("hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 100, "intermediate_size": 128,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16})";
  const models::ModelSpec q = models::model_from_hf_json(R"({"architectures": ["Qwen3ForCausalLM"], )" + body, "q");
  CHECK(q.model_type == "qwen3");
  CHECK(q.qk_norm);
  try {
    models::model_from_hf_json(R"({"architectures": ["SomethingElse"], )" + body, "x");
    FAIL("no error");
  } catch (const hw::ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("architectures: the config has no model_type, and no entry names a supported model") !=
          std::string::npos);
  }
}

TEST_CASE("MiniCPM3's value head is hidden_size / heads, and its KV heads must be its heads", "[models][families]") {
  const models::ModelSpec m = models::load_model(source("configs/models/minicpm3-4b.yaml"));
  CHECK(m.attention == models::AttentionKind::mla);
  CHECK(m.v_head_dim == 64);  // 2,560 / 40
  CHECK(!m.moe);
  REQUIRE(m.mup);
  CHECK(m.mup->scale_emb == 12);
  CHECK(m.mup->dim_model_base == 256);
  CHECK(m.latent_kv_elements() == 288);  // 256 + 32
  const std::string text = hw::read_input_file(source("configs/models/minicpm3-4b.yaml"));
  std::string grouped = text;
  grouped.replace(grouped.find("num_key_value_heads: 40"), 23, "num_key_value_heads: 8");
  CHECK(model_error(grouped).find("num_key_value_heads: 8 differs from num_attention_heads 40") != std::string::npos);
}

TEST_CASE("replay stays exact on the new families", "[models][families][replay]") {
  // The same JSON with and without layer replay, but for the replay line.
  auto without_replay_line = [](const std::string& json) {
    std::string out;
    for (std::size_t i = 0; i < json.size();) {
      const std::size_t end = std::min(json.find('\n', i), json.size());
      const std::string line = json.substr(i, end - i);
      if (line.find("\"replay\":") == std::string::npos) out += line + "\n";
      i = end + 1;
    }
    return out;
  };
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
  // gpt-oss repeats a unit of two layers (sliding, full), Qwen3-Next one of four (three Gated
  // DeltaNet, one full).
  for (const char* name :
       {"qwen3-30b-a3b.yaml", "glm-4.5.yaml", "minicpm3-4b.yaml", "gpt-oss-20b.yaml", "qwen3-next-80b-a3b.yaml"}) {
    INFO(name);
    g5sim::Request r;
    r.batch = 8;
    const g5sim::Result replayed = g5sim::simulate(chip, shipped(name), r);
    r.replay = false;
    const g5sim::Result full = g5sim::simulate(chip, shipped(name), r);
    CHECK(replayed.replayed_commands > 0);
    CHECK(replayed.total_ps == full.total_ps);
    CHECK(without_replay_line(replayed.json()) == without_replay_line(full.json()));
  }
}

TEST_CASE("a published config.json as it is: Qwen3-235B-A22B, every key Hugging Face writes", "[models][families]") {
  // The model card's config.json (Qwen/Qwen3-235B-A22B), keys that change nothing here included
  // (dropout, token ids, rope_theta, sliding window, router loss): 235B parameters, 22B active.
  const std::string config =
      R"json({"architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 12288, "max_position_embeddings": 40960, "max_window_layers": 94, "mlp_only_layers": [], "model_type": "qwen3_moe", "moe_intermediate_size": 1536, "norm_topk_prob": true, "num_attention_heads": 64, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 94, "num_key_value_heads": 4, "output_router_logits": false, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})json";
  const g5sim::Model m =
      g5sim::Model::from_document(config, "Qwen3-235B-A22B/config.json", g5sim::ModelSchema::hugging_face);
  // Embeddings 2 x 151,936 x 4,096 = 1,244,659,712 and the final norm 4,096; per layer norms
  // 8,192, qkv 4,096 x (64 + 8) x 128 = 37,748,736, o 33,554,432, q/k norms 256, router 524,288,
  // experts 128 x 3 x 4,096 x 1,536 = 2,415,919,104: 2,487,755,008 x 94 = 233,848,970,752.
  CHECK(m.parameter_count() == 235'093'634'560);
  CHECK(m.model_type() == "qwen3_moe");
  g5sim::Request r;
  r.batch = 8;
  const g5sim::Result step = g5sim::simulate(g5sim::Chip::from_file(g5sim::shipped_chip_path()), m, r);
  CHECK(step.layers == 94);
  CHECK(step.replayed_commands > 0);  // 94 identical MoE layers: one run
}

}  // namespace test_model_families
