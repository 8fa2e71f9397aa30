#pragma once
// Max-min fair sharing of bandwidth between concurrent transfers (after SimGrid's lmm).
//
// Model. Constraints j have capacities C_j (bytes per tick). Flow i crosses the set P_i of
// constraints (its DMA engine's channel on its core, the shared DDR, ...). Rates x_i solve
//     maximise min_i x_i, then the next smallest, ...  subject to  sum_{i : j in P_i} x_i <= C_j.
// Progressive filling computes it: every unfixed flow grows at the same speed; the constraint
// whose fair share R_j / n_j (remaining capacity over its unfixed flows) is smallest saturates
// first; its flows are fixed at that share, which is charged to every other constraint they
// cross; repeat until every flow is fixed. Each flow's rate is then limited by its bottleneck,
// and no constraint is exceeded.
//
// Example (checked in tests): channel A cap 4, channel B cap 4, DDR cap 6; flows f1, f2 on A,
// f3 on B, all on DDR. Shares: A 4/2 = 2, B 4/1 = 4, DDR 6/3 = 2 -> fix f1, f2 at 2 (A, or DDR:
// the first in index order among equal shares). DDR has 6 - 4 = 2 left for f3, B has 4: f3 = 2.
//
// A one-pass shortcut (each flow at its tightest local share) is taken when it can be proven to
// be the max-min allocation; otherwise the progressive filling runs.
//
// The solver is recomputed by the simulator whenever the set of active transfers changes; it
// keeps its work arrays between calls so that a solve allocates nothing once warmed up.

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace sim {

struct FlowPath {
  static constexpr std::size_t kMaxConstraints = 4;  // hw::kMaxPathResources
  std::array<std::uint32_t, kMaxConstraints> constraints{};
  std::uint8_t count = 0;
};

class MaxMinSharing {
 public:
  explicit MaxMinSharing(std::vector<double> capacities);

  std::size_t constraint_count() const { return capacity_.size(); }
  double capacity(std::uint32_t constraint) const { return capacity_[constraint]; }

  /// Writes rates[i] for flows[i]. Every flow must cross at least one constraint.
  void solve(std::span<const FlowPath> flows, std::span<double> rates);

 private:
  bool solve_by_local_shares(std::span<const FlowPath> flows, std::span<double> rates);

  struct HeapEntry {
    double share;
    std::uint32_t constraint;
    std::uint32_t version;
  };

  std::vector<double> capacity_;
  // Work arrays, reused across solves.
  std::vector<double> remaining_;
  std::vector<std::uint32_t> unfixed_;
  std::vector<std::uint32_t> version_;
  std::vector<std::uint32_t> offset_;
  std::vector<std::uint32_t> members_;
  std::vector<std::uint8_t> fixed_;
  std::vector<HeapEntry> heap_;
  std::vector<std::uint32_t> bottleneck_;
  std::vector<double> load_;
  std::vector<std::uint8_t> mixed_;
};

}  // namespace sim
