// Max-min fair sharing: rates worked out by hand with progressive filling.
#include <catch2/catch.hpp>

#include <vector>

#include "sim/max_min_sharing.hpp"

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
