#pragma once
// Folds the command records of a run back into per-op timings, beside each op's roofline.
//
//   op_start = earliest start of the op's data or compute commands (message commands excluded:
//              a wait is not work), op_end = latest end of them; an op without commands is an
//              instant at the latest end of its producers.
//   hbm_bytes = bytes of the op's own DMA commands (every DMA transfer crosses DDR); c2c_bytes =
//              bytes of its collective-engine commands.
//   roofline: t_compute = flops / peak, t_memory = (hbm_bytes + streamed_in_bytes) / (BW * eta_m),
//             t_roof = max(t_compute, t_memory); regime = compute if t_compute > t_memory.
//   Peak: the cube peak in the op's dtype (fp8 for fp8 ops, else bf16) for matmul and fa2, the vector peak of the op's
//   arithmetic dtype for vector ops; ops without arithmetic are memory-bound by definition. Collectives: t_comm =
//   c2c_bytes / (links x link bandwidth); regime comm when it dominates. bound_by / bound_share: what the simulation
//   says limited the op, as opposed to the roofline's regime (what would limit it on an ideal machine):
//   ops/limiting_resource.hpp.
// The block's regime compares the sum of t_compute over all ops with the block's HBM bytes over
// BW * eta_m (each byte once: streamed-in bytes are already the reader's hbm_bytes).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/chip.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"
#include "sim/program.hpp"

namespace ops {

class ReplayMap;
class LoopMap;

/// host: an op during which the chip waits for its host (host_launch), no roofline of its own.
enum class Regime : std::uint8_t { compute, memory, comm, host };
std::string_view regime_name(Regime r);
/// The roofline's verdict: comm when the links take longest, else compute or memory, whichever is longer.
Regime classify(double compute_ns, double memory_ns, double comm_ns);

struct OpTiming {
  OpId id = 0;
  std::string name;
  int layer = -1;
  OpKind kind = OpKind::matmul;
  std::string shape;
  sim::Tick start = 0, end = 0;  ///< picoseconds
  std::uint64_t hbm_bytes = 0;
  std::uint64_t unique_bytes = 0;   ///< bytes it must move at least once (see unique_bytes())
  std::uint64_t c2c_bytes = 0;      ///< bytes its CDMA commands sent to other chips
  std::uint64_t message_bytes = 0;  ///< a collective's message (CollectiveShape::bytes); 0 for other kinds
  std::uint64_t flops = 0;
  std::uint64_t kv_bytes = 0;
  std::uint64_t streamed_in_bytes = 0;
  std::uint64_t peak_lmem_bytes = 0;
  std::array<std::uint64_t, hw::kMaxEngines> commands{};  ///< data/compute commands, by engine id
  /// Bytes its transfers moved, by engine and by shared resource (Chip::resources index): a
  /// transfer counts at every resource on its route (hw/routes.hpp). What energy is charged on.
  std::array<std::array<std::uint64_t, hw::kMaxResources>, hw::kMaxEngines> route_bytes{};
  std::string engines;  ///< the engines it used, in chip order: "TIU+GDMA", or "-"
  /// Its dynamic energy in picojoules (hw/energy.hpp; 0 on a chip without `energy`): the tensor
  /// engine's arithmetic (compute_energy_pj: a cube op's FLOPs / 2 MACs in its dtype, a vector
  /// op's FLOPs as element operations) and its bytes at each resource they crossed.
  double energy_pj = 0, compute_energy_pj = 0;
  double compute_ns = 0, memory_ns = 0, comm_ns = 0, roofline_ns = 0;
  Regime regime = Regime::memory;
  std::string bound_by = "-";  ///< the limiting resource over [start, end) (ops/limiting_resource.hpp)
  double bound_share = 0;      ///< how busy it was, 0..1
  /// The tensor engine's idle time at the op's boundary: on each core, from the end of the
  /// instruction before the op's first one to that first one (the barrier, the pipeline fill and
  /// the round trips that cross-op prefetch hides); the largest over the cores; 0 without any.
  sim::Tick idle_gap = 0;

  sim::Tick duration() const { return end - start; }
};

struct Timeline {
  std::vector<OpTiming> ops;                              ///< in emission (topological) order
  sim::Tick total = 0;                                    ///< end of the last command
  std::array<std::uint64_t, hw::kMaxEngines> commands{};  ///< all commands by engine id, messages included
  std::uint64_t hbm_bytes = 0, c2c_bytes = 0, flops = 0;
  double compute_ns = 0, memory_ns = 0, comm_ns = 0;
  /// The ops' dynamic energy summed, and by engine (the tensor engine's arithmetic, each DMA or
  /// collective engine's bytes): picojoules, 0 on a chip without `energy`.
  double dynamic_energy_pj = 0;
  std::array<double, hw::kMaxEngines> engine_energy_pj{};
  Regime regime = Regime::memory;
  std::string bound_by = "-";  ///< the limiting resource over the whole run
  double bound_share = 0;
  sim::Tick idle_gap = 0;  ///< the ops' idle gaps summed (the tensor engine waiting at op boundaries)
  /// Each core's tensor engine waiting at op boundaries, all its gaps (disjoint on one queue)
  /// summed, averaged over the cores (rounded down): at most `total`, unlike idle_gap, whose ops'
  /// largest gaps come from different cores and overlap in time.
  sim::Tick idle_per_core = 0;
  /// Commands the kernel ran (the rest of `commands` were replayed: api/simulation.hpp).
  std::uint64_t simulated_commands = 0;
  std::string replay_note;    ///< why nothing was replayed ("off", or what the proof lacked); empty when replayed
  std::string replayed_what;  ///< what the replayed commands are ("identical layers", ...); empty when none

  const OpTiming& op(OpKind kind) const;    ///< first op of a kind; throws if absent
  const OpTiming* find(OpKind kind) const;  ///< or nullptr
};

/// The DDR bytes an op must move at least once, whatever its tiling: a matmul's A, B and C; a
/// row op's rows in and out; a read's bytes; fa2's Q, the K/V it reads itself and its output
/// (in decode, partials per history slice). Tiling re-reads make hbm_bytes exceed it.
std::uint64_t unique_bytes(const OpGraph& graph, OpId op);

Timeline build_timeline(const OpGraph& graph, const hw::Chip& chip, const Lowered& lowered, const sim::Trace& trace);
/// The timeline of `graph` (the whole step) from a run of a reduced graph whose records `map`
/// maps to the step's (ops/layer_replay.hpp).
Timeline build_timeline(const OpGraph& graph, const hw::Chip& chip, const Lowered& lowered, const sim::Trace& trace,
                        const ReplayMap& map);
/// The same when the run's chunk loops were cut too: `map` takes its records to G' (every layer,
/// loops cut), `loops` G' to the step (ops/loop_replay.hpp).
Timeline build_timeline(const OpGraph& graph, const hw::Chip& chip, const Lowered& lowered, const sim::Trace& trace,
                        const ReplayMap& map, const LoopMap& loops);

}  // namespace ops
