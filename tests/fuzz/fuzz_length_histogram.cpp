// Fuzzes the length-histogram reader of `g5sim serve --input-len FILE` and the draw from what it
// accepts: no crash, no hang, and every drawn length inside a bin of positive weight.
#include <cstdlib>
#include <random>
#include <string>

#include "fuzz_common.hpp"
#include "hw/config_error.hpp"
#include "serving/request_load.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string text = fuzz::text_of(data + 1, size - 1);
  try {
    const serving::LengthDistribution d = serving::LengthDistribution::parse_histogram(text, "fuzz.csv");
    std::mt19937_64 rng(data[0]);
    for (int k = 0; k < 64; ++k) {
      const std::uint64_t length = d.draw(rng);
      bool inside = false;
      for (const serving::LengthBin& b : d.bins)
        inside = inside || (b.weight > 0 && b.low <= length && length <= b.high);
      if (!inside) std::abort();
    }
    if (!(d.mean() >= static_cast<double>(d.low) && d.mean() <= static_cast<double>(d.high))) std::abort();
  } catch (const hw::ConfigError&) {
  }
  return 0;
}
