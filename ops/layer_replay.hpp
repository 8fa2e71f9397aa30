#pragma once
// Exact replay of identical layers: simulate a few layers of a run of identical ones, prove that
// the kernel's state repeats from one layer boundary to the next, and derive the records of the
// layers left out by shifting.
//
// Model. Let layers a..b (n = b - a + 1) of a step's op graph be identical: the same ops, shapes
// and edges, shifted by one layer's op count. The reduced graph keeps layers a..a+K-1 and drops
// a+K..b (D = n - K layers), wiring what followed layer b to layer a+K-1. Its program is checked
// to lower the kept layers to shifted copies (every command equal once op ids, queue ids and
// message ids are taken relative to their layer), and is run with a BoundaryWatch
// (sim/boundary_watch.hpp) on the kept layers.
//
// Let S_l be the relative kernel state at boundary B_l (time t_l) and period l the interval
// (t_l, t_{l+1}]. The kernel is deterministic and shift-invariant (integer time differences, no
// absolute time in any rule), so if S_j = S_{j+1} for some kept j, and the commands period j
// meets (from the first not completed at B_j to the head at B_{j+1}) lie inside the run, then in
// the full program every period j..b-1 is period j shifted by whole layers and Δ = t_{j+1} - t_j,
// and what follows (the rest of the run, the layers after it) is the reduced run from B_{j+1}
// on, shifted by D layers and D x Δ. So each write of a record in the reduced run maps to the
// full run: before B_j as it is; in period j to D + 1 writes, m = 0..D layers later and m x Δ
// later; after B_{j+1} to one write D layers and D x Δ later. Every full write comes from exactly
// one reduced write. When no kept pair matches, or a check fails, the caller simulates the full
// graph: replay never approximates.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/chip.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"
#include "sim/boundary_watch.hpp"
#include "sim/command.hpp"

namespace ops {

/// Layers first_layer .. first_layer + layers - 1 of a graph, identical to each other.
struct LayerRun {
  int first_layer = 0;
  std::uint64_t layers = 0;
  OpId first_op = 0;  ///< id of the first op of first_layer; each layer's ops are contiguous
  std::uint64_t ops_per_layer = 0;
};

/// The run of identical consecutive layers that replay saves most ops on, if any has more than
/// `kept` layers.
std::optional<LayerRun> find_layer_run(const OpGraph& graph, std::uint64_t kept);

struct ReducedGraph {
  OpGraph graph;
  LayerRun run;
  std::uint64_t kept = 0;     ///< K
  std::uint64_t dropped = 0;  ///< D = layers - K
};

/// The graph without layers first_layer + kept .. of the run (ids after them move down).
ReducedGraph reduce_graph(const OpGraph& graph, const LayerRun& run, std::uint64_t kept);

/// What the reduced program's queues look like around the kept layers.
struct ReplayPlan {
  sim::BoundaryWatch watch;              ///< the kept layers
  std::vector<std::uint32_t> per_layer;  ///< commands per layer, per queue
  std::vector<std::uint32_t> run_end;    ///< per queue: first command after the kept layers
  std::uint32_t messages_per_layer = 0;
  /// The first kept layer whose block repeats the next (0, or 1 when the first holds commands of
  /// the layer before the run: micro-batches).
  std::uint64_t first_repeating = 0;
  std::string refusal;  ///< why the program cannot be replayed (empty: it can)
};

ReplayPlan plan_replay(const ReducedGraph& reduced, const Lowered& lowered, const hw::Chip& chip);

/// The map from the reduced run's records to the full step's (identity when nothing is left out).
class ReplayMap {
 public:
  /// Nothing left out: every id and time as it is.
  static ReplayMap identity(const sim::Program& program, std::size_t ops);
  /// The map when boundaries of the kept layers repeat, or nullopt (with the reason in `why`).
  static std::optional<ReplayMap> match(const ReducedGraph& reduced, const ReplayPlan& plan,
                                        const sim::Program& program, const sim::Trace& trace, std::string& why);

  enum class Period : std::uint8_t { before, repeated, after };
  Period period_of(sim::Tick t) const {
    return t <= t_first_ ? Period::before : t <= t_next_ ? Period::repeated : Period::after;
  }

  std::uint64_t copies() const { return dropped_; }  ///< D
  sim::Tick delta() const { return delta_; }
  std::uint64_t ops_per_layer() const { return ops_per_layer_; }
  /// The reduced op whose commands full op v repeats.
  OpId template_op(OpId v) const;
  /// Multiplicity of reduced op r's commands in the full program (1, or 1 + D for layer j + 1).
  std::uint64_t multiplicity(OpId r) const {
    return r >= split_op_ && r < split_op_ + ops_per_layer_ ? 1 + dropped_ : 1;
  }

  /// Queue q (core x engines + engine): commands in the full program.
  std::uint64_t full_size(std::size_t q, std::uint64_t reduced_size) const {
    return reduced_size + dropped_ * per_layer_[q];
  }
  /// The record of full command f of queue q, from the reduced run's records of that queue.
  sim::CommandRecord record(std::size_t q, std::uint64_t f, const std::vector<sim::CommandRecord>& reduced) const;
  std::uint64_t first_repeated(std::size_t q) const { return split_[q]; }  ///< E_q
  std::uint64_t per_layer(std::size_t q) const { return per_layer_[q]; }   ///< P_q

 private:
  sim::Tick write(std::size_t q, std::uint64_t f, bool end, const std::vector<sim::CommandRecord>& reduced) const;

  std::uint64_t dropped_ = 0;
  std::uint64_t ops_per_layer_ = 0;
  OpId split_op_ = 0;
  sim::Tick t_first_ = ~sim::Tick{0}, t_next_ = ~sim::Tick{0}, delta_ = 0;
  std::vector<std::uint64_t> split_;                      ///< per queue: first command of layer j + 1 (E_q)
  std::vector<std::uint64_t> per_layer_;                  ///< per queue: P_q
  std::vector<std::uint64_t> repeated_lo_, repeated_hi_;  ///< per queue: commands written in period j
};

}  // namespace ops
