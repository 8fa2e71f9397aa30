#pragma once
// What the kernel reports at the boundaries of watched layers, for exact layer replay
// (ops/layer_replay.hpp states the argument).
//
// A layer of a program is a run of consecutive commands on every queue (queue q = core x engines
// + engine). Watched layer w starts on queue q at index starts[w][q] (0-based; a layer with no
// command on q starts where the next one does). Its boundary B_w is the instant after every event
// at the time t_w of the first issue of any command at or past its start on any queue, before the
// next time is processed. At B_w the kernel records its state relative to the layer: queue
// indices minus starts[w][q], message ids minus message_base[w], times minus t_w, flows named by
// (core, engine, relative command), pending events in their (time, priority, seq) order, every
// double bit for bit. Two boundaries whose relative states are equal are followed by the same
// evolution, shifted, for as long as the commands they meet are shifted copies.
//
// Messages are in the state while they are live: sent at least once with a wait still to pass,
// or with a core blocked on them. A boundary where a live message falls outside the window
// [message_base[w-1] + message_lo[w], message_base[w] + message_hi[w] + (message_base[w] -
// message_base[w-1])] is marked not comparable; so is a watched layer that does not follow the
// one before it (the first, and the first of each further run of layers), which has no w-1.
// Watched layers are reached in order: starts[w][q] must not decrease with w on any queue.

#include <cstdint>
#include <vector>

#include "sim/time.hpp"

namespace sim {

struct BoundaryWatch {
  std::vector<std::vector<std::uint32_t>> starts;  ///< [watched layer][queue]
  std::vector<std::uint32_t> message_base;         ///< [watched layer]
  std::vector<std::int64_t> message_lo;  ///< [watched layer]: lowest message id its commands name, relative to its base
  std::vector<std::int64_t> message_hi;  ///< [watched layer]: highest, relative to its base
  std::vector<std::uint8_t> follows;     ///< [watched layer]: 1 when it follows layer w - 1 of the same run
};

struct Boundary {
  bool seen = false;                     ///< the layer was reached
  bool comparable = false;               ///< the state below is complete (see above)
  Tick time = 0;                         ///< t_w
  std::vector<std::uint64_t> state;      ///< relative state, canonical
  std::vector<std::uint32_t> completed;  ///< per queue: commands completed in order (absolute)
  std::vector<std::uint32_t> head;       ///< per queue: next command to issue (absolute)
};

}  // namespace sim
