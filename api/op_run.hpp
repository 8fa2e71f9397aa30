#pragma once
// Single-op runs for microbenchmarks (g5sim op matmul | fa2): one op lowered and simulated alone
// on `cores` cores of the chip, reported as
//   total_ns         end of its last command
//   ddr_bytes        bytes its commands moved to or from DDR
//   unique_bytes     bytes it must move at least once: matmul (m k + k n) e + m n 2; fa2 the Q,
//                    the K/V history once and the output
//   tiu_utilization  FLOPs / (total time x the cores' cube peak), in 0..1
//   peak_lmem_bytes  largest per-core local-memory footprint of its tiles

#include <cstdint>
#include <ostream>
#include <string>

#include "hw/chip.hpp"
#include "hw/dtype.hpp"

namespace api {

struct MatmulRequest {
  std::uint64_t m = 0, n = 0, k = 0;
  hw::DType dtype = hw::DType::bf16;
};

struct Fa2Request {
  std::uint64_t batch = 1, q_len = 1, kv_len = 0, heads = 0, kv_heads = 1, qk_dim = 0, v_dim = 0;
  bool shared_kv = false;  ///< V is the first v_dim elements of K (MLA's latent)
  bool causal = false;     ///< prefill: each query attends keys up to itself (ops::AttentionShape)
};

struct OpRunResult {
  std::string op, shape;
  std::uint64_t total_ps = 0, ddr_bytes = 0, unique_bytes = 0, peak_lmem_bytes = 0, flops = 0, commands = 0;
  std::uint32_t cores = 0;
  double tiu_utilization = 0;
};

/// `cores` = 0 uses all of the chip's cores. Throws hw::ConfigError on bad shapes.
OpRunResult run_matmul(const hw::Chip& chip, const MatmulRequest& request, std::uint32_t cores);
OpRunResult run_fa2(const hw::Chip& chip, const Fa2Request& request, std::uint32_t cores);

void write_op_json(std::ostream& out, const OpRunResult& result);
void write_op_table(std::ostream& out, const OpRunResult& result);

}  // namespace api
