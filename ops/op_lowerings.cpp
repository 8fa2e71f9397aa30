#include "ops/op_lowerings.hpp"

#include <array>
#include <stdexcept>

namespace ops::detail {
namespace {

struct Registration {
  OpKind kind;
  LowerFn lower;
};

// One line per op kind.
constexpr Registration kRegistry[] = {
    {OpKind::embedding, lower_vector},
    {OpKind::rmsnorm, lower_vector},
    {OpKind::rope, lower_vector},
    {OpKind::swiglu, lower_vector},
    {OpKind::moe_topk, lower_topk},
    {OpKind::moe_combine, lower_vector},
    {OpKind::matmul, lower_matmul},
    {OpKind::expert_weights, lower_nothing},  // the expert matmuls load it on its behalf
    {OpKind::kv_cache_write, lower_vector},
    {OpKind::kv_cache_read, lower_kv_cache_read},
    {OpKind::indexer_cache_read, lower_nothing},  // the score matmul loads the keys on its behalf
    {OpKind::indexer_topk, lower_topk},
    {OpKind::fa2, lower_fa2},
    {OpKind::fa2_combine, lower_fa2_combine},
    {OpKind::all_reduce, lower_collective},
    {OpKind::all_to_all, lower_collective},
    {OpKind::host_launch, lower_host_launch},
    {OpKind::conv1d, lower_vector},
    {OpKind::delta_rule, lower_vector},
};

constexpr bool registers_every_kind_once() {
  std::array<int, kOpKindCount> count{};
  for (const Registration& r : kRegistry) ++count[static_cast<std::size_t>(r.kind)];
  for (int n : count) {
    if (n != 1) return false;
  }
  return true;
}
static_assert(registers_every_kind_once(), "every OpKind needs exactly one lowering in kRegistry");

const std::array<LowerFn, kOpKindCount> kTable = [] {
  std::array<LowerFn, kOpKindCount> t{};
  for (const Registration& r : kRegistry) t[static_cast<std::size_t>(r.kind)] = r.lower;
  return t;
}();

}  // namespace

LowerFn lowering_of(OpKind kind) { return kTable[static_cast<std::size_t>(kind)]; }

void lower_nothing(LoweringContext&, OpId) {}

}  // namespace ops::detail
