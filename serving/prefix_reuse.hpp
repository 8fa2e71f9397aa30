#pragma once
// The serving engine's side of prefix caching (serving/prefix_cache.hpp states the model): each
// request's parent in the content chain, and the three moments the cache takes part in:
//   admission  a request with nothing computed reuses the cached blocks its prompt starts with
//              (computed = their tokens; each a reference, a free one taken from the pool);
//   a step     the full blocks a request has computed are entered under their keys (a key that is
//              cached already is referenced instead, and the request's own copy freed);
//   leaving    release_blocks (serving/engine_state.hpp).
// Parents: a request of a session (ServeRequest::session) continues the session's previous
// request in the load's order; a first turn, or a request without a session, with a
// shared_prefix > 0 continues the root, the load's system prompt.

#include <cstdint>
#include <optional>
#include <vector>

#include "g5sim/serve.hpp"
#include "serving/engine_state.hpp"

namespace serving {

class PrefixReuse {
 public:
  PrefixReuse(const std::vector<g5sim::ServeRequest>& requests, std::uint64_t block_tokens);

  std::uint64_t block_tokens() const { return block_tokens_; }
  /// The key of block `block` of request `request`'s tokens (prefix_cache.hpp).
  PrefixCache::Key key(std::size_t request, std::uint64_t block) const;
  /// The cached blocks `l`'s prompt starts with (nothing computed, no block held), at most
  /// (prompt - 1) / block_tokens of them, and how many of them are free entries (blocks the pool
  /// gives up when they are referenced).
  /// With tiers below (serving/kv_tiers.hpp), the run goes on through blocks a tier holds:
  /// `loaded` of them, loaded[t] from tier t, each taking a device block of its own.
  struct Hit {
    std::uint64_t blocks = 0, free_blocks = 0, loaded = 0;
    std::vector<std::uint64_t> from_tier;
  };
  Hit find(const KvBlockPool& pool, std::size_t request, const Live& l) const;
  /// References `hit`'s blocks for `l` (a tier's come back up into the device cache): computed =
  /// their tokens, which it returns; `l` runs no step before now + the tiers' load time (ready_ps).
  std::uint64_t admit(KvBlockPool& pool, std::size_t request, Live& l, const Hit& hit, std::uint64_t now) const;
  /// Enters the full blocks `l` has computed since the last call (at most the blocks it holds).
  void enter_full_blocks(KvBlockPool& pool, std::size_t request, Live& l) const;

 private:
  std::vector<std::optional<std::size_t>> parent_;  ///< root_ for the system prompt
  std::vector<std::uint64_t> shared_;
  std::uint64_t block_tokens_ = 0;
  std::size_t root_ = 0;
};

}  // namespace serving
