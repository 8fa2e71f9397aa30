// Attention-FFN disaggregation (g5sim/afd.hpp): the activations' bytes each way, the link, the
// pipeline of two micro-batches by hand, and a step's sides simulated on their own chips.
#include <catch2/catch.hpp>

#include <numeric>
#include <string>
#include <vector>

#include "g5sim/afd.hpp"
#include "g5sim/g5sim.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_afd {

TEST_CASE("AFD: two micro-batches pipeline the two sides, by hand", "[afd]") {
  // Every stage of both micro-batches: attention 10, dispatch 3, FFN 8, combine 3 (ps). Each
  // resource takes layer by layer, micro-batch 0 then 1; a stage starts at max(its resource free,
  // its micro-batch's stage before done):
  //   layer 0  attention [0, 10] [10, 20]   out [10, 13] [20, 23]   FFN [13, 21] [23, 31]   back [21, 24] [31, 34]
  //   layer 1  attention [24, 34] [34, 44]  out [34, 37] [44, 47]   FFN [37, 45] [47, 55]   back [45, 48] [55, 58]
  const g5sim::AfdStage s{10, 3, 8, 3};
  const std::vector<std::vector<g5sim::AfdStage>> two(2, std::vector<g5sim::AfdStage>(2, s));
  const g5sim::AfdSchedule p = g5sim::afd_schedule(two);
  CHECK(p.total_ps == 58);
  CHECK(p.attention_busy_ps == 40);
  CHECK(p.ffn_busy_ps == 32);
  CHECK(p.link_busy_ps == 24);
  // One micro-batch of the same work (each stage twice as long): nothing overlaps, 2 x (20 + 6 +
  // 16 + 6) = 96.
  const std::vector<std::vector<g5sim::AfdStage>> one(2, std::vector<g5sim::AfdStage>(1, {20, 6, 16, 6}));
  CHECK(g5sim::afd_schedule(one).total_ps == 96);
  // Layers of unequal micro-batches are refused.
  CHECK_THROWS_WITH(g5sim::afd_schedule({{s, s}, {s}}), Catch::Contains("the same micro-batches"));
}

