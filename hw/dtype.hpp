#pragma once
// Element types the simulator counts bytes and throughput for.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

namespace hw {

// fp4 (e2m1) and fp6 (e2m3 / e3m2) are the elements of the microscaling formats (OCP MX v1.0,
// NVIDIA's NVFP4): cube rates and energies only; their bytes in memory are their formats'
// (models/weight_format.hpp), packed with their scales.
enum class DType : std::uint8_t { fp8, bf16, fp32, fp4, fp6 };

/// The dtypes, in their order (a per-dtype table's index).
inline constexpr DType kDTypes[] = {DType::fp8, DType::bf16, DType::fp32, DType::fp4, DType::fp6};
inline constexpr std::size_t kDTypeCount = std::size(kDTypes);

/// Bytes one element occupies in memory. fp4 and fp6 count a byte an element where a tile is
/// sized in local memory (an assumption on the safe side: the tiles are those of fp8); what they
/// stream is their format's packed bytes, which the ops carry (ops::MatmulShape::b_col_bytes).
constexpr std::uint64_t bytes_of(DType t) {
  switch (t) {
    case DType::fp4:
    case DType::fp6:
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
