#include "api/trace_writer.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <map>
#include <string>

#include "api/json_text.hpp"
#include "hw/config_error.hpp"

namespace api {
namespace {

// Microseconds with six exact decimals from picoseconds.
std::string us(sim::Tick ps) { return fmt::format("{}.{:06}", ps / 1'000'000, ps % 1'000'000); }

bool wanted(const TraceFilter& f, int layer) {
  return !f.layers || (layer >= f.layers->first && layer <= f.layers->second);
}

}  // namespace

void write_chrome_trace(std::ostream& out, const hw::Chip& chip, const ops::OpGraph& graph, const ops::Lowered& lowered,
                        const sim::Trace& trace, const ops::Timeline& timeline, const TraceFilter& filter) {
  out << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  auto event = [&](const std::string& text) {
    if (!first) out << ",\n";
    first = false;
    out << text;
  };
  const std::size_t cores = lowered.program.cores.size();
  for (std::size_t c = 0; c < cores; ++c) {
    event(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": "core {}"}}}})", c, c));
    for (std::size_t e = 0; e < chip.engines.size(); ++e) {
      event(fmt::format(R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": {}}}}})", c, e,
                        api::json_string(chip.engines[e].display_name())));
    }
  }
  for (std::size_t c = 0; c < cores; ++c) {
    for (std::size_t e = 0; e < chip.engines.size(); ++e) {
      const auto& queue = lowered.program.cores[c].queues[e];
      const auto& records = trace.cores[c][e];
      for (std::size_t i = 0; i < queue.size(); ++i) {
        const sim::Command& cmd = queue[i];
        const ops::OpNode& node = graph[cmd.op];
        if (!wanted(filter, node.layer)) continue;
        std::string work;
        switch (cmd.kind) {
          case sim::CommandKind::compute: work = fmt::format(R"("cycles": {})", cmd.amount); break;
          case sim::CommandKind::transfer: work = fmt::format(R"("bytes": {})", cmd.amount); break;
          case sim::CommandKind::send_msg: work = fmt::format(R"("send_msg": {})", cmd.msg); break;
          case sim::CommandKind::wait_msg:
            work = fmt::format(R"("wait_msg": {}, "count": {})", cmd.msg, cmd.msg_count);
            break;
          case sim::CommandKind::fence: work = R"("fence": true)"; break;
        }
        std::string waits;
        for (std::size_t w = 0; w < chip.engines.size(); ++w) {
          waits += fmt::format(R"(, {}: {})", api::json_string("wait_" + chip.engines[w].name),
                               cmd.wait_on(static_cast<hw::EngineId>(w)));
        }
        event(fmt::format(
            R"({{"name": {}, "cat": "{}", "ph": "X", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{{}, "id": {}, "layer": {}{}}}}})",
            api::json_string(node.name), ops::kind_name(node.kind), c, e, us(records[i].start),
            us(records[i].end - records[i].start), work, i + 1, node.layer, waits));
      }
    }
  }
  // The op-level track: one thread per op kind, in order of first appearance.
  const std::size_t ops_pid = cores;
  event(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": "ops"}}}})", ops_pid));
  std::map<ops::OpKind, std::size_t> thread_of;
  for (const ops::OpTiming& t : timeline.ops) {
    if (!wanted(filter, t.layer)) continue;
    auto [it, added] = thread_of.emplace(t.kind, thread_of.size());
    if (added) {
      event(fmt::format(R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": "{}"}}}})",
                        ops_pid, it->second, ops::kind_name(t.kind)));
    }
    event(fmt::format(
        R"({{"name": {}, "cat": "{}", "ph": "X", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{"layer": {}, "hbm_bytes": {}, "flops": {}}}}})",
        api::json_string(t.name), ops::kind_name(t.kind), ops_pid, it->second, us(t.start), us(t.end - t.start),
        t.layer, t.hbm_bytes, t.flops));
  }
  out << "\n]}\n";
}

}  // namespace api
