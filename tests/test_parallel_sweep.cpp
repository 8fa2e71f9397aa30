// Sweeps: parallel points (--jobs N: the same bytes whatever N, the same error), the grid's order
// and identity columns, shards (--shard I/N) that merge into the unsharded file.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/parallel_for.hpp"
#include "explore/context_list.hpp"
#include "explore/grid_sweep.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/config_error.hpp"
#include "tools/cli.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_parallel_sweep {

using namespace std::string_literals;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int cli(std::vector<std::string> args) {
  std::vector<const char*> argv{"g5sim"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return tools::run_cli(static_cast<int>(argv.size()), argv.data());
}

// The golden chip with half its cores and its own name, written in `dir`; returns its path.
std::string half_chip(const std::filesystem::path& dir) {
  std::string yaml = slurp(std::string(G5SIM_TEST_SOURCE_DIR) + "/tests/golden/chip.yaml");
  yaml.replace(yaml.find("name: SG2262-golden"), 19, "name: SG2262-half");
  yaml.replace(yaml.find("cores: 64"), 9, "cores: 32");
  const auto path = dir / "half.yaml";
  std::ofstream(path) << yaml;
  return path.string();
}

}  // namespace

TEST_CASE("sweep points on several threads write the same bytes as on one", "[cli][sweep][jobs]") {
  const std::string src = G5SIM_TEST_SOURCE_DIR;
  const auto dir = std::filesystem::temp_directory_path() / "g5sim_test_parallel_sweep";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<std::string> base{"sweep",
                                "--chip",
                                src + "/tests/golden/chip.yaml",
                                "--model",
                                src + "/tests/golden/model.yaml",
                                "--scope",
                                "block",
                                "--dp",
                                "1",
                                "--ctx",
                                "1024:65536:x2",
                                "--kv-dtype",
                                "fp8"};
  std::vector<std::string> files;
  for (const char* jobs : {"1", "2", "3", "7"}) {
    auto args = base;
    const std::string out = (dir / (std::string("jobs") + jobs + ".csv")).string();
    args.insert(args.end(), {"--jobs", jobs, "--csv", out});
    REQUIRE(cli(args) == 0);
    files.push_back(slurp(out));
  }
  // 7 points (1024 .. 65536), the grid line and the column line.
  CHECK(std::count(files[0].begin(), files[0].end(), '\n') == 9);
  for (std::size_t i = 1; i < files.size(); ++i) CHECK(files[i] == files[0]);
}

TEST_CASE("parallel_for reports the lowest failing item's error, whatever the timing", "[cli][jobs]") {
  std::atomic<int> ran{0};
  for (unsigned jobs : {1u, 2u, 8u}) {
    ran = 0;
    try {
      api::parallel_for(20, jobs, [&](std::size_t i) {
        ++ran;
        if (i % 5 == 3) throw std::runtime_error("item " + std::to_string(i));
      });
      FAIL("no exception");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "item 3");
    }
    // On one thread the loop stops at the first failure; on several every item runs.
    CHECK(ran == (jobs == 1 ? 4 : 20));
  }
}

TEST_CASE("grid points nest chips, models, the table's axes with the batch last, then contexts", "[sweep][grid]") {
  // The nesting: the table's grid axes in its order, the batch moved last (the context is inside).
  CHECK(explore::grid_nesting() == std::vector<std::string>{"phase", "q_len", "mix", "kv_dtype", "mla_mode",
                                                            "weight_dtype", "act_dtype", "cores", "tp", "ep", "dp",
                                                            "batch"});
  explore::SweepGrid g;
  g.chips = {"a.yaml", "b.yaml"};
  g.set_axis("batch", {"8", "64"});
  g.set_axis("phase", {"decode", "prefill"});  // set after the batch, nested outside it all the same
  g.contexts = {1024, 4096, 16384};
  REQUIRE(g.axes.size() == 2);
  CHECK((g.axes[0].option == "phase" && g.axes[1].option == "batch"));
  CHECK_THROWS_AS(g.set_axis("scope", {"block"}), std::logic_error);
  // 2 chips x 1 model x 2 phases x 2 batches x 3 contexts = 24 points, the context fastest.
  const auto all = explore::grid_points(g);
  REQUIRE(all.size() == 24);
  CHECK((all[0].chip == 0 && all[0].value("phase") == "decode" && all[0].value("batch") == "8" && all[0].ctx == 1024));
  CHECK((all[2].ctx == 16384 && all[3].value("batch") == "64" && all[3].ctx == 1024));
  CHECK((all[6].value("phase") == "prefill" && all[12].chip == 1));
  CHECK(all[6].value("tp").empty());
  CHECK(all[6].describe() == "phase prefill, batch 8, ctx 1024");
  for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i].index == i);
  // Shard 1 of 5: points 1, 6, 11, 16, 21 (p mod 5 == 1).
  const auto shard = explore::grid_points(g, 1, 5);
  REQUIRE(shard.size() == 5);
  for (std::size_t k = 0; k < shard.size(); ++k) CHECK(shard[k].index == 1 + 5 * k);
  CHECK_THROWS_AS(explore::grid_points(g, 5, 5), hw::ConfigError);
  // Points are made from their numbers alone: the last one, 23 = ((1 x 2 + 1) x 2 + 1) x 3 + 2.
  const explore::SweepPoint last = explore::grid_point(g, 23);
  CHECK((last.chip == 1 && last.value("phase") == "prefill" && last.value("batch") == "64" && last.ctx == 16384));
  // A point's request: the base with each axis value set through the table.
  const g5sim::Request r = explore::point_request(g5sim::Request{}, last);
  CHECK((r.phase == "prefill" && r.batch == 64u && r.ctx == 16384));
}

