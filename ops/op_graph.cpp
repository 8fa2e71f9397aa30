#include "ops/op_graph.hpp"

#include <queue>
#include <stdexcept>

namespace ops {

OpId add_op(OpGraph& graph, OpNode node) {
  if (node.payload.index() != static_cast<std::size_t>(traits_of(node.kind).payload)) {
    throw std::logic_error("op '" + node.name + "' of kind " + std::string(kind_name(node.kind)) +
                           " carries another kind's payload");
  }
  return boost::add_vertex(std::move(node), graph);
}

void add_dependency(OpGraph& graph, OpId producer, OpId consumer, EdgeKind kind) {
  boost::add_edge(producer, consumer, OpEdge{kind}, graph);
}

std::vector<OpId> topological_order(const OpGraph& graph) {
  const std::size_t n = boost::num_vertices(graph);
  std::vector<std::size_t> missing(n, 0);
  for (OpId v = 0; v < n; ++v) missing[v] = boost::in_degree(v, graph);
  using Key = std::pair<std::uint32_t, OpId>;  // (schedule, id): smallest first
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  for (OpId v = 0; v < n; ++v) {
    if (missing[v] == 0) ready.push({graph[v].schedule, v});
  }
  std::vector<OpId> order;
  order.reserve(n);
  while (!ready.empty()) {
    const OpId v = ready.top().second;
    ready.pop();
    order.push_back(v);
    for (auto [e, end] = boost::out_edges(v, graph); e != end; ++e) {
      const OpId w = boost::target(*e, graph);
      if (--missing[w] == 0) ready.push({graph[w].schedule, w});
    }
  }
  if (order.size() != n) throw std::logic_error("op graph has a cycle");
  return order;
}

}  // namespace ops
