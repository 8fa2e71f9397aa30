#pragma once
// How far a long run has got, for a front end's progress line: the calling thread may hold a
// reporter that the lowering tells after each op and the event kernel every kCancelPollEvents
// events (sim/cancellation.hpp: the same points). Per thread, like the cancel check; without a
// reporter nothing is counted and nothing is told.

#include <cstdint>

namespace sim {

/// `stage`: "lowering" (done and total ops) or "simulating" (done and total commands of the
/// simulated program). Called on the thread that runs the simulation; it must not throw.
using ProgressReport = void (*)(void* context, const char* stage, std::uint64_t done, std::uint64_t total);

/// Installs `report` for the calling thread for the scope's life (nested scopes restore the outer).
class ScopedProgress {
 public:
  ScopedProgress(ProgressReport report, void* context);
  ~ScopedProgress();
  ScopedProgress(const ScopedProgress&) = delete;
  ScopedProgress& operator=(const ScopedProgress&) = delete;

 private:
  ProgressReport previous_report_;
  void* previous_context_;
};

/// Whether the calling thread has a reporter (so that the caller may skip counting).
bool progress_wanted();
/// Tells the calling thread's reporter, if any.
void report_progress(const char* stage, std::uint64_t done, std::uint64_t total);

}  // namespace sim
