// g5sim sensitivity (explore/sensitivity.hpp): elasticities by central differences of real
// runs; a field that alone sets the time has elasticity -1, one the run never feels 0.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "explore/sensitivity.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/chip_fields.hpp"
#include "hw/config_error.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_sensitivity {

namespace {

// A chip whose DDR alone sets a decode step's time: DDR at 10 GB/s under 4 GDMA engines of
// 1,000 GB/s each, no latency, no start-up, no per-access overhead, and a TIU clocked at 10^12 Hz
// (1 cycle = 1 ps: its compute is a few ns of a ~59 ms step).
const std::string kDdrBound = test_configs::tiny_chip(4, 10, 4);

g5sim::SensitivitySpec ddr_bound_spec(std::vector<std::string> fields) {
  g5sim::SensitivitySpec spec;
  spec.workload.chip = {kDdrBound, "ddr-bound"};
  spec.workload.model = g5sim::Model::from_yaml(test_configs::kDeepSeekV2Lite, "v2-lite-test");
  spec.workload.base.layers = 1;
  spec.workload.base.tp = spec.workload.base.ep = spec.workload.base.dp = 1;
  spec.workload.base.ctx = 4096;
  spec.fields = std::move(fields);
  return spec;
}

const g5sim::FieldSensitivity& field(const g5sim::SensitivityPoint& p, const std::string& name) {
  for (const auto& f : p.fields) {
    if (f.field == name) return f;
  }
  FAIL("no field " << name);
  return p.fields.front();
}

}  // namespace

TEST_CASE("numeric_chip_fields lists every number of a chip config in document order", "[sensitivity]") {
  const auto fields = hw::numeric_chip_fields(test_configs::kSg2262, "sg2262-test");
  // Counted by hand in test_configs::kSg2262: cores, lmem_bytes_per_core (2); ddr's 6; c2c's 3;
  // the TIU's clock, lanes, cube_n, 2 cube MAC rates, 2 vector EU rates, 3 MM2 inits, bank
  // conflict, cube efficiency, vector init, SFU init, SFU rate (15); gdma's and sdma's
  // bandwidth, efficiency, start-up, outstanding, bytes in flight (5 + 5); cdma's start-up and
  // outstanding (2); hau's sort width, compare and init cycles (3): 41. Names and lists are not.
  REQUIRE(fields.size() == 41);
  CHECK(fields[0] == "cores");
  CHECK(fields[1] == "lmem_bytes_per_core");
  CHECK(fields[2] == "ddr.bandwidth_gb_per_s");
  CHECK(fields[14] == "engines.tiu.cube_macs_per_lane_per_cycle.fp8");
  CHECK(fields.back() == "engines.hau.init_cycles");
}

TEST_CASE("Where DDR alone binds a decode step its elasticity is -1 and the TIU clock's 0", "[sensitivity]") {
  const auto spec =
      ddr_bound_spec({"ddr.bandwidth_gb_per_s", "engines.tiu.clock_mhz", "engines.gdma.bandwidth_gb_per_s"});
  const g5sim::SensitivityReport r = g5sim::sensitivity(spec);
  REQUIRE(r.points.size() == 1);
  const g5sim::SensitivityPoint& p = r.points[0];
  CHECK(p.bound_by == "DDR");
  // 1 base run + 3 fields x 2 sides.
  CHECK(r.runs == 7);
  const auto& ddr = field(p, "ddr.bandwidth_gb_per_s");
  // 10 GB/s +- 5 %: 9.5 and 10.5 as the config writes them.
  REQUIRE(ddr.low_value == Approx(9.5).epsilon(0));
  REQUIRE(ddr.high_value == Approx(10.5).epsilon(0));
  CHECK(ddr.method == "central");
  // t = DDR bytes / bandwidth: t(9.5) / t(10.5) = 10.5 / 9.5, so e = -1 but for the commands'
  // rounding to whole picoseconds and the TIU's few ns (a part in 10^7 of the step).
  CHECK(*ddr.metric_low / *ddr.metric_high == Approx(10.5 / 9.5).epsilon(1e-6));
  CHECK(std::fabs(*ddr.elasticity + 1) < 1e-6);
  // The TIU's clock is at its top (10^6 MHz): only the backward side runs; the step barely moves.
  const auto& tiu = field(p, "engines.tiu.clock_mhz");
  CHECK(tiu.method == "backward");
  CHECK(std::fabs(*tiu.elasticity) < 1e-6);
  // A faster GDMA changes nothing: DDR is the bottleneck of every transfer.
  CHECK(field(p, "engines.gdma.bandwidth_gb_per_s").elasticity.value() == 0.0);
  // Ranked by |elasticity|.
  CHECK(p.fields[0].field == "ddr.bandwidth_gb_per_s");
}

