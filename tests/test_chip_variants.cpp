// Engines and resources are chip data: chips with another engine set load and simulate with no
// code change (an extra DMA engine per core, no SDMA, an L2 SRAM), and the dependency rule a chip
// declares is enforced when commands are built.
#include <catch2/catch.hpp>

#include <string>

#include "api/op_run.hpp"
#include "api/simulation.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "models/graph_helpers.hpp"
#include "models/model_spec.hpp"
#include "ops/attention_plan.hpp"
#include "ops/lowering.hpp"
#include "ops/timeline.hpp"
#include "sim/simulator.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_chip_variants {

namespace {

using ops::OpKind;
using test_configs::decode;

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}

const models::ModelSpec& v3() {
  static const models::ModelSpec m = models::model_from_yaml(test_configs::kDeepSeekV3, "v3");
  return m;
}

api::Simulation block(const hw::Chip& chip, const models::Workload& w, const std::string& route = "") {
  ops::LoweringOptions options;
  options.kv_read_engine = route;
  return api::simulate_block(chip, v3(), w, options);
}

// SG2262 with a third DMA engine per core that streams the decode history on a channel of its own.
hw::Chip with_kv_dma() {
  std::string text = test_configs::kSg2262;
  text = replaced(text, "waits_on: [gdma, sdma, cdma, hau]", "waits_on: [gdma, sdma, cdma, hau, kvdma]");
  text = replaced(text, "roles: [tiles, kv_stream]", "roles: [tiles]");
  text.insert(text.find("weight_layout:"),
              "  kvdma: {kind: dma, roles: [kv_stream], waits_on: [tiu, hau], crosses: [ddr], bandwidth_gb_per_s: "
              "68.264, efficiency: 0.9, startup_ns: 100, outstanding: 4, bytes_in_flight: 32768}\n");
  return hw::chip_from_yaml(text, "sg2262-kvdma");
}

// SG2262 without SDMA: GDMA takes every DMA role.
hw::Chip without_sdma() {
  std::string text = test_configs::kSg2262;
  text = replaced(text, "waits_on: [gdma, sdma, cdma, hau]", "waits_on: [gdma, cdma, hau]");
  text = replaced(text, "roles: [tiles, kv_stream]", "roles: [tiles, kv_stream, cross_core, gather]");
  const auto sdma = text.find("  sdma:");
  text.erase(sdma, text.find('\n', sdma) + 1 - sdma);
  return hw::chip_from_yaml(text, "sg2262-no-sdma");
}

}  // namespace

TEST_CASE("a chip with an extra DMA engine per core streams the history on it", "[hw][engines][variants]") {
  const hw::Chip chip = with_kv_dma();
  REQUIRE(chip.engines.size() == 6);
  const hw::EngineId kvdma = *chip.find_engine("kvdma"), gdma = *chip.find_engine("gdma");
  // The first kv_stream engine is the default route.
  CHECK(chip.default_kv_engine() == kvdma);
  const auto w = decode(4, 8192);
  const auto r = block(chip, w);
  const ops::OpTiming& read = r.timeline.op(OpKind::kv_cache_read);
  const ops::OpTiming& fa2 = r.timeline.op(OpKind::fa2);
  // All of the history, 4 x 8192 x 576 x 2 = 37,748,736 bytes, moves on kvdma; none on gdma.
  CHECK(read.hbm_bytes == 37'748'736);
  CHECK(read.commands[gdma] == 0);
  CHECK(read.commands[kvdma] > 0);
  CHECK(read.engines == "KVDMA");
  // fa2's tensor commands name kvdma ids (their chunks), and the read overlaps fa2.
  std::size_t tensor_waits_on_kvdma = 0;
  for (const sim::CoreProgram& core : r.lowered.program.cores) {
    for (const sim::Command& c : core.queue(chip.tensor_engine())) {
      if (c.op == fa2.id && c.wait_on(kvdma) != 0) ++tensor_waits_on_kvdma;
    }
  }
  CHECK(tensor_waits_on_kvdma > 0);
  CHECK(fa2.start < read.end);
  // The command counts of the JSON and table list the chip's six engines.
  CHECK(r.timeline.commands[kvdma] == r.lowered.program.command_count(kvdma));
  // With its own channel the history read no longer queues behind fa2's loads on GDMA: the block
  // is faster than on the same chip with the read on GDMA.
  const auto on_gdma = block(test_configs::sg2262(), w);
  CHECK(r.timeline.total < on_gdma.timeline.total);
  // A whole decoder step runs too.
  models::StepOptions step;
  step.layers = 4;
  const auto s = api::simulate_step(chip, v3(), decode(1, 2048), step, {});
  CHECK(s.timeline.total > 0);
}

