#include "models/workload.hpp"

#include <fmt/format.h>

#include "hw/config_error.hpp"

namespace models {

Workload make_workload(Phase phase, std::uint64_t batch, std::uint64_t ctx, std::optional<std::uint64_t> q_len,
                       hw::DType kv_dtype) {
  if (batch == 0) throw hw::ConfigError("--batch: must be a positive integer");
  if (ctx == 0) throw hw::ConfigError("--ctx: must be a positive integer");
  if (kv_dtype == hw::DType::fp32) throw hw::ConfigError("--kv-dtype: must be bf16 or fp8");
  Workload w;
  w.batch = batch;
  w.kv_len = ctx;
  w.kv_dtype = kv_dtype;
  if (phase == Phase::decode) {
    w.q_len = q_len.value_or(1);
    if (w.q_len == 0 || w.q_len >= ctx) {
      throw hw::ConfigError(fmt::format(
          "--q-len: decode needs 1 <= q_len < ctx (decode is q_len < kv_len), got q_len {} with ctx {}", w.q_len, ctx));
    }
  } else {
    w.q_len = q_len.value_or(ctx);
    if (w.q_len != ctx) {
      throw hw::ConfigError(fmt::format(
          "--q-len: prefill processes the whole prompt, q_len must equal ctx ({}), got {}", ctx, w.q_len));
    }
  }
  return w;
}

Phase parse_phase(const std::string& text) {
  if (text == "decode") return Phase::decode;
  if (text == "prefill") return Phase::prefill;
  throw hw::ConfigError(fmt::format("--phase: expected decode or prefill, got '{}'", text));
}

}  // namespace models
