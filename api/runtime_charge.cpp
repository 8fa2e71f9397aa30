#include "api/runtime_charge.hpp"

#include <algorithm>
#include <string>

#include "ops/op_kinds.hpp"

namespace api {

namespace {
constexpr std::uint64_t kPsPerNs = 1000;
}

g5sim::RuntimeParts device_charge(const g5sim::Runtime& runtime, const std::vector<ops::OpTiming>& ops,
                                  bool decode_only, std::uint64_t chip_sequences) {
  g5sim::RuntimeParts parts;
  const g5sim::KernelCosts& costs = runtime.kernels_for(decode_only, chip_sequences);
  parts.kernel_mode = &costs == &runtime.graph ? "graph" : "eager";
  const std::uint64_t floor_ps = costs.floor_ns * kPsPerNs;
  for (const ops::OpTiming& op : ops) {
    const std::string_view kind = ops::kind_name(op.kind);
    if (op.kind == ops::OpKind::host_launch) {
      parts.layer_launches += 1;
      parts.layer_launch_ps += op.end - op.start;
      continue;
    }
    if (std::find(runtime.fused_kinds.begin(), runtime.fused_kinds.end(), kind) != runtime.fused_kinds.end()) continue;
    parts.kernels += 1;
    parts.kernel_floor_ps += floor_ps - std::min(floor_ps, op.end - op.start);
    if (ops::traits_of(op.kind).payload == ops::PayloadKind::collective) {
      parts.collectives += 1;
      parts.collective_ps += runtime.collective(std::string(kind), op.message_bytes).latency_ns * kPsPerNs;
    }
  }
  parts.kernel_gap_ps = parts.kernels * costs.gap_ns * kPsPerNs;
  return parts;
}

std::uint64_t step_cpu_ps(const g5sim::Runtime& runtime, std::uint64_t sequences, std::uint64_t tokens,
                          std::uint64_t overlapped_device_ps) {
  const std::uint64_t cpu_ps = runtime.step_cpu_ns(sequences, tokens) * kPsPerNs;
  if (!runtime.overlap) return cpu_ps;
  return cpu_ps - std::min(cpu_ps, overlapped_device_ps);
}

}  // namespace api
