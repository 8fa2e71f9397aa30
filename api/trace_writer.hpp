#pragma once
// Chrome trace-event JSON of a run, for Perfetto (ui.perfetto.dev) and chrome://tracing.
//
//   one process per core ("core N"); a thread per serial engine (TIU, HAU) and per in-flight slot
//   of a transfer engine ("GDMA[0]" .. "GDMA[outstanding-1]", the slots it used), and a complete
//   event ("ph": "X") per command: name = its op, cat = the op's kind, ts / dur in microseconds
//   printed exactly from the picosecond records (six decimals: no rounding), args = bytes or
//   cycles, its queue id and the id it waited on per engine ("wait_gdma": ...). Message commands
//   appear as zero-length slices. One more process, "ops", with rows per op kind ("matmul",
//   "matmul #2" where ops of the kind overlap) and a slice per op (op_start..op_end).
//   The events of every thread are sequential (each starts at or after the previous end), so no
//   two X events of a thread overlap without nesting, as the trace-event format requires and
//   Perfetto draws correctly: a transfer goes to the lowest slot free at its start.
// `layers` limits the trace to ops of decoder layers first..last (inclusive): a 61-layer step
// has over half a million commands.

#include <cstdint>
#include <optional>
#include <ostream>
#include <utility>

#include "api/report.hpp"
#include "hw/chip.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"
#include "ops/timeline.hpp"
#include "sim/program.hpp"

namespace api {

struct TraceFilter {
  std::optional<std::pair<int, int>> layers;  ///< inclusive layer range
};

/// About how many bytes a trace of `commands` commands and `ops` ops takes (for a size warning).
std::uint64_t trace_bytes_estimate(std::uint64_t commands, std::uint64_t ops);

/// With a runtime (`runtime` not null), a host process follows the ops': its layer launches where
/// they ran, then after the chip's timeline the rest of its charge, part by part (kernel floors,
/// gaps, collectives, scheduler CPU), so that the trace ends where the step as the software runs
/// it ends (step_ns).
void write_chrome_trace(std::ostream& out, const hw::Chip& chip, const ops::OpGraph& graph, const ops::Lowered& lowered,
                        const sim::Trace& trace, const ops::Timeline& timeline, const TraceFilter& filter,
                        const RuntimeReport* runtime = nullptr);

}  // namespace api
