#include "ops/work_split.hpp"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "hw/checked_count.hpp"
#include "ops/data_formats.hpp"
#include "ops/matmul_tiling.hpp"
#include "sim/precision.hpp"

namespace ops {

Range balanced_part(std::uint64_t total, std::uint64_t parts, std::uint64_t p, std::uint64_t align) {
  const std::uint64_t units = (total + align - 1) / align;
  const std::uint64_t u0 = units * p / parts;
  const std::uint64_t u1 = units * (p + 1) / parts;
  return Range{std::min(total, u0 * align), std::min(total, u1 * align)};
}

hw::EngineId reduction_engine(const hw::Chip& chip) {
  const hw::EngineId cross = chip.dma_for(hw::DmaRole::cross_core);
  return chip.engine(chip.tensor_engine()).may_wait_on(cross) ? cross : chip.dma_for(hw::DmaRole::tiles);
}

Range MatmulPart::reduce_cols() const {
  const Range r = balanced_part(cols.size(), k_parts, k_index);
  return Range{cols.begin + r.begin, cols.begin + r.end};
}

namespace {

struct Grid {
  std::uint64_t gm = 1, gn = 1, gk = 1;
  bool staged = false;  // A staged in the L2 (gn > 1 on a chip with a software-managed L2)
};

using hw::ceil_div;
std::uint64_t round_up(std::uint64_t a, std::uint64_t b) { return ceil_div(a, b) * b; }

struct GridCost {
  double ns = 0;            // the estimated time of one core's share
  std::uint64_t bytes = 0;  // its bus bytes (A, B, C)
};

// The estimated time of one core's share on grid g (the model in the header), in ns.
// `tiled`: with the passes of the core's tiles over A and B; without, each read once (a lower
// bound of the tiled cost, which choose_grid prunes with).
GridCost grid_cost(const hw::CostModel& cost, std::uint64_t m, std::uint64_t k, std::uint64_t n, hw::DType dtype,
                   const Grid& g, bool tiled) {
  const hw::Chip& chip = cost.chip();
  const hw::EngineId tiles = chip.dma_for(hw::DmaRole::tiles);
  const std::uint64_t e = hw::bytes_of(dtype);
  const std::uint64_t mc = std::min(m, round_up(ceil_div(m, g.gm), chip.tensor_unit().lanes_per_core));
  const std::uint64_t nc = std::min(n, round_up(ceil_div(n, g.gn), chip.tensor_unit().cube_n));
  const std::uint64_t kc = std::min(k, round_up(ceil_div(k, g.gk), cost.k_step(dtype)));
  const double compute = cost.cycles_ns(cost.matmul_cycles(mc, kc, nc, dtype));
  const std::uint64_t a = cost.bus_bytes(tiles, mc * kc * e, kc == k ? 0 : kc * e);
  const std::uint64_t b =
      cost.bus_bytes(tiles, kc * nc * e, b_tile_row_bytes(chip.weight_layout, k, n, kc, nc, kc * nc * e, e));
  const std::uint64_t c_elem = g.gk > 1 ? 4 : kActivationBytes;
  const std::uint64_t c = cost.bus_bytes(tiles, mc * nc * c_elem, nc == n || g.gk > 1 ? 0 : nc * c_elem);
  // The core's tiles (the lowering's, for this share): A is read once per column tile unless a
  // tile spans all of k, B once per row tile.
  std::uint64_t a_passes = 1, b_passes = 1;
  if (tiled) {
    const MatmulTiling plan = plan_matmul_tiling(cost, mc, kc, nc, dtype, kActivationBytes);
    a_passes = plan.tk >= kc ? 1 : ceil_div(nc, plan.tn);
    b_passes = ceil_div(mc, plan.tm);
  }
  const double reads = static_cast<double>(a_passes * a + b_passes * b);
  const double channel = (reads + static_cast<double>(c)) / cost.channel_gb_per_s(tiles);
  const double used = static_cast<double>(g.gm * g.gn * g.gk);
  double ddr = used * (reads + static_cast<double>(c)) / chip.resources.front().capacity_gb_per_s;
  double l2 = 0;
  if (chip.l2 && chip.l2->caches_reads) {
    // A cell row's cores share their A block and a cell column's their B block: the DDR sees each
    // once a pass (ops/matmul_lowering.cpp), the L2 carries every core's reads.
    const double once =
        static_cast<double>(g.gm * g.gk * a_passes * a + g.gn * g.gk * b_passes * b) + used * static_cast<double>(c);
    ddr = once / chip.resources.front().capacity_gb_per_s;
    l2 = used * reads / chip.l2->bandwidth_gb_per_s;
  }
  // Staged activations: A crosses the DDR once, on its way into the L2, before the cores start.
  // The DDR bytes of this core's share (the tie-break between grids of equal time).
  std::uint64_t ddr_bytes = a + b + c;
  double staging = 0;
  if (g.staged) {
    const std::uint64_t once = cost.bus_bytes(tiles, m * k * e, 0);
    ddr = (static_cast<double>(once) + used * static_cast<double>(b + c)) / chip.resources.front().capacity_gb_per_s;
    l2 = used * static_cast<double>(a) / chip.l2->bandwidth_gb_per_s;
    staging = cost.startup_ns(tiles) + chip.l2->latency_ns +
              static_cast<double>(once) / chip.resources.front().capacity_gb_per_s;
    ddr_bytes = ceil_div(once, static_cast<std::uint64_t>(used)) + b + c;
  }
  // Split-K partials stored into a software-managed L2 (partials_in_l2) leave the DDR.
  if (g.gk > 1 && chip.l2 && !chip.l2->caches_reads &&
      used * static_cast<double>(mc * nc * kAccumulatorBytes) <= static_cast<double>(chip.l2->capacity_bytes)) {
    ddr -= used * static_cast<double>(c) / chip.resources.front().capacity_gb_per_s;
    l2 += used * static_cast<double>(c) / chip.l2->bandwidth_gb_per_s;
    ddr_bytes -= c;
  }
  double t = staging + std::max({compute, channel, ddr, l2});
  if (g.gk > 1) {
    // The reduction of this core's 1/gk of the cell's columns: gk partial slices in, the sum out.
    const std::uint64_t w = ceil_div(nc, g.gk);
    const hw::EngineId cross = reduction_engine(chip);
    const std::uint64_t in = cost.bus_bytes(cross, g.gk * mc * w * 4, w * 4);
    const std::uint64_t out = cost.bus_bytes(tiles, mc * w * kActivationBytes, w == n ? 0 : w * kActivationBytes);
    t += cost.startup_ns(tiles) + cost.startup_ns(cross) + static_cast<double>(in) / cost.alone_gb_per_s(cross) +
         cost.cycles_ns(cost.vector_cycles(g.gk * mc * w, hw::DType::fp32)) + cost.transfer_alone_ns(tiles, out);
  }
  return GridCost{t, ddr_bytes};
}

// The (rows x columns x reduction) grid over `cores` cores for one [m, k] x [k, n] matmul.
Grid choose_grid(const hw::CostModel& cost, std::uint64_t cores, std::uint64_t m, std::uint64_t k, std::uint64_t n,
                 hw::DType dtype, bool may_split_k, bool stageable) {
  const hw::Chip& chip = cost.chip();
  const std::uint64_t max_gm = std::min(cores, ceil_div(m, chip.tensor_unit().lanes_per_core));
  const std::uint64_t max_gn = ceil_div(n, chip.tensor_unit().cube_n);
  const std::uint64_t max_gk = may_split_k ? std::min(cores, ceil_div(k, cost.k_step(dtype))) : 1;
  std::vector<Grid> grids;
  std::vector<GridCost> costs;  // untiled first (a lower bound), tiled where it may win
  for (std::uint64_t gk = 1; gk <= max_gk; ++gk) {
    for (std::uint64_t gm = 1; gm * gk <= cores && gm <= max_gm; ++gm) {
      for (const bool staged : {false, true}) {
        const Grid g{gm, std::min(cores / (gm * gk), max_gn), gk, staged};
        if (staged && (!stageable || g.gn == 1)) continue;  // nothing re-reads A
        grids.push_back(g);
        costs.push_back(grid_cost(cost, m, k, n, dtype, g, false));
      }
    }
  }
  // The tiled cost is at least the untiled one: plan tiles in the order of the untiled costs,
  // until the next one's lower bound is past the least tiled cost by more than the same-time
  // band (such a grid can neither be faster nor tie). Planning tiles for every grid of a large
  // matmul took a third of a prompt step's time.
  std::vector<std::size_t> order(grids.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return costs[a].ns < costs[b].ns; });
  std::vector<bool> tiled(grids.size(), false);
  double least_tiled = std::numeric_limits<double>::infinity();
  for (std::size_t i : order) {
    if (costs[i].ns > least_tiled * (1 + 4 * sim::kSameTimeFraction)) break;
    costs[i] = grid_cost(cost, m, k, n, dtype, grids[i], true);
    tiled[i] = true;
    least_tiled = std::min(least_tiled, costs[i].ns);
  }
  Grid best{1, std::min(cores, max_gn), 1};
  GridCost least{std::numeric_limits<double>::infinity(), 0};
  for (std::size_t i = 0; i < grids.size(); ++i) {
    if (!tiled[i]) continue;
    const GridCost& c = costs[i];
    // Faster wins; at the same time (both compute-bound, say), fewer DDR bytes leave more of
    // the DDR to everything else.
    const bool faster = c.ns < least.ns * (1 - sim::kSameTimeFraction);
    const bool same_time = !faster && c.ns <= least.ns * (1 + sim::kSameTimeFraction);
    if (faster || (same_time && c.bytes < least.bytes)) least = c, best = grids[i];
  }
  return best;
}

}  // namespace

