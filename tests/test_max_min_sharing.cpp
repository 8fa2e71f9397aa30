// Max-min fair sharing: rates worked out by hand with progressive filling.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "sim/max_min_sharing.hpp"
#include "sim/precision.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_max_min_sharing {

namespace {

sim::FlowPath path(std::initializer_list<std::uint32_t> constraints) {
  sim::FlowPath p;
  for (std::uint32_t c : constraints) p.constraints[p.count++] = c;
  return p;
}

}  // namespace

TEST_CASE("max-min sharing of one channel and a shared DDR", "[sim][sharing]") {
  // Constraints: 0 = channel A (4), 1 = channel B (4), 2 = DDR (6).
  sim::MaxMinSharing sharing({4.0, 4.0, 6.0});
  std::vector<double> rates(3);

  SECTION("two flows on one channel split it: 4 / 2 = 2 each (DDR 6 not binding)") {
    const std::vector<sim::FlowPath> flows{path({0, 2}), path({0, 2})};
    sharing.solve(flows, std::span(rates.data(), 2));
    CHECK(rates[0] == 2.0);
    CHECK(rates[1] == 2.0);
  }
  SECTION("three flows: f1, f2 on A, f3 on B; all on DDR") {
    // Shares: A 4/2 = 2, B 4/1 = 4, DDR 6/3 = 2. A (index 0) saturates first: f1 = f2 = 2.
    // DDR keeps 6 - 4 = 2 for f3 (B would allow 4): f3 = 2. Sum on DDR = 6 = its capacity.
    const std::vector<sim::FlowPath> flows{path({0, 2}), path({0, 2}), path({1, 2})};
    sharing.solve(flows, rates);
    CHECK(rates[0] == 2.0);
    CHECK(rates[1] == 2.0);
    CHECK(rates[2] == 2.0);
  }
  SECTION("a flow alone on B is capped by B, the DDR gives the rest to A's flow") {
    // DDR 6 over 2 flows = 3 each; B allows 4, A allows 4: the DDR binds first, 3 and 3.
    const std::vector<sim::FlowPath> flows{path({0, 2}), path({1, 2})};
    sharing.solve(flows, std::span(rates.data(), 2));
    CHECK(rates[0] == 3.0);
    CHECK(rates[1] == 3.0);
  }
}

TEST_CASE("max-min sharing gives unequal rates when bottlenecks differ", "[sim][sharing]") {
  // Channel A cap 1, channel B cap 10, DDR cap 6: f1 on A+DDR, f2 and f3 on B+DDR.
  // A's share 1 is the smallest: f1 = 1. DDR then has 5 for two flows (2.5 each), B allows 5 each:
  // the DDR binds, f2 = f3 = 2.5. Total 1 + 2.5 + 2.5 = 6 = DDR capacity.
  sim::MaxMinSharing sharing({1.0, 10.0, 6.0});
  const std::vector<sim::FlowPath> flows{path({0, 2}), path({1, 2}), path({1, 2})};
  std::vector<double> rates(3);
  sharing.solve(flows, rates);
  CHECK(rates[0] == 1.0);
  CHECK(rates[1] == 2.5);
  CHECK(rates[2] == 2.5);
}

