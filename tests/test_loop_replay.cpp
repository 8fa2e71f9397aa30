// Exact replay of fa2's chunk loops (ops/loop_replay.hpp): which loops are cut, and runs whose
// JSON is the same byte for byte with and without replay.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "g5sim/run_options.hpp"
#include "ops/attention_plan.hpp"
#include "replay_pair.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_loop_replay {

namespace {

std::string source(const std::string& path) { return std::string(G5SIM_TEST_SOURCE_DIR) + "/" + path; }

using replay_test::Pair;
using replay_test::without_replay_line;

Pair both_ways(const std::string& chip_name, const std::string& model_name, const g5sim::Request& request) {
  return replay_test::both_ways(g5sim::Chip::from_file(g5sim::chip_path(chip_name)),
                                g5sim::Model::from_file(source("configs/models/" + model_name + ".yaml")), request);
}

// Every op's start, end, bytes, commands, bound and idle gap, as the JSON writes them.
void check_identical(const Pair& p) {
  CHECK(p.full.replayed_commands == 0);
  CHECK(p.replayed.command_count == p.full.command_count);
  CHECK(p.replayed.simulated_commands + p.replayed.replayed_commands == p.replayed.command_count);
  CHECK(p.replayed.total_ps == p.full.total_ps);
  CHECK(without_replay_line(p.replayed.json()) == without_replay_line(p.full.json()));
}

// Full-square attention (--prefill-attention full): every core runs the same blocks whatever the
// split; causal prefill is cut only when its heads divide evenly over the cores (below).
g5sim::Request prefill(std::uint64_t ctx, const std::string& attention = "full") {
  g5sim::Request r;
  r.phase = "prefill";
  r.ctx = ctx;
  r.batch = 1;
  r.prefill_attention = attention;
  return r;
}

ops::AttentionBlock block(std::vector<std::uint64_t> chunks) {
  ops::AttentionBlock b;
  b.rows = 64;
  b.chunk_tokens = std::move(chunks);
  b.first_pass = true;
  return b;
}

}  // namespace

