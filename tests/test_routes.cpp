// Transfer routes as chip data (hw/routes.hpp): what each engine's four routes cross and their
// start-up, read by the kernel and the limiting-resource sums alike.
#include <catch2/catch.hpp>

#include <string>

#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "hw/routes.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_routes {

namespace {

std::string shipped(const std::string& relative) { return std::string(G5SIM_TEST_SOURCE_DIR) + "/configs/" + relative; }

std::vector<std::string> names(const hw::Chip& chip, const hw::Route& route) {
  std::vector<std::string> out;
  for (std::uint8_t i = 0; i < route.count; ++i) out.push_back(chip.resources[route.resources[i]].name);
  return out;
}

const hw::Route& route(const std::vector<hw::EngineRoutes>& table, const hw::Chip& chip, const std::string& engine,
                       hw::RouteKind kind) {
  return table.at(*chip.find_engine(engine)).at(static_cast<std::size_t>(kind));
}

}  // namespace

TEST_CASE("SG2262's routes: DDR, DDR then L2, the L2 alone", "[hw][routes]") {
  const hw::Chip chip = hw::load_chip(shipped("chips/sg2262.yaml"));
  const auto table = hw::route_table(chip);
  using K = hw::RouteKind;
  CHECK(names(chip, route(table, chip, "gdma", K::own)) == std::vector<std::string>{"ddr"});
  CHECK(names(chip, route(table, chip, "sdma", K::to_l2)) == std::vector<std::string>{"ddr", "l2"});
  CHECK(names(chip, route(table, chip, "sdma", K::from_l2)) == std::vector<std::string>{"l2"});
  // Start-ups (sg2262.yaml): SDMA 120 ns + DDR's 150 ns round trip; into the L2 the larger of the
  // round trip and the L2's 50 ns; out of it 120 + 50.
  CHECK(route(table, chip, "sdma", K::own).startup_ns == 270);
  CHECK(route(table, chip, "sdma", K::to_l2).startup_ns == 270);
  CHECK(route(table, chip, "sdma", K::from_l2).startup_ns == 170);
  // cdma crosses c2c then ddr; the chip has no second network tier: to_node is its own path.
  CHECK(names(chip, route(table, chip, "cdma", K::to_node)) == std::vector<std::string>{"c2c", "ddr"});
  CHECK(route(table, chip, "tiu", K::own).count == 0);  // a serial engine moves nothing
}

TEST_CASE("a second network tier replaces the chip-to-chip links on the route to another node", "[hw][routes]") {
  const hw::Chip chip = hw::load_chip(shipped("chips/h800.yaml"));
  REQUIRE(chip.rdma_resource);
  const auto table = hw::route_table(chip);
  for (std::size_t e = 0; e < chip.engines.size(); ++e) {
    if (chip.engines[e].kind != hw::EngineKind::collective) continue;
    const hw::Route& node = table[e][static_cast<std::size_t>(hw::RouteKind::to_node)];
    for (std::uint8_t i = 0; i < node.count; ++i) CHECK(chip.resources[node.resources[i]].name != "c2c");
    bool rdma = false;
    for (std::uint8_t i = 0; i < node.count; ++i) rdma = rdma || node.resources[i] == *chip.rdma_resource;
    CHECK(rdma);
  }
}

}  // namespace test_routes
