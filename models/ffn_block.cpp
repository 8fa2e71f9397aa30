#include "models/ffn_block.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "hw/checked_count.hpp"
#include "models/graph_helpers.hpp"

namespace models {
namespace {

using hw::DType;
using ops::EdgeKind;
using ops::OpId;
using ops::OpKind;
using ops::OpNode;
using namespace detail;

// Router scoring (sigmoid or softmax: an exp on the SFU and 2 ALU operations per score) and
// selection (about log2 k compare-exchange passes over the scores).
std::uint64_t topk_ops_per_score(std::uint64_t k) {
  std::uint64_t passes = 0;
  while ((std::uint64_t{1} << passes) < k) ++passes;
  return 2 + passes;
}

// gate_up -> swiglu -> down after `input`; returns down.
OpId add_mlp(LayerGraph& lg, const std::string& prefix, std::uint64_t T, std::uint64_t H, std::uint64_t I, OpId input,
             WeightFormat weights) {
  const OpId gate_up = lg.add(projection(matmul_op(prefix + "gate_up", 1, T, H, 2 * I), weights));
  OpNode act = vector_op(prefix + "swiglu", OpKind::swiglu, T, I, kSwigluOpsPerElement);
  add_sfu(act, kSwigluSfuPerElement, 0);
  act.vec().load_width = 2 * I;
  const OpId swiglu = lg.add(act);
  const OpId down = lg.add(projection(matmul_op(prefix + "down", 1, T, I, H), weights));
  lg.depend(input, gate_up);
  lg.depend(gate_up, swiglu);
  lg.depend(swiglu, down);
  return down;
}

OpNode grouped_experts(std::string name, const ExpertAssignment& routed, std::uint64_t k, std::uint64_t n,
                       WeightFormat weights) {
  const std::uint64_t groups = routed.experts.size();
  const std::uint64_t rows = std::accumulate(routed.tokens.begin(), routed.tokens.end(), std::uint64_t{0});
  OpNode node = matmul_op(std::move(name), groups, *std::max_element(routed.tokens.begin(), routed.tokens.end()), k, n);
  node.mm().group_rows = routed.tokens;
  node.flops = hw::checked("the FLOPs of " + node.name, [&] { return (hw::Count(2) * rows * k * n).value(); });
  node.shape = fmt::format("{} experts, {} rows x [{}, {}]", groups, rows, k, n);
  return projection(std::move(node), weights);
}

}  // namespace

std::uint64_t expert_weight_bytes(const ModelSpec& model, std::uint64_t experts, std::uint64_t width,
                                  WeightFormat weights) {
  const std::uint64_t H = model.hidden_size;
  return experts * (weight_matrix_bytes(weights, H, 2 * width) + weight_matrix_bytes(weights, width, H));
}

namespace {

// An EP all-to-all after `after` when tokens cross chips (ep > tp); else `after` itself. A step
// with prompt tokens exchanges them as DeepEP's normal (throughput) kernels do, once per node
// (ops::CollectiveShape::tokens); a decode-only step as its low-latency kernels do, to every
// expert's chip directly (SGLang's --deepep-mode auto picks them so).
OpId ep_all_to_all(LayerGraph& lg, const char* name, const Parallelism& p, const MoeSpec& moe, const ExpertShare& share,
                   std::uint64_t bytes, std::uint64_t token_bytes, bool per_node, OpId after) {
  if (bytes == 0) return after;
  OpNode node = collective_op(name, OpKind::all_to_all, bytes, p.ep);
  if (per_node) {
    auto& c = std::get<ops::CollectiveShape>(node.payload);
    c.tokens = share.sent_tokens;
    c.token_bytes = token_bytes;
    c.experts = moe.n_routed_experts;
    c.top_k = moe.num_experts_per_tok;
  }
  const OpId exchange = lg.add(node);
  lg.depend(after, exchange);
  return exchange;
}

OpId tp_all_reduce(LayerGraph& lg, const Parallelism& p, std::uint64_t T, std::uint64_t H, OpId after) {
  if (p.tp == 1) return after;
  const OpId reduce = lg.add(collective_op("ffn_all_reduce", OpKind::all_reduce, T * H * 2, p.tp));
  lg.depend(after, reduce);
  return reduce;
}

}  // namespace

OpId add_ffn_block(ops::OpGraph& graph, const ModelSpec& m, const Workload& w, int layer, OpId input,
                   const Parallelism& p, const ExpertShare* share) {
  LayerGraph lg(graph, layer);
  const std::uint64_t T = w.tokens(), H = m.hidden_size;
  const OpId norm = lg.add(rmsnorm_op("ffn_norm", T, H));
  lg.depend(input, norm);
  if (!m.is_moe_layer(static_cast<std::uint64_t>(layer))) {
    return tp_all_reduce(lg, p, T, H, add_mlp(lg, "mlp_", T, H, m.intermediate_size / p.tp, norm, dense_weights(m, w)));
  }

  const MoeSpec& moe = *m.moe;
  const ExpertAssignment* routed = &share->experts;
  const std::uint64_t E = moe.n_routed_experts, k = moe.num_experts_per_tok, I = share->expert_width;
  std::uint64_t slots = 0;
  for (std::uint64_t t : routed->tokens) slots += t;
  const OpId router = lg.add(matmul_op("router", 1, T, H, E));
  OpNode select = vector_op("moe_topk", OpKind::moe_topk, T, E, topk_ops_per_score(k));
  add_sfu(select, 1, 0);
  select.vec().topk = k;
  select.vec().store_row_bytes = k * 8;  // expert index and routing weight per choice
  const OpId topk = lg.add(select);
  lg.depend(norm, router);
  lg.depend(router, topk);

  // Tokens cross chips when the EP group is wider than the TP group.
  const bool per_node = w.has_prefill();
  const OpId experts_input = ep_all_to_all(lg, "moe_dispatch", p, moe, *share, share->dispatch_bytes,
                                           share->dispatch_token_bytes, per_node, topk);
  // The shared experts need only the normed tokens: added here, they are lowered (queued) while
  // the dispatch all-to-all is in flight, so it hides behind them.
  std::optional<OpId> shared;
  if (moe.n_shared_experts > 0) {
    shared = add_mlp(lg, "shared_", T, H, moe.shared_width() / p.tp, norm, dense_weights(m, w));
  }

  OpNode weights;
  weights.name = "expert_weights";
  weights.kind = OpKind::expert_weights;
  weights.shape = fmt::format("{} of {} experts x 3 x [{}, {}]", routed->experts.size(), E, H, I);
  const OpId weights_op = lg.add(weights);
  const OpId gate_up = lg.add(grouped_experts("experts_gate_up", *routed, H, 2 * I, w.weight_format()));
  OpNode act = vector_op("experts_swiglu", OpKind::swiglu, slots, I, kSwigluOpsPerElement);
  add_sfu(act, kSwigluSfuPerElement, 0);
  act.vec().load_width = 2 * I;
  const OpId swiglu = lg.add(act);
  const OpId down = lg.add(grouped_experts("experts_down", *routed, I, H, w.weight_format()));
  lg.depend(topk, weights_op);
  lg.depend(weights_op, gate_up, EdgeKind::same_core);
  lg.depend(weights_op, down, EdgeKind::same_core);
  lg.depend(norm, gate_up);
  lg.depend(experts_input, gate_up);
  lg.depend(gate_up, swiglu);
  lg.depend(swiglu, down);
  const OpId experts_output = ep_all_to_all(lg, "moe_combine_a2a", p, moe, *share, share->combine_bytes,
                                            share->combine_token_bytes, per_node, down);

  // Each token's output: the k expert rows weighted and scaled, plus the shared experts' row.
  OpNode combine = vector_op("moe_combine", OpKind::moe_combine, T, H, 2 * k + (moe.n_shared_experts ? 1 : 0));
  combine.vec().load_width = H * (k + (moe.n_shared_experts ? 1 : 0));
  const OpId combine_op = lg.add(combine);
  lg.depend(experts_output, combine_op);
  if (shared) lg.depend(*shared, combine_op);
  return tp_all_reduce(lg, p, T, H, combine_op);
}

}  // namespace models