TEST_CASE("loop replay cuts a block's alike chunk iterations, keeping the first ones and the tail", "[loop_replay]") {
  using ops::CutLoop;
  ops::AttentionPlan plan;
  plan.buffers = 2;  // iteration i computes chunk i and queues chunk i + 2
  plan.cores.resize(2);
  for (auto& core : plan.cores) {
    core.blocks = {block({16, 16, 16, 16, 16, 16, 16, 5}), block({16, 16, 16, 16, 16}), block({16, 16})};
  }
  // Block 0: iterations 0..4 compute 16 keys and queue 16 (alike), 5 queues the short 5, 6 and 7
  // queue nothing and 7 computes 5: one run [0, 5); kept 2, so 3 are left out. Block 1:
  // iterations 0..2 queue 16, 3 and 4 nothing: a run [0, 3), 1 left out. Block 2: two iterations
  // queueing nothing, the block's last: no iteration after them, nothing cut.
  const std::vector<CutLoop> cuts = ops::droppable_iterations(plan, 2);
  CHECK(cuts == std::vector<CutLoop>{{0, 0, 2, 3}, {1, 0, 2, 1}});
  const ops::AttentionPlan cut = ops::with_iterations_dropped(plan, cuts);
  for (const auto& core : cut.cores) {
    REQUIRE(core.blocks.size() == 3);
    // The first 2 chunks, then from 5 on (16, 16, 5); block 1: 2, then from 3 on.
    CHECK(core.blocks[0].chunk_tokens == std::vector<std::uint64_t>{16, 16, 16, 16, 5});
    CHECK(core.blocks[1].chunk_tokens == std::vector<std::uint64_t>{16, 16, 16, 16});
    CHECK(core.blocks[2].chunk_tokens == plan.cores[0].blocks[2].chunk_tokens);
  }

  SECTION("a multiple of the periods left out: 3 rounded down to 2, the iterations just before the run's end") {
    const std::vector<CutLoop> even = ops::droppable_iterations(plan, 2, 2);
    CHECK(even == std::vector<CutLoop>{{0, 0, 3, 2}});
    CHECK(ops::with_iterations_dropped(plan, even).cores[0].blocks[0].chunk_tokens ==
          std::vector<std::uint64_t>{16, 16, 16, 16, 16, 5});
  }
  SECTION("cores whose last chunks differ (a striped split's uneven tokens) are cut alike, each keeping its own") {
    plan.cores[1].blocks[0].chunk_tokens.back() = 6;
    const std::vector<CutLoop> differ = ops::droppable_iterations(plan, 2);
    CHECK(differ == cuts);
    CHECK(ops::with_iterations_dropped(plan, differ).cores[1].blocks[0].chunk_tokens ==
          std::vector<std::uint64_t>{16, 16, 16, 16, 6});
  }
  SECTION("cores whose blocks differ in chunk count are not one unit: nothing is cut") {
    plan.cores[1].blocks[0].chunk_tokens.insert(plan.cores[1].blocks[0].chunk_tokens.begin(), 16);
    CHECK(ops::droppable_iterations(plan, 2).empty());
  }
  SECTION("a short chunk in the middle breaks block 0 into runs of 1: only block 1 is cut") {
    for (auto& core : plan.cores) core.blocks[0].chunk_tokens[3] = 8;
    CHECK(ops::droppable_iterations(plan, 2) == std::vector<CutLoop>{{1, 0, 2, 1}});
  }
  SECTION("a core without blocks does not stop the others") {
    plan.cores[1].blocks.clear();
    CHECK(ops::droppable_iterations(plan, 2) == cuts);
  }
  SECTION("a band of trimmed rows is runs of its own, cut like any other") {
    for (auto& core : plan.cores) {
      core.blocks = {block(std::vector<std::uint64_t>(12, 16))};
      core.blocks[0].band_rows = {48, 48, 48, 16, 16, 16};  // chunks 6..11 (rows 64 before)
    }
    // Runs: [0, 6) of 64 rows; [6, 9) of 48; 9 (16 rows, queues chunk 11); [10, 12) queue
    // nothing and end the block. Kept 2: 4 and 1 left out.
    const std::vector<CutLoop> band = ops::droppable_iterations(plan, 2);
    CHECK(band == std::vector<CutLoop>{{0, 0, 2, 4}, {0, 6, 2, 1}});
    // Kept: chunks 0, 1, 6, 7, 9, 10, 11; the band is the last five of them.
    const ops::AttentionPlan cut_band = ops::with_iterations_dropped(plan, band);
    const ops::AttentionBlock& b = cut_band.cores[0].blocks[0];
    CHECK(b.chunk_tokens.size() == 7);
    CHECK(b.band_rows == std::vector<std::uint32_t>{48, 48, 16, 16, 16});
    CHECK(b.chunk_rows(1) == 64);
    CHECK(b.chunk_rows(2) == 48);
  }
}

