#pragma once
// What a runtime adds to one simulated step (the model: g5sim/runtime.hpp): its kernels' floors,
// compute floors and gaps, its collectives' fixed latency, its host launches of layers (graph ops, already on
// the chip's timeline) and its scheduling CPU. The device part depends on the step's ops alone
// (a serving engine caches it with the step); the CPU part on the steps around it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "g5sim/runtime.hpp"
#include "ops/timeline.hpp"

namespace api {

/// The step's ops as a runtime charges them (g5sim::StepOps), from the simulated timeline.
/// `split_experts`: tensor parallelism splits each routed expert (experts_split): their grouped
/// matrices take the runtime's expert_tensor_efficiency.
g5sim::StepOps step_ops(const std::vector<ops::OpTiming>& ops, bool decode_only, std::uint64_t chip_sequences,
                        std::uint64_t chip_tokens, bool split_experts);

/// A matrix op's arithmetic at the tensor engine's peak in picoseconds (its roofline's compute
/// term, `compute_ns`); 0 for an op of another kind (the runtime's tensor_efficiency spares it).
std::uint64_t tensor_ps(ops::OpKind kind, double compute_ns);
/// Whether an op (by name) is the routed experts' grouped matrices: its runtime efficiency is
/// expert_tensor_efficiency.
bool routed_expert(const std::string& name);
/// Whether tensor parallelism splits each routed expert's width across chips (no expert parallelism).
bool experts_split(std::uint64_t tp, std::uint64_t ep);

/// The scheduling CPU a step adds in picoseconds: step_cpu_ns(sequences, tokens), less the
/// device time of the step it overlaps (`overlapped_device_ps`) when the runtime overlaps them.
std::uint64_t step_cpu_ps(const g5sim::Runtime& runtime, std::uint64_t sequences, std::uint64_t tokens,
                          std::uint64_t overlapped_device_ps);

}  // namespace api