TEST_CASE("a grid's size is the product of its lists, refused past 2^32 points", "[sweep][grid]") {
  explore::SweepGrid g;
  g.contexts.assign(4096, 1024);
  g.set_axis("batch", std::vector<std::string>(4096, "1"));
  // 4096 x 4096 = 2^24 points, made one at a time: nothing of that size is held.
  CHECK(explore::grid_size(g) == std::uint64_t{1} << 24);
  CHECK(explore::grid_point(g, (std::uint64_t{1} << 24) - 1).index == (std::uint64_t{1} << 24) - 1);
  g.set_axis("kv_dtype", std::vector<std::string>(256, "bf16"));  // 2^32: the limit itself
  CHECK(explore::grid_size(g) == explore::kMaxGridPoints);
  g.set_axis("mla_mode", {"absorb", "standard"});  // 2^33
  CHECK_THROWS_WITH(explore::grid_size(g),
                    "sweep: the grid has more than 4294967296 points (the product of its "
                    "lists' lengths)");
}

TEST_CASE("sharded sweeps merge into the unsharded file, byte for byte", "[cli][sweep][shard]") {
  const std::string src = G5SIM_TEST_SOURCE_DIR;
  const auto dir = std::filesystem::temp_directory_path() / "g5sim_test_sweep_shards";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // 2 chips x 2 models x 3 batches x 8 contexts (the grid, on blocks to stay fast) = 96
  // points; the chips differ in name and cores only.
  const std::string chip_b = half_chip(dir);
  const std::vector<std::string> base{"sweep",
                                      "--chip",
                                      src + "/tests/golden/chip.yaml," + chip_b,
                                      "--model",
                                      src + "/tests/golden/model.yaml," + src + "/configs/models/deepseek-v2-lite.yaml",
                                      "--scope",
                                      "block",
                                      "--dp",
                                      "1",
                                      "--batch",
                                      "1,2,4",
                                      "--ctx",
                                      "512:65536:x2",
                                      "--jobs",
                                      "2"};
  auto run = [&](const std::vector<std::string>& extra, const std::string& name) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--csv", (dir / name).string()});
    REQUIRE(cli(args) == 0);
    return (dir / name).string();
  };
  const std::string whole = run({}, "whole.csv");
  const std::string text = slurp(whole);
  // The grid line, the column line and 96 rows; the columns name every identity, sharding and
  // config column.
  CHECK(std::count(text.begin(), text.end(), '\n') == 98);
  const std::string grid_line = fmt::format("# g5sim {} sweep grid 96 points sha256 ", g5sim::version());
  REQUIRE(text.rfind(grid_line, 0) == 0);
  const std::string hash = text.substr(grid_line.size(), 64);
  CHECK(text.substr(grid_line.size() + 64, 12) == " shard 0/1\npoint,"s.substr(0, 12));
  CHECK(text.find(
            "\npoint,chip,model,phase,batch,ctx,q_len,mix,kv_dtype,mla_mode,prefill_mla_mode,prefill_attention,"
            "weight_dtype,act_dtype,"
            "kv_read_engine,attn_split,scope,layers,micro_batches,host_launch_ns,cores,tp,ep,dp,prefetch,replay,chips,"
            "chip_source,chip_sha256,model_source,model_sha256,total_ns,band_low_ns,band_high_ns,tokens_per_s,"
            "tokens_per_s_per_chip,"
            "kv_cache_read_bytes,kv_cache_read_ns,fa2_ns,regime,bound_by,fits,bytes_per_chip\n") != std::string::npos);
  // Point 95: the last chip (32 cores), the last model, batch 4, ctx 65536, on a block.
  CHECK(text.find(
            "\n95,SG2262-half,DeepSeek-V2-Lite,decode,4,65536,1,4x1@65536,bf16,absorb,expanded,causal,bf16,auto,gdma,"
            "seq,block,1,1,0,32,"
            "1,1,1,true,true,1," +
            chip_b + ",") != std::string::npos);
  std::vector<std::string> shards;
  for (const char* s : {"0/3", "1/3", "2/3"})
    shards.push_back(run({"--shard", s}, std::string("shard") + s[0] + ".csv"));
  // Each shard names the same grid (its hash) and its own part.
  CHECK(slurp(shards[1]).rfind(grid_line + hash + " shard 1/3\n", 0) == 0);
  // Given in any order, the shards merge into the same bytes.
  CHECK(explore::merge_sweeps({shards[2], shards[0], shards[1]}) == text);
  const std::string merged = (dir / "merged.csv").string();
  REQUIRE(cli({"merge", shards[0], shards[1], shards[2], "--out", merged}) == 0);
  CHECK(slurp(merged) == text);
  // A missing shard: points 1, 4, 7, ... (shard 1 of 3) are in no file.
  CHECK_THROWS_WITH(explore::merge_sweeps({shards[0], shards[2]}),
                    "merge: 32 of the grid's 96 points are in no file (first: 1, 4, 7, 10, 13) (shards missing: 1 of "
                    "3)");
  CHECK_THROWS_WITH(explore::merge_sweeps({shards[0], shards[0]}), Catch::Contains("shard 0/3 again"));
  // A shard cut short on a clean line end (its last row, point 95, lost): refused.
  std::string cut = slurp(shards[2]);
  cut.erase(cut.rfind('\n', cut.size() - 2) + 1);
  std::ofstream(dir / "cut.csv") << cut;
  CHECK_THROWS_WITH(explore::merge_sweeps({shards[0], shards[1], (dir / "cut.csv").string()}),
                    "merge: 1 of the grid's 96 points are in no file (first: 95) (a shard was cut short)");
  // A row cut mid-line.
  std::ofstream(dir / "midrow.csv") << cut << "95,SG2262-half,DeepSeek-V2-Lite\n";
  CHECK_THROWS_WITH(explore::merge_sweeps({shards[0], shards[1], (dir / "midrow.csv").string()}),
                    Catch::Contains("midrow.csv:34: 3 cells, the header has 43 (a cut row?)"));
  // A shard of another grid (scope step instead of block) and a file that is no sweep.
  auto step_args = base;
  step_args.erase(std::find(step_args.begin(), step_args.end(), "--scope"),
                  std::find(step_args.begin(), step_args.end(), "--dp"));
  step_args.insert(step_args.end(), {"--layers", "1", "--shard", "1/3", "--csv", (dir / "step1.csv").string()});
  REQUIRE(cli(step_args) == 0);
  CHECK_THROWS_WITH(explore::merge_sweeps({shards[0], (dir / "step1.csv").string(), shards[2]}),
                    Catch::Contains("step1.csv:1: a shard of another grid"));
  std::ofstream(dir / "other.csv") << "ctx,batch,total_ns\n1024,1,5.000\n";
  CHECK_THROWS_WITH(explore::merge_sweeps({shards[0], (dir / "other.csv").string()}),
                    Catch::Contains("other.csv:1: not a g5sim sweep CSV"));
}

