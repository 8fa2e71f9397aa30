#pragma once
// One simulated step of one attention block: B sequences, q_len new query tokens each, attending
// kv_len tokens each. Decode is recognised by shape alone, q_len < kv_len (no extra field): the
// history then comes from the KV cache. Prefill is q_len == kv_len: K/V are computed in the same
// step and no history is read.

#include <cstdint>
#include <optional>
#include <string>

#include "hw/dtype.hpp"

namespace models {

enum class Phase : std::uint8_t { decode, prefill };

struct Workload {
  std::uint64_t batch = 0;
  std::uint64_t q_len = 0;
  std::uint64_t kv_len = 0;
  hw::DType kv_dtype = hw::DType::bf16;  ///< latent KV cache element type

  bool decode() const { return q_len < kv_len; }
};

/// Builds and checks a workload from user choices: `ctx` is kv_len; decode takes q_len (default
/// 1) and needs q_len < ctx; prefill takes q_len == ctx (the default). Errors are hw::ConfigError
/// naming the flag.
Workload make_workload(Phase phase, std::uint64_t batch, std::uint64_t ctx, std::optional<std::uint64_t> q_len,
                       hw::DType kv_dtype);

Phase parse_phase(const std::string& text);

}  // namespace models
