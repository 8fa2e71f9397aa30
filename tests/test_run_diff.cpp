// g5sim diff (explore/run_diff.hpp) and the per-layer view (g5sim::layers_of): matched ops, layer
// spans, a strict reader.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "explore/run_diff.hpp"
#include "g5sim/g5sim.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_run_diff {

namespace {

g5sim::Result step(std::uint64_t layers, std::uint64_t ctx) {
  const std::string src = G5SIM_TEST_SOURCE_DIR;
  static const g5sim::Chip chip = g5sim::Chip::from_file(src + "/tests/golden/chip.yaml");
  static const g5sim::Model model = g5sim::Model::from_file(src + "/tests/golden/model.yaml");
  g5sim::Request r;
  r.layers = layers;
  r.ctx = ctx;
  r.tp = 1;
  r.ep = 8;
  r.dp = 8;
  return g5sim::simulate(chip, model, r);
}

}  // namespace

TEST_CASE("a run's layers: spans from the first op's start to the last op's end", "[diff][layers]") {
  const g5sim::Result r = step(4, 4096);
  const std::vector<g5sim::LayerRecord> layers = r.per_layer();
  // 4 decoder layers, then the ops outside them (embedding, final_norm, lm_head).
  REQUIRE(layers.size() == 5);
  std::uint64_t ops = 0;
  for (std::size_t l = 0; l < 4; ++l) CHECK(layers[l].layer == static_cast<int>(l));
  CHECK(layers[4].layer == -1);
  for (const g5sim::LayerRecord& l : layers) {
    ops += l.ops;
    std::uint64_t start = UINT64_MAX, end = 0, busy = 0;
    for (const g5sim::OpRecord& o : r.ops) {
      if (o.layer != l.layer) continue;
      start = std::min(start, o.op_start_ps);
      end = std::max(end, o.op_end_ps);
      busy += o.op_end_ps - o.op_start_ps;
    }
    CHECK((l.start_ps == start && l.end_ps == end && l.busy_ps == busy));
  }
  CHECK(ops == r.ops.size());
}

TEST_CASE("diff: a run against itself moves nothing, a longer context moves the attention", "[diff]") {
  const g5sim::Result a = step(4, 4096), b = step(4, 32768), c = step(3, 4096);
  const explore::RunFile fa = explore::read_run_file(a.json(), "a.json");
  const explore::RunFile fb = explore::read_run_file(b.json(), "b.json");
  const explore::RunFile fc = explore::read_run_file(c.json(), "c.json");
  CHECK(fa.total_ps == a.total_ps);
  CHECK(fa.ops.size() == a.ops.size());
  const explore::RunDiff same = explore::diff_runs(fa, fa);
  for (const auto* list : {&same.kinds, &same.layers, &same.ops}) {
    for (const explore::DiffLine& l : *list) CHECK(l.delta_ns() == 0);
  }
  // 8x the history: the op that moved most is an attention op (fa2 or the history read).
  const explore::RunDiff longer = explore::diff_runs(fa, fb);
  REQUIRE(!longer.ops.empty());
  CHECK((longer.ops.front().kind == "fa2" || longer.ops.front().kind == "kv_cache_read"));
  CHECK(longer.ops.front().delta_ns() > 0);
  // A layer only A has: its B time is 0; ops are matched by name, layer and occurrence.
  const explore::RunDiff fewer = explore::diff_runs(fa, fc);
  REQUIRE(fewer.layers.size() == 5);
  CHECK((fewer.layers[3].name == "3" && fewer.layers[3].b_ns == 0 && fewer.layers[3].a_ns > 0));
  CHECK(fewer.ops.size() == a.ops.size());  // every op of C is one of A's
  std::ostringstream table, json;
  explore::write_diff_table(table, longer, 3);
  explore::write_diff_json(json, longer, 3);
  CHECK(table.str().find("top 3 ops (time)") != std::string::npos);
  CHECK(json.str().rfind("{\n  \"schema_version\": 1,\n  \"a\": {\"source\": \"a.json\"", 0) == 0);
}

TEST_CASE("diff reads only a run's JSON, naming the file and the key", "[diff]") {
  CHECK_THROWS_WITH(explore::read_run_file("{\n  \"x\": [1,\n", "x.json"),
                    "x.json:3:1: not JSON (a g5sim run --json file is)");
  CHECK_THROWS_WITH(explore::read_run_file("[]", "l.json"),
                    "l.json: (top level): expected an object (not a g5sim run --json file?)");
  CHECK_THROWS_WITH(explore::read_run_file("{\"schema_version\": 1}", "k.json"),
                    "k.json: chip: missing (not a g5sim run --json file?)");
  std::string text = step(1, 1024).json();
  text.replace(text.find("\"op_end_ps\": "), 13, "\"op_end_ps\": -");
  CHECK_THROWS_WITH(explore::read_run_file(text, "n.json"),
                    "n.json: ops[0].op_end_ps: expected a whole number (not a g5sim run --json file?)");
  // A number past a double's range is refused, not thrown through as the JSON library's own
  // exception (found by the fuzz smoke run: tests/fuzz/regressions/run_json-number-out-of-range).
  CHECK_THROWS_WITH(explore::read_run_file("{\"schema_version\": 267962E368}", "o.json"),
                    "o.json: not JSON a g5sim run writes (a number out of range)");
}

}  // namespace test_run_diff
