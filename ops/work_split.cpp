#include "ops/work_split.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace ops {

Range balanced_part(std::uint64_t total, std::uint64_t parts, std::uint64_t p, std::uint64_t align) {
  const std::uint64_t units = (total + align - 1) / align;
  const std::uint64_t u0 = units * p / parts;
  const std::uint64_t u1 = units * (p + 1) / parts;
  return Range{std::min(total, u0 * align), std::min(total, u1 * align)};
}

namespace {

// The (rows x columns) grid over `cores` cores for one [m, k] x [k, n] matmul: the per-core time
// estimate (the slower of the core's cube work and its GDMA traffic) decides; ties keep the
// column split.
std::pair<std::uint64_t, std::uint64_t> choose_grid(const hw::CostModel& cost, std::uint64_t cores, std::uint64_t m,
                                                    std::uint64_t k, std::uint64_t n, hw::DType dtype) {
  const hw::Chip& chip = cost.chip();
  const std::uint64_t lanes = chip.lanes_per_core;
  const std::uint64_t max_gm = (m + lanes - 1) / lanes;
  const std::uint64_t max_gn = (n + chip.cube_n - 1) / chip.cube_n;
  const double flops_per_s = cost.core_cube_peak_flops(dtype);
  const double bytes_per_s = cost.alone_gb_per_s(chip.dma_for(hw::DmaRole::tiles)) * 1e9;
  const double elem_bytes = static_cast<double>(hw::bytes_of(dtype));
  std::uint64_t best_gm = 1, best_gn = std::min(cores, max_gn);
  double best_time = std::numeric_limits<double>::infinity();
  for (std::uint64_t gm = 1; gm <= std::min(cores, max_gm); ++gm) {
    const std::uint64_t gn = std::min(cores / gm, max_gn);
    const double mc = static_cast<double>((m + gm - 1) / gm);
    const double nc = static_cast<double>((n + gn - 1) / gn);
    const double kd = static_cast<double>(k);
    const double t =
        std::max(2.0 * mc * nc * kd / flops_per_s, (mc * kd + kd * nc + mc * nc) * elem_bytes / bytes_per_s);
    if (t < best_time * (1 - 1e-9)) {
      best_time = t;
      best_gm = gm;
      best_gn = gn;
    }
  }
  return {best_gm, best_gn};
}

}  // namespace

std::vector<MatmulPart> split_matmul(const hw::CostModel& cost, const MatmulShape& s, hw::DType dtype) {
  const hw::Chip& chip = cost.chip();
  const std::uint64_t cores = chip.cores;
  std::vector<MatmulPart> parts(cores);
  std::uint64_t most_rows = 0;
  for (std::uint64_t g = 0; g < s.groups; ++g) most_rows = std::max(most_rows, s.rows_of(g));
  if (s.groups >= cores) {
    for (std::uint64_t c = 0; c < cores; ++c) {
      parts[c] = MatmulPart{balanced_part(s.groups, cores, c), Range{0, most_rows}, Range{0, s.n}};
    }
    return parts;
  }
  // Fewer groups than cores: each group gets cores / groups cores and a grid of its own.
  const std::uint64_t per_group = cores / s.groups;
  for (std::uint64_t g = 0; g < s.groups; ++g) {
    const std::uint64_t m = s.rows_of(g);
    if (m == 0) continue;
    const auto [gm, gn] = choose_grid(cost, per_group, m, s.k, s.n, dtype);
    for (std::uint64_t i = 0; i < gm * gn; ++i) {
      parts[g * per_group + i] = MatmulPart{Range{g, g + 1}, balanced_part(m, gm, i / gn, chip.lanes_per_core),
                                            balanced_part(s.n, gn, i % gn, chip.cube_n)};
    }
  }
  return parts;
}

}  // namespace ops
