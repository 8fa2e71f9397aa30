// Lowering of collectives between chips (all_reduce, all_to_all) on core 0's collective engine,
// one transfer per step of the algorithm, each paying the link latency:
//   ring all-reduce of S bytes over N chips: 2 (N - 1) steps of S / N (reduce-scatter, all-gather);
//   all-to-all of S bytes sent: N - 1 steps of S / (N - 1), one per peer.

#include "ops/lowering_context.hpp"
#include "ops/op_lowerings.hpp"

namespace ops::detail {

void lower_collective(LoweringContext& ctx, OpId op) {
  const CollectiveShape& c = ctx.graph[op].collective();
  if (c.chips < 2 || c.bytes == 0) return;
  const bool ring = ctx.graph[op].kind == OpKind::all_reduce;
  const std::uint64_t steps = ring ? 2 * (c.chips - 1) : c.chips - 1;
  const std::uint64_t share = ring ? c.chips : c.chips - 1;
  CoreEmitter emit(ctx, op, 0);
  for (std::uint64_t i = 0; i < steps; ++i) emit.send_to_chip((c.bytes + share - 1) / share, {});
}

}  // namespace ops::detail
