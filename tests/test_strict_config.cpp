// Strict loading: missing fields, unknown keys, wrong values, all naming field and source.
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "models/model_spec.hpp"
#include "test_configs.hpp"

namespace {

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const hw::ConfigError& e) {
    return e.what();
  }
  FAIL("no ConfigError was thrown");
  return "";
}

}  // namespace

TEST_CASE("the in-memory SG2262 test chip loads with the sourced figures", "[hw][config]") {
  const hw::Chip chip = hw::chip_from_yaml(test_configs::kSg2262, "sg2262-test");
  CHECK(chip.cores == 64);
  CHECK(chip.source == "<memory:sg2262-test>");
  // Cube bf16 peak: 64 cores x 16 lanes x 128 MAC x 2 FLOP x 1e9 Hz = 262,144,000,000,000 FLOP/s.
  CHECK(chip.cube_peak_flops(hw::DType::bf16) == 262144e9);
  // A 16 x 32 x 8 bf16 NN instruction: ceil(16/16) * ceil(8/8) * ceil(32/(128/8)) = 2 cycles + 44
  // init; TT starts in 47: 49.
  CHECK(chip.matmul_cycles(16, 32, 8, hw::DType::bf16) == 46);
  CHECK(chip.matmul_cycles(16, 32, 8, hw::DType::bf16, hw::MatmulLayout::tt) == 49);
  // GEMV row (m = 1) costs a whole lane group: ceil(1/16) = 1, ceil(48/8) = 6, ceil(7168/16) = 448.
  CHECK(chip.matmul_cycles(1, 7168, 48, hw::DType::bf16) == 44 + 6 * 448);
  // With a bank-conflict penalty of 1 cycle, each (m, n) block costs one more: 44 + 6 x 449.
  std::string text = test_configs::kSg2262;
  text.replace(text.find("bank_conflict_cycles: 0"), 23, "bank_conflict_cycles: 1");
  CHECK(hw::chip_from_yaml(text, "conflicts").matmul_cycles(1, 7168, 48, hw::DType::bf16) == 44 + 6 * 449);
  // Vector: 1000 ops over 16 lanes x 16 fp32 EUs = ceil(1000/256) = 4 cycles + 11 init.
  CHECK(chip.vector_cycles(1000, hw::DType::fp32) == 15);
  // SFU: 1000 exps over 16 lanes x 8 = ceil(1000/128) = 8 cycles + 13 init.
  CHECK(chip.sfu_cycles(1000) == 21);
}

TEST_CASE("a missing kv_lora_rank or qk_rope_head_dim names the field and the source", "[models][config]") {
  SECTION("YAML in memory: field, source name and line of the mapping") {
    const std::string text = replace(test_configs::kDeepSeekV3, "kv_lora_rank: 512\n", "");
    const std::string msg = error_of([&] { models::model_from_yaml(text, "v3-no-kv-lora"); });
    CHECK(msg == "<memory:v3-no-kv-lora>:1:1: missing required field 'kv_lora_rank'");
  }
  SECTION("YAML: qk_rope_head_dim") {
    const std::string text = replace(test_configs::kDeepSeekV3, "qk_rope_head_dim: 64\n", "");
    const std::string msg = error_of([&] { models::model_from_yaml(text, "v3-no-rope"); });
    CHECK(msg == "<memory:v3-no-rope>:1:1: missing required field 'qk_rope_head_dim'");
  }
  SECTION("Hugging Face config.json: other keys are ignored, used keys are required") {
    const std::string json = R"({
  "architectures": ["DeepseekV3ForCausalLM"],
  "model_type": "deepseek_v3", "num_hidden_layers": 61, "vocab_size": 129280, "intermediate_size": 18432,
  "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1, "moe_intermediate_size": 2048,
  "first_k_dense_replace": 3, "routed_scaling_factor": 2.5,
  "hidden_size": 7168,
  "num_attention_heads": 128,
  "q_lora_rank": 1536,
  "kv_lora_rank": 512,
  "qk_nope_head_dim": 128,
  "v_head_dim": 128,
  "rope_scaling": {"type": "yarn", "factor": 40}
})";
    const std::string msg = error_of([&] { models::model_from_hf_json(json, "config.json"); });
    CHECK(msg == "<memory:config.json>:1:1: missing required field 'qk_rope_head_dim'");
  }
  SECTION("a value never falls back: null kv_lora_rank is an error") {
    const std::string text = replace(test_configs::kDeepSeekV3, "kv_lora_rank: 512", "kv_lora_rank: null");
    const std::string msg = error_of([&] { models::model_from_yaml(text, "v3-null"); });
    CHECK(msg == "<memory:v3-null>:9:1: kv_lora_rank: expected an integer, got null");
  }
}

