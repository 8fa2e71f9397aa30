#pragma once
// The op graph: vertices are ops with their shapes and work, edges are dependencies.
//
// Edge kinds tell the lowering how a consumer may start relative to its producer; an edge means
// the same whatever the run options (the one route-dependent barrier, fa2 waiting for a resident
// or gathered history on every core, is the attention unit's: ops/attention_unit.hpp):
//   data       - the consumer reads what the producer wrote to DDR, from any core: every core
//                must have finished the producer (a cross-core barrier: send_msg / wait_msg).
//   same_core  - producer and consumer are split over cores with the same rule, and the consumer
//                takes the producer's bytes from local memory on the same core (kv_cache_read ->
//                fa2): the consumer's first tensor command waits on the producer's last DMA
//                commands on the core, its later ones on the chunks they consume.
//   order      - no data: the consumer's DMA on a core starts after the producer's last TIU
//                command on that core (the spec's "cache read waits on the absorption").
// An expert_weights op has no commands of its own: the expert matmuls it feeds (same_core)
// load their weight tiles on its behalf, so its bytes and interval are the weight stream's.
// Likewise a kv_cache_read feeding a matmul (MLA standard mode's up-projection of the history)
// is that matmul's A-operand stream.
// Vertex ids follow insertion order, and the lowering emits ops in topological order breaking
// ties by id, so a graph always lowers to the same program.

#include <boost/graph/adjacency_list.hpp>

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hw/dtype.hpp"
#include "ops/data_formats.hpp"
#include "ops/op_kinds.hpp"

namespace ops {

struct MatmulShape {
  std::uint64_t groups = 1;  ///< independent matmuls (heads for per-head projections, experts)
  std::uint64_t m = 0, k = 0, n = 0;
  /// Rows of each group when they differ (routed experts: tokens per expert); empty = m for all.
  std::vector<std::uint64_t> group_rows;
  /// Bytes of one A row of k elements when A is not in the op's dtype (a cached latent in an fp8
  /// or FlashMLA layout); 0 = k x the dtype's bytes.
  std::uint64_t a_row_bytes = 0;
  /// Bytes of one B column of k elements when B is not in the op's dtype (the DSA index keys:
  /// fp8 values and a scale); 0 = k x the dtype's bytes.
  std::uint64_t b_col_bytes = 0;
  /// Output rows summed `out_reduce` to 1 in the epilogue before the store (DSA's weighted sum of
  /// the indexer heads); 1 = none.
  std::uint64_t out_reduce = 1;
  /// Quantised weights (models/weight_format.hpp): vector operations per B element to dequantise
  /// it to bf16 before the cube (int8, int4), per A element to quantise the activations (fp8),
  /// and the k-block after which fp32 partial sums are rescaled (fp8 block scales); 0 = none.
  std::uint64_t b_dequant_ops = 0;
  std::uint64_t a_quant_ops = 0;
  std::uint64_t k_block_rescale = 0;
  /// Microscaled weights (MXFP8/6/4, NVFP4): k elements per scale; the cube multiplies them in the
  /// node's dtype with the activations quantised alike, or, on a chip without that rate, the
  /// weights are dequantised to bf16 (models::dequantise_to_bf16); 0 = not microscaled.
  std::uint64_t microscale_block = 0;
  /// The activations' format was fixed (--act-dtype): the cube must have the node's dtype (no
  /// bf16 fallback), and b_element is the weights' floating-point element (bf16 for bf16 or
  /// integer weights), converted on the vector unit where the chip has no rate for it.
  bool act_fixed = false;
  hw::DType b_element = hw::DType::bf16;
  /// A bias row of n elements (bf16) added to every output row in the epilogue (Qwen's q/k/v).
  bool bias = false;

  std::uint64_t rows_of(std::uint64_t group) const { return group_rows.empty() ? m : group_rows[group]; }
  bool operator==(const MatmulShape&) const = default;
};

struct VectorShape {
  std::uint64_t rows = 0, width = 0;
  std::uint64_t load_width = 0;       ///< elements read per row when it differs from width (0 = width)
  std::uint64_t ops_per_element = 0;  ///< vector (ALU) element-operations per element
  std::uint64_t sfu_per_element = 0;  ///< special-function (exp, rsqrt) evaluations per element
  std::uint64_t sfu_per_row = 0;      ///< ... and per row (an rsqrt of a norm, say)
  hw::DType compute = hw::DType::fp32;
  hw::DType out = hw::DType::bf16;    ///< dtype written back to DDR
  std::uint64_t store_row_bytes = 0;  ///< bytes written per row when not width x out (0 = that)
  /// Bytes read per row when not load_width x the input's (a recurrent state with its inputs;
  /// 0 when nothing is read, a fresh prompt's zero state).
  std::optional<std::uint64_t> load_row_bytes = std::nullopt;
  std::uint64_t topk = 0;  ///< moe_topk, indexer_topk: entries selected per row

