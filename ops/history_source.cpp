#include "ops/history_source.hpp"

#include <algorithm>
#include <stdexcept>

namespace ops::detail {

HistorySource::HistorySource(LoweringContext& ctx, AttentionUnit& unit, OpId op, CoreEmitter& emit, std::uint32_t core)
    : ctx_(ctx),
      unit_(unit),
      emit_(emit),
      core_(core),
      shape_(ctx.graph[op].attn()),
      blocks_(unit.plan->cores[core].blocks),
      kv_row_(shape_.kv_heads > 1 ? shape_.kv_token_bytes : 0) {}

std::size_t HistorySource::queued(std::size_t, std::vector<CmdRef>&) const { return 0; }

CmdRef HistorySource::plain_load(std::size_t b, std::size_t i, CmdRef after) {
  const auto& hits = unit_.history_hits_l2;
  if (!hits.empty() && hits[core_][b] != 0)
    return emit_.load_from_l2(chunk_bytes(blocks_[b].chunk_tokens[i]), after, kv_row_);
  return emit_.load(chunk_bytes(blocks_[b].chunk_tokens[i]), after, kv_row_);
}

CmdRef HistorySource::load(std::size_t b, std::size_t i, CmdRef after) { return plain_load(b, i, after); }
void HistorySource::before_compute(std::size_t, std::size_t, std::vector<CmdRef>&) {}
void HistorySource::after_pv(std::size_t, std::size_t, CmdRef, std::vector<CmdRef>&) {}
void HistorySource::end_block(std::size_t) {}

namespace {

// Prefill: fa2 attends this step's K/V, loading it itself.
class PlainHistory final : public HistorySource {
 public:
  using HistorySource::HistorySource;
};

// DSA: one transfer per item on the gather engine into a contiguous buffer that fa2 then streams
// with its own loads; a gather picks scattered rows, each rounding up to whole bursts.
class GatherHistory final : public HistorySource {
 public:
  using HistorySource::HistorySource;

  void read() override {
    for (const AttentionBlock& b : blocks_) {
      if (!b.first_pass) continue;
      std::uint64_t tokens = 0;
      for (std::uint64_t t : b.chunk_tokens) tokens += t;
      emit_.load_on(unit_.history_engine, chunk_bytes(tokens), {}, shape_.kv_token_bytes);
    }
  }
};

// The history streamed chunk by chunk on a kv_stream engine: the first row block's loads are
// kv_cache_read's traffic, its first `buffers` chunks queued at the read's place (right after the
// absorption); later row blocks read the history again as fa2's own loads.
class StreamHistory final : public HistorySource {
 public:
  using HistorySource::HistorySource;

  void read() override {
    const AttentionBlock& first = blocks_.front();
    if (!first.first_pass) return;  // a row tile that reads its slice again, in fa2
    const std::size_t ahead = std::min<std::size_t>(unit_.plan->buffers, first.chunk_tokens.size());
    for (std::size_t i = 0; i < ahead; ++i) {
      unit_.prefetched[core_].push_back(emit_.load_on(unit_.history_engine, chunk_bytes(first.chunk_tokens[i]), {}));
    }
  }

  std::size_t queued(std::size_t b, std::vector<CmdRef>& chunk) const override {
    if (b != 0) return 0;  // (a row tile whose first block reads again prefetched nothing)
    const std::vector<CmdRef>& prefetched = unit_.prefetched[core_];
    std::copy(prefetched.begin(), prefetched.end(), chunk.begin());
    return prefetched.size();
  }

  CmdRef load(std::size_t b, std::size_t i, CmdRef after) override {
    if (!blocks_[b].first_pass) return plain_load(b, i, after);
    return emit_.load_as(*unit_.reader, unit_.history_engine, chunk_bytes(blocks_[b].chunk_tokens[i]), after, kv_row_);
  }
};

// Each core's share resident in local memory, read in rounds (ops/attention_plan.hpp): round 0
// at the read's place (fa2 starts after it on every core), the reads of round r + round_buffers
// - 1 queued when round r starts, after the last P V of round r - 1; a round's first chunk waits
// for that round's last read id.
class ResidentHistory final : public HistorySource {
 public:
  ResidentHistory(LoweringContext& ctx, AttentionUnit& unit, OpId op, CoreEmitter& emit, std::uint32_t core)
      : HistorySource(ctx, unit, op, emit, core), rounds_(unit.plan->cores[core].rounds), round_of_(blocks_.size()) {
    for (std::size_t r = 0; r < rounds_.size(); ++r) {
      for (const RoundPiece& piece : rounds_[r]) {
        round_of_[piece.block].resize(blocks_[piece.block].chunk_tokens.size());
        for (std::size_t i = 0; i < piece.chunks; ++i) round_of_[piece.block][piece.first_chunk + i] = r;
      }
    }
    round_read_.resize(rounds_.size());
    round_last_pv_.resize(rounds_.size());
    if (!rounds_.empty()) round_read_[0] = unit.round_reads[core].empty() ? CmdRef{} : unit.round_reads[core].back();
  }