namespace {

// Reference: progressive filling written the plain way, O(flows x constraints) a round. Every
// unfixed flow grows by the smallest remaining share; the constraints that saturate fix theirs.
std::vector<double> reference_rates(const std::vector<double>& capacity, const std::vector<sim::FlowPath>& flows) {
  std::vector<double> rate(flows.size(), 0.0), left = capacity;
  std::vector<bool> fixed(flows.size(), false);
  for (std::size_t round = 0; round < flows.size(); ++round) {
    std::vector<std::size_t> unfixed(capacity.size(), 0);
    for (std::size_t i = 0; i < flows.size(); ++i) {
      for (std::uint8_t k = 0; k < flows[i].count && !fixed[i]; ++k) ++unfixed[flows[i].constraints[k]];
    }
    double step = std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < capacity.size(); ++j) {
      if (unfixed[j] > 0) step = std::min(step, left[j] / static_cast<double>(unfixed[j]));
    }
    if (step == std::numeric_limits<double>::infinity()) break;
    for (std::size_t j = 0; j < capacity.size(); ++j) left[j] -= step * static_cast<double>(unfixed[j]);
    for (std::size_t i = 0; i < flows.size(); ++i) {
      if (fixed[i]) continue;
      rate[i] += step;
      for (std::uint8_t k = 0; k < flows[i].count; ++k) {
        if (left[flows[i].constraints[k]] <= sim::kCapacitySlack * capacity[flows[i].constraints[k]]) fixed[i] = true;
      }
    }
  }
  return rate;
}

}  // namespace

TEST_CASE("max-min sharing on random paths: feasible, every flow bottlenecked, the reference's rates",
          "[sim][sharing]") {
  // 3,000 instances from a fixed seed (the same ones every run): 2..7 constraints with whole
  // capacities 1..16, 1..14 flows over 1..4 distinct constraints each. Rates are sums and
  // quotients of those numbers, so they agree with the reference to rounding only: kRounding is
  // a relative 1e-9, a million times the double's precision and far below any real difference.
  constexpr double kRounding = 1e-9;
  std::mt19937 random(20261201);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(random); };
  std::size_t shortcut_like = 0;
  for (int instance = 0; instance < 3000; ++instance) {
    std::vector<double> capacity(static_cast<std::size_t>(uniform(2, 7)));
    for (double& c : capacity) c = uniform(1, 16);
    std::vector<sim::FlowPath> flows(static_cast<std::size_t>(uniform(1, 14)));
    for (sim::FlowPath& f : flows) {
      std::vector<std::uint32_t> all(capacity.size());
      std::iota(all.begin(), all.end(), 0u);
      std::shuffle(all.begin(), all.end(), random);
      f.count = static_cast<std::uint8_t>(uniform(1, static_cast<int>(std::min<std::size_t>(4, capacity.size()))));
      std::copy_n(all.begin(), f.count, f.constraints.begin());
    }
    sim::MaxMinSharing sharing(capacity);
    std::vector<double> rates(flows.size());
    sharing.solve(flows, rates);
    const std::vector<double> expected = reference_rates(capacity, flows);
    std::vector<double> load(capacity.size(), 0.0), most(capacity.size(), 0.0);
    for (std::size_t i = 0; i < flows.size(); ++i) {
      for (std::uint8_t k = 0; k < flows[i].count; ++k) {
        load[flows[i].constraints[k]] += rates[i];
        most[flows[i].constraints[k]] = std::max(most[flows[i].constraints[k]], rates[i]);
      }
    }
    bool all_equal_share = true;
    for (std::size_t i = 0; i < flows.size(); ++i) {
      INFO("instance " << instance << " flow " << i);
      REQUIRE(rates[i] > 0);
      CHECK(std::abs(rates[i] - expected[i]) <= kRounding * expected[i]);
      // Bottleneck: some constraint of the flow is full and no flow on it is faster.
      bool bottlenecked = false;
      for (std::uint8_t k = 0; k < flows[i].count; ++k) {
        const std::uint32_t j = flows[i].constraints[k];
        bottlenecked =
            bottlenecked || (load[j] >= capacity[j] * (1 - kRounding) && rates[i] >= most[j] * (1 - kRounding));
      }
      CHECK(bottlenecked);
      all_equal_share = all_equal_share && rates[i] == rates[0];
    }
    for (std::size_t j = 0; j < capacity.size(); ++j) CHECK(load[j] <= capacity[j] * (1 + kRounding));
    shortcut_like += all_equal_share;
  }
  // Both kinds occur: instances where every flow gets one rate, and where bottlenecks differ.
  CHECK(shortcut_like > 0);
  CHECK(shortcut_like < 3000);
}

}  // namespace test_max_min_sharing
