#pragma once
// `g5sim serve`'s parts below its public API (g5sim/serve.hpp): the readers of its text knobs and
// the deployment's KV cache.
//
// KV cache, per DP rank (each rank's chips hold its sequences; serving/serving_engine.hpp
// schedules the deployment as one pool of dp times a rank's blocks):
//     kv_tokens_per_rank = floor((memory_utilization x ddr.capacity_bytes - weight bytes per chip)
//                                / KV bytes per token per chip)
// with g5sim::serving_memory's weight and per-token bytes (memory_utilization as vLLM's
// gpu_memory_utilization: the share of the DDR the engine may use; activations are not sized).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "g5sim/serve.hpp"

namespace serving {

/// disagg: "P:D", P prefill and D decode instances, each 1..kMaxServeInstances. Throws InputError
/// naming "disagg".
std::pair<std::uint64_t, std::uint64_t> parse_disagg(const std::string& text);
/// The same, or "none": (0, 0), one instance doing both.
std::pair<std::uint64_t, std::uint64_t> parse_disagg_or_none(const std::string& text);
/// afd: "A:F", A attention and F FFN chips of an instance, each 1..65536; or "none": (0, 0).
/// Throws InputError naming "afd".
std::pair<std::uint64_t, std::uint64_t> parse_afd_or_none(const std::string& text);
/// accept: "P" or "P1,P2,..." rates in [0, 1], at most kMaxMtpDrafts. Throws InputError naming "accept".
std::vector<double> parse_accept(const std::string& text);
/// step_cache: "exact"; "bucket:PCT", PCT a whole percent 1..100 (the grid); "auto:PCT", PCT a
/// bound in percent 0.1..100 ("auto": auto:1). Throws InputError naming "step_cache".
struct StepCacheMode {
  std::uint64_t bucket_percent = 0;
  double auto_percent = 0;
};
StepCacheMode parse_step_cache(const std::string& text);
/// input_len / output_len: N, LO:HI (whole numbers 1..kMaxContext) or a histogram file's path
/// (read when the load is made). Throws InputError naming the field for a bad N or LO:HI.
void check_length_text(const std::string& text);

/// The chip's link a disaggregated deployment moves KV caches over: its network interface
/// (nodes.rdma_*) when the chip has one, else its C2C links used together (bandwidth x links).
g5sim::KvTransfer kv_transfer_link(const g5sim::Chip& chip, std::uint64_t kv_bytes_per_token);

/// The deployment's KV cache in tokens (every DP rank's) at `utilisation` of the chip's DDR.
/// Throws InputError naming memory_utilization when the weights leave no room.
std::uint64_t kv_tokens_of(const g5sim::ServingMemory& memory, double utilisation, const std::string& chip);

}  // namespace serving