  // Round 0: one transfer per item piece (the whole share when it fits); fa2 reads the rest.
  void read() override {
    if (rounds_.empty()) return;
    for (const RoundPiece& piece : rounds_.front()) {
      unit_.round_reads[core_].push_back(emit_.load_on(unit_.history_engine, chunk_bytes(piece.tokens), {}));
    }
  }

  bool streams() const override { return false; }

  // This chunk's round must have been read whole: round 0 by the barrier, later ones by waiting
  // on their read's last id.
  void before_compute(std::size_t b, std::size_t i, std::vector<CmdRef>& chunk) override {
    if (!blocks_[b].first_pass || rounds_.empty()) return;
    const std::size_t r = round_of_[b][i];
    if (started_ && r == current_) return;
    current_ = r;
    started_ = true;
    start_round(r);
    if (r > 0) chunk[i] = round_read_[r];
  }

  void after_pv(std::size_t b, std::size_t i, CmdRef pv, std::vector<CmdRef>&) override {
    if (blocks_[b].first_pass && !rounds_.empty()) round_last_pv_[round_of_[b][i]] = pv;
  }

 private:
  void start_round(std::size_t r) {
    const std::size_t target = r + unit_.plan->round_buffers - 1;
    if (target == 0 || target >= rounds_.size()) return;
    const CmdRef after = r >= 1 ? round_last_pv_[r - 1] : CmdRef{};
    CmdRef last_read;
    for (const RoundPiece& piece : rounds_[target]) {
      last_read = emit_.load_as(*unit_.reader, unit_.history_engine, chunk_bytes(piece.tokens), after);
    }
    round_read_[target] = last_read;
  }

  const std::vector<std::vector<RoundPiece>>& rounds_;
  std::vector<std::vector<std::size_t>> round_of_;  ///< [block][chunk]: its round (first pass)
  std::vector<CmdRef> round_read_, round_last_pv_;
  std::size_t current_ = 0;
  bool started_ = false;
};

// Each core's share read DDR -> L2 in rounds (two round buffers of the core's L2 share when the
// whole share does not fit); fa2 streams chunks L2 -> local memory on the tiles engine. Round 0 is
// read at the read's place (fa2 waits for it on every core), round 1 (with two buffers) when fa2
// starts; a later round's first chunk load waits, through a tensor fence (the tiles engine cannot
// name the kv engine), for that round's last read id; a round's buffer is read again only after its
// last chunk has left it (one buffer) or been computed (two buffers). A chunk whose round is not
// yet queued (local memory holds more chunks ahead than the L2 holds rounds) waits, in chunk
// order, until it is.
class StagedHistory final : public HistorySource {
 public:
  StagedHistory(LoweringContext& ctx, AttentionUnit& unit, OpId op, CoreEmitter& emit, std::uint32_t core)
      : HistorySource(ctx, unit, op, emit, core),
        rounds_(unit.staged_rounds[core]),
        round_of_(blocks_.size()),
        opens_(blocks_.size()),
        closes_(blocks_.size()),
        l2_read_(rounds_.size()),
        in_l2_(rounds_.size()) {
    for (std::size_t r = 0; r < rounds_.size(); ++r) {
      for (std::size_t p = 0; p < rounds_[r].size(); ++p) {
        const RoundPiece& piece = rounds_[r][p];
        const std::size_t chunks = blocks_[piece.block].chunk_tokens.size();
        round_of_[piece.block].resize(chunks), opens_[piece.block].resize(chunks), closes_[piece.block].resize(chunks);
        for (std::size_t i = 0; i < piece.chunks; ++i) round_of_[piece.block][piece.first_chunk + i] = r;
        if (p == 0) opens_[piece.block][piece.first_chunk] = 1;
        if (p + 1 == rounds_[r].size()) closes_[piece.block][piece.first_chunk + piece.chunks - 1] = 1;
      }
    }
  }

  // Round 0 into the L2 (fa2 waits for it on every core); fa2 queues the later rounds.
  void read() override {
    if (rounds_.empty()) return;
    for (const RoundPiece& piece : rounds_.front()) {
      unit_.round_reads[core_].push_back(
          emit_.stage_to_l2(*unit_.reader, unit_.history_engine, chunk_bytes(piece.tokens), {}));
    }
  }

