// Lowering: command counts and a whole schedule derived by hand.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "api/op_run.hpp"
#include "api/simulation.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/chip.hpp"
#include "hw/cost_model.hpp"
#include "models/model_spec.hpp"
#include "ops/attention_plan.hpp"
#include "ops/lowering.hpp"
#include "ops/matmul_tiling.hpp"
#include "ops/op_graph.hpp"
#include "ops/timeline.hpp"
#include "ops/work_split.hpp"
#include "sim/simulator.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_lowering {

TEST_CASE("a lowered program is checked as it is queued, and one changed after is checked by the kernel again",
          "[ops][lowering][kernel]") {
  // Two matmuls on two cores, the second waiting for the first (a barrier: one message, one
  // wait_msg per core).
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(2, 1000, 4), "tiny");
  ops::OpGraph g;
  ops::OpNode mm;
  mm.kind = ops::OpKind::matmul;
  mm.payload = ops::MatmulShape{1, 64, 64, 64, {}};
  mm.flops = 2 * 64 * 64 * 64;
  mm.name = "a";
  const ops::OpId a = ops::add_op(g, mm);
  mm.name = "b";
  const ops::OpId b = ops::add_op(g, mm);
  ops::add_dependency(g, a, b);
  ops::Lowered lowered = ops::lower(g, chip, {});
  const sim::Program& p = lowered.program;
  // One message (a's barrier), waited for once on each of the 2 cores; every command counted.
  REQUIRE(p.message_count == 1);
  CHECK(p.checked.message_waits == std::vector<std::uint32_t>{0, 2});
  CHECK(p.checked.commands == p.command_count());
  // Both matmuls start on each core's queues with their first commands: a's at 0, b's after a's.
  const std::size_t queues = 2 * chip.engines.size();
  for (std::uint32_t core = 0; core < 2; ++core) {
    const std::size_t tiu = core * chip.engines.size() + test_configs::engine::tiu;
    CHECK(lowered.first_command[a * queues + tiu] == 0);
    CHECK(lowered.first_command[b * queues + tiu] > 0);
  }
  CHECK(lowered.lowest_send[a] == 1);
  CHECK(lowered.lowest_send[b] == 0);
  // The kernel's own reading of it gives the same run, record for record.
  sim::Program unchecked = p;
  unchecked.checked = {};
  const sim::Trace trusted = sim::Simulator(chip).run(p), read = sim::Simulator(chip).run(unchecked);
  CHECK(trusted.end == read.end);
  for (std::size_t c = 0; c < trusted.cores.size(); ++c) {
    for (std::size_t e = 0; e < trusted.cores[c].size(); ++e) {
      REQUIRE(trusted.cores[c][e].size() == read.cores[c][e].size());
      for (std::size_t i = 0; i < trusted.cores[c][e].size(); ++i) {
        CHECK(trusted.cores[c][e][i].start == read.cores[c][e][i].start);
        CHECK(trusted.cores[c][e][i].end == read.cores[c][e][i].end);
      }
    }
  }
  // A command added after lowering (a delay on a transfer engine) changes the count: the kernel
  // reads the program again and refuses it.
  sim::Program changed = p;
  sim::Command delay;
  delay.kind = sim::CommandKind::delay;
  delay.amount = 1;
  changed.cores[0].queue(test_configs::engine::gdma).push_back(delay);
  CHECK_THROWS_WITH(sim::Simulator(chip).run(changed), "core 0: engine gdma queue holds a command of the wrong kind");
}

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
  // The GDMA serves its descriptors in order at 1 B/ps (4 in flight only hide start-ups): A =
  // 16*64*2 = 2,048 B ends at 2,048 ps; B0, 64*32*2 = 4,096 B, at 6,144; B1 at 10,240.
  CHECK(dma[0].end == 2048);
  CHECK(dma[1].end == 6144);
  CHECK(dma[2].end == 10240);
  // TIU: ceil(16/16) * ceil(32/8) * ceil(64/(128/8)) = 1 * 4 * 4 = 16 cycles each. Tile 0 needs A
  // and B0: 6,144 -> 6,160; tile 1 needs B1: 10,240 -> 10,256.
  CHECK(tiu[0].start == 6144);
  CHECK(tiu[0].end == 6160);
  CHECK(tiu[1].start == 10240);
  CHECK(tiu[1].end == 10256);
  // Stores of 16*32*2 = 1,024 B issue when their tile is done (6,160 and 10,256) but move behind
  // the earlier descriptors: C0 10,240 -> 11,264, C1 11,264 -> 12,288.
  CHECK(dma[3].start == 6160);
  CHECK(dma[3].end == 11264);
  CHECK(dma[4].start == 10256);
  CHECK(dma[4].end == 12288);
  const ops::Timeline tl = ops::build_timeline(g, chip, lowered, t);
  CHECK(tl.ops[0].hbm_bytes == 2048 + 2 * 4096 + 2 * 1024);
  CHECK(tl.ops[0].start == 0);
  CHECK(tl.ops[0].end == 12288);
}

