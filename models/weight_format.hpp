#pragma once
// How weights are stored, and what that costs (--weight-dtype; default: what the model's config
// says, else bf16). Bytes of a [k, n] weight matrix with its scales:
//   bf16, fp16   2 k n
//   fp8          k n + 4 ceil(k / 128) ceil(n / 128): e4m3 values with one fp32 scale per 128 x 128
//                block (DeepSeek-V3/R1's checkpoints, config.json quantization_config
//                weight_block_size [128, 128]); charged per column as k + ceil(4 ceil(k / 128) / 128)
//                bytes, at most one byte per column above the exact figure
//   int8         k n + 2 ceil(k / g) n: W8A16 with one fp16 scale per group of g k per column
//                (group quantisation; g = the group size, 128 unless the model config or
//                --weight-group says otherwise: Sophgo's LLM demos use 64, GPTQ/AWQ 128;
//                g = 0 means one scale per column, Hugging Face's group_size -1)
//   int4         ceil(k / 2) n + 2 ceil(k / g) n: W4A16, two values a byte, the same scales
//   Microscaled (OCP Microscaling Formats v1.0; NVIDIA's NVFP4): blocks of B k-elements of one
//   column share a one-byte scale, values packed along k at b bits:
//   mxfp8        (k + ceil(k / 32)) n                    e4m3 values, an e8m0 scale per 32
//   mxfp6        (ceil(3 k / 4) + ceil(k / 32)) n        e2m3 values, an e8m0 scale per 32
//   mxfp4        (ceil(k / 2) + ceil(k / 32)) n          e2m1 values, an e8m0 scale per 32
//   nvfp4        (ceil(k / 2) + ceil(k / 16)) n + 4      e2m1 values, an e4m3 scale per 16, and one
//                fp32 scale a tensor (counted in the weights' memory; a kernel holds it in a
//                register, so no tile streams it)
// Compute: fp8 runs on the cube at its fp8 rate (the chip's cube_macs_per_lane_per_cycle.fp8):
// the bf16 activations are read as they are and quantised in local memory (kQuantOpsPerActivation
// vector operations per element: group max, scale, convert), and each k-block's partial sums are
// rescaled in fp32 (one operation per output per 128 k). int8 and int4 are dequantised to bf16 on
// the vector unit (kDequantOps per weight element: unpack, convert, scale) and run on the cube at
// the bf16 rate, as are bf16 and fp16 (same bytes, same cube rate on SG2262).
// Microscaled weights run on the cube in their element type (fp8, fp6, fp4) where the chip has
// that rate (engines.*.cube_macs_per_lane_per_cycle: Blackwell, MI355X), the bf16 activations
// quantised alike in local memory (kQuantOpsPerActivation a element; the scales are applied by the
// block-scaled MMA itself, so no rescale); on a chip without it they are dequantised to bf16 on the
// vector unit (kDequantOps a weight element, as int4) and run at the bf16 rate: weight-only, as
// gpt-oss's MXFP4 experts run on Hopper (dequantise_microscaled, at lowering).
// Which matmuls: the projections of attention and of every FFN (experts included); the
// embedding, lm_head, the MoE router and the DSA indexer stay bf16, as in DeepSeek's fp8
// checkpoints.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/run_limits.hpp"
#include "ops/op_graph.hpp"

namespace models {

enum class WeightDtype : std::uint8_t { bf16, fp16, fp8, int8, int4, mxfp8, mxfp6, mxfp4, nvfp4 };

/// Every weight dtype's name, in the enum's order ("bf16", ..., "nvfp4").
const std::vector<std::string>& weight_dtype_names();

/// The group size of int8/int4 scales when nothing says otherwise.
constexpr std::uint64_t kDefaultWeightGroup = 128;

/// A weight format: the element type and, for int8/int4, the scale group along k.
struct WeightFormat {
  // Implicit from a dtype alone: the default group.
  WeightFormat(WeightDtype d = WeightDtype::bf16, std::uint64_t g = kDefaultWeightGroup)  // NOLINT
      : dtype(d), group(g) {}
  WeightDtype dtype;
  std::uint64_t group;
};

/// One of weight_dtype_names(); throws hw::InputError("weight_dtype").
WeightDtype parse_weight_dtype(std::string_view text);
std::string_view name_of(WeightDtype t);

/// Bytes of a [k, n] weight matrix in `t`, scales included (the table above).
std::uint64_t weight_matrix_bytes(WeightFormat f, std::uint64_t k, std::uint64_t n);

/// Makes a bf16 weight matmul node (B = weights) use format `t`: its B bytes, cube dtype and the
/// dequantisation or quantisation work.
void apply_weight_format(ops::OpNode& matmul, WeightFormat f);

/// Whether `t` is a microscaled format, and its block, element and packed bits a value.
struct Microscaling {
  std::uint64_t block = 0, bits = 0, tensor_scale_bytes = 0;
  hw::DType element = hw::DType::bf16;
};
std::optional<Microscaling> microscaling_of(WeightDtype t);

/// A microscaled weight matmul (ops::MatmulShape::microscale_block) made weight-only for a chip
/// whose cube lacks its element type: the weights dequantised to bf16 on the vector unit, the
/// activations as they come, the bf16 rate. Nothing for another op.
void dequantise_microscaled(ops::OpNode& matmul);

}  // namespace models
