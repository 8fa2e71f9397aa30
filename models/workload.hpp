#pragma once
// One simulated step: B sequences, q_len new query tokens each, attending kv_len tokens each,
// with the KV cache format and the MLA execution modes. Decode is recognised by shape alone,
// q_len < kv_len (no extra field): the history then comes from the KV cache. Prefill is
// q_len == kv_len: K/V are computed in the same step and no history is read.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "models/run_limits.hpp"
#include "models/weight_format.hpp"

namespace models {

enum class Phase : std::uint8_t { decode, prefill };

/// How KV cache elements are stored (--kv-dtype).
enum class KvFormat : std::uint8_t {
  bf16,          ///< 2 bytes per element
  fp8,           ///< 1 byte per element, as seed 003 counts it: (d_c + d_r) x 1 for MLA
  fp8_flashmla,  ///< FlashMLA's scaled latent layout: d_c fp8 + one fp32 scale per 128 + d_r bf16
};

/// How MLA runs and what it caches (--mla-mode, --prefill-mla-mode).
enum class MlaMode : std::uint8_t {
  absorb,    ///< latent + RoPE key cached; W_UK / W_UV absorbed: MQA over the latent
  standard,  ///< latent cached; each step up-projects the whole history, then MHA per head
  expanded,  ///< per-head K and V cached (Hugging Face eager, attn_impl="naive"); MHA per head
};

struct Workload {
  std::uint64_t batch = 0;
  std::uint64_t q_len = 0;
  std::uint64_t kv_len = 0;
  KvFormat kv_format = KvFormat::bf16;
  MlaMode mla_mode = MlaMode::absorb;                ///< decode compute and the cache layout
  MlaMode prefill_mla_mode = MlaMode::expanded;      ///< prefill compute (MHA, as vLLM and SGLang)
  WeightDtype weight_dtype = WeightDtype::bf16;      ///< how the projections' weights are stored
  std::uint64_t weight_group = kDefaultWeightGroup;  ///< int8/int4 scale group along k (0: per column)

  WeightFormat weight_format() const { return {weight_dtype, weight_group}; }

  bool decode() const { return q_len < kv_len; }
  /// The MLA compute path of this step.
  MlaMode compute_mode() const { return decode() ? mla_mode : prefill_mla_mode; }
};

/// Builds and checks a workload from user choices: `ctx` is kv_len; decode takes q_len (default
/// 1) and needs q_len < ctx; prefill takes q_len == ctx (the default). Errors are hw::InputError
/// naming the parameter.
Workload make_workload(Phase phase, std::uint64_t batch, std::uint64_t ctx, std::optional<std::uint64_t> q_len,
                       KvFormat kv_format);

Phase parse_phase(const std::string& text);
KvFormat parse_kv_format(std::string_view text);  ///< bf16, fp8, fp8-flashmla
/// `field`: the parameter being parsed ("mla_mode" or "prefill_mla_mode"), for the InputError.
MlaMode parse_mla_mode(std::string_view text, const std::string& field);
std::string_view name_of(KvFormat f);
std::string_view name_of(MlaMode m);

}  // namespace models
