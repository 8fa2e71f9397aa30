// Options that change nothing in the run they are given to are errors, not silently dropped
// (the run-option table, g5sim/run_options.hpp); on a grid, only when no point feels them. And --head-split leaves
// prefill points alone (their attention has no head split): empty cells, no rerun.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "g5sim/run_options.hpp"
#include "tools/cli.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_option_scope {

namespace {

const std::string kSrc = G5SIM_TEST_SOURCE_DIR;

// A small dense GQA model (the rules only ask for its attention and weights).
const char* const kGqaModel = R"(name: GQA-test
model_type: llama
hidden_size: 1024
num_hidden_layers: 2
vocab_size: 32000
intermediate_size: 2816
num_attention_heads: 16
num_key_value_heads: 4
head_dim: 64
)";

int cli(std::vector<std::string> args) {
  std::vector<const char*> argv{"g5sim"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return tools::run_cli(static_cast<int>(argv.size()), argv.data());
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("each scoped option applies exactly where the rules say", "[cli][option_scope]") {
  const g5sim::Model mla = g5sim::Model::from_file(kSrc + "/tests/golden/model.yaml");
  const g5sim::Model gqa = g5sim::Model::from_yaml(kGqaModel, "gqa");
  g5sim::Request decode;  // the defaults: decode, step, the model config's weights (both: bf16)
  g5sim::Request prefill;
  prefill.phase = "prefill";
  g5sim::Request block;
  block.scope = "block";
  g5sim::Request int4 = decode;
  int4.weight_dtype = "int4";
  auto applies = [](const std::string& field, const g5sim::Model& m, const g5sim::Request& r) {
    return g5sim::why_option_does_not_apply(field, m, r).empty();
  };
  // MLA modes: MLA models only (mla_mode in either phase: it sets the cache written in prefill too).
  CHECK(applies("mla_mode", mla, decode));
  CHECK(applies("mla_mode", mla, prefill));
  CHECK_FALSE(applies("mla_mode", gqa, decode));
  CHECK(g5sim::why_option_does_not_apply("mla_mode", gqa, decode) ==
        "GQA-test has GQA attention: MLA modes apply to MLA models only");
  CHECK(applies("prefill_mla_mode", mla, prefill));
  CHECK_FALSE(applies("prefill_mla_mode", mla, decode));
  CHECK_FALSE(applies("prefill_mla_mode", gqa, prefill));
  // The history read and the attention split: decode only, whatever the attention.
  CHECK(applies("kv_read_engine", mla, decode));
  CHECK(applies("kv_read_engine", gqa, decode));
  CHECK_FALSE(applies("kv_read_engine", mla, prefill));
  CHECK(applies("attn_split", gqa, decode));
  CHECK_FALSE(applies("attn_split", gqa, prefill));
  // Scale groups: int8/int4 weights, given or from the model config (neither model has one: bf16).
  CHECK(g5sim::why_option_does_not_apply("weight_group", mla, decode) ==
        "the weights are bf16: scale groups apply to int8 and int4 weights");
  CHECK(applies("weight_group", mla, int4));
  g5sim::Request fp8 = decode;
  fp8.weight_dtype = "fp8";
  CHECK_FALSE(applies("weight_group", gqa, fp8));
  const g5sim::Model gptq = g5sim::Model::from_document(
      R"({"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 2, "vocab_size": 32000,
          "intermediate_size": 2816, "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 64,
          "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}})",
      "gptq/config.json", g5sim::ModelSchema::hugging_face);
  CHECK(applies("weight_group", gptq, decode));  // int4 from the config's quantization
  // Replay: steps, and prefill blocks (chunk loops).
  CHECK(applies("replay", mla, decode));
  CHECK_FALSE(applies("replay", mla, block));
  g5sim::Request prefill_block = block;
  prefill_block.phase = "prefill";
  CHECK(applies("replay", mla, prefill_block));
  // Fields the rules do not cover always apply.
  CHECK(applies("batch", gqa, block));
}

TEST_CASE("a run refuses an option it does not feel and a grid one that no point feels", "[cli][option_scope]") {
  const std::string chip = kSrc + "/tests/golden/chip.yaml", model = kSrc + "/tests/golden/model.yaml";
  const std::vector<std::string> block{"--chip", chip, "--model", model, "--scope", "block", "--dp", "1"};
  auto with = [&](std::vector<std::string> head, std::vector<std::string> tail) {
    head.insert(head.end(), block.begin(), block.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  CHECK(cli(with({"run"}, {"--prefill-mla-mode", "absorb"})) == 2);
  CHECK(cli(with({"run"}, {"--phase", "prefill", "--ctx", "512", "--prefill-mla-mode", "absorb"})) == 0);
  CHECK(cli(with({"run"}, {"--no-replay"})) == 2);
  CHECK(cli(with({"run"}, {"--phase", "prefill", "--ctx", "512", "--attn-split", "head"})) == 2);
  CHECK(cli(with({"sweep"}, {"--phase", "prefill", "--ctx", "512,1024", "--kv-read-engine", "sdma"})) == 2);
  const auto dir = std::filesystem::temp_directory_path() / "g5sim_test_option_scope";
  std::filesystem::create_directories(dir);
  // Both phases: the decode points feel it. Shard 1/2 holds only the prefill points (point 1, the
  // second phase of one context): it still runs, as every shard of the grid says the same.
  const std::string csv = (dir / "mixed.csv").string();
  CHECK(cli(with({"sweep"}, {"--phase", "decode,prefill", "--ctx", "512", "--kv-read-engine", "sdma", "--shard", "1/2",
                             "--csv", csv})) == 0);
  CHECK(slurp(csv).find("\n1,SG2262-golden,DeepSeek-V3-golden,prefill,") != std::string::npos);
  CHECK(cli(with({"compare"}, {"--chip", chip + "," + chip, "--batch", "1", "--ctx", "512", "--weight-group", "64"})) ==
        2);
}

TEST_CASE("head-split columns are empty for prefill points and refused when no point is decode",
          "[cli][option_scope][sweep]") {
  const auto dir = std::filesystem::temp_directory_path() / "g5sim_test_option_scope";
  std::filesystem::create_directories(dir);
  const std::string csv = (dir / "heads.csv").string(), json = (dir / "heads.jsonl").string();
  const std::vector<std::string> base{"sweep",
                                      "--chip",
                                      kSrc + "/tests/golden/chip.yaml",
                                      "--model",
                                      kSrc + "/tests/golden/model.yaml",
                                      "--scope",
                                      "block",
                                      "--dp",
                                      "1",
                                      "--head-split"};
  auto args = base;
  args.insert(args.end(), {"--phase", "decode,prefill", "--ctx", "1024", "--csv", csv, "--json", json});
  REQUIRE(cli(args) == 0);
  std::istringstream rows(slurp(csv));
  std::string grid_line, header, decode_row, prefill_row;
  std::getline(rows, grid_line);
  CHECK(grid_line.rfind("# g5sim ", 0) == 0);
  std::getline(rows, header);
  std::getline(rows, decode_row);
  std::getline(rows, prefill_row);
  CHECK(header.substr(header.size() - 51) == ",head_split_total_ns,head_split_kv_cache_read_bytes");
  // Decode: both cells hold numbers (the head split reads the history once per head group, so
  // more bytes than the sequence split's 1,179,648 -- checked in the golden sweep_csv).
  CHECK(decode_row.rfind("0,", 0) == 0);
  CHECK(decode_row.substr(decode_row.size() - 2) != ",,");
  // Prefill: two empty cells at the end of the row, and nulls in its JSON line.
  CHECK(prefill_row.rfind("1,", 0) == 0);
  CHECK(prefill_row.substr(prefill_row.size() - 2) == ",,");
  CHECK(slurp(json).find("\"head_split_total_ns\": null, \"head_split_kv_cache_read_bytes\": null}\n") !=
        std::string::npos);
  auto prefill_only = base;
  prefill_only.insert(prefill_only.end(), {"--phase", "prefill", "--ctx", "1024", "--csv", "none"});
  CHECK(cli(prefill_only) == 2);
  auto already_heads = base;
  already_heads.insert(already_heads.end(), {"--attn-split", "head", "--ctx", "1024", "--csv", "none"});
  CHECK(cli(already_heads) == 2);
}

}  // namespace test_option_scope
