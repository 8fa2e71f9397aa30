#pragma once
// The data formats the op models assume, named once.

#include <cstdint>

#include "hw/dtype.hpp"

namespace ops {

/// Activations between ops (matmul outputs, attention Q and output) are bf16 in DDR; matmul and
/// attention accumulators, scores and partial outputs are fp32 in local memory.
constexpr hw::DType kActivationDtype = hw::DType::bf16;
constexpr hw::DType kAccumulatorDtype = hw::DType::fp32;
constexpr std::uint64_t kActivationBytes = hw::bytes_of(kActivationDtype);
constexpr std::uint64_t kAccumulatorBytes = hw::bytes_of(kAccumulatorDtype);

/// fa2's work per element, by what the kernel does to it (fp32 on the vector ALU, exp on the SFU):
/// the lowering (ops/attention_unit.cpp) emits it and the split choice (ops/attention_plan.cpp)
/// estimates with it.
constexpr std::uint64_t kSoftmaxOpsPerScore = 3;     // running max, subtract, running sum (+ 1 exp)
constexpr std::uint64_t kRescaleOpsPerOutput = 1;    // O *= exp(m_old - m_new) (+ 1 exp per row)
constexpr std::uint64_t kNormaliseOpsPerOutput = 1;  // O *= 1 / l (+ 1 reciprocal per row)
constexpr std::uint64_t kDequantOpsPerElement = 1;   // fp8 * scale -> bf16
constexpr std::uint64_t kCombineOpsPerOutput = 1;    // weighted accumulate of one partial
constexpr std::uint64_t kCombineOpsPerRow = 2;       // max and sum of the statistics (+ 2 exps per partial)
constexpr std::uint64_t kStatBytesPerRow = 2 * kAccumulatorBytes;  // running max and running sum

}  // namespace ops
