#pragma once
// An observer of the event kernel: told when chosen commands issue, and once the time they issued
// at has settled (every event at that time has run), when it may read the kernel's state. Layer
// replay's boundary recorder (ops/boundary_recorder.hpp) is one; the kernel knows nothing of
// layers.
//
// The state an observer reads is the kernel's canonical encoding relative to a frame: queue
// indices minus the frame's start on their queue, message ids minus its base, times minus now,
// transfers named by (core, engine, command relative to the frame), pending events in the order
// they will run, every double bit for bit; ids the kernel hands out are labels, not part of the
// state. The kernel is deterministic and shift-invariant, so two settled states with equal
// encodings evolve alike, shifted, for as long as the commands they meet are shifted copies.
// Messages belong to the state while they are live: sent at least once with a wait still to
// pass, or with a core blocked on them. Only live messages with ids in the frame's window are
// encoded; the encoding says whether that was every live message (complete).

#include <cstdint>
#include <limits>
#include <vector>

#include "sim/time.hpp"

namespace sim {

struct StateFrame {
  const std::vector<std::uint32_t>* starts = nullptr;  ///< per queue (core x engines + engine)
  std::int64_t message_base = 0;
  std::int64_t message_lo = 1, message_hi = 0;  ///< window of absolute message ids (empty when lo > hi)
};

/// What an observer may read of the kernel at a settled time.
class KernelState {
 public:
  virtual std::vector<std::uint64_t> canonical(const StateFrame& frame, bool& complete) const = 0;
  virtual std::uint32_t completed(std::size_t queue) const = 0;  ///< commands completed in order
  virtual std::uint32_t head(std::size_t queue) const = 0;       ///< next command to issue
  virtual std::size_t queues() const = 0;
  virtual Tick now() const = 0;

 protected:
  ~KernelState() = default;
};

class KernelObserver {
 public:
  static constexpr std::uint32_t kNotWatched = std::numeric_limits<std::uint32_t>::max();
  virtual ~KernelObserver() = default;
  /// The first command index of `queue` whose issue is reported (kNotWatched: none). Read at the
  /// start and again after each report.
  virtual std::uint32_t watched_from(std::size_t queue) const = 0;
  /// Command `index` of `queue`, at or past watched_from(queue), issues at `now`.
  virtual void issued(std::size_t queue, std::uint32_t index, Tick now) = 0;
  /// The time of the last report has settled.
  virtual void settled(const KernelState& state) = 0;
};

}  // namespace sim
