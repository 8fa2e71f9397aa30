// The MLA KV memory-access model (seed 003's acceptance list), on the in-memory SG2262 test chip.
#include <catch2/catch.hpp>

#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "api/report.hpp"
#include "api/simulation.hpp"
#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "models/attention_block.hpp"
#include "models/model_spec.hpp"
#include "models/workload.hpp"
#include "ops/timeline.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_mla_decode {

namespace {

using models::KvFormat;
using models::Phase;
using ops::OpKind;

const hw::Chip& chip() { return test_configs::sg2262(); }

const models::ModelSpec& v3() {
  static const models::ModelSpec m = models::model_from_yaml(test_configs::kDeepSeekV3, "deepseek-v3-test");
  return m;
}

api::Simulation run(const models::ModelSpec& model, const models::Workload& w, std::string route = "gdma",
                    const hw::Chip& on = chip()) {
  ops::LoweringOptions opts;
  opts.kv_read_engine = route;
  return api::simulate_block(on, model, w, opts);
}

using test_configs::decode;

}  // namespace

TEST_CASE("(a) decode kv_cache_read bytes = B x kv_len x (d_c + d_rope) x e", "[mla][bytes]") {
  struct Case {
    std::uint64_t batch, kv_len;
    KvFormat kv;
    std::uint64_t expected;
  };
  const Case cases[] = {
      {1, 4096, KvFormat::bf16, 4'718'592},   // 1 x 4096 x 576 x 2
      {1, 4096, KvFormat::fp8, 2'359'296},    // 1 x 4096 x 576 x 1 (spec use case 1)
      {3, 1000, KvFormat::fp8, 1'728'000},    // 3 x 1000 x 576 x 1
      {32, 777, KvFormat::bf16, 28'643'328},  // 32 x 777 x 576 x 2 (ragged chunks)
  };
  for (const Case& c : cases) {
    const auto result = run(v3(), decode(c.batch, c.kv_len, c.kv));
    const ops::OpTiming& read = result.timeline.op(OpKind::kv_cache_read);
    INFO("B=" << c.batch << " kv_len=" << c.kv_len);
    CHECK(read.kv_bytes == c.expected);   // the graph's count
    CHECK(read.hbm_bytes == c.expected);  // what its DMA commands moved: each byte once
    CHECK(models::kv_read_bytes(v3(), decode(c.batch, c.kv_len, c.kv)) == c.expected);
  }
}

TEST_CASE("(a) kv_cache_read bytes do not depend on heads or head dims", "[mla][bytes]") {
  models::ModelSpec other = v3();
  other.num_attention_heads = 16;
  other.qk_nope_head_dim = 64;
  other.v_head_dim = 96;
  // Same latent (512 + 64): 2 x 4096 x 576 x 2 = 9,437,184 bytes with either head layout.
  const auto a = run(v3(), decode(2, 4096));
  const auto b = run(other, decode(2, 4096));
  CHECK(a.timeline.op(OpKind::kv_cache_read).hbm_bytes == 9'437'184);
  CHECK(b.timeline.op(OpKind::kv_cache_read).hbm_bytes == 9'437'184);
}

TEST_CASE("(b) MLA decode KV bytes over equivalent-MHA bytes = (d_c + d_rope) / (2 n_h d_h)", "[mla][bytes]") {
  // The equivalent MHA: DeepSeek-V3's 128 heads of d_h = 128 as a plain multi-head model (every
  // head its own K and V), simulated on the same chip: its history read streams
  // B x kv_len x 2 x n_h x d_h x e = 1 x 4096 x 2 x 128 x 128 x 2 = 268,435,456 bytes.
  // MLA: 1 x 4096 x 576 x 2 = 4,718,592. Ratio 576 / 32768 (about 1/57), exact by cross-multiplying.
  const models::ModelSpec mha = models::model_from_yaml(R"(name: DeepSeek-V3-as-MHA
model_type: llama
hidden_size: 7168
num_hidden_layers: 61
vocab_size: 129280
intermediate_size: 18432
num_attention_heads: 128
num_key_value_heads: 128
head_dim: 128
)",
                                                        "v3-mha");
  const auto w = decode(1, 4096);
  const std::uint64_t mla_bytes = run(v3(), w).timeline.op(OpKind::kv_cache_read).hbm_bytes;
  const std::uint64_t mha_bytes = run(mha, w).timeline.op(OpKind::kv_cache_read).hbm_bytes;
  CHECK(mla_bytes == 4'718'592);
  CHECK(mha_bytes == 268'435'456);
  CHECK(mla_bytes * 32768 == mha_bytes * 576);
}

