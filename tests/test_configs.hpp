#pragma once
// In-memory configs for tests: the shipped files may change; these must not.

#include <string>

#include "hw/chip.hpp"
#include "models/workload.hpp"

namespace test_configs {

/// Engine ids of the test chips (kSg2262, tiny_chip): their declaration order. tiny_chip has no hau.
namespace engine {
constexpr hw::EngineId tiu = 0, gdma = 1, sdma = 2, cdma = 3, hau = 4;
}  // namespace engine

/// SG2262 as in configs/chips/sg2262.yaml, held here so that tests never read the shipped files.
inline const std::string kSg2262 = R"(name: SG2262-test
cores: 64
lmem_bytes_per_core: 2097152
ddr: {bandwidth_gb_per_s: 8601.6, efficiency: 0.9, capacity_bytes: 137438953472, latency_ns: 150, burst_bytes: 64, access_overhead_bytes: 64}
c2c: {bandwidth_gb_per_s: 56, latency_ns: 250, links: 8}
engines:
  tiu:
    kind: tensor
    waits_on: [gdma, sdma, cdma, hau]
    clock_mhz: 1000
    lanes_per_core: 16
    cube_n: 8
    cube_macs_per_lane_per_cycle: {fp8: 256, bf16: 128}
    vector_eu_per_lane: {bf16: 32, fp32: 16}
    mm2_init_cycles: {nn: 44, nt: 44, tt: 47}
    bank_conflict_cycles: 0
    cube_efficiency: 1
    vector_init_cycles: 11
    sfu_init_cycles: 13
    sfu_elements_per_lane_per_cycle: 8
  gdma: {kind: dma, roles: [tiles, kv_stream], waits_on: [tiu, hau], crosses: [ddr], bandwidth_gb_per_s: 68.264, efficiency: 0.9, startup_ns: 100, outstanding: 4, bytes_in_flight: 32768}
  sdma: {kind: dma, roles: [kv_resident, cross_core, gather], waits_on: [tiu, hau], crosses: [ddr], bandwidth_gb_per_s: 64, efficiency: 0.85, startup_ns: 120, outstanding: 4, bytes_in_flight: 32768}
  cdma: {kind: collective, waits_on: [tiu, hau], crosses: [c2c, ddr], startup_ns: 0, outstanding: 1}
  hau: {kind: sort, waits_on: [gdma, tiu], sort_width: 16, compare_cycles: 1, init_cycles: 20}
weight_layout: n_major
matmul_split_k: true
)";

/// DeepSeek-V3 attention fields (official config_671B.json values).
inline const std::string kDeepSeekV3 = R"(name: DeepSeek-V3-test
model_type: deepseek_v3
hidden_size: 7168
num_hidden_layers: 61
vocab_size: 129280
intermediate_size: 18432
num_attention_heads: 128
q_lora_rank: 1536
kv_lora_rank: 512
qk_nope_head_dim: 128
qk_rope_head_dim: 64
v_head_dim: 128
n_routed_experts: 256
num_experts_per_tok: 8
n_shared_experts: 1
moe_intermediate_size: 2048
first_k_dense_replace: 3
routed_scaling_factor: 2.5
)";

/// DeepSeek-V2-Lite (official config_16B.json / HF config values): q_lora_rank null, 16 heads.
inline const std::string kDeepSeekV2Lite = R"(name: DeepSeek-V2-Lite-test
model_type: deepseek_v2
hidden_size: 2048
num_hidden_layers: 27
vocab_size: 102400
intermediate_size: 10944
num_attention_heads: 16
q_lora_rank: null
kv_lora_rank: 512
qk_nope_head_dim: 128
qk_rope_head_dim: 64
v_head_dim: 128
n_routed_experts: 64
num_experts_per_tok: 6
n_shared_experts: 2
moe_intermediate_size: 1408
first_k_dense_replace: 1
routed_scaling_factor: 1.0
)";

