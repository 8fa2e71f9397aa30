#pragma once
// The kernel observer of layer replay (ops/layer_replay.hpp states the argument): records the
// kernel's state at the boundaries of watched layers.
//
// A layer of a program is a run of consecutive commands on every queue (queue q = core x engines
// + engine). Watched layer w starts on queue q at index starts[w][q] (0-based; a layer with no
// command on q starts where the next one does). Its boundary B_w is the settled instant after
// the first issue of any command at or past its start on any queue. At B_w the recorder reads the
// kernel's canonical state (sim/kernel_observer.hpp) relative to the layer: its starts, message
// ids minus message_base[w]. A boundary is comparable when every live message lies in the window
// [previous + message_lo[w], message_base[w] + message_hi[w] + (message_base[w] - previous)], with
// previous = message_previous[w], the base of the unit it follows; a watched layer that follows
// none (the first of each run) is not comparable. Watched layers are reached in
// order: starts[w][q] must not decrease with w on any queue.
//
// The states are compared as they come, not kept: the matchers ask only whether B_w equals the
// boundary d units before it in its run, d = 1..kMostBoundariesBack (loop replay's units of p
// iterations compare boundaries p apart), so the recorder keeps each run's last few states and
// notes each answer, where a 128k-token prefill would otherwise hold a state of some 20 KB for
// each of thousands of boundaries.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/kernel_observer.hpp"

namespace ops {

struct BoundaryWatch {
  std::vector<std::vector<std::uint32_t>> starts;  ///< [watched layer][queue]
  std::vector<std::uint32_t> message_base;         ///< [watched layer]
  std::vector<std::int64_t> message_lo;  ///< [watched layer]: lowest message id its commands name, relative to its base
  std::vector<std::int64_t> message_hi;  ///< [watched layer]: highest, relative to its base
  std::vector<std::uint8_t> follows;     ///< [watched layer]: 1 when it follows the previous unit of its run
  std::vector<std::uint32_t> message_previous;  ///< [watched layer]: that unit's message base
  /// [watched layer]: where that unit is in this watch (empty: the entry before; a merged watch
  /// of several replays interleaves their runs).
  std::vector<std::uint32_t> previous;
  std::size_t previous_of(std::size_t w) const { return previous.empty() ? w - 1 : previous[w]; }
};

/// How far back a boundary's state is compared (loop replay's longest period).
inline constexpr std::size_t kMostBoundariesBack = 4;

struct Boundary {
  bool seen = false;        ///< the layer was reached
  bool comparable = false;  ///< its relative state was complete (see above)
  sim::Tick time = 0;       ///< t_w
  /// Bit d - 1: this boundary and the one d units before it in its run are comparable and their
  /// relative states, canonical, are the same.
  std::uint8_t same_as_back = 0;
  bool same_as(std::size_t back) const {
    return back >= 1 && back <= kMostBoundariesBack && (same_as_back >> (back - 1)) & 1;
  }
  std::vector<std::uint32_t> completed;  ///< per queue: commands completed in order (absolute)
  std::vector<std::uint32_t> head;       ///< per queue: next command to issue (absolute)
};

class BoundaryRecorder final : public sim::KernelObserver {
 public:
  /// Checks the watch against a program of `queues` queues (std::logic_error when malformed).
  BoundaryRecorder(const BoundaryWatch& watch, std::size_t queues);
  std::uint32_t watched_from(std::size_t queue) const override;
  void issued(std::size_t queue, std::uint32_t index, sim::Tick now) override;
  void settled(const sim::KernelState& state) override;
  const std::vector<Boundary>& boundaries() const { return boundaries_; }

 private:
  const BoundaryWatch& watch_;
  std::vector<Boundary> boundaries_;
  std::uint32_t next_ = 0;              ///< first watched layer not reached yet
  std::vector<std::uint32_t> reached_;  ///< reached at the current time, state not yet recorded
  /// The comparable states a later unit of their run may still be compared with.
  std::unordered_map<std::size_t, std::vector<std::uint64_t>> recent_;
  std::vector<std::uint8_t> last_of_run_;  ///< [watched layer]: no later unit follows it
};

}  // namespace ops
