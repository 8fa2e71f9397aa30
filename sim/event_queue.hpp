#pragma once
// A binary heap of small POD events ordered by (time, priority, seq). seq is assigned on insertion,
// so events with equal time and priority run first-in first-out (ns-3 / SST), never by pointer or
// by heap accident: the run is deterministic.

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
  std::uint64_t seq = 0;
  EventPriority priority = EventPriority::kState;
  EventType type = EventType::serial_done;
  /// serial_done: core * kMaxEngines + engine; transfer_startup_done: flow; transfer_completion:
  /// the solve generation it was scheduled by; rate_update: unused.
  std::uint32_t subject = 0;
};

class EventQueue {
 public:
  void reserve(std::size_t n) { storage_.reserve(n); }
  void push(Tick time, EventPriority priority, EventType type, std::uint32_t subject) {
    storage_.push_back(Event{time, next_seq_++, priority, type, subject});
    std::push_heap(storage_.begin(), storage_.end(), Later{});
  }
  bool empty() const { return storage_.empty(); }
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
      return x.seq > y.seq;
    }
  };
  std::vector<Event> storage_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace sim
