// Strict loading: missing fields, unknown keys, wrong values, all naming field and source.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "hw/cost_model.hpp"
#include "hw/input_file.hpp"
#include "models/model_spec.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_strict_config {

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
  const hw::CostModel cost(chip);
  CHECK(chip.cores == 64);
  CHECK(chip.source == "<memory:sg2262-test>");
  // Cube bf16 peak: 64 cores x 16 lanes x 128 MAC x 2 FLOP x 1e9 Hz = 262,144,000,000,000 FLOP/s.
  CHECK(cost.cube_peak_flops(hw::DType::bf16) == 262144e9);
  // A 16 x 32 x 8 bf16 NN instruction: ceil(16/16) * ceil(8/8) * ceil(32/(128/8)) = 2 cycles + 44
  // init; TT starts in 47: 49.
  CHECK(cost.matmul_cycles(16, 32, 8, hw::DType::bf16) == 46);
  CHECK(cost.matmul_cycles(16, 32, 8, hw::DType::bf16, hw::MatmulLayout::tt) == 49);
  // fp8 reduces 256 / 8 = 32 k elements per cycle: ceil(32/32) = 1 cycle + 44.
  CHECK(cost.matmul_cycles(16, 32, 8, hw::DType::fp8) == 45);
  // A GEMV row (m = 1): rows over the lanes would take ceil(1/16) x ceil(48/8) = 6 blocks of
  // ceil(7168/16) = 448 cycles; transposed (the 48 columns over the lanes) ceil(48/16) x ceil(1/8)
  // = 3 blocks: the cheaper, 44 + 3 x 448.
  CHECK(cost.matmul_cycles(1, 7168, 48, hw::DType::bf16) == 44 + 3 * 448);
  // With a bank-conflict penalty of 1 cycle, each block costs one more: 44 + 3 x 449.
  std::string text = test_configs::kSg2262;
  text.replace(text.find("bank_conflict_cycles: 0"), 23, "bank_conflict_cycles: 1");
  const hw::Chip conflicts = hw::chip_from_yaml(text, "conflicts");
  CHECK(hw::CostModel(conflicts).matmul_cycles(1, 7168, 48, hw::DType::bf16) == 44 + 3 * 449);
  // Vector: 1000 ops over 16 lanes x 16 fp32 EUs = ceil(1000/256) = 4 cycles + 11 init.
  CHECK(cost.vector_cycles(1000, hw::DType::fp32) == 15);
  // SFU: 1000 exps over 16 lanes x 8 = ceil(1000/128) = 8 cycles + 13 init.
  CHECK(cost.sfu_cycles(1000) == 21);
  // HAU: top 8 of 256 for one row: 20 init + 1 x ceil(256/16) x ceil(log2 8) x 1 = 20 + 16 x 3 = 68.
  CHECK(cost.topk_cycles(1, 256, 8) == 68);
  // Transfers alone. GDMA: start-up 100 + DDR round trip 150 = 250 ns; its channel sustains
  // min(68.264 x 0.9 = 61.4376, 32768 B / 150 ns = 218.45) = 61.4376 GB/s, below DDR x eta_m =
  // 7741.44.
  const hw::EngineId gdma = *chip.find_engine("gdma"), cdma = *chip.find_engine("cdma");
  CHECK(cost.startup_ns(gdma) == 250.0);
  CHECK(cost.alone_gb_per_s(gdma) == 68.264 * 0.9);
  // A 100-byte transfer occupies two 64-byte bursts plus one access overhead of 64: 192 byte-times;
  // 10 strided rows of 656 B occupy 10 x (704 + 64) = 7,680.
  CHECK(cost.bus_bytes(gdma, 100) == 192);
  CHECK(cost.bus_bytes(gdma, 6560, 656) == 7680);
  // CDMA: no channel; c2c 8 x 56 = 448 GB/s binds; it pays the larger latency, c2c's 250 ns, and
  // moves its payload as is.
  CHECK(cost.alone_gb_per_s(cdma) == 448.0);
  CHECK(cost.startup_ns(cdma) == 250.0);
  CHECK(cost.bus_bytes(cdma, 100) == 100);
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
          "<memory:typo>:21:148: engines.gdma.outstandnig: unknown key (did you mean 'outstanding'?); valid keys: "
          "bandwidth_gb_per_s, bytes_in_flight, crosses, efficiency, kind, outstanding, roles, startup_ns, waits_on");
  }
  SECTION("a missing bandwidth") {
    const std::string text = replace(kSg2262, "bandwidth_gb_per_s: 8601.6, ", "");
    const std::string msg = error_of([&] { hw::chip_from_yaml(text, "no-ddr-bw"); });
    CHECK(msg == "<memory:no-ddr-bw>:4:6: missing required field 'ddr.bandwidth_gb_per_s' (in 'ddr')");
  }
  SECTION("zero, negative, NaN and infinite numbers") {
    CHECK(error_of([&] { hw::chip_from_yaml(replace(kSg2262, "cores: 64", "cores: 0"), "c"); }) ==
          "<memory:c>:2:1: cores: must be a positive integer, got 0");
    CHECK(error_of([&] {
            hw::chip_from_yaml(replace(kSg2262, "bandwidth_gb_per_s: 64", "bandwidth_gb_per_s: -64"), "c");
          }) == "<memory:c>:22:101: engines.sdma.bandwidth_gb_per_s: must be > 0, got -64");
    CHECK(error_of([&] { hw::chip_from_yaml(replace(kSg2262, "efficiency: 0.9", "efficiency: .nan"), "c"); }) ==
          "<memory:c>:4:35: ddr.efficiency: must be a finite number");
    CHECK(error_of([&] { hw::chip_from_yaml(replace(kSg2262, "clock_mhz: 1000", "clock_mhz: .inf"), "c"); }) ==
          "<memory:c>:10:5: engines.tiu.clock_mhz: must be a finite number");
    CHECK(error_of([&] { hw::chip_from_yaml(replace(kSg2262, "efficiency: 0.9", "efficiency: 1.5"), "c"); }) ==
          "<memory:c>:4:35: ddr.efficiency: must be in (0, 1], got 1.5");
  }
  SECTION("a wrong type") {
    CHECK(error_of([&] {
            hw::chip_from_yaml(replace(kSg2262, "lanes_per_core: 16", "lanes_per_core: sixteen"), "c");
          }) == "<memory:c>:11:5: engines.tiu.lanes_per_core: expected an integer, got 'sixteen'");
  }
  SECTION("a file that does not exist") {
    CHECK(error_of([&] { hw::load_chip("/nonexistent/chip.yaml"); }) == "/nonexistent/chip.yaml: cannot open file");
  }
}

