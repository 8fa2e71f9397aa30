// Lowering of host_launch: the host starting the next program (a decoder layer's network, as
// Sophgo's demos run a model: one network per block, each launched from the host when the last
// returned). Every core's tensor queue holds one delay of the launch's length: the op's data
// edges (models/host_launch.hpp) make it wait for the whole previous layer and the next layer's
// first commands wait for it on every engine, so nothing of either layer overlaps the launch.

#include "ops/lowering_context.hpp"
#include "ops/op_lowerings.hpp"

namespace ops::detail {

void lower_host_launch(LoweringContext& ctx, OpId op) {
  const std::uint64_t launch_ps = ctx.graph[op].host().launch_ps;
  if (launch_ps == 0) return;
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) CoreEmitter(ctx, op, core).delay(launch_ps);
}

}  // namespace ops::detail
