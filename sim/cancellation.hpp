#pragma once
// Stopping a run from outside it (a Python host's Ctrl-C): the calling thread may hold a check
// that the event kernel asks every kCancelPollEvents events (a few milliseconds of simulation);
// when the check says stop, the run throws Cancelled and leaves nothing behind. The check is
// per thread, so concurrent runs on other threads are not touched; without one nothing is asked.

#include <cstdint>
#include <stdexcept>

namespace sim {

class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("the run was cancelled") {}
};

/// Returns true to stop the run. Called on the thread that runs the simulation.
using CancelCheck = bool (*)(void* context);

constexpr std::uint64_t kCancelPollEvents = std::uint64_t{1} << 16;

/// Installs `check` for the calling thread for the scope's life (nested scopes restore the outer).
class ScopedCancelCheck {
 public:
  ScopedCancelCheck(CancelCheck check, void* context);
  ~ScopedCancelCheck();
  ScopedCancelCheck(const ScopedCancelCheck&) = delete;
  ScopedCancelCheck& operator=(const ScopedCancelCheck&) = delete;

 private:
  CancelCheck previous_check_;
  void* previous_context_;
};

/// Throws Cancelled when the calling thread's check says stop.
void poll_cancel();

}  // namespace sim
