#pragma once
// Independent work items on a few threads, with results that do not depend on the thread count:
// each item writes only its own slot, and an error is reported as the lowest-numbered failing
// item's, whatever the timing.

#include <cstddef>
#include <functional>

namespace api {

/// Runs `work(i)` for i in [0, n) on up to `jobs` threads (1: in order on this thread, stopping at
/// the first item that throws). On several threads every item runs, then the exception of the
/// lowest failing i is rethrown: the same error as on one thread.
void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& work);

/// The machine's hardware threads (at least 1): the default of every --jobs.
unsigned default_jobs();

}  // namespace api
