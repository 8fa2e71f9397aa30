#pragma once
// Internal to the lowering: the state one lowering run shares between op lowerings, and the
// per-core command emitter every command goes through.
//
// Entry waits. An op's first command on each engine of a core carries the op's entry waits:
//   - a `data` edge (or a barrier the attention unit asks for): every core must have finished the
//     producer: wait_msg on the tensor engine, then every other engine's first command of the
//     op waits on that tensor id;
//   - an `order` edge: the op's first command on each non-tensor engine waits on the producer's
//     last tensor command on the core;
//   - a `same_core` edge: the op's first tensor command waits on the producer's last command of
//     every DMA engine on the core.
// Every wait a command names must be allowed by the chip's rule (EngineSpec::waits_on); a
// lowering that needs one the chip forbids gets a ConfigError naming the engines.

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "hw/chip.hpp"
#include "hw/cost_model.hpp"
#include "ops/attention_plan.hpp"
#include "ops/lowering.hpp"
#include "ops/matmul_tiling.hpp"
#include "ops/op_graph.hpp"
#include "ops/work_split.hpp"
#include "sim/program.hpp"

namespace ops::detail {

using hw::EngineId;

/// A command once emitted: its engine and 1-based id there (id 0: nothing to wait for).
struct CmdRef {
  EngineId engine = 0;
  std::uint32_t id = 0;
};

/// Last command id per engine of one op on one core (0 = none).
using LastIds = std::array<std::uint32_t, hw::kMaxEngines>;

struct AttentionUnit;

class LoweringContext {
 public:
  LoweringContext(const OpGraph& g, const hw::Chip& c, const LoweringOptions& o, Lowered& l);
  ~LoweringContext();

  const OpGraph& graph;
  const hw::Chip& chip;
  const hw::CostModel cost;
  MatmulSplits splits{cost};  ///< each distinct matmul's core split, computed once
  const LoweringOptions& options;
  Lowered& out;

  // The engines the lowering uses, by role (hw/engine.hpp).
  EngineId tensor() const { return chip.tensor_engine(); }
  EngineId tiles() const { return tiles_; }
  /// The history-read engine options.kv_read_engine names (default: the chip's first kv_stream
  /// engine), and whether it keeps the history resident (kv_resident) rather than streaming it.
  EngineId kv_engine() const { return kv_engine_; }
  bool kv_resident() const { return kv_resident_; }

  /// The tiling of an m x k x n matmul part (ops/matmul_tiling.hpp), planned once a run.
  const MatmulTiling& tiling(std::uint64_t m, std::uint64_t k, std::uint64_t n, hw::DType dtype,
                             std::uint64_t out_bytes) {
    const auto key = std::make_tuple(m, k, n, dtype, out_bytes);
    auto found = tilings_.find(key);
    if (found == tilings_.end()) {
      found = tilings_.emplace(key, plan_matmul_tiling(cost, m, k, n, dtype, out_bytes)).first;
    }
    return found->second;
  }

  /// The attention plan of a shape, computed once for every layer that shares it.
  const AttentionPlan& attention_plan(const AttentionShape& shape, bool resident, bool partials_may_use_l2,
                                      bool tile_rows);

  /// The kv_cache_read / fa2 / fa2_combine unit `op` belongs to (built once, on first use).
  AttentionUnit& attention_unit(OpId op);

  /// The producer `op` must wait for on every core beyond its `data` edges, if any: fa2 waits
  /// for the whole history read when its attention unit reads it resident or gathered.
  std::optional<OpId> unit_barrier(OpId op);

  /// Entry waits of `op` on `core` (see above): emits its barrier waits on the tensor engine and
  /// records which ids its first command on each engine must name. Idempotent.
  void enter_op(OpId op, std::uint32_t core);