TEST_CASE("loop replay: a V3 prefill attention block on SG2262, exactly as simulated in full", "[loop_replay]") {
  const Pair p = both_ways("sg2262", "deepseek-v3", [] {
    g5sim::Request r = prefill(8192);
    r.scope = "block";
    return r;
  }());
  check_identical(p);
  // The automatic sharding is tp 8: 128 / 8 = 16 heads, 16 sequences of 8192 query tokens over
  // 64 cores (full-square prefill: one range each) = 2048 tokens, one item of 2048 rows per core.
  // Tiles (ops/attention_plan.hpp) in 2,097,152 B: 2048 rows need 2048 x (192 x 2 + 130 x 4) =
  // 1,851,392 B; with 16-token chunks the scores add 2048 x 16 x 4 = 131,072 and four 16-row
  // buffers of 640 B rows 40,960: 2,023,424 B fit, 32-token chunks do not (2,154,496 with two).
  // So one block of 8192 / 16 = 512 chunks per core; beyond 10 kept iterations and the tail of
  // 4 + 1 there are 497, of which a multiple of 12 is left out: 492 iterations of 6 TIU commands
  // (S, softmax, exp, P V, exp, rescale) and 1 load: 492 x 7 x 64 = 220,416 commands.
  CHECK(p.replayed.replayed_commands == 220'416);
  CHECK(p.replayed.table().find("repeated chunk iterations of fa2") != std::string::npos);
}

TEST_CASE("loop replay of causal prefill: cut when the heads and the cores divide one another", "[loop_replay]") {
  auto causal_block = [](std::uint64_t tp, std::uint64_t ctx = 8192) {
    g5sim::Request r = prefill(ctx, "causal");
    r.scope = "block";
    r.tp = tp, r.ep = 1, r.dp = 1;
    return r;
  };
  // tp 1: 128 heads (MHA streams of one query head each) over 64 cores, 2 per core, all 8192 query
  // tokens of each: every core runs the same causal blocks, so their chunk loops are cut.
  const Pair aligned = both_ways("sg2262", "deepseek-v3", causal_block(1));
  check_identical(aligned);
  CHECK(aligned.replayed.replayed_commands > 0);
  // tp 8: 16 heads over 64 cores, 4 cores a head. At 8192 tokens a core's 2048 rows are one block:
  // striped (core j: tokens j, j + 4, ...) it would span all 8192 positions and compute a band of
  // 512-row tiles, about 11 % more than early and late parts of 1024 tokens do, past the 1 %
  // margin: parts, whose blocks differ from core to core, nothing cut.
  const Pair early_late = both_ways("sg2262", "deepseek-v3", causal_block(8, 8192));
  check_identical(early_late);
  CHECK(early_late.replayed.replayed_commands == 0);
  // At 32768 tokens, 8192 a core in 4 blocks of 2048 rows, stripes cost 0.3 % more: striped.
  // Block b streams keys up to 8192 (b + 1) in 16-token chunks, 512 (b + 1) of them (tiles as
  // above). Its first row (position 8192 b + j, j < 4) sees chunks up to 512 b; chunk 512 b + m
  // is first seen by item token 2048 b + 4 m, so with band tiles of 2048 / 4 = 512 rows chunks
  // up to 512 b + 127 take 2048 rows, the next 128 1536, then 1024, then 512, and the last 4
  // queue nothing. Runs (kept 10, a multiple of 12 left out): block 0: 128, 128, 128, 124 -> 4 x
  // 108 = 432; block 1: 640 -> 624, then 3 x 108: 948; block 2: 1152 -> 1140, 1464; block 3:
  // 1664 -> 1644, 1968. 4,812 iterations of 7 commands on 64 cores: 2,155,776.
  const Pair striped = both_ways("sg2262", "deepseek-v3", causal_block(8, 32768));
  check_identical(striped);
  CHECK(striped.replayed.replayed_commands == 2'155'776);
  // tp 8 on the first 40 cores: 16 heads and 40 cores divide neither way, the tokens go in early
  // and late parts, the cores' blocks differ: nothing is cut, and it is still exact.
  const Pair parts =
      replay_test::both_ways(g5sim::Chip::from_file(g5sim::chip_path("sg2262")).with_cores(40),
                             g5sim::Model::from_file(source("configs/models/deepseek-v3.yaml")), causal_block(8));
  check_identical(parts);
  CHECK(parts.replayed.replayed_commands == 0);
  CHECK(parts.replayed.table().find("repeated chunk iterations of fa2") == std::string::npos);
}

TEST_CASE("loop replay: steps of a few layers, other cores, chips and models, exactly as in full", "[loop_replay]") {
  struct Case {
    const char *what, *chip, *model;
    std::uint64_t ctx;
    std::string scope = "step", kv_dtype = "bf16";
    std::optional<std::uint64_t> layers, cores;
    bool cut = true;  ///< whether some loop is cut
  };
  const std::vector<Case> cases{
      {"V3, 2 layers, fp8 KV", "sg2262", "deepseek-v3", 8192, "step", "fp8", 2, std::nullopt, true},
      {"V3 block on 16 cores", "sg2262", "deepseek-v3", 4096, "block", "bf16", std::nullopt, 16, true},
      {"V2-Lite, 3 layers", "sg2262", "deepseek-v2-lite", 4096, "step", "bf16", 3, std::nullopt, true},
      {"Qwen3-8B block on BM1684X", "bm1684x", "qwen3-8b", 4096, "block", "bf16", std::nullopt, std::nullopt, true},
      {"V3 block on 64 of H800's cores", "h800", "deepseek-v3", 8192, "block", "bf16", std::nullopt, 64, true},
      // 8 SMs of H800: the state repeats every two iterations (DMA and tensor phases alternate).
      {"Qwen3-8B block on 8 of H800's cores", "h800", "qwen3-8b", 3000, "block", "bf16", std::nullopt, 8, true},
      // 16 sequences' tokens over 7 cores: the ranges differ, so do the blocks; nothing is cut.
      {"7 cores", "sg2262", "deepseek-v3", 8192, "block", "bf16", std::nullopt, 7, false},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      g5sim::Request r = prefill(c.ctx);
      r.scope = c.scope;
      r.kv_dtype = c.kv_dtype;
      r.layers = c.layers;
      r.cores = c.cores;
      const Pair p = both_ways(c.chip, c.model, r);
      check_identical(p);
      CHECK((p.replayed.replayed_commands > 0) == c.cut);
    }
  }
}

