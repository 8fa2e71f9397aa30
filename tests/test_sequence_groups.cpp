// A step as groups of sequences (models/workload.hpp): the history read, chunks, causal
// attention, verify steps, the ragged split over cores, and what follows the groups (logit rows,
// tokens, data parallelism, the cache footprint), on the shipped SG2262 and DeepSeek-V3 configs.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "explore/validation/measured_rows.hpp"
#include "explore/validation/validation_report.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/config_error.hpp"
#include "models/memory_footprint.hpp"
#include "models/model_spec.hpp"
#include "models/parallelism.hpp"
#include "models/workload.hpp"
#include "replay_pair.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_sequence_groups {

namespace {

const g5sim::Chip& sg2262() {
  static const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
  return chip;
}
const g5sim::Model& v3() {
  static const g5sim::Model model = g5sim::Model::from_file(g5sim::shipped_model_path());
  return model;
}

// One chip's attention block (tp 1, ep 1, dp 1) of the mix.
g5sim::Result block(const std::string& mix) {
  g5sim::Request r;
  r.mix = mix;
  r.scope = "block";
  r.tp = r.ep = r.dp = 1;
  return g5sim::simulate(sg2262(), v3(), r);
}

std::vector<const g5sim::OpRecord*> ops_named(const g5sim::Result& r, const std::string& name) {
  std::vector<const g5sim::OpRecord*> out;
  for (const g5sim::OpRecord& o : r.ops) {
    if (o.name == name) out.push_back(&o);
  }
  return out;
}

std::uint64_t sum_of(const std::vector<const g5sim::OpRecord*>& ops, std::uint64_t g5sim::OpRecord::*field) {
  std::uint64_t n = 0;
  for (const g5sim::OpRecord* o : ops) n += o->*field;
  return n;
}

const std::string kMeasuredHeader =
    "id,hardware,chip,model,phase,batch,ctx,q_len,weight_dtype,weight_group,kv_dtype,tp,ep,dp,cores,workload,options,"
    "metric,measured,kind,source,note,exclude\n";

// DeepSeek-V3's latent row, bf16: (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 = 1,152 B.
constexpr std::uint64_t kLatentBytes = 1152;

}  // namespace

TEST_CASE("groups: --mix text and its paths", "[groups]") {
  const auto groups = models::parse_mix("64x1@4096,1x2048@0,4x2@1000,1x2048@6144", 8);
  REQUIRE(groups.size() == 4);
  CHECK(groups[0] == models::SequenceGroup{64, 1, 4096, true});     // decode: attends its 4096
  CHECK(groups[1] == models::SequenceGroup{1, 2048, 0, false});     // a prompt
  CHECK(groups[2] == models::SequenceGroup{4, 2, 1000, true});      // a verify of 1 + 1 drafted
  CHECK(groups[3] == models::SequenceGroup{1, 2048, 6144, false});  // a chunk: 6144 + 2048 keys
  CHECK(groups[3].kv_len() == 8192);
  CHECK(models::mix_text(groups) == "64x1@4096,1x2048@0,4x2@1000,1x2048@6144");
  // decode_max_q draws the line between a verify and a chunk.
  CHECK_FALSE(models::parse_mix("4x16@4096", 8)[0].decode);
  CHECK(models::parse_mix("4x16@4096", 16)[0].decode);
  // A query longer than its history cannot be read back from it: a chunk.
  CHECK_FALSE(models::parse_mix("1x4@2", 8)[0].decode);
  CHECK_THROWS_WITH(models::parse_mix("64x1", 8), "'64x1' is not COUNTxQ_LEN@HISTORY (as 64x1@4096 or 1x2048@0)");
  CHECK_THROWS_WITH(models::parse_mix("64x1@4096,", 8), "'' is not COUNTxQ_LEN@HISTORY (as 64x1@4096 or 1x2048@0)");
  CHECK_THROWS_WITH(models::parse_mix("64x-1@4096", 8),
                    "'64x-1@4096': Q_LEN '-1' is not a whole number (expected COUNTxQ_LEN@HISTORY, as 64x1@4096)");
  CHECK_THROWS_WITH(models::make_mixed_workload(models::parse_mix("0x1@4096", 8), models::KvFormat::bf16, "mix"),
                    "group 0x1@4096: count 0 is outside 1..1048576 sequences");
  CHECK_THROWS_WITH(
      models::make_mixed_workload(models::parse_mix("1x16777216@1", 8), models::KvFormat::bf16, "mix"),
      "group 1x16777216@1: history + q_len = 16777217 is above the 16777216 tokens a sequence may attend");
}