  /// Bytes one row reads from DDR when its input is in `in` (the op's dtype), and writes back.
  std::uint64_t load_bytes_per_row(hw::DType in) const {
    if (load_row_bytes) return *load_row_bytes;
    return (load_width != 0 ? load_width : width) * hw::bytes_of(in);
  }
  std::uint64_t store_bytes_per_row() const {
    return store_row_bytes != 0 ? store_row_bytes : width * hw::bytes_of(out);
  }
  bool operator==(const VectorShape&) const = default;
};

/// Sequences alike within one attention: `count` of them, each with `q_len` query tokens that
/// attend up to `kv_len` keys (causal: query t of a sequence sees keys 0 .. kv_len - q_len + t).
struct QueryGroup {
  std::uint64_t count = 0;
  std::uint64_t q_len = 0;
  std::uint64_t kv_len = 0;
  auto operator<=>(const QueryGroup&) const = default;
};

/// Attention as `kv_heads` independent KV streams per sequence, each shared by
/// heads / kv_heads query heads:
///   MLA absorb: kv_heads 1, K = the latent + RoPE key (qk_dim = d_c + d_r), V = its first d_c
///               elements (v_dim = d_c), so a token streams kv_elements = d_c + d_r elements;
///   GQA / MHA:  kv_heads = num_key_value_heads, K and V separate: kv_elements = qk_dim + v_dim.
/// The sequences come in groups (a uniform batch is one group); the KV streams are numbered
/// group by group, sequence by sequence, KV head innermost.
struct AttentionShape {
  std::vector<QueryGroup> groups;
  std::uint64_t heads = 0;  ///< query heads
  std::uint64_t kv_heads = 1;
  std::uint64_t qk_dim = 0;          ///< score dimension
  std::uint64_t v_dim = 0;           ///< value / output dimension
  std::uint64_t kv_elements = 0;     ///< elements one token streams per KV head
  std::uint64_t kv_token_bytes = 0;  ///< bytes one token streams per KV head, in the cache format
  bool kv_dequant = false;           ///< the cache format is converted to bf16 before the cube
  bool decode = false;               ///< the history comes from the cache, split over the cores
  /// Decode over the history of prompt chunks (their many query rows), not the decode kernel's
  /// streams: a GQA decode's history is cut by cost, a chunk's by tokens (ops/attention_plan.hpp).
  bool over_chunks = false;
  /// Prefill only: query token t attends keys 0..t + (kv_len - q_len), so each block of query
  /// rows streams the keys up to its last token and skips the rest (FlashAttention's causal
  /// mask); false: every query attends all kv_len keys (a padded static mask, as Sophgo's demos).
  bool causal = false;
  /// DSA: the read gathers the selected rows on SDMA into a contiguous buffer, which fa2 then
  /// streams on GDMA; fa2's first TIU command waits on the gather (initial_sdma_dep).
  bool gather = false;
  /// A sliding window (0: none): query t of a sequence, at position p = kv_len - q_len + t, sees
  /// keys max(0, p - window + 1) .. p (prefill: a causal band; decode: the caller keeps kv_len at
  /// most window + q_len - 1). Over a chunk's history (over_chunks) query t sees the history keys
  /// from kv_len + t - window + 1 on: min(kv_len, window - 1 - t) of them.
  std::uint64_t window = 0;
  /// Attention sinks (gpt-oss): one learned logit per head joins each query row's softmax, an
  /// exp and an add in the row's final normalisation.
  bool sinks = false;

