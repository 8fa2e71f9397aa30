#pragma once
// How work is split over cores. Rules (documented in docs/design.md):
//   - Row-wise ops (norms, RoPE, cache writes, the fa2 combine): rows in contiguous, balanced
//     ranges, core c taking [c*R/C, (c+1)*R/C).
//   - Matmuls: heads (groups) first, one contiguous range of heads per core; when there are fewer
//     heads than cores, each head is split over its cores by a grid of gm row ranges
//     (lane-aligned) x gn column ranges (cube_n-aligned) x gk reduction ranges (split-K, aligned
//     to the cube's k step), chosen by the estimate below. With gk > 1 the gk cores of a cell
//     (same rows and columns) each store an fp32 partial sum, meet at a barrier, and each reduces
//     1/gk of the cell's columns over the gk partials (loads on the cross-core DMA engine, vector
//     adds, the output store).
//     Estimate of a grid, per core, from the cost model: the slower of its cube time
//     (matmul_cycles of its mc x kc x nc share), its tiles-engine channel time and its share of
//     the DDR time (every used core's bus bytes over the DDR capacity; with an L2 that caches
//     reads, each A block once per cell row and each B block once per cell column, and the L2's
//     time for every core's A and B); bus bytes count A
//     (mc rows of kc), B (kc rows of nc), C (mc rows of nc, fp32 partials when gk > 1) with each
//     strided row's bursts and access overhead (hw/cost_model.hpp), A once per column tile of the
//     core's tiling (ops/matmul_tiling.hpp) unless a tile spans all of kc, B once per row tile
//     (H100, [480, 4096] x [4096, 24576]: 1 x 132 gives each SM two row tiles and reads the weights
//     twice, 262 us simulated against 165 us on 2 x 66, which the estimate without the passes
//     ranked first); the tiles are planned only for the grids whose estimate with every operand
//     read once (a lower bound) could still win or tie; plus, for gk > 1, the
//     reduction: two transfer start-ups for the barrier, the partial slices' loads, the adds and
//     the store. The fastest grid wins; at equal times the one moving fewer bytes, then fewer
//     reduction parts, then fewer row parts.
//     Staged activations (stages_activations): on a chip whose L2 is a software-managed SRAM
//     (l2.caches_reads false), a single matmul whose A comes from DDR and fits the L2 has it
//     staged there once when the grid has several column parts (gn > 1: cores re-read one A
//     block) and the estimate says so (each such grid is estimated staged and not): the active cores each copy 1/P of A
//     into the L2, meet at a barrier, and load every A tile from the L2. The estimate then counts A once against the
//     DDR (m rows of k), every core's A tiles against the L2, and the copy (a start-up, the L2's latency and A over the
//     DDR) before the cores start; its DDR bytes, for the tie-break, are A once and B and C.
//     Without it a decode step's skinny projections (128 rows against 7,168 k on 64 cores) read
//     their activations 3-4 times from DDR.
//   - fa2 in decode and kv_cache_read: the B x kv_len history rows in contiguous ranges (flash
//     decoding; MLA's of equal tokens, GQA's of equal cost, ops/attention_plan.hpp), so every
//     latent byte is read by exactly one core; a combine merges the partial outputs. fa2 in prefill: the B x q_len
//     query tokens in balanced ranges; causal prefill: in 2C ranges, core c taking ranges c and 2C - 1 - c (an early
//     and a late one, so that the keys each core streams balance).

#include <cstdint>
#include <map>
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
/// the group's own row count), the output columns `cols` and the reduction range `k`. With
/// split-K (k_parts > 1) the k_parts cores of cell `cell` share rows and cols; this core is
/// k_index among them and reduces the columns reduce_cols() of the cell.
struct MatmulPart {
  Range groups, rows, cols, k;
  std::uint32_t cell = 0;
  std::uint32_t k_parts = 1, k_index = 0;
  bool a_staged = false;  ///< A read from the L2, where the active cores staged it (stages_activations)
  /// Columns (absolute) whose partial sums this core adds up after the barrier.
  Range reduce_cols() const;
};

/// The engine split-K's reduction loads the partials on: the cross-core engine when the tensor
/// engine may wait on it (the chip's rule), else the tiles engine.
hw::EngineId reduction_engine(const hw::Chip& chip);

/// Whether a matmul's A may be staged in the chip's L2 (the header): a software-managed L2 that
/// holds all of A, one group, and A read from DDR (`operands_from_ddr`: no producer streams it).
/// The split estimates each grid with several column parts both ways and keeps the better
/// (MatmulPart::a_staged); the lowering follows the split.
bool stages_activations(const hw::Chip& chip, const MatmulShape& shape, hw::DType dtype, bool operands_from_ddr);

/// Bytes of the split's fp32 partial sums (split-K: every core of a cell with k_parts > 1 stores
/// its rows x cols); 0 without split-K.
std::uint64_t split_k_partial_bytes(const std::vector<MatmulPart>& parts);

/// Whether the split's fp32 partial sums (split-K) are stored into the chip's L2 instead of DDR:
/// a software-managed L2 that holds all of them (the reduction then reads them from it).
bool partials_in_l2(const hw::Chip& chip, const std::vector<MatmulPart>& parts);

/// The share one tiling is planned for: the split's largest (most rows of a group, deepest k, most
/// columns). A matmul is one launch, its tile shape the same on every core (a GEMM kernel's CTAs
/// share one configuration): a ragged share walks the same blocks as a full one, fewer or
/// narrower at its edge, so a block two cores read is one block for the L2. The lowering and the
/// work estimate both tile by it.
struct LaunchShape {
  std::uint64_t m = 0, k = 0, n = 0;
};
LaunchShape launch_shape(const MatmulShape& shape, const std::vector<MatmulPart>& parts);

/// The matmul split: one entry per core (empty ranges for idle cores).
/// `dtype`: the operands' element type (its cube rate and bytes enter the grid estimate).
/// `operands_from_ddr`: false when an operand streams from another op (the split must keep
/// whole k, and A is not staged).
std::vector<MatmulPart> split_matmul(const hw::CostModel& cost, const MatmulShape& shape, hw::DType dtype,
                                     bool operands_from_ddr = true);

/// split_matmul once per distinct (shape, dtype, operands_from_ddr): a step's layers repeat the
/// same matmuls, and the grid search is the costliest part of lowering one.
class MatmulSplits {
 public:
  explicit MatmulSplits(const hw::CostModel& cost) : cost_(cost) {}
  const std::vector<MatmulPart>& get(const MatmulShape& shape, hw::DType dtype, bool operands_from_ddr = true);

 private:
  const hw::CostModel& cost_;
  std::map<std::vector<std::uint64_t>, std::vector<MatmulPart>> cache_;
};

}  // namespace ops