  void begin_fa2() override {
    if (!rounds_.empty()) {
      l2_read_[0] = unit_.round_reads[core_].empty() ? CmdRef{} : unit_.round_reads[core_].back();
      in_l2_[0] = 1;
    }
    if (unit_.staged_buffers == 2 && rounds_.size() > 1) stage_round(1, {});
  }

  CmdRef load(std::size_t b, std::size_t i, CmdRef after) override {
    if (!blocks_[b].first_pass) return plain_load(b, i, after);
    const std::size_t r = round_of_[b][i];
    if (!in_l2_[r] || !deferred_.empty()) {
      deferred_.push_back({b, i, after});
      return CmdRef{};
    }
    // A later round must be in the L2 first: a tensor fence carries the wait on its read (the
    // fence comes after the buffer's freeing instruction, so it covers that too).
    if (opens_[b][i] && r >= 1) after = emit_.fence(l2_read_[r]);
    const CmdRef loaded = emit_.load_from_l2(chunk_bytes(blocks_[b].chunk_tokens[i]), after, kv_row_);
    // One L2 buffer: when the round's last chunk has left it, the next round may be read (a fence
    // on that load). Two buffers: the round after next is read once this round's last chunk has
    // been computed (after_pv), without stalling the tensor engine.
    if (unit_.staged_buffers == 1 && closes_[b][i] && r + 1 < rounds_.size()) stage_round(r + 1, emit_.fence(loaded));
    return loaded;
  }

  void before_compute(std::size_t b, std::size_t i, std::vector<CmdRef>& chunk) override {
    if (blocks_[b].first_pass && chunk[i].id == 0) {
      throw std::logic_error("fa2: an L2 chunk computed before its load was queued");
    }
  }

  void after_pv(std::size_t b, std::size_t i, CmdRef pv, std::vector<CmdRef>& chunk) override {
    if (!blocks_[b].first_pass || unit_.staged_buffers != 2 || !closes_[b][i]) return;
    if (round_of_[b][i] + 2 >= rounds_.size()) return;
    stage_round(round_of_[b][i] + 2, pv);
    // The loads that waited for that round, in chunk order (the tiles queue is in order).
    std::vector<Deferred> waiting;
    waiting.swap(deferred_);
    for (const Deferred& d : waiting) {
      if (d.block != b) throw std::logic_error("fa2: an L2 chunk load deferred past its row block");
      chunk[d.chunk] = load(d.block, d.chunk, d.after);
    }
  }

  void end_block(std::size_t) override {
    if (!deferred_.empty()) throw std::logic_error("fa2: L2 chunk loads left waiting for a round never read");
  }

 private:
  struct Deferred {
    std::size_t block, chunk;
    CmdRef after;
  };

  void stage_round(std::size_t r, CmdRef after) {
    for (const RoundPiece& piece : rounds_[r]) {
      l2_read_[r] = emit_.stage_to_l2(*unit_.reader, unit_.history_engine, chunk_bytes(piece.tokens), after);
    }
    in_l2_[r] = 1;
  }

  const std::vector<std::vector<RoundPiece>>& rounds_;
  std::vector<std::vector<std::size_t>> round_of_;         ///< [block][chunk]: its L2 round
  std::vector<std::vector<std::uint8_t>> opens_, closes_;  ///< the chunk opens / closes its round
  std::vector<CmdRef> l2_read_;                            ///< each round's last read
  std::vector<std::uint8_t> in_l2_;                        ///< the round's read is queued
  std::vector<Deferred> deferred_;
};

}  // namespace

std::unique_ptr<HistorySource> history_source(LoweringContext& ctx, AttentionUnit& unit, OpId op, CoreEmitter& emit,
                                              std::uint32_t core) {
  switch (unit.history) {
    case HistoryRoute::none: return std::make_unique<PlainHistory>(ctx, unit, op, emit, core);
    case HistoryRoute::gather: return std::make_unique<GatherHistory>(ctx, unit, op, emit, core);
    case HistoryRoute::stream: return std::make_unique<StreamHistory>(ctx, unit, op, emit, core);
    case HistoryRoute::resident: return std::make_unique<ResidentHistory>(ctx, unit, op, emit, core);
    case HistoryRoute::staged: return std::make_unique<StagedHistory>(ctx, unit, op, emit, core);
    case HistoryRoute::matmul: break;
  }
  throw std::logic_error("no history source for the matmul route (the up-projection reads the history)");
}

}  // namespace ops::detail
