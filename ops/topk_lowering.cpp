// Lowering of top-k selection (moe_topk, indexer_topk). On the chip's sort engine (the HAU) when
// it has one: rows split over cores; per tile, load the scores (tiles engine), select on the sort
// engine, store the chosen indices (waiting on the sort command). The vector unit is left free.
// Without a sort engine, top-k is a row op on the vector unit (row_lowering.cpp).

#include <algorithm>

#include "hw/dtype.hpp"
#include "ops/lowering_context.hpp"
#include "ops/op_lowerings.hpp"
#include "ops/work_split.hpp"

namespace ops::detail {

void lower_topk(LoweringContext& ctx, OpId op) {
  if (!ctx.chip.sort_engine()) {
    lower_vector(ctx, op);
    return;
  }
  const OpNode& node = ctx.graph[op];
  const VectorShape& v = node.vec();
  const std::uint64_t load = v.load_bytes_per_row(node.dtype), store = v.store_bytes_per_row();
  const std::uint64_t tile_rows = std::max<std::uint64_t>(1, ctx.chip.lmem_bytes_per_core / (2 * (load + store)));
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    const Range mine = balanced_part(v.rows, ctx.chip.cores, core);
    if (mine.empty()) continue;
    CoreEmitter emit(ctx, op, core);
    for (std::uint64_t r0 = mine.begin; r0 < mine.end; r0 += tile_rows) {
      const std::uint64_t rows = std::min(tile_rows, mine.end - r0);
      const CmdRef loaded = emit.load(rows * load, {});
      const CmdRef selected = emit.sort(ctx.cost.topk_cycles(rows, v.width, node.vec().topk), loaded);
      emit.store(rows * store, selected);
    }
    auto& peak = ctx.out.ops[op].peak_lmem_bytes;
    peak = std::max(peak, std::min(tile_rows, mine.size()) * (load + store));
  }
}

}  // namespace ops::detail
