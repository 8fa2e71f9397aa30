#include "models/ffn_block.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "models/graph_helpers.hpp"

namespace models {
namespace {

using hw::DType;
using ops::EdgeKind;
using ops::OpId;
using ops::OpKind;
using ops::OpNode;
using namespace detail;

constexpr std::uint64_t kWeightBytes = 2;  // bf16 weights

// Router scoring (sigmoid or softmax: 3 operations per score) and selection (about log2 k
// compare-exchange passes over the scores).
std::uint64_t topk_ops_per_score(std::uint64_t k) {
  std::uint64_t passes = 0;
  while ((std::uint64_t{1} << passes) < k) ++passes;
  return 3 + passes;
}

// gate_up -> swiglu -> down after `input`; returns down.
OpId add_mlp(LayerGraph& lg, const std::string& prefix, std::uint64_t T, std::uint64_t H, std::uint64_t I,
             OpId input) {
  const OpId gate_up = lg.add(matmul_op(prefix + "gate_up", 1, T, H, 2 * I));
  OpNode act = vector_op(prefix + "swiglu", OpKind::swiglu, T, I, kSwigluOpsPerElement);
  act.vec.load_width = 2 * I;
  const OpId swiglu = lg.add(act);
  const OpId down = lg.add(matmul_op(prefix + "down", 1, T, I, H));
  lg.depend(input, gate_up);
  lg.depend(gate_up, swiglu);
  lg.depend(swiglu, down);
  return down;
}

OpNode grouped_experts(std::string name, const ExpertAssignment& routed, std::uint64_t k, std::uint64_t n) {
  const std::uint64_t groups = routed.experts.size();
  const std::uint64_t rows = std::accumulate(routed.tokens.begin(), routed.tokens.end(), std::uint64_t{0});
  OpNode node = matmul_op(std::move(name), groups, *std::max_element(routed.tokens.begin(), routed.tokens.end()), k, n);
  node.mm.group_rows = routed.tokens;
  node.flops = 2 * rows * k * n;
  node.shape = fmt::format("{} experts, {} rows x [{}, {}]", groups, rows, k, n);
  return node;
}

}  // namespace

std::uint64_t expert_weight_bytes(const ModelSpec& model, std::uint64_t experts) {
  return experts * 3 * model.hidden_size * model.moe->moe_intermediate_size * kWeightBytes;
}

OpId add_ffn_block(ops::OpGraph& graph, const ModelSpec& m, const Workload& w, int layer, OpId input,
                   const ExpertAssignment* routed) {
  LayerGraph lg(graph, layer);
  const std::uint64_t T = w.batch * w.q_len, H = m.hidden_size;
  const OpId norm = lg.add(rmsnorm_op("ffn_norm", T, H));
  lg.depend(input, norm);
  if (!m.is_moe_layer(static_cast<std::uint64_t>(layer))) return add_mlp(lg, "mlp_", T, H, m.intermediate_size, norm);

  const MoeSpec& moe = *m.moe;
  const std::uint64_t E = moe.n_routed_experts, k = moe.num_experts_per_tok, I = moe.moe_intermediate_size;
  const OpId router = lg.add(matmul_op("router", 1, T, H, E));
  const OpId topk = lg.add(vector_op("moe_topk", OpKind::moe_topk, T, E, topk_ops_per_score(k)));
  lg.depend(norm, router);
  lg.depend(router, topk);

  OpNode weights;
  weights.name = "expert_weights";
  weights.kind = OpKind::expert_weights;
  weights.shape = fmt::format("{} of {} experts x 3 x [{}, {}]", routed->experts.size(), E, H, I);
  const OpId weights_op = lg.add(weights);
  const OpId gate_up = lg.add(grouped_experts("experts_gate_up", *routed, H, 2 * I));
  OpNode act = vector_op("experts_swiglu", OpKind::swiglu, T * k, I, kSwigluOpsPerElement);
  act.vec.load_width = 2 * I;
  const OpId swiglu = lg.add(act);
  const OpId down = lg.add(grouped_experts("experts_down", *routed, I, H));
  lg.depend(topk, weights_op);
  lg.depend(weights_op, gate_up, EdgeKind::same_core);
  lg.depend(weights_op, down, EdgeKind::same_core);
  lg.depend(norm, gate_up);
  lg.depend(topk, gate_up);
  lg.depend(gate_up, swiglu);
  lg.depend(swiglu, down);

  // Each token's output: the k expert rows weighted and scaled, plus the shared experts' row.
  OpNode combine = vector_op("moe_combine", OpKind::moe_combine, T, H, 2 * k + (moe.n_shared_experts ? 1 : 0));
  combine.vec.load_width = H * (k + (moe.n_shared_experts ? 1 : 0));
  const OpId combine_op = lg.add(combine);
  lg.depend(down, combine_op);
  if (moe.n_shared_experts > 0) {
    const OpId shared = add_mlp(lg, "shared_", T, H, moe.n_shared_experts * I, norm);
    lg.depend(shared, combine_op);
  }
  return combine_op;
}

}  // namespace models
