#pragma once
// Which resource limits an op (or a whole run): the one whose work fills most of its interval.
//
// For an interval [start, end) of length D and the commands that belong to it, the work of each
// resource is the time it needs at its full capacity:
//   serial engine E (TIU, HAU)   w_E = max over cores of the busy time of E's commands there
//   DMA engine E (its channel)   w_E = max over cores of sum(bus bytes) / channel capacity
//                                      (bandwidth x efficiency, or bytes in flight / round trip)
//   shared resource R (DDR, C2C, L2)
//                                w_R = sum over every core of the bytes crossing R / capacity(R)
//                                      (DMA bus bytes; a collective's payload)
// bound_by = argmax_X w_X and bound_share = w_X / D, the fraction of the interval that resource
// is busy. When no resource is busy half of the interval (bound_share < 0.5), the time goes to
// start-ups, round trips and waits on other engines or cores (barriers): bound_by = "latency"
// (bound_share still tells how busy the busiest resource was).
// Ties go to the first in the order serial engines, DMA channels, shared resources (chip order).
// An interval of zero length is bound by nothing ("-", share 0).

#include <cstdint>
#include <string>
#include <vector>

#include "hw/chip.hpp"
#include "ops/lowering.hpp"
#include "sim/command.hpp"

namespace ops {

struct Bound {
  std::string resource = "-";  ///< "TIU", "GDMA", "DDR", "C2C", "L2", ..., "latency", "-"
  double share = 0;            ///< busy fraction of the interval of that resource
};

/// Work per resource, in ns: the chip's engines (declaration order) then its shared resources.
struct ResourceWork {
  std::vector<double> engine_ns;    ///< serial engines: busy; DMA engines: channel time; collective: 0
  std::vector<double> resource_ns;  ///< per shared resource (hw::Chip::resources order)
};

class LimitingResource {
 public:
  explicit LimitingResource(const hw::Chip& chip);

  /// Work of every op of `lowered` (indexed by its op ids), and of the whole run, where op r's
  /// commands count `multiplicity(r)` times (layer replay: ops/layer_replay.hpp; 1 otherwise).
  /// Sums are integers (picoseconds of serial engines, bytes of transfers), converted to time
  /// once, so they do not depend on the order commands are met in.
  template <class Multiplicity>
  void measure(const Lowered& lowered, const sim::Trace& trace, std::size_t op_count, Multiplicity multiplicity);
  void measure(const Lowered& lowered, const sim::Trace& trace, std::size_t op_count) {
    measure(lowered, trace, op_count, [](std::size_t) { return std::uint64_t{1}; });
  }
  const ResourceWork& op_work(std::size_t op) const { return ops_[op]; }
  const ResourceWork& run_work() const { return run_; }

  /// The limiting resource of `work` over an interval of `duration` picoseconds.
  Bound bound(const ResourceWork& work, sim::Tick duration) const;

 private:
  void measure_counts(const Lowered& lowered, const sim::Trace& trace, std::size_t op_count,
                      const std::vector<std::uint64_t>& multiplicity);

  const hw::Chip& chip_;
  std::vector<std::string> names_;  ///< engines' display names, then resources' in capitals
  std::vector<ResourceWork> ops_;
  ResourceWork run_;
};

template <class Multiplicity>
void LimitingResource::measure(const Lowered& lowered, const sim::Trace& trace, std::size_t op_count,
                               Multiplicity multiplicity) {
  std::vector<std::uint64_t> m(op_count);
  for (std::size_t r = 0; r < op_count; ++r) m[r] = multiplicity(r);
  measure_counts(lowered, trace, op_count, m);
}

}  // namespace ops
