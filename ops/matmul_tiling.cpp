#include "ops/matmul_tiling.hpp"

#include <fmt/format.h>

#include "hw/config_error.hpp"

#include <tuple>
#include <vector>

namespace ops {
namespace {

// The full extent x, and unit * 2^j for every such value below x.
std::vector<std::uint64_t> candidates(std::uint64_t x, std::uint64_t unit) {
  std::vector<std::uint64_t> out{x};
  for (std::uint64_t v = unit; v < x; v *= 2) out.push_back(v);
  return out;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace

MatmulTiling plan_matmul_tiling(const hw::Chip& chip, std::uint64_t m, std::uint64_t k, std::uint64_t n,
                                std::uint64_t in_bytes, std::uint64_t out_bytes) {
  const std::uint64_t k_unit = std::max<std::uint64_t>(1, chip.cube_macs(hw::DType::bf16) / chip.cube_n);
  MatmulTiling best;
  bool found = false;
  std::tuple<std::uint64_t, std::uint64_t, std::uint64_t> best_key{};
  const std::vector<std::uint64_t> tms = candidates(m, chip.lanes_per_core);
  const std::vector<std::uint64_t> tns = candidates(n, chip.cube_n);
  const std::vector<std::uint64_t> tks = candidates(k, 2 * k_unit);
  for (std::uint64_t tm : tms) {
    for (std::uint64_t tn : tns) {
      for (std::uint64_t tk : tks) {
        const std::uint64_t lmem = 2 * tm * tk * in_bytes + 2 * tk * tn * in_bytes + 2 * tm * tn * 4;
        if (lmem > chip.lmem_bytes_per_core) continue;
        const std::uint64_t a = tk == k ? m * k * in_bytes : m * k * in_bytes * ceil_div(n, tn);
        const std::uint64_t traffic = a + k * n * in_bytes * ceil_div(m, tm) + m * n * out_bytes;
        const std::uint64_t tiles = ceil_div(m, tm) * ceil_div(n, tn) * ceil_div(k, tk);
        // Smaller key wins: traffic, then tile count, then wider n (stored negated).
        const auto key = std::make_tuple(traffic, tiles, ~tn);
        if (!found || key < best_key) {
          found = true;
          best_key = key;
          best = MatmulTiling{tm, tn, tk, lmem, traffic};
        }
      }
    }
  }
  if (!found) {
    throw hw::ConfigError(fmt::format("{}: lmem_bytes_per_core: {} B cannot hold even the smallest tiles of a "
                                      "{}x{}x{} matmul",
                                      chip.source, chip.lmem_bytes_per_core, m, k, n));
  }
  return best;
}

}  // namespace ops
