#include "serving/prefix_reuse.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "hw/checked_count.hpp"

namespace serving {

PrefixReuse::PrefixReuse(const std::vector<g5sim::ServeRequest>& requests, std::uint64_t block_tokens)
    : block_tokens_(block_tokens), root_(requests.size()) {
  std::map<std::string, std::size_t> last_turn;
  parent_.resize(requests.size());
  shared_.resize(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const g5sim::ServeRequest& r = requests[i];
    shared_[i] = r.shared_prefix;
    const auto previous = r.session.empty() ? last_turn.end() : last_turn.find(r.session);
    if (previous != last_turn.end()) {
      parent_[i] = previous->second;
    } else if (r.shared_prefix > 0) {
      parent_[i] = root_;
    }
    if (!r.session.empty()) last_turn[r.session] = i;
  }
}

PrefixCache::Key PrefixReuse::key(std::size_t request, std::uint64_t block) const {
  std::size_t r = request;
  // Up the chain while the block lies within the shared prefix (each step goes to an earlier request).
  while (r != root_ && parent_[r] && (block + 1) * block_tokens_ <= shared_[r]) r = *parent_[r];
  return {r, block};
}

PrefixReuse::Hit PrefixReuse::find(const KvBlockPool& pool, std::size_t request, const Live& l) const {
  Hit hit;
  if (!pool.cache || l.computed != 0 || l.blocks != 0 || l.prompt == 0) return hit;
  if (pool.tiers) hit.from_tier.assign(pool.tiers->tiers(), 0);
  const std::uint64_t most = (l.prompt - 1) / block_tokens_;
  while (hit.blocks < most) {
    const PrefixCache::Key k = key(request, hit.blocks);
    if (pool.cache->contains(k)) {
      hit.free_blocks += pool.cache->is_free(k) ? 1 : 0;
    } else if (const std::optional<std::size_t> tier = pool.tiers ? pool.tiers->tier_of(k) : std::nullopt) {
      ++hit.loaded;
      ++hit.from_tier[*tier];
    } else {
      break;
    }
    ++hit.blocks;
  }
  return hit;
}

std::uint64_t PrefixReuse::admit(KvBlockPool& pool, std::size_t request, Live& l, const Hit& hit,
                                 std::uint64_t now) const {
  // The device's blocks first (referenced, so that no block taken below evicts them), then the
  // tiers' (each a device block again), then the pool's count.
  for (std::uint64_t b = 0; b < hit.blocks; ++b) {
    const PrefixCache::Key k = key(request, b);
    if (pool.cache->contains(k)) {
      pool.cache->acquire(k);
    } else {
      pool.tiers->take(k);
      pool.cache->insert(k);
    }
    l.refs.push_back(k);
  }
  pool.take(hit.free_blocks + hit.loaded);
  if (hit.loaded > 0) {
    const std::uint64_t load = pool.tiers->load_ps(hit.from_tier);
    l.ready_ps = hw::checked("the serve's time in picoseconds", [&] { return (hw::Count(now) + load).value(); });
  }
  l.blocks = hit.blocks;
  l.computed = hit.blocks * block_tokens_;
  return l.computed;
}

void PrefixReuse::enter_full_blocks(KvBlockPool& pool, std::size_t request, Live& l) const {
  if (!pool.cache) return;
  const std::uint64_t full = std::min(l.computed / block_tokens_, l.blocks);
  for (std::uint64_t b = l.refs.size(); b < full; ++b) {
    const PrefixCache::Key k = key(request, b);
    if (!pool.cache->contains(k)) {
      pool.cache->insert(k);  // its own block becomes the entry
    } else {
      // Cached already (written by another request meanwhile): referenced, its own copy freed; a
      // free entry becomes a used block in that copy's place (the pool's count is unchanged).
      if (!pool.cache->acquire(k)) pool.give_back(1);
    }
    l.refs.push_back(k);
  }
}

}  // namespace serving