TEST_CASE("(c) kv_cache_read bytes and duration strictly increase with kv_len", "[mla][monotone]") {
  std::uint64_t previous_bytes = 0;
  sim::Tick previous_duration = 0;
  for (std::uint64_t kv : {1024, 2048, 4096, 8192, 16384, 32768}) {
    const auto result = run(v3(), decode(1, kv));
    const ops::OpTiming& read = result.timeline.op(OpKind::kv_cache_read);
    INFO("kv_len " << kv);
    CHECK(read.hbm_bytes == kv * 576 * 2);
    CHECK(read.hbm_bytes > previous_bytes);
    CHECK(read.duration() > previous_duration);
    previous_bytes = read.hbm_bytes;
    previous_duration = read.duration();
  }
}

TEST_CASE("(d) prefill reads no history and is unchanged by the cache-read feature", "[mla][prefill]") {
  // The slice's absorb path in prefill (the CLI default for prefill is the MHA path, below).
  auto w = models::make_workload(Phase::prefill, 1, 1024, std::nullopt, KvFormat::bf16);
  w.prefill_mla_mode = models::MlaMode::absorb;
  const auto gdma = run(v3(), w, "gdma");
  const auto sdma = run(v3(), w, "sdma");
  CHECK(gdma.timeline.find(OpKind::kv_cache_read) == nullptr);
  CHECK(gdma.timeline.find(OpKind::fa2_combine) == nullptr);
  // fa2 FLOPs, causal (the default): query t sees t + 1 keys, 1024 x 1025 / 2 = 524,800 pairs;
  // 2 x n_h x pairs x (576 + 512) = 2 x 128 x 524,800 x 1088 = 146,171,494,400 (the full square
  // 2 x 128 x 1024 x 1024 x 1088 = 292,057,776,128 with --prefill-attention full).
  CHECK(gdma.timeline.op(OpKind::fa2).flops == 146'171'494'400);
  // fa2 attends the 1024 latent rows written this step: 1024 x 576 x 2 = 1,179,648 bytes.
  CHECK(gdma.timeline.op(OpKind::fa2).kv_bytes == 1'179'648);
  // No drift against the baseline without a cache read (the prefill golden, prefill_block_json,
  // holds every op's bytes and interval). The block's matmul FLOPs, T = 1024:
  //   q_a 2 x 1024 x 7168 x 1536 = 22,548,578,304   q_b 2 x 1024 x 1536 x 24,576 = 77,309,411,328
  //   kv_a 2 x 1024 x 7168 x 576 = 8,455,716,864    q_absorb 128 x 2 x 1024 x 128 x 512 = 17,179,869,184
  //   v_up 128 x 2 x 1024 x 512 x 128 = 17,179,869,184   o_proj 2 x 1024 x 16,384 x 7168 = 240,518,168,576
  //   sum 383,191,613,440; with fa2 and the vector ops the block does 529,426,811,904
  //   (675,313,093,632 - 292,057,776,128 + 146,171,494,400: only fa2 feels the causal mask).
  std::uint64_t matmul_flops = 0;
  for (const auto& t : gdma.timeline.ops) {
    if (t.kind == OpKind::matmul) matmul_flops += t.flops;
  }
  CHECK(matmul_flops == 383'191'613'440);
  CHECK(gdma.timeline.flops == 529'426'811'904);
  // Bytes follow the tilers' choices (each op's are in the prefill_block_json golden): locked here
  // (3,269,066,752 with the full square: causal row blocks stream only the keys up to themselves;
  // the 128 heads of the one latent stream go 2 per core, each core all 1024 tokens of them).
  CHECK(gdma.timeline.hbm_bytes == 3'155'820'544);
  // The kv-read route only concerns decode: every op's bytes, FLOPs and interval are identical.
  REQUIRE(gdma.timeline.ops.size() == sdma.timeline.ops.size());
  for (std::size_t i = 0; i < gdma.timeline.ops.size(); ++i) {
    const auto& a = gdma.timeline.ops[i];
    const auto& b = sdma.timeline.ops[i];
    INFO(a.name);
    CHECK(a.hbm_bytes == b.hbm_bytes);
    CHECK(a.flops == b.flops);
    CHECK(a.start == b.start);
    CHECK(a.end == b.end);
  }
  // The default prefill (MHA after up-projecting the prompt), causal: 2 x 128 x 524,800 x (192 + 128)
  // = 42,991,616,000 FLOPs, and still no history read.
  w.prefill_mla_mode = models::MlaMode::expanded;
  const auto mha = run(v3(), w);
  CHECK(mha.timeline.find(OpKind::kv_cache_read) == nullptr);
  CHECK(mha.timeline.op(OpKind::fa2).flops == 42'991'616'000);
  // Decode adds kv_cache_read and fa2_combine but leaves the projections' FLOPs as they are for
  // the same token count: q_a_proj at T = 1: 2 x 1 x 7168 x 1536 = 22,020,096.
  const auto d = run(v3(), decode(1, 1024));
  CHECK(d.timeline.op(OpKind::kv_cache_read).hbm_bytes == 1'179'648);
  CHECK(d.timeline.ops[1].name == "q_a_proj");
  CHECK(d.timeline.ops[1].flops == 22'020'096);
}

TEST_CASE("(f) GDMA route: the history read overlaps fa2, SDMA route: strictly before it", "[mla][intervals]") {
  SECTION("GDMA: intervals intersect and both are non-empty") {
    const auto result = run(v3(), decode(4, 32768));
    const ops::OpTiming& read = result.timeline.op(OpKind::kv_cache_read);
    const ops::OpTiming& fa2 = result.timeline.op(OpKind::fa2);
    CHECK(read.end > read.start);
    CHECK(fa2.end > fa2.start);
    CHECK(read.start < fa2.end);
    CHECK(fa2.start < read.end);
    // The read starts before fa2 (its first chunks are queued after the absorption) and ends
    // before fa2 does (fa2 still computes on the last chunk).
    CHECK(read.start < fa2.start);
    CHECK(read.end < fa2.end);
  }
  SECTION("SDMA: fa2 starts only when the whole read has ended") {
    const auto result = run(v3(), decode(4, 8192), "sdma");
    const ops::OpTiming& read = result.timeline.op(OpKind::kv_cache_read);
    const ops::OpTiming& fa2 = result.timeline.op(OpKind::fa2);
    CHECK(read.end > read.start);
    // The barrier passes the tick the last core's read ends, and fa2's first command (its Q load)
    // issues then: fa2 starts exactly when the read ends.
    CHECK(fa2.start == read.end);
    CHECK(read.commands[test_configs::engine::sdma] > 0);
    CHECK(read.commands[test_configs::engine::gdma] == 0);
    // Bytes are the same on either route: 4 x 8192 x 576 x 2 = 37,748,736.
    CHECK(read.hbm_bytes == 37'748'736);
  }
  SECTION("SDMA: a share too large for local memory is read in rounds, each whole before fa2 uses it") {
    // 131,072 history rows over 64 cores: 2,048 rows x 1,152 B = 2,359,296 B > 2,097,152 B of LMEM.
    // Tiles: all 128 query rows, chunks of 512 tokens: Q 128 x 576 x 2 = 147,456, O 128 x 514 x 4 =
    // 263,168, scores 128 x 512 x 4 = 262,144: 672,768 B; the rest holds (2,097,152 - 672,768) /
    // 1,152 = 1,236 history rows: two round buffers of 512 (whole chunks). So 4 rounds of 512 rows =
    // 589,824 B per core, LMEM 672,768 + 1,024 x 1,152 = 1,852,416 B.
    const auto result = run(v3(), decode(1, 131072), "sdma");
    const ops::OpTiming& read = result.timeline.op(OpKind::kv_cache_read);
    const ops::OpTiming& fa2 = result.timeline.op(OpKind::fa2);
    CHECK(read.hbm_bytes == 150'994'944);  // 131,072 x 1,152: every byte once
    CHECK(read.commands[test_configs::engine::sdma] == 64 * 4);
    CHECK(fa2.peak_lmem_bytes == 1'852'416);
    const std::uint32_t sdma = test_configs::engine::sdma, tiu = test_configs::engine::tiu;
    sim::Tick round0_end = 0;
    for (std::size_t core = 0; core < result.lowered.program.cores.size(); ++core) {
      const auto& reads = result.lowered.program.cores[core].queue(sdma);
      const auto& read_records = result.trace.records(core, sdma);
      std::vector<std::size_t> rounds;
      for (std::size_t i = 0; i < reads.size(); ++i) {
        if (reads[i].op != read.id) continue;
        rounds.push_back(i);
        CHECK(reads[i].amount == 589'824);
      }
      REQUIRE(rounds.size() == 4);
      round0_end = std::max(round0_end, read_records[rounds[0]].end);
      // fa2's instructions on this core, six per 512-token chunk (Q K^T, softmax, exp, P V, exp,
      // rescale): the first of round r, chunk r, starts only when round r's read has ended.
      const auto& queue = result.lowered.program.cores[core].queue(tiu);
      const auto& records = result.trace.records(core, tiu);
      std::vector<std::size_t> fa2_compute;
      for (std::size_t i = 0; i < queue.size(); ++i) {
        if (queue[i].op == fa2.id && queue[i].kind == sim::CommandKind::compute) fa2_compute.push_back(i);
      }
      REQUIRE(fa2_compute.size() == 4 * 6);
      for (std::size_t r = 0; r < 4; ++r) {
        CHECK(records[fa2_compute[6 * r]].start >= read_records[rounds[r]].end);
      }
    }
    // Round 0 is read whole on every core before fa2 starts anywhere (the barrier).
    CHECK(fa2.start >= round0_end);
  }
  SECTION("SDMA: rows that leave no room for a history row are a clear error") {
    // 128 KiB of LMEM: the whole 2,048-row share does not fit, and rounds need all 128 query rows in
    // one block: their Q alone is 128 x 576 x 2 = 147,456 B.
    std::string text = test_configs::kSg2262;
    text.replace(text.find("2097152"), 7, "131072");
    CHECK_THROWS_WITH(run(v3(), decode(1, 131072), "sdma", hw::chip_from_yaml(text, "small-lmem")),
                      Catch::Contains("a kv_resident engine reads the history into local memory in rounds beside all "
                                      "128 query rows of an item"));
  }
}

TEST_CASE("(g) fa2's KV bytes are the real latent bytes, not a local-memory tile size", "[mla][bytes]") {
  // Halving local memory changes fa2's tiles but not the bytes it attends.
  std::string small_text = test_configs::kSg2262;
  small_text.replace(small_text.find("2097152"), 7, "1048576");
  const hw::Chip small = hw::chip_from_yaml(small_text, "sg2262-half-lmem");
  const auto big = run(v3(), decode(2, 8192));
  const auto half = run(v3(), decode(2, 8192), "gdma", small);
  // 2 x 8192 x 576 x 2 = 18,874,368 bytes.
  for (const auto* r : {&big, &half}) {
    const ops::OpTiming& fa2 = r->timeline.op(OpKind::fa2);
    CHECK(fa2.kv_bytes == 18'874'368);
    CHECK(fa2.kv_bytes == r->timeline.op(OpKind::kv_cache_read).hbm_bytes);
    CHECK(fa2.streamed_in_bytes == 18'874'368);
  }
  CHECK(big.timeline.op(OpKind::fa2).peak_lmem_bytes != half.timeline.op(OpKind::fa2).peak_lmem_bytes);
  CHECK(half.timeline.op(OpKind::fa2).peak_lmem_bytes <= 1'048'576);
}

TEST_CASE("(h) two runs give byte-identical JSON", "[mla][determinism]") {
  const auto w = decode(3, 5000, KvFormat::fp8);
  ops::LoweringOptions opts;
  const api::RunDescription d{chip(), v3(), w, opts};
  std::ostringstream a, b;
  api::write_json(a, d, run(v3(), w).timeline);
  api::write_json(b, d, run(v3(), w).timeline);
  CHECK(a.str() == b.str());
  CHECK(a.str().find("\"kind\": \"kv_cache_read\"") != std::string::npos);
  CHECK(a.str().find("\"kind\": \"fa2\"") != std::string::npos);
}

TEST_CASE("decode works for B = 1 GEMV, MTP q_len > 1 and a model without q LoRA", "[mla][shapes]") {
  models::ModelSpec lite = v3();
  lite.name = "V2-Lite-like";
  lite.hidden_size = 2048;
  lite.num_attention_heads = 16;  // fewer heads than cores: per-head matmuls split by columns
  lite.q_lora_rank.reset();
  const auto w = models::make_workload(Phase::decode, 1, 333, 2, KvFormat::bf16);
  const auto result = run(lite, w);
  CHECK(result.timeline.ops[1].name == "q_proj");
  // 1 x 333 x 576 x 2 = 383,616 bytes of history.
  CHECK(result.timeline.op(OpKind::kv_cache_read).hbm_bytes == 383'616);
  // Every op ran, and the block ends with o_proj.
  for (const auto& op : result.timeline.ops) CHECK(op.end > op.start);
  CHECK(result.timeline.total == result.timeline.ops.back().end);
}

TEST_CASE("q_len must be below kv_len for decode and equal to it for prefill", "[mla][workload]") {
  CHECK_THROWS_WITH(models::make_workload(Phase::decode, 1, 4, 4, KvFormat::bf16),
                    "decode needs 1 <= q_len < kv_len, got q_len 4 with kv_len 4");
  CHECK_THROWS_WITH(models::make_workload(Phase::prefill, 1, 4, 3, KvFormat::bf16),
                    "prefill processes the whole prompt: q_len must equal kv_len (4), got 3");
  // The error names the API's parameter, for a front end to map to its own spelling.
  try {
    models::make_workload(Phase::decode, 1, 4, 4, KvFormat::bf16);
    FAIL("no InputError");
  } catch (const hw::InputError& e) {
    CHECK(e.field() == "q_len");
  }
}

TEST_CASE("dependency ids: the history read waits on the absorption, the SDMA route names the read", "[mla][deps]") {
  // Per core: kv_cache_read's first GDMA command carries wait_tiu = the id of q_absorb's last TIU
  // compute command on that core (seed 003 appendix B: cmd_id_dep -> the kv_b/absorption TIU).
  // SDMA route: fa2's first TIU compute command carries wait_sdma = the read's last SDMA id.
  for (const std::string route : {"gdma", "sdma"}) {
    const auto result = run(v3(), decode(2, 8192), route);
    const hw::EngineId reader_engine = *chip().find_engine(route);
    const ops::OpId absorb = 8, read = 9, fa2 = 10;  // build order of the decode block with q LoRA
    REQUIRE(result.graph[absorb].name == "q_absorb");
    REQUIRE(result.graph[read].kind == OpKind::kv_cache_read);
    REQUIRE(result.graph[fa2].kind == OpKind::fa2);
    std::size_t cores_checked = 0;
    for (const sim::CoreProgram& core : result.lowered.program.cores) {
      std::uint32_t last_absorb_tiu = 0, first_fa2_tiu = 0, last_read_sdma = 0;
      const auto& tiu = core.queue(test_configs::engine::tiu);
      for (std::uint32_t i = 0; i < tiu.size(); ++i) {
        if (tiu[i].kind != sim::CommandKind::compute) continue;
        if (tiu[i].op == absorb) last_absorb_tiu = i + 1;
        if (tiu[i].op == fa2 && first_fa2_tiu == 0) first_fa2_tiu = i + 1;
      }
      const auto& reader = core.queue(reader_engine);
      std::optional<sim::Command> first_read;
      for (std::uint32_t i = 0; i < reader.size(); ++i) {
        if (reader[i].op != read) continue;
        if (!first_read) first_read = reader[i];
        last_read_sdma = i + 1;
      }
      if (!first_read || last_absorb_tiu == 0) continue;
      ++cores_checked;
      CHECK(first_read->wait_on(test_configs::engine::tiu) == last_absorb_tiu);
      if (route == "sdma") CHECK(tiu[first_fa2_tiu - 1].wait_on(test_configs::engine::sdma) == last_read_sdma);
    }
    // 2 x 8192 history rows over 64 cores: every core reads; 128 heads over 64 cores: every core absorbs.
    CHECK(cores_checked == 64);
  }
}

TEST_CASE("attention split: by heads every core reads the history, by sequence once", "[mla][split]") {
  const auto w = decode(2, 4096);
  ops::LoweringOptions heads;
  heads.attn_split = ops::AttentionSplit::head;
  const auto seq = api::simulate_block(chip(), v3(), w, {});
  const auto head = api::simulate_block(chip(), v3(), w, heads);
  // Seq split: 2 x 4096 x 576 x 2 = 9,437,184 bytes, once.
  CHECK(seq.timeline.op(OpKind::kv_cache_read).hbm_bytes == 9'437'184);
  // Head split: 2 sequences x 128 heads = 256 query rows over 64 cores, 4 each, every core in one
  // sequence: each of the 64 cores reads its sequence's 4096 x 1152 = 4,718,592 bytes:
  // 64 x 4,718,592 = 301,989,888 = 32 x the seq split's bytes.
  CHECK(head.timeline.op(OpKind::kv_cache_read).hbm_bytes == 301'989'888);
  // No partial outputs to merge when rows are whole.
  CHECK(head.timeline.op(OpKind::fa2_combine).hbm_bytes == 0);
  // Same attention FLOPs either way.
  CHECK(head.timeline.op(OpKind::fa2).flops == seq.timeline.op(OpKind::fa2).flops);
}

TEST_CASE("bound checks: the history read runs at its bandwidth limit, exactly", "[mla][bounds]") {
  // SDMA route: the read is pure streaming (no compute interleaved). B = 4, kv_len 8192:
  // 4 x 8192 rows over 64 cores = 512 rows per core, one transfer of 512 x 1152 = 589,824 B each
  // (a multiple of the 64 B burst), all issued at the same tick.
  const auto w = decode(4, 8192);
  ops::LoweringOptions sdma;
  sdma.kv_read_engine = "sdma";
  // Every core's read command and its duration in ps (they are all equal).
  auto per_core_durations = [&](const hw::Chip& c) {
    const auto r = api::simulate_block(c, v3(), w, sdma);
    const ops::OpTiming& read = r.timeline.op(OpKind::kv_cache_read);
    CHECK(read.hbm_bytes == 37'748'736);
    std::set<sim::Tick> durations, starts;
    for (std::size_t core = 0; core < r.lowered.program.cores.size(); ++core) {
      const auto& queue = r.lowered.program.cores[core].queue(test_configs::engine::sdma);
      for (std::size_t i = 0; i < queue.size(); ++i) {
        if (queue[i].op != read.id) continue;
        CHECK(queue[i].amount == 589'824);
        const auto& rec = r.trace.records(core, test_configs::engine::sdma)[i];
        durations.insert(rec.end - rec.start);
        starts.insert(rec.start);
      }
    }
    CHECK(starts.size() == 1);
    return durations;
  };
  SECTION("channel-bound: 64 SDMA channels x 64 x 0.85 GB/s = 3,481.6 GB/s < DDR 8,601.6 x 0.9") {
    // Alone: 120 ns start-up + 150 ns DDR round trip = 270,000 ps, then 589,824 B plus one access
    // overhead of 64 = 589,888 byte-times at 64 x 0.85 = 54.4 GB/s = 0.0544 B/ps:
    // 10,843,529.4 -> 10,843,530 ps (rounded up): 11,113,530 ps. The GDMA stores of q_absorb that
    // still run meanwhile do not slow it: 64 x 61.4376 + 64 x 54.4 = 7,413.6 GB/s of channels stay
    // below the DDR's 7,741.44.
    CHECK(per_core_durations(chip()) == std::set<sim::Tick>{11'113'530});
  }
  SECTION("DDR-bound: DDR 2,000 GB/s x 0.9 = 1,800 GB/s shared by the 64 cores") {
    // 1,800 / 64 = 28.125 GB/s per core, below the 54.4 GB/s channel. Alone: 270,000 ps +
    // 589,888 / 0.028125 = 20,973,795.6 ps: 21,243,796 ps; q_absorb's GDMA stores still share the
    // slower DDR while the reads start, which adds 127,912 ps.
    std::string text = test_configs::kSg2262;
    text.replace(text.find("bandwidth_gb_per_s: 8601.6"), 26, "bandwidth_gb_per_s: 2000");
    CHECK(per_core_durations(hw::chip_from_yaml(text, "slow-ddr")) == std::set<sim::Tick>{21'371'708});
  }
}

}  // namespace test_mla_decode
