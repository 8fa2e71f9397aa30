#pragma once
// One attention's history read, fa2 and combine, lowered with ONE plan.
//
// The three ops of an attention (kv_cache_read -> fa2 -> fa2_combine in decode; fa2 alone in
// prefill) share an AttentionUnit, built once when the first of them is lowered. It decides, in
// this one place:
//   history  - how the decode history reaches fa2:
//                none      prefill (q_len == kv_len): fa2 attends this step's K/V;
//                stream    on a kv_stream engine, chunk by chunk: fa2's tiles wait on the chunk
//                          they consume, so reading and computing overlap (flash decoding);
//                resident  on a kv_resident engine, each core's share into local memory, whole
//                          (one transfer per item) or in rounds (ops/attention_plan.hpp); fa2
//                          starts after round 0 has been read on every core, and its first
//                          instruction on each later round names that round's last read id
//                          (initial_sdma_dep);
//                staged    on a kv_resident engine when the chip has an L2: each core's share is
//                          read DDR -> L2 in rounds (two round buffers of the core's L2 share when
//                          the whole share does not fit), fa2 streams chunks L2 -> local memory on
//                          the tiles engine; round 0 is read on every core before fa2 starts, each
//                          later round's chunk loads wait (through a tensor fence: the tiles engine
//                          cannot name the kv engine) for that round's last read id, and a round's
//                          buffer is read again only after its last chunk has left it;
//                gather    DSA: the selected rows gathered on the gather engine into a contiguous
//                          buffer that fa2 then streams on the tiles engine, after the gather has
//                          finished on every core;
//                matmul    MLA standard mode: the history is the up-projection's A operand.
//   plan     - the split over cores and the tiles (ops/attention_plan.hpp), with the history
//              resident exactly when `history == resident`; the read, fa2 and the combine all
//              use it.
// The read's first chunks are queued at the read's place (right after the absorption), the rest
// as fa2 consumes them: `prefetched` carries their ids from one to the other.

#include <memory>
#include <optional>
#include <vector>

#include "ops/attention_plan.hpp"
#include "ops/lowering_context.hpp"

namespace ops::detail {

enum class HistoryRoute : std::uint8_t { none, stream, resident, staged, gather, matmul };

struct AttentionUnit {
  std::optional<OpId> reader, fa2, combine;
  HistoryRoute history = HistoryRoute::none;
  EngineId history_engine = 0;                   ///< the engine the history read runs on
  const AttentionPlan* plan = nullptr;           ///< null for HistoryRoute::matmul
  std::vector<std::vector<CmdRef>> prefetched;   ///< [core]: stream chunks queued at the read
  std::vector<std::vector<CmdRef>> round_reads;  ///< [core]: resident (staged) round 0's transfers
  /// Staged: per core, the history's rounds in the L2 and how many round buffers it holds.
  std::vector<std::vector<std::vector<RoundPiece>>> staged_rounds;
  std::uint64_t staged_buffers = 0;
  /// Loop replay (LoweringOptions::loop_kept): the runs of chunk iterations cut short on every
  /// core (empty: none), and the plan without their left-out iterations, which `plan` then points to.
  std::vector<CutLoop> cuts;
  std::shared_ptr<const AttentionPlan> cut_plan;
  /// The combine also merges another fa2 (a prefill chunk's attention over itself, beside this
  /// one over its history): every sequence leaves a partial output, even one no core cut.
  bool merges_another_part = false;
  /// On a chip whose L2 caches DDR reads, when every query block of the op fits in it: per core,
  /// per block, whether its Q load hits the L2 (an earlier core, in lowering order, read the same
  /// rows of the same sequence: the pieces of a split sequence all load its Q at about the same
  /// time). Empty: every Q load comes from DDR.
  std::vector<std::vector<std::uint8_t>> q_hits_l2;
  /// Row tiles on a chip whose L2 caches DDR reads: per core, per block, whether its reads of its
  /// history slice (not the history read itself) hit the L2. Empty: such reads come from DDR.
  std::vector<std::vector<std::uint8_t>> history_hits_l2;

  /// fa2 waits for the read on every core (resident and gather routes).
  bool history_barrier() const {
    return history == HistoryRoute::resident || history == HistoryRoute::staged || history == HistoryRoute::gather;
  }
  std::vector<OpId> members() const;
};

/// The engine the decode history is read on: options.kv_read_engine, else the chip's first
/// kv_stream engine. Throws InputError for an engine that is not a DMA engine with a kv role.
EngineId history_engine(const hw::Chip& chip, const LoweringOptions& options);

/// The route of an attention whose history feeds fa2 (not MLA standard's matmul route): none
/// without a kv_cache_read (prefill), gather for DSA, else by the engine's role and the chip's
/// L2. The lowering (build_attention_unit) and the command estimate both ask this.
HistoryRoute history_route(bool reads_history, bool gather, bool resident_engine, bool chip_has_l2);

/// The unit of `op` (a kv_cache_read, fa2 or fa2_combine), its route and plan decided.
AttentionUnit build_attention_unit(LoweringContext& ctx, OpId op);

}  // namespace ops::detail