TEST_CASE("replay changes nothing only in one decode attention block", "[loop_replay]") {
  const g5sim::Model model = g5sim::Model::from_file(g5sim::shipped_model_path());
  g5sim::Request r;
  r.scope = "block";
  CHECK(g5sim::why_option_does_not_apply("replay", model, r) ==
        "one decode attention block has no layers to replay and no prefill chunk loops");
  r.phase = "prefill";
  CHECK(g5sim::why_option_does_not_apply("replay", model, r).empty());
}

TEST_CASE("loop replay inside layer replay: whole prefill steps, exactly as simulated in full", "[loop_replay][slow]") {
  SECTION("V3, 4096 tokens: 3 dense and 58 MoE layers, each fa2's loops cut") {
    const Pair p = both_ways("sg2262", "deepseek-v3", prefill(4096));
    check_identical(p);
    CHECK(p.replayed.table().find("identical layers and repeated chunk iterations of fa2") != std::string::npos);
  }
  SECTION("micro-batches: a layer's commands overlap the next one's") {
    g5sim::Request r = prefill(4096);
    r.batch = 2;
    r.micro_batches = 2;
    const Pair p = both_ways("sg2262", "deepseek-v3", r);
    check_identical(p);
    CHECK(p.replayed.replayed_commands > 0);
  }
  SECTION("Qwen3-30B-A3B (GQA, MoE)") {
    const Pair p = both_ways("sg2262", "qwen3-30b-a3b", prefill(4096));
    check_identical(p);
    CHECK(p.replayed.replayed_commands > 0);
  }
  SECTION("V3 causal, 8 sequences over tp 1 ep 8 dp 8: 128 heads over 64 cores, each fa2's loops cut") {
    g5sim::Request r = prefill(4096, "causal");
    r.batch = 8;
    const Pair p = both_ways("sg2262", "deepseek-v3", r);
    check_identical(p);
    CHECK(p.replayed.table().find("identical layers and repeated chunk iterations of fa2") != std::string::npos);
  }
}

TEST_CASE("a long prefill step is simulated through its cut loops, not refused", "[loop_replay][slow]") {
  // 64k tokens: 3.9e9 commands in full, far above the 2^27 default; the cut program (a few
  // layers, 10 iterations of each row block kept) simulates 2.3e7 of them.
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
  const g5sim::Model model = g5sim::Model::from_file(g5sim::shipped_model_path());
  // Causal, one sequence per chip of tp 1 ep 8 dp 8: the heads divide over the cores (above).
  g5sim::Request r = prefill(65536, "causal");
  r.batch = 8;
  r.max_commands = std::uint64_t{1} << 25;
  const g5sim::Result result = g5sim::simulate(chip, model, r);
  CHECK(result.simulated_commands < (std::uint64_t{1} << 25));
  CHECK(result.command_count > 100 * result.simulated_commands);
  r.replay = false;  // every command: refused by the estimate, at once
  CHECK_THROWS_WITH(g5sim::simulate(chip, model, r), Catch::Contains("max_commands"));
}

}  // namespace test_loop_replay
