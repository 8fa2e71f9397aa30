#include "models/graph_helpers.hpp"

#include <fmt/format.h>

#include "hw/checked_count.hpp"

namespace models::detail {

ops::OpNode projection(ops::OpNode node, WeightFormat t) {
  apply_weight_format(node, t);
  return node;
}

ops::OpNode matmul_op(std::string name, std::uint64_t groups, std::uint64_t m, std::uint64_t k, std::uint64_t n) {
  ops::OpNode node;
  node.name = std::move(name);
  node.kind = ops::OpKind::matmul;
  node.shape = groups == 1 ? fmt::format("[{}, {}] x [{}, {}]", m, k, k, n)
                           : fmt::format("{} x [{}, {}] x [{}, {}]", groups, m, k, k, n);
  node.payload = ops::MatmulShape{groups, m, k, n, {}};
  node.flops = hw::checked("the FLOPs of " + node.name, [&] { return (hw::Count(2) * groups * m * k * n).value(); });
  return node;
}

ops::OpNode vector_op(std::string name, ops::OpKind kind, std::uint64_t rows, std::uint64_t width,
                      std::uint64_t ops_per_element, hw::DType compute, hw::DType out) {
  ops::OpNode node;
  node.name = std::move(name);
  node.kind = kind;
  node.shape = fmt::format("[{}, {}]", rows, width);
  node.payload = ops::VectorShape{rows, width, 0, ops_per_element, 0, 0, compute, out};
  node.flops = hw::checked("the element operations of " + node.name,
                           [&] { return (hw::Count(rows) * width * ops_per_element).value(); });
  return node;
}

void add_sfu(ops::OpNode& node, std::uint64_t per_element, std::uint64_t per_row) {
  node.vec().sfu_per_element = per_element;
  node.vec().sfu_per_row = per_row;
  node.flops = hw::checked("the element operations of " + node.name, [&] {
    return (hw::Count(node.flops) + hw::Count(node.vec().rows) * (hw::Count(node.vec().width) * per_element + per_row))
        .value();
  });
}

ops::OpNode rmsnorm_op(std::string name, std::uint64_t rows, std::uint64_t width) {
  ops::OpNode node = vector_op(std::move(name), ops::OpKind::rmsnorm, rows, width, kRmsNormOpsPerElement);
  add_sfu(node, 0, kRmsNormSfuPerRow);
  return node;
}

ops::OpNode collective_op(std::string name, ops::OpKind kind, std::uint64_t bytes, std::uint64_t chips) {
  ops::OpNode node;
  node.name = std::move(name);
  node.kind = kind;
  node.shape = fmt::format("{} B over {} chips", bytes, chips);
  node.payload = ops::CollectiveShape{bytes, chips};
  return node;
}

WeightFormat dense_weights(const ModelSpec& m, const Workload& w) {
  if (!m.quantised_experts_only) return w.weight_format();
  return WeightFormat{WeightDtype::bf16, w.weight_group, ActDtype::auto_};
}

ops::OpNode fa2_op(const ops::AttentionShape& attn, std::uint64_t kv_bytes) {
  ops::OpNode fa;
  fa.name = "fa2";
  fa.kind = ops::OpKind::fa2;
  fa.shape = fmt::format("{} h{}/{} d{}/{}", attn.batch_text(), attn.heads, attn.kv_heads, attn.qk_dim, attn.v_dim);
  fa.payload = attn;
  fa.kv_bytes = kv_bytes;
  fa.flops = hw::checked("the FLOPs of fa2", [&] {
    // Query-key pairs (AttentionShape::pairs: causal or not), a score and a value MAC each.
    return (hw::Count(2) * attn.heads * attn.pairs() * (attn.qk_dim + attn.v_dim)).value();
  });
  return fa;
}

ops::OpNode combine_op(const ops::AttentionShape& attn) {
  ops::OpNode c;
  c.name = "fa2_combine";
  c.kind = ops::OpKind::fa2_combine;
  c.shape = fmt::format("[{}, {}]", attn.query_tokens() * attn.heads, attn.v_dim);
  c.payload = attn;
  c.dtype = ops::kAccumulatorDtype;
  return c;
}

}  // namespace models::detail
