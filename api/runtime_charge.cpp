#include "api/runtime_charge.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/op_kinds.hpp"

namespace api {

namespace {
constexpr std::uint64_t kPsPerNs = 1000;
}

bool routed_expert(const std::string& name) {
  // models/ffn_block.cpp names the routed experts' grouped matrices experts_gate_up, experts_down.
  return name.rfind("experts_", 0) == 0;
}

std::uint64_t tensor_ps(ops::OpKind kind, double compute_ns) {
  if (ops::traits_of(kind).peak != ops::PeakUnit::cube) return 0;
  return static_cast<std::uint64_t>(std::llround(compute_ns * static_cast<double>(kPsPerNs)));
}

bool experts_split(std::uint64_t tp, std::uint64_t ep) {
  // models/parallelism.cpp: without expert parallelism, tensor parallelism splits each expert's width.
  return ep == 1 && tp > 1;
}

g5sim::StepOps step_ops(const std::vector<ops::OpTiming>& ops, bool decode_only, std::uint64_t chip_sequences,
                        std::uint64_t chip_tokens, bool split_experts) {
  g5sim::StepOps step;
  step.decode_only = decode_only;
  step.chip_sequences = chip_sequences;
  step.chip_tokens = chip_tokens;
  step.split_experts = split_experts;
  step.ops.reserve(ops.size());
  for (const ops::OpTiming& op : ops) {
    step.ops.push_back({static_cast<std::uint8_t>(op.kind), op.end - op.start, op.message_bytes,
                        tensor_ps(op.kind, op.compute_ns), routed_expert(op.name)});
  }
  return step;
}

std::uint64_t step_cpu_ps(const g5sim::Runtime& runtime, std::uint64_t sequences, std::uint64_t tokens,
                          std::uint64_t overlapped_device_ps) {
  const std::uint64_t cpu_ps = runtime.step_cpu_ns(sequences, tokens) * kPsPerNs;
  if (!runtime.overlap) return cpu_ps;
  return cpu_ps - std::min(cpu_ps, overlapped_device_ps);
}

}  // namespace api

namespace g5sim {

const std::vector<std::string>& StepOps::kind_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (std::size_t k = 0; k < ops::kOpKindCount; ++k) out.emplace_back(ops::kind_name(static_cast<ops::OpKind>(k)));
    return out;
  }();
  return names;
}

StepOps step_ops_of(const Result& result) {
  const std::vector<std::string>& names = StepOps::kind_names();
  StepOps step;
  step.decode_only = std::none_of(result.chip_sequences.begin(), result.chip_sequences.end(),
                                  [](const SequenceRecord& g) { return g.path == "prefill"; });
  for (const SequenceRecord& g : result.chip_sequences) {
    step.chip_sequences += g.count;
    step.chip_tokens += g.count * g.q_len;
  }
  step.ops.reserve(result.ops.size());
  step.split_experts = api::experts_split(result.tp, result.ep);
  for (const OpRecord& op : result.ops) {
    const auto kind = static_cast<std::uint8_t>(std::find(names.begin(), names.end(), op.kind) - names.begin());
    const std::uint64_t tensor =
        kind < names.size() ? api::tensor_ps(static_cast<ops::OpKind>(kind), op.compute_ns) : std::uint64_t{0};
    step.ops.push_back({kind, op.op_end_ps - op.op_start_ps, op.message_bytes, tensor, api::routed_expert(op.name)});
  }
  return step;
}

// The model's sums (g5sim/runtime.hpp) over the step's ops.
RuntimeParts device_charge(const Runtime& runtime, const StepOps& step) {
  constexpr std::uint64_t kPsPerNs = 1000;
  const std::vector<std::string>& names = StepOps::kind_names();
  RuntimeParts parts;
  const KernelMode mode = runtime.kernel_mode(step.decode_only, step.chip_sequences, step.chip_tokens);
  parts.kernel_mode = kernel_mode_name(mode);
  // Per kind: launched as a kernel (not fused, not a host launch), a collective's table, and the
  // kernel costs it takes in this step's mode (a piecewise graph leaves the attention's kernels
  // out, to run eagerly between its pieces: g5sim/runtime.hpp).
  std::vector<std::uint8_t> launched(names.size()), collective(names.size()), host(names.size());
  std::vector<const KernelCosts*> costs_of(names.size());
  for (std::size_t k = 0; k < names.size(); ++k) {
    const auto kind = static_cast<ops::OpKind>(k);
    host[k] = kind == ops::OpKind::host_launch;
    launched[k] = !host[k] && std::find(runtime.fused_kinds.begin(), runtime.fused_kinds.end(), names[k]) ==
                                  runtime.fused_kinds.end();
    collective[k] = ops::traits_of(kind).payload == ops::PayloadKind::collective;
    // The attention: the kinds carrying an attention payload (kv_cache_read, fa2, fa2_combine) and
    // the cache write vLLM's attention op does first.
    const bool attention =
        ops::traits_of(kind).payload == ops::PayloadKind::attention || kind == ops::OpKind::kv_cache_write;
    costs_of[k] = &runtime.kernels_for(mode, attention);
  }
  // The host's clock: when it has issued the kernels so far.
  std::uint64_t host_ps = 0;
  // The device's clock over the launched kernels as charged so far (for the launch waits).
  std::uint64_t device_ps = 0;
  for (const StepOps::Op& op : step.ops) {
    if (op.kind >= names.size()) continue;  // a kind this build does not know: not charged
    if (host[op.kind]) {
      parts.layer_launches += 1;
      parts.layer_launch_ps += op.duration_ps;
      continue;
    }
    if (!launched[op.kind]) continue;
    const KernelCosts& costs = *costs_of[op.kind];
    const std::uint64_t floor_ps = costs.floor_ns * kPsPerNs;
    const std::uint64_t gap_ps = costs.gap_ns * kPsPerNs;
    // The host issues this kernel after the ones before it; the device starts it no earlier.
    host_ps += (op.expert ? costs.expert_launch_ns : costs.launch_ns) * kPsPerNs;
    device_ps += gap_ps;
    parts.kernel_gap_ps += gap_ps;
    if (host_ps > device_ps) {
      parts.kernel_launch_ps += host_ps - device_ps;
      device_ps = host_ps;
    }
    parts.kernels += 1;
    const std::uint64_t floored = std::max(floor_ps, op.duration_ps);
    parts.kernel_floor_ps += floored - op.duration_ps;
    std::uint64_t lasts = floored;
    const bool split_expert = op.expert && step.split_experts;
    const double efficiency = split_expert ? runtime.expert_tensor_efficiency : runtime.tensor_efficiency;
    if (efficiency < 1 && op.tensor_ps > 0) {
      // The runtime's kernel at its efficiency, against the op as the floor left it (an integer
      // picosecond, rounded once: the same on every machine).
      const auto reached = static_cast<std::uint64_t>(std::llround(static_cast<double>(op.tensor_ps) / efficiency));
      parts.kernel_compute_ps += reached - std::min(reached, floored);
      lasts = std::max(lasts, reached);
    }
    if (collective[op.kind]) {
      const std::uint64_t latency_ps = runtime.collective(names[op.kind], op.message_bytes).latency_ns * kPsPerNs;
      parts.collectives += 1;
      parts.collective_ps += latency_ps;
      lasts += latency_ps;
    }
    device_ps += lasts;
  }
  return parts;
}

}  // namespace g5sim
