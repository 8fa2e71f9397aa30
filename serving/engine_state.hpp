#pragma once
// The state the serving engine's parts share (serving/serving_engine.hpp states the model): each
// request's progress, each instance's queues, running list, KV blocks and clock.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "serving/kv_tiers.hpp"
#include "serving/prefix_cache.hpp"

namespace serving {

/// A request's progress on the instance that holds it.
struct Live {
  std::uint64_t prompt = 0;  ///< tokens to compute before the next token: input + generated at preemption
  std::uint64_t computed = 0, generated = 0, blocks = 0;
  std::uint64_t last_token_ps = 0;  ///< when its last token so far left the front end (its step's end without one)
  /// How long its first token and its last waited at the runtime's serial front end.
  std::uint64_t first_wait_ps = 0, last_wait_ps = 0;
  std::size_t first_instance = 0, last_instance = 0;  ///< where its first token and its last came from
  double credit = 0;  ///< MTP, expected acceptance: the fraction of a token carried to the next step
  bool started = false;
  bool leaving = false;  ///< done on its instance this step (finished, or its cache in transfer)
  /// Its first refs.size() blocks are entries of the instance's prefix cache (of its `blocks`).
  std::vector<PrefixCache::Key> refs;
  /// Loading its prompt's cached blocks from a lower tier until then: it runs no step before.
  std::uint64_t ready_ps = 0;

  bool in_prompt() const { return computed < prompt; }
};

/// One instance's KV cache: whole blocks of block_tokens tokens (of kv.unit() bytes each), taken
/// and given back. A sequence's bytes that do not grow with it (sliding windows' last tokens,
/// linear-attention states: g5sim::KvGrowth) take whole blocks of their own.
class KvBlockPool {
 public:
  KvBlockPool(std::uint64_t blocks, std::uint64_t block_tokens, const g5sim::KvGrowth& kv)
      : blocks_(blocks), free_(blocks), block_tokens_(block_tokens), kv_(kv) {}
  /// ceil(tokens / block_tokens) for the layers that keep every token (all of it when `kv` is all
  /// zero), and
  /// ceil(bounded bytes / block bytes) for the rest: window_per_token min(tokens, window) + fixed.
  /// Without a layer that keeps every token, the window is the unit: ceil(min(tokens, window) /
  /// block_tokens) and the fixed bytes in blocks.
  std::uint64_t blocks_for(std::uint64_t tokens) const {
    if (kv_.unit() == 0) return ceil(tokens, block_tokens_);  // no growth given: a token is a token
    const std::uint64_t block_bytes = block_tokens_ * kv_.unit();
    if (kv_.per_token == 0) {
      return ceil(std::min(tokens, kv_.window), block_tokens_) + ceil(kv_.fixed, block_bytes);
    }
    return ceil(tokens, block_tokens_) +
           ceil(kv_.window_per_token * std::min(tokens, kv_.window) + kv_.fixed, block_bytes);
  }
  std::uint64_t blocks() const { return blocks_; }
  std::uint64_t free() const { return free_; }
  std::uint64_t used() const { return blocks_ - free_; }
  /// Takes n blocks; the caller checked that n <= free(). With a prefix cache, the free blocks
  /// it still names go first in LRU order when the others run out (down to the tiers, if any).
  void take(std::uint64_t n) {
    free_ -= n;
    if (!cache) return;
    for (const PrefixCache::Key& k : cache->evict_beyond(free_)) {
      if (tiers) tiers->spill(k);
    }
  }
  void give_back(std::uint64_t n) { free_ += n; }
  /// The instance's prefix cache (serving/prefix_cache.hpp): free() counts its free entries.
  std::optional<PrefixCache> cache;
  /// The tiers below device memory (serving/kv_tiers.hpp): what the cache drops goes there.
  std::optional<TieredStore> tiers;

 private:
  static std::uint64_t ceil(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }
  std::uint64_t blocks_, free_, block_tokens_;
  g5sim::KvGrowth kv_;
};

/// Lets go of every block `l` holds in `pool`: its cache entries last block first (a prompt's tail
/// is evicted before its head), each a free block when no other request holds it, and its own.
inline void release_blocks(KvBlockPool& pool, Live& l) {
  std::uint64_t freed = l.blocks - l.refs.size();
  for (auto k = l.refs.rbegin(); k != l.refs.rend(); ++k) freed += pool.cache && pool.cache->release(*k) ? 1 : 0;
  pool.give_back(freed);
  l.blocks = 0;
  l.refs.clear();
}

/// One engine instance: its queue, its running requests, its KV blocks and its clock.
struct Instance {
  enum class Role { colocated, prefill, decode } role = Role::colocated;
  std::size_t chip = 0;  ///< which of the serve's chips runs it (ChipSteps' index)
  std::multimap<std::pair<std::uint64_t, std::uint64_t>, std::size_t> pending;  // (arrival, seq) -> request
  std::deque<std::size_t> waiting;                                              // arrived, head first
  std::vector<std::size_t> running;                                             // admission order
  KvBlockPool pool;
  std::uint64_t now = 0;
  std::uint64_t last_step_end = 0, last_device_ps = 0;  ///< its last step's end and device time (overlap)

  Instance(std::uint64_t blocks, std::uint64_t block_tokens, const g5sim::KvGrowth& kv)
      : pool(blocks, block_tokens, kv) {}
  bool busy() const { return !running.empty() || !waiting.empty(); }
  /// When its next step can start, or nothing when it has nothing to do.
  std::optional<std::uint64_t> next_start() const {
    if (busy()) return now;
    if (pending.empty()) return std::nullopt;
    return std::max(now, pending.begin()->first.first);
  }
  /// The pending requests that have arrived by `now` join the queue, in arrival order.
  void admit_arrivals() {
    while (!pending.empty() && pending.begin()->first.first <= now) {
      waiting.push_back(pending.begin()->second);
      pending.erase(pending.begin());
    }
  }
};

}  // namespace serving