  auto operator<=>(const AttentionShape&) const = default;
  std::uint64_t heads_per_kv() const { return heads / kv_heads; }
  std::uint64_t batch() const;                                    ///< sequences, over all groups
  std::uint64_t query_tokens() const;                             ///< query tokens per head, over all sequences
  std::uint64_t keys() const;                                     ///< kv_len summed over all sequences
  std::uint64_t sequences() const { return batch() * kv_heads; }  ///< independent KV streams
  /// Query-key pairs per head over all sequences: q_len kv_len each, or causal
  /// q_len (kv_len - q_len) + q_len (q_len + 1) / 2, or with a window the sum over the queries of
  /// the keys each sees (above). Throws hw::CountOverflow.
  std::uint64_t pairs() const;
  /// "B4 q1 kv4096" for one group; "64x1@4096+1x2048@2048" (count x q_len @ kv_len) for several.
  std::string batch_text() const;
};

/// A collective between chips: `bytes` per chip (all_reduce: the buffer reduced; all_to_all:
/// what this chip sends), among `chips` participants.
struct CollectiveShape {
  std::uint64_t bytes = 0;
  std::uint64_t chips = 1;
  /// An expert-parallel exchange in which a token crosses the network once per destination node
  /// (DeepEP's normal kernels: to one chip of each node its experts live on, which forwards it
  /// to the others over the node's links): `tokens` of `token_bytes`, each to `top_k` of
  /// `experts` experts spread evenly over the chips (ops/op_lowerings.hpp states the bytes).
  /// tokens = 0: `bytes` in equal shares to every peer.
  std::uint64_t tokens = 0, token_bytes = 0, experts = 0, top_k = 0;
  bool operator==(const CollectiveShape&) const = default;
};

/// What an op kind carries (ops/op_kinds.hpp says which for each kind). `StreamShape`: ops whose
/// bytes other ops' commands move on their behalf (the expert weights, the DSA index keys).
struct StreamShape {
  bool operator==(const StreamShape&) const = default;
};
/// The host's launch of the next program (a layer's network on Sophgo's runtime): `launch_ps`
/// during which no engine of the chip works.
struct HostShape {
  std::uint64_t launch_ps = 0;
  bool operator==(const HostShape&) const = default;
};
// Alternatives in PayloadKind order (ops/op_kinds.hpp).
using OpPayload = std::variant<StreamShape, MatmulShape, VectorShape, AttentionShape, CollectiveShape, HostShape>;

struct OpNode {
  std::string name;
  int layer = -1;  ///< decoder layer, or -1 outside the layers (embedding, lm_head)
  OpKind kind = OpKind::matmul;
  std::string shape;  ///< human-readable, for tables
  hw::DType dtype = hw::DType::bf16;
  std::uint64_t flops = 0;  ///< matrix FLOPs (2 per MAC); vector ops count element-operations
  /// KV history bytes the op reads or attends: kv_cache_read and indexer_cache_read (what they
  /// stream), fa2 (what it attends, in the cache's format); 0 for other ops.
  std::uint64_t kv_bytes = 0;
  /// Lowering (queue) order: among ops whose producers are lowered, the smallest (schedule, id)
  /// goes first. 0 everywhere: the order they were added in. Micro-batches use it to queue one
  /// micro-batch's attention before the other's experts (models/decoder_step.hpp).
  std::uint32_t schedule = 0;
  OpPayload payload;  ///< the kind's shape; add_op() checks that it matches the kind

  // Typed access: the wrong payload for the kind is a bug (std::bad_variant_access).
  const MatmulShape& mm() const { return std::get<MatmulShape>(payload); }
  MatmulShape& mm() { return std::get<MatmulShape>(payload); }
  const VectorShape& vec() const { return std::get<VectorShape>(payload); }
  VectorShape& vec() { return std::get<VectorShape>(payload); }
  const AttentionShape& attn() const { return std::get<AttentionShape>(payload); }
  AttentionShape& attn() { return std::get<AttentionShape>(payload); }
  const CollectiveShape& collective() const { return std::get<CollectiveShape>(payload); }
  const HostShape& host() const { return std::get<HostShape>(payload); }
};

enum class EdgeKind : std::uint8_t { data, same_core, order };

struct OpEdge {
  EdgeKind kind = EdgeKind::data;
};

using OpGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, OpNode, OpEdge>;
using OpId = OpGraph::vertex_descriptor;

/// Adds an op and returns its id. Throws std::logic_error if its payload is not its kind's.
OpId add_op(OpGraph& graph, OpNode node);
/// Adds a dependency producer -> consumer.
void add_dependency(OpGraph& graph, OpId producer, OpId consumer, EdgeKind kind = EdgeKind::data);

/// Topological order, ties broken by (schedule, id), smallest first. Throws std::logic_error on a cycle.
std::vector<OpId> topological_order(const OpGraph& graph);

}  // namespace ops
