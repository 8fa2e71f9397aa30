#pragma once
// The routes a transfer can take from an engine, as chip data. A command names one of four
// routes; each engine has, for each, the shared resources the transfer crosses after its own
// channel (indices into Chip::resources, in order) and its start-up:
//   own      the engine's `crosses` list; start-up = startup_ns + the largest latency on it
//            (its round trip, Chip::round_trip_ns);
//   to_l2    DDR -> L2 (a DMA engine on a chip with an L2): its own path plus the L2 (once);
//            start-up = startup_ns + max(round trip, L2 latency);
//   from_l2  L2 -> local memory (and back: a store into a software-managed L2): the L2 alone;
//            start-up = startup_ns + L2 latency;
//   to_node  another node (a collective engine on a chip with an RDMA tier): the path with the
//            network interface in place of the chip-to-chip links; start-up = startup_ns + the
//            largest latency on that path.
// A route a chip or engine does not have is its own path. The event kernel (sim/) reads this
// table and knows no resource by name.

#include <array>
#include <cstdint>
#include <vector>

#include "hw/chip.hpp"

namespace hw {

enum class RouteKind : std::uint8_t { own, to_l2, from_l2, to_node };
constexpr std::size_t kRouteKinds = 4;

struct Route {
  std::array<std::uint32_t, kMaxPathResources> resources{};
  std::uint8_t count = 0;
  double startup_ns = 0;
};

using EngineRoutes = std::array<Route, kRouteKinds>;

/// Per engine of `chip`, in its order (a serial engine's routes are empty). Throws ConfigError
/// when a path with the L2 would cross more than kMaxPathResources resources.
std::vector<EngineRoutes> route_table(const Chip& chip);

}  // namespace hw
