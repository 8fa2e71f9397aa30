#pragma once
// Single-op runs for microbenchmarks (g5sim op matmul | fa2; g5sim/op_run.hpp states what they
// report): the library's side, on its own chip type and dtype.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

#include "g5sim/op_run.hpp"
#include "hw/chip.hpp"
#include "hw/dtype.hpp"
#include "models/weight_format.hpp"

namespace api {

struct MatmulRequest {
  std::uint64_t m = 0, n = 0, k = 0;
  hw::DType dtype = hw::DType::bf16;
  /// Both operands in a microscaled format (mxfp8, mxfp6, mxfp4, nvfp4), their block scales
  /// streamed with them (models/weight_format.hpp); dtype is then the format's element.
  std::optional<models::WeightDtype> microscaled;
};

/// A matmul of m x k x n in `dtype`: bf16, fp8 or fp32 (plain operands), or mxfp8, mxfp6, mxfp4,
/// nvfp4 (both operands microscaled). Throws hw::ConfigError naming `flag`.
MatmulRequest matmul_request(std::uint64_t m, std::uint64_t n, std::uint64_t k, std::string_view dtype,
                             std::string_view flag);

using Fa2Request = g5sim::AttentionOp;
using OpRunResult = g5sim::OpResult;

/// `cores` = 0 uses all of the chip's cores. Throws hw::ConfigError on bad shapes.
OpRunResult run_matmul(const hw::Chip& chip, const MatmulRequest& request, std::uint32_t cores);
OpRunResult run_fa2(const hw::Chip& chip, const Fa2Request& request, std::uint32_t cores);
OpRunResult run_collective(const hw::Chip& chip, const g5sim::CollectiveOp& request);

void write_op_json(std::ostream& out, const OpRunResult& result);
void write_op_table(std::ostream& out, const OpRunResult& result);

}  // namespace api
