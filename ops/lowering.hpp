#pragma once
// Lowering: OpGraph + Chip -> per-core command queues, one per engine of the chip (sim::Program).
//
// A pure function of its inputs. Every op's work is split over the cores (ops/work_split.hpp),
// tiled to fit each core's local memory, and software-pipelined with double (or deeper)
// buffering: a load into a buffer waits on the TIU command that last read that buffer, a TIU
// command waits on the loads it consumes, a store waits on the TIU command that produced it.
// Ops are emitted in topological order; a `data` edge becomes a cross-core barrier (every core
// sends a message once the producer's last command there has completed; the consumer's first
// commands on a core wait for all of them).
//
// MLA decode: kv_cache_read streams the latent history on GDMA in chunks. Its first chunks are
// queued right after the absorption (their GDMA waits on the absorption's last TIU command on the
// core); fa2's tiles wait on the chunk they consume and each further chunk waits on the tile that
// frees its buffer, so reading and computing overlap. With kv_read_engine = sdma the read goes on
// SDMA into local memory in one piece per core share, fa2 starts only after the whole read has
// finished on every core, and fa2's first TIU command also names the read's last SDMA id
// (initial_sdma_dep).

#include <cstdint>
#include <string>
#include <vector>

#include "hw/chip.hpp"
#include "ops/attention_plan.hpp"
#include "ops/op_graph.hpp"
#include "sim/program.hpp"

namespace ops {

struct LoweringOptions {
  /// The DMA engine of the decode history read: one with the kv_stream role (the read streams
  /// beside fa2) or the kv_resident role (the read lands in local memory before fa2). Empty: the
  /// chip's first kv_stream engine.
  std::string kv_read_engine;
  AttentionSplit attn_split = AttentionSplit::seq;  ///< how decode attention is cut over cores
  /// Refuse a run whose estimated command count (ops/work_estimate.hpp) is above this: 2^27
  /// commands, about 1.6 GB at 12 B each. Counted on what is simulated: a replayed step lowers only
  /// a few of its identical layers (the DeepSeek-V3 4k prefill step: 4.9 M of 40.6 M commands).
  std::uint64_t max_commands = std::uint64_t{1} << 27;
  /// Cross-op weight prefetch: a matmul's first weight tile is queued ahead of the op's entry
  /// waits, so it loads as soon as the tiles engine has issued the producers' transfers (while
  /// their last instructions run, the barrier passes and the consumer starts up), when it fits
  /// local memory beside the producers' tiles. False: every load waits for the producers.
  bool prefetch_weights = true;
  /// Loop replay (ops/loop_replay.hpp): 0 lowers every chunk loop whole; k > 0 keeps k iterations
  /// of each row block's periodic chunk loop when every core runs the same blocks, leaving the
  /// rest out (Lowered::loops says which), for a run that derives them from a proven repetition.
  std::uint64_t loop_kept = 0;
};

struct LoweredOp {
  std::uint64_t peak_lmem_bytes = 0;  ///< largest per-core local-memory footprint of its tiles
  /// Bytes another op streams into this op's local memory (fa2 in decode: the latent history
  /// brought by kv_cache_read); the roofline charges them to this op's memory leg too.
  std::uint64_t streamed_in_bytes = 0;
  /// Work the lowering adds when it depends on the split (fa2_combine: one merge per partial).
  std::uint64_t split_flops = 0;
};

/// A chunk loop the lowering cut short (LoweringOptions::loop_kept): on every core, iterations
/// kept .. kept + dropped - 1 of one row block's periodic chunk loop are left out, and the
/// iterations after them (the loop's tail) follow iteration kept - 1.
struct LoweredLoop {
  OpId op = 0;
  std::uint64_t dropped = 0;
  /// [k][queue] (queue = core x engines + engine): the first command of kept alike iteration k;
  /// the last entry: the first of the tail. A queue without commands there holds where the next
  /// one is. The left-out iterations came just before the tail.
  std::vector<std::vector<std::uint32_t>> starts;
};

struct Lowered {
  sim::Program program;
  std::vector<LoweredOp> ops;      ///< indexed by OpId
  std::vector<LoweredLoop> loops;  ///< in lowering order (empty unless loop_kept > 0)
  /// Where each op's commands start, noted as they are queued (layer replay plans from them
  /// instead of decoding every queue up to its run): [op x queues + queue], queue = core x
  /// engines + engine, the index of the op's first command there, kNoCommand when it has none.
  std::vector<std::uint32_t> first_command;
  static constexpr std::uint32_t kNoCommand = 0xffffffff;
  /// [op]: the lowest message id its send_msg commands carry, 0 when it sends none.
  std::vector<std::uint32_t> lowest_send;
};

Lowered lower(const OpGraph& graph, const hw::Chip& chip, const LoweringOptions& options);

}  // namespace ops
