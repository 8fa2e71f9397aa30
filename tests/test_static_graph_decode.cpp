// What Sophgo's statically compiled LLM demos add to a step (models/workload.hpp KvAppend,
// LmHeadWeights): the decode block's torch.cat(past, new), which copies the history before the
// attention reads it, and an output layer stored in the projections' format. On the shipped
// BM1684X and Qwen1.5-7B configs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "g5sim/g5sim.hpp"
#include "g5sim/run_options.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_static_graph_decode {

namespace {

std::string shipped(const std::string& relative) { return std::string(G5SIM_TEST_SOURCE_DIR) + "/configs/" + relative; }

const g5sim::Chip& bm1684x() {
  static const g5sim::Chip chip = g5sim::Chip::from_file(shipped("chips/bm1684x.yaml"));
  return chip;
}
const g5sim::Model& qwen() {
  static const g5sim::Model model = g5sim::Model::from_file(shipped("models/qwen1.5-7b.yaml"));
  return model;
}

g5sim::Request decode_512() {
  g5sim::Request r;
  r.batch = 1;
  r.ctx = 512;
  r.tp = r.ep = r.dp = 1;
  r.weight_dtype = "int4";
  r.weight_group = 64;
  return r;
}

const g5sim::OpRecord* op_named(const g5sim::Result& r, const std::string& name) {
  for (const g5sim::OpRecord& o : r.ops) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("static decode: concat copies the history once before the attention reads it", "[static][kv]") {
  g5sim::Request r = decode_512();
  r.scope = "block";
  const g5sim::Result in_place = g5sim::simulate(bm1684x(), qwen(), r);
  r.kv_append = "concat";
  const g5sim::Result concat = g5sim::simulate(bm1684x(), qwen(), r);
  CHECK(in_place.kv_append == "in-place");
  CHECK(concat.kv_append == "concat");
  REQUIRE(op_named(in_place, "kv_concat") == nullptr);
  const g5sim::OpRecord* copy = op_named(concat, "kv_concat");
  const g5sim::OpRecord* read = op_named(concat, "kv_cache_read");
  REQUIRE(copy != nullptr);
  REQUIRE(read != nullptr);
  // A token's cache row: 32 KV heads x (K + V) 2 x 128 x 2 B = 16,384 B. The read streams the 512
  // cached rows, 512 x 16,384 = 8,388,608 B, with or without the copy.
  CHECK(read->kv_bytes == 8388608);
  CHECK(op_named(in_place, "kv_cache_read")->kv_bytes == 8388608);
  // The copy reads them and writes them: 2 x 8,388,608 = 16,777,216 B, as a cache write.
  CHECK(copy->kind == "kv_cache_write");
  CHECK(copy->hbm_bytes == 16777216);
  // The attention reads the copy: it starts once the copy is written.
  CHECK(copy->op_end_ps <= read->op_start_ps);
  CHECK(concat.hbm_bytes == in_place.hbm_bytes + 16777216);
  CHECK(concat.total_ps > in_place.total_ps);
}

TEST_CASE("static decode: concat is refused where nothing is concatenated", "[static][kv]") {
  // Front ends (the CLI, Python's grid) refuse an option the run does not feel, with this reason.
  g5sim::Request r = decode_512();
  r.kv_append = "concat";
  CHECK(g5sim::why_option_does_not_apply("kv_append", qwen(), r).empty());
  r.phase = "prefill";
  CHECK(g5sim::why_option_does_not_apply("kv_append", qwen(), r) ==
        "a prefill step reads no KV history (it has no kv_cache_read): the engine is decode's");
  const g5sim::Model v3 = g5sim::Model::from_file(g5sim::shipped_model_path());
  CHECK(g5sim::why_option_does_not_apply("kv_append", v3, decode_512()) ==
        "DeepSeek-V3 has MLA attention: the decode reads its latent cache in place (concat models the static "
        "graphs of GQA/MHA models)");
  r = decode_512();
  r.kv_append = "append";
  CHECK_THROWS_WITH(g5sim::simulate(bm1684x(), qwen(), r), "expected in-place or concat, got 'append'");
}

TEST_CASE("static decode: an output layer stored as the projections are", "[static][lm_head]") {
  g5sim::Request r = decode_512();
  r.layers = 1;
  const g5sim::Result bf16 = g5sim::simulate(bm1684x(), qwen(), r);
  r.lm_head_weights = "projections";
  const g5sim::Result int4 = g5sim::simulate(bm1684x(), qwen(), r);
  CHECK(int4.lm_head_weights == "projections");
  // The [4096, 151936] output layer: bf16 4096 x 151,936 x 2 = 1,244,659,712 B; int4 g64
  // 4096 x 151,936 / 2 + 2 x (4096 / 64) x 151,936 = 311,164,928 + 19,447,808 = 330,612,736 B.
  // The untied embedding stays a bf16 table, so the footprint drops by the difference, 914,046,976 B,
  // and so does the lm_head's traffic (the same activation in, the same logits out).
  CHECK(bf16.weight_bytes - int4.weight_bytes == 914046976);
  CHECK(op_named(bf16, "lm_head")->hbm_bytes - op_named(int4, "lm_head")->hbm_bytes == 914046976);
  r.scope = "block";
  CHECK(g5sim::why_option_does_not_apply("lm_head_weights", qwen(), r) ==
        "an attention block has no output layer (--scope step has)");
}

}  // namespace test_static_graph_decode
