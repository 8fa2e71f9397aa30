#include "hw/chip.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "hw/config_error.hpp"
#include "hw/strict_config.hpp"

namespace hw {
namespace {

std::uint32_t u32(ConfigMap& m, std::string_view key) {
  const std::uint64_t v = m.positive_int(key);
  if (v > 0xFFFFFFFFull) {
    throw ConfigError(fmt::format("{}: {}: value {} is too large", m.where(key), m.path_of(key), v));
  }
  return static_cast<std::uint32_t>(v);
}

DmaEngineSpec read_dma(ConfigMap m) {
  m.expect_keys({"bandwidth_gb_per_s", "startup_ns", "outstanding", "bytes_in_flight"});
  DmaEngineSpec spec;
  spec.bandwidth_gb_per_s = m.positive_number("bandwidth_gb_per_s");
  spec.startup_ns = m.non_negative_number("startup_ns");
  spec.outstanding = u32(m, "outstanding");
  spec.bytes_in_flight = m.positive_int("bytes_in_flight");
  m.finish();
  return spec;
}

// Per-dtype tables list the dtypes the unit supports; each listed value must be positive.
std::array<std::uint32_t, 3> read_dtype_table(ConfigMap m, std::initializer_list<DType> required) {
  m.expect_keys({"fp8", "bf16", "fp32"});
  std::array<std::uint32_t, 3> table{};
  for (DType t : {DType::fp8, DType::bf16, DType::fp32}) {
    const bool needed = std::find(required.begin(), required.end(), t) != required.end();
    if (needed || m.has(name_of(t))) table[static_cast<int>(t)] = u32(m, name_of(t));
  }
  m.finish();
  return table;
}

Chip read_chip(ConfigMap root) {
  root.expect_keys({"name", "cores", "lmem_bytes_per_core", "tiu", "gdma", "sdma", "ddr", "c2c", "hau"});
  Chip chip;
  chip.source = root.source();
  chip.name = root.string("name");
  chip.cores = u32(root, "cores");
  chip.lmem_bytes_per_core = root.positive_int("lmem_bytes_per_core");
  {
    ConfigMap tiu = root.map("tiu");
    tiu.expect_keys({"clock_mhz", "lanes_per_core", "cube_n", "cube_macs_per_lane_per_cycle", "vector_eu_per_lane",
                     "mm2_init_cycles", "bank_conflict_cycles", "vector_init_cycles", "sfu_init_cycles",
                     "sfu_elements_per_lane_per_cycle"});
    chip.tiu_clock_mhz = tiu.positive_number("clock_mhz");
    chip.lanes_per_core = u32(tiu, "lanes_per_core");
    chip.cube_n = u32(tiu, "cube_n");
    // The simulator computes matrices in bf16 (and fp8 where weights are fp8) and runs norms
    // and softmax in fp32 on the vector unit, so those entries are required.
    chip.cube_macs_per_lane_per_cycle =
        read_dtype_table(tiu.map("cube_macs_per_lane_per_cycle"), {DType::bf16, DType::fp8});
    chip.vector_eu_per_lane = read_dtype_table(tiu.map("vector_eu_per_lane"), {DType::bf16, DType::fp32});
    {
      ConfigMap init = tiu.map("mm2_init_cycles");
      init.expect_keys({"nn", "nt", "tt"});
      chip.mm2_init_cycles[static_cast<int>(MatmulLayout::nn)] = static_cast<std::uint32_t>(init.non_negative_int("nn"));
      chip.mm2_init_cycles[static_cast<int>(MatmulLayout::nt)] = static_cast<std::uint32_t>(init.non_negative_int("nt"));
      chip.mm2_init_cycles[static_cast<int>(MatmulLayout::tt)] = static_cast<std::uint32_t>(init.non_negative_int("tt"));
      init.finish();
    }
    chip.bank_conflict_cycles = static_cast<std::uint32_t>(tiu.non_negative_int("bank_conflict_cycles"));
    chip.vector_init_cycles = static_cast<std::uint32_t>(tiu.non_negative_int("vector_init_cycles"));
    chip.sfu_init_cycles = static_cast<std::uint32_t>(tiu.non_negative_int("sfu_init_cycles"));
    chip.sfu_elements_per_lane_per_cycle = u32(tiu, "sfu_elements_per_lane_per_cycle");
    tiu.finish();
    // Cross-field check: a lane's cube must reduce at least one k element per output column.
    for (DType t : {DType::fp8, DType::bf16, DType::fp32}) {
      const std::uint32_t macs = chip.cube_macs(t);
      if (macs != 0 && macs % chip.cube_n != 0) {
        throw ConfigError(fmt::format(
            "{}: tiu.cube_macs_per_lane_per_cycle.{}: {} is not a multiple of tiu.cube_n ({})",
            tiu.where("cube_macs_per_lane_per_cycle"), name_of(t), macs, chip.cube_n));
      }
    }
  }
  chip.gdma = read_dma(root.map("gdma"));
  chip.sdma = read_dma(root.map("sdma"));
  {
    ConfigMap ddr = root.map("ddr");
    ddr.expect_keys({"bandwidth_gb_per_s", "efficiency", "capacity_bytes", "latency_ns", "burst_bytes"});
    chip.ddr_bandwidth_gb_per_s = ddr.positive_number("bandwidth_gb_per_s");
    chip.ddr_efficiency = ddr.fraction("efficiency");
    chip.ddr_capacity_bytes = ddr.positive_int("capacity_bytes");
    chip.ddr_latency_ns = ddr.non_negative_number("latency_ns");
    chip.ddr_burst_bytes = ddr.positive_int("burst_bytes");
    ddr.finish();
  }
  {
    ConfigMap c2c = root.map("c2c");
    c2c.expect_keys({"bandwidth_gb_per_s", "latency_ns", "links"});
    chip.c2c.bandwidth_gb_per_s = c2c.positive_number("bandwidth_gb_per_s");
    chip.c2c.latency_ns = c2c.non_negative_number("latency_ns");
    chip.c2c.links = u32(c2c, "links");
    c2c.finish();
  }
  if (root.has("hau")) {
    ConfigMap hau = root.map("hau");
    hau.expect_keys({"sort_width", "compare_cycles", "init_cycles"});
    Chip::Hau h;
    h.sort_width = u32(hau, "sort_width");
    h.compare_cycles = u32(hau, "compare_cycles");
    h.init_cycles = static_cast<std::uint32_t>(hau.non_negative_int("init_cycles"));
    hau.finish();
    chip.hau = h;
  }
  root.finish();
  return chip;
}

}  // namespace

double DmaEngineSpec::sustained_gb_per_s(double latency_ns) const {
  if (latency_ns <= 0) return bandwidth_gb_per_s;
  return std::min(bandwidth_gb_per_s, static_cast<double>(bytes_in_flight) / latency_ns);
}

double Chip::cube_peak_flops(DType t) const {
  return static_cast<double>(cores) * lanes_per_core * cube_macs(t) * 2.0 * tiu_clock_mhz * 1e6;
}

double Chip::vector_peak_ops(DType t) const {
  return static_cast<double>(cores) * lanes_per_core * vector_eu(t) * tiu_clock_mhz * 1e6;
}

double Chip::roofline_bytes_per_s() const { return ddr_bandwidth_gb_per_s * 1e9 * ddr_efficiency; }

std::uint64_t Chip::matmul_cycles(std::uint64_t m, std::uint64_t k, std::uint64_t n, DType t,
                                  MatmulLayout layout) const {
  const std::uint64_t k_per_cycle = cube_macs(t) / cube_n;
  auto ceil_div = [](std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; };
  return mm2_init_cycles[static_cast<int>(layout)] +
         ceil_div(m, lanes_per_core) * ceil_div(n, cube_n) * (ceil_div(k, k_per_cycle) + bank_conflict_cycles);
}

std::uint64_t Chip::sfu_cycles(std::uint64_t elements) const {
  const std::uint64_t per_cycle = static_cast<std::uint64_t>(lanes_per_core) * sfu_elements_per_lane_per_cycle;
  return sfu_init_cycles + (elements + per_cycle - 1) / per_cycle;
}

std::uint64_t Chip::vector_cycles(std::uint64_t element_ops, DType t) const {
  const std::uint64_t per_cycle = static_cast<std::uint64_t>(lanes_per_core) * vector_eu(t);
  return vector_init_cycles + (element_ops + per_cycle - 1) / per_cycle;
}

std::uint64_t Chip::hau_topk_cycles(std::uint64_t rows, std::uint64_t n, std::uint64_t k) const {
  std::uint64_t passes = 0;
  while ((std::uint64_t{1} << passes) < k) ++passes;
  return hau->init_cycles + rows * ((n + hau->sort_width - 1) / hau->sort_width) * std::max<std::uint64_t>(1, passes) *
                                hau->compare_cycles;
}

Chip load_chip(const std::string& path) {
  return read_chip(ConfigMap::from_file(path, UnknownKeys::reject));
}

Chip chip_from_yaml(const std::string& text, const std::string& source_name) {
  return read_chip(ConfigMap::from_string(text, source_name, UnknownKeys::reject));
}

}  // namespace hw