TEST_CASE("decode history read: one chunk per core when each core's share is small", "[ops][lowering]") {
  // SG2262 test chip, DeepSeek-V3, B = 1, kv_len = 4096: 4096 / 64 = 64 history rows per core,
  // one chunk each (64 <= 512), 64 x 576 x 2 = 73,728 B. So kv_cache_read is exactly 64 GDMA
  // commands of 73,728 B (64 x 73,728 = 4,718,592 = 4096 x 1152).
  const hw::Chip chip = hw::chip_from_yaml(test_configs::kSg2262, "sg2262-test");
  const auto model = models::model_from_yaml(test_configs::kDeepSeekV3, "v3");
  const auto w = models::make_workload(models::Phase::decode, 1, 4096, std::nullopt, models::KvFormat::bf16);
  const auto r = api::simulate_block(chip, model, w, {});
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

TEST_CASE("decode split: a short history goes to fewer cores, P* = sqrt(N t_tok W / (2 b_p))", "[ops][split]") {
  // SG2262 test chip, V3 absorb decode, B = 1 (128 query rows, q 576, v 512, 1,152 B a token).
  // t_tok from a 64-token chunk's instructions at 1 GHz (16 lanes, cube_n 8, k_step 128 / 8 = 16):
  //   Q K^T  128 x 576 x 64 NT: min(8 x 8, 4 x 16) = 64 passes x 36 + 44 init   = 2,348
  //   softmax 128 x 64 x 3 fp32 ops / 256 a cycle = 96 + 11                    =   107
  //   exp     8,192 / 128 a cycle = 64 + 13                                      =    77
  //   P V    128 x 64 x 512: min(8 x 64, 32 x 16) = 512 passes x 4 + 44          = 2,092
  //   exp of the row maxima 1 + 13; rescale 128 x 514 / 256 = 257 + 11         =    14 + 268
  // 4,906 cycles / 64 = 76.66 ns a token (the transfer alone, 1,152 B at 61.44 GB/s, is 18.75).
  // W = 8,601.6 x 0.9 = 7,741.44 B/ns; b_p = 128 x (512 x 4 + 8) = 263,168 B. So
  // P* = sqrt(N x 76.656 x 7,741.44 / 526,336) = sqrt(1.12749 N): N = 1,024 -> 33.98 -> 34,
  // 2,048 -> 48.05 -> 48, 4,096 -> 67.96 -> all 64; 512 -> 24.03 -> 24; 1 -> 1.06 -> 1.
  const hw::Chip chip = hw::chip_from_yaml(test_configs::kSg2262, "sg2262-test");
  auto shape = [](std::uint64_t batch, std::uint64_t kv) {
    ops::AttentionShape s;
    s.groups = {ops::QueryGroup{batch, 1, kv}};
    s.heads = 128, s.kv_heads = 1, s.qk_dim = 576, s.v_dim = 512, s.kv_elements = 576, s.kv_token_bytes = 1152;
    s.decode = true;
    return s;
  };
  CHECK(ops::decode_split_parts(shape(1, 1), chip, false) == 1);
  CHECK(ops::decode_split_parts(shape(1, 512), chip, false) == 24);
  CHECK(ops::decode_split_parts(shape(1, 1024), chip, false) == 34);
  CHECK(ops::decode_split_parts(shape(1, 2048), chip, false) == 48);
  CHECK(ops::decode_split_parts(shape(1, 4096), chip, false) == 64);
  // N counts every stream's history: 2 x 1,024 is 2,048 tokens, 48 cores.
  CHECK(ops::decode_split_parts(shape(2, 1024), chip, false) == 48);
  // The plan follows: 1,024 tokens on 34 cores, 30 or 31 each (ceil(1024 / 34) = 31), 34
  // partials to merge; the other 30 cores take no block.
  const ops::AttentionPlan plan = ops::plan_attention(shape(1, 1024), chip, false, false);
  std::size_t busy = 0;
  std::uint64_t most = 0;
  for (const ops::CoreAttention& c : plan.cores) {
    busy += c.blocks.empty() ? 0 : 1;
    most = std::max(most, c.first_pass_tokens);
  }
  CHECK(busy == 34);
  CHECK(most == 31);
  CHECK(plan.partials_per_sequence == std::vector<std::uint64_t>{34});
  // Prefill is not split by history: all cores.
  ops::AttentionShape prefill = shape(1, 1024);
  prefill.decode = false;
  CHECK(ops::decode_split_parts(prefill, chip, false) == 64);
}

TEST_CASE("decode split: GQA streams are cut by cost, each piece costing o tokens beside its own", "[ops][split]") {
  // The test chip cut to 4 cores; 2 sequences of 300 and 20 history tokens, 8 query heads over 2
  // KV heads of 128 (R = 4 rows a stream), K and V in bf16 (512 B a token): streams 300, 300, 20,
  // 20 (640 tokens). P* = sqrt(640 x t_tok x 7,741.44 / (2 x 4 x 520)) >= 99 with t_tok >= 512 /
  // 61.44 = 8.33 ns: all 4 cores.
  // o = ceil((R (2 q + b_p) + 2 L r) / e_kv), b_p = 128 x 4 + 8 = 520, L = 150 ns (the DDR the
  // GDMA crosses), r = min(61.44, 7,741.44 / 4) = 61.44 B/ns: (4 x 776 + 18,432) / 512 = 42.06 -> 43.
  std::string yaml = test_configs::kSg2262;
  yaml.replace(yaml.find("cores: 64"), 9, "cores: 4");
  const hw::Chip chip = hw::chip_from_yaml(yaml, "sg2262-4-cores");
  ops::AttentionShape s;
  s.groups = {ops::QueryGroup{1, 1, 300}, ops::QueryGroup{1, 1, 20}};
  s.heads = 8, s.kv_heads = 2, s.qk_dim = 128, s.v_dim = 128, s.kv_elements = 256, s.kv_token_bytes = 512;
  s.decode = true;
  REQUIRE(ops::decode_split_parts(s, chip, false) == 4);
  CHECK(ops::decode_piece_tokens(s, chip, 4) == 43);
  // Equal token ranges would give 160 tokens a core, core 3 in three pieces (120 + 20 + 20: cost
  // 160 + 3 x 43 = 289). By cost, the least U a core: at 235, cores 0-2 take 192, 108 + 41, 192
  // and core 3 67 + 20 and then 19 of the last 20 (62 - 43 = 19 left): a fifth core. At 236:
  //   core 0  stream 0 [0, 193)                              43 + 193           = 236
  //   core 1  stream 0 [193, 300), stream 1 [0, 43)          43 + 107 + 43 + 43 = 236
  //   core 2  stream 1 [43, 236)                             43 + 193           = 236
  //   core 3  stream 1 [236, 300), streams 2 and 3 whole     43 + 64 + 2 x 63   = 233
  const ops::AttentionPlan plan = ops::plan_attention(s, chip, false, false);
  REQUIRE(plan.cores.size() == 4);
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> pieces(4);  // (stream, first token)
  std::vector<std::uint64_t> tokens;
  for (std::size_t c = 0; c < 4; ++c) {
    for (const ops::AttentionBlock& b : plan.cores[c].blocks) pieces[c].emplace_back(b.sequence, b.kv_begin);
    tokens.push_back(plan.cores[c].first_pass_tokens);
  }
  using Pieces = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  CHECK(pieces[0] == Pieces{{0, 0}});
  CHECK(pieces[1] == Pieces{{0, 193}, {1, 0}});
  CHECK(pieces[2] == Pieces{{1, 43}});
  CHECK(pieces[3] == Pieces{{1, 236}, {2, 0}, {3, 0}});
  CHECK(tokens == std::vector<std::uint64_t>{193, 150, 193, 104});
  CHECK(plan.partials_per_sequence == std::vector<std::uint64_t>{2, 3, 1, 1});
  // Prompt chunks over their history (over_chunks) keep equal token ranges: 640 / 4 = 160 a core.
  ops::AttentionShape chunks = s;
  chunks.over_chunks = true;
  for (const ops::CoreAttention& core : ops::plan_attention(chunks, chip, false, false).cores) {
    CHECK(core.first_pass_tokens == 160);
  }
  // MLA (one latent stream a sequence) keeps equal token ranges: 300 and 20 over 4 cores, 80 each.
  s.heads = 8, s.kv_heads = 1, s.qk_dim = 576, s.v_dim = 512, s.kv_elements = 576, s.kv_token_bytes = 1152;
  for (const ops::CoreAttention& core : ops::plan_attention(s, chip, false, false).cores) {
    CHECK(core.first_pass_tokens == 80);
  }
}

TEST_CASE("decode split: a sequence one core reads whole is finished by fa2, not combined", "[ops][split]") {
  // 64 sequences of 1,024 on 64 cores: P* = sqrt(65,536 x 1.12749) = 271.8 -> 64, and
  // 65,536 / 64 = 1,024 tokens a core, one whole sequence each: no partial outputs, so
  // fa2_combine emits nothing and fa2 stores each sequence's bf16 output, 128 x 512 x 2 =
  // 131,072 B a core.
  const hw::Chip chip = hw::chip_from_yaml(test_configs::kSg2262, "sg2262-test");
  const auto model = models::model_from_yaml(test_configs::kDeepSeekV3, "v3");
  const auto w = models::make_workload(models::Phase::decode, 64, 1024, std::nullopt, models::KvFormat::bf16);
  const auto r = api::simulate_block(chip, model, w, {});
  const ops::OpTiming& combine = r.timeline.op(ops::OpKind::fa2_combine);
  for (std::size_t e = 0; e < combine.commands.size(); ++e) CHECK(combine.commands[e] == 0);
  const ops::OpTiming& fa2 = r.timeline.op(ops::OpKind::fa2);
  for (const sim::CoreProgram& core : r.lowered.program.cores) {
    std::uint64_t stored = 0;
    for (const sim::Command& c : core.queue(test_configs::engine::gdma)) {
      if (c.op == fa2.id && c.kind == sim::CommandKind::transfer && c.direction == sim::Direction::lmem_to_ddr)
        stored += c.amount;
    }
    CHECK(stored == 131'072);
  }
}

TEST_CASE("op matmul in NVFP4 and MXFP4: both operands packed with their block scales", "[ops][weights]") {
  // SG2262 with an fp4 cube at 4x its bf16 rate (the shipped chip has none).
  std::string text = test_configs::kSg2262;
  text.replace(text.find("{fp8: 256, bf16: 128}"), 21, "{fp8: 256, bf16: 128, fp4: 512}");
  const hw::Chip fp4_chip = hw::chip_from_yaml(text, "sg2262-fp4");
  // [256, 7168] x [7168, 1536] (q_a_proj of 256 tokens). NVFP4: a row or column of 7168 is 3,584 B
  // of e2m1 values and 7168 / 16 = 448 e4m3 scales: A 256 x 4,032 = 1,032,192, B 1536 x 4,032 =
  // 6,193,152 (the tensor's fp32 scale is a register's), C in bf16 256 x 1536 x 2 = 786,432:
  // 8,011,776 unique bytes.
  const auto nv = api::run_matmul(fp4_chip, api::matmul_request(256, 1536, 7168, "nvfp4", "--dtype"), 0);
  CHECK(nv.unique_bytes == 8'011'776);
  CHECK(nv.shape == "[256, 7168] x [7168, 1536] nvfp4");
  // MXFP4: 3,584 B of values and 7168 / 32 = 224 e8m0 scales: A 256 x 3,808 = 974,848, B 1536 x
  // 3,808 = 5,849,088, C 786,432: 7,610,368.
  const auto mx = api::run_matmul(fp4_chip, api::matmul_request(256, 1536, 7168, "mxfp4", "--dtype"), 0);
  CHECK(mx.unique_bytes == 7'610'368);
  // The same FLOPs as bf16, 2 x 256 x 7168 x 1536 = 5,637,144,576, on the fp4 cube.
  CHECK(mx.flops == 5'637'144'576);
  const auto bf16 = api::run_matmul(fp4_chip, api::matmul_request(256, 1536, 7168, "bf16", "--dtype"), 0);
  CHECK(bf16.flops == mx.flops);
  CHECK(mx.total_ps < bf16.total_ps);
  // A chip without an fp4 cube refuses, as a plain fp8 matmul on a chip without fp8 does; an
  // unknown dtype names the flag and the accepted ones.
  CHECK_THROWS_WITH(
      api::run_matmul(test_configs::sg2262(), api::matmul_request(256, 1536, 7168, "mxfp4", "--dtype"), 0),
      Catch::Contains("--dtype: SG2262-test has no fp4 cube"));
  CHECK_THROWS_WITH(api::matmul_request(1, 1, 1, "fp4", "--dtype"),
                    "--dtype: unknown dtype 'fp4' (expected one of: bf16, fp8, fp32, mxfp8, mxfp6, mxfp4, nvfp4)");
}

TEST_CASE("tiling: 512 x 2048 x 4096 bf16 on one SG2262 core moves 1.36 x its unique bytes", "[ops][tiling]") {
  const hw::Chip chip = hw::chip_from_yaml(test_configs::kSg2262, "sg2262-test");
  const hw::CostModel cost(chip);
  // M = 512, N = 2048, K = 4096 (Python G5's case). Unique: A 512 x 4096 x 2 = 4,194,304,
  // B 4096 x 2048 x 2 = 16,777,216, C 512 x 2048 x 2 = 2,097,152: 23,068,672 bytes.
  const auto r = api::run_matmul(chip, api::MatmulRequest{512, 2048, 4096, hw::DType::bf16, std::nullopt}, 1);
  CHECK(r.unique_bytes == 23'068'672);
  // The tiles: all 512 rows, 688 columns (3 n-tiles: 688, 688, 672), k-steps of 128, one fp32
  // accumulator: 2 x 512 x 128 x 2 + 2 x 128 x 688 x 2 + 512 x 688 x 4 = 2,023,424 B of 2 MiB.
  const ops::MatmulTiling t = ops::plan_matmul_tiling(cost, 512, 4096, 2048, hw::DType::bf16, 2);
  CHECK((t.tm == 512 && t.tn == 688 && t.tk == 128 && t.c_buffers == 1));
  CHECK(r.peak_lmem_bytes == 2'023'424);
  // Traffic: A is re-read for each of the 3 n-tiles (tk < k), B read once (one m-tile), C stored
  // once: 3 x 4,194,304 + 16,777,216 + 2,097,152 = 31,457,280 B = 1.3636 x the unique bytes.
  CHECK(r.ddr_bytes == 31'457'280);
  // Compute: per k-step instruction 44 + ceil(512/16) x ceil(688/8) x ceil(128/16) = 44 + 32 x 86 x 8
  // = 22,060 cycles (21,548 for the 672-column tile): 2 x 32 x 22,060 + 32 x 21,548 = 2,101,376
  // cycles at 1 GHz. The run takes 2,144,377,642 ps: 43,001,642 ps more for the first loads, the
  // last store and the single accumulator's wait for each output tile's store (GDMA at 68.264 x
  // 0.9 GB/s).
  CHECK(r.total_ps == 2'144'377'642);
  // Utilisation: 2 x 512 x 2048 x 4096 FLOP / (2,144,377.642 ns x 4,096 FLOP/ns) = 0.97798.
  CHECK(r.flops == 8'589'934'592);
  // M = 1 (GEMV) over 64 cores: 4 column cells of 1,792 x 16 k-ranges of 128 (split-K: whole
  // 3,584 B weight rows instead of 224 B ones). Per core: weights 128 x 1,792 x 2 = 458,752 B
  // (29,360,128 in all: once), its 256 B slice of the activation row (16,384: once per cell), its
  // fp32 partial 1,792 x 4 = 7,168 B out and, to reduce its 112 columns, 16 x 112 x 4 = 7,168 B in
  // (458,752 each in all), and 112 x 2 = 224 B of output (14,336): 30,308,352 B against the unique
  // 29,360,128 + 4,096 + 14,336 = 29,378,560.
  const auto gemv = api::run_matmul(chip, api::MatmulRequest{1, 7168, 2048, hw::DType::bf16, std::nullopt}, 0);
  CHECK(gemv.unique_bytes == 29'378'560);
  CHECK(gemv.ddr_bytes == 30'308'352);
}

TEST_CASE("work split: square matmuls get a 2-D grid, GEMVs split K and reduce", "[ops][split]") {
  const hw::CostModel cost(test_configs::sg2262());
  SECTION(
      "4096^3 on 64 cores: an 8 x 8 grid of 512 x 512 (both 2 x 32 and 8 x 8 are cube-bound; 8 x 8 moves "
      "less)") {
    // Per core: A 512 x 4096 and B 4096 x 512 bf16, 8 MiB, against 2 x 32's 2048 x 4096 + 4096 x 128
    // = 17 MiB; the cube time is 2 x 512 x 512 x 4096 / 4,096 FLOP/ns = 524 us on either.
    const auto parts = ops::split_matmul(cost, ops::MatmulShape{1, 4096, 4096, 4096, {}}, hw::DType::bf16);
    std::set<std::pair<std::uint64_t, std::uint64_t>> cells;
    for (const ops::MatmulPart& p : parts) {
      CHECK(p.rows.size() == 512);
      CHECK(p.cols.size() == 512);
      CHECK(p.k.size() == 4096);
      CHECK(p.k_parts == 1);
      cells.insert({p.rows.begin, p.cols.begin});
    }
    CHECK(cells.size() == 64);
  }
  SECTION("[1, 7168] x [7168, 576] (kv_a_proj): 64 k-ranges of 112 over all 576 columns") {
    // A column split would leave each core 9 of 576 columns: 7,168 rows of 18 B, each costing a
    // 64 B burst plus the 64 B access overhead. Split-K reads 112 whole 1,152 B rows per core
    // (one contiguous block), and each core then reduces 9 columns of the 64 partials.
    const auto parts = ops::split_matmul(cost, ops::MatmulShape{1, 1, 7168, 576, {}}, hw::DType::bf16);
    std::uint64_t k_covered = 0, reduced = 0;
    for (std::size_t c = 0; c < parts.size(); ++c) {
      const ops::MatmulPart& p = parts[c];
      CHECK(p.k_parts == 64);
      CHECK(p.k_index == c);
      CHECK(p.cols.size() == 576);
      CHECK(p.k.size() == 112);
      k_covered += p.k.size();
      reduced += p.reduce_cols().size();
    }
    CHECK(k_covered == 7168);
    CHECK(reduced == 576);
    // The lowering: every core stores a 576 x 4 = 2,304 B partial, sends and waits on the cell's
    // message (64 sends), loads 64 x 9 x 4 = 2,304 B of partial slices in one strided transfer on
    // the SDMA and stores 9 x 2 = 18 B. Bytes: weights 7168 x 576 x 2 = 8,257,536, the row once
    // 14,336, partials 2 x 64 x 2,304 = 294,912, output 1,152: 8,567,936.
    const auto r =
        api::run_matmul(test_configs::sg2262(), api::MatmulRequest{1, 576, 7168, hw::DType::bf16, std::nullopt}, 0);
    CHECK(r.ddr_bytes == 8'567'936);
  }
}

TEST_CASE("the grid estimate counts a core's passes over A and B: H100's [480, 4096] x [4096, 24576] takes 2 x 66",
          "[ops][split]") {
  std::ifstream file(g5sim::chip_path("h100"));
  std::stringstream yaml;
  yaml << file.rdbuf();
  const hw::Chip chip = hw::chip_from_yaml(yaml.str(), "h100.yaml");
  // 1 x 132 gives each SM all 480 rows and 192 columns. Its tiles: 256 x 192 fp32 accumulators
  // (196,608 B) leave room for 164 of k in 495,616 B, so two row tiles, and the SM reads its B
  // block (4096 x 192 x 2 B) twice: 132 x 3 MiB from the DDR, twice the weights. 2 x 66 gives
  // 256 or 224 rows and 376 or 368 columns: one row tile, B once (shared by the cell column's two
  // SMs in the L2). Without the passes both looked alike (1 x 132 estimated 100.7 us, 2 x 66
  // 105.2 us) and 1 x 132 simulated in 262 us against 165 us.
  const auto parts = ops::split_matmul(hw::CostModel(chip), ops::MatmulShape{1, 480, 4096, 24576, {}}, hw::DType::bf16);
  std::set<std::uint64_t> row_sizes;
  std::set<std::pair<std::uint64_t, std::uint64_t>> cells;
  for (const ops::MatmulPart& p : parts) {
    if (p.rows.empty() || p.cols.empty()) continue;
    row_sizes.insert(p.rows.size());
    cells.insert({p.rows.begin, p.cols.begin});
    CHECK(p.k_parts == 1);
  }
  CHECK(row_sizes == std::set<std::uint64_t>{256, 224});
  CHECK(cells.size() == 132);
  // The run: 165,634,729 ps (512 rows, 2 x 66 before and after: 165,019,818), where 1 x 132 took
  // 262,489,796.
  const auto r480 = api::run_matmul(chip, api::MatmulRequest{480, 24576, 4096, hw::DType::bf16, std::nullopt}, 0);
  CHECK(r480.total_ps == 165'634'729);
}

TEST_CASE("matmul_split_k: false keeps every core's reduction whole", "[ops][split]") {
  // The kv_a_proj GEMV that the test chip cuts into 64 k-ranges (above) with split-K allowed: without
  // it, 576 columns over 64 cores in cube_n = 8 steps is 72 column blocks, so 64 cells of 8 or 16
  // columns (balanced_part in units of 8), each over all 7,168 of k, and no reduction.
  std::string text = test_configs::kSg2262;
  text.replace(text.find("matmul_split_k: true"), 20, "matmul_split_k: false");
  const hw::Chip chip = hw::chip_from_yaml(text, "sg2262-no-split-k");
  const auto parts = ops::split_matmul(hw::CostModel(chip), ops::MatmulShape{1, 1, 7168, 576, {}}, hw::DType::bf16);
  std::uint64_t cols = 0, cells = 0;
  for (const ops::MatmulPart& p : parts) {
    CHECK(p.k_parts == 1);
    CHECK(p.k.size() == 7168);
    CHECK((p.cols.size() == 8 || p.cols.size() == 16));
    cols += p.cols.size();
    cells += p.cols.empty() ? 0 : 1;
  }
  CHECK(cells == 64);
  CHECK(cols == 576);
}

TEST_CASE("weight layout: k-major weights make a column slice contiguous, n-major ones short rows",
          "[ops][split][layout]") {
  // The one statement of B's layout: a 512 x 64 tile of [2048, 4096] weights.
  CHECK(ops::b_tile_row_bytes(hw::WeightLayout::n_major, 2048, 4096, 512, 64, 65'536, 2) ==
        128);  // 512 rows of 64 x 2 B
  CHECK(ops::b_tile_row_bytes(hw::WeightLayout::k_major, 2048, 4096, 512, 64, 65'536, 2) ==
        1'024);  // 64 columns of 512 x 2 B
  CHECK(ops::b_tile_row_bytes(hw::WeightLayout::k_major, 2048, 4096, 2048, 64, 262'144, 2) == 0);  // all of k: one run
  CHECK(ops::b_tile_row_bytes(hw::WeightLayout::n_major, 2048, 4096, 512, 4096, 4'194'304, 2) == 0);  // all n: one run

  // [64, 2048] x [2048, 4096] bf16 on the 64-core test chip.
  std::string text = test_configs::kSg2262;
  text.replace(text.find("weight_layout: n_major"), 22, "weight_layout: k_major");
  const hw::Chip k_major = hw::chip_from_yaml(text, "sg2262-k-major");
  const ops::MatmulShape shape{1, 64, 2048, 4096, {}};
  SECTION(
      "n-major: a 64-column slice is 2,048 rows of 128 B (192 B of bus each), so it splits k 4 ways over "
      "256-column cells (512 B rows)") {
    const auto parts = ops::split_matmul(hw::CostModel(test_configs::sg2262()), shape, hw::DType::bf16);
    for (const ops::MatmulPart& p : parts) {
      CHECK(p.cols.size() == 256);
      CHECK(p.k.size() == 512);
      CHECK(p.k_parts == 4);
    }
  }
  SECTION("k-major: 64 cells of 64 whole columns (each one 256 KiB run), no split-K") {
    const auto parts = ops::split_matmul(hw::CostModel(k_major), shape, hw::DType::bf16);
    for (const ops::MatmulPart& p : parts) {
      CHECK(p.cols.size() == 64);
      CHECK(p.k.size() == 2048);
      CHECK(p.k_parts == 1);
    }
    // Bytes: every core reads all of A (64 x 2048 x 2 = 262,144; no L2 to share it), its 64
    // columns of B (64 x 2048 x 2 = 262,144) and stores 64 x 64 x 2 = 8,192:
    // 64 x (262,144 + 262,144 + 8,192) = 34,078,720.
    const auto r = api::run_matmul(k_major, api::MatmulRequest{64, 4096, 2048, hw::DType::bf16, std::nullopt}, 0);
    CHECK(r.ddr_bytes == 34'078'720);
  }
}

namespace {

// Two chained 16 x 64 x 64 matmuls on the tiny chip's one core, with the given DMA start-up.
struct ChainRun {
  ops::OpGraph graph;
  ops::Lowered lowered;
  sim::Trace trace;
};

ChainRun chain(double startup_ns, bool prefetch) {
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1000, 4, startup_ns), "tiny");
  ChainRun r;
  for (int i = 0; i < 2; ++i) {
    ops::OpNode mm;
    mm.name = i == 0 ? "first" : "second";
    mm.kind = ops::OpKind::matmul;
    mm.payload = ops::MatmulShape{1, 16, 64, 64, {}};
    mm.flops = 2 * 16 * 64 * 64;
    ops::add_op(r.graph, mm);
  }
  ops::add_dependency(r.graph, 0, 1);
  ops::LoweringOptions options;
  options.prefetch_weights = prefetch;
  r.lowered = ops::lower(r.graph, chip, options);
  r.trace = sim::Simulator(chip).run(r.lowered.program);
  return r;
}

}  // namespace

TEST_CASE("cross-op prefetch: the next matmul's first weight tile loads before the barrier", "[ops][prefetch]") {
  // Each matmul (see the schedule above): GDMA A 2,048 B, B0 4,096, B1 4,096, C0 1,024, C1 1,024.
  // With a 100 ps start-up per transfer, the first ends at 12,388 ps (its last store).
  const ChainRun with = chain(0.1, true), without = chain(0.1, false);
  const auto& gdma_with = with.trace.records(0, test_configs::engine::gdma);
  const auto& gdma_without = without.trace.records(0, test_configs::engine::gdma);
  REQUIRE(gdma_with.size() == 10);
  // Without prefetch the second matmul's first load (its A) waits for the barrier: it issues when
  // the first's last store has ended. With prefetch, its first weight tile (queued 6th, after the
  // first's stores) issues as soon as a slot frees, before that.
  const sim::Tick first_end = gdma_with[4].end;
  CHECK(first_end == gdma_without[4].end);
  CHECK(gdma_without[5].start >= first_end);
  CHECK(gdma_with[5].start < first_end);
  CHECK(with.lowered.program.cores[0].queue(test_configs::engine::gdma)[5].amount == 4096);  // B0, not A
  // Its start-up overlaps the first's stores, so the second matmul ends earlier by about that.
  CHECK(with.trace.end < without.trace.end);
  // Off, the program is the one without the option: the same schedule as before prefetch existed.
  CHECK(without.lowered.program.cores[0].queue(test_configs::engine::gdma)[5].amount == 2048);  // A first
}

TEST_CASE("causal prefill attention streams each row block's keys up to its last token", "[lowering][attention]") {
  // One core, one head: query rows are tokens. Row block b covers tokens [b R, (b + 1) R) and its
  // last token sees keys 0..(b + 1) R - 1: its chunks sum to min(kv_len, (b + 1) R) keys. Without
  // the mask every block streams all kv_len keys.
  ops::AttentionShape s;
  s.groups = {ops::QueryGroup{1, 4096, 4096}}, s.heads = 1, s.kv_heads = 1, s.qk_dim = 128, s.v_dim = 128;
  s.kv_elements = 256, s.kv_token_bytes = 512;
  hw::Chip one = test_configs::sg2262();
  one.cores = 1;
  const ops::AttentionPlan full = ops::plan_attention(s, one, false, false);
  s.causal = true;
  const ops::AttentionPlan causal = ops::plan_attention(s, one, false, false);
  REQUIRE(causal.row_block == full.row_block);
  const std::uint64_t R = causal.row_block;
  REQUIRE(R < 4096);
  std::uint64_t all_keys = 0, causal_keys = 0;
  for (std::size_t b = 0; b < causal.cores[0].blocks.size(); ++b) {
    std::uint64_t keys = 0, full_keys = 0;
    for (std::uint64_t t : causal.cores[0].blocks[b].chunk_tokens) keys += t;
    for (std::uint64_t t : full.cores[0].blocks[b].chunk_tokens) full_keys += t;
    CHECK(keys == std::min<std::uint64_t>(4096, (b + 1) * R));
    CHECK(full_keys == 4096);
    causal_keys += keys, all_keys += full_keys;
  }
  CHECK(causal_keys < all_keys);
  // The op alone: fewer keys, less time; a causal decode is refused.
  api::Fa2Request q{1, 4096, 4096, 8, 8, 128, 128, false, false};
  const auto plain = api::run_fa2(test_configs::sg2262(), q, 0);
  q.causal = true;
  const auto masked = api::run_fa2(test_configs::sg2262(), q, 0);
  CHECK(masked.total_ps < plain.total_ps);
  // FLOPs: 2 x 8 heads x pairs x (128 + 128); pairs 4096 x 4096 = 16,777,216 in full and
  // 4096 x 4097 / 2 = 8,390,656 causal: 68,719,476,736 and 34,368,126,976.
  CHECK(plain.flops == 68'719'476'736);
  CHECK(masked.flops == 34'368'126'976);
  q.q_len = 1;
  CHECK_THROWS_WITH(api::run_fa2(test_configs::sg2262(), q, 0),
                    "--causal: applies to prefill (--q-len equal to --kv-len)");
}

TEST_CASE("staged activations: a software-managed L2 holds the A that every column part reads", "[ops][split][l2]") {
  // [128, 7168] x [7168, 1536] bf16 (a decode step's q_a_proj at 128 sequences) on the 64-core
  // test chip with k-major weights, no split-K, a 128 MiB software-managed L2 and a DDR of
  // 1,200 GB/s (so that the DDR, not each core's 61 GB/s channel, binds). On the shipped SG2262
  // (8.6 TB/s) the channels bind, the copy and its barrier would only add time, and the split
  // keeps reading A from DDR.
  std::string text = test_configs::kSg2262;
  text.replace(text.find("matmul_split_k: true"), 20, "matmul_split_k: false");
  text.replace(text.find("weight_layout: n_major"), 22, "weight_layout: k_major");
  text.replace(text.find("bandwidth_gb_per_s: 8601.6"), 26, "bandwidth_gb_per_s: 1200");
  const std::string l2 =
      "l2: {capacity_bytes: 134217728, bandwidth_gb_per_s: 8192, latency_ns: 50, caches_reads: false}\n";
  const hw::Chip without_l2 = hw::chip_from_yaml(text, "sg2262-slow-ddr");
  const hw::Chip with_l2 = hw::chip_from_yaml(text + l2, "sg2262-slow-ddr-l2");
  const ops::MatmulShape shape{1, 128, 7168, 1536, {}};
  CHECK(ops::stages_activations(with_l2, shape, hw::DType::bf16, true));
  CHECK_FALSE(ops::stages_activations(with_l2, shape, hw::DType::bf16, false));  // A streams in
  CHECK_FALSE(ops::stages_activations(without_l2, shape, hw::DType::bf16, true));
  // Without the L2: 2 row halves (64 rows, the lanes) x 32 column slices of 48 (cube_n 8 steps),
  // each over all of k, so each B column is read twice and each A half by 32 cores. With it, A is
  // staged and its re-reads are free of the DDR: 64 slices of 24 columns with all 128 rows, each
  // B column read once.
  for (const ops::MatmulPart& p : ops::split_matmul(hw::CostModel(without_l2), shape, hw::DType::bf16)) {
    CHECK(p.rows.size() == 64);
    CHECK(p.cols.size() == 48);
    CHECK(p.k.size() == 7168);
    CHECK_FALSE(p.a_staged);
  }
  for (const ops::MatmulPart& p : ops::split_matmul(hw::CostModel(with_l2), shape, hw::DType::bf16)) {
    CHECK(p.rows.size() == 128);
    CHECK(p.cols.size() == 24);
    CHECK(p.k.size() == 7168);
    CHECK(p.a_staged);
  }
  // DDR bytes. A: 128 x 7168 x 2 = 1,835,008; B: 7168 x 1536 x 2 = 22,020,096; C: 128 x 1536 x 2
  // = 393,216. Without the L2 each core reads its half of A, 64 x 7168 x 2 = 917,504, and B is
  // read by both halves: 64 x 917,504 + 2 x 22,020,096 + 393,216 = 103,153,664. Staged, A crosses
  // the DDR once and B once: 1,835,008 + 22,020,096 + 393,216 = 24,248,320.
  const auto plain = api::run_matmul(without_l2, api::MatmulRequest{128, 1536, 7168, hw::DType::bf16, std::nullopt}, 0);
  const auto staged = api::run_matmul(with_l2, api::MatmulRequest{128, 1536, 7168, hw::DType::bf16, std::nullopt}, 0);
  CHECK(plain.ddr_bytes == 103'153'664);
  CHECK(staged.ddr_bytes == 24'248'320);
  CHECK(staged.total_ps < plain.total_ps);
}

TEST_CASE("split-K partials go to a software-managed L2 and come back from it", "[ops][split][l2]") {
  // The kv_a_proj GEMV [1, 7168] x [7168, 576] bf16 that the test chip cuts into 64 k-ranges
  // (above): each core stores a [1, 576] fp32 partial, 2,304 B, and the reduction reads all 64
  // back. Unique bytes: A 7,168 x 2 = 14,336, B 7,168 x 576 x 2 = 8,257,536, C 576 x 2 = 1,152:
  // 8,273,024. Without an L2 the partials cross the DDR twice, 2 x 64 x 2,304 = 294,912 B more:
  // 8,567,936. With a software-managed L2 that holds them they never touch the DDR.
  const std::string l2 =
      "l2: {capacity_bytes: 134217728, bandwidth_gb_per_s: 8192, latency_ns: 50, caches_reads: false}\n";
  const hw::Chip with_l2 = hw::chip_from_yaml(test_configs::kSg2262 + l2, "sg2262-l2");
  const auto parts = ops::split_matmul(hw::CostModel(with_l2), ops::MatmulShape{1, 1, 7168, 576, {}}, hw::DType::bf16);
  CHECK(parts.front().k_parts == 64);
  CHECK(ops::partials_in_l2(with_l2, parts));
  CHECK_FALSE(ops::partials_in_l2(test_configs::sg2262(), parts));
  const auto plain =
      api::run_matmul(test_configs::sg2262(), api::MatmulRequest{1, 576, 7168, hw::DType::bf16, std::nullopt}, 0);
  const auto in_l2 = api::run_matmul(with_l2, api::MatmulRequest{1, 576, 7168, hw::DType::bf16, std::nullopt}, 0);
  CHECK(plain.ddr_bytes == 8'567'936);
  CHECK(in_l2.ddr_bytes == 8'273'024);
  CHECK(in_l2.total_ps < plain.total_ps);
}

}  // namespace test_lowering
