#pragma once
// The op kinds and what each is: its name in tables and JSON, the payload it carries (the shape
// type in OpNode::payload) and whether it is a row op. One table (op_kinds.cpp) holds a row per
// kind; a new op kind is an enum entry, a row there, a row in the lowering registry
// (op_lowerings.cpp) and its lowering.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ops {

enum class OpKind : std::uint8_t {
  embedding,           ///< gathers the step's token rows of the embedding table
  rmsnorm,             ///< vector: rows x width, fp32 arithmetic
  rope,                ///< vector: rotary embedding on rows x width
  swiglu,              ///< vector: silu(gate) * up, reads 2 x width, writes width
  moe_topk,            ///< vector: router scores -> the top-k experts of every token
  moe_combine,         ///< vector: weighted sum of each token's k expert outputs (routed scaling)
  matmul,              ///< cube: groups x ([m, k] x [k, n]), B operand = weights in DDR
  expert_weights,      ///< the routed experts' weights, streamed into the expert matmuls' local memory
  kv_cache_write,      ///< writes the new tokens' latent + RoPE key rows into the KV cache
  kv_cache_read,       ///< decode only: streams the latent KV history from DDR (DSA: gathers top-k rows)
  indexer_cache_read,  ///< DSA decode: the indexer's key cache for the whole history
  indexer_topk,        ///< DSA: weighs the indexer's head scores and selects the top-k history rows
  fa2,                 ///< flash attention (MQA over the latent in absorb mode)
  fa2_combine,         ///< decode only: merges the per-core partial outputs of fa2
  all_reduce,          ///< collective over the C2C links: ring all-reduce of TP partial sums
  all_to_all,          ///< collective over the C2C links: EP dispatch / combine of routed tokens
  host_launch,         ///< the host launching the next layer's program: the chip idles meanwhile
  conv1d,              ///< vector: a Gated DeltaNet's causal depthwise convolution over its q, k, v
  delta_rule,          ///< vector: a Gated DeltaNet's recurrent state read, updated per token, written
};
constexpr std::size_t kOpKindCount = 19;

/// Which OpPayload alternative a kind carries (the variant's index order, op_graph.hpp).
enum class PayloadKind : std::uint8_t { stream, matmul, rows, attention, collective, host };

/// The peak an op's FLOPs are measured against in the roofline: the cube (in the op's dtype, bf16
/// unless fp8), the vector unit (in the op's arithmetic dtype), or none (ops without arithmetic).
enum class PeakUnit : std::uint8_t { none, cube, vector };

struct OpKindTraits {
  OpKind kind;
  std::string_view name;  ///< the name users see in tables and JSON ("kind")
  PayloadKind payload;
  PeakUnit peak;
};

const OpKindTraits& traits_of(OpKind kind);

/// The name users see in tables and JSON ("kind").
inline std::string_view kind_name(OpKind kind) { return traits_of(kind).name; }

/// Row-wise ops described by a VectorShape (rows in, vector / SFU work, rows out).
inline bool is_row_op(OpKind kind) { return traits_of(kind).payload == PayloadKind::rows; }

}  // namespace ops
