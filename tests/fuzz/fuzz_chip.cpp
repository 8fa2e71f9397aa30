// Fuzzes the chip reader and the figures derived from a chip (check, the cost model).
#include "fuzz_common.hpp"
#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "hw/cost_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const hw::Chip chip = hw::chip_from_yaml(fuzz::text_of(data, size), "fuzz-chip");
    const hw::CostModel cost(chip);
    volatile double sink = cost.cube_peak_flops(hw::DType::bf16) + cost.vector_peak_ops(hw::DType::fp32) +
                           cost.roofline_bytes_per_s() + cost.c2c_bytes_per_ns();
    for (std::size_t e = 0; e < chip.engines.size(); ++e) {
      const auto id = static_cast<hw::EngineId>(e);
      if (chip.engine(id).serial()) continue;
      sink = sink + cost.startup_ns(id) + cost.alone_gb_per_s(id) + static_cast<double>(cost.bus_bytes(id, 6560, 656));
    }
    sink = sink + static_cast<double>(cost.matmul_cycles(16, 32, 8, hw::DType::bf16));
  } catch (const hw::ConfigError&) {
  }
  return 0;
}