TEST_CASE("Hugging Face config.json with unused keys loads", "[models][config]") {
  const std::string json = R"({"model_type": "deepseek_v2", "hidden_size": 2048, "num_attention_heads": 16,
    "num_hidden_layers": 27, "vocab_size": 102400, "intermediate_size": 10944, "num_experts_per_tok": 6,
    "n_shared_experts": 2, "moe_intermediate_size": 1408, "first_k_dense_replace": 1, "routed_scaling_factor": 1.0,
    "q_lora_rank": null, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "n_routed_experts": 64, "torch_dtype": "bfloat16"})";
  const models::ModelSpec m = models::model_from_hf_json(json, "v2-lite");
  CHECK(!m.q_lora_rank.has_value());
  // Latent elements per token per layer: 512 + 64 = 576 (seed 000: [B, T, 576]).
  CHECK(m.latent_kv_elements() == 576);
}

TEST_CASE("chip config errors name field, file position and what was expected", "[hw][config]") {
  using test_configs::kSg2262;
  SECTION("unknown key with a did-you-mean and the valid keys") {
    const std::string text = replace(kSg2262, "startup_ns: 100,", "startup_ns: 100, outstandnig: 2,");
    const std::string msg = error_of([&] { hw::chip_from_yaml(text, "typo"); });
    CHECK(msg ==
          "<memory:typo>:15:53: gdma.outstandnig: unknown key (did you mean 'outstanding'?); valid keys: "
          "bandwidth_gb_per_s, bytes_in_flight, outstanding, startup_ns");
  }
  SECTION("a missing bandwidth") {
    const std::string text = replace(kSg2262, "bandwidth_gb_per_s: 8601.6, ", "");
    const std::string msg = error_of([&] { hw::chip_from_yaml(text, "no-ddr-bw"); });
    CHECK(msg == "<memory:no-ddr-bw>:17:6: missing required field 'ddr.bandwidth_gb_per_s' (in 'ddr')");
  }
  SECTION("zero, negative, NaN and infinite numbers") {
    CHECK(error_of([&] { hw::chip_from_yaml(replace(kSg2262, "cores: 64", "cores: 0"), "c"); }) ==
          "<memory:c>:2:1: cores: must be a positive integer, got 0");
    CHECK(error_of([&] { hw::chip_from_yaml(replace(kSg2262, "bandwidth_gb_per_s: 64", "bandwidth_gb_per_s: -64"), "c"); }) ==
          "<memory:c>:16:8: sdma.bandwidth_gb_per_s: must be > 0, got -64");
    CHECK(error_of([&] { hw::chip_from_yaml(replace(kSg2262, "efficiency: 0.9", "efficiency: .nan"), "c"); }) ==
          "<memory:c>:17:35: ddr.efficiency: must be a finite number");
    CHECK(error_of([&] { hw::chip_from_yaml(replace(kSg2262, "clock_mhz: 1000", "clock_mhz: .inf"), "c"); }) ==
          "<memory:c>:5:3: tiu.clock_mhz: must be a finite number");
    CHECK(error_of([&] { hw::chip_from_yaml(replace(kSg2262, "efficiency: 0.9", "efficiency: 1.5"), "c"); }) ==
          "<memory:c>:17:35: ddr.efficiency: must be in (0, 1], got 1.5");
  }
  SECTION("a wrong type") {
    CHECK(error_of([&] { hw::chip_from_yaml(replace(kSg2262, "lanes_per_core: 16", "lanes_per_core: sixteen"), "c"); }) ==
          "<memory:c>:6:3: tiu.lanes_per_core: expected an integer, got 'sixteen'");
  }
  SECTION("a file that does not exist") {
    CHECK(error_of([&] { hw::load_chip("/nonexistent/chip.yaml"); }) == "/nonexistent/chip.yaml: cannot open file");
  }
}
