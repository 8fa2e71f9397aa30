#include "models/weight_format.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <variant>

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
constexpr std::uint64_t kDequantOpsMx8 = 2;          // convert, scale (one value a byte)
constexpr std::uint64_t kDequantOpsMxPacked = 3;     // unpack, convert, scale (fp6, fp4)
constexpr std::uint64_t kMicroscaleBytes = 1;        // an e8m0 or e4m3 block scale

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
    case WeightDtype::mxfp8:
    case WeightDtype::mxfp6:
    case WeightDtype::mxfp4:
    case WeightDtype::nvfp4: {
      const Microscaling mx = *microscaling_of(f.dtype);
      return ceil_div(k * mx.bits, 8) + kMicroscaleBytes * ceil_div(k, mx.block);
    }
  }
  return 0;
}

}  // namespace

const std::vector<std::string>& weight_dtype_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (auto t = static_cast<std::uint8_t>(WeightDtype::bf16); t <= static_cast<std::uint8_t>(WeightDtype::nvfp4);
         ++t) {
      out.emplace_back(name_of(static_cast<WeightDtype>(t)));
    }
    return out;
  }();
  return names;
}

WeightDtype parse_weight_dtype(std::string_view text) {
  const std::vector<std::string>& names = weight_dtype_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (text == names[i]) return static_cast<WeightDtype>(i);
  }
  throw hw::InputError("weight_dtype", fmt::format("expected one of {}, got '{}'", fmt::join(names, ", "), text));
}

std::optional<Microscaling> microscaling_of(WeightDtype t) {
  switch (t) {
    case WeightDtype::mxfp8: return Microscaling{32, 8, 0, hw::DType::fp8};
    case WeightDtype::mxfp6: return Microscaling{32, 6, 0, hw::DType::fp6};
    case WeightDtype::mxfp4: return Microscaling{32, 4, 0, hw::DType::fp4};
    case WeightDtype::nvfp4: return Microscaling{16, 4, 4, hw::DType::fp4};
    case WeightDtype::bf16:
    case WeightDtype::fp16:
    case WeightDtype::fp8:
    case WeightDtype::int8:
    case WeightDtype::int4: return std::nullopt;
  }
  return std::nullopt;
}

hw::DType weight_element(WeightDtype t) {
  if (const std::optional<Microscaling> mx = microscaling_of(t)) return mx->element;
  return t == WeightDtype::fp8 ? hw::DType::fp8 : hw::DType::bf16;
}

std::string_view name_of(WeightDtype t) {
  switch (t) {
    case WeightDtype::bf16: return "bf16";
    case WeightDtype::fp16: return "fp16";
    case WeightDtype::fp8: return "fp8";
    case WeightDtype::int8: return "int8";
    case WeightDtype::int4: return "int4";
    case WeightDtype::mxfp8: return "mxfp8";
    case WeightDtype::mxfp6: return "mxfp6";
    case WeightDtype::mxfp4: return "mxfp4";
    case WeightDtype::nvfp4: return "nvfp4";
  }
  return "?";
}

std::uint64_t weight_matrix_bytes(WeightFormat f, std::uint64_t k, std::uint64_t n) {
  switch (f.dtype) {
    case WeightDtype::bf16:
    case WeightDtype::fp16: return 2 * k * n;
    case WeightDtype::fp8: return k * n + kFp8ScaleBytes * ceil_div(k, kBlock) * ceil_div(n, kBlock);
    case WeightDtype::int8:
    case WeightDtype::int4:
    case WeightDtype::mxfp8:
    case WeightDtype::mxfp6:
    case WeightDtype::mxfp4: return column_bytes(f, k) * n;
    case WeightDtype::nvfp4: return column_bytes(f, k) * n + microscaling_of(f.dtype)->tensor_scale_bytes;
  }
  return 0;
}

