#pragma once
// Exact replay of identical layers: simulate a few layers of each run of identical ones, prove
// that the kernel's state repeats from one layer boundary to the next, and derive the records of
// the layers left out by shifting.
//
// Model. A unit is a block of p consecutive layers (p = 1, or 2 for alternating dense and MoE
// layers, up to kMaxReplayPeriod). Let units a..b (n = b - a + 1) of a step's op graph be
// identical: the same ops, shapes and edges, shifted by one unit's op count. The reduced graph
// keeps units a..a+K-1 and drops a+K..b (D = n - K units), wiring what followed unit b to unit
// a+K-1. Its program is checked to lower the kept units to shifted copies (every command equal
// once op ids, queue ids and message ids are taken relative to their unit), and is run with a
// BoundaryRecorder (ops/boundary_recorder.hpp), a kernel observer, on the kept units.
//
// Let S_l be the relative kernel state at boundary B_l (time t_l) and period l the interval
// (t_l, t_{l+1}]. The kernel is deterministic and shift-invariant (integer time differences, no
// absolute time in any rule), so if S_j = S_{j+1} for some kept j, and the commands period j
// meets (from the first not completed at B_j to the head at B_{j+1}) lie inside the run, then in
// the full program every period j..b-1 is period j shifted by whole units and Δ = t_{j+1} - t_j,
// and what follows (the rest of the run, the layers after it) is the reduced run from B_{j+1}
// on, shifted by D units and D x Δ. So each write of a record in the reduced run maps to the
// full run: before B_j as it is; in period j to D + 1 writes, m = 0..D units later and m x Δ
// later; after B_{j+1} to one write D units and D x Δ later. Every full write comes from exactly
// one reduced write.
//
// Several runs (a dense layer in the middle of MoE ones; an expert load that makes a layer
// differ) compose. Reduce runs r = 0..R-1 (in layer order) one after the other: G_0 is the step,
// G_{r+1} is G_r with run r reduced, G_R is simulated. Stage r maps G_{r+1}'s records to G_r's by
// the argument above. Until a command past run r+1's kept units issues, G_{r+1} and G_{r+2} evolve
// alike, so run r's boundaries seen in G_R are G_{r+1}'s whenever t_{j+1} of run r is no later
// than B_j of run r + 1 (required): the simulated times then fall into 2R + 1 intervals (before
// run 0's period, in it, between the periods of runs 0 and 1, ..., after run R-1's), each
// written once or D_r + 1 times, shifted by the runs before it. When no kept pair matches, or a
// check fails, the caller simulates the full graph: replay never approximates.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/chip.hpp"
#include "ops/boundary_recorder.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"
#include "sim/program.hpp"

