#include "sim/max_min_sharing.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim/precision.hpp"

namespace sim {
namespace {

// Min-heap on (share, constraint): equal shares resolve by constraint index, so the fixing
// order, and with it every floating-point rounding, is the same on every run.
bool heap_after(double a_share, std::uint32_t a_c, double b_share, std::uint32_t b_c) {
  if (a_share != b_share) return a_share > b_share;
  return a_c > b_c;
}

}  // namespace

MaxMinSharing::MaxMinSharing(std::vector<double> capacities) : capacity_(std::move(capacities)) {
  for (double c : capacity_) {
    if (!(c > 0)) throw std::invalid_argument("MaxMinSharing: capacities must be positive");
  }
  const std::size_t n = capacity_.size();
  remaining_.resize(n);
  unfixed_.resize(n);
  version_.resize(n);
  offset_.resize(n + 1);
  load_.resize(n);
  mixed_.resize(n);
}

bool MaxMinSharing::solve_by_local_shares(std::span<const FlowPath> flows, std::span<double> rates) {
  // Give every flow the smallest fair share cap_j / n_j along its path. That is the max-min
  // allocation when (1) no constraint is over-subscribed and (2) every flow's tightest constraint
  // carries only flows at that same rate (so it is saturated and the flow is among its largest):
  // then each flow has a bottleneck. On a chip whose DMA channels sum below the DDR this always
  // holds, and it costs one pass instead of the progressive filling.
  for (std::size_t i = 0; i < flows.size(); ++i) {
    double r = std::numeric_limits<double>::infinity();
    std::uint32_t tightest = 0;
    for (std::uint8_t k = 0; k < flows[i].count; ++k) {
      const std::uint32_t j = flows[i].constraints[k];
      const double share = capacity_[j] / unfixed_[j];
      if (share < r) r = share, tightest = j;
    }
    rates[i] = r;
    bottleneck_[i] = tightest;
  }
  // Only the constraints these flows cross are touched: reset, accumulate, check.
  for (const FlowPath& f : flows) {
    for (std::uint8_t k = 0; k < f.count; ++k) load_[f.constraints[k]] = 0.0, mixed_[f.constraints[k]] = 0;
  }
  for (std::size_t i = 0; i < flows.size(); ++i) {
    for (std::uint8_t k = 0; k < flows[i].count; ++k) {
      const std::uint32_t j = flows[i].constraints[k];
      load_[j] += rates[i];
      if (rates[i] != capacity_[j] / unfixed_[j]) mixed_[j] = 1;
    }
  }
  for (std::size_t i = 0; i < flows.size(); ++i) {
    if (mixed_[bottleneck_[i]]) return false;
    for (std::uint8_t k = 0; k < flows[i].count; ++k) {
      const std::uint32_t j = flows[i].constraints[k];
      if (load_[j] > capacity_[j] * (1 + kCapacitySlack)) return false;
    }
  }
  return true;
}

void MaxMinSharing::solve(std::span<const FlowPath> flows, std::span<double> rates) {
  const std::size_t n = capacity_.size();
  for (const FlowPath& f : flows) {
    for (std::uint8_t k = 0; k < f.count; ++k) unfixed_[f.constraints[k]] = 0;
  }
  for (const FlowPath& f : flows) {
    for (std::uint8_t k = 0; k < f.count; ++k) ++unfixed_[f.constraints[k]];
  }
  bottleneck_.resize(flows.size());
  if (solve_by_local_shares(flows, rates)) return;
  // Progressive filling over every constraint: counts from scratch.
  std::fill(unfixed_.begin(), unfixed_.end(), 0u);
  for (const FlowPath& f : flows) {
    for (std::uint8_t k = 0; k < f.count; ++k) ++unfixed_[f.constraints[k]];
  }
  // Constraint -> member flows, as compressed rows.
  offset_[0] = 0;
  for (std::size_t j = 0; j < n; ++j) offset_[j + 1] = offset_[j] + unfixed_[j];
  members_.resize(offset_[n]);
  {
    std::vector<std::uint32_t>& cursor = version_;  // borrowed as fill cursor, reset below
    for (std::size_t j = 0; j < n; ++j) cursor[j] = offset_[j];
    for (std::uint32_t i = 0; i < flows.size(); ++i) {
      for (std::uint8_t k = 0; k < flows[i].count; ++k) members_[cursor[flows[i].constraints[k]]++] = i;
    }
  }
  fixed_.assign(flows.size(), 0);
  heap_.clear();
  auto cmp = [](const HeapEntry& a, const HeapEntry& b) {
    return heap_after(a.share, a.constraint, b.share, b.constraint);
  };
  for (std::uint32_t j = 0; j < n; ++j) {
    remaining_[j] = capacity_[j];
    version_[j] = 0;
    if (unfixed_[j] > 0) heap_.push_back({remaining_[j] / unfixed_[j], j, 0});
  }
  std::make_heap(heap_.begin(), heap_.end(), cmp);

  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), cmp);
    const HeapEntry top = heap_.back();
    heap_.pop_back();
    const std::uint32_t j = top.constraint;
    if (top.version != version_[j] || unfixed_[j] == 0) continue;  // stale entry
    const double share = std::max(0.0, remaining_[j]) / unfixed_[j];
    for (std::uint32_t m = offset_[j]; m < offset_[j + 1]; ++m) {
      const std::uint32_t i = members_[m];
      if (fixed_[i]) continue;
      fixed_[i] = 1;
      rates[i] = share;
      for (std::uint8_t k = 0; k < flows[i].count; ++k) {
        const std::uint32_t d = flows[i].constraints[k];
        remaining_[d] -= share;
        --unfixed_[d];
        if (d != j && unfixed_[d] > 0) {
          ++version_[d];
          heap_.push_back({std::max(0.0, remaining_[d]) / unfixed_[d], d, version_[d]});
          std::push_heap(heap_.begin(), heap_.end(), cmp);
        }
      }
    }
  }
}

}  // namespace sim
