// g5sim solve (explore/required_spec.hpp): the least change of chip fields that meets a
// target, confirmed by direct runs, on a chip whose step time is DDR bytes / DDR bandwidth.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <sstream>
#include <string>

#include "explore/required_spec.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/config_error.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_required_spec {

namespace {

// DDR at 10 GB/s under 4 GDMA engines of 1,000 GB/s, no latencies, a TIU at 10^12 Hz: the
// step's time is its DDR bytes over the DDR bandwidth (test_sensitivity.cpp shows e = -1).
g5sim::SolveSpec ddr_bound_solve(std::vector<std::string> vary) {
  g5sim::SolveSpec spec;
  spec.workload.chip = {test_configs::tiny_chip(4, 10, 4), "ddr-bound"};
  spec.workload.model = g5sim::Model::from_yaml(test_configs::kDeepSeekV2Lite, "v2-lite-test");
  spec.workload.base.layers = 1;
  spec.workload.base.tp = spec.workload.base.ep = spec.workload.base.dp = 1;
  spec.workload.base.ctx = 4096;
  for (const std::string& v : vary) spec.vary.push_back(g5sim::parse_varied_field(v));
  return spec;
}

// The step's time on the DDR-bound chip at another DDR bandwidth, run directly.
double step_ms_at(const g5sim::SolveSpec& spec, double ddr_gb_per_s) {
  const g5sim::Chip chip = g5sim::Chip::from_yaml(test_configs::tiny_chip(4, ddr_gb_per_s, 4), "direct");
  return static_cast<double>(g5sim::simulate(chip, spec.workload.model, spec.workload.base).total_ps) / 1e9;
}

}  // namespace

TEST_CASE("solve finds the least DDR bandwidth that meets a step time, and 1 % less fails", "[solve]") {
  auto spec = ddr_bound_solve({"ddr.bandwidth_gb_per_s"});
  const double t10 = step_ms_at(spec, 10);
  // Asking for 80 % of the step's time at 10 GB/s: t = bytes / bw, so bw = 10 / 0.8 = 12.5 GB/s.
  spec.targets = {g5sim::Target{"step_ms", true, 0.8 * t10}};
  const g5sim::SolveReport r = g5sim::solve(spec);
  REQUIRE(r.outcome == "met");
  REQUIRE(r.answer.size() == 1);
  const double bw = r.answer[0];
  // Within the bisection's 0.1 % (and the step's whole picoseconds).
  CHECK(std::fabs(bw / 12.5 - 1) <= 0.001);
  // A direct run at the answer meets; 1 % less does not.
  CHECK(step_ms_at(spec, bw) <= 0.8 * t10);
  CHECK(step_ms_at(spec, bw * 0.99) > 0.8 * t10);
  // The report's own check is that run at 1 % below.
  REQUIRE(r.check_trial.has_value());
  const g5sim::SolveTrial& check = r.trials[*r.check_trial];
  // 1 % below the answer, toward the cheap end: bw x (1 - 0.01) (1 - 0.01 is the double 0.99), as
  // the chip config holds it: six significant digits (hw::format_field_value), read back.
  CHECK(check.values[0] == std::stod(fmt::format("{:.6g}", bw * 0.99)));
  CHECK_FALSE(check.meets);
  // Trial 0 is the chip as it is; the range's ends follow (a tenth and ten times 10 GB/s).
  CHECK(r.trials[0].stage == "base");
  CHECK(r.trials[1].values[0] == 1.0);
  CHECK(r.trials[2].values[0] == 100.0);
}

TEST_CASE("solve over several fields leaves a field that does not help alone", "[solve]") {
  auto spec = ddr_bound_solve({"ddr.bandwidth_gb_per_s", "engines.gdma.bandwidth_gb_per_s"});
  const double t10 = step_ms_at(spec, 10);
  spec.targets = {g5sim::Target{"step_ms", true, 0.8 * t10}};
  const g5sim::SolveReport r = g5sim::solve(spec);
  REQUIRE(r.outcome == "met");
  // The GDMA's bandwidth does not move the step (its column of the Jacobian is 0), so the least
  // change is DDR's alone: 12.5 GB/s again, within the scaling's 0.1 % of the step's log change.
  CHECK(std::fabs(r.answer[0] / 12.5 - 1) <= 0.001);
  CHECK(r.answer[1] == 1000.0);
  CHECK(step_ms_at(spec, r.answer[0]) <= 0.8 * t10);
}

TEST_CASE("solve says it cannot and names what binds", "[solve]") {
  // The GDMA engines are 100 times faster than DDR already: no GDMA bandwidth halves the step.
  auto spec = ddr_bound_solve({"engines.gdma.bandwidth_gb_per_s"});
  spec.targets = {g5sim::Target{"step_ms", true, 0.5 * step_ms_at(spec, 10)}};
  const g5sim::SolveReport r = g5sim::solve(spec);
  CHECK(r.outcome == "cannot");
  CHECK(r.answer.empty());
  CHECK_THAT(r.reason, Catch::Contains("no value of engines.gdma.bandwidth_gb_per_s in [100, 10000] meets") &&
                           Catch::Contains("bound by DDR"));
  // Base and the two ends: nothing to bisect.
  CHECK(r.trials.size() == 3);
}

TEST_CASE("solve is already met when the chip as it is meets, with the least it needs", "[solve]") {
  auto spec = ddr_bound_solve({"ddr.bandwidth_gb_per_s"});
  // 2.5 times the step at 10 GB/s: 4 GB/s would do.
  spec.targets = {g5sim::Target{"step_ms", true, 2.5 * step_ms_at(spec, 10)}};
  const g5sim::SolveReport r = g5sim::solve(spec);
  CHECK(r.outcome == "already");
  CHECK(std::fabs(r.answer[0] / 4.0 - 1) <= 0.001);
}

TEST_CASE("solve reads targets and ranges strictly", "[solve]") {
  CHECK(g5sim::parse_target("step_ms<=30").at_most);
  CHECK(g5sim::parse_target(" tokens_per_s_per_chip >= 2000 ").bound == 2000);
  CHECK_THROWS_WITH(g5sim::parse_target("step_ms<30"), "target: 'step_ms<30' is not METRIC<=X or METRIC>=X");
  CHECK_THROWS_WITH(g5sim::parse_target("step_ms<=-1"),
                    "target: 'step_ms<=-1' is not METRIC<=X or METRIC>=X with X > 0");
  CHECK_THROWS_WITH(g5sim::parse_varied_field("ddr.latency_ns=200:100"),
                    "vary: 'ddr.latency_ns=200:100': the range is not LO:HI with 0 < LO < HI");
  auto spec = ddr_bound_solve({"ddr.bandwidth_gb_per_s=20:40"});
  spec.targets = {g5sim::Target{"step_ms", true, 1}};
  CHECK_THROWS_WITH(g5sim::solve(spec), "vary: ddr.bandwidth_gb_per_s's range [20, 40] does not hold its value 10");
  spec = ddr_bound_solve({"ddr.bandwidth_gb_per_s"});
  spec.targets = {g5sim::Target{"tpot_p50_ms", true, 1}};
  CHECK_THROWS_WITH(g5sim::solve(spec), Catch::Contains("target: tpot_p50_ms is a serve's: give a serve workload"));
  spec.targets = {g5sim::Target{"step_ms", true, 1}};
  spec.vary.push_back(g5sim::parse_varied_field("ddr.bandwidth_gb_per_s"));
  CHECK_THROWS_WITH(g5sim::solve(spec), "vary: ddr.bandwidth_gb_per_s is given twice");
}

}  // namespace test_required_spec
