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
// Compute: fp8 runs on the cube at its fp8 rate (the chip's cube_macs_per_lane_per_cycle.fp8):
// the bf16 activations are read as they are and quantised in local memory (kQuantOpsPerActivation
// vector operations per element: group max, scale, convert), and each k-block's partial sums are
// rescaled in fp32 (one operation per output per 128 k). int8 and int4 are dequantised to bf16 on
// the vector unit (kDequantOps per weight element: unpack, convert, scale) and run on the cube at
// the bf16 rate, as are bf16 and fp16 (same bytes, same cube rate on SG2262).
// Which matmuls: the projections of attention and of every FFN (experts included); the
// embedding, lm_head, the MoE router and the DSA indexer stay bf16, as in DeepSeek's fp8
// checkpoints.

#include <cstdint>
#include <string_view>

#include "models/run_limits.hpp"
#include "ops/op_graph.hpp"

namespace models {

enum class WeightDtype : std::uint8_t { bf16, fp16, fp8, int8, int4 };

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

/// "bf16", "fp16", "fp8", "int8" or "int4"; throws hw::InputError("weight_dtype").
WeightDtype parse_weight_dtype(std::string_view text);
std::string_view name_of(WeightDtype t);

/// Bytes of a [k, n] weight matrix in `t`, scales included (the table above).
std::uint64_t weight_matrix_bytes(WeightFormat f, std::uint64_t k, std::uint64_t n);

/// Makes a bf16 weight matmul node (B = weights) use format `t`: its B bytes, cube dtype and the
/// dequantisation or quantisation work.
void apply_weight_format(ops::OpNode& matmul, WeightFormat f);

}  // namespace models
