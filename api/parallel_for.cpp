#include "api/parallel_for.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace api {

void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& work) {
  if (jobs <= 1 || n <= 1) {
    for (std::size_t i = 0; i < n; ++i) work(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> failures(n);
  auto worker = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        work(i);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  const unsigned count = static_cast<unsigned>(std::min<std::size_t>(jobs, n));
  threads.reserve(count);
  for (unsigned t = 0; t < count; ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

unsigned default_jobs() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace api
