#include "ops/limiting_resource.hpp"

#include <algorithm>
#include <cctype>

#include "hw/cost_model.hpp"

namespace ops {
namespace {

bool is_work(const sim::Command& cmd) {
  return cmd.kind == sim::CommandKind::compute || cmd.kind == sim::CommandKind::transfer;
}

std::string capitals(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

LimitingResource::LimitingResource(const hw::Chip& chip) : chip_(chip) {
  for (const hw::EngineSpec& e : chip.engines) names_.push_back(e.display_name());
  for (const hw::SharedResource& r : chip.resources) names_.push_back(capitals(r.name));
}

void LimitingResource::measure_counts(const Lowered& lowered, const sim::Trace& trace, std::size_t op_count,
                                      const std::vector<std::uint64_t>& multiplicity) {
  const hw::CostModel cost(chip_);
  const std::size_t engines = chip_.engines.size(), resources = chip_.resources.size();
  const ResourceWork empty{std::vector<double>(engines, 0.0), std::vector<double>(resources, 0.0)};
  ops_.assign(op_count, empty);
  run_ = empty;
  // Per engine: ns per unit of work (a picosecond of a serial engine, a bus byte of a channel).
  std::vector<double> unit_ns(engines, 0.0);
  for (std::size_t e = 0; e < engines; ++e) {
    if (chip_.engines[e].serial()) {
      unit_ns[e] = 1e-3;
    } else {
      const double gb_per_s = cost.channel_gb_per_s(static_cast<hw::EngineId>(e));
      unit_ns[e] = gb_per_s > 0 ? 1.0 / gb_per_s : 0.0;
    }
  }
  std::vector<std::uint64_t> op_bytes(op_count * resources, 0), run_bytes(resources, 0);
  // One core at a time: its per-op sums, folded into the ops' maxima over cores.
  std::vector<std::uint64_t> core_op(op_count * engines, 0);
  std::vector<std::uint32_t> touched;
  std::vector<std::uint64_t> core_run(engines, 0), run_units(engines, 0);
  const std::uint32_t l2 = chip_.l2_resource.value_or(0);
  for (std::size_t c = 0; c < lowered.program.cores.size(); ++c) {
    std::fill(core_run.begin(), core_run.end(), 0);
    for (std::size_t e = 0; e < engines; ++e) {
      const hw::EngineSpec& spec = chip_.engines[e];
      const auto& queue = lowered.program.cores[c].queues[e];
      const auto& records = trace.cores[c][e];
      for (std::size_t i = 0; i < queue.size(); ++i) {
        const sim::Command& cmd = queue[i];
        if (!is_work(cmd)) continue;
        std::uint64_t units = 0;
        if (spec.serial()) {
          units = records[i].end - records[i].start;
        } else {
          const bool dma = spec.kind == hw::EngineKind::dma;
          const bool from_l2 = cmd.direction == sim::Direction::l2_to_lmem;
          units = dma && !from_l2 ? cost.bus_bytes(static_cast<hw::EngineId>(e), cmd.amount, cmd.row_bytes) : cmd.amount;
          const std::uint64_t times = multiplicity[cmd.op];
          auto charge = [&](std::uint32_t r) {
            op_bytes[cmd.op * resources + r] += units;
            run_bytes[r] += times * units;
          };
          // The L2 routes (sim/command.hpp): from the L2 only it; into it the path and it.
          if (from_l2) {
            charge(l2);
          } else if (cmd.direction == sim::Direction::chip_to_node) {
            for (std::uint32_t r : spec.crosses) charge(chip_.resources[r].name == "c2c" ? *chip_.rdma_resource : r);
          } else {
            for (std::uint32_t r : spec.crosses) charge(r);
            const bool adds_l2 = chip_.l2_resource && cmd.direction == sim::Direction::ddr_to_l2 &&
                                 std::find(spec.crosses.begin(), spec.crosses.end(), l2) == spec.crosses.end();
            if (adds_l2) charge(l2);
          }
          if (unit_ns[e] == 0) continue;
        }
        if (units == 0) continue;
        std::uint64_t& slot = core_op[static_cast<std::size_t>(cmd.op) * engines + e];
        if (slot == 0) touched.push_back(static_cast<std::uint32_t>(cmd.op * engines + e));
        slot += units;
        core_run[e] += multiplicity[cmd.op] * units;
      }
    }
    for (std::uint32_t k : touched) {
      double& engine = ops_[k / engines].engine_ns[k % engines];
      engine = std::max(engine, static_cast<double>(core_op[k]) * unit_ns[k % engines]);
      core_op[k] = 0;
    }
    touched.clear();
    for (std::size_t e = 0; e < engines; ++e) run_units[e] = std::max(run_units[e], core_run[e]);
  }
  for (std::size_t e = 0; e < engines; ++e) run_.engine_ns[e] = static_cast<double>(run_units[e]) * unit_ns[e];
  for (std::size_t r = 0; r < resources; ++r) {
    const double cap = chip_.resources[r].capacity_gb_per_s;
    run_.resource_ns[r] = static_cast<double>(run_bytes[r]) / cap;
    for (std::size_t op = 0; op < op_count; ++op) {
      ops_[op].resource_ns[r] = static_cast<double>(op_bytes[op * resources + r]) / cap;
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
