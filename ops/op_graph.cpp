#include "ops/op_graph.hpp"

#include <fmt/format.h>

#include <queue>
#include <stdexcept>

#include "hw/checked_count.hpp"

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

namespace ops {

std::uint64_t AttentionShape::batch() const {
  hw::Count n(0);
  for (const QueryGroup& g : groups) n = n + hw::Count(g.count);
  return n.value();
}

std::uint64_t AttentionShape::query_tokens() const {
  hw::Count n(0);
  for (const QueryGroup& g : groups) n = n + hw::Count(g.count) * g.q_len;
  return n.value();
}

std::uint64_t AttentionShape::keys() const {
  hw::Count n(0);
  for (const QueryGroup& g : groups) n = n + hw::Count(g.count) * g.kv_len;
  return n.value();
}

namespace {

// sum over t = 0 .. n - 1 of min(cap, a + t): the first max(0, min(n, cap - a)) terms grow from
// a, the rest are cap (a >= 0, cap >= 1).
hw::Count capped_series(std::uint64_t n, std::uint64_t a, std::uint64_t cap) {
  const std::uint64_t growing = a >= cap ? 0 : std::min(n, cap - a);
  return hw::Count(growing) * a + hw::Count(growing) * (growing - (growing > 0 ? 1 : 0)) / 2 +
         hw::Count(n - growing) * cap;
}

// Keys one sequence's queries see in a sliding window (AttentionShape::window).
hw::Count windowed_pairs(const QueryGroup& g, std::uint64_t window, bool over_chunks) {
  if (!over_chunks) {
    // Query t at p = o + t (o = kv_len - q_len) sees min(window, p + 1) keys.
    return capped_series(g.q_len, g.kv_len - g.q_len + 1, window);
  }
  // Query t sees min(kv_len, window - 1 - t) history keys while t < window - 1: the first
  // terms are kv_len, then window - 1 - t falls by one a query down to 1.
  const std::uint64_t seeing = std::min(g.q_len, window - 1);
  if (seeing == 0 || g.kv_len == 0) return hw::Count(0);
  const std::uint64_t full = std::min(seeing, window - 1 >= g.kv_len ? window - g.kv_len : 0);  // t with >= kv_len
  // Queries t = full .. seeing - 1 see window - 1 - t: from window - 1 - full down by one.
  // Their sum: rest terms from top down to top - rest + 1 >= 1, i.e. rest (2 top - rest + 1) / 2.
  const std::uint64_t rest = seeing - full, top = window - 1 - full;
  return hw::Count(full) * g.kv_len + hw::Count(rest) * (2 * top - rest + 1) / 2;
}

}  // namespace

std::uint64_t AttentionShape::pairs() const {
  hw::Count n(0);
  for (const QueryGroup& g : groups) {
    const hw::Count per_sequence =
        window > 0 ? windowed_pairs(g, window, over_chunks)
        : causal   ? hw::Count(g.q_len) * (g.kv_len - g.q_len) + hw::Count(g.q_len) * (g.q_len + 1) / 2
                   : hw::Count(g.q_len) * g.kv_len;
    n = n + per_sequence * g.count;
  }
  return n.value();
}

std::string AttentionShape::batch_text() const {
  if (groups.size() == 1) return fmt::format("B{} q{} kv{}", groups[0].count, groups[0].q_len, groups[0].kv_len);
  std::string text;
  for (const QueryGroup& g : groups) {
    text += fmt::format("{}{}x{}@{}", text.empty() ? "" : "+", g.count, g.q_len, g.kv_len);
  }
  return text;
}

}  // namespace ops
