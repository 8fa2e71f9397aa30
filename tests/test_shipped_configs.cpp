// The shipped chip and model files (configs/): each loads, its peaks are the sourced figures, and a
// decode block runs on it with the KV bytes the formula gives.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <string>
#include <utility>

#include "api/result_state.hpp"
#include "api/simulation.hpp"
#include "explore/validation/measured_rows.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/chip.hpp"
#include "hw/cost_model.hpp"
#include "hw/input_file.hpp"
#include "models/model_spec.hpp"
#include "ops/timeline.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_shipped_configs {

namespace {

std::string shipped(const std::string& relative) { return std::string(G5SIM_TEST_SOURCE_DIR) + "/configs/" + relative; }

}  // namespace

TEST_CASE("shipped chips load with their sourced peaks", "[configs][chips]") {
  struct Case {
    const char* file;
    std::uint32_t cores;
    double bf16_peak;  // FLOP/s: cores x lanes x MACs x 2 x clock
  };
  const Case cases[] = {
      {"chips/sg2262.yaml", 64, 64.0 * 16 * 128 * 2 * 1e9},    // 262.1 TFLOPS
      {"chips/bm1684x.yaml", 1, 1.0 * 64 * 128 * 2 * 1e9},     // 16.4 TFLOPS
      {"chips/bm1688.yaml", 2, 2.0 * 32 * 32 * 2 * 0.9e9},     // 1.8 TFLOPS per core (LlmProfile)
      {"chips/h800.yaml", 132, 132.0 * 64 * 32 * 2 * 1.83e9},  // 989.4 TFLOPS
      {"chips/h100.yaml", 132, 132.0 * 64 * 32 * 2 * 1.83e9},
      {"chips/h20.yaml", 78, 78.0 * 64 * 8 * 2 * 1.83e9},      // 146.2 TFLOPS (spec sheet 148)
      {"chips/h200.yaml", 132, 132.0 * 64 * 32 * 2 * 1.83e9},  // H100's die: 989.4 TFLOPS
      {"chips/a100.yaml", 108, 108.0 * 64 * 16 * 2 * 1.41e9},  // 311.9 TFLOPS (datasheet 312)
      // The rivals (docs/rival_chips.md): each dense bf16 figure as its vendor states it.
      {"chips/b200.yaml", 148, 148.0 * 128 * 32 * 2 * 1.855e9},         // 2,249 TFLOPS (HGX B200: 2,250)
      {"chips/gb200-nvl72.yaml", 148, 148.0 * 128 * 32 * 2 * 2.062e9},  // 2,500 TFLOPS
      {"chips/mi300x.yaml", 304, 304.0 * 64 * 16 * 2 * 2.1e9},          // 1,307 TFLOPS
      {"chips/mi355x.yaml", 256, 256.0 * 64 * 32 * 2 * 2.4e9},          // 2,517 TFLOPS
      {"chips/tpu-v6e.yaml", 1, 1.0 * 4 * 65536 * 2 * 1.75e9},          // 918 TFLOPS
      {"chips/ascend-910b.yaml", 24, 24.0 * 16 * 256 * 2 * 1.8e9},      // 354 TFLOPS (910B2)
  };
  for (const Case& c : cases) {
    INFO(c.file);
    const hw::Chip chip = hw::load_chip(shipped(c.file));
    CHECK(chip.cores == c.cores);
    CHECK_FALSE(chip.error_bands);  // base configs are not calibrated
    CHECK(hw::CostModel(chip).cube_peak_flops(hw::DType::bf16) == Approx(c.bf16_peak).epsilon(1e-12));
  }
}