TEST_CASE("chips that share a name are told apart by their file's stem", "[cli][sweep]") {
  const std::string src = G5SIM_TEST_SOURCE_DIR;
  const auto dir = std::filesystem::temp_directory_path() / "g5sim_test_same_name";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string yaml = slurp(src + "/tests/golden/chip.yaml");
  yaml.replace(yaml.find("cores: 64"), 9, "cores: 32");
  std::ofstream(dir / "variant.yaml") << yaml;
  const std::string csv = (dir / "s.csv").string();
  REQUIRE(cli({"sweep", "--chip", src + "/tests/golden/chip.yaml," + (dir / "variant.yaml").string(), "--model",
               src + "/tests/golden/model.yaml", "--scope", "block", "--dp", "1", "--ctx", "1024", "--csv", csv}) == 0);
  const std::string text = slurp(csv);
  CHECK(text.find("\n0,SG2262-golden (chip),") != std::string::npos);
  CHECK(text.find("\n1,SG2262-golden (variant),") != std::string::npos);
  const std::vector<g5sim::Chip> chips{g5sim::Chip::from_file(src + "/tests/golden/chip.yaml"),
                                       g5sim::Chip::from_file((dir / "variant.yaml").string()),
                                       g5sim::Chip::from_file(src + "/configs/chips/h100.yaml")};
  CHECK(explore::chip_labels(chips) ==
        std::vector<std::string>{"SG2262-golden (chip)", "SG2262-golden (variant)", "H100"});
  // Two files of one stem in two folders: their paths.
  std::filesystem::create_directories(dir / "b");
  std::ofstream(dir / "b" / "chip.yaml") << yaml;
  const std::vector<g5sim::Chip> same_stem{chips[0], g5sim::Chip::from_file((dir / "b" / "chip.yaml").string())};
  CHECK(explore::chip_labels(same_stem)[1] == "SG2262-golden (" + (dir / "b" / "chip.yaml").string() + ")");
}

