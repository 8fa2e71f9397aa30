#pragma once
// Tile choice for one core's share of a matmul [m, k] x [k, n] (A = activations, B = weights,
// C accumulated in fp32 and written back in the output dtype).
//
// Local memory per core holds two A tiles and two B tiles (double buffering) and c_buffers fp32
// C accumulators:
//     2*tm*tk*e_in + 2*tk*tn*e_in + c_buffers*tm*tn*4 <= lmem_bytes_per_core.
// With two accumulators the next output tile computes while the last one is stored; with one,
// its first instruction waits for that store (fewer bytes of LMEM, bigger tiles, less traffic).
// Loop order: m-tiles, then n-tiles, then k-tiles innermost. DDR traffic of the core, in bus
// bytes (a tile narrower than its row-major matrix moves strided rows, each rounded up to whole
// DDR bursts):
//     A: m*k*e_in once if tk == k (the A tile stays resident across n-tiles), else once per n-tile;
//     B: k*n*e_in once per m-tile;   C: m*n*e_out once.
// B's tiles lie as the chip stores weights (hw::WeightLayout, b_tile_row_bytes below): k-major
// weights make a tile spanning all of k one contiguous run and a shorter one tn rows of tk;
// n-major weights make a tile spanning all n columns contiguous and a narrower one tk rows of tn.
// Candidates: tm = ceil(m / d) rounded up to the lanes and tn = ceil(n / d) rounded up to cube_n
// for d = 1..32, plus powers of two; tk = k if it fits, else the largest multiple of the cube's
// k step that fits. The least traffic wins; ties go to two accumulators, then fewer tiles (less
// per-instruction start-up), then wider n-tiles.

#include <cstdint>

#include "hw/cost_model.hpp"

namespace ops {

struct MatmulTiling {
  std::uint64_t tm = 0, tn = 0, tk = 0;
  std::uint64_t c_buffers = 2;
  std::uint64_t lmem_bytes = 0;  ///< footprint of the buffers above
  std::uint64_t ddr_bytes = 0;   ///< traffic the loop order implies
};

/// Bytes of each DDR row of a B (weights) tile of `depth` of B's k rows by `cols` of its n
/// columns, holding `bytes`, as the chip lays weights out; 0 when the tile is one contiguous run
/// (k_major: it spans all of k; n_major: it spans all n columns). A k-major row is a column's
/// share of the tile (its scales included); an n-major row is `cols` values of `element_bytes`
/// (a quantised format's scales lie in a matrix of their own). The one statement of B's layout:
/// the tiling, the work split's estimate and the lowering's loads all ask it.
std::uint64_t b_tile_row_bytes(hw::WeightLayout layout, std::uint64_t k, std::uint64_t n, std::uint64_t depth,
                               std::uint64_t cols, std::uint64_t bytes, std::uint64_t element_bytes);

/// Tiles for operands in `in` (A and B) and an output of `out_bytes` per element; times come from
/// the cost model (instructions in `in`, transfers alone on the chip's tiles engine).
MatmulTiling plan_matmul_tiling(const hw::CostModel& cost, std::uint64_t m, std::uint64_t k, std::uint64_t n,
                                hw::DType in, std::uint64_t out_bytes);

}  // namespace ops