TEST_CASE("the rivals' microscaled rates: fp4 and fp6 where the vendor states them", "[configs][chips]") {
  // B200: dense FP4 9,000 TFLOPS = 4x bf16, FP6 at the FP8 rate; MI355X: MXFP4 and MXFP6 both
  // 10.1 PF = 4x bf16; MI300X, TPU v6e and the 910B have neither (nvfp4 weights run there as bf16).
  const hw::Chip b200 = hw::load_chip(shipped("chips/b200.yaml"));
  CHECK(b200.cube_macs(hw::DType::fp4) == 4 * b200.cube_macs(hw::DType::bf16));
  CHECK(b200.cube_macs(hw::DType::fp6) == b200.cube_macs(hw::DType::fp8));
  const hw::Chip mi355x = hw::load_chip(shipped("chips/mi355x.yaml"));
  CHECK(mi355x.cube_macs(hw::DType::fp4) == 4 * mi355x.cube_macs(hw::DType::bf16));
  CHECK(mi355x.cube_macs(hw::DType::fp6) == mi355x.cube_macs(hw::DType::fp4));
  for (const char* file : {"chips/mi300x.yaml", "chips/tpu-v6e.yaml", "chips/ascend-910b.yaml", "chips/h100.yaml"}) {
    INFO(file);
    const hw::Chip chip = hw::load_chip(shipped(file));
    CHECK(chip.cube_macs(hw::DType::fp4) == 0);
    CHECK(chip.cube_macs(hw::DType::fp6) == 0);
  }
  // The 910B has no fp8 rate either.
  CHECK(hw::load_chip(shipped("chips/ascend-910b.yaml")).cube_macs(hw::DType::fp8) == 0);
  // Their public measurements (validation/rivals_measured.csv) read, each row naming a shipped chip:
  // B200 59 kernel rows and 4 serve rows (gpt-oss, Qwen3-Coder-Next), GB200 64 (5 whole steps
  // excluded), MI300X 24, MI355X 27, TPU v6e 16,
  // Ascend 4.
  const auto table = explore::validation::read_measured_file(shipped("../validation/rivals_measured.csv"));
  std::map<std::string, std::size_t> per_chip;
  for (const auto& r : table.rows) ++per_chip[r.chip];
  CHECK(per_chip ==
        std::map<std::string, std::size_t>{
            {"ascend-910b", 4}, {"b200", 63}, {"gb200-nvl72", 64}, {"mi300x", 24}, {"mi355x", 27}, {"tpu-v6e", 16}});
}