TEST_CASE("compare runs the same workloads on each chip, one row each, with speedups", "[cli][compare]") {
  const std::string src = G5SIM_TEST_SOURCE_DIR;
  const auto dir = std::filesystem::temp_directory_path() / "g5sim_test_compare";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string csv = (dir / "compare.csv").string();
  REQUIRE(cli({"compare", "--chip", src + "/tests/golden/chip.yaml," + half_chip(dir), "--model",
               src + "/tests/golden/model.yaml", "--scope", "block", "--dp", "1", "--batch", "1,4", "--ctx",
               "1024,16384", "--csv", csv}) == 0);
  const std::string text = slurp(csv);
  // 2 batches x 2 contexts = 4 workloads, one line each under the grid line and the header.
  CHECK(std::count(text.begin(), text.end(), '\n') == 6);
  CHECK(text.rfind(fmt::format("# g5sim {} compare grid 8 points sha256 ", g5sim::version()), 0) == 0);
  CHECK(
      text.find(
          " sharding fixed\nmodel,phase,batch,ctx,q_len,mix,kv_dtype,mla_mode,weight_dtype,SG2262-golden_total_ns,"
          "SG2262-golden_band_low_ns,SG2262-golden_band_high_ns,SG2262-golden_tokens_per_s,SG2262-golden_tokens_per_"
          "s_per_chip,SG2262-golden_tp,SG2262-golden_ep,"
          "SG2262-golden_dp,SG2262-golden_chips,SG2262-golden_bound_by,SG2262-golden_fits,SG2262-golden_bytes_per_chip,"
          "SG2262-half_total_ns,") != std::string::npos);
  CHECK(text.find(",SG2262-half_speedup,SG2262-half_speedup_per_chip\n") != std::string::npos);
  // Each row's speedup is the first chip's latency over the second's; half the cores is slower.
  // On one deployment (1 chip each) the per-chip speedup is the same number.
  std::istringstream rows(text);
  std::string line;
  std::getline(rows, line);
  std::getline(rows, line);
  while (std::getline(rows, line)) {
    std::vector<std::string> f;
    std::stringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) f.push_back(cell);
    // 9 workload columns, 12 per chip (total, band low and high, tokens/s twice, tp, ep, dp, chips,
    // bound_by, fits, bytes_per_chip), the second chip's two speedups. Neither golden chip is
    // calibrated: empty bands. A block's deployment is the whole model's: 1.25 TB, no fit.
    REQUIRE(f.size() == 35);
    CHECK(f[10].empty());
    CHECK(f[11].empty());
    CHECK(f[19] == "false");
    const double first = std::stod(f[9]), second = std::stod(f[21]), speedup = std::stod(f[33]);
    CHECK(speedup == Approx(first / second).epsilon(1e-4));  // printed with 4 decimals
    CHECK(speedup < 1.0);
    CHECK(f[34] == f[33]);
  }
  CHECK(cli({"compare", "--chip", src + "/tests/golden/chip.yaml", "--batch", "1", "--ctx", "1024"}) == 2);
}

