// Lowering of collectives between chips (all_reduce, all_to_all) on core 0's collective engine,
// one transfer per step of the algorithm, each paying its link's latency:
//   ring all-reduce of S bytes over N chips: 2 (N - 1) steps of S / N (reduce-scatter, all-gather);
//   all-to-all of S bytes sent: N - 1 steps of S / (N - 1), one per peer.
// With nodes of n chips (hw::Chip::nodes) and N > n: an all-to-all sends to its n - 1 node peers
// over the c2c links and to the N - n others through the network interface (`rdma`), the remote
// ones first (DeepEP's dispatch and combine: RDMA to other nodes, NVLink inside one); a ring
// spanning nodes moves at its slowest link, so every step of an all-reduce goes through the
// network interface. The engine serves its transfers in order, so the two tiers add up rather
// than overlap: a bound within (remote bytes / rdma + local bytes / c2c) of the overlapped time.
//
// An expert exchange sent once per node (CollectiveShape::tokens > 0: T tokens of b bytes, each to
// k of E experts, E / N per chip) that spans R = ceil((N - n) / n) other nodes: a token reaches a
// set of e experts with probability p(e) = 1 - C(E - e, k) / C(E, k) (k distinct experts, chosen
// uniformly: a balanced router), so
//   network bytes  T b R p(n E / N)            (once to each other node it needs),
//   c2c bytes      T b p(E / N) (N - 1 - R)    (each target chip but this one and the R chips
//                                               that took it from the network, which forward it:
//                                               in a symmetric exchange a chip forwards as many
//                                               tokens as it sends),
// in R network steps and n - 1 c2c steps of equal shares; the c2c steps on core 1's collective
// engine, so the tiers overlap (DeepEP's network senders and NVLink forwarders run on SMs of
// their own).

#include <algorithm>
#include <cmath>

#include "ops/lowering_context.hpp"
#include "ops/op_lowerings.hpp"

namespace ops::detail {
namespace {

// p(e) above: 1 - prod_{i < k} (E - e - i) / (E - i).
double expert_set_hit_probability(std::uint64_t experts, std::uint64_t top_k, double held) {
  double miss = 1.0;
  const double E = static_cast<double>(experts);
  for (std::uint64_t i = 0; i < top_k && miss > 0.0; ++i) {
    const double d = static_cast<double>(i);
    miss *= std::max(0.0, (E - held - d) / (E - d));
  }
  return 1.0 - miss;
}

}  // namespace

void lower_collective(LoweringContext& ctx, OpId op) {
  const CollectiveShape& c = ctx.graph[op].collective();
  if (c.chips < 2 || c.bytes == 0) return;
  const bool ring = ctx.graph[op].kind == OpKind::all_reduce;
  const std::uint64_t steps = ring ? 2 * (c.chips - 1) : c.chips - 1;
  const std::uint64_t share = ring ? c.chips : c.chips - 1;
  const std::uint64_t node = ctx.chip.nodes ? ctx.chip.nodes->chips_per_node : c.chips;
  const bool spans_nodes = c.chips > node;
  // Steps through the network interface: all of a ring's, an all-to-all's remote peers.
  const std::uint64_t remote = !spans_nodes ? 0 : ring ? steps : c.chips - node;
  CoreEmitter emit(ctx, op, 0);
  if (!ring && spans_nodes && c.tokens > 0) {
    const std::uint64_t other_nodes = (c.chips - node + node - 1) / node;
    const double per_chip = static_cast<double>(c.experts) / static_cast<double>(c.chips);
    const double sent = static_cast<double>(c.tokens) * static_cast<double>(c.token_bytes);
    const double network = sent * static_cast<double>(other_nodes) *
                           expert_set_hit_probability(c.experts, c.top_k, per_chip * static_cast<double>(node));
    const double links = sent * expert_set_hit_probability(c.experts, c.top_k, per_chip) *
                         static_cast<double>(c.chips - 1 - other_nodes);
    for (std::uint64_t i = 0; i < other_nodes; ++i) {
      emit.send_to_chip(static_cast<std::uint64_t>(std::ceil(network / static_cast<double>(other_nodes))), {}, true);
    }
    // DeepEP gives the network senders and the node's forwarders SMs of their own, so the two
    // tiers move at once: the c2c share goes out on another core's collective engine.
    CoreEmitter forward(ctx, op, ctx.chip.cores > 1 ? 1 : 0);
    for (std::uint64_t i = 0; i + 1 < node; ++i) {
      forward.send_to_chip(static_cast<std::uint64_t>(std::ceil(links / static_cast<double>(node - 1))), {}, false);
    }
    return;
  }
  for (std::uint64_t i = 0; i < steps; ++i) emit.send_to_chip((c.bytes + share - 1) / share, {}, i < remote);
}

}  // namespace ops::detail
