// Fuzzes the measured expert-load CSV reader and its check against DeepSeek-V3's shape (61 layers,
// MoE from layer 3, 256 experts, top 8), for a step of 1 to 256 tokens (the first byte).
#include <string>

#include "fuzz_common.hpp"
#include "hw/config_error.hpp"
#include "models/expert_routing.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint64_t tokens = 1 + data[0];
  try {
    const auto load = models::ExpertLoad::from_csv_text(fuzz::text_of(data + 1, size - 1), "fuzz-load.csv");
    const auto why_dense = [](std::uint64_t l) {
      return l < 3 ? std::string("first_k_dense_replace = 3") : std::string();
    };
    load.validate(61, why_dense, 256, 8, tokens);
    for (std::uint64_t layer = 0; layer < 61; ++layer) (void)load.layer(layer);
  } catch (const hw::ConfigError&) {
  }
  return 0;
}