TEST_CASE("context ranges: lists, integer and decimal factors, steps", "[sweep][ctx]") {
  using explore::parse_context_list;
  using V = std::vector<std::uint64_t>;
  CHECK(parse_context_list("1024,4096") == V{1024, 4096});
  CHECK(parse_context_list("1024:262144:x4") == V{1024, 4096, 16384, 65536, 262144});
  // x1.414, each value the one before x 1.414 rounded: 1024 x 1.414 = 1447.936 -> 1448;
  // 1448 x 1.414 = 2047.472 -> 2047; 2894.458 -> 2894; 4092.116 -> 4092; 5786.088 -> 5786;
  // 8181.404 -> 8181 (<= 8192; the next, 11567.9, is past it).
  CHECK(parse_context_list("1024:8192:x1.414") == V{1024, 1448, 2047, 2894, 4092, 5786, 8181});
  // x1.5 from 5: 7.5 -> 8 (halves up), 12, 18.
  CHECK(parse_context_list("5:20:x1.5") == V{5, 8, 12, 18});
  CHECK(parse_context_list("1024:4096:+1024") == V{1024, 2048, 3072, 4096});
  CHECK(parse_context_list("1000:3500:+1000") == V{1000, 2000, 3000});
  CHECK_THROWS_WITH(parse_context_list("1:8:x1.1"),
                    "in '1:8:x1.1', 1 x 1.1 rounds to 1: the factor is too small to grow it");
  CHECK_THROWS_WITH(parse_context_list("1:8:x1"),
                    "factor '1' in '1:8:x1' is not a decimal in (1, 1024] with at most 6 decimals");
  CHECK_THROWS_WITH(parse_context_list("1:8:x1.0000001"), Catch::Contains("at most 6 decimals"));
  CHECK_THROWS_WITH(parse_context_list("1:8:x2."), Catch::Contains("at most 6 decimals"));
  CHECK_THROWS_WITH(parse_context_list("1:8:x-2"), Catch::Contains("at most 6 decimals"));
  CHECK_THROWS_WITH(parse_context_list("1:8:/2"), "'1:8:/2' is not START:STOP:xFACTOR or START:STOP:+STEP");
  CHECK_THROWS_WITH(parse_context_list("1:16777216:+1"), "'1:16777216:+1' lists more than 4096 contexts");
  CHECK_THROWS_WITH(parse_context_list("1:8:+0"), "'0' in '1:8:+0' is not a positive integer");
}

TEST_CASE("a deployment, a query length and a core count are grid axes", "[sweep][grid]") {
  explore::SweepGrid g;
  g.set_axis("dp", {"8", "16"});
  g.set_axis("tp", {"1"});
  g.set_axis("q_len", {"1", "2"});
  g.set_axis("cores", {"32", "64"});
  g.contexts = {4096};
  // 2 q_len x 2 cores x 1 tp x 2 dp = 8 points; the nesting is q_len, cores, tp, dp.
  REQUIRE(explore::grid_size(g) == 8);
  const explore::SweepPoint p = explore::grid_point(g, 5);  // 5 = ((1 x 2 + 0) x 1 + 0) x 2 + 1
  CHECK(p.describe() == "q_len 2, cores 32, tp 1, dp 16, ctx 4096");
  const g5sim::Request r = explore::point_request(g5sim::Request{}, p);
  CHECK((r.q_len == 2u && r.cores == 32u && r.tp == 1u && r.dp == 16u && !r.ep));
  // Values are checked before anything runs: a count through the table's range, a word its choices.
  g.set_axis("kv_dtype", {"bf16", "int4"});
  CHECK_THROWS_WITH(explore::check_grid_values(g),
                    "expected one of bf16,fp8,fp8-flashmla,mxfp8,mxfp6,mxfp4,nvfp4, got 'int4'");
  g.set_axis("kv_dtype", {});
  g.set_axis("tp", {"0"});
  CHECK_THROWS_AS(explore::check_grid_values(g), g5sim::ConfigError);
}

