#pragma once
// Exact replay of fa2's chunk loops: the argument of layer replay (ops/layer_replay.hpp) with a
// row block's chunk iterations as its units.
//
// Model. In prefill every core streams its row blocks' K/V in chunks; iteration i of a block
// computes chunk i (S = Q K^T, softmax, O += P V, rescale) and queues the load of chunk
// i + buffers. With n chunks, iterations 0 .. n - T - 1 (T = buffers + 1) do the same work: the
// last `buffers` queue nothing and the last chunk may be short. When every core runs the same
// blocks, iteration i of block b is one unit of the chip's program: on each queue a run of
// consecutive commands (TIU: the iteration's instructions; the tiles engine: its load), each a
// copy of the unit before it with waited-for ids moved by one unit. The lowering then keeps K
// iterations of each such block and the tail (LoweringOptions::loop_kept, Lowered::loops), and
// the run is watched at the kept units' boundaries B_0 .. B_{K-1}. If the kernel's state at B_j
// equals the state at B_{j+1} (relative to the units, every double bit for bit) and what is in
// flight at those boundaries belongs to the kept units, the D = n - T - K left-out iterations
// are D more copies of period (t_j, t_{j+1}] of length Δ: every record written in it stands for
// D + 1 records, m = 0..D iterations and m x Δ later, and everything after it is D x Δ later.
// The cut loops of a run are its stages, in order (each must end its repeated period before the
// next one's starts); their copies belong to the loop's op, so an op's start, end, commands,
// bytes and busy time are those of the full program. When some loop's boundaries do not match,
// the caller lowers and simulates every iteration: replay never approximates.
//
// Loop replay applies when no layers are replayed (one attention block, a few layers, or a step
// whose layers differ); with both, the loops would sit inside a repeated layer's period.

#include "hw/chip.hpp"
#include "ops/layer_replay.hpp"
#include "ops/lowering.hpp"

namespace ops {

/// Iterations a cut chunk loop keeps: the pipeline of `buffers` (up to four) chunks in flight
/// settles within a few, and the matched pair must leave the last kept unit untouched.
inline constexpr std::uint64_t kLoopKeptIterations = 10;

/// One run per cut loop of `lowered` (its kept units' starts and lengths, checked to be shifted
/// copies), and the watch of all their units in order. `refused` names the first loop that cannot
/// be replayed (then nothing is).
ReplayPlan plan_loop_replay(const Lowered& lowered, const hw::Chip& chip);

}  // namespace ops
