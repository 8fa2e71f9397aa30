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
#include "hw/cost_model.hpp"
#include "ops/lowering.hpp"
#include "sim/program.hpp"

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

  /// The same in one pass with the caller's own: begin(), then every command of a core, core
  /// after core, each core closed by end_core(), then finish().
  void begin(std::vector<std::uint64_t> multiplicity);
  /// `copies`: the command stands for that many of its op (loop replay), each the same work.
  void add(hw::EngineId engine, const sim::Command& cmd, const sim::CommandRecord& record, std::uint64_t copies = 1) {
    if (cmd.kind != sim::CommandKind::compute && cmd.kind != sim::CommandKind::transfer) return;
    const EngineRule& rule = rules_[engine];
    std::uint64_t units = 0;
    if (rule.serial) {
      units = copies * (record.end - record.start);
    } else {
      add_transfer(rule, cmd, copies, units);
      if (rule.unit_ns == 0) return;
    }
    if (units == 0) return;
    std::uint64_t& slot = core_op_[static_cast<std::size_t>(cmd.op) * rules_.size() + engine];
    if (slot == 0) touched_.push_back(static_cast<std::uint32_t>(cmd.op * rules_.size() + engine));
    slot += units;
    core_run_[engine] += multiplicity_[cmd.op] * units;
  }
  void end_core();
  void finish();

  /// The shared resources (Chip::resources indices) a transfer of `engine` crosses: its route
  /// (hw/routes.hpp) by the command's direction.
  const std::vector<std::uint32_t>& crossed(hw::EngineId engine, const sim::Command& cmd) const {
    return crossed(rules_[engine], cmd);
  }

  const ResourceWork& op_work(std::size_t op) const { return ops_[op]; }
  const ResourceWork& run_work() const { return run_; }

  /// The limiting resource of `work` over an interval of `duration` picoseconds.
  Bound bound(const ResourceWork& work, sim::Tick duration) const;

 private:
  /// How one engine's commands are charged, derived once from the chip.
  struct EngineRule {
    bool serial = false;
    bool dma = false;
    double unit_ns = 0;  ///< ns per unit of work: a picosecond (serial), a bus byte of the channel
    /// Shared resources a transfer crosses, by route: its engine's path, to another node, into
    /// the L2, from the L2.
    std::vector<std::uint32_t> own, to_node, to_l2, from_l2;
  };
  void add_transfer(const EngineRule& rule, const sim::Command& cmd, std::uint64_t copies, std::uint64_t& units);
  static const std::vector<std::uint32_t>& crossed(const EngineRule& rule, const sim::Command& cmd) {
    return sim::within_l2(cmd.direction)                   ? rule.from_l2
           : cmd.direction == sim::Direction::chip_to_node ? rule.to_node
           : cmd.direction == sim::Direction::ddr_to_l2    ? rule.to_l2
                                                           : rule.own;
  }

  const hw::Chip& chip_;
  hw::CostModel cost_;
  std::vector<std::string> names_;  ///< engines' display names, then resources' in capitals
  std::vector<EngineRule> rules_;
  std::vector<ResourceWork> ops_;
  ResourceWork run_;
  // The measure in progress.
  std::vector<std::uint64_t> multiplicity_, op_bytes_, run_bytes_, core_op_, core_run_, run_units_;
  std::vector<std::uint32_t> touched_;
};

template <class Multiplicity>
void LimitingResource::measure(const Lowered& lowered, const sim::Trace& trace, std::size_t op_count,
                               Multiplicity multiplicity) {
  std::vector<std::uint64_t> m(op_count);
  for (std::size_t r = 0; r < op_count; ++r) m[r] = multiplicity(r);
  begin(std::move(m));
  for (std::size_t c = 0; c < lowered.program.cores.size(); ++c) {
    for (std::size_t e = 0; e < lowered.program.cores[c].queues.size(); ++e) {
      const auto& queue = lowered.program.cores[c].queues[e];
      const auto& records = trace.cores[c][e];
      for (std::size_t i = 0; i < queue.size(); ++i) add(static_cast<hw::EngineId>(e), queue[i], records[i]);
    }
    end_core();
  }
  finish();
}

}  // namespace ops
