// Fuzzes the KV tier file reader (g5sim/serve.hpp, KvTiers) and what a read file drives: each
// tier's transfer time for no bytes, one block and the largest byte count, and a tiered store
// (serving/kv_tiers.hpp) spilling, finding and reloading blocks through every tier: no crash, no
// hang, no wrap (an error is a ConfigError), every block found where it was put or lower.
#include <cstdlib>
#include <limits>

#include "fuzz_common.hpp"
#include "g5sim/serve.hpp"
#include "hw/config_error.hpp"
#include "serving/kv_tiers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const g5sim::KvTiers tiers = g5sim::kv_tiers_from_yaml(fuzz::text_of(data, size), "fuzz-tiers");
    volatile std::uint64_t sink = 0;
    for (const g5sim::KvTier& t : tiers.tiers) {
      sink = sink + t.transfer_ps(0) + t.transfer_ps(16 * 1024);
      try {
        sink = sink + t.transfer_ps(std::numeric_limits<std::uint64_t>::max());
      } catch (const hw::ConfigError&) {
      }
    }
    // Blocks of a GB each: a tier holds few, so blocks move down and out.
    serving::TieredStore store(tiers, std::uint64_t{1} << 30);
    for (std::uint64_t b = 0; b < 64; ++b) store.spill({b, 0});
    std::vector<std::uint64_t> found(store.tiers(), 0);
    for (std::uint64_t b = 0; b < 64; ++b) {
      if (const auto t = store.tier_of({b, 0})) {
        ++found[*t];
        store.take({b, 0});
        if (store.tier_of({b, 0})) std::abort();
      }
    }
    sink = sink + store.load_ps(found);
    (void)sink;
  } catch (const hw::ConfigError&) {
  } catch (const g5sim::ConfigError&) {
  }
  return 0;
}
