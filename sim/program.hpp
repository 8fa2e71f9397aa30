#pragma once
// A chip's program (per core, one queue per engine: sim/command.hpp states the command model)
// and the records of a run of it.

#include <cstdint>
#include <vector>

#include "sim/command.hpp"
#include "sim/command_queue.hpp"
#include "sim/record_queue.hpp"

namespace sim {

/// One command queue per engine of the chip, indexed by EngineId.
struct CoreProgram {
  std::vector<CommandQueue> queues;
  CommandQueue& queue(EngineId e) { return queues[e]; }
  const CommandQueue& queue(EngineId e) const { return queues[e]; }
};

/// What a producer that checked every command as it queued it (sim::check_command; the lowering
/// does, ops/lowering.cpp) tells the kernel, so that it need not read the whole program again
/// before running it: the wait_msg commands naming each message id (index = id), valid while the
/// program holds exactly `commands` commands (a program changed since is checked again).
struct ProgramCheck {
  std::vector<std::uint32_t> message_waits;
  std::uint64_t commands = 0;
};

struct Program {
  std::vector<CoreProgram> cores;
  std::uint32_t message_count = 0;  ///< message ids run 1..message_count
  ProgramCheck checked;             ///< empty unless its producer checked it

  /// An empty program: `cores` cores with `engines` queues each.
  static Program with_queues(std::size_t cores, std::size_t engines) {
    Program p;
    p.cores.resize(cores);
    for (CoreProgram& c : p.cores) c.queues.resize(engines);
    return p;
  }
  std::uint64_t command_count(EngineId e) const {
    std::uint64_t n = 0;
    for (const auto& c : cores) n += c.queue(e).size();
    return n;
  }
  std::uint64_t command_count() const {
    std::uint64_t n = 0;
    for (const auto& c : cores) {
      for (const auto& q : c.queues) n += q.size();
    }
    return n;
  }
};

/// One record per command, laid out exactly like the Program's queues: [core][engine][index].
struct Trace {
  std::vector<std::vector<RecordQueue>> cores;
  Tick end = 0;  ///< completion of the last command
  std::uint64_t events = 0;

  const RecordQueue& records(std::size_t core, EngineId e) const { return cores[core][e]; }
};

}  // namespace sim