  /// Appends `cmd` to `engine`'s queue on `core`, attributed to `as`, waiting on `after` plus the
  /// op's entry waits on its first command on that engine; every wait is checked against the
  /// chip's rule. A tensor command with more waits than a command holds is preceded by fences
  /// carrying the rest.
  CmdRef push(OpId as, std::uint32_t core, EngineId engine, sim::Command cmd, std::initializer_list<CmdRef> after);

  /// Like push, for a command that depends on nothing the op's producers make (a weight tile
  /// prefetched while they finish): it carries no entry waits, which the op's next command on
  /// the engine then carries (the queue is in order, so everything after it waits as usual).
  /// It does wait for the core's latest host launch: a program loads nothing before it is launched.
  CmdRef push_ahead(OpId as, std::uint32_t core, EngineId engine, sim::Command cmd);

  /// Whether `op` may load its weights before its producers finish: prefetch is on, every
  /// producer is a barrier (data edge) and `bytes` fit local memory beside the largest
  /// producer's tiles.
  bool may_prefetch(OpId op, std::uint64_t bytes) const;

  /// After an op with barrier consumers: every core announces that the op's commands there have
  /// completed (a send_msg on the tensor engine naming the op's last ids on the other engines).
  void emit_barrier_sends(OpId op);

  /// Whether some consumer waits for `op` on every core (its message id is given with its sends).
  bool has_message(OpId op) const { return message_[op] != 0; }
  void assign_messages();
  const LastIds& last(OpId op, std::uint32_t core) const { return last_[op][core]; }

 private:
  /// Queues `cmd` (of op cmd.op) on `engine` of `core`, noting where its op starts there
  /// (Lowered::first_command) and its lowest send (Lowered::lowest_send); returns its id.
  std::uint32_t queue_command(std::uint32_t core, EngineId engine, const sim::Command& cmd);

  struct Entry {
    bool entered = false;
    std::uint32_t tensor_wait = 0;  ///< tensor id the op's first command on other engines waits on
    LastIds for_tensor{};           ///< ids the op's first tensor command waits on, per engine
    std::array<std::uint8_t, hw::kMaxEngines> applied{};  ///< first command emitted, per engine
  };
  /// Adds the wait (on, id) to `cmd` for `engine`'s queue on `core`: checked against the chip's
  /// rule (a ConfigError naming op `as`); a tensor command out of room first gets a fence.
  void add_wait(std::uint32_t core, EngineId engine, sim::Command& cmd, EngineId on, std::uint32_t id, OpId as) {
    if (id == 0) return;
    if (!chip.engine(engine).may_wait_on(on)) forbidden_wait(engine, on, as);
    if (!cmd.add_wait(on, id)) add_wait_with_fence(core, engine, cmd, on, id);
  }
  [[noreturn]] void forbidden_wait(EngineId engine, EngineId on, OpId as) const;
  void add_wait_with_fence(std::uint32_t core, EngineId engine, sim::Command& cmd, EngineId on, std::uint32_t id);

  EngineId tiles_ = 0;
  EngineId kv_engine_ = 0;
  bool kv_resident_ = false;
  std::map<std::tuple<AttentionShape, bool, bool, bool>, AttentionPlan> plans_;
  std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, hw::DType, std::uint64_t>, MatmulTiling> tilings_;
  std::vector<std::vector<LastIds>> last_;  ///< [op][core]
  std::vector<std::vector<Entry>> entry_;   ///< [op][core]
  static constexpr std::uint32_t kMessageToGive = 0xffffffff;
  std::vector<std::uint32_t> message_;   ///< [op]: barrier message id, 0 if none, kMessageToGive until sent
  std::vector<std::uint32_t> launched_;  ///< [core]: tensor id of the latest host launch's delay, 0 if none
  std::vector<std::unique_ptr<AttentionUnit>> units_;
  std::map<OpId, AttentionUnit*> unit_of_;
};

/// Emits one op's commands on one core. Commands may be attributed to another op (`as`), for
/// streams that one op queues on behalf of another (kv_cache_read chunks queued while fa2 is
/// lowered, expert weights loaded by the expert matmuls).
class CoreEmitter {
 public:
  CoreEmitter(LoweringContext& ctx, OpId op, std::uint32_t core) : ctx_(ctx), op_(op), core_(core) {}

