#pragma once
// One op alone on a chip (`g5sim op matmul | fa2 | all_reduce | all_to_all`): a microbenchmark of
// the lowering and the kernel, on `cores` cores of the chip (0: all), reported as
//   total_ps         end of its last command
//   ddr_bytes        bytes its commands moved to or from DDR
//   c2c_bytes        bytes a collective sent to other chips (links or the network interface)
//   unique_bytes     bytes it must move at least once: matmul (m k + k n) e + m n 2; fa2 the Q,
//                    the K/V history once and the output; a collective its buffer
//   tiu_utilization  FLOPs / (total time x the cores' cube peak), in 0..1
//   peak_lmem_bytes  largest per-core local-memory footprint of its tiles

#include <cstdint>
#include <string>

namespace g5sim {

class Chip;

/// [m, k] x [k, n], the B operand weights in DDR.
struct MatmulOp {
  std::uint64_t m = 0, n = 0, k = 0;
  /// bf16, fp8 or fp32 (plain operands), or mxfp8, mxfp6, mxfp4, nvfp4: both operands
  /// microscaled, their block scales streamed with them (an e8m0 scale per 32; nvfp4 an e4m3 per 16)
  std::string dtype = "bf16";
};

/// Flash attention; decode when q_len < kv_len (split over the history, then merged).
struct AttentionOp {
  std::uint64_t batch = 1, q_len = 1, kv_len = 0, heads = 0, kv_heads = 1, qk_dim = 0, v_dim = 0;
  bool shared_kv = false;  ///< V is the first v_dim elements of K (MLA's latent)
  bool causal = false;     ///< prefill: each query attends keys up to itself
};

/// A collective among `chips` chips of the deployment, as a step's collective ops run it
/// (ops/collective_lowering.cpp): all_reduce, a ring over S = `bytes` per chip (2 (N - 1) steps
/// of S / N); all_to_all, S = `bytes` sent per chip (N - 1 steps of S / (N - 1), one per peer; with
/// the chip's `nodes`, peers in other nodes through the network interface first).
struct CollectiveOp {
  std::string kind = "all_reduce";  ///< all_reduce or all_to_all
  std::uint64_t bytes = 0, chips = 2;
};

struct OpResult {
  std::string op, shape;
  std::uint64_t total_ps = 0, ddr_bytes = 0, c2c_bytes = 0, unique_bytes = 0, peak_lmem_bytes = 0, flops = 0,
                commands = 0;
  std::uint32_t cores = 0;
  double tiu_utilization = 0;
  /// Energy on a chip with an `energy` section (hw/energy.hpp), joules: the op's dynamic
  /// energy (its MACs, vector elements and bytes at each resource crossed) and the static power
  /// of its cores over total_ps; has_energy false and 0 without the section.
  bool has_energy = false;
  double energy_j = 0, dynamic_energy_j = 0, static_energy_j = 0;
  /// `g5sim op ... --json` and the table it prints, byte for byte.
  std::string json() const;
  std::string table() const;
};

/// Throw ConfigError on a bad shape, dtype or core count.
OpResult simulate_matmul(const Chip& chip, const MatmulOp& op, std::uint32_t cores = 0);
OpResult simulate_attention(const Chip& chip, const AttentionOp& op, std::uint32_t cores = 0);
/// Throws ConfigError on an unknown kind, no bytes, or fewer than two chips.
OpResult simulate_collective(const Chip& chip, const CollectiveOp& op);

}  // namespace g5sim
