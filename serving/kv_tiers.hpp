#pragma once
// The tiers below an instance's device memory (host DRAM, CXL, SSD: g5sim::KvTiers) as its prefix
// cache's lower levels (serving/prefix_cache.hpp).
//
// Each tier holds whole blocks, capacity_bytes / block bytes of them, in LRU order. A block the
// device's cache evicts enters the first tier (a write of its bytes down the path); a full tier
// passes its least recently used block to the next (another write there), and the last tier drops
// its. A request whose prompt starts with blocks found in the device cache or in a tier reuses the
// whole run: the tiers' blocks move back up into device blocks of its own, and its prefill waits
//   sum over the tiers it reads of (latency + its blocks' bytes / bandwidth)
// for them (the load runs beside the other requests' steps, as LMCache and SGLang's HiCache load a
// prefix asynchronously). Counted per tier: blocks written down into it, blocks read back up,
// blocks dropped from it, and the most it held.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "g5sim/serve.hpp"
#include "serving/prefix_cache.hpp"

namespace serving {

using TierUse = g5sim::KvTierUse;

class TieredStore {
 public:
  TieredStore(const g5sim::KvTiers& tiers, std::uint64_t block_bytes);
  /// A block the device's cache dropped.
  void spill(const PrefixCache::Key& key);
  /// The tier holding `key`, if any.
  std::optional<std::size_t> tier_of(const PrefixCache::Key& key) const;
  /// Takes `key` out of its tier (it goes back to the device), counting the read.
  void take(const PrefixCache::Key& key);
  /// The time to load blocks[t] blocks from each tier t, one tier after the other; counted.
  std::uint64_t load_ps(const std::vector<std::uint64_t>& blocks);
  std::size_t tiers() const { return levels_.size(); }
  std::uint64_t block_bytes() const { return block_bytes_; }
  const std::vector<TierUse>& use() const { return use_; }

 private:
  struct Level {
    g5sim::KvTier tier;
    std::map<PrefixCache::Key, std::uint64_t> stamp;  ///< key -> when it entered
    std::set<std::pair<std::uint64_t, PrefixCache::Key>> lru;
  };
  void put(std::size_t level, const PrefixCache::Key& key);
  std::vector<Level> levels_;
  std::vector<TierUse> use_;
  std::uint64_t block_bytes_ = 0, clock_ = 0;
};

}  // namespace serving
