#include "hw/energy.hpp"

#include <fmt/format.h>

#include "hw/chip.hpp"
#include "hw/strict_config.hpp"

namespace hw {
namespace {

// A price per event: 0 (free, as a shared L2 port may be stated) up to 10 nJ, beyond any
// transistor or link of the last decades (a DDR3 access is ~70 pJ/bit, 560 pJ/byte).
constexpr double kMaxPj = 1e4;
// Static watts: 0 .. 10 kW (a core, a chip).
constexpr double kMaxW = 1e4;

}  // namespace

ChipEnergy read_energy(ConfigMap section, const Chip& chip) {
  section.expect_keys(
      {"pj_per_mac", "pj_per_vector_element", "pj_per_byte", "static_w_per_core", "static_w_per_chip", "tdp_w"});
  ChipEnergy e;
  {
    ConfigMap mac = section.map("pj_per_mac");
    mac.expect_keys({"fp8", "bf16", "fp4", "fp6"});
    // Priced exactly for the cube dtypes the tensor engine has: a price for one it lacks is an
    // unknown key, a missing one for one it has an error.
    for (DType t : {DType::fp8, DType::bf16, DType::fp4, DType::fp6}) {
      if (chip.cube_macs(t) != 0) {
        e.pj_per_mac[static_cast<int>(t)] = mac.number_in(name_of(t), 0, kMaxPj);
      } else if (mac.has(name_of(t))) {
        mac.fail(name_of(t), fmt::format("the tensor engine has no {} rate to price", name_of(t)));
      }
    }
    mac.finish();
  }
  e.pj_per_vector_element = section.number_in("pj_per_vector_element", 0, kMaxPj);
  {
    ConfigMap bytes = section.map("pj_per_byte");
    std::vector<std::string_view> names;
    for (const SharedResource& r : chip.resources) names.push_back(r.name);
    // The chip's own resources, each priced: an L2 or network interface the chip does not have is
    // an unknown key, one it has a missing one.
    bytes.expect_keys(names);
    for (std::size_t r = 0; r < chip.resources.size(); ++r) {
      e.pj_per_byte[r] = bytes.number_in(chip.resources[r].name, 0, kMaxPj);
    }
    bytes.finish();
  }
  e.static_w_per_core = section.number_in("static_w_per_core", 0, kMaxW);
  e.static_w_per_chip = section.number_in("static_w_per_chip", 0, kMaxW);
  e.tdp_w = section.number_in_or_null("tdp_w", 0, kMaxW, true);
  section.finish();
  return e;
}

}  // namespace hw
