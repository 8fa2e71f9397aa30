#include "hw/routes.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "hw/config_error.hpp"

namespace hw {

std::vector<EngineRoutes> route_table(const Chip& chip) {
  std::vector<EngineRoutes> table(chip.engines.size());
  for (std::size_t e = 0; e < chip.engines.size(); ++e) {
    const EngineSpec& spec = chip.engines[e];
    EngineRoutes& routes = table[e];
    if (spec.serial()) continue;
    Route own;
    for (std::uint32_t r : spec.crosses) own.resources[own.count++] = r;
    own.startup_ns = spec.startup_ns + chip.round_trip_ns(static_cast<EngineId>(e));
    routes.fill(own);
    if (chip.rdma_resource && spec.kind == EngineKind::collective) {
      // The engine's path with the network interface in place of the chip-to-chip links.
      const std::uint32_t rdma = *chip.rdma_resource;
      Route& node = routes[static_cast<std::size_t>(RouteKind::to_node)];
      double latency = chip.resources[rdma].latency_ns;
      node.count = 0;
      for (std::uint32_t r : spec.crosses) {
        const bool link = chip.resources[r].name == "c2c";
        node.resources[node.count++] = link ? rdma : r;
        if (!link) latency = std::max(latency, chip.resources[r].latency_ns);
      }
      node.startup_ns = spec.startup_ns + latency;
    }
    if (chip.l2 && spec.kind == EngineKind::dma) {
      const std::uint32_t l2 = *chip.l2_resource;
      const double l2_ns = chip.resources[l2].latency_ns;
      Route& to = routes[static_cast<std::size_t>(RouteKind::to_l2)];
      to.startup_ns = spec.startup_ns + std::max(chip.round_trip_ns(static_cast<EngineId>(e)), l2_ns);
      if (std::find(to.resources.begin(), to.resources.begin() + to.count, l2) == to.resources.begin() + to.count) {
        if (to.count >= kMaxPathResources - 1) {
          throw ConfigError(fmt::format("{}: engines.{}.crosses: with the l2 its DDR -> L2 path would cross more "
                                        "than {} resources",
                                        chip.source, spec.name, kMaxPathResources - 1),
                            ErrorSite{chip.source, "engines." + spec.name + ".crosses", 0, 0});
        }
        to.resources[to.count++] = l2;
      }
      Route& from = routes[static_cast<std::size_t>(RouteKind::from_l2)];
      from.count = 0;
      from.resources[from.count++] = l2;
      from.startup_ns = spec.startup_ns + l2_ns;
    }
  }
  return table;
}

}  // namespace hw
