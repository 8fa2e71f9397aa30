#pragma once
// One simulated step: groups of sequences, each group `count` alike sequences of `q_len` new
// tokens after `history` tokens read from the KV cache, with the KV cache format and the MLA
// execution modes. A group runs one of two paths:
//   decode path  a decode (q_len 1) or a multi-token verify: the step writes its new tokens to
//                the cache first and attention reads them back with the rest, so `history` is the
//                context attended (the spec's s_ctx) and q_len < history; compute in mla_mode;
//   prefill path a prompt (history 0) or a chunk of one after `history` cached tokens: the
//                chunk's K/V are computed in the step, the history is read from the cache, and
//                each query attends the history plus the chunk up to itself (causal; full-square
//                with PrefillAttention::full); compute in prefill_mla_mode.
// A uniform batch is one group: `--batch B --ctx C` decode is {B, q_len, C, decode}, prefill
// {B, C, 0, prefill}.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/run_limits.hpp"
#include "models/weight_format.hpp"

namespace models {

enum class Phase : std::uint8_t { decode, prefill };

/// How KV cache elements are stored (--kv-dtype).
enum class KvFormat : std::uint8_t {
  bf16,          ///< 2 bytes per element
  fp8,           ///< 1 byte per element, as seed 003 counts it: (d_c + d_r) x 1 for MLA
  fp8_flashmla,  ///< FlashMLA's scaled latent layout: d_c fp8 + one fp32 scale per 128 + d_r bf16
  /// Microscaled (OCP MX, NVFP4): a stream's elements packed at 8, 6 or 4 bits, a one-byte scale per
  /// block of 32 (e8m0; nvfp4: of 16, e4m3) along the stream (models/kv_cache.hpp).
  mxfp8,
  mxfp6,
  mxfp4,
  nvfp4,
};

/// How MLA runs and what it caches (--mla-mode, --prefill-mla-mode).
enum class MlaMode : std::uint8_t {
  absorb,    ///< latent + RoPE key cached; W_UK / W_UV absorbed: MQA over the latent
  standard,  ///< latent cached; each step up-projects the whole history, then MHA per head
  expanded,  ///< per-head K and V cached (Hugging Face eager, attn_impl="naive"); MHA per head
};

/// How prefill-path queries attend (--prefill-attention).
enum class PrefillAttention : std::uint8_t {
  causal,  ///< each query sees the history and the chunk up to itself (FlashAttention's causal mask)
  full,    ///< every query sees the whole history + chunk (a padded static mask, as Sophgo's demos)
};

/// How a decode step adds its new K/V to the history it attends (--kv-append).
enum class KvAppend : std::uint8_t {
  in_place,  ///< written into the cache, the attention reads the cache (paged and static caches)
  concat,    ///< a static graph's torch.cat(past, new): the history copied into a fresh tensor in DDR
             ///< (read once, written once) before the attention reads that copy
};

/// The output layer's weights (--lm-head-weights).
enum class LmHeadWeights : std::uint8_t {
  bf16,         ///< 16-bit (DeepSeek's checkpoints; vLLM's and SGLang's weight-only formats)
  projections,  ///< in the projections' format (Sophgo's Qwen, GLM-4 and MiniCPM demos)
};

struct SequenceGroup {
  std::uint64_t count = 0;    ///< sequences
  std::uint64_t q_len = 0;    ///< new tokens per sequence
  std::uint64_t history = 0;  ///< tokens per sequence read from the KV cache
  bool decode = false;        ///< the decode path (above); else the prefill path

  /// Keys each sequence attends (at most: causal queries see fewer).
  std::uint64_t kv_len() const { return decode ? history : history + q_len; }
  auto operator<=>(const SequenceGroup&) const = default;
};

/// The most groups of one step (a --seqs file's rows).
constexpr std::uint64_t kMaxSequenceGroups = 4096;

struct Workload {
  std::vector<SequenceGroup> groups;
  KvFormat kv_format = KvFormat::bf16;
  MlaMode mla_mode = MlaMode::absorb;                ///< decode compute and the cache layout
  MlaMode prefill_mla_mode = MlaMode::expanded;      ///< prefill compute (MHA, as vLLM and SGLang)
  WeightDtype weight_dtype = WeightDtype::bf16;      ///< how the projections' weights are stored
  std::uint64_t weight_group = kDefaultWeightGroup;  ///< int8/int4 scale group along k (0: per column)
  ActDtype act_dtype = ActDtype::auto_;              ///< the projections' activations (auto: the weights')
  PrefillAttention prefill_attention = PrefillAttention::causal;
  KvAppend kv_append = KvAppend::in_place;
  LmHeadWeights lm_head_weights = LmHeadWeights::bf16;
  /// The sequences came as groups (--mix, --seqs, a serving step): they are dealt round robin
  /// over the DP ranks whatever their number, and a rank left without one idles (as a serving
  /// engine's DP ranks do when a step has fewer requests than ranks). A uniform --batch must
  /// divide by dp instead.
  bool dealt = false;

