#pragma once
// Exact replay of fa2's chunk loops: the argument of layer replay (ops/layer_replay.hpp) with a
// row block's chunk iterations as its units.
//
// Model. In prefill every core streams its row blocks' K/V in chunks; iteration i of a block
// computes chunk i (S = Q K^T, softmax, O += P V, rescale) and queues the load of chunk
// i + buffers. With n chunks, iterations 0 .. n - T - 1 (T = buffers + 1) do the same work: the
// last `buffers` queue nothing and the last chunk may be short. When every core runs the same
// blocks, iteration i of block b is one run of consecutive commands on every queue of the chip
// (TIU: the iteration's instructions; the tiles engine: its load), each a copy of the one before
// it with waited-for ids moved by one iteration. The lowering keeps at least K iterations of each
// such block and its tail, leaving out a multiple of 12 just before the tail
// (LoweringOptions::loop_kept, Lowered::loops), and the run is watched at every kept iteration.
// A unit is p consecutive iterations (p = 1..4, the first that matches), its boundaries
// B_0 .. B_{K/p-1} every p-th iteration's. If the kernel's state at B_j
// equals the state at B_{j+1} (relative to the units, every double bit for bit) and what is in
// flight at those boundaries belongs to the kept units, the D = n - T - K left-out iterations
// are D more copies of period (t_j, t_{j+1}] of length Δ: every record written in it stands for
// D + 1 records, m = 0..D iterations and m x Δ later, and everything after it is D x Δ later.
// The cut loops of a run are its stages, in order (each must end its repeated period before the
// next one's starts); their copies belong to the loop's op, so an op's start, end, commands,
// bytes and busy time are those of the full program. When some loop's boundaries do not match,
// the caller lowers and simulates every iteration: replay never approximates.
//
// With layer replay. The simulated program then keeps a few layers, each with its loops cut.
// Layer replay maps its records to G', the whole step with cut loops (a program like any other);
// a loop simulated inside a layer's repeated period is, in G', one loop per copy of that layer,
// its boundaries' states the same (shifted), so its stage holds for each. The loops' stages, in
// G' coordinates, then map G' to the whole step (LoopMap). A loop must lie in one interval of the
// layer map (it may not run across a replayed layer's boundary), else nothing is cut.

#include <optional>
#include <string>
#include <vector>

#include "hw/chip.hpp"
#include "ops/layer_replay.hpp"
#include "ops/lowering.hpp"

namespace ops {

/// Iterations a cut chunk loop keeps at least: the pipeline of `buffers` (up to four) chunks in
/// flight settles within a few, and the matched pair must leave the last kept unit untouched.
inline constexpr std::uint64_t kLoopKeptIterations = 10;
/// The state may repeat every p iterations, p = 1..kMaxLoopPeriod (a chip whose DMA and tensor
/// phases alternate repeats every two): a unit is then p iterations, and the iterations left out
/// are a multiple of every such p.
inline constexpr std::uint64_t kMaxLoopPeriod = 4;
inline constexpr std::uint64_t kLoopPeriodMultiple = 12;  // 1, 2, 3 and 4 divide it

/// One run per cut loop of `lowered` (its kept units' starts and lengths, checked to be shifted
/// copies), and the watch of all their units in order. `refused` names the first loop that cannot
/// be replayed (then nothing is).
ReplayPlan plan_loop_replay(const Lowered& lowered, const hw::Chip& chip);

/// A cut loop's stage in the simulated run's coordinates, and the span of its commands' records
/// (from its first kept unit's boundary to its last command's end).
struct LoopStage {
  ReplayStage stage;
  sim::Tick span_begin = 0, span_end = 0;
};

/// Each cut loop's stage when its kept iterations repeat, or nullopt (`why`, and the loop in
/// `failed`). `boundaries`: the watch of `plan` (its K units per loop, in order).
std::optional<std::vector<LoopStage>> match_loops(const std::vector<LoweredLoop>& loops, const ReplayPlan& plan,
                                                  const sim::Program& program, const sim::Trace& trace,
                                                  const std::vector<Boundary>& boundaries, std::string& why,
                                                  std::size_t& failed);

/// The map from G' (every layer, loops cut) to the whole step, and the copies each simulated
/// command of a cut loop stands for.
class LoopMap {
 public:
  /// Nothing cut.
  LoopMap() = default;
  /// The loops' stages seen through the layer map (identity: G' is the simulated program), or
  /// nullopt with the reason.
  static std::optional<LoopMap> build(const std::vector<LoopStage>& simulated, const ReplayMap& layers,
                                      std::size_t queues, std::string& why);

  /// Whether some loop was cut (else every time and count is the simulated one's).
  bool cut() const { return !stages_.empty(); }
  /// Simulated commands [begin, end) of a queue that stand for 1 + copies commands of their op.
  struct Copies {
    std::uint64_t begin = 0, end = 0, copies = 0;
  };
  const std::vector<Copies>& copies(std::size_t q) const { return q < copies_.size() ? copies_[q] : none_; }
  /// Commands of queue q the cut loops left out.
  std::uint64_t added(std::size_t q) const { return q < added_.size() ? added_[q] : 0; }
  /// The whole step's times of a write at time t of G': the first copy's and the last copy's
  /// (the same outside every repeated period). Both ascend with t.
  sim::Tick earliest(sim::Tick t) const { return stages_.empty() ? t : earliest_cut(t); }
  sim::Tick latest(sim::Tick t) const { return stages_.empty() ? t : latest_cut(t); }
  /// The time of a write at t of G' command c of queue q, when c is no command of a unit after a
  /// matched boundary (those stand for several): in a repeated period its own (m = 0) when c
  /// comes before the period's next unit, else the last copy's.
  sim::Tick time(std::size_t q, std::uint64_t c, sim::Tick t) const { return stages_.empty() ? t : time_cut(q, c, t); }

 private:
  std::size_t stage_at(sim::Tick t) const;  ///< the first stage whose period ends at or after t
  sim::Tick earliest_cut(sim::Tick t) const;
  sim::Tick latest_cut(sim::Tick t) const;
  sim::Tick time_cut(std::size_t q, std::uint64_t c, sim::Tick t) const;

  std::vector<ReplayStage> stages_;   ///< in G' coordinates, in time order
  std::vector<sim::Tick> shift_;      ///< [s]: what stages 0..s-1 left out, in time
  std::vector<std::uint64_t> added_;  ///< per queue
  std::vector<std::vector<Copies>> copies_;
  std::vector<Copies> none_;
};

}  // namespace ops
