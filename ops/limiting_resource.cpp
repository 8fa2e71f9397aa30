#include "ops/limiting_resource.hpp"

#include <algorithm>
#include <cctype>

#include "hw/cost_model.hpp"
#include "hw/routes.hpp"

namespace ops {
namespace {

std::string capitals(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

LimitingResource::LimitingResource(const hw::Chip& chip) : chip_(chip), cost_(chip) {
  for (const hw::EngineSpec& e : chip.engines) names_.push_back(e.display_name());
  for (const hw::SharedResource& r : chip.resources) names_.push_back(capitals(r.name));
  const std::vector<hw::EngineRoutes> routes = hw::route_table(chip);
  for (std::size_t e = 0; e < chip.engines.size(); ++e) {
    const hw::EngineSpec& spec = chip.engines[e];
    EngineRule rule;
    rule.serial = spec.serial();
    rule.dma = spec.kind == hw::EngineKind::dma;
    if (rule.serial) {
      rule.unit_ns = 1e-3;
    } else {
      const double gb_per_s = cost_.channel_gb_per_s(static_cast<hw::EngineId>(e));
      rule.unit_ns = gb_per_s > 0 ? 1.0 / gb_per_s : 0.0;
    }
    // The routes, as the kernel runs them (hw/routes.hpp).
    auto resources = [&](hw::RouteKind k) {
      const hw::Route& route = routes[e][static_cast<std::size_t>(k)];
      return std::vector<std::uint32_t>(route.resources.begin(), route.resources.begin() + route.count);
    };
    rule.own = resources(hw::RouteKind::own);
    rule.to_node = resources(hw::RouteKind::to_node);
    rule.to_l2 = resources(hw::RouteKind::to_l2);
    rule.from_l2 = resources(hw::RouteKind::from_l2);
    rules_.push_back(std::move(rule));
  }
}

void LimitingResource::begin(std::vector<std::uint64_t> multiplicity) {
  const std::size_t ops = multiplicity.size(), engines = rules_.size(), resources = chip_.resources.size();
  multiplicity_ = std::move(multiplicity);
  op_bytes_.assign(ops * resources, 0);
  run_bytes_.assign(resources, 0);
  core_op_.assign(ops * engines, 0);
  core_run_.assign(engines, 0);
  run_units_.assign(engines, 0);
  touched_.clear();
  const ResourceWork empty{std::vector<double>(engines, 0.0), std::vector<double>(resources, 0.0)};
  ops_.assign(ops, empty);
  run_ = empty;
}

void LimitingResource::add_transfer(const EngineRule& rule, const sim::Command& cmd, std::uint64_t copies,
                                    std::uint64_t& units) {
  const bool from_l2 = sim::within_l2(cmd.direction);
  units = copies * (rule.dma && !from_l2 ? cost_.bus_bytes_dma(cmd.amount, cmd.row_bytes) : cmd.amount);
  const std::size_t resources = chip_.resources.size();
  const std::uint64_t times = multiplicity_[cmd.op];
  for (std::uint32_t r : crossed(rule, cmd)) {
    op_bytes_[cmd.op * resources + r] += units;
    run_bytes_[r] += times * units;
  }
}

void LimitingResource::end_core() {
  const std::size_t engines = rules_.size();
  for (std::uint32_t k : touched_) {
    double& engine = ops_[k / engines].engine_ns[k % engines];
    engine = std::max(engine, static_cast<double>(core_op_[k]) * rules_[k % engines].unit_ns);
    core_op_[k] = 0;
  }
  touched_.clear();
  for (std::size_t e = 0; e < engines; ++e) {
    run_units_[e] = std::max(run_units_[e], core_run_[e]);
    core_run_[e] = 0;
  }
}

void LimitingResource::finish() {
  for (std::size_t e = 0; e < rules_.size(); ++e) {
    run_.engine_ns[e] = static_cast<double>(run_units_[e]) * rules_[e].unit_ns;
  }
  const std::size_t resources = chip_.resources.size();
  for (std::size_t r = 0; r < resources; ++r) {
    const double cap = chip_.resources[r].capacity_gb_per_s;
    run_.resource_ns[r] = static_cast<double>(run_bytes_[r]) / cap;
    for (std::size_t op = 0; op < ops_.size(); ++op) {
      ops_[op].resource_ns[r] = static_cast<double>(op_bytes_[op * resources + r]) / cap;
    }
  }
}

Bound LimitingResource::bound(const ResourceWork& work, sim::Tick duration) const {
  Bound b;
  if (duration == 0) return b;
  double most = -1;
  std::size_t which = 0;
  const std::size_t engines = work.engine_ns.size();
  // Serial engines first, then DMA channels, then shared resources.
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t e = 0; e < engines; ++e) {
      if (chip_.engines[e].serial() != (pass == 0)) continue;
      if (work.engine_ns[e] > most) most = work.engine_ns[e], which = e;
    }
  }
  for (std::size_t r = 0; r < work.resource_ns.size(); ++r) {
    if (work.resource_ns[r] > most) most = work.resource_ns[r], which = engines + r;
  }
  b.share = most / (static_cast<double>(duration) * 1e-3);
  b.resource = b.share < 0.5 ? std::string("latency") : names_[which];
  return b;
}

}  // namespace ops