  /// A tensor-engine instruction of `cycles` cycles, after the given commands.
  CmdRef compute(std::uint64_t cycles, std::initializer_list<CmdRef> after = {});
  /// A sort-engine (HAU) instruction.
  CmdRef sort(std::uint64_t cycles, CmdRef after);
  /// DDR -> local memory on `engine` (default: the tiles engine). `row_bytes`: the transfer
  /// gathers rows of that many bytes (each rounds up to whole DDR bursts); 0 = contiguous.
  CmdRef load(std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes = 0);
  /// A load of data no producer writes, queued ahead of the op's entry waits (push_ahead).
  CmdRef prefetch(std::uint64_t bytes, std::uint64_t row_bytes = 0);
  CmdRef load_on(EngineId engine, std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes = 0);
  /// Same, attributed to op `as`.
  CmdRef load_as(OpId as, EngineId engine, std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes = 0);
  /// DDR -> the chip's L2 on `engine`, attributed to op `as` (a staged history read).
  CmdRef stage_to_l2(OpId as, EngineId engine, std::uint64_t bytes, CmdRef after);
  /// The chip's L2 -> local memory on the tiles engine.
  CmdRef load_from_l2(std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes = 0);
  CmdRef load_from_l2_on(EngineId engine, std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes = 0);
  /// A tensor-engine fence: no work, it passes when `after` has completed (it carries a wait the
  /// tiles engine could not name itself).
  CmdRef fence(CmdRef after);
  /// A tensor-engine delay of `picoseconds`: the core idles (the host launching the next program).
  CmdRef delay(std::uint64_t picoseconds);
  /// Local memory -> DDR on the tiles engine.
  CmdRef store(std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes = 0);
  /// Local memory -> the chip's software-managed L2 on the tiles engine (split-K partials).
  CmdRef store_to_l2(std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes = 0);
  /// A transfer to another chip on the collective engine.
  /// To a chip of this node over the c2c links, or (other_node) of another node over the network
  /// interface (hw::Chip::nodes).
  CmdRef send_to_chip(std::uint64_t bytes, CmdRef after, bool other_node = false);

  std::uint32_t core() const { return core_; }
  const hw::CostModel& cost() const { return ctx_.cost; }

 private:
  CmdRef transfer(OpId as, EngineId engine, std::uint64_t bytes, sim::Direction dir, CmdRef after,
                  std::uint64_t row_bytes);

  LoweringContext& ctx_;
  OpId op_;
  std::uint32_t core_;
};

/// Row-tiled vector-style op: rows split over cores, tiles of rows double-buffered in LMEM.
struct RowCost {
  std::uint64_t load_bytes = 0;   ///< DDR -> LMEM per row
  std::uint64_t store_bytes = 0;  ///< LMEM -> DDR per row
  std::uint64_t element_ops = 0;  ///< vector element-operations per row
  std::uint64_t sfu_ops = 0;      ///< special-function evaluations per row
};

/// Lowers a row-wise op: `cost(begin, end)` sums the traffic and vector work of rows
/// [begin, end); rows are split over cores in balanced ranges (or `core_rows[c]` for core c, when
/// given) and tiled so that two tiles of buffers (each row needing at most `widest_row_bytes`)
/// fit in LMEM. `load_engine`: where the rows come from (the tiles engine, or the cross-core
/// engine for data other cores left behind, as fa2's partials); `from_l2`: they were left in the L2.
void lower_rows(LoweringContext& ctx, OpId op, std::uint64_t rows, std::uint64_t widest_row_bytes,
                const std::function<RowCost(std::uint64_t begin, std::uint64_t end)>& cost, hw::DType compute,
                EngineId load_engine, const std::vector<Range>* core_rows = nullptr, bool from_l2 = false);

}  // namespace ops::detail