TEST_CASE("a chip without SDMA runs every DMA role on GDMA", "[hw][engines][variants]") {
  const hw::Chip chip = without_sdma();
  REQUIRE(chip.engines.size() == 4);
  CHECK(!chip.find_engine("sdma"));
  const hw::EngineId gdma = *chip.find_engine("gdma");
  const auto r = block(chip, decode(2, 4096));
  // The combine gathers fa2's partials on GDMA now.
  const ops::OpTiming& combine = r.timeline.op(OpKind::fa2_combine);
  CHECK(combine.engines == "TIU+GDMA");
  CHECK(combine.commands[gdma] > 0);
  // 2 x 4096 x 576 x 2 = 9,437,184 bytes of history, as on SG2262.
  CHECK(r.timeline.op(OpKind::kv_cache_read).hbm_bytes == 9'437'184);
  // The SDMA route does not exist here: a clear error in the library's words.
  CHECK_THROWS_WITH(block(chip, decode(2, 4096), "sdma"),
                    "chip 'SG2262-test' has no DMA engine 'sdma' (its DMA engines: gdma)");
}

TEST_CASE("an L2 SRAM on the path shares its bandwidth and adds its latency", "[hw][engines][variants]") {
  // Tiny chip: 1 B/ps channels, DDR 100 B/ps, DDR latency 10 ns; an L2 of 500 GB/s = 0.5 B/ps
  // and 20 ns that GDMA transfers cross on their way to DDR.
  std::string text = test_configs::tiny_chip(2, 100000, 4, 0, 10);
  text += "l2: {capacity_bytes: 67108864, bandwidth_gb_per_s: 500, latency_ns: 20, caches_reads: false}\n";
  text = replaced(text, "waits_on: [tiu], crosses: [ddr], bandwidth_gb_per_s: 1000, efficiency: 1, startup_ns",
                  "waits_on: [tiu], crosses: [l2, ddr], bandwidth_gb_per_s: 1000, efficiency: 1, startup_ns");
  const hw::Chip chip = hw::chip_from_yaml(text, "tiny-l2");
  REQUIRE(chip.l2.has_value());
  CHECK(chip.l2->capacity_bytes == 67'108'864);
  const hw::EngineId gdma = test_configs::engine::gdma;
  sim::Command load;
  load.kind = sim::CommandKind::transfer;
  load.amount = 1000;
  SECTION("alone: the round trip is the farther resource's, 20 ns; the L2's 0.5 B/ps binds") {
    sim::Program p = sim::Program::with_queues(1, 4);
    p.cores[0].queue(gdma) = {load};
    const sim::Trace t = sim::Simulator(chip).run(p);
    // 20,000 ps + 1,000 B / 0.5 B/ps = 22,000 ps.
    CHECK(t.records(0, gdma)[0].end == 22'000);
  }
  SECTION("two cores share the L2: 0.25 B/ps each") {
    sim::Program p = sim::Program::with_queues(2, 4);
    p.cores[0].queue(gdma) = {load};
    p.cores[1].queue(gdma) = {load};
    const sim::Trace t = sim::Simulator(chip).run(p);
    // 20,000 ps + 1,000 B / 0.25 B/ps = 24,000 ps on both.
    CHECK(t.records(0, gdma)[0].end == 24'000);
    CHECK(t.records(1, gdma)[0].end == 24'000);
  }
  SECTION("a whole attention block runs on it") {
    CHECK(block(hw::chip_from_yaml(replaced(test_configs::kSg2262, "engines:",
                                            "l2: {capacity_bytes: 134217728, bandwidth_gb_per_s: 2000, latency_ns: "
                                            "40, caches_reads: false}\nengines:"),
                                   "sg2262-l2"),
                decode(1, 1024))
              .timeline.total > 0);
  }
}

TEST_CASE("a wait the chip's rule forbids is rejected when the chip is read, or when commands are built",
          "[hw][engines][rule]") {
  SECTION("loading: tiu cannot wait on SDMA, whose cross-core reads the combine consumes") {
    // The rule's line: `waits_on` of tiu is on line 9 of kSg2262, column 5 (the key's position).
    CHECK_THROWS_WITH(hw::chip_from_yaml(replaced(test_configs::kSg2262, "waits_on: [gdma, sdma, cdma, hau]",
                                                  "waits_on: [gdma, cdma, hau]"),
                                         "rule"),
                      "<memory:rule>:9:5: engines.tiu.waits_on: tiu must be able to wait on sdma (a DMA engine with "
                      "roles kv_resident, cross_core, gather, and tiu consumes what it moves); add sdma to this list");
  }
  SECTION("loading: a new kv_stream engine the tensor engine cannot wait on (the probe's gdma2)") {
    const std::string text = replaced(test_configs::kSg2262, "  sdma:",
                                      "  gdma2: {kind: dma, roles: [kv_stream], waits_on: [tiu, hau], crosses: [ddr], "
                                      "bandwidth_gb_per_s: 68.264, efficiency: 0.9, startup_ns: 100, outstanding: 4, "
                                      "bytes_in_flight: 32768}\n  sdma:");
    CHECK_THROWS_WITH(hw::chip_from_yaml(text, "gdma2"),
                      Catch::Contains("engines.tiu.waits_on: tiu must be able to wait on gdma2 (a DMA engine with "
                                      "roles kv_stream, and tiu consumes what it moves); add gdma2 to this list"));
    // With gdma2 added to the rule the chip loads and streams the history on it.
    const hw::Chip fixed = hw::chip_from_yaml(
        replaced(text, "waits_on: [gdma, sdma, cdma, hau]", "waits_on: [gdma, gdma2, sdma, cdma, hau]"), "gdma2");
    CHECK(block(fixed, decode(2, 4096), "gdma2").timeline.total > 0);
  }
  SECTION("loading: the sort engine must wait on the tiles engine and on tiu") {
    CHECK_THROWS_WITH(
        hw::chip_from_yaml(replaced(test_configs::kSg2262, "waits_on: [gdma, tiu]", "waits_on: [tiu]"), "sort"),
        Catch::Contains("engines.hau.waits_on: hau must be able to wait on gdma (the scores it sorts "
                        "arrive by the tiles engine); add gdma to this list"));
    CHECK_THROWS_WITH(
        hw::chip_from_yaml(replaced(test_configs::kSg2262, "waits_on: [gdma, tiu]", "waits_on: [gdma]"), "sort"),
        Catch::Contains("engines.hau.waits_on: hau must be able to wait on tiu (its commands start "
                        "after the tiu work that produced their inputs); add tiu to this list"));
  }
  SECTION("kernel: a hand-built program naming a forbidden engine") {
    const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1000, 1), "tiny");
    sim::Program p = sim::Program::with_queues(1, 4);
    sim::Command load;
    load.kind = sim::CommandKind::transfer;
    load.amount = 10;
    load.add_wait(test_configs::engine::sdma, 1);  // GDMA may wait on TIU only
    p.cores[0].queue(test_configs::engine::gdma) = {load};
    CHECK_THROWS_WITH(sim::Simulator(chip).run(p),
                      "core 0: a gdma command waits on engine sdma, which chip 'tiny' does not allow (waits_on)");
  }
}

TEST_CASE("SDMA route on a chip with an L2: the history is staged there, round by round", "[hw][engines][l2]") {
  // SG2262 with a 128 MiB L2 (8,192 GB/s, 50 ns): 2,097,152 B per core. B = 1 at 131,072 tokens:
  // 2,048 rows x 1,152 B = 2,359,296 B per core do not fit; 1,820 rows do, two buffers of 910,
  // rounded down to whole 512-row chunks: 4 rounds of 512 rows (589,824 B) per core.
  const hw::Chip chip = hw::chip_from_yaml(
      replaced(
          test_configs::kSg2262, "engines:",
          "l2: {capacity_bytes: 134217728, bandwidth_gb_per_s: 8192, latency_ns: 50, caches_reads: false}\nengines:"),
      "sg2262-l2");
  const auto staged = block(chip, decode(1, 131072), "sdma");
  const auto streamed = block(chip, decode(1, 131072), "gdma");
  const ops::OpTiming& read = staged.timeline.op(OpKind::kv_cache_read);
  CHECK(read.hbm_bytes == 150'994'944);  // every history byte once, DDR -> L2
  CHECK(read.commands[test_configs::engine::sdma] == 64 * 4);
  // fa2's chunk loads come from the L2: its DDR bytes are its Q, 64 cores x 128 rows x 576 x 2 =
  // 9,437,184 B, and its partials, 64 x 128 x (512 x 4 + 8) = 16,842,752 B: the L2 holds the
  // history, so the partials stay in the DDR. Streamed, the L2 is free and the partials go there
  // (ops::decode_split_parts): the Q alone.
  CHECK(staged.timeline.op(OpKind::fa2).hbm_bytes == 9'437'184 + 16'842'752);
  CHECK(streamed.timeline.op(OpKind::fa2).hbm_bytes == 9'437'184);
  // Per core: each round's first L2 load starts only after that round's read has ended (one
  // 512-row chunk per round: every L2 load opens its round).
  const std::uint32_t sdma = test_configs::engine::sdma, gdma = test_configs::engine::gdma;
  auto check_rounds = [&](const api::Simulation& run, std::size_t rounds) {
    for (std::size_t core = 0; core < run.lowered.program.cores.size(); ++core) {
      const auto& reads = run.lowered.program.cores[core].queue(sdma);
      const auto& loads = run.lowered.program.cores[core].queue(gdma);
      std::vector<sim::Tick> read_end, first_load_start;
      for (std::size_t i = 0; i < reads.size(); ++i) {
        if (reads[i].direction == sim::Direction::ddr_to_l2) read_end.push_back(run.trace.records(core, sdma)[i].end);
      }
      for (std::size_t i = 0; i < loads.size(); ++i) {
        if (loads[i].direction == sim::Direction::l2_to_lmem) {
          first_load_start.push_back(run.trace.records(core, gdma)[i].start);
        }
      }
      REQUIRE(read_end.size() == rounds);
      REQUIRE(first_load_start.size() == rounds);
      for (std::size_t r = 0; r < rounds; ++r) CHECK(first_load_start[r] >= read_end[r]);
    }
    // Attention cannot finish before its last history bytes have arrived.
    CHECK(run.timeline.op(OpKind::fa2).end >= run.timeline.op(OpKind::kv_cache_read).end);
  };
  check_rounds(staged, 4);
  // B = 4: 8,192 rows per core, 16 rounds of 512 rows, while local memory holds more chunks ahead
  // than the L2 holds rounds: a chunk's load waits until its round's read has been queued.
  check_rounds(block(chip, decode(4, 131072), "sdma"), 16);
  // One round (the share fits): fa2 starts when the read has ended on every core.
  const auto small = block(chip, decode(4, 8192), "sdma");
  CHECK(small.timeline.op(OpKind::fa2).start == small.timeline.op(OpKind::kv_cache_read).end);
  CHECK(small.timeline.op(OpKind::kv_cache_read).hbm_bytes == 37'748'736);
}

TEST_CASE("decode split partials go through a free L2, and the split is priced at its rate", "[hw][l2][split]") {
  // The SG2262 test chip with a 128 MiB L2 at 8,192 GB/s. V3 absorb decode, B = 1 at 1,024 tokens
  // (128 query rows, b_p = 128 x (512 x 4 + 8) = 263,168 B a piece). t_tok = 76.656 ns as in
  // test_lowering's split test; at the L2's rate P* = sqrt(1,024 x 76.656 x 8,192 / 526,336) =
  // sqrt(1,221.7) = 34.95 -> 35 pieces (at the DDR's 7,741.44 B/ns: 34), and 35 x 263,168 =
  // 9,210,880 B fit the L2.
  const std::string l2 =
      "l2: {capacity_bytes: 134217728, bandwidth_gb_per_s: 8192, latency_ns: 50, caches_reads: %s}\nengines:";
  auto with_l2 = [&](const char* caches, std::uint64_t capacity) {
    std::string line = l2;
    line.replace(line.find("%s"), 2, caches);
    line.replace(line.find("134217728"), 9, std::to_string(capacity));
    return hw::chip_from_yaml(replaced(test_configs::kSg2262, "engines:", line), "sg2262-l2");
  };
  const hw::Chip chip = with_l2("false", 134217728);
  ops::AttentionShape s;
  s.groups = {ops::QueryGroup{1, 1, 1024}};
  s.heads = 128, s.kv_heads = 1, s.qk_dim = 576, s.v_dim = 512, s.kv_elements = 576, s.kv_token_bytes = 1152;
  s.decode = true;
  CHECK(ops::decode_split_parts(s, chip, true) == 35);
  CHECK(ops::decode_split_parts(s, chip, false) == 34);
  // A 4 MiB L2 cannot hold the 35 pieces: the DDR's rate and count.
  CHECK(ops::decode_split_parts(s, with_l2("false", 4194304), true) == 34);
  const ops::AttentionPlan plan = ops::plan_attention(s, chip, false, true);
  CHECK(plan.partials_in_l2);
  CHECK(ops::decode_partial_bytes(s, plan) == 35 * 263'168);

  // The block: fa2 stores its 35 partials into the L2 and fa2_combine reads them there. fa2's DDR
  // bytes are its Q loads alone, 35 x 128 x 576 x 2 = 5,160,960 B; the combine's its output,
  // 128 x 512 x 2 = 131,072 B.
  const auto run = block(chip, decode(1, 1024));
  CHECK(run.timeline.op(OpKind::fa2).hbm_bytes == 5'160'960);
  CHECK(run.timeline.op(OpKind::fa2_combine).hbm_bytes == 131'072);
  // (The block's matmuls keep split-K partials in the L2 too: count fa2's and the combine's.)
  const auto fa2 = run.timeline.op(OpKind::fa2).id, combine = run.timeline.op(OpKind::fa2_combine).id;
  std::uint64_t to_l2 = 0, from_l2 = 0;
  for (const auto& core : run.lowered.program.cores) {
    for (const auto& queue : core.queues) {
      for (const sim::Command& c : queue) {
        if (c.kind != sim::CommandKind::transfer || (c.op != fa2 && c.op != combine)) continue;
        if (c.direction == sim::Direction::lmem_to_l2) to_l2 += c.amount;
        if (c.direction == sim::Direction::l2_to_lmem) from_l2 += c.amount;
      }
    }
  }
  CHECK(to_l2 == 35 * 263'168);
  CHECK(from_l2 == 35 * 263'168);

  // An L2 that caches reads: the 35 pieces all load the sequence's Q; the first from the DDR, the
  // others hit the L2 (the Q of the op, 147,456 B, fits): fa2's DDR bytes are one Q.
  const auto cached = block(with_l2("true", 134217728), decode(1, 1024));
  CHECK(cached.timeline.op(OpKind::fa2).hbm_bytes == 147'456);
}

TEST_CASE("row tiles: a sequence's query rows over a group of cores, its history read once", "[ops][split][l2]") {
  // V3 absorb with 16 query tokens a sequence (a speculative verify): B = 1, q_len 16, 4,096
  // tokens of history, 128 heads on the one latent stream: R = 16 x 128 = 2,048 query rows.
  // On the 64-core test chip (2 MiB local memory) a block of r rows and c-token chunks in b
  // buffers takes 3,208 r + 4 r c + 1,152 b c bytes (Q r x 576 x 2, O r x 514 x 4, scores
  // r x c x 4, chunks): 2,048 and 1,024 rows do not fit with any chunk (3,208 x 1,024 alone is
  // 3,284,992), 512 do with 64-token chunks (1,642,496 + 131,072 + 147,456 = 1,921,024; 128 would
  // need 2,199,552), and with 4 buffers (2,068,480). The tile t: of the 16-lane multiples up to
  // 512, each leaves a core t x ceil(M / G) / P rows per history token with M = 2,048 / t tiles,
  // P = max(1, 64 / M) parts and G = 64 / P cores a part: 16 -> 16 x 2 / 1 = 32, 64 -> 64 / 2,
  // 512 -> 512 / 16, all 32; the tie goes to the largest: M = 4 tiles of 512 rows.
  ops::AttentionShape s;
  s.groups = {ops::QueryGroup{1, 16, 4096}};
  s.heads = 128, s.kv_heads = 1, s.qk_dim = 576, s.v_dim = 512, s.kv_elements = 576, s.kv_token_bytes = 1152;
  s.decode = true;
  const hw::Chip chip = test_configs::sg2262();
  const ops::AttentionPlan plan = ops::plan_attention(s, chip, false, false, ops::AttentionSplit::seq, true);
  CHECK(plan.row_tiles);
  CHECK(plan.row_block == 512);
  CHECK(plan.chunk_tokens == 64);
  CHECK(plan.buffers == 4);
  // Parts: P* for a core's 512 rows of a token (t_tok at least the 76.656 ns of test_lowering's
  // 128-row token) and a part's 2,048 partial rows, b_p = 2,048 x 2,056 = 4,210,688:
  // sqrt(4,096 x t_tok x 7,741.44 / 8,421,376) >= sqrt(4,096 x 76.656 x 0.91925) = 537, so the
  // cap floor(64 / 4) = 16 parts binds: 16 groups of 4 cores, 256 tokens a slice.
  // Core c takes row tile c mod 4 of slice c / 4, four 64-token chunks; the tile holding rows
  // 0..511 reads the slice as the history read, the other three read it again.
  for (std::uint64_t c = 0; c < 64; ++c) {
    INFO("core " << c);
    const ops::CoreAttention& core = plan.cores[c];
    REQUIRE(core.blocks.size() == 1);
    const ops::AttentionBlock& b = core.blocks[0];
    CHECK(b.rows == 512);
    CHECK(b.row_begin == c % 4 * 512);
    CHECK(b.kv_begin == c / 4 * 256);
    CHECK(b.chunk_tokens == std::vector<std::uint64_t>{64, 64, 64, 64});
    CHECK(b.first_pass == (c % 4 == 0));
    CHECK(core.first_pass_tokens == (c % 4 == 0 ? 256 : 0));
  }
  // One partial per slice (over its four tiles), merged by fa2_combine: 16 x 4,210,688 bytes.
  CHECK(plan.partials_per_sequence == std::vector<std::uint64_t>{16});
  CHECK(ops::decode_partial_bytes(s, plan) == 16 * 4'210'688);
  // Without row tiles each of the slices' cores walks its slice four times, one block at a time.
  const ops::AttentionPlan untiled = ops::plan_attention(s, chip, false, false);
  CHECK_FALSE(untiled.row_tiles);
  for (const ops::CoreAttention& core : untiled.cores) CHECK((core.blocks.empty() || core.blocks.size() == 4));

  // The op alone on the chip with a 128 MiB L2 that caches reads: the slice's other tiles and the
  // Q loads of the other slices hit it and the 67,371,008 bytes of partials (16 x 4,210,688, which
  // fit) go through it, so the DDR moves each unique byte once: Q 16 x 128 x 576 x 2 = 2,359,296,
  // the history 4,096 x 1,152 = 4,718,592 and the output 16 x 128 x 512 x 2 = 2,097,152, 9,175,040.
  const hw::Chip cache = hw::chip_from_yaml(
      replaced(test_configs::kSg2262, "engines:",
               "l2: {capacity_bytes: 134217728, bandwidth_gb_per_s: 8192, latency_ns: 50, caches_reads: true}\n"
               "engines:"),
      "sg2262-l2-cache");
  const api::Fa2Request q{1, 16, 4096, 128, 1, 576, 512, true, false};
  const auto cached = api::run_fa2(cache, q, 0);
  CHECK(cached.unique_bytes == 9'175'040);
  CHECK(cached.ddr_bytes == 9'175'040);
}

TEST_CASE("an L2 that caches reads serves operand blocks other cores already read", "[hw][engines][variants][l2]") {
  // The SG2262 test chip with an L2 on the GDMA's path: a scratchpad (caches_reads false), then a
  // cache (true). A 1024 x 4096 x 4096 bf16 matmul on its 64 cores: the work split gives several
  // cores the same rows of A or the same columns of B.
  std::string text = replaced(test_configs::kSg2262, "engines:",
                              "l2: {capacity_bytes: 134217728, bandwidth_gb_per_s: 8192, latency_ns: 50, "
                              "caches_reads: false}\nengines:");
  text = replaced(text, "waits_on: [tiu, hau], crosses: [ddr], bandwidth_gb_per_s: 68.264",
                  "waits_on: [tiu, hau], crosses: [l2, ddr], bandwidth_gb_per_s: 68.264");
  const hw::Chip scratchpad = hw::chip_from_yaml(text, "l2-scratchpad");
  const hw::Chip cache = hw::chip_from_yaml(replaced(text, "caches_reads: false", "caches_reads: true"), "l2-cache");
  const api::MatmulRequest mm{1024, 4096, 4096, hw::DType::bf16, std::nullopt};
  const auto plain = api::run_matmul(scratchpad, mm, 0);
  const auto cached = api::run_matmul(cache, mm, 0);
  // Unique bytes: A 1024 x 4096 x 2 + B 4096 x 4096 x 2 + C 1024 x 4096 x 2 = 8,388,608 +
  // 33,554,432 + 8,388,608 = 50,331,648. The operands (41.9 MB) fit in the 128 MiB L2, so with the
  // cache every block comes from DDR once and C goes out once: exactly the unique bytes.
  CHECK(cached.unique_bytes == 50'331'648);
  CHECK(cached.ddr_bytes == 50'331'648);
  // Without it every core's re-reads come from DDR; the same commands either way (only their
  // route differs). (Time is not compared: here the GDMA channels, not the DDR, bind.)
  CHECK(plain.ddr_bytes > cached.ddr_bytes);
  CHECK(plain.commands == cached.commands);
}

TEST_CASE("nodes: an all-to-all reaches other nodes through the network interface", "[hw][engines][variants][nodes]") {
  // Tiny chip: c2c 100 GB/s = 0.1 B/ps, no latency; nodes of 4 chips, the network interface
  // 25 GB/s = 0.025 B/ps with 1,000 ns of latency; DDR fast and without latency.
  std::string text = test_configs::tiny_chip(1, 1e6, 4);
  text += "nodes: {chips_per_node: 4, rdma_bandwidth_gb_per_s: 25, rdma_latency_ns: 1000}\n";
  const hw::Chip chip = hw::chip_from_yaml(text, "tiny-nodes");
  REQUIRE(chip.rdma_resource.has_value());
  CHECK(chip.resources[*chip.rdma_resource].name == "rdma");
  ops::OpGraph g;
  ops::add_op(g, models::detail::collective_op("a2a", ops::OpKind::all_to_all, 12'000, 8));
  const ops::Lowered lowered = ops::lower(g, chip, {});
  const auto cdma = test_configs::engine::cdma;
  // 8 chips, 4 per node: 7 peers, ceil(12,000 / 7) = 1,715 B each; 4 in other nodes first.
  REQUIRE(lowered.program.command_count(cdma) == 7);
  const sim::Trace t = sim::Simulator(chip).run(lowered.program);
  const auto& sends = t.records(0, cdma);
  // One transfer at a time (outstanding 1). Remote: 1,000,000 ps of latency + 1,715 / 0.025 =
  // 68,600 ps, so each takes 1,068,600 ps: ends 1,068,600 ... 4,274,400. Local: 1,715 / 0.1 =
  // 17,150 ps each: 4,291,550, 4,308,700, 4,325,850.
  CHECK(sends[0].end == 1'068'600);
  CHECK(sends[3].end == 4'274'400);
  CHECK(sends[4].end == 4'291'550);
  CHECK(sends[6].end == 4'325'850);
  // Within one node (4 chips) everything stays on c2c: 3 steps of 4,000 B, 40,000 ps each.
  ops::OpGraph inside;
  ops::add_op(inside, models::detail::collective_op("a2a", ops::OpKind::all_to_all, 12'000, 4));
  const sim::Trace local = sim::Simulator(chip).run(ops::lower(inside, chip, {}).program);
  CHECK(local.records(0, cdma)[2].end == 120'000);
  CHECK_THROWS_WITH(
      hw::chip_from_yaml(test_configs::tiny_chip(1, 1e6, 4) +
                             "nodes: {chips_per_node: 0, rdma_bandwidth_gb_per_s: 25, rdma_latency_ns: 1}\n",
                         "n"),
      Catch::Contains("nodes.chips_per_node: must be a positive integer, got 0"));
}

TEST_CASE("nodes: an expert exchange crosses the network once per node and forwards inside it",
          "[hw][engines][variants][nodes]") {
  // Tiny chip with 2 cores, nodes of 4 chips (c2c 0.1 B/ps, the network 0.025 B/ps after 1 us).
  // 1,000 tokens of 100 B over 8 chips, each to 2 of 16 experts (2 a chip, 8 a node); one other node.
  std::string text = test_configs::tiny_chip(2, 1e6, 4);
  text += "nodes: {chips_per_node: 4, rdma_bandwidth_gb_per_s: 25, rdma_latency_ns: 1000}\n";
  const hw::Chip chip = hw::chip_from_yaml(text, "tiny-nodes");
  ops::OpNode node = models::detail::collective_op("moe_dispatch", ops::OpKind::all_to_all, 175'000, 8);
  auto& c = std::get<ops::CollectiveShape>(node.payload);
  c.tokens = 1'000, c.token_bytes = 100, c.experts = 16, c.top_k = 2;
  ops::OpGraph g;
  ops::add_op(g, node);
  const ops::Lowered lowered = ops::lower(g, chip, {});
  const auto cdma = test_configs::engine::cdma;
  // Network: the other node holds 8 of 16 experts, hit with p = 1 - (8 x 7) / (16 x 15) = 184 / 240:
  // 100,000 B x 1 node x 184 / 240 = 76,666.7 -> one send of 76,667 B on core 0.
  // c2c: a chip holds 2, hit with p = 1 - (14 x 13) / (16 x 15) = 58 / 240; 8 - 1 - 1 = 6 target
  // chips: 100,000 x 58 / 240 x 6 = 145,000 B in 3 sends of 48,334 B on core 1 (the forwarders).
  REQUIRE(lowered.program.cores[0].queue(cdma).size() == 1);
  REQUIRE(lowered.program.cores[1].queue(cdma).size() == 3);
  CHECK(lowered.program.cores[0].queue(cdma)[0].amount == 76'667);
  CHECK(lowered.program.cores[1].queue(cdma)[0].amount == 48'334);
  const sim::Trace t = sim::Simulator(chip).run(lowered.program);
  // At once: the network send ends at 1,000,000 + 76,667 / 0.025 = 4,066,680 ps; the c2c sends at
  // 48,334 / 0.1 = 483,340 ps each: 483,340, 966,680, 1,450,020.
  CHECK(t.records(0, cdma)[0].end == 4'066'680);
  CHECK(t.records(1, cdma)[0].end == 483'340);
  CHECK(t.records(1, cdma)[2].end == 1'450'020);
}

TEST_CASE("SDMA route through the L2 in a step: no layer's fa2 ends before its history has arrived",
          "[hw][engines][l2]") {
  // The run: `g5sim run --batch 4 --ctx 131072 --layers 2 --kv-read-engine sdma` on the
  // shipped SG2262 (its L2 stages the history in 16 rounds per core, automatic sharding).
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
  const g5sim::Model model = g5sim::Model::from_file(g5sim::shipped_model_path());
  g5sim::Request request;
  request.batch = 4;
  request.ctx = 131072;
  request.layers = 2;
  request.kv_read_engine = "sdma";
  const g5sim::Result r = g5sim::simulate(chip, model, request);
  for (int layer = 0; layer < 2; ++layer) {
    CHECK(r.op("fa2", layer).op_end_ps >= r.op("kv_cache_read", layer).op_end_ps);
  }
}

}  // namespace test_chip_variants
