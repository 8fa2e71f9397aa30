#include "ops/op_kinds.hpp"

#include <array>

namespace ops {
namespace {

// One row per op kind.
constexpr OpKindTraits kTraits[] = {
    {OpKind::embedding, "embedding", PayloadKind::rows},
    {OpKind::rmsnorm, "rmsnorm", PayloadKind::rows},
    {OpKind::rope, "rope", PayloadKind::rows},
    {OpKind::swiglu, "swiglu", PayloadKind::rows},
    {OpKind::moe_topk, "moe_topk", PayloadKind::rows},
    {OpKind::moe_combine, "moe_combine", PayloadKind::rows},
    {OpKind::matmul, "matmul", PayloadKind::matmul},
    {OpKind::expert_weights, "expert_weights", PayloadKind::stream},
    {OpKind::kv_cache_write, "kv_cache_write", PayloadKind::rows},
    {OpKind::kv_cache_read, "kv_cache_read", PayloadKind::attention},
    {OpKind::indexer_cache_read, "indexer_cache_read", PayloadKind::stream},
    {OpKind::indexer_topk, "indexer_topk", PayloadKind::rows},
    {OpKind::fa2, "fa2", PayloadKind::attention},
    {OpKind::fa2_combine, "fa2_combine", PayloadKind::attention},
    {OpKind::all_reduce, "all_reduce", PayloadKind::collective},
    {OpKind::all_to_all, "all_to_all", PayloadKind::collective},
};

constexpr bool in_enum_order() {
  if (std::size(kTraits) != kOpKindCount) return false;
  for (std::size_t i = 0; i < kOpKindCount; ++i) {
    if (static_cast<std::size_t>(kTraits[i].kind) != i) return false;
  }
  return true;
}
static_assert(in_enum_order(), "kTraits needs one row per OpKind, in enum order");

}  // namespace

const OpKindTraits& traits_of(OpKind kind) { return kTraits[static_cast<std::size_t>(kind)]; }

}  // namespace ops
