#pragma once
// A binary heap of small POD events ordered by (time, priority, type, key). The key names what
// the event is about, not when it was queued: an instruction's engine (core x engines + engine),
// a transfer's (core, engine, command index), a solve's generation. So events at equal time run
// in an order that depends only on the set pending, never on insertion order, pointer or heap
// accident: the run is deterministic, and two states with the same pending events run the same
// way (the premise of exact layer replay, ops/layer_replay.hpp). Keys are unique among pending
// events of a type.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/time.hpp"

namespace sim {

/// Named priorities; lower runs first at equal time.
enum class EventPriority : std::uint8_t {
  /// State changes: instruction ends, transfer start-up ends, transfer completions.
  kState = 0,
  /// Bandwidth re-solve: after every state change of the same tick, so it runs once per tick.
  kRateUpdate = 1,
};

enum class EventType : std::uint8_t { serial_done, transfer_startup_done, transfer_completion, rate_update };
/// The order word gives the type 2 bits (61-62) under the priority bit (63): a fifth type would
/// spill into the priority and reorder the tick.
constexpr unsigned kEventTypeBits = 2;
static_assert(static_cast<unsigned>(EventType::rate_update) < (1u << kEventTypeBits),
              "EventType outgrew its bits in Event::order");
static_assert(static_cast<unsigned>(EventPriority::kRateUpdate) <= 1, "EventPriority has one bit in Event::order");

struct Event {
  Tick time = 0;
  /// Order among events of equal time: priority, type, then the key (packed in one word so that
  /// a comparison is two integer compares).
  std::uint64_t order = 0;
  /// serial_done: core * kMaxEngines + engine; transfer_startup_done: flow; transfer_completion:
  /// the solve generation it was scheduled by (the kernel keeps it beside the heap); rate_update:
  /// unused.
  std::uint32_t subject = 0;
  EventPriority priority = EventPriority::kState;
  EventType type = EventType::serial_done;

  static std::uint64_t order_of(EventPriority priority, EventType type, std::uint64_t key) {
    return (std::uint64_t{static_cast<std::uint8_t>(priority)} << 63) |
           (std::uint64_t{static_cast<std::uint8_t>(type)} << 61) | (key & ((std::uint64_t{1} << 61) - 1));
  }
};
static_assert(sizeof(Event) == 24, "events are copied on every heap move: keep them small");

/// A 4-ary min-heap on (time, order): half the depth of a binary heap, and the four children of a
/// node share a cache line or two.
class EventQueue {
 public:
  void reserve(std::size_t n) { storage_.reserve(n); }
  /// `key` (below 2^61) orders events of equal time, priority and type.
  void push(Tick time, EventPriority priority, EventType type, std::uint32_t subject, std::uint64_t key) {
    const Event e{time, Event::order_of(priority, type, key), subject, priority, type};
    std::size_t hole = storage_.size();
    storage_.push_back(e);
    while (hole > 0) {
      const std::size_t parent = (hole - 1) / kArity;
      if (!before(e, storage_[parent])) break;
      storage_[hole] = storage_[parent];
      hole = parent;
    }
    storage_[hole] = e;
  }
  bool empty() const { return storage_.empty(); }
  const Event& top() const { return storage_.front(); }
  /// The pending events in heap order (not sorted).
  const std::vector<Event>& pending() const { return storage_; }
  /// Whether x runs before y.
  static bool before(const Event& x, const Event& y) { return x.time != y.time ? x.time < y.time : x.order < y.order; }
  Event pop() {
    const Event first = storage_.front();
    const Event last = storage_.back();
    storage_.pop_back();
    const std::size_t n = storage_.size();
    if (n == 0) return first;
    std::size_t hole = 0;
    for (;;) {
      const std::size_t child = hole * kArity + 1;
      if (child >= n) break;
      std::size_t best = child;
      const std::size_t end = std::min(child + kArity, n);
      for (std::size_t c = child + 1; c < end; ++c) {
        if (before(storage_[c], storage_[best])) best = c;
      }
      if (!before(storage_[best], last)) break;
      storage_[hole] = storage_[best];
      hole = best;
    }
    storage_[hole] = last;
    return first;
  }

 private:
  static constexpr std::size_t kArity = 4;
  std::vector<Event> storage_;
};

}  // namespace sim
