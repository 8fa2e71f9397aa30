#include "models/workload.hpp"

#include <fmt/format.h>

#include "hw/config_error.hpp"

namespace models {

Workload make_workload(Phase phase, std::uint64_t batch, std::uint64_t ctx, std::optional<std::uint64_t> q_len,
                       KvFormat kv_format) {
  if (batch == 0) throw hw::InputError("batch", "the batch must be a positive integer");
  if (ctx == 0) throw hw::InputError("kv_len", "the context length kv_len must be a positive integer");
  if (batch > kMaxBatch) throw hw::InputError("batch", fmt::format("{} is outside 1..{} sequences", batch, kMaxBatch));
  if (ctx > kMaxContext) {
    throw hw::InputError("kv_len", fmt::format("{} is outside 1..{} tokens", ctx, kMaxContext));
  }
  Workload w;
  w.batch = batch;
  w.kv_len = ctx;
  w.kv_format = kv_format;
  if (phase == Phase::decode) {
    w.q_len = q_len.value_or(1);
    if (w.q_len == 0 || w.q_len >= ctx) {
      throw hw::InputError("q_len",
                           fmt::format("decode needs 1 <= q_len < kv_len, got q_len {} with kv_len {}", w.q_len, ctx));
    }
  } else {
    w.q_len = q_len.value_or(ctx);
    if (w.q_len != ctx) {
      throw hw::InputError("q_len", fmt::format("prefill processes the whole prompt: q_len must equal kv_len ({}), "
                                                "got {}",
                                                ctx, w.q_len));
    }
  }
  return w;
}

Phase parse_phase(const std::string& text) {
  if (text == "decode") return Phase::decode;
  if (text == "prefill") return Phase::prefill;
  throw hw::InputError("phase", fmt::format("expected decode or prefill, got '{}'", text));
}

KvFormat parse_kv_format(std::string_view text) {
  if (text == "bf16") return KvFormat::bf16;
  if (text == "fp8") return KvFormat::fp8;
  if (text == "fp8-flashmla") return KvFormat::fp8_flashmla;
  throw hw::InputError("kv_format", fmt::format("expected bf16, fp8 or fp8-flashmla, got '{}'", text));
}

MlaMode parse_mla_mode(std::string_view text, const std::string& field) {
  if (text == "absorb") return MlaMode::absorb;
  if (text == "standard") return MlaMode::standard;
  if (text == "expanded") return MlaMode::expanded;
  throw hw::InputError(field, fmt::format("expected absorb, standard or expanded, got '{}'", text));
}

std::string_view name_of(KvFormat f) {
  switch (f) {
    case KvFormat::bf16: return "bf16";
    case KvFormat::fp8: return "fp8";
    case KvFormat::fp8_flashmla: return "fp8-flashmla";
  }
  return "?";
}

std::string_view name_of(MlaMode m) {
  switch (m) {
    case MlaMode::absorb: return "absorb";
    case MlaMode::standard: return "standard";
    case MlaMode::expanded: return "expanded";
  }
  return "?";
}

}  // namespace models