namespace ops {

/// Longest block of layers a run may repeat (a unit), and most runs one step reduces: each run
/// adds a stage to the map, and a record of the first run's layers is looked up through all.
inline constexpr std::uint64_t kMaxReplayPeriod = 4;
inline constexpr std::size_t kMaxReplayRuns = 4;

/// Units first_layer / period .. of a graph, each `period` consecutive layers, identical to each
/// other.
struct LayerRun {
  int first_layer = 0;
  std::uint64_t period = 1;  ///< layers per unit
  std::uint64_t units = 0;
  OpId first_op = 0;  ///< id of the first op of first_layer; each layer's ops are contiguous
  std::uint64_t ops_per_unit = 0;
  std::uint64_t saved_ops(std::uint64_t kept) const { return units > kept ? (units - kept) * ops_per_unit : 0; }
};

/// The runs of identical consecutive units with more than `kept` units each, in layer order, at
/// most kMaxReplayRuns (those that save most ops). Scanning from the first layer, each run is the
/// period's longest there that saves most (the shorter period on a tie).
std::vector<LayerRun> find_layer_runs(const OpGraph& graph, std::uint64_t kept);

struct ReducedGraph {
  OpGraph graph;
  std::vector<LayerRun> runs;  ///< in the full graph's op ids
  std::uint64_t kept = 0;      ///< K units of each run
  /// First op of run r in the reduced graph (the runs before it left out their D units).
  std::vector<OpId> first_op;
  std::uint64_t dropped(std::size_t r) const { return runs[r].units - kept; }  ///< D_r
};

/// The graph without units kept .. of each run (ids after them move down).
ReducedGraph reduce_graph(const OpGraph& graph, const std::vector<LayerRun>& runs, std::uint64_t kept);

/// What the reduced program's queues look like around one run's kept units.
struct RunPlan {
  std::vector<std::vector<std::uint32_t>> starts;  ///< [kept unit][queue]
  std::vector<std::uint32_t> message_base;         ///< [kept unit]
  std::int64_t message_lo = 0, message_hi = 0;     ///< message ids a unit's commands name, relative to its base
  std::vector<std::uint32_t> per_layer;            ///< commands per unit, per queue
  std::vector<std::uint32_t> run_end;              ///< per queue: first command after the kept units
  std::uint32_t messages_per_layer = 0;
  /// The first kept unit whose block repeats the next (0, or 1 when the first holds commands of
  /// the unit before the run: micro-batches).
  std::uint64_t first_repeating = 0;
};

struct ReplayPlan {
  std::vector<RunPlan> runs;
  BoundaryWatch watch;  ///< every run's kept units, in order
  static constexpr std::size_t kNone = ~std::size_t{0};
  std::size_t refused = kNone;  ///< the run whose program cannot be replayed, if any
  std::string refusal;          ///< why (empty: every run can)
};

ReplayPlan plan_replay(const ReducedGraph& reduced, const Lowered& lowered, const hw::Chip& chip);

/// Command c of queue q a shifted copy of p, the command one unit before it: the same command
/// once op ids move by `ops_per_unit`, message ids by the plan's messages per unit, waited-for
/// ids by the waited queue's per_layer.
bool repeats_shifted(const RunPlan& plan, std::size_t engines, std::uint64_t ops_per_unit, std::size_t q,
                     const sim::Command& c, const sim::Command& p);
/// The next `count` commands of `reader` into `into` (what it held is dropped); the reader moves
/// on by as many. The plans compare each kept unit with the one before it, each decoded once.
inline void read_unit(sim::CommandQueue::Reader& reader, std::uint32_t count, std::vector<sim::Command>& into) {
  into.clear();
  for (std::uint32_t i = 0; i < count; ++i, reader.next()) into.push_back(*reader);
}

/// One run's map from G_{r+1} to G_r (the model above); a chunk loop's too (ops/loop_replay.hpp).
struct ReplayStage {
  std::uint64_t dropped = 0;
  std::uint64_t ops_per_unit = 0;
  OpId split_op = 0;
  sim::Tick t_first = 0, t_next = 0, delta = 0;
  std::vector<std::uint64_t> split;                     ///< per queue: first command of unit j + 1 (E_q)
  std::vector<std::uint64_t> per_layer;                 ///< per queue: P_q
  std::vector<std::uint64_t> repeated_lo, repeated_hi;  ///< per queue: commands written in period j
  enum class Period : std::uint8_t { before, repeated, after };
  Period period_of(sim::Tick t) const {
    return t <= t_first ? Period::before : t <= t_next ? Period::repeated : Period::after;
  }
};
/// What a run is, for finding its stage.
struct StageShape {
  std::uint64_t dropped = 0, ops_per_unit = 0;
  OpId first_op = 0;
  sim::Tick next_first = ~sim::Tick{0};  ///< the next run's repeated period starts there
  bool scan_run_only = false;            ///< only the run's commands can be written in its period
  /// b[w] and b[w + 1] are this many watched boundaries apart (loop replay's period p).
  std::size_t boundaries_apart = 1;
  std::string unit = "layer", units = "layers", overlap;
};
/// The stage of one run from its K kept units' boundaries b[0..K), or nullopt: `why`, and
/// `fatal` when no later pair can help.
std::optional<ReplayStage> find_replay_stage(const RunPlan& run, const Boundary* b, std::uint64_t K,
                                             const StageShape& shape, const sim::Trace& trace, std::size_t engines,
                                             std::string& why, bool& fatal);

/// The map from the reduced run's records to the full step's (identity when nothing is left out).
class ReplayMap {
 public:
  /// Nothing left out: every id and time as it is.
  static ReplayMap identity();
  /// The map when boundaries of every run's kept units repeat, or nullopt (with the reason in
  /// `why` and the run that did not match in `failed`).
  static std::optional<ReplayMap> match(const ReducedGraph& reduced, const ReplayPlan& plan,
                                        const sim::Program& program, const sim::Trace& trace,
                                        const std::vector<Boundary>& boundaries, std::string& why, std::size_t& failed);