TEST_CASE("engine table errors name the engine, the rule broken and the file position", "[hw][config][engines]") {
  using test_configs::kSg2262;
  auto error = [](const std::string& text) { return error_of([&] { hw::chip_from_yaml(text, "e"); }); };
  // waits_on names an engine that does not exist: did-you-mean and the engines there are.
  CHECK(error(replace(kSg2262, "waits_on: [gdma, sdma, cdma, hau]", "waits_on: [gdma, sdam, cdma, hau]")) ==
        "<memory:e>:9:5: engines.tiu.waits_on: 'sdam' is not an engine of this chip (did you mean 'sdma'?); "
        "known: tiu, gdma, sdma, cdma, hau");
  // An engine cannot wait on itself: its queue is already in order.
  CHECK(error(replace(kSg2262, "waits_on: [gdma, tiu]", "waits_on: [hau, tiu]")) ==
        "<memory:e>:24:21: engines.hau.waits_on: an engine cannot wait on itself: its queue is in order");
  // A kind outside the four the kernel knows.
  CHECK(error(replace(kSg2262, "cdma: {kind: collective", "cdma: {kind: link")) ==
        "<memory:e>:23:10: engines.cdma.kind: expected one of tensor, sort, dma, collective, got 'link'");
  // A transfer crossing a resource the chip does not have.
  CHECK(error(replace(kSg2262, "crosses: [c2c, ddr]", "crosses: [c2c, l2]")) ==
        "<memory:e>:23:50: engines.cdma.crosses: 'l2' is not a shared resource of this chip (did you mean 'c2c'?); "
        "known: ddr, c2c");
  // A DMA engine must cross the DDR (it moves DDR bursts).
  CHECK(error(replace(kSg2262, "gdma: {kind: dma, roles: [tiles, kv_stream], waits_on: [tiu, hau], crosses: [ddr]",
                      "gdma: {kind: dma, roles: [tiles, kv_stream], waits_on: [tiu, hau], crosses: [c2c]")) ==
        "<memory:e>:21:70: engines.gdma.crosses: a dma engine must cross 'ddr'");
  // Every single-engine role needs exactly one engine.
  CHECK(error(replace(kSg2262, "roles: [kv_resident, cross_core, gather]", "roles: [kv_resident, gather]")) ==
        "<memory:e>:6:1: engines: no DMA engine has the role 'cross_core'");
  CHECK(error(replace(kSg2262, "roles: [kv_resident, cross_core, gather]",
                      "roles: [kv_resident, cross_core, gather, tiles]")) ==
        "<memory:e>:6:1: engines: 'gdma' and 'sdma' both have the role 'tiles'; it needs exactly one engine");
  CHECK(error(replace(kSg2262, "roles: [tiles, kv_stream]", "roles: [tiles, kv_stream, kv_resident]")) ==
        "<memory:e>:6:1: engines: 'gdma' cannot both stream (kv_stream) and hold (kv_resident) the history");
  CHECK(error(replace(kSg2262, "roles: [tiles, kv_stream]", "roles: [tiles, kv_strem]")) ==
        "<memory:e>:21:21: engines.gdma.roles: 'kv_strem' is not a DMA role (did you mean 'kv_stream'?); "
        "known: tiles, kv_stream, kv_resident, cross_core, gather");
  // Two engines of one name: YAML forbids duplicate keys, and the reader says so.
  CHECK(error(replace(kSg2262, "  cdma: {kind: collective", "  gdma: {kind: collective")) ==
        "<memory:e>:23:3: engines.gdma: duplicate key (first at line 21)");
  // Each kind has its own keys: a sort engine's fields on a tensor engine are unknown there.
  CHECK(error(replace(kSg2262, "hau: {kind: sort", "hau: {kind: tensor")) ==
        "<memory:e>:24:46: engines.hau.sort_width: unknown key; valid keys: bank_conflict_cycles, clock_mhz, "
        "cube_efficiency, cube_macs_per_lane_per_cycle, cube_n, kind, lanes_per_core, mm2_init_cycles, "
        "sfu_elements_per_lane_per_cycle, "
        "sfu_init_cycles, vector_eu_per_lane, vector_init_cycles, waits_on");
}