const std::vector<std::string>& act_dtype_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (auto t = static_cast<std::uint8_t>(ActDtype::auto_); t <= static_cast<std::uint8_t>(ActDtype::nvfp4); ++t) {
      out.emplace_back(name_of(static_cast<ActDtype>(t)));
    }
    return out;
  }();
  return names;
}

ActDtype parse_act_dtype(std::string_view text) {
  const std::vector<std::string>& names = act_dtype_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (text == names[i]) return static_cast<ActDtype>(i);
  }
  throw hw::InputError("act_dtype", fmt::format("expected one of {}, got '{}'", fmt::join(names, ", "), text));
}

std::string_view name_of(ActDtype t) {
  switch (t) {
    case ActDtype::auto_: return "auto";
    case ActDtype::bf16: return "bf16";
    case ActDtype::fp8: return "fp8";
    case ActDtype::mxfp8: return "mxfp8";
    case ActDtype::mxfp6: return "mxfp6";
    case ActDtype::mxfp4: return "mxfp4";
    case ActDtype::nvfp4: return "nvfp4";
  }
  return "?";
}

std::uint64_t act_row_bytes(ActDtype t, std::uint64_t k) {
  switch (t) {
    case ActDtype::auto_:
    case ActDtype::bf16: return 2 * k;
    case ActDtype::fp8: return k + kFp8ScaleBytes * ceil_div(k, kBlock);
    case ActDtype::mxfp8: return k + kMicroscaleBytes * ceil_div(k, 32);
    case ActDtype::mxfp6: return ceil_div(6 * k, 8) + kMicroscaleBytes * ceil_div(k, 32);
    case ActDtype::mxfp4: return ceil_div(k, 2) + kMicroscaleBytes * ceil_div(k, 32);
    case ActDtype::nvfp4: return ceil_div(k, 2) + kMicroscaleBytes * ceil_div(k, 16);
  }
  return 0;
}

hw::DType act_element(ActDtype t) {
  switch (t) {
    case ActDtype::auto_:
    case ActDtype::bf16: return hw::DType::bf16;
    case ActDtype::fp8:
    case ActDtype::mxfp8: return hw::DType::fp8;
    case ActDtype::mxfp6: return hw::DType::fp6;
    case ActDtype::mxfp4:
    case ActDtype::nvfp4: return hw::DType::fp4;
  }
  return hw::DType::bf16;
}

void check_act_dtype(WeightDtype weights, ActDtype act) {
  if (act == ActDtype::auto_ || act == ActDtype::bf16) return;
  if (weights == WeightDtype::bf16 || weights == WeightDtype::fp16) {
    throw hw::InputError("act_dtype", fmt::format("the weights are {}, which multiply bf16 activations: {} "
                                                  "activations need quantised weights (--weight-dtype fp8, mxfp8, "
                                                  "mxfp6, mxfp4, nvfp4, int8 or int4)",
                                                  name_of(weights), name_of(act)));
  }
}

