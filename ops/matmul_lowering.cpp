// Lowering of matmul ops: split over cores (ops/work_split.hpp), tiled per core
// (ops/matmul_tiling.hpp), and software-pipelined:
//   prologue: loads of tile 0
//   tile t:   TIU(t) waits on its last load; loads of tile t+1 wait on TIU(t-1), whose buffers
//             they overwrite; after the last k-step of an output tile, its store waits on TIU(t).
// Because GDMA completion ids advance in order, waiting on a tile's last load also covers the
// store that freed the C buffer it accumulates into.

#include <algorithm>
#include <map>

#include "hw/dtype.hpp"
#include "ops/lowering_context.hpp"
#include "ops/matmul_tiling.hpp"
#include "ops/work_split.hpp"

namespace ops::detail {
namespace {

struct MatmulTile {
  std::uint64_t rows, cols, depth;
  bool load_a;  // false when the resident A tile is reused across n-tiles
  bool last_k;  // ends an output tile: store C
};

// Enumerates one core's tiles in loop order (groups, m, n, k).
std::vector<MatmulTile> core_tiles(const MatmulPart& part, std::uint64_t k, const MatmulTiling& t) {
  std::vector<MatmulTile> tiles;
  for (std::uint64_t g = part.groups.begin; g < part.groups.end; ++g) {
    for (std::uint64_t m0 = part.rows.begin; m0 < part.rows.end; m0 += t.tm) {
      const std::uint64_t rows = std::min(t.tm, part.rows.end - m0);
      for (std::uint64_t n0 = part.cols.begin; n0 < part.cols.end; n0 += t.tn) {
        const std::uint64_t cols = std::min(t.tn, part.cols.end - n0);
        for (std::uint64_t k0 = 0; k0 < k; k0 += t.tk) {
          const std::uint64_t depth = std::min(t.tk, k - k0);
          const bool reuse_a = t.tk == k && n0 != part.cols.begin;
          tiles.push_back({rows, cols, depth, !reuse_a, k0 + depth == k});
        }
      }
    }
  }
  return tiles;
}

}  // namespace

void lower_matmul(LoweringContext& ctx, OpId op) {
  const OpNode& node = ctx.graph[op];
  const MatmulShape& s = node.mm;
  const std::uint64_t e = hw::bytes_of(node.dtype);
  const std::uint64_t e_out = hw::bytes_of(hw::DType::bf16);
  const auto parts = split_matmul(ctx.chip, s.groups, s.m, s.k, s.n, e);
  // Most cores get the same part shape: plan each shape once.
  std::map<std::pair<std::uint64_t, std::uint64_t>, MatmulTiling> tilings;
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    const MatmulPart& part = parts[core];
    if (part.groups.empty() || part.rows.empty() || part.cols.empty()) continue;
    const auto shape = std::make_pair(part.rows.size(), part.cols.size());
    auto found = tilings.find(shape);
    if (found == tilings.end()) {
      found = tilings.emplace(shape, plan_matmul_tiling(ctx.chip, shape.first, s.k, shape.second, e, e_out)).first;
    }
    const MatmulTiling& tiling = found->second;
    ctx.out.ops[op].peak_lmem_bytes = std::max(ctx.out.ops[op].peak_lmem_bytes, tiling.lmem_bytes);
    const auto tiles = core_tiles(part, s.k, tiling);
    CoreEmitter emit(ctx, op, core);
    auto loads = [&](const MatmulTile& t, std::uint32_t wait_tiu) {
      if (t.load_a) emit.load(t.rows * t.depth * e, wait_tiu);
      return emit.load(t.depth * t.cols * e, wait_tiu);
    };
    std::uint32_t next_loaded = loads(tiles.front(), 0);
    std::uint32_t previous_tiu = 0;
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      const MatmulTile& t = tiles[i];
      const std::uint32_t tiu = emit.compute(ctx.chip.matmul_cycles(t.rows, t.depth, t.cols, node.dtype), next_loaded);
      if (i + 1 < tiles.size()) next_loaded = loads(tiles[i + 1], previous_tiu);
      if (t.last_k) emit.store(t.rows * t.cols * e_out, tiu);
      previous_tiu = tiu;
    }
  }
}

}  // namespace ops::detail
