#pragma once
// The part of a runtime's front end that one process does one job at a time (g5sim/runtime.hpp
// states the model): each request's input (chat template, tokenisation) and each step's new tokens
// of a request (detokenisation, streaming). Jobs are done in the order they reach it, (time, then
// the order they were handed in: ns-3's FIFO tie-break), each from max(its time, the previous
// job's end) for its cost.
//
// The engine hands a job in when it knows it and takes the earliest one only once no earlier job
// can still come: while that job's time is not after the next step's start (every step not yet
// taken ends after it starts, so its tokens come later; a closed-loop client's next request comes
// when its last token leaves, later still).

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace serving {

class SerialFrontEnd {
 public:
  /// input: a request's preprocessing; handoff: its passing to the scheduler once the inputs
  /// queued before it are done (an event loop's continuation: no cost); tokens: a step's tokens.
  enum class Kind : std::uint8_t { input, handoff, tokens };
  struct Job {
    Kind kind = Kind::input;
    std::size_t request = 0;
    std::uint64_t at_ps = 0;           ///< when it reaches the process
    std::uint64_t cost_ps = 0;         ///< the process's time on it
    bool first = false, last = false;  ///< tokens: they hold the request's first token, its last
    std::uint64_t sent_ps = 0;         ///< input, handoff: when the client sent the request
  };

  void hand_in(const Job& job) { jobs_.emplace(std::pair{job.at_ps, sequence_++}, job); }
  /// When the earliest job reaches the process; nothing when none is waiting.
  std::optional<std::uint64_t> next_at() const {
    if (jobs_.empty()) return std::nullopt;
    return jobs_.begin()->first.first;
  }
  /// Does the earliest job: it and when it leaves the process. Throws when none is waiting.
  std::pair<Job, std::uint64_t> take();

 private:
  std::multimap<std::pair<std::uint64_t, std::uint64_t>, Job> jobs_;  // (time, sequence) -> job
  std::uint64_t sequence_ = 0;
  std::uint64_t free_ps_ = 0;  // when the process is done with the jobs taken so far
};

}  // namespace serving
