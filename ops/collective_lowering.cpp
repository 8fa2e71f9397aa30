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

#include "ops/lowering_context.hpp"
#include "ops/op_lowerings.hpp"

namespace ops::detail {

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
  for (std::uint64_t i = 0; i < steps; ++i) emit.send_to_chip((c.bytes + share - 1) / share, {}, i < remote);
}

}  // namespace ops::detail
