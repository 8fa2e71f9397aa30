#pragma once
// Automatic prefix caching, as vLLM's (v1 KVCacheManager) and SGLang's radix cache reuse a
// prompt's leading blocks across requests, for one instance's KV cache.
//
// Identity. A block is block_tokens tokens; requests carry no token text, so a block's content is
// named by where it was first written: key (origin, b), block b of request `origin`'s tokens. A
// request r with a parent p (ServeRequest::shared_prefix: its previous turn, or the load's system
// prompt, the root) holds p's content in its first shared_prefix tokens, so its full block b with
// (b + 1) block_tokens <= shared_prefix is p's block b, and so on up the chain:
//   key(r, b) = key(p, b) when r has a parent p and (b + 1) x block_tokens <= shared_prefix(r),
//               else (r, b).
// Two requests hold the same content exactly when their keys are equal, as two prompts' block
// hashes (each over its tokens and its parent block's hash) are.
//
// Entries. A full block a request has computed is entered under its key; while requests
// reference it (refs > 0) it is a used block of the pool, and when the last lets go it stays
// cached but free (evictable): a later request whose prompt starts with its key reuses it
// without computing it again. Free blocks are taken for new ones in least-recently-freed order
// (LRU); a request lets go of its blocks last block first, so a prompt's tail goes before its
// head (vLLM frees in reverse for the same reason). An evicted entry is gone, or, with host and
// SSD tiers (serving/kv_tiers.hpp), moved down one.
//
// A hit. A request admitted with nothing computed reuses the longest run of cached blocks its
// prompt starts with, at most floor((P - 1) / block_tokens) of them (the last prompt token is
// always computed, for its logits; vLLM caps the hit at P - 1 tokens the same way).

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace serving {

class PrefixCache {
 public:
  struct Key {
    std::uint64_t origin = 0, block = 0;
    auto operator<=>(const Key&) const = default;
  };

  /// Whether `key` is cached (referenced or free).
  bool contains(const Key& key) const { return entries_.count(key) != 0; }
  /// Whether `key` is cached and no request references it.
  bool is_free(const Key& key) const {
    const auto found = entries_.find(key);
    return found != entries_.end() && found->second.refs == 0;
  }
  /// References `key`'s entry (it must exist); true when it was free (it becomes a used block).
  bool acquire(const Key& key);
  /// Enters `key` as referenced once (it must not exist).
  void insert(const Key& key);
  /// Lets go of `key` once; true when no request references it any more (a free block now).
  bool release(const Key& key);
  /// Free cached blocks.
  std::uint64_t evictable() const { return lru_.size(); }
  /// Drops the least recently freed entries until at most `free_blocks` are free and cached;
  /// returns the keys dropped, oldest first.
  std::vector<Key> evict_beyond(std::uint64_t free_blocks);
  std::uint64_t entries() const { return entries_.size(); }

 private:
  struct Entry {
    std::uint64_t refs = 0;
    std::uint64_t freed = 0;  ///< when it was last freed (the LRU order), while refs == 0
  };
  std::map<Key, Entry> entries_;
  std::set<std::pair<std::uint64_t, Key>> lru_;  ///< free entries by (freed, key)
  std::uint64_t clock_ = 0;
};

}  // namespace serving