  WeightFormat weight_format() const { return {weight_dtype, weight_group, act_dtype}; }

  std::uint64_t sequences() const;       ///< over all groups
  std::uint64_t tokens() const;          ///< new tokens: the rows of every projection
  std::uint64_t history_tokens() const;  ///< tokens read from the cache, over all sequences
  std::uint64_t cached_tokens() const;   ///< tokens in the cache after the step, over all sequences
  /// Rows that need logits: every new token of a decode-path sequence (a verify checks each
  /// drafted token), the last token of a prefill-path one (vLLM computes the last position of
  /// every scheduled request, a partial prefill's too, and drops that sample).
  std::uint64_t logit_rows() const;
  bool uniform() const { return groups.size() == 1; }
  bool has_decode() const;
  bool has_prefill() const;
  /// Every group on the decode path (the one-path parts below are either this or prefill only).
  bool decode() const { return !has_prefill(); }
  /// The groups of one path, the rest of the workload alike; no groups when none is on it.
  Workload part(bool decode_path) const;
  /// The MLA compute path of a one-path workload.
  MlaMode compute_mode() const { return decode() ? mla_mode : prefill_mla_mode; }
  /// The largest q_len and kv_len() of any group (a uniform batch's own).
  std::uint64_t max_q_len() const;
  std::uint64_t max_kv_len() const;
};

/// Builds and checks a uniform workload from user choices: `ctx` is kv_len; decode takes q_len
/// (default 1) and needs q_len < ctx; prefill takes q_len == ctx (the default). Errors are
/// hw::InputError naming the parameter.
Workload make_workload(Phase phase, std::uint64_t batch, std::uint64_t ctx, std::optional<std::uint64_t> q_len,
                       KvFormat kv_format);

/// One group as a user wrote it (count, q_len, history): its path follows from the shape, a
/// history of 0 prefill, q_len <= decode_max_q below the history decode, else a prefill chunk.
SequenceGroup classify_group(std::uint64_t count, std::uint64_t q_len, std::uint64_t history,
                             std::uint64_t decode_max_q);
/// Checks a mixed workload's groups (at least one; counts, lengths and their sums in range).
/// `field` names the option in errors ("mix" or "seqs"). Throws hw::InputError.
Workload make_mixed_workload(std::vector<SequenceGroup> groups, KvFormat kv_format, const std::string& field);
/// --mix 'COUNTxQ_LEN@HISTORY,...' (64x1@4096,1x2048@0). Throws hw::InputError naming "mix".
std::vector<SequenceGroup> parse_mix(std::string_view text, std::uint64_t decode_max_q);
/// A --seqs CSV file: a header `count,q_len,history`, then one group per row. Throws
/// hw::ConfigError at the file, line and column of what is wrong.
std::vector<SequenceGroup> read_sequence_file(const std::string& path, std::uint64_t decode_max_q);
/// The same from the file's text; `path` names it in errors.
std::vector<SequenceGroup> parse_sequence_text(const std::string& text, const std::string& path,
                                               std::uint64_t decode_max_q);
/// The same as text: "64x1@4096,1x2048@0" (history as the user wrote it).
std::string mix_text(const std::vector<SequenceGroup>& groups);

Phase parse_phase(const std::string& text);
KvFormat parse_kv_format(std::string_view text);  ///< bf16, fp8, fp8-flashmla
/// `field`: the parameter being parsed ("mla_mode" or "prefill_mla_mode"), for the InputError.
MlaMode parse_mla_mode(std::string_view text, const std::string& field);
std::string_view name_of(KvFormat f);
std::string_view name_of(MlaMode m);
PrefillAttention parse_prefill_attention(std::string_view text);  ///< causal, full
std::string_view name_of(PrefillAttention a);
KvAppend parse_kv_append(std::string_view text);  ///< in-place, concat
std::string_view name_of(KvAppend a);
LmHeadWeights parse_lm_head_weights(std::string_view text);  ///< bf16, projections
std::string_view name_of(LmHeadWeights w);

}  // namespace models
