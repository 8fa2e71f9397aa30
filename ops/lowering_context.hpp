#pragma once
// Internal to the lowering: shared state and the per-core command emitter.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "hw/chip.hpp"
#include "ops/attention_plan.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"
#include "sim/command.hpp"

namespace ops::detail {

/// Ids of the kv_cache_read chunks queued ahead of fa2 (GDMA route), per core, for the fa2
/// lowering to consume.
struct PrefetchedChunks {
  std::vector<std::vector<std::uint32_t>> ids;  ///< [core]
};

/// Last command id per engine of one op on one core (0 = none).
using LastIds = std::array<std::uint32_t, sim::kEngineCount>;

struct LoweringContext {
  const OpGraph& graph;
  const hw::Chip& chip;
  const LoweringOptions& options;
  Lowered& out;
  std::vector<std::vector<LastIds>> last;        ///< [op][core]
  /// What an op's first command on each engine of a core must wait for.
  struct Entry {
    bool entered = false;
    std::uint32_t tiu_for_dma = 0;   ///< TIU id its first GDMA / SDMA command waits on
    std::uint32_t gdma_for_tiu = 0;  ///< GDMA id its first TIU command waits on
    std::uint32_t sdma_for_tiu = 0;  ///< SDMA id its first TIU command waits on
    std::array<std::uint8_t, sim::kEngineCount> applied{};  ///< first command emitted per engine
  };
  std::vector<std::vector<Entry>> entry;  ///< [op][core]
  std::vector<std::uint32_t> message;            ///< [op]: barrier message id, 0 if none
  std::map<OpId, PrefetchedChunks> prefetched;  ///< by kv_cache_read op

  /// The attention plan of a shape, computed once for the read, fa2 and the combine that share it.
  const AttentionPlan& attention_plan(const AttentionShape& shape, bool resident);

 private:
  std::map<std::vector<std::uint64_t>, AttentionPlan> plans_;

 public:

  LoweringContext(const OpGraph& g, const hw::Chip& c, const LoweringOptions& o, Lowered& l);

  /// True if the edge makes the consumer wait for the producer on every core.
  bool is_barrier(const OpGraph::edge_descriptor& e) const;
};

/// Emits one op's commands on one core, applying the op's entry waits to its first command on
/// each engine. Commands may be attributed to another op (`as`), for streams that one op queues
/// on behalf of another (kv_cache_read chunks queued while fa2 is lowered).
class CoreEmitter {
 public:
  CoreEmitter(LoweringContext& ctx, OpId op, std::uint32_t core);

  // `row_bytes`: the transfer gathers or scatters rows of that many bytes (each rounds up to whole
  // DDR bursts); 0 = one contiguous block.
  std::uint32_t compute(std::uint64_t cycles, std::uint32_t wait_gdma, std::uint32_t wait_sdma = 0);
  std::uint32_t load(std::uint64_t bytes, std::uint32_t wait_tiu, sim::Engine engine = sim::Engine::gdma,
                     std::uint64_t row_bytes = 0);
  std::uint32_t store(std::uint64_t bytes, std::uint32_t wait_tiu, std::uint32_t wait_hau = 0,
                      std::uint64_t row_bytes = 0);
  /// A HAU (sort / top-k) command waiting on a GDMA id.
  std::uint32_t hau(std::uint64_t cycles, std::uint32_t wait_gdma);
  /// A CDMA transfer to another chip.
  std::uint32_t send_to_chip(std::uint64_t bytes, std::uint32_t wait_tiu);
  /// Same, attributed to op `as` (which must already be entered on this core).
  std::uint32_t load_as(OpId as, std::uint64_t bytes, std::uint32_t wait_tiu,
                        sim::Engine engine = sim::Engine::gdma, std::uint64_t row_bytes = 0);

  std::uint32_t core() const { return core_; }
  const hw::Chip& chip() const { return ctx_.chip; }

 private:
  /// Appends to `engine`'s queue, attributed to `as`, adding the op's entry waits to its first
  /// command on that engine; returns the command's id.
  std::uint32_t push(OpId as, sim::Engine engine, sim::Command cmd);
  std::uint32_t dma(OpId as, sim::Engine engine, std::uint64_t bytes, sim::Direction dir,
                    std::uint32_t wait_tiu, std::uint32_t wait_hau = 0, std::uint64_t row_bytes = 0);

  LoweringContext& ctx_;
  OpId op_;
  std::uint32_t core_;
  sim::CoreProgram& queues_;
};

/// Entry waits of `op` on `core`: emits its barrier waits (wait_msg) on TIU and records which ids
/// its first command on each engine must name. Idempotent.
void enter_op(LoweringContext& ctx, OpId op, std::uint32_t core);

/// Row-tiled vector-style op: rows split over cores, tiles of rows double-buffered in LMEM.
struct RowCost {
  std::uint64_t load_bytes = 0;   ///< DDR -> LMEM per row
  std::uint64_t store_bytes = 0;  ///< LMEM -> DDR per row
  std::uint64_t element_ops = 0;  ///< vector element-operations per row
  std::uint64_t sfu_ops = 0;      ///< special-function evaluations per row
};

/// Lowers a row-wise op: `cost(begin, end)` sums the traffic and vector work of rows
/// [begin, end); rows are split over cores in balanced ranges and tiled so that two tiles of
/// buffers (each row needing at most `widest_row_bytes`) fit in LMEM.
/// `load_engine`: GDMA (from DDR) or SDMA (data other cores left behind, as fa2's partials).
void lower_rows(LoweringContext& ctx, OpId op, std::uint64_t rows, std::uint64_t widest_row_bytes,
                const std::function<RowCost(std::uint64_t begin, std::uint64_t end)>& cost, hw::DType compute,
                sim::Engine load_engine = sim::Engine::gdma);

// Op-kind lowerings.
void lower_matmul(LoweringContext& ctx, OpId op);
void lower_vector(LoweringContext& ctx, OpId op);
void lower_kv_cache_read(LoweringContext& ctx, OpId op);
void lower_fa2(LoweringContext& ctx, OpId op);
void lower_fa2_combine(LoweringContext& ctx, OpId op);
void lower_collective(LoweringContext& ctx, OpId op);
void lower_topk(LoweringContext& ctx, OpId op);

}  // namespace ops::detail
