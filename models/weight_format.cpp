#include "models/weight_format.hpp"

#include <fmt/format.h>

#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"

namespace models {
namespace {

constexpr std::uint64_t kBlock = 128;                // fp8 block edge
constexpr std::uint64_t kFp8ScaleBytes = 4;          // fp32 per block
constexpr std::uint64_t kGroupScaleBytes = 2;        // fp16 per group per column
constexpr std::uint64_t kQuantOpsPerActivation = 3;  // group max, scale, convert
constexpr std::uint64_t kDequantOpsInt8 = 2;         // convert, scale
constexpr std::uint64_t kDequantOpsInt4 = 3;         // unpack, convert, scale

using hw::ceil_div;

// Bytes of one weight column of k elements, scales included (fp8: its share of the block scales,
// rounded up to a byte).
std::uint64_t column_bytes(WeightFormat f, std::uint64_t k) {
  const std::uint64_t groups = f.group == 0 ? 1 : ceil_div(k, f.group);
  switch (f.dtype) {
    case WeightDtype::bf16:
    case WeightDtype::fp16: return 2 * k;
    case WeightDtype::fp8: return k + ceil_div(kFp8ScaleBytes * ceil_div(k, kBlock), kBlock);
    case WeightDtype::int8: return k + kGroupScaleBytes * groups;
    case WeightDtype::int4: return ceil_div(k, 2) + kGroupScaleBytes * groups;
  }
  return 0;
}

}  // namespace

WeightDtype parse_weight_dtype(std::string_view text) {
  for (WeightDtype t : {WeightDtype::bf16, WeightDtype::fp16, WeightDtype::fp8, WeightDtype::int8, WeightDtype::int4}) {
    if (text == name_of(t)) return t;
  }
  throw hw::InputError("weight_dtype", fmt::format("expected bf16, fp16, fp8, int8 or int4, got '{}'", text));
}

std::string_view name_of(WeightDtype t) {
  switch (t) {
    case WeightDtype::bf16: return "bf16";
    case WeightDtype::fp16: return "fp16";
    case WeightDtype::fp8: return "fp8";
    case WeightDtype::int8: return "int8";
    case WeightDtype::int4: return "int4";
  }
  return "?";
}

std::uint64_t weight_matrix_bytes(WeightFormat f, std::uint64_t k, std::uint64_t n) {
  switch (f.dtype) {
    case WeightDtype::bf16:
    case WeightDtype::fp16: return 2 * k * n;
    case WeightDtype::fp8: return k * n + kFp8ScaleBytes * ceil_div(k, kBlock) * ceil_div(n, kBlock);
    case WeightDtype::int8:
    case WeightDtype::int4: return column_bytes(f, k) * n;
  }
  return 0;
}

void apply_weight_format(ops::OpNode& node, WeightFormat f) {
  ops::MatmulShape& s = node.mm();
  const WeightDtype t = f.dtype;
  if (t == WeightDtype::bf16 || t == WeightDtype::fp16) return;
  s.b_col_bytes = column_bytes(f, s.k);
  if (t == WeightDtype::fp8) {
    node.dtype = hw::DType::fp8;
    s.a_row_bytes = s.k * hw::bytes_of(hw::DType::bf16);  // activations arrive in bf16
    s.a_quant_ops = kQuantOpsPerActivation;
    s.k_block_rescale = kBlock;
  } else {
    s.b_dequant_ops = t == WeightDtype::int8 ? kDequantOpsInt8 : kDequantOpsInt4;
  }
}

}  // namespace models
