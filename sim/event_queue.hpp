#pragma once
// A binary heap of small POD events ordered by (time, priority, type, key). The key names what
// the event is about, not when it was queued: an instruction's engine (core x engines + engine),
// a transfer's (core, engine, command index), a solve's generation. So events at equal time run
// in an order that depends only on the set pending, never on insertion order, pointer or heap
// accident: the run is deterministic, and two states with the same pending events run the same
// way (the premise of exact layer replay, ops/layer_replay.hpp). Keys are unique among pending
// events of a type.

#include <algorithm>
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

struct Event {
  Tick time = 0;
  std::uint64_t key = 0;  ///< order among events of equal time, priority and type
  EventPriority priority = EventPriority::kState;
  EventType type = EventType::serial_done;
  /// serial_done: core * kMaxEngines + engine; transfer_startup_done: flow; transfer_completion:
  /// the solve generation it was scheduled by; rate_update: unused.
  std::uint32_t subject = 0;
};

class EventQueue {
 public:
  void reserve(std::size_t n) { storage_.reserve(n); }
  void push(Tick time, EventPriority priority, EventType type, std::uint32_t subject, std::uint64_t key) {
    storage_.push_back(Event{time, key, priority, type, subject});
    std::push_heap(storage_.begin(), storage_.end(), Later{});
  }
  bool empty() const { return storage_.empty(); }
  const Event& top() const { return storage_.front(); }
  /// The pending events in heap order (not sorted).
  const std::vector<Event>& pending() const { return storage_; }
  /// Whether x runs before y.
  static bool before(const Event& x, const Event& y) { return Later{}(y, x); }
  Event pop() {
    std::pop_heap(storage_.begin(), storage_.end(), Later{});
    Event e = storage_.back();
    storage_.pop_back();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      if (x.time != y.time) return x.time > y.time;
      if (x.priority != y.priority) return x.priority > y.priority;
      if (x.type != y.type) return x.type > y.type;
      return x.key > y.key;
    }
  };
  std::vector<Event> storage_;
};
static_assert(sizeof(Event) == 24, "events are copied on every heap move: keep them small");

}  // namespace sim