bool stages_activations(const hw::Chip& chip, const MatmulShape& s, hw::DType dtype, bool operands_from_ddr) {
  if (!operands_from_ddr || !chip.l2 || chip.l2->caches_reads || s.groups != 1) return false;
  const std::uint64_t a_bytes = s.m * (s.a_row_bytes != 0 ? s.a_row_bytes : s.k * hw::bytes_of(dtype));
  return a_bytes <= chip.l2->capacity_bytes;
}

std::uint64_t split_k_partial_bytes(const std::vector<MatmulPart>& parts) {
  std::uint64_t bytes = 0;
  for (const MatmulPart& p : parts) {
    if (p.k_parts > 1) bytes += p.rows.size() * p.cols.size() * kAccumulatorBytes;
  }
  return bytes;
}

bool partials_in_l2(const hw::Chip& chip, const std::vector<MatmulPart>& parts) {
  if (!chip.l2 || chip.l2->caches_reads) return false;
  const std::uint64_t bytes = split_k_partial_bytes(parts);
  return bytes != 0 && bytes <= chip.l2->capacity_bytes;
}

LaunchShape launch_shape(const MatmulShape& shape, const std::vector<MatmulPart>& parts) {
  LaunchShape out;
  for (const MatmulPart& part : parts) {
    if (part.groups.empty() || part.rows.empty() || part.cols.empty()) continue;
    for (std::uint64_t g = part.groups.begin; g < part.groups.end; ++g) {
      const std::uint64_t row_end = std::min(part.rows.end, shape.rows_of(g));
      if (row_end > part.rows.begin) out.m = std::max(out.m, row_end - part.rows.begin);
    }
    out.k = std::max(out.k, part.k.size());
    out.n = std::max(out.n, part.cols.size());
  }
  return out;
}