TEST_CASE("AFD: a layer's activations each way, and the link at the slower side", "[afd]") {
  const g5sim::Model v3 = g5sim::Model::from_file(g5sim::model_path("deepseek-v3"));
  // DeepSeek-V3: hidden 7,168 in bf16, top-8 of 256 routed experts and 1 shared: an MoE layer
  // sends each token's 14,336 B to 8 + 1 destinations (129,024 B); its first 3 layers are dense
  // (14,336 B a token).
  CHECK(g5sim::afd_layer_bytes(v3, 0, 64) == 64 * 14'336);
  CHECK(g5sim::afd_layer_bytes(v3, 2, 64) == 917'504);
  CHECK(g5sim::afd_layer_bytes(v3, 3, 64) == 64 * 129'024);
  CHECK(g5sim::afd_layer_bytes(v3, 60, 1) == 129'024);
  // SG2262 attention (no nodes: 8 C2C links of 56 GB/s, 250 ns) x 4 chips against H100 FFN (RDMA
  // 50 GB/s, 5,000 ns) x 8 chips: min(4 x 448, 8 x 50) = 400 GB/s after 5,000 ns.
  const g5sim::Chip sg2262 = g5sim::Chip::from_file(g5sim::chip_path("sg2262"));
  const g5sim::Chip h100 = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::AfdLink link = g5sim::afd_link(sg2262, 4, h100, 8);
  CHECK(link.bandwidth_gb_per_s == 400);
  CHECK(link.latency_ns == 5000);
  CHECK(link.attention_link == "c2c");
  CHECK(link.ffn_link == "rdma");
  // 32 tokens of an MoE layer: 4,128,768 B, 5,000 + 4,128,768 / 400 = 15,321.92 ns.
  CHECK(link.picoseconds(4'128'768) == 15'321'920);
  CHECK(link.picoseconds(0) == 0);
}

TEST_CASE("AFD: a DeepSeek-V3 decode with SG2262 attention and H100 experts", "[afd][sim]") {
  const g5sim::Chip sg2262 = g5sim::Chip::from_file(g5sim::chip_path("sg2262"));
  const g5sim::Chip h100 = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model v3 = g5sim::Model::from_file(g5sim::model_path("deepseek-v3"));
  g5sim::Request step;
  step.layers = 4;  // 3 dense layers and the first MoE one
  step.groups = {g5sim::SequenceRecord{64, 1, 2048, ""}};
  step.micro_batches = 2;
  // 16 H100s hold the experts (4 would not: 64 experts a chip in fp8 over 58 layers are 163 GB).
  const g5sim::AfdStep two = g5sim::afd_step(sg2262, 4, h100, 16, v3, step);
  REQUIRE(two.micro_batch_groups.size() == 2);
  CHECK(g5sim::mix_text(two.micro_batch_groups[0]) == "32x1@2048");
  CHECK(g5sim::mix_text(two.micro_batch_groups[1]) == "32x1@2048");
  // Each micro-batch's 32 tokens, each way: 3 dense layers x 32 x 14,336 + 32 x 129,024 =
  // 1,376,256 + 4,128,768 = 5,505,024 B; two micro-batches: 11,010,048 B.
  CHECK(two.dispatch_bytes == 11'010'048);
  CHECK(two.combine_bytes == 11'010'048);
  REQUIRE(two.stages.size() == 4);
  // The link: min(4 x 448, 16 x 50) = 800 GB/s after 5,000 ns. The MoE layer's 4,128,768 B:
  // 5,000 + 5,160.96 ns; a dense layer's 458,752 B: 5,000 + 573.44 ns.
  CHECK(two.link.bandwidth_gb_per_s == 800);
  CHECK(two.stages[3][0].dispatch_ps == 10'160'960);
  CHECK(two.stages[0][1].combine_ps == 5'573'440);
  // The sides are each micro-batch's own simulations, alike for alike micro-batches. Four H100s
  // cannot hold the FFN side: the error says so.
  const g5sim::AfdStep tight = g5sim::afd_step(sg2262, 4, h100, 4, v3, step);
  REQUIRE(tight.warnings.size() == 1);
  CHECK_THAT(tight.warnings[0], Catch::StartsWith("ffn: ") && Catch::Contains("it does not fit"));
  CHECK(two.warnings.empty());
  step.strict_capacity = true;
  CHECK_THROWS_WITH(g5sim::afd_step(sg2262, 4, h100, 4, v3, step), Catch::Contains("it does not fit"));
  step.strict_capacity = false;
  for (std::size_t l = 0; l < 4; ++l) {
    CHECK(two.stages[l][0].attention_ps > 0);
    CHECK(two.stages[l][0].ffn_ps > 0);
    CHECK(two.stages[l][0].attention_ps == two.stages[l][1].attention_ps);
  }
  // The attention side's layers sum to its whole run (the embedding in layer 0, the head in 3).
  g5sim::Request side = step;
  side.groups = two.micro_batch_groups[0];
  side.micro_batches = 1;
  side.scope = "attention";
  side.tp = 1;
  side.ep = 1;
  side.dp = 4;
  std::uint64_t attention = 0;
  for (const auto& layer : two.stages) attention += layer[0].attention_ps;
  CHECK(attention == g5sim::simulate(sg2262, v3, side).total_ps);
  CHECK(two.schedule.total_ps == g5sim::afd_schedule(two.stages).total_ps);
  // Pipelined: less than the stages one after the other.
  std::uint64_t serial = 0;
  for (const auto& layer : two.stages) {
    for (const g5sim::AfdStage& s : layer) serial += s.attention_ps + s.dispatch_ps + s.ffn_ps + s.combine_ps;
  }
  CHECK(two.schedule.total_ps < serial);
  // One micro-batch: every stage in turn, its total their sum.
  step.micro_batches = 1;
  const g5sim::AfdStep one = g5sim::afd_step(sg2262, 4, h100, 16, v3, step);
  std::uint64_t sum = 0;
  for (const auto& layer : one.stages)
    sum += layer[0].attention_ps + layer[0].dispatch_ps + layer[0].ffn_ps + layer[0].combine_ps;
  CHECK(one.schedule.total_ps == sum);
  CHECK(one.dispatch_bytes == two.dispatch_bytes);
}

TEST_CASE("AFD: bad steps name their field", "[afd]") {
  const g5sim::Chip h100 = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model v3 = g5sim::Model::from_file(g5sim::model_path("deepseek-v3"));
  g5sim::Request step;
  auto field_of = [&](std::uint64_t a, std::uint64_t f) {
    try {
      (void)g5sim::afd_step(h100, a, h100, f, v3, step);
    } catch (const g5sim::ConfigError& e) {
      return e.field();
    }
    return std::string("none");
  };
  CHECK(field_of(1, 1) == "groups");
  step.groups = {g5sim::SequenceRecord{2, 1, 128, ""}};
  CHECK(field_of(0, 1) == "attention_chips");
  step.micro_batches = 65;
  CHECK(field_of(1, 1) == "micro_batches");
  // 2 sequences run as 2 micro-batches, whatever more were asked for.
  step.micro_batches = 4;
  CHECK(g5sim::afd_step(h100, 1, h100, 8, v3, step).micro_batches == 2);
  step.micro_batches = 1;
  step.tp = 2;
  CHECK(field_of(1, 1) == "tp");
}

}  // namespace test_afd