TEST_CASE("input files: only regular files under the size cap, duplicate keys and quoted numbers",
          "[hw][config][files]") {
  // Devices and directories are refused before a byte is read (reading /dev/zero never ends).
  CHECK(error_of([] { hw::load_chip("/dev/zero"); }) ==
        "/dev/zero: not a regular file (a device, FIFO or socket cannot be read as an input file)");
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "g5sim-test-files";
  std::filesystem::create_directories(dir);
  CHECK(error_of([&] { hw::load_chip(dir.string()); }) == dir.string() + ": is a directory, not a file");
  // A config of 1 MiB + 1 bytes: refused by its size, not parsed.
  const std::string big = (dir / "big.yaml").string();
  {
    std::ofstream out(big, std::ios::binary);
    out << std::string(hw::kMaxConfigFileBytes + 1, '#');
  }
  CHECK(error_of([&] { hw::load_chip(big); }) ==
        big + ": 1048577 bytes, above the 1048576 byte limit of an input file");
  // Under the cap, a text of more items than a config has is refused before it is parsed: an
  // unused array of 200,001 numbers in 8 + 9 + 200,000 x 2 + 3 = 400,020 bytes holds 200,000
  // commas, 2 newlines and a '[' (200,003 items), against a budget of 400,020 / 25 = 16,000.
  {
    std::ofstream out(big, std::ios::binary);
    out << "name: x\nunused: [";
    for (int i = 0; i < 200'000; ++i) out << "1,";
    out << "1]\n";
  }
  CHECK(error_of([&] { hw::load_chip(big); }) ==
        big +
            ": 200003 lines and list or mapping items in 400020 bytes, more than a config has (16000 at most): not "
            "read");
  std::filesystem::remove_all(dir);
  // YAML forbids a key twice in a mapping: the second is named with the first's line.
  CHECK(error_of([] { hw::chip_from_yaml("name: x\ncores: 64\ncores: 1\n", "dup"); }) ==
        "<memory:dup>:3:1: cores: duplicate key (first at line 2)");
  // A quoted number is a string (JSON "64" included).
  CHECK(error_of([] { hw::chip_from_yaml("name: x\ncores: \"64\"\n", "quoted"); }) ==
        "<memory:quoted>:2:1: cores: expected an integer, got the string \"64\"");
}

TEST_CASE("every chip and model field has a plausible range, named in the error", "[hw][config][ranges]") {
  using test_configs::kSg2262;
  auto chip_error = [](const std::string& text) { return error_of([&] { hw::chip_from_yaml(text, "r"); }); };
  // Narrowed fields are range-checked, not truncated (4294967297 was read as 1).
  CHECK(chip_error(replace(kSg2262, "bank_conflict_cycles: 0", "bank_conflict_cycles: 4294967297")) ==
        "<memory:r>:16:5: engines.tiu.bank_conflict_cycles: 4294967297 is outside the plausible range 0..1000000");
  // A bandwidth so small that transfers would leave the clock's range.
  CHECK(chip_error(replace(kSg2262, "bandwidth_gb_per_s: 8601.6", "bandwidth_gb_per_s: 1e-9")) ==
        "<memory:r>:4:7: ddr.bandwidth_gb_per_s: 1e-09 is outside the plausible range 0.001..1000000");
  // An integer too large for 64 bits is out of range, not "not an integer".
  CHECK(chip_error(replace(kSg2262, "cores: 64", "cores: 18446744073709551616")) ==
        "<memory:r>:2:1: cores: 18446744073709551616 is outside the plausible range 1..4096");
  // Fewer bytes in flight than one burst could never move a burst.
  CHECK(chip_error(replace(kSg2262, "bytes_in_flight: 32768}", "bytes_in_flight: 1}")) ==
        "<memory:r>:21:164: engines.gdma.bytes_in_flight: 1 B is less than one DDR burst (64 B, ddr.burst_bytes)");
  // An engine's sustained fraction of its bandwidth, and the DRAM's per-access overhead.
  CHECK(chip_error(replace(kSg2262, "efficiency: 0.85", "efficiency: 0")) ==
        "<memory:r>:22:125: engines.sdma.efficiency: must be in (0, 1], got 0");
  CHECK(chip_error(replace(kSg2262, "access_overhead_bytes: 64", "access_overhead_bytes: 65537")) ==
        "<memory:r>:4:116: ddr.access_overhead_bytes: 65537 is outside the plausible range 0..65536");
  // Model: the vocabulary that wrapped the weight bytes, and a dense prefix longer than the model.
  auto model_error = [](const std::string& text) { return error_of([&] { models::model_from_yaml(text, "m"); }); };
  CHECK(model_error(replace(test_configs::kDeepSeekV3, "vocab_size: 129280", "vocab_size: 9223372036854775807")) ==
        "<memory:m>:5:1: vocab_size: 9223372036854775807 is outside the plausible range 1..16777216");
  CHECK(model_error(replace(test_configs::kDeepSeekV3, "first_k_dense_replace: 3", "first_k_dense_replace: 62")) ==
        "<memory:m>:17:1: first_k_dense_replace: 62 is outside the plausible range 0..61");
}

TEST_CASE("config syntax: plain keys only, and a config.json must be JSON", "[hw][config][files]") {
  CHECK(error_of([] { hw::chip_from_yaml("[x]: 1\nname: y\n", "k"); }) ==
        "<memory:k>:1:1: (top level): a key must be a plain name, not a list or a mapping");
  // YAML would take the trailing comma; JSON does not.
  CHECK(error_of([] { models::model_from_hf_json("{\"model_type\": \"llama\", \"hidden_size\": 4096,}", "c"); }) ==
        "<memory:c>:1:45: not valid JSON: syntax error while parsing object key - unexpected '}'; expected string "
        "literal");
  // A number past double's range is bad input, not an uncaught exception (fuzz_model's finding,
  // crash-ba2e5724: `{4.9e324= ...`).
  CHECK(error_of([] { models::model_from_hf_json("{\"hidden_size\": 9e324}", "n"); }) ==
        "<memory:n>: not valid JSON: number overflow parsing '9e324'");
}

}  // namespace test_strict_config
