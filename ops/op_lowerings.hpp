#pragma once
// The lowering registry: one lowering function per op kind. An op kind's lowering lives in a file
// of its own family (matmul_lowering.cpp, row_lowering.cpp, attention_unit.cpp,
// collective_lowering.cpp, topk_lowering.cpp, host_lowering.cpp) and is registered once, in op_lowerings.cpp.

#include "ops/lowering_context.hpp"

namespace ops::detail {

using LowerFn = void (*)(LoweringContext& ctx, OpId op);

/// The lowering of an op kind (never null: kinds without commands of their own register a
/// function that emits nothing).
LowerFn lowering_of(OpKind kind);

// The registered lowerings.
void lower_matmul(LoweringContext& ctx, OpId op);
void lower_vector(LoweringContext& ctx, OpId op);
void lower_topk(LoweringContext& ctx, OpId op);
void lower_kv_cache_read(LoweringContext& ctx, OpId op);
void lower_fa2(LoweringContext& ctx, OpId op);
void lower_fa2_combine(LoweringContext& ctx, OpId op);
void lower_collective(LoweringContext& ctx, OpId op);
void lower_host_launch(LoweringContext& ctx, OpId op);
/// Ops whose bytes other ops' commands move on their behalf (expert weights, indexer keys).
void lower_nothing(LoweringContext& ctx, OpId op);

}  // namespace ops::detail
