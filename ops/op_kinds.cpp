#include "ops/op_kinds.hpp"

#include <array>

namespace ops {
namespace {

// One row per op kind.
constexpr OpKindTraits kTraits[] = {
    {OpKind::embedding, "embedding", PayloadKind::rows, PeakUnit::vector},
    {OpKind::rmsnorm, "rmsnorm", PayloadKind::rows, PeakUnit::vector},
    {OpKind::rope, "rope", PayloadKind::rows, PeakUnit::vector},
    {OpKind::swiglu, "swiglu", PayloadKind::rows, PeakUnit::vector},
    {OpKind::moe_topk, "moe_topk", PayloadKind::rows, PeakUnit::vector},
    {OpKind::moe_combine, "moe_combine", PayloadKind::rows, PeakUnit::vector},
    {OpKind::matmul, "matmul", PayloadKind::matmul, PeakUnit::cube},
    {OpKind::expert_weights, "expert_weights", PayloadKind::stream, PeakUnit::none},
    {OpKind::kv_cache_write, "kv_cache_write", PayloadKind::rows, PeakUnit::vector},
    {OpKind::kv_cache_read, "kv_cache_read", PayloadKind::attention, PeakUnit::none},
    {OpKind::indexer_cache_read, "indexer_cache_read", PayloadKind::stream, PeakUnit::none},
    {OpKind::indexer_topk, "indexer_topk", PayloadKind::rows, PeakUnit::vector},
    {OpKind::fa2, "fa2", PayloadKind::attention, PeakUnit::cube},
    {OpKind::fa2_combine, "fa2_combine", PayloadKind::attention, PeakUnit::vector},
    {OpKind::all_reduce, "all_reduce", PayloadKind::collective, PeakUnit::none},
    {OpKind::all_to_all, "all_to_all", PayloadKind::collective, PeakUnit::none},
    {OpKind::host_launch, "host_launch", PayloadKind::host, PeakUnit::none},
    {OpKind::conv1d, "conv1d", PayloadKind::rows, PeakUnit::vector},
    {OpKind::delta_rule, "delta_rule", PayloadKind::rows, PeakUnit::vector},
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
