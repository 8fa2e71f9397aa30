#pragma once
// The discrete-event kernel: runs a Program of per-core TIU / GDMA / SDMA queues on a chip and
// records when every command started and ended.
//
// Engine semantics (see sim/command.hpp for the dependency rules):
//   TIU  - one instruction at a time, in queue order; duration = cycles at tiu_clock_mhz.
//   HAU  - the same, for sort / top-k commands.
//   GDMA, SDMA - issue in queue order, up to `outstanding` transfers in flight per engine per core.
//     A transfer waits its engine's start-up latency plus one DDR round trip, then moves its bus
//     bytes (whole DDR bursts, per row when strided) at a rate recomputed whenever the set of
//     moving transfers changes: max-min fair sharing (sim/max_min_sharing.hpp) over its engine
//     channel on its core, capacity min(bandwidth, bytes_in_flight / DDR latency) (Little's law),
//     and the shared DDR (bandwidth * eta_m). Completion ids
//     advance in order (a later transfer finishing early does not release waits on it until all
//     earlier ones have finished), while each record keeps the transfer's own end time.
// Time is integer picoseconds; events at equal time run in (priority, insertion) order.
// A program that can never finish (a wait on an id that is never completed) raises
// std::logic_error naming the stuck queue heads.

#include "hw/chip.hpp"
#include "sim/command.hpp"

namespace sim {

class Simulator {
 public:
  explicit Simulator(const hw::Chip& chip);
  Trace run(const Program& program) const;

 private:
  const hw::Chip& chip_;
};

}  // namespace sim
