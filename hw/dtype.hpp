#pragma once
// Element types the simulator counts bytes and throughput for.

#include <cstdint>
#include <string>
#include <string_view>

namespace hw {

enum class DType : std::uint8_t { fp8, bf16, fp32 };

/// Bytes one element occupies in memory.
constexpr std::uint64_t bytes_of(DType t) {
  switch (t) {
    case DType::fp8: return 1;
    case DType::bf16: return 2;
    case DType::fp32: return 4;
  }
  return 0;
}

std::string_view name_of(DType t);

/// Parses "fp8", "bf16" or "fp32"; throws ConfigError naming `what` and the accepted names.
DType parse_dtype(std::string_view text, std::string_view what);

}  // namespace hw
