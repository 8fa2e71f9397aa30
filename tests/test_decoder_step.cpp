// Whole decoder steps: KV cache byte counts, MoE routing, GQA baselines, structure.
#include <catch2/catch.hpp>

#include <sstream>

#include "api/report.hpp"
#include "api/simulation.hpp"
#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "models/attention_block.hpp"
#include "models/decoder_step.hpp"
#include "models/expert_routing.hpp"
#include "models/ffn_block.hpp"
#include "models/graph_helpers.hpp"
#include "models/kv_cache.hpp"
#include "models/memory_footprint.hpp"
#include "models/parallelism.hpp"
#include "models/run_limits.hpp"
#include "models/weight_format.hpp"
#include "ops/work_estimate.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_decoder_step {

namespace {

using models::KvFormat;
using models::Phase;
using ops::OpKind;

const hw::Chip& chip() { return test_configs::sg2262(); }

models::ModelSpec model(const std::string& yaml, const char* name) { return models::model_from_yaml(yaml, name); }

using test_configs::decode;

api::Simulation step(const models::ModelSpec& m, const models::Workload& w, std::uint64_t layers,
                     const models::ExpertLoad* load = nullptr) {
  models::StepOptions options;
  options.layers = layers;
  options.expert_load = load;
  return api::simulate_step(chip(), m, w, options, {});
}

// Sum of a kind's hbm_bytes over the ops of one layer.
std::uint64_t bytes_of(const ops::Timeline& tl, OpKind kind, int layer) {
  std::uint64_t sum = 0;
  for (const auto& t : tl.ops) {
    if (t.kind == kind && t.layer == layer) sum += t.hbm_bytes;
  }
  return sum;
}

// One sequence reading `history` cached tokens (a decode at that context).
models::Workload history_workload(std::uint64_t history) {
  models::Workload w;
  w.groups = {models::SequenceGroup{1, 1, history, true}};
  return w;
}

}  // namespace

