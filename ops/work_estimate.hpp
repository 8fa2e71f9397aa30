#pragma once
// How big a run is before it is built: the commands a lowering will emit, estimated from the same
// split and tile rules, so that a run that would need tens of gigabytes is refused at once with a
// clear error instead of allocating until the OS kills it.
//
//   matmul        its tiles on every core (ops/work_split.hpp, ops/matmul_tiling.hpp) x 3: a tensor
//                 command, a B load, an A load or a store;
//   row ops       tiles of rows on the cores that have rows (two tiles of buffers fill local
//                 memory) x 4;
//   attention     kv_cache_read + fa2 + fa2_combine: estimate_attention_commands (ops/attention_plan.hpp),
//                 or, when loop replay cuts its chunk loops (LoweringOptions::loop_kept), 8 per
//                 iteration kept and 4 per row block of the plan;
//   collectives   one transfer per algorithm step; every op: two message commands per core.
// Memory: kBytesPerCommand per command, rounded up from what runs hold: a command takes 4 to 5
// bytes and its record about 4 in their compact queues (sim/command_queue.hpp,
// sim/record_queue.hpp; a V3 prefill block on H100: 4.4 and 3.8), plus their block offsets and
// the kernel's byte per transfer (a V3 prefill step on 32 H100s: 440 MB for 51.5 M simulated). With layer replay
// (api/simulation.hpp) a step lowers only the layers it simulates, and the estimate is of those. Measured against the
// real counts: the default decode step 0.97 M estimated / 0.95 M emitted; a 3-layer 4k prefill 3.8 M / 2.5 M; a 32k
// decode block 11 k / 10 k.

#include <cstdint>

#include "hw/chip.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"

namespace ops {

constexpr std::uint64_t kBytesPerCommand = 12;

/// Estimated commands of lowering `graph`.
double estimate_commands(const OpGraph& graph, const hw::Chip& chip, const LoweringOptions& options);

}  // namespace ops
