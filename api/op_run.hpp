#pragma once
// Single-op runs for microbenchmarks (g5sim op matmul | fa2; g5sim/op_run.hpp states what they
// report): the library's side, on its own chip type and dtype.

#include <cstdint>
#include <ostream>

#include "g5sim/op_run.hpp"
#include "hw/chip.hpp"
#include "hw/dtype.hpp"

namespace api {

struct MatmulRequest {
  std::uint64_t m = 0, n = 0, k = 0;
  hw::DType dtype = hw::DType::bf16;
};

using Fa2Request = g5sim::AttentionOp;
using OpRunResult = g5sim::OpResult;

/// `cores` = 0 uses all of the chip's cores. Throws hw::ConfigError on bad shapes.
OpRunResult run_matmul(const hw::Chip& chip, const MatmulRequest& request, std::uint32_t cores);
OpRunResult run_fa2(const hw::Chip& chip, const Fa2Request& request, std::uint32_t cores);
OpRunResult run_collective(const hw::Chip& chip, const g5sim::CollectiveOp& request);

void write_op_json(std::ostream& out, const OpRunResult& result);
void write_op_table(std::ostream& out, const OpRunResult& result);

}  // namespace api
