#pragma once
// Small helpers the graph builders share: op constructors with FLOP counts, and a handle that
// stamps every op it adds with its decoder layer.

#include <cstdint>
#include <string>

#include "hw/dtype.hpp"
#include "models/model_spec.hpp"
#include "models/weight_format.hpp"
#include "models/workload.hpp"
#include "ops/op_graph.hpp"

namespace models::detail {

// Vector (ALU) element-operations per element, by what the kernel does; special functions
// (exp, rsqrt) run on the SFU and are counted apart:
constexpr std::uint64_t kRmsNormOpsPerElement = 4;     // square, accumulate, scale by 1/rms, by weight
constexpr std::uint64_t kRmsNormSfuPerRow = 1;         // rsqrt of the mean square
constexpr std::uint64_t kRopeOpsPerElement = 3;        // x*cos, rotate(x)*sin, add
constexpr std::uint64_t kCacheWriteOpsPerElement = 1;  // pack (and cast to the KV dtype)
constexpr std::uint64_t kSwigluOpsPerElement = 4;      // add, divide (sigmoid), two multiplies
constexpr std::uint64_t kSwigluSfuPerElement = 1;      // exp of the sigmoid
constexpr std::uint64_t kCopyOpsPerElement = 0;        // a gather moves data only

class LayerGraph {
 public:
  LayerGraph(ops::OpGraph& graph, int layer) : graph_(graph), layer_(layer) {}
  ops::OpId add(ops::OpNode node) {
    node.layer = layer_;
    return ops::add_op(graph_, std::move(node));
  }
  void depend(ops::OpId producer, ops::OpId consumer, ops::EdgeKind kind = ops::EdgeKind::data) {
    ops::add_dependency(graph_, producer, consumer, kind);
  }
  ops::OpGraph& graph() { return graph_; }
  int layer() const { return layer_; }

 private:
  ops::OpGraph& graph_;
  int layer_;
};

ops::OpNode matmul_op(std::string name, std::uint64_t groups, std::uint64_t m, std::uint64_t k, std::uint64_t n);
/// The format of every projection but the routed experts': the workload's, or bf16 when the
/// checkpoint quantises its experts alone (ModelSpec::quantised_experts_only).
WeightFormat dense_weights(const ModelSpec& m, const Workload& w);
/// A projection: `node` (a matmul whose B is a weight matrix) with its weights in format `t`.
ops::OpNode projection(ops::OpNode node, WeightFormat t);
ops::OpNode vector_op(std::string name, ops::OpKind kind, std::uint64_t rows, std::uint64_t width,
                      std::uint64_t ops_per_element, hw::DType compute = hw::DType::fp32,
                      hw::DType out = hw::DType::bf16);
/// Adds special-function work (SFU) to a vector op, and its FLOPs.
void add_sfu(ops::OpNode& node, std::uint64_t per_element, std::uint64_t per_row);
ops::OpNode rmsnorm_op(std::string name, std::uint64_t rows, std::uint64_t width);
ops::OpNode collective_op(std::string name, ops::OpKind kind, std::uint64_t bytes, std::uint64_t chips);
/// fa2 over `attn`, attending `kv_bytes` of KV; FLOPs 2 B q n_h kv (qk_dim + v_dim).
ops::OpNode fa2_op(const ops::AttentionShape& attn, std::uint64_t kv_bytes);
/// The merge of fa2's per-core partial outputs (fp32), for decode's split over the history.
ops::OpNode combine_op(const ops::AttentionShape& attn);

}  // namespace models::detail