/// DeepSeek-V2 (official config_236B.json values).
inline const std::string kDeepSeekV2 = R"(name: DeepSeek-V2-test
model_type: deepseek_v2
hidden_size: 5120
num_hidden_layers: 60
vocab_size: 102400
intermediate_size: 12288
num_attention_heads: 128
q_lora_rank: 1536
kv_lora_rank: 512
qk_nope_head_dim: 128
qk_rope_head_dim: 64
v_head_dim: 128
n_routed_experts: 160
num_experts_per_tok: 6
n_shared_experts: 2
moe_intermediate_size: 1536
first_k_dense_replace: 1
routed_scaling_factor: 16.0
)";

/// A Llama-3-70B-like dense GQA model: 64 query heads over 8 KV heads of 128.
inline const std::string kLlama70b = R"(name: Llama-3-70B-like-test
model_type: llama
hidden_size: 8192
num_hidden_layers: 80
vocab_size: 128256
intermediate_size: 28672
num_attention_heads: 64
num_key_value_heads: 8
head_dim: 128
)";

/// A small chip for event-kernel tests: 1 cycle = 1 ps, 1 B/ps channels, numbers easy by hand.
inline std::string tiny_chip(int cores, double ddr_gb_per_s, int outstanding, double startup_ns = 0,
                             double latency_ns = 0, int bytes_in_flight = 1 << 30, int burst = 1) {
  return "name: tiny\ncores: " + std::to_string(cores) +
         "\nlmem_bytes_per_core: 1048576\n"
         "ddr: {bandwidth_gb_per_s: " +
         std::to_string(ddr_gb_per_s) +
         ", efficiency: 1, capacity_bytes: 1073741824, latency_ns: " + std::to_string(latency_ns) +
         ", burst_bytes: " + std::to_string(burst) +
         ", access_overhead_bytes: 0}\n"
         "c2c: {bandwidth_gb_per_s: 100, latency_ns: 0, links: 1}\n"
         "engines:\n"
         "  tiu:\n    kind: tensor\n    waits_on: [gdma, sdma, cdma]\n"
         "    clock_mhz: 1000000\n    lanes_per_core: 16\n    cube_n: 8\n"
         "    cube_macs_per_lane_per_cycle: {fp8: 256, bf16: 128}\n    vector_eu_per_lane: {bf16: 32, fp32: 16}\n"
         "    mm2_init_cycles: {nn: 0, nt: 0, tt: 0}\n    bank_conflict_cycles: 0\n    cube_efficiency: 1\n    "
         "vector_init_cycles: 0\n"
         "    sfu_init_cycles: 0\n    sfu_elements_per_lane_per_cycle: 8\n"
         "  gdma: {kind: dma, roles: [tiles, kv_stream], waits_on: [tiu], crosses: [ddr], bandwidth_gb_per_s: 1000, "
         "efficiency: 1, startup_ns: " +
         std::to_string(startup_ns) + ", outstanding: " + std::to_string(outstanding) +
         ", bytes_in_flight: " + std::to_string(bytes_in_flight) +
         "}\n"
         "  sdma: {kind: dma, roles: [kv_resident, cross_core, gather], waits_on: [tiu], crosses: [ddr], "
         "bandwidth_gb_per_s: 1000, efficiency: 1, startup_ns: 0, outstanding: 1, bytes_in_flight: 1073741824}\n"
         "  cdma: {kind: collective, waits_on: [tiu], crosses: [c2c, ddr], startup_ns: 0, outstanding: 1}\n"
         "weight_layout: n_major\nmatmul_split_k: true\n";
}

/// The SG2262 test chip, loaded once.
inline const hw::Chip& sg2262() {
  static const hw::Chip chip = hw::chip_from_yaml(kSg2262, "sg2262-test");
  return chip;
}

/// A decode workload: B sequences attending kv_len tokens, one query token each.
inline models::Workload decode(std::uint64_t batch, std::uint64_t kv_len,
                               models::KvFormat kv = models::KvFormat::bf16) {
  return models::make_workload(models::Phase::decode, batch, kv_len, std::nullopt, kv);
}

}  // namespace test_configs
