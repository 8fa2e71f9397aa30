// Lowering: command counts and a whole schedule derived by hand.
#include <catch2/catch.hpp>

#include "hw/chip.hpp"
#include "models/model_spec.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"
#include "ops/timeline.hpp"
#include "sim/simulator.hpp"
#include "test_configs.hpp"
#include "tools/op_run.hpp"
#include "tools/simulation.hpp"

TEST_CASE("one small matmul on one core: commands and schedule by hand", "[ops][lowering]") {
  // Tiny chip: 1 core, TIU 1 cycle = 1 ps, no start-up cycles, GDMA 1 B/ps, no start-up latency.
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1000, 4), "tiny");
  ops::OpGraph g;
  ops::OpNode mm;
  mm.name = "mm";
  mm.kind = ops::OpKind::matmul;
  mm.payload = ops::MatmulShape{1, 16, 64, 64, {}};
  mm.flops = 2 * 16 * 64 * 64;
  ops::add_op(g, mm);
  const ops::Lowered lowered = ops::lower(g, chip, {});
  // The tiler splits n in two (16 x 64 x 32 tiles): a smaller first load starts the pipeline
  // sooner. A stays resident (tk = k). GDMA: load A, load B0, load B1, store C0, store C1; TIU: two
  // instructions. No consumers, so no messages.
  REQUIRE(lowered.program.command_count(test_configs::engine::tiu) == 2);
  REQUIRE(lowered.program.command_count(test_configs::engine::gdma) == 5);
  const sim::Trace t = sim::Simulator(chip).run(lowered.program);
  const auto& dma = t.records(0, test_configs::engine::gdma);
  const auto& tiu = t.records(0, test_configs::engine::tiu);
  // A = 16*64*2 = 2,048 B and the B tiles, 64*32*2 = 4,096 B each, load together (4 in flight),
  // 1/3 B/ps each: A ends at 2,048 x 3 = 6,144 ps; the B tiles then have 2,048 B left at 0.5 B/ps:
  // both end at 6,144 + 4,096 = 10,240.
  CHECK(dma[0].end == 6144);
  CHECK(dma[1].end == 10240);
  CHECK(dma[2].end == 10240);
  // TIU: ceil(16/16) * ceil(32/8) * ceil(64/(128/8)) = 1 * 4 * 4 = 16 cycles each:
  // 10,240 -> 10,256 -> 10,272.
  CHECK(tiu[0].start == 10240);
  CHECK(tiu[0].end == 10256);
  CHECK(tiu[1].end == 10272);
  // Stores of 16*32*2 = 1,024 B: C0 alone from 10,256 (16 B by 10,272), then both at 0.5 B/ps:
  // C0's last 1,008 B end at 10,272 + 2,016 = 12,288; C1 has 16 B left, alone: 12,304.
  CHECK(dma[3].start == 10256);
  CHECK(dma[3].end == 12288);
  CHECK(dma[4].start == 10272);
  CHECK(dma[4].end == 12304);
  const ops::Timeline tl = ops::build_timeline(g, chip, lowered, t);
  CHECK(tl.ops[0].hbm_bytes == 2048 + 2 * 4096 + 2 * 1024);
  CHECK(tl.ops[0].start == 0);
  CHECK(tl.ops[0].end == 12304);
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
  CHECK(read.commands[test_configs::engine::gdma] == 64);
  CHECK(read.commands[test_configs::engine::tiu] == 0);
  for (const sim::CoreProgram& core : r.lowered.program.cores) {
    std::size_t mine = 0;
    for (const sim::Command& c : core.queue(test_configs::engine::gdma)) {
      if (c.op != read.id) continue;
      ++mine;
      CHECK(c.amount == 73'728);
    }
    CHECK(mine == 1);
  }
  // fa2 per core: one chunk = 6 TIU commands (Q K^T on the cube, softmax on the ALU, exp on the
  // SFU, P V, the rescale's exp and multiply), Q load + partial store.
  const ops::OpTiming& fa2 = r.timeline.op(ops::OpKind::fa2);
  CHECK(fa2.commands[test_configs::engine::tiu] == 64 * 6);
  CHECK(fa2.commands[test_configs::engine::gdma] == 64 * 2);
}

TEST_CASE("tiling: 512 x 2048 x 4096 bf16 on one SG2262 core moves at most 1.5 x its unique bytes", "[ops][tiling]") {
  const hw::Chip chip = hw::chip_from_yaml(test_configs::kSg2262, "sg2262-test");
  // M = 512, N = 2048, K = 4096 (Python G5's case). Unique: A 512 x 4096 x 2 = 4,194,304,
  // B 4096 x 2048 x 2 = 16,777,216, C 512 x 2048 x 2 = 2,097,152: 23,068,672 bytes.
  const auto r = tools::run_matmul(chip, tools::MatmulRequest{512, 2048, 4096, hw::DType::bf16}, 1);
  CHECK(r.unique_bytes == 23'068'672);
  CHECK(r.ddr_bytes * 2 <= r.unique_bytes * 3);
  CHECK(r.peak_lmem_bytes <= chip.lmem_bytes_per_core);
  // Compute-bound on one core: close to the TIU peak, never above it.
  CHECK(r.tiu_utilization >= 0.95);
  CHECK(r.tiu_utilization <= 1.0);
  // M = 1 (GEMV) tiles too: its traffic is the weights, read once: 2048 x 7168 x 2 = 29,360,128
  // plus the activation row per column block and the output row.
  const auto gemv = tools::run_matmul(chip, tools::MatmulRequest{1, 7168, 2048, hw::DType::bf16}, 0);
  CHECK(gemv.ddr_bytes >= 29'360'128);
  CHECK(gemv.ddr_bytes <= gemv.unique_bytes + 64 * 2048 * 2);
}
