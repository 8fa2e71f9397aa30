// Energy (hw/energy.hpp): an op's dynamic energy is its MACs, vector elements and bytes at each
// resource crossed at the chip's prices; a run adds the static power over its time.
#include <catch2/catch.hpp>

#include <string>

#include "g5sim/g5sim.hpp"
#include "g5sim/op_run.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_energy {

namespace {

// The SG2262 test chip with prices that are whole or binary fractions, so every product and sum
// below is exact in a double.
const std::string kEnergy =
    "energy:\n"
    "  pj_per_mac: {fp8: 0.25, bf16: 0.5}\n"
    "  pj_per_vector_element: 1.5\n"
    "  pj_per_byte: {ddr: 40, c2c: 44}\n"
    "  static_w_per_core: 0.25\n"
    "  static_w_per_chip: 10\n"
    "  tdp_w: 300\n";

g5sim::Chip priced_chip(const std::string& energy = kEnergy) {
  return g5sim::Chip::from_yaml(test_configs::kSg2262 + energy, "sg2262-energy");
}

}  // namespace

TEST_CASE("A matmul's energy is MACs x pJ/MAC + bytes x pJ/byte + static x time, exactly", "[energy]") {
  const g5sim::OpResult r = g5sim::simulate_matmul(priced_chip(), {512, 2048, 4096, "bf16"}, 1);
  REQUIRE(r.has_energy);
  // One core, no split-K: 512 x 2048 x 4096 MACs (flops / 2) at 0.5 pJ, every byte the GDMA moved
  // crosses DDR once at 40 pJ (the test chip has no L2), and one core's 0.25 W + the chip's 10 W
  // over total_ps (W x ps = pJ); the simulator counts pJ, the result says J (x 1e-12, the same
  // multiplication: exact).
  const double macs = 512.0 * 2048 * 4096;
  CHECK(static_cast<double>(r.flops) / 2 == macs);
  const double dynamic = macs * 0.5 + static_cast<double>(r.ddr_bytes) * 40;
  CHECK(r.dynamic_energy_j == dynamic * 1e-12);
  CHECK(r.static_energy_j == 10.25 * static_cast<double>(r.total_ps) * 1e-12);
  CHECK(r.energy_j == (dynamic + 10.25 * static_cast<double>(r.total_ps)) * 1e-12);
  CHECK(r.json().find("\"energy_j\": ") != std::string::npos);
}

TEST_CASE("A step's energy is its ops' dynamic energy and the chip's static power over the step", "[energy]") {
  g5sim::Request request;
  request.layers = 2;
  const g5sim::Result r =
      g5sim::simulate(priced_chip(), g5sim::Model::from_yaml(test_configs::kDeepSeekV3, "v3-test"), request);
  REQUIRE(r.has_energy);
  // The ops' energies summed in their order: the run sums picojoules and converts the sum, each op
  // converts its own, so the two agree to rounding.
  double dynamic = 0;
  for (const g5sim::OpRecord& o : r.ops) dynamic += o.energy_j;
  CHECK(r.dynamic_energy_j == Approx(dynamic).epsilon(1e-12));
  // 64 cores x 0.25 W + 10 W = 26 W over the step (W x ps = pJ, x 1e-12 J: the run's own product).
  CHECK(r.static_energy_j == 26.0 * static_cast<double>(r.total_ps) * 1e-12);
  CHECK(r.energy_j == Approx(r.dynamic_energy_j + r.static_energy_j).epsilon(1e-12));
  CHECK(r.average_power_w == Approx(r.energy_j * 1e12 / static_cast<double>(r.total_ps)).epsilon(1e-12));
  CHECK(r.tdp_w == 300);
  // One token per chip (decode, one sequence per DP rank): J/token is the chip's energy.
  CHECK(r.joules_per_token == Approx(r.energy_j).epsilon(1e-12));
  CHECK(r.tokens_per_joule == Approx(1.0 / r.joules_per_token).epsilon(1e-12));
  // By engine: the TIU's arithmetic and each DMA engine's bytes add up to the dynamic energy.
  double engines = 0;
  for (const g5sim::EngineCommands& e : r.commands) engines += e.energy_j;
  CHECK(engines == Approx(r.dynamic_energy_j).epsilon(1e-12));
  double kinds = 0;
  for (const g5sim::KindRecord& k : r.kinds) kinds += k.energy_j;
  CHECK(kinds == Approx(r.dynamic_energy_j).epsilon(1e-12));
  CHECK(r.json().find("\"energy\": {\"total_j\": ") != std::string::npos);
  CHECK(r.table().find("energy        ") != std::string::npos);
  // Saved and restored with its energy.
  CHECK(g5sim::Result::restore(r.saved()) == r);
}

TEST_CASE("Without an energy section nothing mentions energy", "[energy]") {
  g5sim::Request request;
  request.layers = 1;
  const g5sim::Result r = g5sim::simulate(g5sim::Chip::from_yaml(test_configs::kSg2262, "sg2262-test"),
                                          g5sim::Model::from_yaml(test_configs::kDeepSeekV3, "v3-test"), request);
  CHECK_FALSE(r.has_energy);
  CHECK(r.energy_j == 0);
  CHECK(r.json().find("energy") == std::string::npos);
  CHECK(r.table().find("energy") == std::string::npos);
}

TEST_CASE("The energy section is read strictly", "[energy]") {
  // Every resource of the chip is priced, and only those: the test chip has DDR and C2C.
  CHECK_THROWS_WITH(priced_chip("energy:\n  pj_per_mac: {fp8: 0.25, bf16: 0.5}\n  pj_per_vector_element: 1.5\n"
                                "  pj_per_byte: {ddr: 40}\n  static_w_per_core: 0\n  static_w_per_chip: 1\n"
                                "  tdp_w: 300\n"),
                    Catch::Contains("energy.pj_per_byte.c2c"));
  CHECK_THROWS_WITH(priced_chip("energy:\n  pj_per_mac: {fp8: 0.25, bf16: 0.5}\n  pj_per_vector_element: 1.5\n"
                                "  pj_per_byte: {ddr: 40, c2c: 44, l2: 2}\n  static_w_per_core: 0\n"
                                "  static_w_per_chip: 1\n  tdp_w: 300\n"),
                    Catch::Contains("l2"));
  CHECK_THROWS_WITH(priced_chip("energy:\n  pj_per_mac: {fp8: 0.25, bf16: -1}\n  pj_per_vector_element: 1.5\n"
                                "  pj_per_byte: {ddr: 40, c2c: 44}\n  static_w_per_core: 0\n  static_w_per_chip: 1\n"
                                "  tdp_w: 300\n"),
                    Catch::Contains("energy.pj_per_mac.bf16"));
  // A TDP not stated is null, not absent.
  const g5sim::Chip unstated = priced_chip(
      "energy:\n  pj_per_mac: {fp8: 0.25, bf16: 0.5}\n  pj_per_vector_element: 1.5\n"
      "  pj_per_byte: {ddr: 40, c2c: 44}\n  static_w_per_core: 0\n  static_w_per_chip: 1\n"
      "  tdp_w: null\n");
  CHECK(g5sim::simulate_matmul(unstated, {64, 64, 64, "bf16"}, 1).has_energy);
  CHECK_THROWS_WITH(priced_chip("energy:\n  pj_per_mac: {fp8: 0.25, bf16: 0.5}\n  pj_per_vector_element: 1.5\n"
                                "  pj_per_byte: {ddr: 40, c2c: 44}\n  static_w_per_core: 0\n  static_w_per_chip: 1\n"),
                    Catch::Contains("tdp_w"));
}

}  // namespace test_energy