TEST_CASE("A refused side leaves a one-sided difference and a zero field none", "[sensitivity]") {
  // cube_efficiency 1 (written whole, taken as the fraction 0.95) cannot go to 1.05 (the range is
  // (0, 1]); the SDMA's outstanding 1 is a count: 0.95 and 1.05 are refused, so it moves by one
  // whole command, to 0 (no logarithm) and 2; cdma.startup_ns is 0.
  const auto spec =
      ddr_bound_spec({"engines.tiu.cube_efficiency", "engines.sdma.outstanding", "engines.cdma.startup_ns"});
  const g5sim::SensitivityReport r = g5sim::sensitivity(spec);
  const g5sim::SensitivityPoint& p = r.points[0];
  const auto& eff = field(p, "engines.tiu.cube_efficiency");
  CHECK(eff.method == "backward");
  CHECK(eff.low_value == Approx(0.95).epsilon(0));
  CHECK_FALSE(eff.high_value.has_value());
  CHECK(eff.note.find("engines.tiu.cube_efficiency = 1.05") != std::string::npos);
  const auto& outstanding = field(p, "engines.sdma.outstanding");
  CHECK(outstanding.high_value == Approx(2).epsilon(0));
  CHECK_FALSE(outstanding.low_value.has_value());
  CHECK(outstanding.method == "forward");
  CHECK(outstanding.note.find("engines.sdma.outstanding = 0.95") != std::string::npos);
  const auto& zero = field(p, "engines.cdma.startup_ns");
  CHECK(zero.method == "none");
  CHECK_FALSE(zero.elasticity.has_value());
  CHECK(zero.note == "the value is 0: no relative change");
  // Fields without an elasticity rank last.
  CHECK(p.fields.back().field == "engines.cdma.startup_ns");
}

TEST_CASE("Sensitivity with role decode varies the decode chip alone: beside a held H100 prefill, TTFT does not move",
          "[sensitivity][roles]") {
  // One request (64 in, 4 out), its prompt on H100 (held), its decodes on the DDR-bound chip
  // (varied). Its TTFT is H100's prefill step and the cache's crossing at H100's RDMA rate (the
  // slower side), neither of which the decode chip's DDR touches: elasticity exactly 0. Its TPOT
  // is the decode chip's steps, DDR-bound: about -1.
  // The DDR-bound chip with 1 TiB of DDR, so that one chip holds the model.
  std::string roomy = kDdrBound;
  const std::size_t at = roomy.find("capacity_bytes: 1073741824");
  REQUIRE(at != std::string::npos);
  roomy.replace(at, 26, "capacity_bytes: 1099511627776");
  for (const char* metric : {"ttft_p50_ms", "tpot_p50_ms"}) {
    g5sim::SensitivitySpec spec = ddr_bound_spec({"ddr.bandwidth_gb_per_s"});
    spec.workload.chip = {roomy, "ddr-bound-roomy"};
    spec.workload.base = g5sim::Request{};
    spec.workload.base.layers = 1;
    spec.workload.serve = g5sim::serve_settings_of(
        "disagg=1:1 prefill_chip=h100 rate=1 requests=1 input_len=64 output_len=4 step_cache=exact");
    spec.workload.role = "decode";
    spec.metric = metric;
    const g5sim::SensitivityReport r = g5sim::sensitivity(spec);
    const auto& ddr = field(r.points.at(0), "ddr.bandwidth_gb_per_s");
    REQUIRE(ddr.elasticity.has_value());
    if (std::string(metric) == "ttft_p50_ms") {
      CHECK(*ddr.elasticity == 0.0);
    } else {
      CHECK(std::fabs(*ddr.elasticity + 1) < 1e-3);
    }
  }
  // Without a disaggregation there is no role to vary.
  g5sim::SensitivitySpec spec = ddr_bound_spec({"ddr.bandwidth_gb_per_s"});
  spec.workload.base = g5sim::Request{};
  spec.workload.serve = g5sim::serve_settings_of("rate=1 requests=1 input_len=64 output_len=4");
  spec.workload.role = "decode";
  CHECK_THROWS_WITH(g5sim::sensitivity(spec), Catch::Contains("the serve needs disagg=P:D"));
}