std::vector<MatmulPart> split_matmul(const hw::CostModel& cost, const MatmulShape& s, hw::DType dtype,
                                     bool operands_from_ddr) {
  const hw::Chip& chip = cost.chip();
  const std::uint64_t cores = chip.cores;
  std::vector<MatmulPart> parts(cores);
  std::uint64_t most_rows = 0;
  for (std::uint64_t g = 0; g < s.groups; ++g) most_rows = std::max(most_rows, s.rows_of(g));
  if (s.groups >= cores) {
    for (std::uint64_t c = 0; c < cores; ++c) {
      parts[c] = MatmulPart{balanced_part(s.groups, cores, c), Range{0, most_rows}, Range{0, s.n}, Range{0, s.k}};
    }
    return parts;
  }
  // Fewer groups than cores: each group gets cores / groups cores and a grid of its own. Split-K
  // only for a single plain matmul (its partial sums need a reduction the lowering adds).
  const std::uint64_t per_group = cores / s.groups;
  const bool split_k = chip.matmul_split_k && operands_from_ddr && s.groups == 1 && s.out_reduce == 1 && !s.bias;
  const bool stageable = stages_activations(chip, s, dtype, operands_from_ddr);
  std::uint32_t cell = 0;
  for (std::uint64_t g = 0; g < s.groups; ++g) {
    const std::uint64_t m = s.rows_of(g);
    if (m == 0) continue;
    const Grid grid = choose_grid(cost, per_group, m, s.k, s.n, dtype, split_k, stageable);
    for (std::uint64_t i = 0; i < grid.gm * grid.gn; ++i, ++cell) {
      for (std::uint64_t j = 0; j < grid.gk; ++j) {
        MatmulPart& p = parts[g * per_group + i * grid.gk + j];
        p.groups = Range{g, g + 1};
        p.rows = balanced_part(m, grid.gm, i / grid.gn, chip.tensor_unit().lanes_per_core);
        p.cols = balanced_part(s.n, grid.gn, i % grid.gn, chip.tensor_unit().cube_n);
        p.k = balanced_part(s.k, grid.gk, j, cost.k_step(dtype));
        p.cell = cell;
        p.k_parts = static_cast<std::uint32_t>(grid.gk);
        p.k_index = static_cast<std::uint32_t>(j);
        p.a_staged = grid.staged;
      }
    }
  }
  return parts;
}

}  // namespace ops

namespace ops {

const std::vector<MatmulPart>& MatmulSplits::get(const MatmulShape& s, hw::DType dtype, bool operands_from_ddr) {
  std::vector<std::uint64_t> key{s.groups,
                                 s.m,
                                 s.k,
                                 s.n,
                                 s.a_row_bytes,
                                 s.b_col_bytes,
                                 s.out_reduce,
                                 s.b_dequant_ops,
                                 s.a_quant_ops,
                                 s.k_block_rescale,
                                 s.bias,
                                 static_cast<std::uint64_t>(dtype),
                                 operands_from_ddr};
  key.insert(key.end(), s.group_rows.begin(), s.group_rows.end());
  auto found = cache_.find(key);
  if (found == cache_.end())
    found = cache_.emplace(std::move(key), split_matmul(cost_, s, dtype, operands_from_ddr)).first;
  return found->second;
}

}  // namespace ops
