#pragma once
// One op alone on a chip (`g5sim op matmul | fa2`): a microbenchmark of the lowering and the
// kernel, on `cores` cores of the chip (0: all), reported as
//   total_ps         end of its last command
//   ddr_bytes        bytes its commands moved to or from DDR
//   unique_bytes     bytes it must move at least once: matmul (m k + k n) e + m n 2; fa2 the Q,
//                    the K/V history once and the output
//   tiu_utilization  FLOPs / (total time x the cores' cube peak), in 0..1
//   peak_lmem_bytes  largest per-core local-memory footprint of its tiles

#include <cstdint>
#include <string>

namespace g5sim {

class Chip;

/// [m, k] x [k, n], the B operand weights in DDR.
struct MatmulOp {
  std::uint64_t m = 0, n = 0, k = 0;
  std::string dtype = "bf16";  ///< bf16 or fp8
};

/// Flash attention; decode when q_len < kv_len (split over the history, then merged).
struct AttentionOp {
  std::uint64_t batch = 1, q_len = 1, kv_len = 0, heads = 0, kv_heads = 1, qk_dim = 0, v_dim = 0;
  bool shared_kv = false;  ///< V is the first v_dim elements of K (MLA's latent)
  bool causal = false;     ///< prefill: each query attends keys up to itself
};

struct OpResult {
  std::string op, shape;
  std::uint64_t total_ps = 0, ddr_bytes = 0, unique_bytes = 0, peak_lmem_bytes = 0, flops = 0, commands = 0;
  std::uint32_t cores = 0;
  double tiu_utilization = 0;
  /// `g5sim op ... --json` and the table it prints, byte for byte.
  std::string json() const;
  std::string table() const;
};

/// Throw ConfigError on a bad shape, dtype or core count.
OpResult simulate_matmul(const Chip& chip, const MatmulOp& op, std::uint32_t cores = 0);
OpResult simulate_attention(const Chip& chip, const AttentionOp& op, std::uint32_t cores = 0);

}  // namespace g5sim
