#pragma once
// The command model (Sophgo style), which is all the event kernel knows about work.
//
// Each core has one in-order queue per engine of the chip (hw/engine.hpp: which engines, of which
// kind, and which engines each may wait on). A command's id is its 1-based position in its queue.
// Dependencies name ids on other engines of the SAME core: a wait (e, n) holds the command until
// engine e's *completed* id (advanced in order, like the hardware's reorder buffer) has reached n.
// A command holds up to kMaxWaits waits, on distinct engines (a tensor command that needs more
// is preceded by fence commands carrying the rest: the queue is in order, so that is the same).
// Only the engines in the command's own
// engine's `waits_on` may be named (SG2262: TIU names GDMA, SDMA, CDMA and HAU ids, the DMA
// engines TIU and HAU ids, the HAU GDMA and TIU ids); GDMA never waits on GDMA: its order is its
// queue. Cross-core order uses messages, as TIU SYS send_msg / wait_msg do: send_msg adds one to
// a counter, wait_msg blocks the tensor engine's queue until the counter reaches msg_count.
// Message and fence commands take no time and run on the tensor engine only. A delay runs on the
// tensor engine only too: it holds the queue for `amount` picoseconds without doing work (the
// host launching the next program: the core idles, nothing it counts as busy).

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "hw/engine.hpp"
#include "sim/time.hpp"

namespace sim {

using hw::EngineId;
using hw::kMaxEngines;

/// fence: waits, then passes at once (it carries waits a tensor command has no room for).
/// delay: waits, then holds the tensor queue for `amount` picoseconds, idle.
enum class CommandKind : std::uint8_t { compute, transfer, send_msg, wait_msg, fence, delay };

/// Where a transfer's bytes go. The engine's `crosses` path serves ddr_to_lmem, lmem_to_ddr and
/// chip_to_chip; the chip's L2 (when it has one) adds two: ddr_to_l2 crosses the engine's path and
/// the L2 (the round trip of the farther), l2_to_lmem crosses the L2 alone (its round trip, its
/// bytes as they are: no DRAM bursts or access overhead), and lmem_to_l2 the same way back (a
/// store into a software-managed L2).
/// chip_to_node goes to a chip of another node: the engine's path with the chip's network
/// interface (`rdma`) in place of the c2c links, and its latency.
enum class Direction : std::uint8_t {
  ddr_to_lmem,
  lmem_to_ddr,
  chip_to_chip,
  ddr_to_l2,
  l2_to_lmem,
  chip_to_node,
  lmem_to_l2
};

/// Whether a transfer moves between local memory and the L2 (never touching DDR).
constexpr bool within_l2(Direction d) { return d == Direction::l2_to_lmem || d == Direction::lmem_to_l2; }

struct Command {
  static constexpr std::size_t kMaxWaits = 4;

  // Message commands carry no work and transfers no message, so each pair shares its bytes.
  union {
    std::uint64_t amount = 0;  ///< cycles (serial engines), bytes (transfer engines), picoseconds (delay)
    std::uint32_t msg_count;   ///< wait_msg: sends required before it passes
  };
  std::uint32_t op = 0;  ///< index of the op this command belongs to
  union {
    /// Transfer: bytes of each strided row (each rounds up to whole DDR bursts); 0 = contiguous.
    std::uint32_t row_bytes = 0;
    std::uint32_t msg;  ///< send_msg / wait_msg: message id (>= 1)
  };
  std::array<std::uint32_t, kMaxWaits> wait_id{};  ///< ids to see completed first, ...
  std::array<EngineId, kMaxWaits> wait_engine{};   ///< ... on these engines
  std::uint8_t wait_count = 0;
  CommandKind kind = CommandKind::compute;
  Direction direction = Direction::ddr_to_lmem;
  // 40 bytes: a command is read once per issue attempt, so its size is the kernel's memory traffic.

  /// The id this command waits for on engine e (0 = none).
  std::uint32_t wait_on(EngineId e) const {
    for (std::uint8_t i = 0; i < wait_count; ++i) {
      if (wait_engine[i] == e) return wait_id[i];
    }
    return 0;
  }
  /// Adds a wait (id 0 adds nothing; a second wait on an engine keeps the larger id). Returns
  /// false when the command has no room left.
  bool add_wait(EngineId e, std::uint32_t id) {
    if (id == 0) return true;
    for (std::uint8_t i = 0; i < wait_count; ++i) {
      if (wait_engine[i] == e) {
        wait_id[i] = std::max(wait_id[i], id);
        return true;
      }
    }
    if (wait_count == kMaxWaits) return false;
    wait_engine[wait_count] = e;
    wait_id[wait_count++] = id;
    return true;
  }
};

/// A send or a wait of a message between cores: no work, an ordering only.
inline bool is_message(const Command& c) { return c.kind == CommandKind::send_msg || c.kind == CommandKind::wait_msg; }
static_assert(sizeof(Command) == 40, "keep commands small: they dominate memory and cache traffic");

/// When one command ran. Message commands have start == end == the moment they passed.
struct CommandRecord {
  Tick start = 0;
  Tick end = 0;
};

}  // namespace sim
