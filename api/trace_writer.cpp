#include "api/trace_writer.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/json_text.hpp"
#include "hw/config_error.hpp"

namespace api {
namespace {

// Microseconds with six exact decimals from picoseconds.
std::string us(sim::Tick ps) { return fmt::format("{}.{:06}", ps / 1'000'000, ps % 1'000'000); }

bool wanted(const TraceFilter& f, int layer) {
  return !f.layers || (layer >= f.layers->first && layer <= f.layers->second);
}

// Tracks that nest: every X event of a thread starts at or after the previous one's end. A serial
// engine's commands never overlap; a transfer engine runs up to `outstanding` at once, so each
// command goes to the lowest slot free at its start (commands start in queue order, so this
// needs as many slots as were ever in flight, and at most `outstanding`). Op tracks do the same
// per op kind, over the ops sorted by start.
class Lanes {
 public:
  std::size_t place(sim::Tick start, sim::Tick end) {
    for (std::size_t l = 0; l < free_at_.size(); ++l) {
      if (free_at_[l] <= start) {
        free_at_[l] = end;
        return l;
      }
    }
    free_at_.push_back(end);
    return free_at_.size() - 1;
  }
  std::size_t count() const { return free_at_.size(); }

 private:
  std::vector<sim::Tick> free_at_;
};

// A thread id per (engine or op kind, slot): tid = index x kMaxSlots + slot.
constexpr std::size_t kMaxSlots = 1000;

// The trace's event list: each event written after a comma and a new line but the first.
class TraceEvents {
 public:
  explicit TraceEvents(std::ostream& out) : out_(out) {}
  void add(const std::string& text) {
    if (!first_) out_ << ",\n";
    first_ = false;
    out_ << text;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

// The slot of every traced command, per core and engine, and the slots each engine used.
struct CommandSlots {
  std::vector<std::vector<std::vector<std::size_t>>> slot;  // [core][engine][command]
  std::vector<std::vector<std::size_t>> slots;              // [core][engine]
};

// Places every traced command on the lowest slot of its engine free at its start.
CommandSlots place_commands(const hw::Chip& chip, const ops::OpGraph& graph, const ops::Lowered& lowered,
                            const sim::Trace& trace, const TraceFilter& filter) {
  const std::size_t cores = lowered.program.cores.size();
  const std::size_t engines = chip.engines.size();
  CommandSlots out;
  auto& slot = out.slot;
  auto& slots = out.slots;
  slot.assign(cores, std::vector<std::vector<std::size_t>>(engines));
  slots.assign(cores, std::vector<std::size_t>(engines, 0));
  for (std::size_t c = 0; c < cores; ++c) {
    for (std::size_t e = 0; e < engines; ++e) {
      const auto& queue = lowered.program.cores[c].queues[e];
      const auto& records = trace.cores[c][e];
      Lanes lanes;
      slot[c][e].assign(queue.size(), 0);
      for (std::size_t i = 0; i < queue.size(); ++i) {
        if (wanted(filter, graph[queue[i].op].layer)) slot[c][e][i] = lanes.place(records[i].start, records[i].end);
      }
      slots[c][e] = lanes.count();
      if (slots[c][e] > kMaxSlots) throw std::logic_error("trace: more commands in flight than slots");
    }
  }
  return out;
}

// A process per core and a named, sorted thread per (engine, slot used): "GDMA" for a serial
// engine, "GDMA[s]" for a slot.
void write_core_tracks(TraceEvents& events, const hw::Chip& chip, const CommandSlots& placed) {
  const std::size_t cores = placed.slots.size();
  const std::size_t engines = chip.engines.size();
  const auto& slots = placed.slots;
  for (std::size_t c = 0; c < cores; ++c) {
    events.add(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": "core {}"}}}})", c, c));
    for (std::size_t e = 0; e < engines; ++e) {
      const std::string name = chip.engines[e].display_name();
      const bool serial = chip.engines[e].serial();
      for (std::size_t s = 0; s < std::max<std::size_t>(1, slots[c][e]); ++s) {
        const std::string track = serial ? name : fmt::format("{}[{}]", name, s);
        events.add(fmt::format(R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": {}}}}})",
                               c, e * kMaxSlots + s, api::json_string(track)));
        events.add(fmt::format(
            R"({{"name": "thread_sort_index", "ph": "M", "pid": {}, "tid": {}, "args": {{"sort_index": {}}}}})", c,
            e * kMaxSlots + s, e * kMaxSlots + s));
      }
    }
  }
}

// A command's work as its event's first args: cycles, bytes, a message, a fence or a delay.
std::string command_work(const sim::Command& cmd) {
  std::string work;
  switch (cmd.kind) {
    case sim::CommandKind::compute: work = fmt::format(R"("cycles": {})", cmd.amount); break;
    case sim::CommandKind::transfer: work = fmt::format(R"("bytes": {})", cmd.amount); break;
    case sim::CommandKind::send_msg: work = fmt::format(R"("send_msg": {})", cmd.msg); break;
    case sim::CommandKind::wait_msg:
      work = fmt::format(R"("wait_msg": {}, "count": {})", cmd.msg, cmd.msg_count);
      break;
    case sim::CommandKind::fence: work = R"("fence": true)"; break;
    case sim::CommandKind::delay: work = fmt::format(R"("delay_ps": {})", cmd.amount); break;
  }
  return work;
}

// An X event per traced command, on its core's process and its slot's thread.
void write_command_events(TraceEvents& events, const hw::Chip& chip, const ops::OpGraph& graph,
                          const ops::Lowered& lowered, const sim::Trace& trace, const TraceFilter& filter,
                          const CommandSlots& placed) {
  const std::size_t cores = lowered.program.cores.size();
  const std::size_t engines = chip.engines.size();
  const auto& slot = placed.slot;
  for (std::size_t c = 0; c < cores; ++c) {
    for (std::size_t e = 0; e < engines; ++e) {
      const auto& queue = lowered.program.cores[c].queues[e];
      const auto& records = trace.cores[c][e];
      for (std::size_t i = 0; i < queue.size(); ++i) {
        const sim::Command& cmd = queue[i];
        const ops::OpNode& node = graph[cmd.op];
        if (!wanted(filter, node.layer)) continue;
        const std::string work = command_work(cmd);
        std::string waits;
        for (std::size_t w = 0; w < engines; ++w) {
          waits += fmt::format(R"(, {}: {})", api::json_string("wait_" + chip.engines[w].name),
                               cmd.wait_on(static_cast<hw::EngineId>(w)));
        }
        events.add(fmt::format(
            R"({{"name": {}, "cat": "{}", "ph": "X", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{{}, "id": {}, "layer": {}{}}}}})",
            api::json_string(node.name), ops::kind_name(node.kind), c, e * kMaxSlots + slot[c][e][i],
            us(records[i].start), us(records[i].end - records[i].start), work, i + 1, node.layer, waits));
      }
    }
  }
}

// The op-level tracks: per op kind (in order of first appearance) as many rows as its ops
// overlap ("matmul", "matmul #2", ...), each op on the first row free at its start.
void write_op_tracks(TraceEvents& events, const ops::Timeline& timeline, const TraceFilter& filter,
                     std::size_t ops_pid) {
  events.add(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": "ops"}}}})", ops_pid));
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < timeline.ops.size(); ++i) {
    if (wanted(filter, timeline.ops[i].layer)) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return timeline.ops[a].start < timeline.ops[b].start; });
  std::map<ops::OpKind, std::size_t> kind_index;
  for (const ops::OpTiming& t : timeline.ops) {
    if (wanted(filter, t.layer)) kind_index.emplace(t.kind, kind_index.size());
  }
  std::map<ops::OpKind, Lanes> rows;
  std::map<std::pair<std::size_t, std::size_t>, bool> named;
  for (const std::size_t i : order) {
    const ops::OpTiming& t = timeline.ops[i];
    const std::size_t kind = kind_index.at(t.kind);
    const std::size_t row = rows[t.kind].place(t.start, t.end);
    const std::size_t tid = kind * kMaxSlots + row;
    if (!named[{kind, row}]) {
      named[{kind, row}] = true;
      const std::string track =
          row == 0 ? std::string(ops::kind_name(t.kind)) : fmt::format("{} #{}", ops::kind_name(t.kind), row + 1);
      events.add(fmt::format(R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": "{}"}}}})",
                             ops_pid, tid, track));
      events.add(fmt::format(
          R"({{"name": "thread_sort_index", "ph": "M", "pid": {}, "tid": {}, "args": {{"sort_index": {}}}}})", ops_pid,
          tid, tid));
    }
    events.add(fmt::format(
        R"({{"name": {}, "cat": "{}", "ph": "X", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{"layer": {}, "hbm_bytes": {}, "flops": {}}}}})",
        api::json_string(t.name), ops::kind_name(t.kind), ops_pid, tid, us(t.start), us(t.end - t.start), t.layer,
        t.hbm_bytes, t.flops));
  }
}

}  // namespace

