#pragma once
// What a chip's work costs in energy: the optional `energy` section of a chip config. The model,
// for a run of duration T on one chip (a step, an op alone):
//
//     E_op      = sum_d MACs_d x pJ/MAC_d  +  V x pJ/element  +  sum_r bytes_r x pJ/byte_r
//     E_static  = (static_w_per_core x cores + static_w_per_chip) x T
//     E_run     = sum_op E_op  +  E_static
//
// MACs_d: a cube op's FLOPs / 2 in its dtype d (fp8 or bf16, as the roofline's peak); V: a
// vector op's element operations (its FLOPs); bytes_r: the bytes its transfers moved across
// resource r (ddr, c2c, l2, rdma: each transfer is charged at every resource on its route,
// hw/routes.hpp, so a DDR read staged through the L2 pays both). Dynamic energy is per op;
// static power is the chip's over the run, not the op's (ops overlap). Average power is E_run / T,
// set beside tdp_w, the power the chip is specified for.
//
// Values are per event, not derived: a config states them with a source or as an ASSUMPTION.
// Without the section a chip has no energy and no output mentions it.

#include <array>
#include <cstdint>
#include <optional>

#include "hw/dtype.hpp"

namespace hw {

class ConfigMap;
struct Chip;

/// At most this many shared resources (ddr, c2c, l2, rdma).
constexpr std::size_t kMaxResources = 4;

struct ChipEnergy {
  std::array<double, kDTypeCount> pj_per_mac{};  ///< by DType; the tensor engine's cube dtypes (fp8, bf16, fp4, fp6)
  double pj_per_vector_element = 0;
  std::array<double, kMaxResources> pj_per_byte{};  ///< by Chip::resources index
  double static_w_per_core = 0, static_w_per_chip = 0;
  std::optional<double> tdp_w;  ///< the power the chip is specified for; null in the config: not stated

  /// (static_w_per_core x cores + static_w_per_chip): watts whatever the chip does.
  double static_w(std::uint32_t cores) const { return static_w_per_core * cores + static_w_per_chip; }
};

/// Reads `energy` (the chip's resources known: l2 and rdma prices are required exactly when the
/// chip has an L2 / a network interface). Throws ConfigError naming the field.
ChipEnergy read_energy(ConfigMap section, const Chip& chip);

}  // namespace hw
