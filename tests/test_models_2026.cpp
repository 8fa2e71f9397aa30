// The models of 2026 (issue 51): gpt-oss's sliding windows and sinks, Qwen3-Next's Gated DeltaNet
// layers. Byte counts, pairs and state sizes derived by hand in the comment above each check.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <string>

#include "api/simulation.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/config_error.hpp"
#include "models/attention_block.hpp"
#include "models/decoder_step.hpp"
#include "models/kv_cache.hpp"
#include "models/linear_attention_block.hpp"
#include "models/memory_footprint.hpp"
#include "models/model_spec.hpp"
#include "models/parallelism.hpp"
#include "serving/engine_state.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_models_2026 {

namespace {

using ops::OpKind;

std::string source(const std::string& path) { return std::string(G5SIM_TEST_SOURCE_DIR) + "/" + path; }

const models::ModelSpec& gpt_oss_20b() {
  static const models::ModelSpec m = models::load_model(source("configs/models/gpt-oss-20b.yaml"));
  return m;
}
const models::ModelSpec& gpt_oss_120b() {
  static const models::ModelSpec m = models::load_model(source("configs/models/gpt-oss-120b.yaml"));
  return m;
}
const models::ModelSpec& qwen3_next() {
  static const models::ModelSpec m = models::load_model(source("configs/models/qwen3-next-80b-a3b.yaml"));
  return m;
}

// The ops of `layer` of kind `kind` in a step's graph, in id order.
std::vector<const ops::OpNode*> ops_of(const ops::OpGraph& g, int layer, OpKind kind) {
  std::vector<const ops::OpNode*> out;
  for (ops::OpId v = 0; v < boost::num_vertices(g); ++v) {
    if (g[v].layer == layer && g[v].kind == kind) out.push_back(&g[v]);
  }
  return out;
}

ops::OpGraph step_graph(const models::ModelSpec& m, const models::Workload& w, std::uint64_t layers) {
  models::StepOptions options;
  options.layers = layers;
  return models::build_decoder_step(m, w, options);
}

// One group of `count` prompt chunks of q tokens after `history` cached ones.
models::Workload chunk(std::uint64_t count, std::uint64_t q, std::uint64_t history) {
  models::Workload w = models::make_workload(models::Phase::prefill, count, q, std::nullopt, models::KvFormat::bf16);
  w.groups = {models::SequenceGroup{count, q, history, false}};
  return w;
}

}  // namespace

