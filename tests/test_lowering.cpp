// Lowering: command counts and a whole schedule derived by hand.
#include <catch2/catch.hpp>

#include "hw/chip.hpp"
#include "models/model_spec.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"
#include "ops/timeline.hpp"
#include "sim/simulator.hpp"
#include "test_configs.hpp"
#include "tools/simulation.hpp"

TEST_CASE("one small matmul on one core: commands and schedule by hand", "[ops][lowering]") {
  // Tiny chip: 1 core, TIU 1 cycle = 1 ps, no start-up cycles, GDMA 1 B/ps, no start-up latency.
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1000, 4), "tiny");
  ops::OpGraph g;
  ops::OpNode mm;
  mm.name = "mm";
  mm.kind = ops::OpKind::matmul;
  mm.mm = ops::MatmulShape{1, 16, 64, 64};
  mm.flops = 2 * 16 * 64 * 64;
  ops::add_op(g, mm);
  const ops::Lowered lowered = ops::lower(g, chip, {});
  // Everything fits one tile (2*(16*64 + 64*64)*2 + 2*16*64*4 = 28,672 B <= 1 MiB):
  // GDMA: load A, load B, store C; TIU: one instruction. No consumers, so no messages.
  REQUIRE(lowered.program.command_count(sim::Engine::tiu) == 1);
  REQUIRE(lowered.program.command_count(sim::Engine::gdma) == 3);
  const sim::Trace t = sim::Simulator(chip).run(lowered.program);
  // A = 16*64*2 = 2,048 B and B = 64*64*2 = 8,192 B load together at 0.5 B/ps each:
  //   A ends at 4,096 ps; B then has 8,192 - 2,048 = 6,144 B left alone at 1 B/ps: ends at 10,240.
  // TIU: ceil(16/16) * ceil(64/8) * ceil(64/(128/8)) = 1 * 8 * 4 = 32 cycles: 10,240 -> 10,272.
  // Store C = 16*64*2 = 2,048 B: 10,272 -> 12,320.
  CHECK(t.records(0, sim::Engine::gdma)[0].end == 4096);
  CHECK(t.records(0, sim::Engine::gdma)[1].end == 10240);
  CHECK(t.records(0, sim::Engine::tiu)[0].start == 10240);
  CHECK(t.records(0, sim::Engine::tiu)[0].end == 10272);
  CHECK(t.records(0, sim::Engine::gdma)[2].start == 10272);
  CHECK(t.records(0, sim::Engine::gdma)[2].end == 12320);
  const ops::Timeline tl = ops::build_timeline(g, chip, lowered, t);
  CHECK(tl.ops[0].hbm_bytes == 2048 + 8192 + 2048);
  CHECK(tl.ops[0].start == 0);
  CHECK(tl.ops[0].end == 12320);
}

TEST_CASE("decode history read: one chunk per core when each core's share is small", "[ops][lowering]") {
  // SG2262 test chip, DeepSeek-V3, B = 1, kv_len = 4096: 4096 / 64 = 64 history rows per core,
  // one chunk each (64 <= 512), 64 x 576 x 2 = 73,728 B. So kv_cache_read is exactly 64 GDMA
  // commands of 73,728 B (64 x 73,728 = 4,718,592 = 4096 x 1152).
  const hw::Chip chip = hw::chip_from_yaml(test_configs::kSg2262, "sg2262-test");
  const auto model = models::model_from_yaml(test_configs::kDeepSeekV3, "v3");
  const auto w = models::make_workload(models::Phase::decode, 1, 4096, std::nullopt, models::KvFormat::bf16);
  const auto r = tools::simulate_block(chip, model, w, {});
  const ops::OpTiming& read = r.timeline.op(ops::OpKind::kv_cache_read);
  CHECK(read.commands[static_cast<std::size_t>(sim::Engine::gdma)] == 64);
  CHECK(read.commands[static_cast<std::size_t>(sim::Engine::tiu)] == 0);
  for (const sim::CoreProgram& core : r.lowered.program.cores) {
    std::size_t mine = 0;
    for (const sim::Command& c : core.queue(sim::Engine::gdma)) {
      if (c.op != read.id) continue;
      ++mine;
      CHECK(c.amount == 73'728);
    }
    CHECK(mine == 1);
  }
  // fa2 per core: one chunk = 4 TIU commands (Q K^T, softmax, P V, rescale), Q load + partial store.
  const ops::OpTiming& fa2 = r.timeline.op(ops::OpKind::fa2);
  CHECK(fa2.commands[static_cast<std::size_t>(sim::Engine::tiu)] == 64 * 4);
  CHECK(fa2.commands[static_cast<std::size_t>(sim::Engine::gdma)] == 64 * 2);
}
