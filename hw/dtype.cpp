#include "hw/dtype.hpp"

#include <fmt/format.h>

#include "hw/config_error.hpp"

namespace hw {

std::string_view name_of(DType t) {
  switch (t) {
    case DType::fp8: return "fp8";
    case DType::bf16: return "bf16";
    case DType::fp32: return "fp32";
    case DType::fp4: return "fp4";
    case DType::fp6: return "fp6";
  }
  return "?";
}

DType parse_dtype(std::string_view text, std::string_view what) {
  if (text == "fp8") return DType::fp8;
  if (text == "bf16") return DType::bf16;
  if (text == "fp32") return DType::fp32;
  throw ConfigError(fmt::format("{}: unknown dtype '{}' (expected one of: fp8, bf16, fp32)", what, text));
}

}  // namespace hw
