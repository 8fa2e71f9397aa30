#pragma once
// How the decode history reaches fa2: one class per history route (ops/attention_unit.hpp names
// the routes and decides which one an attention takes). A route's object for one core emits
// kv_cache_read's commands at the read's place (read()) and, inside fa2's route-free chunk loop
// (ops/attention_unit.cpp), answers the loop's four questions:
//   load(b, i, after)        queue chunk i of row block b (after `after`, its buffer's freeing);
//                            an empty CmdRef when the chunk cannot be queued yet;
//   before_compute(b, i)     the wait chunk i's compute needs that its load does not give;
//   after_pv(b, i, pv)       what chunk i's P V product releases (a buffer, a round);
//   streams()                whether chunks pass through local-memory buffers at all.
// The routes:
//   PlainHistory     prefill (fa2 attends this step's K/V) and a gathered history (DSA: fa2 streams
//                    the gather's buffer): fa2's own loads;
//   StreamHistory    the history streamed on a kv_stream engine as kv_cache_read's traffic, its
//                    first chunks queued at the read's place;
//   ResidentHistory  each core's share loaded into local memory in rounds on a kv_resident
//                    engine; fa2 waits for each round's last read;
//   StagedHistory    the share read DDR -> L2 in rounds on a kv_resident engine, fa2 streaming
//                    chunks L2 -> local memory; a chunk waits for its round's read;
//   GatherHistory    DSA: the selected rows gathered into a contiguous buffer (read()), fa2 plain.

#include <memory>
#include <vector>

#include "ops/attention_unit.hpp"

namespace ops::detail {

class HistorySource {
 public:
  /// For `op` (the kv_cache_read or the fa2 being lowered) on `core`, emitting with `emit`.
  HistorySource(LoweringContext& ctx, AttentionUnit& unit, OpId op, CoreEmitter& emit, std::uint32_t core);
  virtual ~HistorySource() = default;
  HistorySource(const HistorySource&) = delete;
  HistorySource& operator=(const HistorySource&) = delete;

  /// kv_cache_read's commands on this core (emit is the reader's emitter).
  virtual void read() {}
  /// fa2 (emit is fa2's emitter): see the header comment. begin_fa2() comes before the first
  /// block's loads.
  virtual void begin_fa2() {}
  virtual bool streams() const { return true; }
  /// Chunks of block `b` that kv_cache_read already queued, copied into `chunk`; their count.
  virtual std::size_t queued(std::size_t b, std::vector<CmdRef>& chunk) const;
  virtual CmdRef load(std::size_t b, std::size_t i, CmdRef after);
  virtual void before_compute(std::size_t b, std::size_t i, std::vector<CmdRef>& chunk);
  virtual void after_pv(std::size_t b, std::size_t i, CmdRef pv, std::vector<CmdRef>& chunk);
  /// After block b's chunk loop: nothing may be left waiting.
  virtual void end_block(std::size_t b);

 protected:
  std::uint64_t chunk_bytes(std::uint64_t tokens) const { return tokens * shape_.kv_token_bytes; }
  /// fa2's own load of chunk i of block b (not the history read's traffic).
  CmdRef plain_load(std::size_t b, std::size_t i, CmdRef after);

  LoweringContext& ctx_;
  AttentionUnit& unit_;
  CoreEmitter& emit_;
  std::uint32_t core_;
  const AttentionShape& shape_;
  const std::vector<AttentionBlock>& blocks_;
  std::uint64_t kv_row_;  ///< a strided row when several KV heads share a token (GQA, MLA expanded)
};

/// The route's object for `core` (unit.history picks the class).
std::unique_ptr<HistorySource> history_source(LoweringContext& ctx, AttentionUnit& unit, OpId op, CoreEmitter& emit,
                                              std::uint32_t core);

}  // namespace ops::detail
