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

}  // namespace ops