namespace {

// Bits of a floating-point element, to find the wider of two.
std::uint64_t element_bits(hw::DType t) {
  switch (t) {
    case hw::DType::fp4: return 4;
    case hw::DType::fp6: return 6;
    case hw::DType::fp8: return 8;
    case hw::DType::bf16: return 16;
    case hw::DType::fp32: return 32;
  }
  return 16;
}

// Vector operations to dequantise one floating-point weight of `element`: convert and scale a
// byte-wide value, unpack first a packed (fp6, fp4) one.
std::uint64_t float_dequant_ops(hw::DType element) {
  return element == hw::DType::fp8 ? kDequantOpsMx8 : kDequantOpsMxPacked;
}

std::uint64_t dequant_ops(WeightDtype t) {
  switch (t) {
    case WeightDtype::int8: return kDequantOpsInt8;
    case WeightDtype::int4: return kDequantOpsInt4;
    case WeightDtype::fp8:
    case WeightDtype::mxfp8: return kDequantOpsMx8;
    case WeightDtype::mxfp6:
    case WeightDtype::mxfp4:
    case WeightDtype::nvfp4: return kDequantOpsMxPacked;
    case WeightDtype::bf16:
    case WeightDtype::fp16: return 0;
  }
  return 0;
}

// --act-dtype given: the cube's element is the wider of the two; weights of that element keep their
// scales in the MMA (microscaled blocks, fp8's block rescale), integer weights and (for bf16) any
// narrower weights are dequantised first, and narrower floating-point weights feed a mixed-input
// MMA (convert_narrow_weights converts them where the chip has none).
void apply_fixed_activations(ops::OpNode& node, WeightFormat f) {
  ops::MatmulShape& s = node.mm();
  check_act_dtype(f.dtype, f.act);
  const hw::DType act = act_element(f.act);
  const bool integer = f.dtype == WeightDtype::int8 || f.dtype == WeightDtype::int4;
  const hw::DType weights = weight_element(f.dtype);
  const hw::DType cube = integer || element_bits(act) > element_bits(weights) ? act : weights;
  node.dtype = cube;
  s.act_fixed = true;
  s.b_element = weights;
  s.a_row_bytes = act_row_bytes(f.act, s.k);
  s.a_quant_ops = f.act == ActDtype::bf16 ? 0 : kQuantOpsPerActivation;
  if (f.dtype == WeightDtype::bf16 || f.dtype == WeightDtype::fp16) return;
  s.b_col_bytes = column_bytes(f, s.k);
  if (integer || cube == hw::DType::bf16) {
    s.b_dequant_ops = dequant_ops(f.dtype);
  } else if (const std::optional<Microscaling> mx = microscaling_of(f.dtype)) {
    s.microscale_block = mx->block;
  } else {
    s.k_block_rescale = kBlock;  // fp8 weights' 128 x 128 blocks
  }
}

}  // namespace

void apply_weight_format(ops::OpNode& node, WeightFormat f) {
  ops::MatmulShape& s = node.mm();
  const WeightDtype t = f.dtype;
  if (f.act != ActDtype::auto_) {
    apply_fixed_activations(node, f);
    return;
  }
  if (t == WeightDtype::bf16 || t == WeightDtype::fp16) return;
  s.b_col_bytes = column_bytes(f, s.k);
  if (const std::optional<Microscaling> mx = microscaling_of(t)) {
    node.dtype = mx->element;
    s.a_row_bytes = s.k * hw::bytes_of(hw::DType::bf16);  // activations arrive in bf16
    s.a_quant_ops = kQuantOpsPerActivation;
    s.microscale_block = mx->block;
  } else if (t == WeightDtype::fp8) {
    node.dtype = hw::DType::fp8;
    s.a_row_bytes = s.k * hw::bytes_of(hw::DType::bf16);  // activations arrive in bf16
    s.a_quant_ops = kQuantOpsPerActivation;
    s.k_block_rescale = kBlock;
  } else {
    s.b_dequant_ops = dequant_ops(t);
  }
}

void dequantise_to_bf16(ops::OpNode& node) {
  if (!std::holds_alternative<ops::MatmulShape>(node.payload)) return;
  ops::MatmulShape& s = node.mm();
  if (s.act_fixed || node.dtype == hw::DType::bf16) return;       // fixed, or done
  if (s.microscale_block == 0 && s.k_block_rescale == 0) return;  // not quantised weights
  s.b_dequant_ops = float_dequant_ops(node.dtype);
  node.dtype = hw::DType::bf16;
  s.a_row_bytes = 0;
  s.a_quant_ops = 0;
  s.k_block_rescale = 0;
}

void convert_narrow_weights(ops::OpNode& node) {
  if (!std::holds_alternative<ops::MatmulShape>(node.payload)) return;
  ops::MatmulShape& s = node.mm();
  if (!s.act_fixed || s.b_dequant_ops != 0 || s.b_element == node.dtype || s.b_element == hw::DType::bf16) return;
  s.b_dequant_ops = float_dequant_ops(s.b_element);
}

}  // namespace models
