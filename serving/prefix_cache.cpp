#include "serving/prefix_cache.hpp"

#include <stdexcept>

namespace serving {

bool PrefixCache::acquire(const Key& key) {
  const auto found = entries_.find(key);
  if (found == entries_.end()) throw std::logic_error("prefix cache: acquiring a block that is not cached");
  Entry& e = found->second;
  const bool was_free = e.refs == 0;
  if (was_free) lru_.erase({e.freed, key});
  ++e.refs;
  return was_free;
}

void PrefixCache::insert(const Key& key) {
  if (!entries_.emplace(key, Entry{1, 0}).second) throw std::logic_error("prefix cache: a block entered twice");
}

bool PrefixCache::release(const Key& key) {
  const auto found = entries_.find(key);
  if (found == entries_.end() || found->second.refs == 0) {
    throw std::logic_error("prefix cache: releasing a block no request holds");
  }
  Entry& e = found->second;
  if (--e.refs > 0) return false;
  e.freed = ++clock_;
  lru_.emplace(e.freed, key);
  return true;
}

std::vector<PrefixCache::Key> PrefixCache::evict_beyond(std::uint64_t free_blocks) {
  std::vector<Key> dropped;
  while (lru_.size() > free_blocks) {
    const Key key = lru_.begin()->second;
    lru_.erase(lru_.begin());
    entries_.erase(key);
    dropped.push_back(key);
  }
  return dropped;
}

}  // namespace serving
