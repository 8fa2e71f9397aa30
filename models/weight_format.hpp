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
// gpt-oss's MXFP4 experts run on Hopper (dequantise_to_bf16, at lowering).
// Activations (--act-dtype; default auto: the weights decide, as above). An explicit format fixes
// what the projections' activations are stored and multiplied in, as W4A4 / W4A8 / W4A16 kernels do:
//   bf16         2 k a row of k                           weight-only: any quantised weights are
//                                                         dequantised to bf16 (kDequantOps a weight)
//   fp8          k + 4 ceil(k / 128)                      e4m3, one fp32 scale per 128 (DeepSeek-V3's
//                                                         1 x 128 activation tiles)
//   mxfp8        k + ceil(k / 32)                         e4m3, an e8m0 scale per 32
//   mxfp6        ceil(3 k / 4) + ceil(k / 32)             e2m3, an e8m0 scale per 32
//   mxfp4        ceil(k / 2) + ceil(k / 32)               e2m1, an e8m0 scale per 32
//   nvfp4        ceil(k / 2) + ceil(k / 16)               e2m1, an e4m3 scale per 16 (and one fp32
//                                                         scale a tensor, held in a register)
// The cube multiplies in the wider of the two elements (bf16 > fp8 > fp6 > fp4; integer weights
// are dequantised to the activations' element): mxfp4 weights with fp8 activations run at the fp8
// rate. A chip whose cube lacks that element refuses the run (no fallback: the format was asked
// for); a chip without the weights' own narrower element converts them on the vector unit
// (kDequantOps a weight), as a kernel without a mixed-input MMA does. The matmul reads its
// activations at the format's bytes; their quantisation (kQuantOpsPerActivation an element) is
// charged where they are read, standing for the producer's fused epilogue, whose store is still
// charged in bf16. The MoE dispatch sends tokens in the format (auto: fp8 weights send fp8 with a
// scale per 128, as DeepEP does; else bf16); the combine returns bf16. bf16 or fp16 weights take
// bf16 activations only (a narrower format would need quantised weights).
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

/// The projections' activation format (the table above); auto_: the weights decide.
enum class ActDtype : std::uint8_t { auto_, bf16, fp8, mxfp8, mxfp6, mxfp4, nvfp4 };

/// Every activation dtype's name, in the enum's order ("auto", "bf16", ..., "nvfp4").
const std::vector<std::string>& act_dtype_names();
/// One of act_dtype_names(); throws hw::InputError("act_dtype").
ActDtype parse_act_dtype(std::string_view text);
std::string_view name_of(ActDtype t);
/// Bytes of one row of k activations in `t` (auto: bf16), scales included (the table above).
std::uint64_t act_row_bytes(ActDtype t, std::uint64_t k);
/// The element the cube takes activations of `t` in (auto: bf16).
hw::DType act_element(ActDtype t);

/// A weight format: the element type, for int8/int4 the scale group along k, and the activations'
/// format.
struct WeightFormat {
  // Implicit from a dtype alone: the default group, activations as the weights decide.
  WeightFormat(WeightDtype d = WeightDtype::bf16, std::uint64_t g = kDefaultWeightGroup,  // NOLINT
               ActDtype a = ActDtype::auto_)
      : dtype(d), group(g), act(a) {}
  WeightDtype dtype;
  std::uint64_t group;
  ActDtype act;
};

/// Throws hw::InputError("act_dtype") when `act` cannot go with weights `weights` (bf16 or fp16
/// weights take bf16 activations only).
void check_act_dtype(WeightDtype weights, ActDtype act);

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
/// The weights' floating-point element: fp8 for fp8 and mxfp8, fp6, fp4; bf16 for bf16, fp16 and
/// the integer formats (dequantised to whatever the cube takes).
hw::DType weight_element(WeightDtype t);

/// A floating-point quantised weight matmul (microscaled, or fp8 blocks) made weight-only for a
/// chip whose cube lacks its element type: the weights dequantised to bf16 on the vector unit,
/// the activations as they come, the bf16 rate. Nothing for another op, or one whose activation
/// format was fixed (ops::MatmulShape::act_fixed).
void dequantise_to_bf16(ops::OpNode& matmul);

/// A matmul with fixed activations whose weights are narrower than the cube's element, on a chip
/// without a rate for the weights' element: they are converted on the vector unit first.
void convert_narrow_weights(ops::OpNode& matmul);

}  // namespace models