std::uint64_t trace_bytes_estimate(std::uint64_t commands, std::uint64_t ops) {
  // Measured on DeepSeek-V3 steps: a command's event is 230-250 bytes, an op's about 170.
  return commands * 250 + ops * 180 + 4096;
}

// The runtime's host track (process `pid`): the layer launches as they ran, then its other parts
// one after another from the chip timeline's end.
void write_runtime_track(TraceEvents& events, const ops::Timeline& timeline, const RuntimeReport& runtime,
                         std::size_t pid) {
  events.add(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": {}}}}})", pid,
                         api::json_string("host: " + runtime.name + " " + runtime.version)));
  events.add(
      fmt::format(R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": 0, "args": {{"name": "runtime"}}}})", pid));
  const auto slice = [&](const char* name, sim::Tick start, sim::Tick length) {
    if (length == 0) return;
    events.add(fmt::format(R"({{"name": "{}", "cat": "runtime", "ph": "X", "pid": {}, "tid": 0, "ts": {}, "dur": {}}})",
                           name, pid, us(start), us(length)));
  };
  for (const ops::OpTiming& t : timeline.ops) {
    if (t.kind == ops::OpKind::host_launch) slice("layer launch", t.start, t.end - t.start);
  }
  const g5sim::RuntimeParts& p = runtime.parts;
  sim::Tick at = timeline.total;
  for (const auto& [name, length] : {std::pair{"kernel floors", p.kernel_floor_ps},
                                     {"kernel compute", p.kernel_compute_ps},
                                     {"kernel gaps", p.kernel_gap_ps},
                                     {"launch waits", p.kernel_launch_ps},
                                     {"collective latency", p.collective_ps},
                                     {"scheduler CPU", p.step_cpu_ps}}) {
    slice(name, at, length);
    at += length;
  }
}

void write_chrome_trace(std::ostream& out, const hw::Chip& chip, const ops::OpGraph& graph, const ops::Lowered& lowered,
                        const sim::Trace& trace, const ops::Timeline& timeline, const TraceFilter& filter,
                        const RuntimeReport* runtime) {
  out << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  TraceEvents events(out);
  const CommandSlots placed = place_commands(chip, graph, lowered, trace, filter);
  write_core_tracks(events, chip, placed);
  write_command_events(events, chip, graph, lowered, trace, filter, placed);
  const std::size_t ops_pid = lowered.program.cores.size();  // the ops' process follows the cores'
  write_op_tracks(events, timeline, filter, ops_pid);
  if (runtime) write_runtime_track(events, timeline, *runtime, ops_pid + 1);
  out << "\n]}\n";
}

}  // namespace api
