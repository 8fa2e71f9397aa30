#pragma once
// How work is split over cores. Rules (documented in docs/design.md):
//   - Row-wise ops (norms, RoPE, cache writes, the fa2 combine): rows in contiguous, balanced
//     ranges, core c taking [c*R/C, (c+1)*R/C).
//   - Matmuls: heads (groups) first, one contiguous range of heads per core; when there are fewer
//     heads than cores, each head's output is split over its cores by columns (cube_n-aligned),
//     and also by rows (lane-aligned) when the estimated per-core time says that is faster.
//   - fa2 in decode and kv_cache_read: the B x kv_len history rows in balanced contiguous ranges
//     (flash decoding), so every latent byte is read by exactly one core; a combine merges the
//     partial outputs. fa2 in prefill: the B x q_len query tokens in balanced ranges.

#include <cstdint>
#include <vector>

#include "hw/cost_model.hpp"
#include "ops/op_graph.hpp"

namespace ops {

struct Range {
  std::uint64_t begin = 0, end = 0;
  std::uint64_t size() const { return end - begin; }
  bool empty() const { return end == begin; }
};

/// Part p of n balanced contiguous parts of [0, total), in units of `align` (the last part may
/// be ragged).
Range balanced_part(std::uint64_t total, std::uint64_t parts, std::uint64_t p, std::uint64_t align = 1);

/// One core's share of a matmul: `groups`, and within each of them the rows `rows` (clipped to
/// the group's own row count) and the output columns `cols`.
struct MatmulPart {
  Range groups, rows, cols;
};

/// The matmul split: one entry per core (empty ranges for idle cores).
/// `dtype`: the operands' element type (its cube rate and bytes enter the grid estimate).
std::vector<MatmulPart> split_matmul(const hw::CostModel& cost, const MatmulShape& shape, hw::DType dtype);

}  // namespace ops
