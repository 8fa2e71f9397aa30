#pragma once
// The command model (Sophgo style), which is all the event kernel knows about work.
//
// Each core has three in-order queues: TIU (compute), GDMA (core DMA) and SDMA (system DMA).
// A command's id is its 1-based position in its queue. Dependencies name ids on another engine of
// the SAME core and are satisfied when that engine's *completed* id (advanced in order, like the
// hardware's reorder buffer) has reached them:
//   TIU  waits on GDMA (wait_gdma) and, optionally, on SDMA (wait_sdma: the initial_sdma_dep);
//   GDMA waits on TIU  (wait_tiu) only: GDMA can never wait on GDMA, its order is its queue;
//   SDMA waits on TIU  (wait_tiu): a G5-style modelling choice, the hardware uses messages;
//   CDMA (chip-to-chip, used by collectives on core 0) waits on TIU likewise, and a TIU command
//        may wait on a CDMA id (wait_cdma);
//   HAU  (sort / top-k unit) runs one command at a time like the TIU, waiting on a GDMA id (its
//        input) and a TIU id; TIU and DMA commands may wait on a HAU id (wait_hau), as the
//        hardware's commands carry hau_cmd_id.
// Id 0 means "no wait". Cross-core order uses messages, as TIU SYS send_msg / wait_msg do:
// send_msg adds one to a counter, wait_msg blocks its TIU queue until the counter reaches
// msg_count. Message commands take no time.

#include <array>
#include <cstdint>
#include <vector>

#include "sim/time.hpp"

namespace sim {

enum class Engine : std::uint8_t { tiu = 0, gdma = 1, sdma = 2, cdma = 3, hau = 4 };
constexpr std::size_t kEngineCount = 5;
constexpr std::array<Engine, kEngineCount> kAllEngines{Engine::tiu, Engine::gdma, Engine::sdma, Engine::cdma,
                                                        Engine::hau};

enum class CommandKind : std::uint8_t { compute, transfer, send_msg, wait_msg };

/// A GDMA/SDMA transfer loads from DDR into local memory or stores local memory to DDR; both
/// cross the shared DDR. A CDMA transfer sends DDR data to another chip over the C2C links.
enum class Direction : std::uint8_t { ddr_to_lmem, lmem_to_ddr, chip_to_chip };

struct Command {
  std::uint64_t amount = 0;     ///< TIU / HAU cycles (compute) or bytes (transfer)
  std::uint32_t op = 0;         ///< index of the op this command belongs to
  std::uint32_t wait_gdma = 0;  ///< TIU: GDMA id to wait for
  std::uint32_t wait_sdma = 0;  ///< TIU: SDMA id to wait for
  std::uint32_t wait_cdma = 0;  ///< TIU: CDMA id to wait for
  std::uint32_t wait_hau = 0;   ///< TIU, GDMA, SDMA, CDMA: HAU id to wait for
  std::uint32_t wait_tiu = 0;   ///< GDMA / SDMA / CDMA / HAU: TIU id to wait for
  std::uint32_t msg = 0;        ///< send_msg / wait_msg: message id (>= 1)
  std::uint32_t msg_count = 0;  ///< wait_msg: sends required before it passes
  /// Transfer: bytes of each strided row (each rounds up to whole DDR bursts); 0 = contiguous.
  std::uint32_t row_bytes = 0;
  CommandKind kind = CommandKind::compute;
  Direction direction = Direction::ddr_to_lmem;
};

struct CoreProgram {
  std::array<std::vector<Command>, kEngineCount> queues;
  std::vector<Command>& queue(Engine e) { return queues[static_cast<std::size_t>(e)]; }
  const std::vector<Command>& queue(Engine e) const { return queues[static_cast<std::size_t>(e)]; }
};

struct Program {
  std::vector<CoreProgram> cores;
  std::uint32_t message_count = 0;  ///< message ids run 1..message_count

  std::uint64_t command_count(Engine e) const {
    std::uint64_t n = 0;
    for (const auto& c : cores) n += c.queue(e).size();
    return n;
  }
  std::uint64_t command_count() const {
    std::uint64_t n = 0;
    for (Engine e : kAllEngines) n += command_count(e);
    return n;
  }
};

/// When one command ran. Message commands have start == end == the moment they passed.
struct CommandRecord {
  Tick start = 0;
  Tick end = 0;
};

/// One record per command, laid out exactly like the Program's queues.
struct Trace {
  std::vector<std::array<std::vector<CommandRecord>, kEngineCount>> cores;
  Tick end = 0;  ///< completion of the last command
  std::uint64_t events = 0;

  const std::vector<CommandRecord>& records(std::size_t core, Engine e) const {
    return cores[core][static_cast<std::size_t>(e)];
  }
};

}  // namespace sim
