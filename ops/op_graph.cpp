#include "ops/op_graph.hpp"

#include <queue>
#include <stdexcept>

namespace ops {

std::string_view kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::embedding: return "embedding";
    case OpKind::rmsnorm: return "rmsnorm";
    case OpKind::swiglu: return "swiglu";
    case OpKind::moe_topk: return "moe_topk";
    case OpKind::moe_combine: return "moe_combine";
    case OpKind::expert_weights: return "expert_weights";
    case OpKind::rope: return "rope";
    case OpKind::matmul: return "matmul";
    case OpKind::kv_cache_write: return "kv_cache_write";
    case OpKind::kv_cache_read: return "kv_cache_read";
    case OpKind::indexer_cache_read: return "indexer_cache_read";
    case OpKind::indexer_topk: return "indexer_topk";
    case OpKind::fa2: return "fa2";
    case OpKind::fa2_combine: return "fa2_combine";
    case OpKind::all_reduce: return "all_reduce";
    case OpKind::all_to_all: return "all_to_all";
  }
  return "?";
}

bool is_row_op(OpKind kind) {
  switch (kind) {
    case OpKind::embedding:
    case OpKind::rmsnorm:
    case OpKind::rope:
    case OpKind::swiglu:
    case OpKind::moe_topk:
    case OpKind::moe_combine:
    case OpKind::indexer_topk:
    case OpKind::kv_cache_write: return true;
    default: return false;
  }
}

OpId add_op(OpGraph& graph, OpNode node) { return boost::add_vertex(std::move(node), graph); }

void add_dependency(OpGraph& graph, OpId producer, OpId consumer, EdgeKind kind) {
  boost::add_edge(producer, consumer, OpEdge{kind}, graph);
}

std::vector<OpId> topological_order(const OpGraph& graph) {
  const std::size_t n = boost::num_vertices(graph);
  std::vector<std::size_t> missing(n, 0);
  for (OpId v = 0; v < n; ++v) missing[v] = boost::in_degree(v, graph);
  std::priority_queue<OpId, std::vector<OpId>, std::greater<>> ready;
  for (OpId v = 0; v < n; ++v) {
    if (missing[v] == 0) ready.push(v);
  }
  std::vector<OpId> order;
  order.reserve(n);
  while (!ready.empty()) {
    const OpId v = ready.top();
    ready.pop();
    order.push_back(v);
    for (auto [e, end] = boost::out_edges(v, graph); e != end; ++e) {
      const OpId w = boost::target(*e, graph);
      if (--missing[w] == 0) ready.push(w);
    }
  }
  if (order.size() != n) throw std::logic_error("op graph has a cycle");
  return order;
}

}  // namespace ops