TEST_CASE("Sensitivity refuses what it cannot differentiate before any run", "[sensitivity]") {
  auto spec = ddr_bound_spec({"ddr.bandwith_gb_per_s"});
  CHECK_THROWS_WITH(g5sim::sensitivity(spec),
                    Catch::Contains("ddr-bound: ddr.bandwith_gb_per_s: no such field in the chip config"));
  spec = ddr_bound_spec({"ddr.latency_ns", "ddr.latency_ns"});
  CHECK_THROWS_WITH(g5sim::sensitivity(spec), "fields: ddr.latency_ns is given twice");
  spec = ddr_bound_spec({"engines.gdma.roles"});
  CHECK_THROWS_WITH(g5sim::sensitivity(spec), Catch::Contains("not a number (a section or a list)"));
  spec = ddr_bound_spec({});
  spec.metric = "tpot_p50_ms";
  CHECK_THROWS_WITH(g5sim::sensitivity(spec), Catch::Contains("is a serve's: give a serve workload"));
  spec.metric = "step_ms";
  spec.delta = 0.6;
  CHECK_THROWS_WITH(g5sim::sensitivity(spec), Catch::Contains("delta: 0.6 is not in (0, 0.5]"));
  spec.delta = 0.05;
  spec.metric.clear();
  spec.workload.serve = g5sim::serve_settings_of("rate=1 requests=2 input_len=16");
  spec.contexts = {1024};
  CHECK_THROWS_WITH(g5sim::sensitivity(spec), Catch::Contains("ctx: a serve's load sets the contexts"));
  CHECK_THROWS_WITH(g5sim::serve_settings_of("rate=1 requests"), Catch::Contains("'requests' is not key=value"));
}

TEST_CASE("Sensitivity's outputs do not depend on the thread count", "[sensitivity]") {
  auto spec = ddr_bound_spec({"ddr.bandwidth_gb_per_s", "cores", "ddr.latency_ns"});
  spec.contexts = {1024, 4096};
  std::ostringstream one, two;
  spec.jobs = 1;
  g5sim::write_sensitivity_csv(one, g5sim::sensitivity(spec));
  spec.jobs = 3;
  g5sim::write_sensitivity_csv(two, g5sim::sensitivity(spec));
  const std::string csv = one.str();
  CHECK(csv == two.str());
  // A row per point and field, behind the header.
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 2 * 3);
}