TEST_CASE("a decode block runs on every shipped chip, with the formula's KV bytes", "[configs][chips]") {
  // Qwen1.5-7B, B = 1, 512 tokens: K and V of 32 heads x 128, bf16: 512 x 2 x 32 x 128 x 2 = 8,388,608 B.
  const auto qwen = models::load_model(shipped("models/qwen1.5-7b.yaml"));
  for (const char* file :
       {"chips/sg2262.yaml", "chips/bm1684x.yaml", "chips/bm1688.yaml", "chips/h800.yaml", "chips/h100.yaml",
        "chips/h20.yaml", "chips/h200.yaml", "chips/a100.yaml", "chips/b200.yaml", "chips/gb200-nvl72.yaml",
        "chips/mi300x.yaml", "chips/mi355x.yaml", "chips/tpu-v6e.yaml", "chips/ascend-910b.yaml"}) {
    INFO(file);
    const hw::Chip chip = hw::load_chip(shipped(file));
    const auto r = api::simulate_block(chip, qwen, test_configs::decode(1, 512), {});
    CHECK(r.timeline.op(ops::OpKind::kv_cache_read).hbm_bytes == 8'388'608);
    CHECK(r.timeline.total > 0);
  }
  // H200 is H100 with HBM3e: 4.8 TB/s (x eta_m 0.9) and 141 GB.
  const hw::Chip h200 = hw::load_chip(shipped("chips/h200.yaml"));
  CHECK(h200.ddr_bandwidth_gb_per_s == 4800);
  CHECK(h200.ddr_capacity_bytes == 141'000'000'000);
  // ChatGLM3-6B's 2 KV groups: 512 x 2 x 2 x 128 x 2 = 524,288 B.
  const auto glm = models::load_model(shipped("models/chatglm3-6b.yaml"));
  const auto r =
      api::simulate_block(hw::load_chip(shipped("chips/bm1684x.yaml")), glm, test_configs::decode(1, 512), {});
  CHECK(r.timeline.op(ops::OpKind::kv_cache_read).hbm_bytes == 524'288);
}

namespace {

// A YAML document as dotted path -> scalar text ("engines.gdma.roles[1]" -> "kv_stream").
void flatten(const YAML::Node& node, const std::string& path, std::map<std::string, std::string>& out) {
  if (node.IsMap()) {
    for (const auto& entry : node)
      flatten(entry.second, (path.empty() ? "" : path + ".") + entry.first.as<std::string>(), out);
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) flatten(node[i], path + "[" + std::to_string(i) + "]", out);
  } else {
    out[path] = node.as<std::string>();
  }
}

std::map<std::string, std::string> fields_of(const std::string& yaml_text) {
  std::map<std::string, std::string> out;
  flatten(YAML::Load(yaml_text), "", out);
  return out;
}

// Scalars that are the same number written differently ("1" and "1.0") agree.
bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  try {
    std::size_t ea = 0, eb = 0;
    const double x = std::stod(a, &ea), y = std::stod(b, &eb);
    return ea == a.size() && eb == b.size() && x == y;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

TEST_CASE("a chip without an fp8 tensor rate runs fp8 weights weight-only and refuses fp8 activations by name",
          "[configs][chips]") {
  // Ampere's tensor cores have no fp8 mode: a100.yaml lists no fp8 rate. fp8 weights run there as
  // vLLM's FP8 Marlin kernels run them: streamed at fp8's bytes, dequantised to bf16 on the vector
  // unit (convert, scale: 2 operations a weight), multiplied at the bf16 rate.
  const hw::Chip a100 = hw::load_chip(shipped("chips/a100.yaml"));
  CHECK(a100.cube_macs(hw::DType::fp8) == 0);
  const auto qwen = models::load_model(shipped("models/qwen1.5-7b.yaml"));
  models::Workload fp8 = test_configs::decode(1, 512);
  fp8.weight_dtype = models::WeightDtype::fp8;
  const api::Simulation weight_only = api::simulate_block(a100, qwen, fp8, {});
  const ops::OpNode& qkv = weight_only.graph[weight_only.timeline.op(ops::OpKind::matmul).id];
  CHECK(qkv.name == "qkv_proj");
  CHECK(qkv.dtype == hw::DType::bf16);
  CHECK(qkv.mm().b_dequant_ops == 2);
  CHECK(qkv.mm().k_block_rescale == 0);
  // Qwen1.5-7B's qkv: k = 4096, fp8 with a 4-byte scale per 128 x 128 block, charged per column
  // as 4096 + ceil(4 x 32 / 128) = 4,097 bytes.
  CHECK(qkv.mm().b_col_bytes == 4'097);
  // fp8 activations asked for are refused, naming the option, the chip and the first op.
  fp8.act_dtype = models::ActDtype::fp8;
  CHECK_THROWS_WITH(api::simulate_block(a100, qwen, fp8, {}),
                    Catch::Contains("A100 has no fp8 tensor rate") && Catch::Contains("op 'qkv_proj' multiplies its "
                                                                                      "activations in fp8"));
  std::string field;
  try {
    api::simulate_block(a100, qwen, fp8, {});
  } catch (const hw::InputError& e) {
    field = e.field();
  }
  CHECK(field == "act_dtype");
  fp8.act_dtype = models::ActDtype::auto_;
  // DeepSeek-V3.2's indexer keys are fp8 whatever the weights: refused naming the model's op.
  const auto v32 = models::load_model(shipped("models/deepseek-v3.2-exp.yaml"));
  CHECK_THROWS_WITH(api::simulate_block(a100, v32, test_configs::decode(1, 512), {}),
                    Catch::Contains("op 'indexer_score' of the model multiplies in fp8"));
  // The same block in int8 (dequantised to bf16 on the vector unit) runs.
  models::Workload int8 = fp8;
  int8.weight_dtype = models::WeightDtype::int8;
  CHECK(api::simulate_block(a100, qwen, int8, {}).timeline.total > 0);
  // Its energy section prices the cube dtypes the chip has: an fp8 price without an fp8 rate is an error.
  std::string text = hw::read_input_file(shipped("chips/a100.yaml"));
  const std::string bf16_price = "    bf16: 0.7 ";
  REQUIRE(text.find(bf16_price) != std::string::npos);
  text.replace(text.find(bf16_price), 0, "    fp8: 0.35\n");
  CHECK_THROWS_WITH(g5sim::Chip::from_yaml(text, "a100-fp8-priced"),
                    Catch::Contains("energy.pj_per_mac.fp8") && Catch::Contains("no fp8 rate"));
}

TEST_CASE("the three copies of SG2262 agree field by field", "[configs][chips]") {
  // configs/chips/sg2262.yaml is the chip; tests/test_configs.hpp (kSg2262) and
  // tests/golden/chip.yaml copy it so that tests never depend on the shipped file. They differ
  // only in `name`, and the copies leave out the `l2` (the tests that stage through an L2 add it)
  // and the `energy` prices (tests/test_energy.cpp adds its own, whole or binary fractions).
  const auto shipped_fields = fields_of(hw::read_input_file(shipped("chips/sg2262.yaml")));
  const auto golden_text = hw::read_input_file(std::string(G5SIM_TEST_SOURCE_DIR) + "/tests/golden/chip.yaml");
  for (const auto& [label, text] : {std::pair<std::string, std::string>{"test_configs.hpp", test_configs::kSg2262},
                                    std::pair<std::string, std::string>{"golden/chip.yaml", golden_text}}) {
    INFO(label);
    const auto copy = fields_of(text);
    for (const auto& [path, value] : shipped_fields) {
      if (path == "name" || path.rfind("l2.", 0) == 0 || path.rfind("energy.", 0) == 0) continue;
      INFO(path);
      REQUIRE(copy.count(path) == 1);
      CHECK(same_value(copy.at(path), value));
    }
    for (const auto& [path, value] : copy) {
      INFO(path);
      CHECK((path == "name" || shipped_fields.count(path) == 1));
      CHECK(path.rfind("l2.", 0) != 0);
      CHECK(path.rfind("energy.", 0) != 0);
    }
  }
}

TEST_CASE("outputs name a shipped config shipped:NAME and a path under the working folder relative to it",
          "[shipped][source]") {
  // Before, chip_source and model_source held the machine's absolute paths, so shards of one grid
  // from two machines differed there although their sha256 columns agreed.
  CHECK(g5sim::source_label(g5sim::chip_path("h100")) == "shipped:h100");
  CHECK(g5sim::source_label(g5sim::model_path("deepseek-v3")) == "shipped:deepseek-v3");
  CHECK(g5sim::source_label(g5sim::chip_path("h100.calibrated")) == "shipped:h100.calibrated");
  const std::filesystem::path here = std::filesystem::current_path();
  CHECK(g5sim::source_label((here / "some" / "chip.yaml").string()) == "some/chip.yaml");
  CHECK(g5sim::source_label("some/chip.yaml") == "some/chip.yaml");
  CHECK(g5sim::source_label("<memory:x>") == "<memory:x>");
  // A run's outputs carry the label.
  g5sim::Request r;
  r.scope = "block";
  r.dp = 1;
  const g5sim::Result block = g5sim::simulate(g5sim::Chip::from_file(g5sim::chip_path("sg2262")),
                                              g5sim::Model::from_file(g5sim::model_path("deepseek-v3")), r);
  CHECK(block.chip_source == "shipped:sg2262");
  CHECK(block.json().find("\"model_source\": \"shipped:deepseek-v3\"") != std::string::npos);
}

TEST_CASE("g5sim list says what a calibrated config changed and how well it fits", "[shipped][calibration]") {
  // h100.calibrated's record: mape_after_pct 10.36, leave_one_out 11.00, leave_one_model_out 24.98,
  // three fields fitted (kept at their values by the refit).
  CHECK(g5sim::Chip::from_file(g5sim::chip_path("h100.calibrated")).calibration_summary() ==
        "calibrated: MAPE 10.4 % on its rows, 11.0 % held out (leave one out), 25.0 % with a model held out; fitted "
        "engines.tensor.cube_efficiency 1.0 -> 1.0, engines.tma.startup_ns 477.184 -> 477.184, "
        "l2.bandwidth_gb_per_s 9627.59 -> 9627.59");
  CHECK(g5sim::Chip::from_file(g5sim::chip_path("h100")).calibration_summary().empty());
}

TEST_CASE("the rivals with at least 10 public rows ship calibrated, with held-out bands", "[shipped][calibration]") {
  // validation/rivals_measured.csv: B200 59 rows, GB200 64, MI300X 24, MI355X 27, v6e 16 (Ascend's
  // 4 are too few). Each calibrated config carries its fit's record and held-out bands.
  for (const char* name : {"b200", "gb200-nvl72", "mi300x", "mi355x", "tpu-v6e"}) {
    const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::chip_path(std::string(name) + ".calibrated"));
    INFO(name);
    CHECK(chip.data().chip.error_bands.has_value());
    CHECK(chip.calibration_summary().rfind("calibrated: ", 0) == 0);
  }
  // GB200 is B200's silicon: its fit is B200's, transferred, and its fields equal B200's.
  const g5sim::Chip b200 = g5sim::Chip::from_file(g5sim::chip_path("b200.calibrated"));
  const g5sim::Chip gb200 = g5sim::Chip::from_file(g5sim::chip_path("gb200-nvl72.calibrated"));
  CHECK(b200.data().chip.ddr_efficiency == gb200.data().chip.ddr_efficiency);
  CHECK(gb200.calibration_summary().find("fit on b200.calibrated") != std::string::npos);
  CHECK_FALSE(g5sim::shipped_chips().empty());
  for (const std::string& stem : g5sim::shipped_chips()) CHECK(stem != "ascend-910b.calibrated");
}

}  // namespace test_shipped_configs
