// Lowering of row-wise vector ops (RMSNorm, RoPE, SwiGLU, the KV-cache write, the MoE combine,
// the embedding gather; top-k without a sort engine): rows split over cores in balanced ranges,
// tiles of rows double-buffered in local memory:
//   load(t) -> [SFU(t)] -> vector(t) -> store(t); load(t+1) waits on the vector(t-1) that freed
//   its buffer.
// Tile size: the most rows whose input and output buffers, doubled, fit the core's LMEM.

#include <algorithm>
#include <vector>

#include "hw/dtype.hpp"
#include "ops/lowering_context.hpp"
#include "ops/op_lowerings.hpp"
#include "ops/work_split.hpp"

namespace ops::detail {

void lower_rows(LoweringContext& ctx, OpId op, std::uint64_t rows, std::uint64_t widest_row_bytes,
                const std::function<RowCost(std::uint64_t begin, std::uint64_t end)>& cost, hw::DType compute_dtype,
                EngineId load_engine, const std::vector<Range>* core_rows, bool from_l2) {
  const std::uint64_t tile_rows =
      std::max<std::uint64_t>(1, ctx.chip.lmem_bytes_per_core / (2 * std::max<std::uint64_t>(1, widest_row_bytes)));
  std::vector<RowCost> tiles;
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    const Range mine = core_rows ? (*core_rows)[core] : balanced_part(rows, ctx.chip.cores, core);
    if (mine.empty()) continue;
    tiles.clear();
    for (std::uint64_t r0 = mine.begin; r0 < mine.end; r0 += tile_rows) {
      tiles.push_back(cost(r0, std::min(mine.end, r0 + tile_rows)));
    }
    // Rows that cost nothing (fa2_combine's rows of sequences no core cut) emit nothing.
    std::erase_if(tiles, [](const RowCost& t) {
      return t.load_bytes == 0 && t.store_bytes == 0 && t.element_ops == 0 && t.sfu_ops == 0;
    });
    if (tiles.empty()) continue;
    auto& peak = ctx.out.ops[op].peak_lmem_bytes;
    peak = std::max(peak, std::min<std::uint64_t>(tiles.size(), 2) * (tiles[0].load_bytes + tiles[0].store_bytes));
    CoreEmitter emit(ctx, op, core);
    // A tile with nothing to read (a fresh prompt's zero state) computes from nothing loaded.
    auto load = [&](std::uint64_t bytes, CmdRef after) {
      if (bytes == 0) return CmdRef{};
      return from_l2 ? emit.load_from_l2_on(load_engine, bytes, after) : emit.load_on(load_engine, bytes, after);
    };
    CmdRef loaded = load(tiles[0].load_bytes, {});
    CmdRef previous;
    for (std::size_t t = 0; t < tiles.size(); ++t) {
      // The special functions first (exp, rsqrt on the SFU), then the vector ALU pass; the
      // tensor engine runs them in order, so only the first waits on the load.
      if (tiles[t].sfu_ops > 0) {
        emit.compute(ctx.cost.sfu_cycles(tiles[t].sfu_ops), {loaded});
        loaded = {};
      }
      const CmdRef done = emit.compute(ctx.cost.vector_cycles(tiles[t].element_ops, compute_dtype), {loaded});
      if (t + 1 < tiles.size()) loaded = load(tiles[t + 1].load_bytes, previous);
      if (tiles[t].store_bytes > 0) emit.store(tiles[t].store_bytes, done);
      previous = done;
    }
  }
}

void lower_vector(LoweringContext& ctx, OpId op) {
  const OpNode& node = ctx.graph[op];
  const VectorShape& v = node.vec();
  RowCost cost;
  cost.load_bytes = v.load_bytes_per_row(node.dtype);
  cost.store_bytes = v.store_bytes_per_row();
  cost.element_ops = v.width * v.ops_per_element;
  cost.sfu_ops = v.width * v.sfu_per_element + v.sfu_per_row;
  auto rows_cost = [&](std::uint64_t begin, std::uint64_t end) {
    const std::uint64_t n = end - begin;
    return RowCost{n * cost.load_bytes, n * cost.store_bytes, n * cost.element_ops, n * cost.sfu_ops};
  };
  lower_rows(ctx, op, v.rows, cost.load_bytes + cost.store_bytes, rows_cost, v.compute, ctx.tiles());
}

}  // namespace ops::detail