TEST_CASE("A field the metric is not smooth in is marked uneven", "[sensitivity]") {
  g5sim::SensitivitySpec spec;
  spec.workload.chip = {test_configs::kSg2262, "sg2262-test"};
  spec.workload.model = g5sim::Model::from_yaml(test_configs::kDeepSeekV3, "v3-test");
  spec.workload.base.layers = 4;
  spec.workload.base.batch = 256;
  spec.fields = {"cores", "engines.gdma.bandwidth_gb_per_s"};
  const g5sim::SensitivityReport r = g5sim::sensitivity(spec);
  const g5sim::SensitivityPoint& p = r.points[0];
  // 64 cores x (1 -+ 5 %) = 60.8, 67.2: a count, so 61 and 67. The work's tiles split evenly over
  // 64 cores and not over 61 or 67: 61 cores lose far more than their share (an elasticity of
  // about -2.4) and 67 gain almost nothing (about -0.02), so the two one-sided slopes disagree.
  const auto& cores = field(p, "cores");
  REQUIRE(cores.low_value == Approx(61).epsilon(0));
  REQUIRE(cores.high_value == Approx(67).epsilon(0));
  const double down = std::log(p.metric_base / *cores.metric_low) / std::log(64.0 / 61.0);
  const double up = std::log(*cores.metric_high / p.metric_base) / std::log(67.0 / 64.0);
  CHECK(*cores.elasticity_down == Approx(down).epsilon(1e-12));
  CHECK(*cores.elasticity_up == Approx(up).epsilon(1e-12));
  CHECK(down < -1);
  CHECK(up > -0.1);
  CHECK(cores.uneven);
  // The GDMA's bandwidth binds the step smoothly: both sides within a few per cent of each other.
  const auto& gdma = field(p, "engines.gdma.bandwidth_gb_per_s");
  CHECK_FALSE(gdma.uneven);
  CHECK(std::fabs(*gdma.elasticity_down - *gdma.elasticity_up) < 0.05);
  // Ranked apart: the even field first although the uneven one's |e| is larger (the cliff at 61
  // cores says nothing of 64 +- a few per cent).
  REQUIRE(p.fields.size() == 2);
  CHECK(p.fields[0].field == "engines.gdma.bandwidth_gb_per_s");
  CHECK(p.fields[1].field == "cores");
}

TEST_CASE("A whole-number field moves to the nearest value the chip accepts", "[sensitivity]") {
  // SG2262's cube takes 128 bf16 and 256 fp8 MACs a lane a cycle in columns of cube_n = 8; a MAC
  // rate must be a multiple of cube_n. 128 x (1 -+ 5 %) = 121.6, 134.4: 122 and 121 are refused,
  // 120 is the nearest multiple of 8 below; 134 and 133 and 135 and 132 refused, 136 above. cube_n
  // 8 x 0.95 rounds back to 8: 7, 6, 5 do not divide 128 and 256, 4 does; above, 16 (9 to 15 do
  // not). Before, all three had no elasticity ("expected an integer, got '121.6'").
  g5sim::SensitivitySpec spec;
  spec.workload.chip = {test_configs::kSg2262, "sg2262-test"};
  spec.workload.model = g5sim::Model::from_yaml(test_configs::kDeepSeekV2Lite, "v2-lite-test");
  spec.workload.base.layers = 1;
  spec.workload.base.batch = 64;
  spec.workload.base.tp = spec.workload.base.ep = spec.workload.base.dp = 1;
  spec.fields = {"engines.tiu.cube_macs_per_lane_per_cycle.bf16", "engines.tiu.cube_n"};
  const g5sim::SensitivityReport r = g5sim::sensitivity(spec);
  const g5sim::SensitivityPoint& p = r.points[0];
  const auto& macs = field(p, "engines.tiu.cube_macs_per_lane_per_cycle.bf16");
  CHECK(macs.low_value == 120);
  CHECK(macs.high_value == 136);
  CHECK(macs.method == "central");
  CHECK(macs.elasticity.has_value());
  const auto& n = field(p, "engines.tiu.cube_n");
  CHECK(n.low_value == 4);
  CHECK(n.high_value == 16);
  CHECK(n.method == "central");
}

}  // namespace test_sensitivity
