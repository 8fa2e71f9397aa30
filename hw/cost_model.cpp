#include "hw/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "hw/checked_count.hpp"

namespace hw {
namespace {

using hw::ceil_div;

}  // namespace

std::uint64_t CostModel::k_step(DType t) const { return chip_.cube_macs(t) / chip_.tensor_unit().cube_n; }

std::uint64_t CostModel::matmul_cycles(std::uint64_t m, std::uint64_t k, std::uint64_t n, DType t,
                                       MatmulLayout layout) const {
  // Rows over the lanes, or (when that is cheaper: few rows, as a decode GEMV) the product
  // transposed, C^T = B^T A^T, the columns over the lanes.
  const std::uint64_t per_block = ceil_div(k, k_step(t)) + chip_.tensor_unit().bank_conflict_cycles;
  const std::uint64_t passes =
      std::min(ceil_div(m, chip_.tensor_unit().lanes_per_core) * ceil_div(n, chip_.tensor_unit().cube_n),
               ceil_div(n, chip_.tensor_unit().lanes_per_core) * ceil_div(m, chip_.tensor_unit().cube_n)) *
      per_block;
  // cube_efficiency 1 keeps the count exact (a double holds integers up to 2^53 exactly).
  const std::uint64_t body =
      chip_.tensor_unit().cube_efficiency == 1.0
          ? passes
          : static_cast<std::uint64_t>(std::ceil(static_cast<double>(passes) / chip_.tensor_unit().cube_efficiency));
  return chip_.tensor_unit().mm2_init_cycles[static_cast<int>(layout)] + body;
}

std::uint64_t CostModel::vector_cycles(std::uint64_t element_ops, DType t) const {
  const std::uint64_t per_cycle = static_cast<std::uint64_t>(chip_.tensor_unit().lanes_per_core) * chip_.vector_eu(t);
  return chip_.tensor_unit().vector_init_cycles + ceil_div(element_ops, per_cycle);
}

std::uint64_t CostModel::sfu_cycles(std::uint64_t elements) const {
  const std::uint64_t per_cycle = static_cast<std::uint64_t>(chip_.tensor_unit().lanes_per_core) *
                                  chip_.tensor_unit().sfu_elements_per_lane_per_cycle;
  return chip_.tensor_unit().sfu_init_cycles + ceil_div(elements, per_cycle);
}

std::uint64_t CostModel::topk_cycles(std::uint64_t rows, std::uint64_t n, std::uint64_t k) const {
  const EngineSpec& hau = chip_.engine(chip_.sort_engine().value());
  std::uint64_t passes = 0;
  while ((std::uint64_t{1} << passes) < k) ++passes;
  return hau.init_cycles + rows * ceil_div(n, hau.sort_width) * std::max<std::uint64_t>(1, passes) * hau.compare_cycles;
}

double CostModel::cycles_ns(std::uint64_t cycles) const {
  return static_cast<double>(cycles) * 1e3 / chip_.tensor_unit().clock_mhz;
}

double CostModel::startup_ns(EngineId e) const { return chip_.engines[e].startup_ns + chip_.round_trip_ns(e); }

double CostModel::channel_gb_per_s(EngineId e) const {
  const EngineSpec& spec = chip_.engines[e];
  if (spec.kind != EngineKind::dma) return 0;
  const double sustained = spec.bandwidth_gb_per_s * spec.efficiency;
  const double latency = chip_.round_trip_ns(e);
  if (latency <= 0) return sustained;
  return std::min(sustained, static_cast<double>(spec.bytes_in_flight) / latency);
}

double CostModel::alone_gb_per_s(EngineId e) const {
  const EngineSpec& spec = chip_.engines[e];
  double rate =
      spec.kind == EngineKind::dma ? channel_gb_per_s(e) : chip_.resources[spec.crosses.front()].capacity_gb_per_s;
  for (std::uint32_t r : spec.crosses) rate = std::min(rate, chip_.resources[r].capacity_gb_per_s);
  return rate;
}

double CostModel::core_cube_peak_flops(DType t) const {
  return static_cast<double>(chip_.tensor_unit().lanes_per_core) * chip_.cube_macs(t) * 2.0 *
         chip_.tensor_unit().clock_mhz * 1e6;
}

double CostModel::cube_peak_flops(DType t) const {
  return static_cast<double>(chip_.cores) * chip_.tensor_unit().lanes_per_core * chip_.cube_macs(t) * 2.0 *
         chip_.tensor_unit().clock_mhz * 1e6;
}

double CostModel::vector_peak_ops(DType t) const {
  return static_cast<double>(chip_.cores) * chip_.tensor_unit().lanes_per_core * chip_.vector_eu(t) *
         chip_.tensor_unit().clock_mhz * 1e6;
}

double CostModel::roofline_bytes_per_s() const { return chip_.ddr_bandwidth_gb_per_s * 1e9 * chip_.ddr_efficiency; }

double CostModel::c2c_bytes_per_ns() const { return chip_.c2c.bandwidth_gb_per_s * chip_.c2c.links; }

}  // namespace hw