TEST_CASE("KV cache bytes per token per layer match seeds 000 and 001", "[step][kv]") {
  const auto lite = model(test_configs::kDeepSeekV2Lite, "v2-lite");
  const auto v2 = model(test_configs::kDeepSeekV2, "v2");
  // V2-Lite, BF16, absorb: (512 + 64) x 2 = 1,152 B per token per layer.
  CHECK(models::kv_read_bytes(lite, history_workload(1)) == 1152);
  // Seed 000: 26 active tokens -> 26 x 1,152 = 29,952 B; a 32-slot buffer -> 32 x 1,152 = 36,864 B.
  CHECK(models::kv_read_bytes(lite, history_workload(26)) == 29'952);
  CHECK(models::kv_read_bytes(lite, history_workload(32)) == 36'864);
  // Seed 001, DeepSeek-V2: MLA 1,152 B (the MHA-equivalent 2 x 128 heads x 128 x 2 B = 65,536 B is
  // simulated in test_mla_decode's ratio test); 60 layers x 32,768 tokens x 1,152 B = 2,264,924,160 B.
  CHECK(models::kv_read_bytes(v2, history_workload(1)) == 1152);
  CHECK(models::kv_read_bytes(v2, history_workload(32'768)) * v2.num_hidden_layers == 2'264'924'160);
}

TEST_CASE("uniform routing reads the expected number of distinct experts", "[step][moe]") {
  // E = 256, k = 8. T = 1: 256 (1 - (248/256)^1) = 8 exactly. T = 2: 256 (1 - (31/32)^2) = 15.75 -> 16.
  // T = 32: 256 (1 - (31/32)^32) = 163.31 -> 163.
  CHECK(models::uniform_routing(256, 8, 1).experts.size() == 8);
  CHECK(models::uniform_routing(256, 8, 2).experts.size() == 16);
  CHECK(models::uniform_routing(256, 8, 32).experts.size() == 163);
  // 32 x 8 = 256 token slots over 163 experts: 93 experts get 2 and 70 get 1 (93*2 + 70 = 256).
  const auto a = models::uniform_routing(256, 8, 32);
  CHECK(a.tokens.front() == 2);
  CHECK(a.tokens.back() == 1);
  std::uint64_t slots = 0;
  for (auto t : a.tokens) slots += t;
  CHECK(slots == 256);

  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  // One expert = gate, up and down: 3 x 7168 x 2048 x 2 B = 88,080,384 B.
  CHECK(models::expert_weight_bytes(v3, 1, 2048) == 88'080'384);
  // DeepSeek-V3, 4 layers (layer 3 is the first MoE layer), decode B = 1: 8 x 88,080,384 = 704,643,072 B.
  const auto b1 = step(v3, decode(1, 1024), 4);
  CHECK(bytes_of(b1.timeline, OpKind::expert_weights, 3) == 704'643'072);
  // B = 32: 163 x 88,080,384 = 14,357,102,592 B.
  const auto b32 = step(v3, decode(32, 1024), 4);
  CHECK(bytes_of(b32.timeline, OpKind::expert_weights, 3) == 14'357'102'592);
}

TEST_CASE("a measured expert load reads exactly the listed experts, and shared experts always run", "[step][moe]") {
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  // B = 1 decode routes 1 x 8 = 8 slots. Layer 3: expert 5 gets 3, expert 17 gets 5, expert 200 none.
  const auto load = models::ExpertLoad::from_csv_text("layer,expert,tokens\n3,5,3\n3,17,5\n3,200,0\n", "load.csv");
  const auto r = step(v3, decode(1, 1024), 4, &load);
  // Two experts read: 2 x 88,080,384 = 176,160,768 B.
  CHECK(bytes_of(r.timeline, OpKind::expert_weights, 3) == 176'160'768);
  // The expert matmuls have one group per listed expert, with its own rows.
  for (ops::OpId v = 0; v < boost::num_vertices(r.graph); ++v) {
    if (r.graph[v].name == "experts_gate_up" && r.graph[v].layer == 3) {
      CHECK(r.graph[v].mm().group_rows == std::vector<std::uint64_t>{3, 5});
    }
  }
  // The shared expert (1 x 2048 wide) runs in every MoE layer. Its gate_up, [1, 7168] x [7168, 4096]
  // over 64 cores: 2 column cells of 2,048 x 32 k-ranges of 224 (split-K). The weights
  // 7168 x 4096 x 2 = 58,720,256 B once, the 14,336 B token row once per cell (28,672), the fp32
  // partials out and back in (64 x 2,048 x 4 = 524,288 B each way) and the 4096 x 2 = 8,192 B
  // output: 59,805,696 B.
  std::size_t shared = 0;
  for (const auto& t : r.timeline.ops) {
    if (t.name == "shared_gate_up") {
      ++shared;
      CHECK(t.hbm_bytes == 59'805'696);
    }
  }
  CHECK(shared == 1);

  SECTION("a layer whose tokens do not add up to T x k is rejected") {
    const auto bad = models::ExpertLoad::from_csv_text("layer,expert,tokens\n3,5,3\n", "bad.csv");
    CHECK_THROWS_WITH(step(v3, decode(1, 1024), 4, &bad),
                      "bad.csv:2: layer 3 routes 3 token slots, but this step routes 1 tokens x 8 experts = 8");
  }
  SECTION("a dense layer cannot be listed") {
    const auto bad = models::ExpertLoad::from_csv_text("layer,expert,tokens\n0,5,8\n", "dense.csv");
    CHECK_THROWS_WITH(step(v3, decode(1, 1024), 4, &bad),
                      "dense.csv:2: layer 0 is a dense layer (first_k_dense_replace = 3)");
  }
  SECTION("malformed files") {
    CHECK_THROWS_WITH(models::ExpertLoad::from_csv_text("layer,expert\n", "h.csv"),
                      "h.csv:1: expected the header 'layer,expert,tokens' (counts) or 'layer,expert,share' (weights "
                      "that scale with the batch), got 'layer,expert'");
    CHECK_THROWS_WITH(
        models::ExpertLoad::from_csv_text("layer,expert,share\n3,1,0.1234567891\n", "s.csv"),
        "s.csv:2: share: '0.1234567891' is not a non-negative decimal below 10^9 with at most 9 decimals");
    CHECK_THROWS_WITH(models::ExpertLoad::from_csv_text("layer,expert,share\n3,1,-1\n", "s.csv"),
                      Catch::Contains("s.csv:2: share: '-1' is not"));
    CHECK_THROWS_WITH(models::ExpertLoad::from_csv_text("layer,expert,tokens\n3,x,1\n", "x.csv"),
                      "x.csv:2: expert: expected a whole number, got 'x'");
  }
}

TEST_CASE("expert shares scale with the batch, apportioned exactly", "[step][moe]") {
  // Shares 0.5, 0.3, 0.2 of layer 3 (weights; they need not sum to 1: 5, 3, 2 is the same).
  const auto shares = models::ExpertLoad::from_csv_text("layer,expert,share\n3,5,0.5\n3,17,0.3\n3,200,0.2\n", "s.csv");
  const auto same = models::ExpertLoad::from_csv_text("layer,expert,share\n3,5,5\n3,17,3\n3,200,2\n", "w.csv");
  // T = 1, k = 8: 8 slots. Whole parts 4, 2.4 -> 2, 1.6 -> 1 (7 given); the one left goes to the
  // largest remainder, expert 200's 0.6 over expert 17's 0.4: 4, 2, 2.
  const auto one = shares.for_step(1, 8);
  CHECK(one.layer(3)->experts == std::vector<std::uint64_t>{5, 17, 200});
  CHECK(one.layer(3)->tokens == std::vector<std::uint64_t>{4, 2, 2});
  CHECK(same.for_step(1, 8).layer(3)->tokens == one.layer(3)->tokens);
  // T = 64: 512 slots, 256, 153.6 -> 153, 102.4 -> 102 (511); the last to expert 17 (0.6): 256, 154, 102.
  CHECK(shares.for_step(64, 8).layer(3)->tokens == std::vector<std::uint64_t>{256, 154, 102});
  // T = 1, k = 1 with shares 0.5, 0.3, 0.2: whole parts 0, 0, 0; the slot goes to expert 5 (0.5), and
  // the experts left with 0 slots are not touched.
  const auto single = shares.for_step(1, 1);
  CHECK(single.layer(3)->experts == std::vector<std::uint64_t>{5});
  CHECK(single.layer(3)->tokens == std::vector<std::uint64_t>{1});
  // A whole step: the scaled load passes validate and reads the touched experts' weights.
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  const auto r = step(v3, decode(1, 1024), 4, &shares);
  // Three experts touched at T = 1: 3 x 88,080,384 = 264,241,152 B.
  CHECK(bytes_of(r.timeline, OpKind::expert_weights, 3) == 264'241'152);
  CHECK_THROWS_WITH(models::ExpertLoad::from_csv_text("layer,expert,share\n3,5,0\n", "z.csv").for_step(1, 8),
                    "z.csv:2: layer 3: its shares are all 0");
}

TEST_CASE("a decoder step has every op of every layer, in order", "[step][structure]") {
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  const auto r = step(v3, decode(1, 1024), 4);
  // embedding + 4 attention blocks (14 decode ops each) + 3 dense FFNs (norm, gate_up, swiglu,
  // down) + 1 MoE FFN (norm, router, topk, expert_weights, experts gate_up/swiglu/down, combine,
  // shared gate_up/swiglu/down) + final_norm + lm_head = 1 + 56 + 12 + 11 + 2 = 82.
  CHECK(r.timeline.ops.size() == 82);
  CHECK(r.timeline.ops.front().name == "embedding");
  CHECK(r.timeline.ops.front().layer == -1);
  CHECK(r.timeline.ops.back().name == "lm_head");
  // lm_head [1, 7168] x [7168, 129280]: 2 x 7168 x 129280 = 1,853,358,080 FLOPs.
  CHECK(r.timeline.ops.back().flops == 1'853'358'080);
  // Layers run in order: each layer's attn_norm starts after the previous layer's last op ends.
  sim::Tick previous_end = 0;
  int layer = -1;
  for (const auto& t : r.timeline.ops) {
    if (t.name == "attn_norm") {
      CHECK(t.layer == layer + 1);
      CHECK(t.start >= previous_end);
      layer = t.layer;
    }
    if (t.name == "mlp_down" || t.name == "moe_combine") previous_end = t.end;
  }
  CHECK(layer == 3);
  CHECK_THROWS_WITH(step(v3, decode(1, 1024), 62), "expected 1..61 (DeepSeek-V3-test has 61 layers), got 62");
}

TEST_CASE("GQA baseline: KV read bytes and attention FLOPs", "[step][gqa]") {
  const auto llama = model(test_configs::kLlama70b, "llama");
  const auto w = decode(2, 1000);
  // 2 x 1000 tokens x (2 x 8 KV heads x 128) x 2 B = 8,192,000 B per layer.
  CHECK(models::kv_read_bytes(llama, w) == 8'192'000);
  const auto r = api::simulate_block(chip(), llama, w, {});
  CHECK(r.timeline.op(OpKind::kv_cache_read).hbm_bytes == 8'192'000);
  // fa2: 2 x B x q x 64 heads x 1000 x (128 + 128) = 65,536,000 FLOPs.
  CHECK(r.timeline.op(OpKind::fa2).flops == 65'536'000);
  CHECK(r.timeline.op(OpKind::fa2).kv_bytes == 8'192'000);
  // Prefill has no history read.
  const auto p = api::simulate_block(chip(), llama,
                                     models::make_workload(Phase::prefill, 1, 256, std::nullopt, KvFormat::bf16), {});
  CHECK(p.timeline.find(OpKind::kv_cache_read) == nullptr);
}

TEST_CASE("a whole step gives byte-identical JSON twice", "[step][determinism]") {
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  const auto w = decode(3, 2000, KvFormat::fp8);
  ops::LoweringOptions opts;
  const api::RunDescription d{chip(), v3, w, opts, api::Scope::step, 5};
  std::ostringstream a, b;
  api::write_json(a, d, step(v3, w, 5).timeline);
  api::write_json(b, d, step(v3, w, 5).timeline);
  CHECK(a.str() == b.str());
  CHECK(a.str().find("\"kind\": \"expert_weights\"") != std::string::npos);
  CHECK(a.str().find("\"layer\": 4") != std::string::npos);
}

TEST_CASE("MLA cache modes and KV formats: bytes per token per layer", "[step][modes]") {
  const auto lite = model(test_configs::kDeepSeekV2Lite, "v2-lite");
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  auto per_token = [](const models::ModelSpec& m, models::MlaMode mode, KvFormat f) {
    models::Workload w = history_workload(2);
    w.kv_format = f;
    w.mla_mode = mode;
    return models::kv_bytes_per_token_per_layer(m, w);
  };
  // V2-Lite BF16: absorb (512 + 64) x 2 = 1,152; expanded 16 heads x (128 + 64 + 128) x 2 = 10,240
  // (seed 000: 5,120 elements). Ratio 10,240 / 1,152 = 80/9 = 8.888...
  CHECK(per_token(lite, models::MlaMode::absorb, KvFormat::bf16) == 1152);
  CHECK(per_token(lite, models::MlaMode::standard, KvFormat::bf16) == 1152);
  CHECK(per_token(lite, models::MlaMode::expanded, KvFormat::bf16) == 10'240);
  CHECK(per_token(lite, models::MlaMode::expanded, KvFormat::bf16) * 9 ==
        per_token(lite, models::MlaMode::absorb, KvFormat::bf16) * 80);
  // 26 tokens: 29,952 vs 266,240; a 32-slot buffer: 36,864 vs 327,680 (seed 000).
  CHECK(26 * per_token(lite, models::MlaMode::expanded, KvFormat::bf16) == 266'240);
  CHECK(32 * per_token(lite, models::MlaMode::expanded, KvFormat::bf16) == 327'680);
  // DeepSeek-V3: fp8 as seed 003 counts it, (512 + 64) x 1 = 576; FlashMLA's layout
  // 512 fp8 + 4 fp32 scales + 64 bf16 = 512 + 16 + 128 = 656.
  CHECK(per_token(v3, models::MlaMode::absorb, KvFormat::fp8) == 576);
  CHECK(per_token(v3, models::MlaMode::absorb, KvFormat::fp8_flashmla) == 656);
  CHECK_THROWS_WITH(per_token(v3, models::MlaMode::expanded, KvFormat::fp8_flashmla),
                    Catch::Contains("fp8-flashmla is FlashMLA's layout of the MLA latent"));
  // The decode history read moves exactly that many bytes per token: 4096 x 656 = 2,686,976.
  const auto r = api::simulate_block(chip(), v3, decode(1, 4096, KvFormat::fp8_flashmla), {});
  CHECK(r.timeline.op(OpKind::kv_cache_read).hbm_bytes == 2'686'976);
  // Microscaled latents, packed along the 576 elements with a scale byte per block: mxfp8 576 +
  // 18 = 594, mxfp6 432 + 18 = 450, mxfp4 288 + 18 = 306, nvfp4 288 + 36 = 324 bytes.
  CHECK(per_token(v3, models::MlaMode::absorb, KvFormat::mxfp8) == 594);
  CHECK(per_token(v3, models::MlaMode::absorb, KvFormat::mxfp6) == 450);
  CHECK(per_token(v3, models::MlaMode::absorb, KvFormat::mxfp4) == 306);
  CHECK(per_token(v3, models::MlaMode::absorb, KvFormat::nvfp4) == 324);
  // Per head of the expanded cache (320 elements, 128 heads): mxfp4 160 + 10 = 170 bytes a head.
  CHECK(per_token(v3, models::MlaMode::expanded, KvFormat::mxfp4) == 128 * 170);
  // The decode history read: 4096 x 306 = 1,253,376 bytes.
  CHECK(api::simulate_block(chip(), v3, decode(1, 4096, KvFormat::mxfp4), {})
            .timeline.op(OpKind::kv_cache_read)
            .hbm_bytes == 1'253'376);
  CHECK(models::parse_kv_format("nvfp4") == KvFormat::nvfp4);
  CHECK(models::name_of(KvFormat::mxfp6) == "mxfp6");
  // Expanded cache, V3 bf16: 4096 x 128 x 320 x 2 = 335,544,320 bytes, read once.
  auto expanded = decode(1, 4096);
  expanded.mla_mode = models::MlaMode::expanded;
  CHECK(api::simulate_block(chip(), v3, expanded, {}).timeline.op(OpKind::kv_cache_read).hbm_bytes == 335'544'320);
}

TEST_CASE("attention FLOPs: absorb matches the einsum count, standard grows linearly with kv_len", "[step][modes]") {
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  // Absorb, per query token per layer: 2 n_h (d_c + d_rope + d_c) kv_len = 2 x 128 x 1088 x 4096
  // = 1,140,850,688 FLOPs.
  CHECK(api::simulate_block(chip(), v3, decode(1, 4096), {}).timeline.op(OpKind::fa2).flops == 1'140'850'688);
  // Standard: the block's FLOPs are a + b kv_len (the history up-projection 2 d_c n (d_n + d_v) and
  // the MHA 2 n (192 + 128) per history token), so equal steps in kv_len add equal FLOPs.
  std::vector<std::uint64_t> flops;
  for (std::uint64_t kv : {1024, 2048, 3072}) {
    auto w = decode(1, kv);
    w.mla_mode = models::MlaMode::standard;
    flops.push_back(api::simulate_block(chip(), v3, w, {}).timeline.flops);
  }
  // Per history token: 2 x 512 x 128 x 256 + 2 x 128 x 320 = 33,554,432 + 81,920 = 33,636,352.
  CHECK(flops[1] - flops[0] == 1024 * 33'636'352ull);
  CHECK(flops[2] - flops[1] == 1024 * 33'636'352ull);
  // Standard mode's history feeds the up-projection, so the SDMA route does not apply.
  auto w = decode(1, 1024);
  w.mla_mode = models::MlaMode::standard;
  ops::LoweringOptions sdma;
  sdma.kv_read_engine = "sdma";
  CHECK_THROWS_WITH(api::simulate_block(chip(), v3, w, sdma),
                    "sdma keeps the history resident for fa2, but with mla_mode standard the history feeds the "
                    "up-projection; read it with a kv_stream engine (gdma)");
}

TEST_CASE("memory footprint: DeepSeek-V3 has 671,026,404,352 parameters", "[step][memory]") {
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  // embedding + lm_head 2 x 129280 x 7168 = 1,853,358,080; final norm 7,168.
  // Attention per layer: q_a 7168 x 1536 + 1536 (norm) + q_b 1536 x 128 x 192 + kv_a 7168 x 576
  //   + 512 (norm) + kv_b 512 x 128 x 256 + o 128 x 128 x 7168 = 187,107,328; two norms 14,336.
  // Dense FFN 3 x 7168 x 18432 = 396,361,728. MoE FFN: router 7168 x 256 + shared 3 x 7168 x 2048
  //   + 256 routed x 3 x 7168 x 2048 = 11,320,164,352.
  // 3 dense layers 3 x 583,483,392 + 58 MoE layers 58 x 11,507,286,016 + 1,853,365,248
  //   = 671,026,404,352 parameters (DeepSeek's 671B), x 2 bytes in bf16.
  const auto one_chip = models::chip_footprint(v3, decode(1, 4096), models::Parallelism{});
  CHECK(one_chip.weight_bytes == 1'342'052'808'704);
  // KV cache: 1 x 4096 tokens x 61 layers x 1,152 B = 287,834,112.
  CHECK(one_chip.kv_cache_bytes == 287'834'112);
  // With ep 16 each chip keeps 16 of the 256 routed experts: 240 x 58 x 3 x 7168 x 2048 params fewer.
  const auto ep16 = models::chip_footprint(v3, decode(16, 4096), models::Parallelism{1, 16, 16});
  CHECK(ep16.weight_bytes == 1'342'052'808'704 - 2ull * 240 * 58 * 44'040'192);
  // The smallest dp = ep sharding fitting 128 GiB is 16 (8 would hold 32 experts per layer: 163 GB).
  const auto chosen = models::auto_sharding(v3, decode(1, 4096), false, 137'438'953'472);
  CHECK(chosen.parallelism.dp == 16);
  CHECK(chosen.parallelism.ep == 16);
  CHECK(chosen.parallelism.tp == 1);
  CHECK(chosen.batch == 16);
}

TEST_CASE("sharding: collectives over the C2C links, and splits that must divide", "[step][sharding]") {
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  models::StepOptions options;
  options.layers = 4;
  options.parallelism = models::Parallelism{2, 8, 4};
  const auto r = api::simulate_step(chip(), v3, decode(4, 4096), options, {});
  std::uint64_t reduces = 0, a2a = 0;
  for (const auto& t : r.timeline.ops) {
    if (t.kind == OpKind::all_reduce) {
      ++reduces;
      // One token (4 sequences / dp 4) of 7168 bf16: S = 14,336 B; a ring over 2 chips sends
      // 2 (2 - 1) steps of 14,336 / 2 = 7,168 B.
      CHECK(t.c2c_bytes == 14'336);
      CHECK(t.commands[test_configs::engine::cdma] == 2);
    }
    if (t.kind == OpKind::all_to_all) {
      ++a2a;
      // ep 8 > tp 2: this chip sends its token's 8 slots of 7168 x 2 B, 7/8 of them away, split
      // over its 2 TP ranks: 1 x 8 x 14,336 x 7 / 8 / 2 = 50,176 B in 7 steps of 7,168 B.
      CHECK(t.c2c_bytes == 50'176);
    }
  }
  // All-reduce after each attention and each FFN: 4 layers x 2; dispatch and combine in the
  // one MoE layer (layer 3).
  CHECK(reduces == 8);
  CHECK(a2a == 2);
  // With fp8 weights the dispatch carries fp8 tokens and an fp32 scale per 128: 7168 + 4 x 56 =
  // 7,392 B a slot, 8 x 7,392 x 7 / 8 / 2 = 25,872 B; the combine returns bf16, 50,176 B as above.
  auto fp8 = decode(4, 4096);
  fp8.weight_dtype = models::WeightDtype::fp8;
  const auto q = api::simulate_step(chip(), v3, fp8, options, {});
  CHECK(q.timeline.op(OpKind::all_to_all).c2c_bytes == 25'872);  // the first: the dispatch
  bool combine_seen = false;
  for (const auto& t : q.timeline.ops) {
    if (t.kind == OpKind::all_to_all && t.name == "moe_combine_a2a") {
      CHECK(t.c2c_bytes == 50'176);
      combine_seen = true;
    }
  }
  CHECK(combine_seen);
  // 128 heads over tp 2: q_absorb has 64 groups.
  for (ops::OpId v = 0; v < boost::num_vertices(r.graph); ++v) {
    if (r.graph[v].name == "q_absorb") CHECK(r.graph[v].mm().groups == 64);
  }

  auto fails = [&](models::Parallelism p, std::uint64_t batch, const char* message) {
    models::StepOptions o;
    o.layers = 1;
    o.parallelism = p;
    CHECK_THROWS_WITH(api::simulate_step(chip(), v3, decode(batch, 1024), o, {}), message);
  };
  fails({3, 1, 1}, 1, "tensor-parallel degree tp = 3 does not divide num_attention_heads (128)");
  fails({1, 512, 512}, 512,
        "expert-parallel degree ep = 512 exceeds n_routed_experts (256): every EP rank holds an expert");
  // An EP degree that does not divide the experts (SGLang's EP72 over 256): the simulated chip
  // is one of the fullest ranks, ceil(256 / 72) = 4 experts (ceil(256 / 3) = 86 here), with
  // that share of the slots: 3 tokens x 8 = 24 slots x 86 / 256 = 8.06 -> 9.
  CHECK(models::experts_per_rank(256, 72) == 4);
  CHECK(models::experts_per_rank(256, 3) == 86);
  const models::ExpertAssignment uneven = models::uniform_routing(256, 8, 3, 3);
  std::uint64_t slots = 0;
  for (std::uint64_t t : uneven.tokens) slots += t;
  CHECK(slots == 9);
  {
    models::StepOptions o;
    o.layers = 4;
    o.parallelism = models::Parallelism{1, 3, 3};
    CHECK_NOTHROW(api::simulate_step(chip(), v3, decode(3, 1024), o, {}));
  }
  fails({1, 1, 4}, 6, "data-parallel degree dp = 4 does not divide the batch (6)");
  fails({1, 8, 4}, 4, "expert-parallel degree ep = 8 does not divide the chips (tp x dp) (4)");
}

TEST_CASE("DSA: the gather is flat beyond index_topk while the indexer read grows", "[step][dsa]") {
  std::string text = test_configs::kDeepSeekV3;
  text.replace(text.find("deepseek_v3"), 11, "deepseek_v32");
  text += "index_n_heads: 64\nindex_head_dim: 128\nindex_topk: 2048\n";
  const auto v32 = model(text, "v32");
  auto run = [&](std::uint64_t kv) { return api::simulate_block(chip(), v32, decode(1, kv), {}); };
  // kv_len <= topk: the gathered latent rows are the dense read, 1024 x 1152 = 1,179,648 B.
  const auto small = run(1024);
  CHECK(small.timeline.op(OpKind::kv_cache_read).hbm_bytes == 1'179'648);
  // Above topk: 2048 x 1152 = 2,359,296 B whatever kv_len; the index keys grow, 132 B a token:
  // 4096 x 132 = 540,672 and 32768 x 132 = 4,325,376.
  const auto mid = run(4096);
  const auto big = run(32768);
  CHECK(mid.timeline.op(OpKind::kv_cache_read).hbm_bytes == 2'359'296);
  CHECK(big.timeline.op(OpKind::kv_cache_read).hbm_bytes == 2'359'296);
  CHECK(mid.timeline.op(OpKind::indexer_cache_read).hbm_bytes == 540'672);
  CHECK(big.timeline.op(OpKind::indexer_cache_read).hbm_bytes == 4'325'376);
  // fa2 attends 2048 rows: 2 x 128 x 1088 x 2048 = 570,425,344 FLOPs at any kv_len above topk.
  CHECK(big.timeline.op(OpKind::fa2).flops == 570'425'344);
  // The gather runs on SDMA and fa2 starts after it has ended everywhere; on each core fa2's first
  // TIU command names the gather's last SDMA id (initial_sdma_dep).
  const ops::OpTiming& gather = big.timeline.op(OpKind::kv_cache_read);
  const ops::OpTiming& fa2 = big.timeline.op(OpKind::fa2);
  CHECK(gather.commands[test_configs::engine::sdma] > 0);
  CHECK(fa2.start >= gather.end);
  std::size_t cores_checked = 0;
  for (const sim::CoreProgram& core : big.lowered.program.cores) {
    std::uint32_t last_gather = 0;
    const auto& sdma = core.queue(test_configs::engine::sdma);
    for (std::uint32_t i = 0; i < sdma.size(); ++i) {
      if (sdma[i].op == gather.id) last_gather = i + 1;
    }
    if (last_gather == 0) continue;
    for (const sim::Command& c : core.queue(test_configs::engine::tiu)) {
      if (c.op == fa2.id && c.kind == sim::CommandKind::compute) {
        CHECK(c.wait_on(test_configs::engine::sdma) == last_gather);
        ++cores_checked;
        break;
      }
    }
  }
  // 2048 gathered rows: the decode split puts them on 48 cores (ops::decode_split_parts,
  // sqrt(2048 x 1.12749) = 48.05, derived in test_lowering.cpp), each of which gathers and attends.
  CHECK(cores_checked == 48);
}

TEST_CASE("DSA: the kv-read route does not change a gathered history (sdma = gdma)", "[step][dsa]") {
  // The gather always runs on the chip's gather engine into a buffer fa2 streams, so the route
  // option has nothing to change. B = 128, kv_len 8192 once failed with sdma: the combine planned
  // the gathered history as resident in local memory (128 x 2048 rows x 1152 B / 64 cores).
  std::string text = test_configs::kDeepSeekV3;
  text.replace(text.find("deepseek_v3"), 11, "deepseek_v32");
  text += "index_n_heads: 64\nindex_head_dim: 128\nindex_topk: 2048\n";
  const auto v32 = model(text, "v32");
  ops::LoweringOptions sdma;
  sdma.kv_read_engine = "sdma";
  const auto a = api::simulate_block(chip(), v32, decode(128, 8192), {});
  const auto b = api::simulate_block(chip(), v32, decode(128, 8192), sdma);
  REQUIRE(a.timeline.ops.size() == b.timeline.ops.size());
  for (std::size_t i = 0; i < a.timeline.ops.size(); ++i) {
    INFO(a.timeline.ops[i].name);
    CHECK(a.timeline.ops[i].start == b.timeline.ops[i].start);
    CHECK(a.timeline.ops[i].end == b.timeline.ops[i].end);
    CHECK(a.timeline.ops[i].hbm_bytes == b.timeline.ops[i].hbm_bytes);
  }
  CHECK(a.timeline.total == b.timeline.total);
  // 128 x 2048 x 1152 = 301,989,888 gathered bytes.
  CHECK(b.timeline.op(OpKind::kv_cache_read).hbm_bytes == 301'989'888);
}

TEST_CASE("MoE top-k runs on the HAU when the chip has one, else on the vector unit", "[step][hau]") {
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  models::StepOptions options;
  options.layers = 4;
  const auto with_hau = api::simulate_step(chip(), v3, decode(1, 1024), options, {});
  const ops::OpTiming* topk = nullptr;
  for (const auto& t : with_hau.timeline.ops) {
    if (t.kind == OpKind::moe_topk) topk = &t;
  }
  REQUIRE(topk != nullptr);
  CHECK(topk->engines == "GDMA+HAU");
  // One token: top 8 of 256 scores = 20 init + 1 row x ceil(256/16) x ceil(log2 8) = 20 + 48 = 68
  // cycles = 68 ns at 1 GHz (the G5 reference's TOP_K figure). Find the HAU command's record.
  for (std::size_t c = 0; c < with_hau.lowered.program.cores.size(); ++c) {
    const auto& q = with_hau.lowered.program.cores[c].queue(test_configs::engine::hau);
    for (std::size_t i = 0; i < q.size(); ++i) {
      CHECK(q[i].amount == 68);
      const auto& rec = with_hau.trace.records(c, test_configs::engine::hau)[i];
      CHECK(rec.end - rec.start == 68'000);
    }
  }
  // The same chip without its sort engine (and without the waits on it).
  std::string text = test_configs::kSg2262;
  const auto hau = text.find("  hau:");
  text.erase(hau, text.find('\n', hau) + 1 - hau);
  for (std::size_t at; (at = text.find(", hau]")) != std::string::npos;) text.erase(at, 5);
  const hw::Chip no_hau = hw::chip_from_yaml(text, "no-hau");
  CHECK(!no_hau.sort_engine().has_value());
  const auto without = api::simulate_step(no_hau, v3, decode(1, 1024), options, {});
  for (const auto& t : without.timeline.ops) {
    if (t.kind == OpKind::moe_topk) CHECK(t.engines == "TIU+GDMA");
  }
}

TEST_CASE("byte counts never wrap: a KV cache past 2^64 bytes is an error, not a small number", "[step][limits]") {
  // Expanded MLA cache of DeepSeek-V3: 128 heads x (128 + 64 + 128) x 2 = 81,920 B per token per
  // layer; 2^20 sequences x 2^24 tokens x 61 layers x 81,920 B = 8.6e19 B > 2^64 - 1 = 1.8e19.
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  auto w = decode(std::uint64_t{1} << 20, std::uint64_t{1} << 24);
  w.mla_mode = models::MlaMode::expanded;
  CHECK_THROWS_WITH(models::chip_footprint(v3, w, models::Parallelism{1, 1, 1}),
                    Catch::StartsWith("the KV cache bytes per chip overflows: "));
  // The same in absorb mode fits 64 bits (1,152 B per token: 1.2e18 B) and is reported as is.
  w.mla_mode = models::MlaMode::absorb;
  CHECK(models::chip_footprint(v3, w, models::Parallelism{1, 1, 1}).kv_cache_bytes ==
        (std::uint64_t{1} << 44) * 61 * 1152);
}

TEST_CASE("a run estimated above max_commands is refused before anything is built", "[step][limits]") {
  // Four decode layers emit tens of thousands of commands; with a limit of 10,000 the run is
  // refused at once, naming the estimate and the limit.
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  ops::LoweringOptions small;
  small.max_commands = 10'000;
  models::StepOptions step;
  step.layers = 4;
  CHECK_THROWS_WITH(api::simulate_step(chip(), v3, decode(1, 4096), step, small),
                    Catch::StartsWith("the run needs about ") && Catch::Contains("above the limit of 10000;"));
  // The estimate tracks the real count (an estimate: a band, not an exact value): 4 layers of
  // decode at B = 1.
  const auto r = api::simulate_step(chip(), v3, decode(1, 4096), step, {});
  const double estimate = ops::estimate_commands(r.graph, chip(), {});
  const auto emitted = static_cast<double>(r.lowered.program.command_count());
  CHECK(estimate >= 0.5 * emitted);
  CHECK(estimate <= 2.0 * emitted);
}

TEST_CASE("an expert load cannot wrap its token count to the expected total", "[step][moe][limits]") {
  // B = 1 decode routes 8 slots. 18446744073709551615 + 9 would wrap to 8 in 64 bits.
  const auto load =
      models::ExpertLoad::from_csv_text("layer,expert,tokens\n3,5,18446744073709551615\n3,17,9\n", "wrap.csv");
  // Layers 3.. are MoE layers (first_k_dense_replace = 3).
  const auto why_dense = [](std::uint64_t l) {
    return l < 3 ? std::string("first_k_dense_replace = 3") : std::string();
  };
  CHECK_THROWS_WITH(load.validate(61, why_dense, 256, 8, 1),
                    "wrap.csv: layer 3: expert 5 gets 18446744073709551615 token slots, more than the step's 8");
}

namespace {

// DeepSeek-V3's first MoE layer (3) on ep 16 (tp 1, dp 16): four layers.
models::StepOptions first_moe_layer_on_ep16() {
  models::StepOptions options;
  options.layers = 4;
  options.parallelism = models::Parallelism{1, 16, 16};
  return options;
}

}  // namespace

TEST_CASE("MoE overlap: the shared experts compute while the dispatch all-to-all is in flight",
          "[step][moe][overlap]") {
  // tp 1, ep 16, dp 16, one sequence per chip: layer 3's dispatch sends this chip's token to the
  // experts' chips over C2C (CDMA); the shared expert needs only the normed token, so it runs on
  // the TIU and GDMA meanwhile instead of after the experts and the combine.
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  const models::StepOptions options = first_moe_layer_on_ep16();
  const auto r = api::simulate_step(chip(), v3, decode(16, 4096), options, {});
  const ops::OpTiming* dispatch = nullptr;
  const ops::OpTiming* shared = nullptr;
  const ops::OpTiming* experts = nullptr;
  const ops::OpTiming* combine = nullptr;
  for (const auto& t : r.timeline.ops) {
    if (t.layer != 3) continue;
    if (t.name == "moe_dispatch") dispatch = &t;
    if (t.name == "shared_gate_up") shared = &t;
    if (t.name == "experts_gate_up") experts = &t;
    if (t.name == "moe_combine") combine = &t;
  }
  REQUIRE((dispatch && shared && experts && combine));
  // Intervals intersect: the shared expert starts before the dispatch ends, and ends after it.
  CHECK(shared->start < dispatch->end);
  CHECK(dispatch->start < shared->end);
  // The routed experts wait for the dispatch; the combine waits for both paths.
  CHECK(experts->start >= dispatch->end);
  CHECK(combine->start >= shared->end);
  CHECK(combine->start >= experts->end);
}

TEST_CASE("MoE exchange: a step with prompt tokens sends once per node, a decode to every expert's chip",
          "[step][moe][nodes]") {
  // DeepSeek-V3 layer 3 on ep 16 (tp 1): 16 sequences, one per chip. A decode step exchanges as
  // DeepEP's low-latency kernels (bytes in equal shares, no token count); a prefill step as its
  // normal kernels: this chip's tokens, each k = 8 of 256 experts, in bf16 both ways (7,168 x 2 =
  // 14,336 B: the workload's weights are bf16, so the tokens are not quantised before dispatch).
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  const models::StepOptions options = first_moe_layer_on_ep16();
  auto exchanges = [&](const models::Workload& w) {
    std::vector<ops::CollectiveShape> found;
    const ops::OpGraph g = models::build_decoder_step(v3, w, options);
    for (ops::OpId id = 0; id < boost::num_vertices(g); ++id) {
      const ops::OpNode& n = g[id];
      if (n.name == "moe_dispatch" || n.name == "moe_combine_a2a") found.push_back(n.collective());
    }
    return found;
  };
  const auto decode = exchanges(test_configs::decode(16, 4096));
  REQUIRE(decode.size() == 2);
  CHECK(decode[0].tokens == 0);
  CHECK(decode[1].tokens == 0);
  const auto prefill =
      exchanges(models::make_workload(models::Phase::prefill, 16, 1024, std::nullopt, models::KvFormat::bf16));
  REQUIRE(prefill.size() == 2);
  CHECK(prefill[0].tokens == 1024);  // 16 x 1,024 prompt tokens over dp 16
  CHECK(prefill[0].experts == 256);
  CHECK(prefill[0].top_k == 8);
  CHECK(prefill[0].token_bytes == 14'336);
  CHECK(prefill[1].token_bytes == 14'336);
}

TEST_CASE("weight formats: bytes with scales, the model's default, and the expert stream", "[step][weights]") {
  using models::WeightDtype;
  // [7168, 1536] (q_a_proj): fp8 7168 x 1536 + 4 B x 56 x 12 blocks = 11,012,736; int8 (7168 + 2 x 56)
  // x 1536 = 11,182,080; int4 (3584 + 112) x 1536 = 5,677,056; bf16 2 x 7168 x 1536 = 22,020,096.
  CHECK(models::weight_matrix_bytes(WeightDtype::fp8, 7168, 1536) == 11'012'736);
  CHECK(models::weight_matrix_bytes(WeightDtype::int8, 7168, 1536) == 11'182'080);
  CHECK(models::weight_matrix_bytes(WeightDtype::int4, 7168, 1536) == 5'677'056);
  CHECK(models::weight_matrix_bytes(WeightDtype::bf16, 7168, 1536) == 22'020'096);
  CHECK(models::weight_matrix_bytes(WeightDtype::fp16, 7168, 1536) == 22'020'096);
  // Group 64 (Sophgo's W4BF16 --q_group_size 64): int4 (3584 + 2 x 112) x 1536 = 5,849,088; one
  // scale per column (group 0): (3584 + 2) x 1536 = 5,508,096; int8 g64 (7168 + 224) x 1536 =
  // 11,354,112.
  CHECK(models::weight_matrix_bytes({WeightDtype::int4, 64}, 7168, 1536) == 5'849'088);
  CHECK(models::weight_matrix_bytes({WeightDtype::int4, 0}, 7168, 1536) == 5'508'096);
  CHECK(models::weight_matrix_bytes({WeightDtype::int8, 64}, 7168, 1536) == 11'354'112);
  // A config.json's quantization_config sets the default; YAML may say weight_dtype.
  std::string hf = R"({"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61,
    "vocab_size": 129280, "intermediate_size": 18432, "num_attention_heads": 128, "q_lora_rank": 1536,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1, "moe_intermediate_size": 2048,
    "first_k_dense_replace": 3, "routed_scaling_factor": 2.5,
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                            "weight_block_size": [128, 128]}})";
  CHECK(models::model_from_hf_json(hf, "v3.json").weight_dtype == WeightDtype::fp8);
  std::string gptq = hf;
  gptq.replace(gptq.find("\"quant_method\": \"fp8\""), 21, "\"quant_method\": \"gptq\", \"bits\": 4");
  CHECK(models::model_from_hf_json(gptq, "v3-gptq.json").weight_dtype == WeightDtype::int4);
  CHECK(models::model_from_hf_json(gptq, "v3-gptq.json").weight_group == 128);  // no group_size: 128
  std::string grouped = gptq;
  grouped.replace(grouped.find("\"bits\": 4"), 9, "\"bits\": 4, \"group_size\": -1");
  CHECK(models::model_from_hf_json(grouped, "g.json").weight_group == 0);  // -1: one scale per column
  grouped.replace(grouped.find("-1"), 2, "64");
  CHECK(models::model_from_hf_json(grouped, "g.json").weight_group == 64);
  grouped.replace(grouped.find("size\": 64"), 9, "size\": 6.5");
  CHECK_THROWS_WITH(models::model_from_hf_json(grouped, "g.json"),
                    Catch::Contains("quantization_config.group_size: expected -1 (per column) or a whole number"));
  std::string bnb = hf;
  bnb.replace(bnb.find("\"quant_method\": \"fp8\""), 21, "\"quant_method\": \"bitsandbytes\"");
  CHECK_THROWS_WITH(models::model_from_hf_json(bnb, "bnb.json"),
                    Catch::Contains("quantization_config.quant_method: 'bitsandbytes' is not modelled"));
  CHECK(model(test_configs::kDeepSeekV3, "v3").weight_dtype == WeightDtype::bf16);  // no key: bf16
  // The expert stream carries the format: B = 1, layer 3 with experts 5 and 17 (as above), fp8.
  // Per expert: gate_up (7168 + 2) x 4096 = 29,368,320 and down (2048 + 1) x 7168 = 14,687,232
  // (per column: the values and 4 B x 56 or 16 blocks / 128 columns, rounded up): 44,055,552;
  // two experts 88,111,104, against 176,160,768 in bf16.
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  const auto load = models::ExpertLoad::from_csv_text("layer,expert,tokens\n3,5,3\n3,17,5\n3,200,0\n", "load.csv");
  auto w = decode(1, 1024);
  w.weight_dtype = WeightDtype::fp8;
  const auto r = step(v3, w, 4, &load);
  CHECK(bytes_of(r.timeline, OpKind::expert_weights, 3) == 88'111'104);
  // The footprint counts the scales exactly: gate_up 7168 x 4096 + 4 x 56 x 32 = 29,367,296, down
  // 2048 x 7168 + 4 x 16 x 56 = 14,683,648: 2 x 44,050,944 = 88,101,888 (the stream's per-column
  // rounding adds 9,216 B, under a byte per column).
  CHECK(models::expert_weight_bytes(v3, 2, 2048, WeightDtype::fp8) == 88'101'888);
  // Footprint: fp8 projections and experts, bf16 embedding, lm_head, norms and router.
  const auto bf16 = models::chip_footprint(v3, decode(1, 1024), models::Parallelism{1, 1, 1});
  const auto fp8 = models::chip_footprint(v3, w, models::Parallelism{1, 1, 1});
  CHECK(fp8.weight_bytes < bf16.weight_bytes);
  CHECK(2 * fp8.weight_bytes > bf16.weight_bytes);
}

TEST_CASE("microscaled weights: packed values and block scales, the cube's own format where it has it, else bf16",
          "[step][weights]") {
  using models::WeightDtype;
  // [7168, 1536] (q_a_proj), per column: mxfp8 7168 + 7168 / 32 = 7,392; mxfp6 7168 x 6 / 8 + 224 =
  // 5,600; mxfp4 3,584 + 224 = 3,808; nvfp4 3,584 + 7168 / 16 = 4,032, and one fp32 scale a tensor.
  CHECK(models::weight_matrix_bytes(WeightDtype::mxfp8, 7168, 1536) == 7'392ull * 1536);      // 11,354,112
  CHECK(models::weight_matrix_bytes(WeightDtype::mxfp6, 7168, 1536) == 5'600ull * 1536);      // 8,601,600
  CHECK(models::weight_matrix_bytes(WeightDtype::mxfp4, 7168, 1536) == 3'808ull * 1536);      // 5,849,088
  CHECK(models::weight_matrix_bytes(WeightDtype::nvfp4, 7168, 1536) == 4'032ull * 1536 + 4);  // 6,193,156
  // k = 100, not a whole number of blocks: the last block is partial and still has its scale.
  // mxfp4 ceil(100 / 2) + ceil(100 / 32) = 54 a column; mxfp6 ceil(600 / 8) + 4 = 79; nvfp4 50 +
  // ceil(100 / 16) = 57, x 3 columns + 4.
  CHECK(models::weight_matrix_bytes(WeightDtype::mxfp4, 100, 3) == 162);
  CHECK(models::weight_matrix_bytes(WeightDtype::mxfp6, 100, 3) == 237);
  CHECK(models::weight_matrix_bytes(WeightDtype::nvfp4, 100, 3) == 175);
  CHECK(models::parse_weight_dtype("nvfp4") == WeightDtype::nvfp4);
  CHECK_THROWS_WITH(
      models::parse_weight_dtype("fp4"),
      Catch::Contains("expected one of bf16, fp16, fp8, int8, int4, mxfp8, mxfp6, mxfp4, nvfp4, got 'fp4'"));

  // The projection as the model builds it: fp4 on the cube, the bf16 activations quantised in local
  // memory (3 operations an element), the weights streamed at their packed bytes a column (the
  // tensor's fp32 scale is a register's, not streamed).
  ops::OpNode node = models::detail::matmul_op("q_a_proj", 1, 64, 7168, 1536);
  models::apply_weight_format(node, WeightDtype::nvfp4);
  CHECK(node.dtype == hw::DType::fp4);
  CHECK(node.mm().b_col_bytes == 4'032);
  CHECK(node.mm().a_row_bytes == 14'336);  // 7168 x 2
  CHECK(node.mm().a_quant_ops == 3);
  CHECK(node.mm().microscale_block == 16);
  CHECK(node.mm().k_block_rescale == 0);  // the block-scaled MMA applies the scales
  // On a chip without fp4: weight-only, dequantised (unpack, convert, scale) to the bf16 cube; a
  // second pass changes nothing.
  models::dequantise_to_bf16(node);
  models::dequantise_to_bf16(node);
  CHECK(node.dtype == hw::DType::bf16);
  CHECK(node.mm().b_dequant_ops == 3);
  CHECK(node.mm().a_quant_ops == 0);
  CHECK(node.mm().a_row_bytes == 0);
  CHECK(node.mm().b_col_bytes == 4'032);
  ops::OpNode mx8 = models::detail::matmul_op("q_a_proj", 1, 64, 7168, 1536);
  models::apply_weight_format(mx8, WeightDtype::mxfp8);
  CHECK(mx8.dtype == hw::DType::fp8);
  models::dequantise_to_bf16(mx8);
  CHECK(mx8.mm().b_dequant_ops == 2);  // one value a byte: convert, scale

  // A gpt-oss config.json's quantization_config.
  const std::string hf = R"({"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61,
    "vocab_size": 129280, "intermediate_size": 18432, "num_attention_heads": 128, "q_lora_rank": 1536,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1, "moe_intermediate_size": 2048,
    "first_k_dense_replace": 3, "routed_scaling_factor": 2.5,
    "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn"], "quant_method": "mxfp4"}})";
  CHECK(models::model_from_hf_json(hf, "mx.json").weight_dtype == WeightDtype::mxfp4);
  // NVIDIA Model Optimizer's NVFP4 checkpoints (nvidia/DeepSeek-R1-FP4): quant_method modelopt.
  std::string modelopt = hf;
  modelopt.replace(modelopt.find("\"quant_method\": \"mxfp4\""), 23,
                   "\"quant_method\": \"modelopt\", \"quant_algo\": \"NVFP4\"");
  CHECK(models::model_from_hf_json(modelopt, "nv.json").weight_dtype == WeightDtype::nvfp4);
  modelopt.replace(modelopt.find("NVFP4"), 5, "INT8_SQ");
  CHECK_THROWS_WITH(models::model_from_hf_json(modelopt, "nv.json"),
                    Catch::Contains("quantization_config.quant_algo: 'INT8_SQ' is not modelled"));

  // Simulated: SG2262 (no fp4 rate) and the same chip with an fp4 cube at 4x its bf16 rate, and
  // with a tile's whole k on one core (SG2262's split k sums partials in memory, their bytes as the
  // split falls, which the cube's rate moves).
  std::string text = test_configs::kSg2262;
  text.replace(text.find("{fp8: 256, bf16: 128}"), 21, "{fp8: 256, bf16: 128, fp4: 512}");
  text.replace(text.find("matmul_split_k: true"), 20, "matmul_split_k: false");
  const hw::Chip fp4_chip = hw::chip_from_yaml(text, "sg2262-fp4");
  CHECK(fp4_chip.cube_macs(hw::DType::fp4) == 512);
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  auto q_a_proj = [&](const hw::Chip& c, WeightDtype t, models::Workload w) {
    w.weight_dtype = t;
    const api::Simulation r = api::simulate_block(c, v3, w, {});
    for (const auto& op : r.timeline.ops) {
      if (op.name == "q_a_proj") return op;
    }
    FAIL("no q_a_proj");
    return ops::OpTiming{};
  };
  // One decode: the weights are read once, so nvfp4 reads bf16's bytes less 1536 x (14,336 -
  // 4,032) = 15,826,944, weight-only on SG2262 and natively on the fp4 chip.
  const auto bf16 = q_a_proj(chip(), WeightDtype::bf16, decode(1, 1024));
  CHECK(bf16.hbm_bytes - q_a_proj(chip(), WeightDtype::nvfp4, decode(1, 1024)).hbm_bytes == 15'826'944);
  const auto fp4_bf16 = q_a_proj(fp4_chip, WeightDtype::bf16, decode(1, 1024));
  CHECK(fp4_bf16.hbm_bytes - q_a_proj(fp4_chip, WeightDtype::nvfp4, decode(1, 1024)).hbm_bytes == 15'826'944);
  // A 4,096-token prompt is compute-bound: on the fp4 cube the roofline's compute is the FLOPs at
  // the fp4 peak, a quarter of bf16's; dequantised on SG2262 it is bf16's, plus the vector work.
  const auto prompt = models::make_workload(models::Phase::prefill, 1, 4096, std::nullopt, models::KvFormat::bf16);
  const auto native = q_a_proj(fp4_chip, WeightDtype::nvfp4, prompt);
  const auto weight_only = q_a_proj(chip(), WeightDtype::nvfp4, prompt);
  const auto dense = q_a_proj(chip(), WeightDtype::bf16, prompt);
  CHECK(native.flops == 2ull * 4096 * 7168 * 1536);
  CHECK(native.compute_ns * 4 == Approx(dense.compute_ns).epsilon(1e-12));
  CHECK(weight_only.compute_ns == dense.compute_ns);
  const auto dense_on_fp4_chip = q_a_proj(fp4_chip, WeightDtype::bf16, prompt);
  CHECK(native.end - native.start < (dense_on_fp4_chip.end - dense_on_fp4_chip.start) / 2);
  CHECK(weight_only.end - weight_only.start >= dense.end - dense.start);
}

TEST_CASE("DSA in prefill: the indexer runs over the prompt and attention keeps the top rows", "[step][dsa]") {
  std::string text = test_configs::kDeepSeekV3;
  text.replace(text.find("deepseek_v3"), 11, "deepseek_v32");
  text += "index_n_heads: 64\nindex_head_dim: 128\nindex_topk: 2048\n";
  const auto v32 = model(text, "v32");
  auto prefill = [&](std::uint64_t S) {
    return api::simulate_block(
        chip(), v32, models::make_workload(models::Phase::prefill, 1, S, std::nullopt, models::KvFormat::bf16), {});
  };
  const auto r = prefill(8192);
  // The indexer scores every prompt token against every other (the whole square, an upper bound
  // of the causal half): 2 x (8192 x 64) x 128 x 8192 = 1,099,511,627,776 FLOPs; no index-key read
  // from a cache (the keys are this step's).
  CHECK(r.timeline.op(OpKind::matmul).name == "q_a_proj");
  std::uint64_t score_flops = 0;
  for (const auto& t : r.timeline.ops) {
    if (t.name == "indexer_score") score_flops = t.flops;
  }
  CHECK(score_flops == 1'099'511'627'776);
  CHECK(r.timeline.find(OpKind::indexer_cache_read) == nullptr);
  CHECK(r.timeline.find(OpKind::kv_cache_read) == nullptr);
  REQUIRE(r.timeline.find(OpKind::indexer_topk) != nullptr);
  // Each query token attends its top 2048 rows (default prefill: MHA, q 192 and v 128 per head):
  // 2 x 8192 x 128 x 2048 x (192 + 128) = 1,374,389,534,720 FLOPs, a quarter of the dense 8192.
  CHECK(r.timeline.op(OpKind::fa2).flops == 1'374'389'534'720);
  // Below index_topk the selection keeps the causal prefix: 1024 x 1025 / 2 = 524,800 pairs,
  // 2 x 128 x 524,800 x 320 = 42,991,616,000 FLOPs.
  CHECK(prefill(1024).timeline.op(OpKind::fa2).flops == 42'991'616'000);
  // fa2 waits for the selection.
  CHECK(r.timeline.op(OpKind::fa2).start >= r.timeline.op(OpKind::indexer_topk).end);
}

TEST_CASE("activation formats: bytes a row, the cube's element, mixed inputs, the dispatch and refusals",
          "[step][weights]") {
  using models::ActDtype;
  using models::WeightDtype;
  // A row of k = 7168 activations (DeepSeek-V3's hidden size): bf16 2 x 7168 = 14,336; fp8 7168 +
  // 4 x ceil(7168 / 128) = 7168 + 224 = 7,392; mxfp8 7168 + 7168 / 32 = 7,392; mxfp6 3 x 7168 / 4
  // + 224 = 5,600; mxfp4 3,584 + 224 = 3,808; nvfp4 3,584 + 7168 / 16 = 4,032.
  CHECK(models::act_row_bytes(ActDtype::bf16, 7168) == 14'336);
  CHECK(models::act_row_bytes(ActDtype::auto_, 7168) == 14'336);
  CHECK(models::act_row_bytes(ActDtype::fp8, 7168) == 7'392);
  CHECK(models::act_row_bytes(ActDtype::mxfp8, 7168) == 7'392);
  CHECK(models::act_row_bytes(ActDtype::mxfp6, 7168) == 5'600);
  CHECK(models::act_row_bytes(ActDtype::mxfp4, 7168) == 3'808);
  CHECK(models::act_row_bytes(ActDtype::nvfp4, 7168) == 4'032);
  // k = 100, blocks rounded up: fp8 100 + 4 x 1 = 104; mxfp6 75 + 4 = 79; nvfp4 50 + 7 = 57.
  CHECK(models::act_row_bytes(ActDtype::fp8, 100) == 104);
  CHECK(models::act_row_bytes(ActDtype::mxfp6, 100) == 79);
  CHECK(models::act_row_bytes(ActDtype::nvfp4, 100) == 57);
  CHECK(models::parse_act_dtype("auto") == ActDtype::auto_);
  CHECK_THROWS_WITH(models::parse_act_dtype("fp4"),
                    Catch::Contains("expected one of auto, bf16, fp8, mxfp8, mxfp6, mxfp4, nvfp4, got 'fp4'"));

  auto q_a = [](models::WeightFormat f) {
    ops::OpNode node = models::detail::matmul_op("q_a_proj", 1, 64, 7168, 1536);
    models::apply_weight_format(node, f);
    return node;
  };
  // W4A4 (NVFP4 both): the fp4 cube; A read at 4,032 bytes a row, B at 4,032 a column; the
  // block-scaled MMA takes both scales (no dequantisation, no rescale).
  ops::OpNode w4a4 = q_a({WeightDtype::nvfp4, 128, ActDtype::nvfp4});
  CHECK(w4a4.dtype == hw::DType::fp4);
  CHECK(w4a4.mm().act_fixed);
  CHECK(w4a4.mm().a_row_bytes == 4'032);
  CHECK(w4a4.mm().b_col_bytes == 4'032);
  CHECK(w4a4.mm().microscale_block == 16);
  CHECK(w4a4.mm().b_dequant_ops == 0);
  CHECK(w4a4.mm().a_quant_ops == 3);  // the producer's quantisation, charged where A is read
  models::dequantise_to_bf16(w4a4);   // fixed activations have no bf16 fallback
  CHECK(w4a4.dtype == hw::DType::fp4);
  // W4A8 (MXFP4 weights, fp8 activations): the wider element, fp8, on a mixed-input MMA; A at
  // 7,392 a row, B at 3,808 a column. A chip without an fp4 rate converts the weights first
  // (unpack, convert, scale: 3 operations a weight); one with it does not.
  ops::OpNode w4a8 = q_a({WeightDtype::mxfp4, 128, ActDtype::fp8});
  CHECK(w4a8.dtype == hw::DType::fp8);
  CHECK(w4a8.mm().b_element == hw::DType::fp4);
  CHECK(w4a8.mm().a_row_bytes == 7'392);
  CHECK(w4a8.mm().b_col_bytes == 3'808);
  CHECK(w4a8.mm().microscale_block == 32);
  CHECK(w4a8.mm().b_dequant_ops == 0);
  models::convert_narrow_weights(w4a8);
  CHECK(w4a8.mm().b_dequant_ops == 3);
  // W4A16 asked for (MXFP4 weights, bf16 activations): weight-only, whatever the chip.
  const ops::OpNode w4a16 = q_a({WeightDtype::mxfp4, 128, ActDtype::bf16});
  CHECK(w4a16.dtype == hw::DType::bf16);
  CHECK(w4a16.mm().b_dequant_ops == 3);
  CHECK(w4a16.mm().a_row_bytes == 14'336);
  CHECK(w4a16.mm().a_quant_ops == 0);
  CHECK(w4a16.mm().microscale_block == 0);
  // Integer weights with fp8 activations (W4A8 int4): dequantised to the fp8 cube's element; the
  // int4 g128 column is 3,584 + 2 x 56 = 3,696 bytes.
  const ops::OpNode int4_fp8 = q_a({WeightDtype::int4, 128, ActDtype::fp8});
  CHECK(int4_fp8.dtype == hw::DType::fp8);
  CHECK(int4_fp8.mm().b_dequant_ops == 3);
  CHECK(int4_fp8.mm().b_col_bytes == 3'696);
  // fp8 block weights with MXFP8 activations: fp8, the 128-blocks' rescale kept.
  const ops::OpNode fp8_mx = q_a({WeightDtype::fp8, 128, ActDtype::mxfp8});
  CHECK(fp8_mx.dtype == hw::DType::fp8);
  CHECK(fp8_mx.mm().k_block_rescale == 128);
  // MXFP8 weights with MXFP4 activations: the weights' fp8 is the wider; A packed at 3,808.
  const ops::OpNode w8a4 = q_a({WeightDtype::mxfp8, 128, ActDtype::mxfp4});
  CHECK(w8a4.dtype == hw::DType::fp8);
  CHECK(w8a4.mm().a_row_bytes == 3'808);
  // bf16 weights take bf16 activations only.
  CHECK_NOTHROW(models::check_act_dtype(WeightDtype::bf16, ActDtype::bf16));
  CHECK_THROWS_WITH(models::check_act_dtype(WeightDtype::bf16, ActDtype::fp8),
                    Catch::Contains("the weights are bf16, which multiply bf16 activations"));

  // Simulated on SG2262 with an fp4 cube: one decode of 64 tokens holds q_a_proj's A in nvfp4
  // instead of bf16, 64 x (14,336 - 4,032) = 659,456 bytes fewer; the split reads A once in each
  // of its 8 column parts (1536 columns over 64 cores, k split 8 ways), 8 x 659,456 = 5,275,648.
  std::string text = test_configs::kSg2262;
  text.replace(text.find("{fp8: 256, bf16: 128}"), 21, "{fp8: 256, bf16: 128, fp4: 512}");
  const hw::Chip fp4_chip = hw::chip_from_yaml(text, "sg2262-fp4");
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  auto q_a_op = [&](const hw::Chip& c, ActDtype act) {
    models::Workload w = decode(64, 1024);
    w.weight_dtype = WeightDtype::nvfp4;
    w.act_dtype = act;
    const api::Simulation r = api::simulate_block(c, v3, w, {});
    return r.timeline.op(OpKind::matmul);
  };
  const ops::OpTiming native = q_a_op(fp4_chip, ActDtype::auto_);
  const ops::OpTiming w4a4_op = q_a_op(fp4_chip, ActDtype::nvfp4);
  REQUIRE(native.name == "q_a_proj");
  CHECK(native.unique_bytes - w4a4_op.unique_bytes == 659'456);
  CHECK(native.hbm_bytes - w4a4_op.hbm_bytes == 5'275'648);
  CHECK(native.flops == w4a4_op.flops);
  // SG2262 itself has no fp4 rate: asked-for fp4 activations are refused, naming the option.
  CHECK_THROWS_WITH(q_a_op(chip(), ActDtype::nvfp4),
                    Catch::Contains("has no fp4 tensor rate") && Catch::Contains("op 'q_a_proj'"));

  // The dispatch all-to-all sends tokens in the activations' format: DeepSeek-V3 (hidden 7168) at
  // ep 8, a token 3,808 bytes in MXFP4, 7,392 in fp8 (auto with fp8 weights), 14,336 in bf16.
  const models::Parallelism ep8{1, 8, 8};
  auto token_bytes = [&](WeightDtype weights, ActDtype act) {
    models::Workload w = decode(64, 1024);
    w.weight_dtype = weights;
    w.act_dtype = act;
    return models::expert_share(v3, models::chip_workload(w, ep8), ep8, nullptr).dispatch_token_bytes;
  };
  CHECK(token_bytes(WeightDtype::mxfp4, ActDtype::mxfp4) == 3'808);
  CHECK(token_bytes(WeightDtype::fp8, ActDtype::auto_) == 7'392);
  CHECK(token_bytes(WeightDtype::mxfp4, ActDtype::auto_) == 14'336);
  CHECK(token_bytes(WeightDtype::mxfp4, ActDtype::bf16) == 14'336);
}

TEST_CASE("micro-batches: one group's combine all-to-all overlaps the other's experts", "[step][moe][overlap]") {
  // tp 1, ep 8, dp 8 with 32 sequences: 4 per chip, in 2 micro-batches of 2.
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  models::StepOptions options;
  options.layers = 4;
  options.parallelism = models::Parallelism{1, 8, 8};
  options.micro_batches = 2;
  const auto r = api::simulate_step(chip(), v3, decode(32, 4096), options, {});
  std::vector<const ops::OpTiming*> a2a, experts;
  std::size_t attn_norms = 0;
  for (const auto& t : r.timeline.ops) {
    if (t.layer != 3) continue;
    if (t.name == "attn_norm") ++attn_norms;
    if (t.name == "moe_combine_a2a") a2a.push_back(&t);
    if (t.name == "experts_gate_up") experts.push_back(&t);
  }
  // Every op once per micro-batch; each micro-batch's attention reads its own 2 sequences.
  CHECK(attn_norms == 2);
  REQUIRE(a2a.size() == 2);
  REQUIRE(experts.size() == 2);
  // Micro-batch 0's combine all-to-all and micro-batch 1's experts intersect.
  CHECK(a2a[0]->start < experts[1]->end);
  CHECK(experts[1]->start < a2a[0]->end);
  for (const auto& t : r.timeline.ops) {
    if (t.kind == OpKind::kv_cache_read) CHECK(t.hbm_bytes == 2 * 4096 * 1152);  // 2 sequences x 4096 x 1152
  }
  // Groups must divide the chip's sequences.
  options.micro_batches = 3;
  try {
    api::simulate_step(chip(), v3, decode(32, 4096), options, {});
    FAIL("no InputError");
  } catch (const hw::InputError& e) {
    CHECK(e.field() == "micro_batches");
    CHECK(std::string(e.what()) == "3 micro-batches must divide this chip's 4 sequences (1..64)");
  }
}

TEST_CASE("micro-batches of unlike sequences: dealt round robin, counts within one", "[step][moe][overlap]") {
  // A serving step's groups on one chip (tp 8, ep 8, dp 1): 3 decodes at history 4096 and 2 at
  // 1024, in 2 micro-batches. The deal: the first group gives micro-batch 0 two (3 / 2 + 1) and
  // micro-batch 1 one, and goes on at micro-batch 1; the second gives micro-batch 1 one, then
  // micro-batch 0 one. So micro-batch 0 reads (2 x 4096 + 1024) x 1152 B of latent cache per
  // layer (576 elements x 2 B a token), micro-batch 1 (4096 + 1024) x 1152 B.
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  models::Workload w = decode(1, 4096);
  w.groups = {models::SequenceGroup{3, 1, 4096, true}, models::SequenceGroup{2, 1, 1024, true}};
  w.dealt = true;
  models::StepOptions options;
  options.layers = 2;
  options.parallelism = models::Parallelism{8, 8, 1};
  options.micro_batches = 2;
  const auto r = api::simulate_step(chip(), v3, w, options, {});
  std::vector<std::uint64_t> reads;
  for (const auto& t : r.timeline.ops) {
    if (t.kind == OpKind::kv_cache_read && t.layer == 1) reads.push_back(t.hbm_bytes);
  }
  CHECK(reads == std::vector<std::uint64_t>{9216 * 1152, 5120 * 1152});
  // Eight asked of 5 sequences: 5 micro-batches of one, the attention norms say.
  options.micro_batches = 8;
  const auto five = api::simulate_step(chip(), v3, w, options, {});
  std::size_t norms = 0;
  for (const auto& t : five.timeline.ops) norms += t.layer == 1 && t.name == "attn_norm";
  CHECK(norms == 5);
}

TEST_CASE("qwen2 and chatglm: qkv bias, tied embeddings, ChatGLM's field names", "[step][models]") {
  const std::string qwen = R"(name: Qwen1.5-7B-test
model_type: qwen2
hidden_size: 4096
num_hidden_layers: 32
vocab_size: 151936
intermediate_size: 11008
num_attention_heads: 32
num_key_value_heads: 32
head_dim: 128
qkv_bias: true
tie_word_embeddings: false
)";
  const auto with_bias = model(qwen, "qwen");
  CHECK(with_bias.qkv_bias);
  std::string no_bias_text = qwen;
  no_bias_text.replace(no_bias_text.find("qkv_bias: true"), 14, "qkv_bias: false");
  const auto no_bias = model(no_bias_text, "qwen-no-bias");
  // Decode, B = 1: qkv_proj is [1, 4096] x [4096, 12288] ((32 + 2 x 32) x 128 columns). With the
  // bias (added in the epilogue, so no split-K) the 64 cores take 192 columns each: weights
  // 4096 x 12288 x 2 = 100,663,296 B once, the 8,192 B token row on every core (524,288), the
  // output 24,576 and the bias row 24,576: 101,236,736 B.
  auto qkv_bytes = [&](const models::ModelSpec& m) {
    const auto r = api::simulate_block(chip(), m, decode(1, 4096), {});
    for (const auto& t : r.timeline.ops) {
      if (t.name == "qkv_proj") return t.hbm_bytes;
    }
    return std::uint64_t{0};
  };
  CHECK(qkv_bytes(with_bias) == 101'236'736);
  // Footprint: the bias is 12,288 x 2 B per layer; tied embeddings store one 151,936 x 4096 table.
  const models::Parallelism one{1, 1, 1};
  CHECK(models::chip_footprint(with_bias, decode(1, 4096), one).weight_bytes -
            models::chip_footprint(no_bias, decode(1, 4096), one).weight_bytes ==
        32 * 24'576);
  std::string tied_text = qwen;
  tied_text.replace(tied_text.find("tie_word_embeddings: false"), 26, "tie_word_embeddings: true");
  CHECK(models::chip_footprint(with_bias, decode(1, 4096), one).weight_bytes -
            models::chip_footprint(model(tied_text, "qwen-tied"), decode(1, 4096), one).weight_bytes ==
        std::uint64_t{151936} * 4096 * 2);
  // A config.json of model_type qwen2 has the bias by definition.
  const auto hf = models::model_from_hf_json(R"({"model_type": "qwen2", "hidden_size": 2048, "num_hidden_layers": 24,
    "vocab_size": 151936, "intermediate_size": 5504, "num_attention_heads": 16, "num_key_value_heads": 16,
    "tie_word_embeddings": false})",
                                             "qwen1.5-1.8b.json");
  CHECK(hf.qkv_bias);
  CHECK(hf.head_dim == 128);  // 2048 / 16
  // ChatGLM3-6B's own names: 2 KV groups of 128, FFN 13,696, padded vocabulary 65,024.
  const auto glm = models::model_from_hf_json(R"({"model_type": "chatglm", "hidden_size": 4096, "num_layers": 28,
    "padded_vocab_size": 65024, "ffn_hidden_size": 13696, "num_attention_heads": 32, "multi_query_attention": true,
    "multi_query_group_num": 2, "kv_channels": 128, "add_qkv_bias": true, "seq_length": 8192})",
                                              "chatglm3-6b.json");
  CHECK(glm.num_hidden_layers == 28);
  CHECK(glm.num_key_value_heads == 2);
  CHECK(glm.head_dim == 128);
  CHECK(glm.intermediate_size == 13696);
  CHECK(glm.vocab_size == 65024);
  CHECK(glm.qkv_bias);
  // Booleans are booleans: a quoted "true" is refused with the field named.
  std::string quoted = qwen;
  quoted.replace(quoted.find("qkv_bias: true"), 14, "qkv_bias: \"true\"");
  CHECK_THROWS_WITH(model(quoted, "q"), Catch::Contains("qkv_bias: expected true or false, got 'true'"));
}

TEST_CASE("host launch: each layer waits for the previous one and the launch, nothing overlaps it", "[step][host]") {
  const auto v3 = model(test_configs::kDeepSeekV3, "v3");
  models::StepOptions options;
  options.layers = 3;
  const auto without = api::simulate_step(chip(), v3, decode(4, 1024), options, {});
  options.host_launch_ns = 250'000;  // 0.25 ms
  const auto with = api::simulate_step(chip(), v3, decode(4, 1024), options, {});
  // One host_launch op per layer, 250,000 ns = 250,000,000 ps each, tagged with its layer.
  std::vector<const ops::OpTiming*> launches;
  for (const auto& t : with.timeline.ops) {
    if (t.kind == OpKind::host_launch) launches.push_back(&t);
  }
  REQUIRE(launches.size() == 3);
  for (int l = 0; l < 3; ++l) {
    const ops::OpTiming& launch = *launches[static_cast<std::size_t>(l)];
    CHECK(launch.layer == l);
    CHECK(launch.end - launch.start == 250'000'000);
    CHECK(launch.hbm_bytes == 0);
    CHECK(launch.regime == ops::Regime::host);
    CHECK(launch.bound_by == "host");
    // It starts when every op before its layer has ended, and every op of its layer starts
    // after it: no weight prefetch or history read slips under the launch.
    for (const auto& t : with.timeline.ops) {
      if (t.kind == OpKind::host_launch) continue;
      if (t.layer >= 0 && t.layer < l) CHECK(t.end <= launch.start);
      if (t.layer == -1 && t.name == "embedding") CHECK(t.end <= launch.start);
      if (t.layer == l) {
        INFO(t.name);
        CHECK(t.start >= launch.end);
      }
    }
  }
  // The layers are otherwise the same work: the step's bytes and FLOPs do not change, and it takes at
  // least the three launches longer (cross-layer overlap the launches forbid comes on top).
  CHECK(with.timeline.hbm_bytes == without.timeline.hbm_bytes);
  CHECK(with.timeline.flops == without.timeline.flops);
  CHECK(with.timeline.total >= without.timeline.total + 3 * 250'000'000ull);
  // Beyond 10 s a launch is refused, naming the field.
  options.host_launch_ns = models::kMaxHostLaunchNs + 1;
  try {
    api::simulate_step(chip(), v3, decode(4, 1024), options, {});
    FAIL("no InputError");
  } catch (const hw::InputError& e) {
    CHECK(e.field() == "host_launch_ns");
    CHECK(std::string(e.what()) == "expected 0..10000000000 ns, got 10000000001");
  }
}

TEST_CASE("a run's idle time a core is at most the run, where the ops' summed largest gaps are not", "[step][idle]") {
  // H100, DeepSeek-V3 decode of 64 sequences at 32k over 16 chips: each op's largest gap comes
  // from some core, and those of different ops overlap in time, so their sum (idle_gap_ps) passes
  // the step; each core's own gaps are disjoint (one queue in order), so their mean over the cores
  // cannot.
  const g5sim::Chip h100 = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model v3 = g5sim::Model::from_file(g5sim::model_path("deepseek-v3"));
  g5sim::Request r;
  r.batch = 64;
  r.ctx = 32768;
  const g5sim::Result step = g5sim::simulate(h100, v3, r);
  CHECK(step.idle_gap_ps > step.total_ps);
  CHECK(step.idle_per_core_ps > 0);
  CHECK(step.idle_per_core_ps <= step.total_ps);
}

}  // namespace test_decoder_step