  /// The simulated times in order: a write in interval k (its time at most `last`) stands for
  /// 1 + copies writes, m = 0..copies: time + shift + m x step, op + op_shift + m x op_step.
  struct Interval {
    sim::Tick last = ~sim::Tick{0};
    sim::Tick shift = 0;
    OpId op_shift = 0;
    std::uint64_t copies = 0;
    sim::Tick step = 0;
    OpId op_step = 0;
    sim::Tick last_shift() const { return shift + copies * step; }
  };
  const std::vector<Interval>& intervals() const { return intervals_; }
  std::size_t interval_of(sim::Tick t) const {
    // The first interval whose last time is at or past t (they ascend; the last is unbounded):
    // a few, in order, unless chunk loops made them many.
    if (intervals_.size() <= 16) {
      std::size_t k = 0;
      while (t > intervals_[k].last) ++k;
      return k;
    }
    return static_cast<std::size_t>(std::lower_bound(intervals_.begin(), intervals_.end(), t,
                                                     [](const Interval& k, sim::Tick time) { return k.last < time; }) -
                                    intervals_.begin());
  }

  /// The reduced op whose commands full op v repeats.
  OpId template_op(OpId v) const;
  /// Multiplicity of reduced op r's commands in the full program (1, or 1 + D_r for the unit
  /// after run r's matched boundary).
  std::uint64_t multiplicity(OpId r) const;
  /// Queue q (core x engines + engine): commands in the full program.
  std::uint64_t full_size(std::size_t q, std::uint64_t reduced_size) const;
  /// The start, or the end, of full command f of queue q, from the reduced run's records of that
  /// queue.
  sim::Tick start(std::size_t q, std::uint64_t f, const sim::RecordQueue& reduced) const {
    return stages_.empty() ? reduced[f].start : write(0, q, f, false, reduced);
  }
  sim::Tick end(std::size_t q, std::uint64_t f, const sim::RecordQueue& reduced) const {
    return stages_.empty() ? reduced[f].end : write(0, q, f, true, reduced);
  }
  /// Queue q's command index shift of copy m of a write in interval k (what the stages before it
  /// left out, and m units of the stage whose period it is).
  std::uint64_t index_shift(std::size_t k, std::size_t q, std::uint64_t m) const;
  /// The full commands that reduced command i of queue q (of op `op`) stands for, by index:
  /// visit(index shift, full op) for each.
  template <class Visit>
  void for_each_copy(std::size_t q, std::uint64_t i, OpId op, Visit&& visit) const {
    copies_from(stages_.size(), q, i, 0, op, visit);
  }

 private:
  using Stage = ReplayStage;
  sim::Tick write(std::size_t s, std::size_t q, std::uint64_t f, bool end, const sim::RecordQueue& reduced) const;
  std::uint64_t size_at(std::size_t s, std::size_t q, std::uint64_t reduced_size) const;
  template <class Visit>
  void copies_from(std::size_t s, std::size_t q, std::uint64_t i, std::uint64_t shift, OpId op, Visit& visit) const {
    if (s == 0) {
      visit(shift, op);
      return;
    }
    const Stage& st = stages_[s - 1];
    const std::uint64_t E = st.split[q], P = st.per_layer[q];
    if (i < E) {
      copies_from(s - 1, q, i, shift, op, visit);
    } else if (i < E + P) {
      for (std::uint64_t m = 0; m <= st.dropped; ++m) {
        copies_from(s - 1, q, i + m * P, shift + m * P, op + m * st.ops_per_unit, visit);
      }
    } else {
      copies_from(s - 1, q, i + st.dropped * P, shift + st.dropped * P, op + st.dropped * st.ops_per_unit, visit);
    }
  }
  void add_intervals();

  std::vector<Stage> stages_;  ///< run 0 first
  std::vector<Interval> intervals_{Interval{}};
};

}  // namespace ops
