#pragma once
// The discrete-event kernel: runs a Program of per-core, per-engine command queues on a chip and
// records when every command started and ended.
//
// The engines, their kinds, their dependency rule and the resources their transfers cross are
// the chip's data (hw/engine.hpp states the model); this kernel has no code per engine name:
//   serial engines (tensor, sort) run one instruction at a time, in queue order;
//   transfer engines (dma, collective) issue in queue order, up to `outstanding` in flight per
//     engine per core, and serve them in order: a transfer waits its engine's start-up plus its
//     round trip (overlapping the transfers ahead of it, which is what several in flight buy),
//     then, once every earlier transfer of its engine has moved its bytes, moves its own at a rate
//     recomputed whenever the set of moving transfers changes: max-min fair sharing
//     (sim/max_min_sharing.hpp) over its path, one moving transfer per engine per core. So the
//     head descriptor gets the engine's whole channel and the next tile's load never slows the
//     tile needed now. Completion ids advance in order.
// Each core issues its serial engines first (a message passed on the tensor engine can release
// waits of the others at the same tick), then its transfer engines, each group in declaration
// order. Time is integer picoseconds; events at equal time run in
// (priority, type, key) order, the key naming what the event is about (sim/event_queue.hpp).
// A program that breaks the chip's rule (a wait on an engine not in `waits_on`, a command of the
// wrong kind) raises std::logic_error at construction; one that can never finish (a wait on an
// id that is never completed) raises std::logic_error naming the stuck queue heads.

#include "hw/chip.hpp"
#include "sim/kernel_observer.hpp"
#include "sim/program.hpp"

namespace sim {

/// The kernel's rules for one command of a program: a serial engine runs instructions (and, on
/// the tensor engine, messages, fences and delays), a transfer engine transfers; a message names
/// an id in 1..message_count; a command waits only on engines its engine may wait on
/// (hw::EngineSpec::waits_on). The rule `cmd` breaks on `engine`, the first in that order (and
/// for `wait`, which of its waits), or none.
enum class CommandFault : std::uint8_t { none, kind, message, wait };
inline CommandFault command_fault(const hw::Chip& chip, EngineId engine, const Command& cmd,
                                  std::uint32_t message_count, std::uint8_t& wait) {
  const hw::EngineSpec& spec = chip.engines[engine];
  const bool message = cmd.kind == CommandKind::send_msg || cmd.kind == CommandKind::wait_msg;
  const bool tensor_only = message || cmd.kind == CommandKind::fence || cmd.kind == CommandKind::delay;
  const bool kind_ok = spec.serial()
                           ? cmd.kind == CommandKind::compute || (tensor_only && engine == chip.tensor_engine())
                           : cmd.kind == CommandKind::transfer;
  if (!kind_ok) return CommandFault::kind;
  if (message && (cmd.msg == 0 || cmd.msg > message_count)) return CommandFault::message;
  for (wait = 0; wait < cmd.wait_count; ++wait) {
    if (cmd.wait_engine[wait] >= chip.engines.size() || !spec.may_wait_on(cmd.wait_engine[wait])) {
      return CommandFault::wait;
    }
  }
  return CommandFault::none;
}
/// The std::logic_error naming the rule a command of `core` breaks (command_fault).
[[noreturn]] void refuse_command(const hw::Chip& chip, std::size_t core, EngineId engine, const Command& cmd,
                                 CommandFault fault, std::uint8_t wait);
/// Throws (refuse_command) when `cmd` breaks a rule; inline, since the lowering checks every
/// command it queues.
inline void check_command(const hw::Chip& chip, std::size_t core, EngineId engine, const Command& cmd,
                          std::uint32_t message_count) {
  std::uint8_t wait = 0;
  const CommandFault fault = command_fault(chip, engine, cmd, message_count, wait);
  if (fault != CommandFault::none) refuse_command(chip, core, engine, cmd, fault, wait);
}

class Simulator {
 public:
  explicit Simulator(const hw::Chip& chip);
  /// `observer`: told of the issues it watches and shown the state once their time settles
  /// (sim/kernel_observer.hpp); nullptr: none.
  Trace run(const Program& program, KernelObserver* observer = nullptr) const;

 private:
  const hw::Chip& chip_;
};

}  // namespace sim