TEST_CASE("groups: a --seqs file is strict and its errors name the file, line and column", "[groups]") {
  const std::string path = "/tmp/g5sim_test_seqs.csv";
  auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  write("# decodes beside a prompt\ncount,q_len,history\n64,1,4096\r\n1,2048,0\n");
  CHECK(models::mix_text(models::read_sequence_file(path, 8)) == "64x1@4096,1x2048@0");
  auto error = [&](const std::string& text) {
    write(text);
    try {
      models::read_sequence_file(path, 8);
    } catch (const hw::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("count,q,history\n1,1,1\n") ==
        path + ":1:1: expected the header count,q_len,history, got 'count,q,history'");
  CHECK(error("count,q_len,history\n64,1,4096\n1,2x,0\n") == path + ":3:3: q_len: '2x' is not a whole number");
  CHECK(error("count,q_len,history\n64,1\n") == path + ":2:5: expected 3 cells: count,q_len,history");
  CHECK(error("count,q_len,history\n64,1,4096,7\n") == path + ":2:6: history: '4096,7' is not a whole number");
  CHECK(error("count,q_len,history\n0,1,4096\n") ==
        path + ":2:1: group 0x1@4096: count 0 is outside 1..1048576 sequences");
  CHECK(error("count,q_len,history\n") == path + ":1: no groups after the header");
  CHECK(error("") == path + ": empty: expected the header count,q_len,history and a row per group");
}

TEST_CASE("groups: a mixed step reads the history of every sequence, per layer", "[groups][kv]") {
  // Whole steps of 3 layers: 4 decodes at 4096, 2 at 1000 and a 2048-token prompt. Per layer
  // kv_cache_read = (4 x 4096 + 2 x 1000) x 1,152 = 18,384 x 1,152 = 21,178,368 B; the prompt
  // reads nothing.
  g5sim::Request r;
  r.mix = "4x1@4096,2x1@1000,1x2048@0";
  r.layers = 3;
  r.tp = r.ep = r.dp = 1;
  const g5sim::Result step = g5sim::simulate(sg2262(), v3(), r);
  const auto reads = ops_named(step, "kv_cache_read");
  REQUIRE(reads.size() == 3);
  for (const g5sim::OpRecord* read : reads) {
    CHECK(read->kv_bytes == 21'178'368);
    CHECK(read->hbm_bytes == 21'178'368);
  }
  CHECK(step.phase == "mixed");
  CHECK(step.batch == 7);
  // The projections see every new token: 4 + 2 + 2048 = 2054 rows.
  CHECK(step.op("attn_norm", 0).shape == "[2054, 7168]");
  // Logits for each decode's token and the prompt's last: 4 + 2 + 1 = 7 rows of 7168.
  CHECK(step.op("final_norm").shape == "[7, 7168]");
  // A prefill-only mix reads no history at all.
  const g5sim::Result prompts = block("2x512@0,1x1024@0");
  CHECK(ops_named(prompts, "kv_cache_read").empty());
  CHECK(ops_named(prompts, "fa2_combine").empty());
}

TEST_CASE("groups: a chunk after its history reads exactly that history and attends causally", "[groups][chunk]") {
  const g5sim::Result r = block("1x2048@6144");
  // The cache read: 6144 x 1,152 = 7,077,888 B, the history alone (the chunk's own K/V are this
  // step's).
  const auto reads = ops_named(r, "kv_cache_read");
  REQUIRE(reads.size() == 1);
  CHECK(reads[0]->kv_bytes == 7'077'888);
  // Query t of the chunk sees the 6144 cached keys and chunk tokens 0..t: 2048 x 6144 +
  // 2048 x 2049 / 2 = 12,582,912 + 2,098,176 = 14,681,088 pairs. MHA (the default prefill) with
  // 128 heads of q 192 and v 128: 2 x 128 x 14,681,088 x 320 = 1,202,674,728,960 FLOPs, as
  // 1,030,792,151,040 over the history (2 x 128 x 2048 x 6144 x 320) and 171,882,577,920 over
  // the chunk itself (2 x 128 x 2,098,176 x 320).
  const auto fa2 = ops_named(r, "fa2");
  REQUIRE(fa2.size() == 2);
  CHECK(fa2[0]->flops == 171'882'577'920);
  CHECK(fa2[1]->flops == 1'030'792'151'040);
  CHECK(sum_of(fa2, &g5sim::OpRecord::flops) == 1'202'674'728'960);
  // The history is up-projected (standard path, as vLLM's MLA prefill of a chunk's context):
  // [6144, 576] x [576, 128 x 256] counting d_c: 2 x 6144 x 512 x 32768 = 206,158,430,208.
  CHECK(r.op("kv_up_proj").flops == 206'158'430'208);
  // The two parts merge in the history attention's combine, after both.
  const g5sim::OpRecord& combine = r.op("fa2_combine");
  CHECK(combine.op_start_ps >= fa2[0]->op_end_ps);
  CHECK(combine.op_start_ps >= fa2[1]->op_end_ps);
  CHECK(r.op("o_proj").op_start_ps >= combine.op_end_ps);
}

TEST_CASE("groups: a verify step of q_len 2 reads what a decode at the same history reads", "[groups][verify]") {
  // 8 x 4096 x 1,152 = 37,748,736 B for both: the drafted token is written first and read back
  // with the history, as a decode's is.
  const g5sim::Result decode = block("8x1@4096");
  const g5sim::Result verify = block("8x2@4096");
  CHECK(decode.op("kv_cache_read").kv_bytes == 37'748'736);
  CHECK(verify.op("kv_cache_read").kv_bytes == 37'748'736);
  CHECK(verify.sequences.at(0).path == "decode");
  // Twice the queries, twice the attention: 2 x 128 x (8 x 2 x 4096) x (576 + 512) =
  // 18,253,611,008 FLOPs against 2 x 128 x (8 x 4096) x 1088 = 9,126,805,504.
  CHECK(decode.op("fa2").flops == 9'126'805'504);
  CHECK(verify.op("fa2").flops == 18'253'611'008);
}

TEST_CASE("groups: one long and many short decodes split over the cores as their total history", "[groups][ragged]") {
  // 1 x 32768 + 63 x 1024 = 97,280 history tokens over 64 cores: 1,520 each, the long sequence
  // spanning 22 cores and merged from their partials (P* = sqrt(97,280 x 1.12749) = 331: all 64
  // cores, ops::decode_split_parts). Its attention (read to combine) must take about what 64
  // sequences of 1,520 take, not what one core needs for 32768 tokens. (The even batch puts one
  // whole sequence on each core and merges nothing; the ragged one adds the long sequence's
  // combine.)
  auto attention_ps = [](const g5sim::Result& r) {
    return r.op("fa2_combine").op_end_ps - r.op("kv_cache_read").op_start_ps;
  };
  const g5sim::Result ragged = block("1x1@32768,63x1@1024");
  const g5sim::Result even = block("64x1@1520");
  CHECK(ragged.op("kv_cache_read").kv_bytes == 97'280 * kLatentBytes);
  CHECK(even.op("kv_cache_read").kv_bytes == 97'280 * kLatentBytes);
  // Locked as simulated: 161.30 us against 133.93 us, 1.204 x (the long sequence's 22 partials
  // merged by its combine, and the cores' shares rounded to whole tokens).
  CHECK(attention_ps(ragged) == 161'299'674);
  CHECK(attention_ps(even) == 133'929'180);
  g5sim::Request one;
  one.mix = "1x1@32768";
  one.scope = "block";
  one.tp = one.ep = one.dp = 1;
  one.cores = 1;
  const g5sim::Result alone = g5sim::simulate(sg2262(), v3(), one);
  CHECK(attention_ps(ragged) * 4 < attention_ps(alone));
  // The order of the groups does not matter to the split's balance.
  CHECK(attention_ps(block("63x1@1024,1x1@32768")) <= attention_ps(ragged) * 101 / 100);
}

TEST_CASE("groups: a GQA batch of unequal histories takes about what as many at their mean take", "[groups][ragged]") {
  // Qwen3-8B on H100: n decodes at 40 + (i x step mod span) (i = 0..n-1: spread over the whole
  // span, short beside long as a serve's are) against n at their mean. With equal token ranges a
  // core over short histories opened many pieces and finished last: the mean's attention (read to
  // combine) came out 1.4-9.1 % fast over these batches (30 decodes: 9.1 %), the block 1.2-4.3 %.
  // Cut by cost (ops/attention_plan.hpp) the same batches are within -1.2..+1.8 % (the block
  // -0.3..+1.1 %): a serve's step model may stand them for the batch.
  const g5sim::Chip h100 = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model qwen = g5sim::Model::from_file(g5sim::model_path("qwen3-8b"));
  auto attention_ps = [&](const std::string& mix) {
    g5sim::Request r;
    r.mix = mix;
    r.scope = "block";
    r.tp = r.ep = r.dp = 1;
    const g5sim::Result result = g5sim::simulate(h100, qwen, r);
    return static_cast<double>(result.op("fa2_combine").op_end_ps - result.op("kv_cache_read").op_start_ps);
  };
  struct Batch {
    std::uint64_t n, step, span;
  };
  for (const Batch b :
       {Batch{49, 977, 3200}, Batch{49, 611, 2000}, Batch{30, 313, 1500}, Batch{20, 701, 2500}, Batch{12, 977, 3200}}) {
    std::string mix;
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < b.n; ++i) {
      const std::uint64_t history = 40 + i * b.step % b.span;
      if (i != 0) mix += ',';
      mix += fmt::format("1x1@{}", history);
      sum += history;
    }
    const std::uint64_t mean = (2 * sum + b.n) / (2 * b.n);  // rounded
    const double ratio = attention_ps(fmt::format("{}x1@{}", b.n, mean)) / attention_ps(mix);
    INFO(b.n << " decodes: at their mean / as they are = " << ratio);
    CHECK(std::abs(ratio - 1) <= 0.02);
  }
}

TEST_CASE("groups: a one-group mix is the uniform step, byte for byte", "[groups]") {
  g5sim::Request uniform;
  uniform.scope = "block";
  uniform.tp = uniform.ep = uniform.dp = 1;
  uniform.batch = 8;
  uniform.ctx = 4096;
  g5sim::Request mixed = uniform;
  mixed.batch.reset();
  mixed.mix = "8x1@4096";
  CHECK(g5sim::simulate(sg2262(), v3(), uniform).json() == g5sim::simulate(sg2262(), v3(), mixed).json());
  uniform.phase = "prefill";
  uniform.batch = 2;
  uniform.ctx = 1024;
  mixed.mix = "2x1024@0";
  CHECK(g5sim::simulate(sg2262(), v3(), uniform).json() == g5sim::simulate(sg2262(), v3(), mixed).json());
  // Full-square prefill: the pairs of the whole square, 2 x 1024 x 1024 per head:
  // 2 x 128 x 2,097,152 x 320 = 171,798,691,840 FLOPs.
  uniform.prefill_attention = "full";
  CHECK(g5sim::simulate(sg2262(), v3(), uniform).op("fa2").flops == 171'798'691'840);
}

TEST_CASE("groups: data parallelism deals the groups round robin and simulates the fullest rank", "[groups][dp]") {
  // 3 decodes at 4096 and 2 at 100 over dp 2: the first group gives ranks 0, 1 one each and its
  // third to rank 0; the second group one each. Rank 0: 2 x 1@4096 + 1 x 1@100 (3 tokens), rank
  // 1: 1 + 1 (2 tokens): rank 0 is simulated.
  models::Workload w =
      models::make_mixed_workload(models::parse_mix("3x1@4096,2x1@100", 8), models::KvFormat::bf16, "mix");
  const models::Workload rank = models::chip_workload(w, models::Parallelism{1, 1, 2});
  CHECK(models::mix_text(rank.groups) == "2x1@4096,1x1@100");
  // A uniform batch still splits evenly, and needs dp to divide it.
  const models::Workload even =
      models::make_workload(models::Phase::decode, 8, 4096, std::nullopt, models::KvFormat::bf16);
  CHECK(models::chip_workload(even, models::Parallelism{1, 1, 4}).sequences() == 2);
  const models::ModelSpec spec = models::load_model(g5sim::shipped_model_path());
  // Fewer sequences than ranks: dp 6 over these 5 gives ranks 0-2 one decode at 4096 and ranks
  // 3-4 one at 100; rank 5 idles (a serving step with fewer requests than ranks). Every rank has
  // at most 1 token; rank 0 has the most history: 1 x 1@4096 is simulated.
  CHECK_NOTHROW(models::validate_parallelism(models::Parallelism{1, 1, 6}, spec, w));
  CHECK(models::mix_text(models::chip_workload(w, models::Parallelism{1, 1, 6}).groups) == "1x1@4096");
  // One group that does not divide by dp is dealt too: 3 prompts over dp 2 give rank 0 two.
  const models::Workload three =
      models::make_mixed_workload(models::parse_mix("3x512@0", 8), models::KvFormat::bf16, "mix");
  CHECK(models::mix_text(models::chip_workload(three, models::Parallelism{1, 1, 2}).groups) == "2x512@0");
  // The cache a chip keeps: every sequence's tokens after the step, 2 x 4096 + 1 x 100 = 8,292
  // tokens x 61 layers x 1,152 B = 582,695,424 B.
  CHECK(models::chip_footprint(spec, w, models::Parallelism{1, 1, 2}).kv_cache_bytes == 582'695'424);
}

TEST_CASE("groups: a GQA step with decodes and a chunk reads each one's history", "[groups][gqa]") {
  // Qwen3-8B: 8 KV heads of 128, K and V in bf16: 2 x 8 x 128 x 2 = 4,096 B per token per layer.
  // The decodes read 4 x 2048 x 4,096 = 33,554,432 B; the chunk's history 1024 x 4,096 = 4,194,304.
  const g5sim::Model qwen = g5sim::Model::from_file(g5sim::model_path("qwen3-8b"));
  g5sim::Request r;
  r.mix = "4x1@2048,1x512@1024";
  r.scope = "block";
  r.tp = r.ep = r.dp = 1;
  const g5sim::Result result = g5sim::simulate(sg2262(), qwen, r);
  const auto reads = ops_named(result, "kv_cache_read");
  REQUIRE(reads.size() == 2);
  CHECK(reads[0]->kv_bytes == 33'554'432);
  CHECK(reads[1]->kv_bytes == 4'194'304);
  // The chunk's 512 queries: causal over themselves (512 x 513 / 2 = 131,328 pairs) and all of the
  // history (512 x 1024 = 524,288), 32 query heads of 128 + 128: 2 x 32 x pairs x 256.
  const auto fa2 = ops_named(result, "fa2");
  REQUIRE(fa2.size() == 3);
  CHECK(fa2[0]->flops == 2ull * 32 * (4 * 2048) * 256);  // the decodes
  CHECK(fa2[1]->flops == 2ull * 32 * 131'328 * 256);
  CHECK(fa2[2]->flops == 2ull * 32 * 524'288 * 256);
  CHECK(result.op("qkv_proj").shape.rfind("[516, ", 0) == 0);  // 4 + 512 new tokens
}

TEST_CASE("groups: a mixed step replays its identical layers exactly", "[groups][replay]") {
  // 8 layers (3 dense, 5 MoE) of decodes, a verify, a chunk and a prompt on one of 8 chips: the
  // layers of each kind are alike, so replay derives some; the JSON is the full run's.
  g5sim::Request r;
  r.mix = "16x1@4096,8x2@2048,1x256@1024,1x128@0";
  r.layers = 8;
  r.tp = 1, r.ep = 8, r.dp = 8;
  const replay_test::Pair p = replay_test::both_ways(sg2262(), v3(), r);
  CHECK(p.replayed.replayed_commands > 0);
  CHECK(p.replayed.total_ps == p.full.total_ps);
  CHECK(replay_test::without_replay_line(p.replayed.json()) == replay_test::without_replay_line(p.full.json()));
}

TEST_CASE("a step row takes the step's groups of sequences as mix=", "[validation][groups]") {
  // A mixed step row on the shipped SG2262 and DeepSeek-V3 (2 layers, one chip of tp 1 ep 8 dp 8):
  // its prediction is the step of the mix, whatever the row's batch and ctx columns say.
  const std::string dir = "/tmp/g5sim_test_validate_mix.csv";
  const std::string row =
      "mix1,test,sg2262,deepseek-v3,decode,65,4096,,,,,1,8,8,,step,\"mix=64x1@4096,1x2048@0 "
      "layers=2\",step_ms,1,D,test,,\n";
  std::ofstream(dir) << kMeasuredHeader + row;
  explore::validation::ValidateOptions options;
  const auto report = explore::validation::validate_table(explore::validation::read_measured_file(dir), options);
  REQUIRE(report.rows.size() == 1);
  REQUIRE(report.rows[0].status == "ok");
  g5sim::Request r;
  r.mix = "64x1@4096,1x2048@0";
  r.layers = 2;
  r.tp = 1, r.ep = 8, r.dp = 8;
  const g5sim::Result direct = g5sim::simulate(g5sim::Chip::from_file(g5sim::chip_path("sg2262")),
                                               g5sim::Model::from_file(g5sim::model_path("deepseek-v3")), r);
  // step_ms as validation computes it: seconds (ps x 1e-12), then x 1e3 (the same double operations).
  CHECK(report.rows[0].predicted == static_cast<double>(direct.total_ps) * 1e-12 * 1e3);
  // A mix that is not COUNTxQ_LEN@HISTORY: the row is refused with the option's message.
  const std::string bad_row =
      "mix2,test,sg2262,deepseek-v3,decode,65,4096,,,,,1,8,8,,step,\"mix=64x1@4096,1x2048 "
      "layers=2\",step_ms,1,D,test,,\n";
  std::ofstream(dir) << kMeasuredHeader + bad_row;
  const auto bad = explore::validation::validate_table(explore::validation::read_measured_file(dir), options);
  REQUIRE(bad.rows.size() == 1);
  CHECK(bad.rows[0].status != "ok");
  CHECK_THAT(bad.rows[0].reason, Catch::Contains("'1x2048' is not COUNTxQ_LEN@HISTORY"));
}

TEST_CASE("groups: a chunk of 16 M tokens is refused at once, not planned", "[groups][limits]") {
  // Its causal attention alone is about 9e12 commands: the estimate refuses it without building
  // the attention plan (whose chunk lists would hold about an eighth of that).
  g5sim::Request r;
  r.mix = "1x16777215@1";
  r.layers = 1;
  r.tp = r.ep = r.dp = 1;
  CHECK_THROWS_WITH(g5sim::simulate(sg2262(), v3(), r), Catch::Contains("max_commands"));
}

}  // namespace test_sequence_groups