TEST_CASE("gpt-oss and Qwen3-Next load with their layer layouts and the published parameter counts",
          "[models][families][2026]") {
  const models::ModelSpec& oss = gpt_oss_120b();
  // layer_types alternates sliding_attention (even layers) and full_attention (odd).
  CHECK(oss.layers_of(models::LayerMixer::sliding_attention) == 18);
  CHECK(oss.layers_of(models::LayerMixer::full_attention) == 18);
  CHECK(oss.mixer(0) == models::LayerMixer::sliding_attention);
  CHECK(oss.mixer(35) == models::LayerMixer::full_attention);
  CHECK(oss.sliding_window == 128);
  CHECK(oss.attention_sinks);
  CHECK(oss.quantised_experts_only);
  // gpt-oss-120b, H 2880, 36 layers, vocab 201,088, 64 q and 8 KV heads of 64, 128 experts of 2,880:
  //   embedding and head   2 x 201,088 x 2,880 = 1,158,266,880, final norm 2,880
  //   attention a layer    norm 2,880 + qkv 2,880 x 5,120 = 14,745,600 + its bias 5,120
  //                        + o 4,096 x 2,880 = 11,796,480 + sinks 64 = 26,550,144
  //   FFN a layer          norm 2,880 + router 2,880 x 128 = 368,640
  //                        + experts 128 x 3 x 2,880^2 = 3,185,049,600 = 3,185,421,120
  //   36 x 3,211,971,264 + 1,158,266,880 + 2,880 = 116,789,235,264 (the model card: 116.83B, which
  //   also counts the experts' and the router's biases)
  CHECK(models::parameter_count(oss) == 116'789'235'264);
  // gpt-oss-20b: 24 layers, 32 experts: FFN 2,880 + 92,160 + 32 x 24,883,200 = 796,357,440;
  //   24 x (26,550,144 + 796,357,440) + 1,158,269,760 = 20,908,051,776 (the card: 20.91B)
  CHECK(models::parameter_count(gpt_oss_20b()) == 20'908'051'776);

  const models::ModelSpec& next = qwen3_next();
  // full_attention_interval 4: layers 3, 7, ..., 47 are full attention.
  CHECK(next.layers_of(models::LayerMixer::linear_attention) == 36);
  CHECK(next.layers_of(models::LayerMixer::full_attention) == 12);
  CHECK(next.mixer(3) == models::LayerMixer::full_attention);
  CHECK(next.mixer(4) == models::LayerMixer::linear_attention);
  REQUIRE(next.linear_attention);
  CHECK(next.linear_attention->conv_dim() == 8192);  // 2 x 16 x 128 + 32 x 128
  CHECK(next.rope_dim == 64);                        // 256 x 0.25
  // Qwen3-Next-80B-A3B, H 2,048:
  //   embedding and head 2 x 151,936 x 2,048 = 622,329,856, final norm 2,048
  //   full attention     norm 2,048 + qkv 2,048 x (2 x 16 x 256 + 2 x 2 x 256) = 18,874,368
  //                      + o 4,096 x 2,048 = 8,388,608 + q/k norms 512 = 27,265,536
  //   Gated DeltaNet     norm 2,048 + in_proj_qkvz 2,048 x 12,288 = 25,165,824 + in_proj_ba
  //                      2,048 x 64 = 131,072 + conv 8,192 x 4 = 32,768 + A_log, dt_bias 64
  //                      + norm 128 + out_proj 4,096 x 2,048 = 8,388,608 = 33,720,512
  //   FFN                norm 2,048 + router 2,048 x 512 = 1,048,576 + shared 3 x 2,048 x 512 =
  //                      3,145,728 + experts 512 x 3 x 2,048 x 512 = 1,610,612,736 = 1,614,809,088
  //   12 x 27,265,536 + 36 x 33,720,512 + 48 x 1,614,809,088 + 622,331,904 = 79,674,292,992 (its
  //   card: 80B; the shared expert's one-column gate is not counted)
  CHECK(models::parameter_count(next) == 79'674'292'992);
}

TEST_CASE("a sliding-window layer reads min(window, history) tokens, a full one its whole history",
          "[models][2026][kv]") {
  const models::ModelSpec& m = gpt_oss_20b();
  // A token of one layer: 8 KV heads x 2 x 64 x 2 B = 2,048 B.
  CHECK(models::kv_bytes_per_token_per_layer(m, test_configs::decode(1, 2)) == 2048);
  // Below the window (2 sequences at 100): the sliding layer 0 reads it all, 2 x 100 x 2,048.
  CHECK(models::kv_read_bytes(m, test_configs::decode(2, 100), 1, 0) == 409'600);
  CHECK(models::kv_read_bytes(m, test_configs::decode(2, 100), 1, 1) == 409'600);
  // Above it (at 4,096): the sliding layer reads 2 x 128 x 2,048, the full one 2 x 4,096 x 2,048.
  CHECK(models::kv_read_bytes(m, test_configs::decode(2, 4096), 1, 0) == 524'288);
  CHECK(models::kv_read_bytes(m, test_configs::decode(2, 4096), 1, 1) == 16'777'216);

  // The step's ops say the same: kv_cache_read of layer 0 and 1, and fa2's pairs. fa2 FLOPs =
  // 2 x 64 heads x pairs x (64 + 64): sliding 2 x 128 pairs -> 4,194,304; full 2 x 4,096 -> 134,217,728.
  const ops::OpGraph g = step_graph(m, test_configs::decode(2, 4096), 2);
  REQUIRE(ops_of(g, 0, OpKind::kv_cache_read).size() == 1);
  CHECK(ops_of(g, 0, OpKind::kv_cache_read)[0]->kv_bytes == 524'288);
  CHECK(ops_of(g, 1, OpKind::kv_cache_read)[0]->kv_bytes == 16'777'216);
  CHECK(ops_of(g, 0, OpKind::fa2)[0]->flops == 4'194'304);
  CHECK(ops_of(g, 1, OpKind::fa2)[0]->flops == 134'217'728);

  // Simulated, the DDR bytes of the sliding layer's history read do not grow past the window.
  models::StepOptions one;
  one.layers = 1;
  const api::Simulation at_1k = api::simulate_step(test_configs::sg2262(), m, test_configs::decode(2, 1024), one, {});
  const api::Simulation at_8k = api::simulate_step(test_configs::sg2262(), m, test_configs::decode(2, 8192), one, {});
  CHECK(at_1k.timeline.op(OpKind::kv_cache_read).hbm_bytes == 524'288);
  CHECK(at_8k.timeline.op(OpKind::kv_cache_read).hbm_bytes == 524'288);
}

TEST_CASE("a sliding window's prefill attends its causal band, exactly", "[models][2026][prefill]") {
  const models::ModelSpec& m = gpt_oss_20b();
  // A 1,000-token prompt. Sliding layer 0: query t sees min(128, t + 1) keys,
  //   pairs = 128 x 129 / 2 + (1,000 - 128) x 128 = 8,256 + 111,616 = 119,872;
  // full layer 1: 1,000 x 1,001 / 2 = 500,500. FLOPs 2 x 64 x pairs x 128 = 16,384 x pairs.
  const models::Workload prompt =
      models::make_workload(models::Phase::prefill, 1, 1000, std::nullopt, models::KvFormat::bf16);
  const ops::OpGraph g = step_graph(m, prompt, 2);
  CHECK(ops_of(g, 0, OpKind::fa2)[0]->flops == 16'384ull * 119'872);
  CHECK(ops_of(g, 1, OpKind::fa2)[0]->flops == 16'384ull * 500'500);

  // A 200-token chunk after 300 cached tokens. Over itself: sum of min(128, t + 1) for t < 200 =
  // 8,256 + 72 x 128 = 17,472 pairs. Over its history: query t < 127 sees the last 127 - t of it
  // (300 >= 127): 127 + 126 + ... + 1 = 8,128 pairs, from the last 127 history tokens, read once:
  // 127 x 2,048 = 260,096 B. The full layer reads all 300: 614,400 B.
  const ops::OpGraph c = step_graph(m, chunk(1, 200, 300), 2);
  const auto fa2 = ops_of(c, 0, OpKind::fa2);
  REQUIRE(fa2.size() == 2);
  CHECK(fa2[0]->flops == 16'384ull * 17'472);
  CHECK(fa2[1]->flops == 16'384ull * 8'128);
  CHECK(models::kv_read_bytes(m, chunk(1, 200, 300), 1, 0) == 260'096);
  CHECK(models::kv_read_bytes(m, chunk(1, 200, 300), 1, 1) == 614'400);

  // Simulated: the sliding layer's prefill computes far less than the full one's (the band's
  // tiles only), and every op finishes.
  models::StepOptions two;
  two.layers = 2;
  const models::Workload long_prompt =
      models::make_workload(models::Phase::prefill, 1, 4096, std::nullopt, models::KvFormat::bf16);
  const api::Simulation r = api::simulate_step(test_configs::sg2262(), m, long_prompt, two, {});
  std::uint64_t sliding_ps = 0, full_ps = 0;
  for (const auto& t : r.timeline.ops) {
    if (t.kind == OpKind::fa2) (t.layer == 0 ? sliding_ps : full_ps) += t.end - t.start;
  }
  CHECK(sliding_ps > 0);
  CHECK(sliding_ps * 4 < full_ps);
}

TEST_CASE("a Gated DeltaNet layer reads and writes its state, whatever the context", "[models][2026][linear]") {
  const models::ModelSpec& m = qwen3_next();
  // Z = 32 value heads x 128 x 128 x 2 B + the convolution's 3 x 8,192 x 2 B
  //   = 1,048,576 + 49,152 = 1,097,728 B a sequence and layer (tp 1, bf16 state).
  CHECK(models::linear_state_bytes(m) == 1'097'728);
  // At tp 2: 16 value heads and 4,096 channels: 524,288 + 24,576.
  CHECK(models::linear_state_bytes(m, 2) == 548'864);
  // delta_rule of layer 0 (linear) for 4 decodes: a row per value head, 4 x 32 = 128 rows. A
  // sequence reads Z and its token's q, k, v, a, b: 2 x (2 x 2,048 + 4,096 + 64) = 16,512 B,
  // 1,114,240 B = 32 x 34,820; it writes Z and its output, 2 x 4,096: 1,105,920 = 32 x 34,560.
  for (const std::uint64_t ctx : {1000u, 60000u}) {
    INFO(ctx);
    const ops::OpGraph g = step_graph(m, test_configs::decode(4, ctx), 4);
    const auto rule = ops_of(g, 0, OpKind::delta_rule);
    REQUIRE(rule.size() == 1);
    const ops::VectorShape& v = rule[0]->vec();
    CHECK(v.rows == 128);
    CHECK(v.load_bytes_per_row(rule[0]->dtype) == 34'820);
    CHECK(v.store_bytes_per_row() == 34'560);
    CHECK(ops_of(g, 0, OpKind::kv_cache_read).empty());  // no history to read
    // Layer 3 is full attention: its history grows with the context, 4 x ctx x 2 x 2 x 256 x 2 B.
    CHECK(ops_of(g, 3, OpKind::kv_cache_read)[0]->kv_bytes == 4 * ctx * 2048);
  }
  // Simulated, the layer's DDR traffic for its state is the same at both contexts:
  // 4 x (1,114,240 + 1,105,920) = 8,880,640 B.
  models::StepOptions one;
  one.layers = 1;
  for (const std::uint64_t ctx : {1000u, 60000u}) {
    const api::Simulation r = api::simulate_step(test_configs::sg2262(), m, test_configs::decode(4, ctx), one, {});
    CHECK(r.timeline.op(OpKind::delta_rule).hbm_bytes == 8'880'640);
  }
  // A fresh prompt starts from a zero state: delta_rule writes it and reads nothing.
  const ops::OpGraph p =
      step_graph(m, models::make_workload(models::Phase::prefill, 2, 256, std::nullopt, models::KvFormat::bf16), 1);
  const auto state = ops_of(p, 0, OpKind::delta_rule);
  REQUIRE(state.size() == 1);
  CHECK(state[0]->vec().load_bytes_per_row(state[0]->dtype) == 0);
  CHECK(state[0]->vec().store_bytes_per_row() == 1'097'728 / 32);
  // Its chunked form: 2 prompts of 256 tokens = 8 chunks of 64, x 32 value heads = 256 matmul
  // groups; gdn_chunk_scores [64, 128] x [128, 128]: 2 x 256 x 64 x 128 x 128 = 536,870,912 FLOPs.
  const auto matmuls = ops_of(p, 0, OpKind::matmul);
  bool found = false;
  for (const ops::OpNode* n : matmuls) {
    if (n->name != "gdn_chunk_scores") continue;
    found = true;
    CHECK(n->flops == 536'870'912);
  }
  CHECK(found);
}

TEST_CASE("a hybrid's cache: full layers grow, windows cap, states stay", "[models][2026][kv]") {
  // gpt-oss-20b at tp 1: 12 full layers x 2,048 B a token; 12 sliding layers x 2,048 B for the
  // last 128 tokens. A sequence of 1,000 tokens: 12 x 2,048 x 1,000 + 12 x 2,048 x 128 =
  // 24,576,000 + 3,145,728 = 27,721,728 B.
  const models::Workload w = test_configs::decode(1, 1000);
  const models::KvGrowth g = models::kv_growth(gpt_oss_20b(), w, 1);
  CHECK(g.per_token == 24'576);
  CHECK(g.window_per_token == 24'576);
  CHECK(g.window == 128);
  CHECK(g.fixed == 0);
  CHECK(models::sequence_kv_bytes(gpt_oss_20b(), w, 1, 1000) == 27'721'728);
  // Qwen3-Next at tp 1: 12 full layers x 2 KV heads x 2 x 256 x 2 B = 24,576 B a token, and 36
  // states of 1,097,728 B = 39,518,208 B a sequence, whatever its length (docs/models_2026.md's
  // vLLM figure).
  const models::KvGrowth q = models::kv_growth(qwen3_next(), w, 1);
  CHECK(q.per_token == 24'576);
  CHECK(q.window_per_token == 0);
  CHECK(q.fixed == 39'518'208);
  CHECK(models::sequence_kv_bytes(qwen3_next(), w, 1, 1000) == 24'576'000 + 39'518'208);
  // The chip's footprint of 3 sequences at 1,000: the same, three times.
  CHECK(models::chip_footprint(qwen3_next(), test_configs::decode(3, 1000), models::Parallelism{1, 1, 1})
            .kv_cache_bytes == 3 * (24'576'000ull + 39'518'208));
}

TEST_CASE("the config.json readers: gpt-oss's layer_types and MXFP4 experts, Qwen3-Next's interval",
          "[models][families][2026]") {
  const auto gpt_oss_json = [](const std::string& layer_types) {
    return R"({"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
      "num_hidden_layers": 4, "vocab_size": 201088, "num_attention_heads": 64, "num_key_value_heads": 8,
      "head_dim": 64, "sliding_window": 128, "num_local_experts": 32, "num_experts_per_tok": 4,
      "intermediate_size": 2880, "layer_types": )" +
           layer_types + R"(, "quantization_config": {"quant_method": "mxfp4",
      "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                 "model.embed_tokens", "lm_head"]}})";
  };
  const std::string oss =
      gpt_oss_json(R"(["sliding_attention", "full_attention", "sliding_attention", "full_attention"])");
  const models::ModelSpec m = models::model_from_hf_json(oss, "oss");
  CHECK(m.weight_dtype == models::WeightDtype::mxfp4);
  CHECK(m.quantised_experts_only);
  CHECK(m.qkv_bias);  // GptOssConfig's attention_bias default
  CHECK(m.layers_of(models::LayerMixer::sliding_attention) == 2);
  // A layer_types of the wrong length, or a word the family does not know, names the key.
  CHECK_THROWS_WITH(models::model_from_hf_json(gpt_oss_json(R"(["sliding_attention", "full_attention"])"), "oss"),
                    Catch::Contains("layer_types") && Catch::Contains("lists 2 layers, the model has 4"));
  CHECK_THROWS_WITH(
      models::model_from_hf_json(
          gpt_oss_json(R"(["sliding_attention", "linear_attention", "sliding_attention", "full_attention"])"), "oss"),
      Catch::Contains("layer_types") && Catch::Contains("'linear_attention'"));

  const std::string next = R"({"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
    "hidden_size": 2048, "num_hidden_layers": 8, "vocab_size": 151936, "intermediate_size": 5120,
    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "num_experts": 512, "num_experts_per_tok": 10,
    "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512})";
  const models::ModelSpec n = models::model_from_hf_json(next, "next");
  // Absent: full_attention_interval 4, conv 4, rotary 0.25 and the state's element (class and
  // engine defaults, said as such).
  CHECK(n.mixer(3) == models::LayerMixer::full_attention);
  CHECK(n.mixer(7) == models::LayerMixer::full_attention);
  CHECK(n.layers_of(models::LayerMixer::linear_attention) == 6);
  CHECK(n.linear_attention->state_bytes == 2);
  CHECK(n.rope_dim == 64);
  const std::string taken = fmt::format("{}", fmt::join(n.class_defaults_taken, "; "));
  CHECK_THAT(taken, Catch::Contains("full_attention_interval = 4 (Qwen3NextConfig)"));
  CHECK_THAT(taken, Catch::Contains("mamba_ssm_dtype = bfloat16 (vLLM's mamba_ssm_cache_dtype auto)"));
  // A dimension it needs stays required, named with its source.
  std::string missing = next;
  const std::string key = "\"linear_key_head_dim\": 128,";
  missing.replace(missing.find(key), key.size(), "");
  CHECK_THROWS_WITH(models::model_from_hf_json(missing, "next"), Catch::Contains("linear_key_head_dim"));
}

TEST_CASE("Qwen3-Next shards its KV heads past tp = 2 by replicating them", "[models][2026][tp]") {
  const models::ModelSpec& m = qwen3_next();
  // 2 KV heads over tp 4: one a chip (each replicated on 2 chips): a token of a full layer is
  // 1 x 2 x 256 x 2 = 1,024 B on each chip, as at tp 2.
  CHECK(m.kv_heads_on_chip(4) == 1);
  CHECK(models::kv_bytes_per_token_per_layer(m, test_configs::decode(1, 2), 4) == 1024);
  CHECK_NOTHROW(models::validate_parallelism(models::Parallelism{4, 1, 1}, m, test_configs::decode(1, 2)));
  // tp 3 divides neither.
  CHECK_THROWS_WITH(models::validate_parallelism(models::Parallelism{3, 1, 1}, m, test_configs::decode(1, 2)),
                    Catch::Contains("num_attention_heads"));
}

TEST_CASE("a serve's blocks: windows and states take blocks of their own", "[models][2026][serving]") {
  // gpt-oss-20b: 24,576 B a token in the full layers (the unit), 24,576 B a token in the sliding
  // layers for the last 128. Blocks of 16 tokens (393,216 B):
  //   1,000 tokens: ceil(1,000 / 16) = 63, and ceil(24,576 x 128 / 393,216) = 8: 71
  //   100 tokens:   ceil(100 / 16) = 7, and ceil(24,576 x 100 / 393,216) = ceil(6.25) = 7: 14
  const serving::KvBlockPool oss(1000, 16, g5sim::KvGrowth{24'576, 24'576, 128, 0});
  CHECK(oss.blocks_for(1000) == 71);
  CHECK(oss.blocks_for(100) == 14);
  // Qwen3-Next: 24,576 B a token, 39,518,208 B of states a sequence: ceil(39,518,208 / 393,216) =
  // ceil(100.5) = 101 blocks beside ceil(1,000 / 16) = 63.
  const serving::KvBlockPool next(1000, 16, g5sim::KvGrowth{24'576, 0, 0, 39'518'208});
  CHECK(next.blocks_for(1000) == 164);
  CHECK(next.blocks_for(1) == 102);
  // A model of sliding layers alone: the window is the unit, 2,048 B a token for its last 128.
  const serving::KvBlockPool sliding(1000, 16, g5sim::KvGrowth{0, 2048, 128, 0});
  CHECK(sliding.blocks_for(100) == 7);
  CHECK(sliding.blocks_for(5000) == 8);
  // No growth given: a token is a token, as before.
  CHECK(serving::KvBlockPool(1000, 16, g5sim::KvGrowth{}).blocks_for(1000) == 63);

  // What a serve sizes for Qwen3-Next on SG2262 at tp 1 ep 2 dp 2.
  g5sim::Request step;
  step.tp = 1, step.ep = 2, step.dp = 2;
  const g5sim::ServingMemory mem =
      g5sim::serving_memory(g5sim::Chip::from_file(g5sim::shipped_chip_path()),
                            g5sim::Model::from_file(source("configs/models/qwen3-next-80b-a3b.yaml")), step);
  CHECK(mem.kv_bytes_per_token == 24'576);
  CHECK(mem.kv.fixed == 39'518'208);
  CHECK(mem.kv.bytes(1000) == 24'576'000 + 39'518'208);
}

}  // namespace test_models_2026