TEST_CASE("compare runs every chip of a workload on one deployment unless --sharding auto", "[cli][compare]") {
  const std::string src = G5SIM_TEST_SOURCE_DIR;
  const auto dir = std::filesystem::temp_directory_path() / "g5sim_test_compare_deployment";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // SG2262 (128 GiB) alone fits B=64 at 4k on 8 chips, H100 (80 GiB) needs 16: the fixed default
  // runs both on H100's 1/16/16, auto each on its own.
  const std::string fixed = (dir / "fixed.csv").string(), automatic = (dir / "auto.csv").string();
  const std::vector<std::string> args{"compare", "--chip", "sg2262,h100", "--batch", "64",
                                      "--ctx",   "4096",   "--layers",    "4"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = args;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  REQUIRE(cli(with({"--csv", fixed})) == 0);
  REQUIRE(cli(with({"--sharding", "auto", "--csv", automatic})) == 0);
  auto cells = [&](const std::string& path) {
    std::istringstream in(slurp(path));
    std::string line;
    for (int i = 0; i < 3; ++i) std::getline(in, line);  // the grid line, the columns, the row
    std::vector<std::string> f;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) f.push_back(cell);
    return f;
  };
  // Columns: 9 of the workload, 12 per chip, then the second chip's two speedups.
  const std::vector<std::string> one = cells(fixed), own = cells(automatic);
  REQUIRE((one.size() == 35 && own.size() == 35));
  // tp, ep, dp, chips of SG2262 (cells 14..17) and of H100 (26..29).
  CHECK(std::vector<std::string>(one.begin() + 14, one.begin() + 18) ==
        std::vector<std::string>{"1", "16", "16", "16"});
  CHECK(std::vector<std::string>(one.begin() + 26, one.begin() + 30) ==
        std::vector<std::string>{"1", "16", "16", "16"});
  CHECK(std::vector<std::string>(own.begin() + 14, own.begin() + 18) == std::vector<std::string>{"1", "8", "8", "8"});
  CHECK(std::vector<std::string>(own.begin() + 26, own.begin() + 30) ==
        std::vector<std::string>{"1", "16", "16", "16"});
  // Both fit (the smallest sharding that fits, or 16 chips of either).
  CHECK(one[19] == "true");
  CHECK(own[31] == "true");
  // The same H100 run either way; on one deployment the two speedups agree.
  CHECK(one[21] == own[21]);
  CHECK(one[33] == one[34]);
  CHECK(own[33] != own[34]);
  CHECK(cli(with({"--sharding", "auto", "--dp", "8"})) == 2);
}

TEST_CASE("tokens per second per chip is tokens per second over the deployment's chips", "[api][throughput]") {
  const g5sim::Chip chip = g5sim::Chip::from_file(std::string(G5SIM_TEST_SOURCE_DIR) + "/tests/golden/chip.yaml");
  const g5sim::Model model = g5sim::Model::from_file(std::string(G5SIM_TEST_SOURCE_DIR) + "/tests/golden/model.yaml");
  g5sim::Request request;
  request.layers = 2;
  request.tp = 2;
  request.ep = 8;
  request.dp = 4;
  const g5sim::Result r = g5sim::simulate(chip, model, request);
  // tp 2 x dp 4 = 8 chips; the same double division, so exactly equal.
  REQUIRE(r.chips == 8);
  CHECK(r.tokens_per_s_per_chip == r.tokens_per_s / 8.0);
  CHECK(r.json().find(fmt::format("\"tokens_per_s_per_chip\": {:.3f},", r.tokens_per_s / 8.0)) != std::string::npos);
}

TEST_CASE("a grid of mixes has no context axis: each point's sequences are its mix", "[sweep][grid][groups]") {
  explore::SweepGrid g;
  g.chips = {"a.yaml"};
  g.set_axis("mix", {"64x1@4096,1x256@0", "64x1@4096,1x1024@0"});
  g.set_axis("tp", {"1", "2"});
  // 1 chip x 1 model x 2 mixes x 2 tp, no contexts: 4 points, the mix outside tp.
  REQUIRE(explore::grid_size(g) == 4);
  const explore::SweepPoint p = explore::grid_point(g, 1);
  CHECK(p.ctx == 0);
  CHECK(p.value("mix") == "64x1@4096,1x256@0");
  CHECK(p.value("tp") == "2");
  CHECK(p.describe() == "mix 64x1@4096,1x256@0, tp 2");
  const g5sim::Request r = explore::point_request(g5sim::Request{}, p);
  CHECK(r.mix == "64x1@4096,1x256@0");
  CHECK(r.ctx == g5sim::Request{}.ctx);  // left as it was: a mix ignores it
}

}  // namespace test_parallel_sweep
