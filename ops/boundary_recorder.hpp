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

#include <cstdint>
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
};

struct Boundary {
  bool seen = false;                     ///< the layer was reached
  bool comparable = false;               ///< the state below is complete (see above)
  sim::Tick time = 0;                    ///< t_w
  std::vector<std::uint64_t> state;      ///< relative state, canonical
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
};

}  // namespace ops
