#pragma once
// Chrome trace-event JSON of a run, for Perfetto (ui.perfetto.dev) and chrome://tracing.
//
//   one process per core ("core N"), one thread per engine of the chip (TIU, GDMA, ...), and a
//   complete event ("ph": "X") per command: name = its op, cat = the op's kind, ts / dur in
//   microseconds printed exactly from the picosecond records, args = bytes or cycles, its queue id
//   and the id it waited on per engine ("wait_gdma": ...). Message commands appear as zero-length slices.
//   one more process, "ops", with a thread per op kind and a slice per op (op_start..op_end).
// `layers` limits the trace to ops of decoder layers first..last (inclusive): a 61-layer step
// has over half a million commands.

#include <optional>
#include <ostream>
#include <utility>

#include "hw/chip.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"
#include "ops/timeline.hpp"
#include "sim/command.hpp"

namespace api {

struct TraceFilter {
  std::optional<std::pair<int, int>> layers;  ///< inclusive layer range
};

void write_chrome_trace(std::ostream& out, const hw::Chip& chip, const ops::OpGraph& graph, const ops::Lowered& lowered,
                        const sim::Trace& trace, const ops::Timeline& timeline, const TraceFilter& filter);

}  // namespace api
