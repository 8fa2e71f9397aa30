#include "ops/matmul_tiling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"
#include "ops/data_formats.hpp"

namespace ops {
namespace {

using hw::ceil_div;

// ceil(x / d) rounded up to `unit` (capped at x) for d = 1..32, and unit * 2^j below x.
// Ascending, each once.
std::vector<std::uint64_t> candidates(std::uint64_t x, std::uint64_t unit) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t d = 1; d <= 32; ++d) out.push_back(std::min(x, ceil_div(ceil_div(x, d), unit) * unit));
  for (std::uint64_t v = unit; v < x; v *= 2) out.push_back(v);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Saturating arithmetic: a tile choice's traffic and tile count are comparison keys; past 2^64 a
// choice is simply the worst, never a small wrapped number.
std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}
std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}

}  // namespace

std::uint64_t b_tile_row_bytes(hw::WeightLayout layout, std::uint64_t k, std::uint64_t n, std::uint64_t depth,
                               std::uint64_t cols, std::uint64_t bytes, std::uint64_t element_bytes) {
  if (bytes == 0 || depth == 0 || cols == 0) return 0;
  if (layout == hw::WeightLayout::k_major) return depth >= k ? 0 : bytes / cols;
  return cols >= n ? 0 : cols * element_bytes;
}

MatmulTiling plan_matmul_tiling(const hw::CostModel& cost, std::uint64_t m, std::uint64_t k, std::uint64_t n,
                                hw::DType in, std::uint64_t out_bytes) {
  const hw::Chip& chip = cost.chip();
  const hw::EngineId dma = chip.dma_for(hw::DmaRole::tiles);
  const std::uint64_t in_bytes = hw::bytes_of(in);
  const std::uint64_t k_unit = std::max<std::uint64_t>(1, cost.k_step(in));
  const std::uint64_t lmem = chip.lmem_bytes_per_core;
  auto bus = [&](std::uint64_t row) { return cost.bus_bytes(dma, row); };
  MatmulTiling best;
  bool found = false;
  std::tuple<std::uint64_t, std::uint64_t, double, std::uint64_t> best_key{};
  for (std::uint64_t tm : candidates(m, chip.tensor_unit().lanes_per_core)) {
    for (std::uint64_t tn : candidates(n, chip.tensor_unit().cube_n)) {
      for (std::uint64_t c_buffers : {2u, 1u}) {
        const std::uint64_t fixed = c_buffers * tm * tn * kAccumulatorBytes;
        const std::uint64_t per_k = 2 * (tm + tn) * in_bytes;  // A and B slices, double-buffered
        if (fixed + per_k * std::min(k, k_unit) > lmem) continue;
        std::uint64_t tk = k;
        if (fixed + per_k * k > lmem) tk = (lmem - fixed) / per_k / k_unit * k_unit;
        if (tk == 0) continue;
        // Bus bytes: a tile narrower than its matrix moves strided rows, each rounded up to whole
        // DDR bursts, so narrow tiles cost more than their payload.
        const std::uint64_t a_row = tk == k ? k * in_bytes : bus(tk * in_bytes) * k / tk;
        // B as the chip lays it out (b_tile_row_bytes): a tile is one run or rows of b_row bytes;
        // over a pass B is b_lines lines (k rows of n, or n columns of k), each costing its tile
        // row's bus bytes scaled to the whole line.
        const bool k_major = chip.weight_layout == hw::WeightLayout::k_major;
        const std::uint64_t b_tile_bytes = tk * tn * in_bytes;
        const std::uint64_t b_row = b_tile_row_bytes(chip.weight_layout, k, n, tk, tn, b_tile_bytes, in_bytes);
        const std::uint64_t b_lines = k_major ? n : k;
        const std::uint64_t line_elements = k_major ? k : n, row_elements = k_major ? tk : tn;
        const std::uint64_t b_line = b_row == 0 ? line_elements * in_bytes : bus(b_row) * line_elements / row_elements;
        const std::uint64_t c_row = tn == n ? n * out_bytes : bus(tn * out_bytes) * n / tn;
        const std::uint64_t a = tk == k ? sat_mul(m, a_row) : sat_mul(sat_mul(m, a_row), ceil_div(n, tn));
        const std::uint64_t traffic =
            sat_add(sat_add(a, sat_mul(sat_mul(b_lines, b_line), ceil_div(m, tm))), sat_mul(m, c_row));
        // Smaller key wins (below): a choice moving more bytes, or as many with fewer
        // accumulators, than the best so far cannot win, and its time need not be estimated.
        if (found && (traffic > std::get<0>(best_key) ||
                      (traffic == std::get<0>(best_key) && 2 - c_buffers > std::get<1>(best_key)))) {
          continue;
        }
        const std::uint64_t tiles = sat_mul(sat_mul(ceil_div(m, tm), ceil_div(n, tn)), ceil_div(k, tk));
        // Estimated time of the software pipeline: the first tile's loads, then every tile at the
        // slower of its loads and its instruction, then the last store. It prefers tiles small
        // enough to overlap well and large enough to amortise the start-up cycles.
        const std::uint64_t b_tile = b_row == 0 ? b_tile_bytes : bus(b_row) * (b_tile_bytes / b_row);
        const double load_ns = cost.transfer_alone_ns(
            dma, static_cast<double>(tm * (tk == k ? tk * in_bytes : bus(tk * in_bytes)) + b_tile));
        const double compute_ns = cost.cycles_ns(cost.matmul_cycles(tm, tk, tn, in));
        const double store_ns = cost.stream_ns(dma, static_cast<double>(tm * tn * out_bytes));
        // Whole nanoseconds (ties within 1 ns go to the wider tile), as a double: no cast can overflow.
        const double estimate =
            std::floor(load_ns + static_cast<double>(tiles) * std::max(load_ns, compute_ns) + store_ns);
        // Smaller key wins: traffic, then two accumulators, then the estimate, then wider n.
        const auto key = std::make_tuple(traffic, 2 - c_buffers, estimate, ~tn);
        if (!found || key < best_key) {
          found = true;
          best_key = key;
          best = MatmulTiling{tm, tn, tk, c_buffers, fixed + per_k * tk, traffic};
        }
      }
    }
  }
  if (!found) {
    throw hw::ConfigError(
        fmt::format("{}: lmem_bytes_per_core: {} B cannot hold even the smallest tiles of a "
                    "{}x{}x{} matmul",
                    chip.source, lmem, m, k, n));
  }
  return best;
}

}  // namespace ops
