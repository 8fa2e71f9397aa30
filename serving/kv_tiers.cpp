#include "serving/kv_tiers.hpp"

#include <stdexcept>

#include "hw/checked_count.hpp"

namespace serving {

TieredStore::TieredStore(const g5sim::KvTiers& tiers, std::uint64_t block_bytes) : block_bytes_(block_bytes) {
  if (block_bytes == 0) throw std::logic_error("kv tiers: a block of no bytes");
  for (const g5sim::KvTier& t : tiers.tiers) {
    levels_.push_back(Level{t, {}, {}});
    TierUse u;
    u.name = t.name;
    u.capacity_blocks = t.capacity_bytes / block_bytes;
    u.block_bytes = block_bytes;
    use_.push_back(u);
  }
}

void TieredStore::put(std::size_t level, const PrefixCache::Key& key) {
  if (level == levels_.size()) return;  // below the last tier: gone
  Level& l = levels_[level];
  TierUse& u = use_[level];
  if (u.capacity_blocks == 0) {
    put(level + 1, key);
    return;
  }
  ++u.written_blocks;
  if (l.stamp.size() == u.capacity_blocks) {
    // Full: its least recently entered block moves down (or out).
    const PrefixCache::Key oldest = l.lru.begin()->second;
    l.lru.erase(l.lru.begin());
    l.stamp.erase(oldest);
    if (level + 1 == levels_.size()) ++u.dropped_blocks;
    put(level + 1, oldest);
  }
  l.stamp[key] = ++clock_;
  l.lru.emplace(clock_, key);
  u.peak_blocks = std::max<std::uint64_t>(u.peak_blocks, l.stamp.size());
}

void TieredStore::spill(const PrefixCache::Key& key) { put(0, key); }

std::optional<std::size_t> TieredStore::tier_of(const PrefixCache::Key& key) const {
  for (std::size_t i = 0; i < levels_.size(); ++i) {
    if (levels_[i].stamp.count(key) != 0) return i;
  }
  return std::nullopt;
}

void TieredStore::take(const PrefixCache::Key& key) {
  const std::optional<std::size_t> level = tier_of(key);
  if (!level) throw std::logic_error("kv tiers: taking a block no tier holds");
  Level& l = levels_[*level];
  l.lru.erase({l.stamp.at(key), key});
  l.stamp.erase(key);
  ++use_[*level].read_blocks;
}

std::uint64_t TieredStore::load_ps(const std::vector<std::uint64_t>& blocks) {
  std::uint64_t total = 0;
  for (std::size_t t = 0; t < blocks.size() && t < levels_.size(); ++t) {
    if (blocks[t] == 0) continue;
    const std::uint64_t bytes =
        hw::checked("the bytes of a prefix load", [&] { return (hw::Count(blocks[t]) * block_bytes_).value(); });
    const std::uint64_t ps = levels_[t].tier.transfer_ps(bytes);
    use_[t].read_ps += ps;
    total = hw::checked("a prefix load's time in picoseconds", [&] { return (hw::Count(total) + ps).value(); });
  }
  return total;
}

}  // namespace serving
