#include "ops/boundary_recorder.hpp"

#include <stdexcept>

namespace ops {

BoundaryRecorder::BoundaryRecorder(const BoundaryWatch& watch, std::size_t queues) : watch_(watch) {
  const std::size_t watched = watch.starts.size();
  for (const auto& starts : watch.starts) {
    if (starts.size() != queues) throw std::logic_error("boundary watch: one start per queue expected");
  }
  if (watch.message_base.size() != watched || watch.message_lo.size() != watched ||
      watch.message_hi.size() != watched || watch.follows.size() != watched ||
      watch.message_previous.size() != watched) {
    throw std::logic_error("boundary watch: one message base, window and follows flag per watched layer expected");
  }
  for (std::size_t w = 1; w < watched; ++w) {
    for (std::size_t q = 0; q < queues; ++q) {
      if (watch.starts[w][q] < watch.starts[w - 1][q]) {
        throw std::logic_error("boundary watch: watched layers must start in order on every queue");
      }
    }
  }
  if (!watch.previous.empty() && watch.previous.size() != watched) {
    throw std::logic_error("boundary watch: one previous unit per watched layer expected");
  }
  boundaries_.resize(watched);
  last_of_run_.assign(watched, 1);
  for (std::size_t w = 0; w < watched; ++w) {
    if (watch.follows[w] == 0) continue;
    if (w == 0 || watch.previous_of(w) >= w)
      throw std::logic_error("boundary watch: a unit follows one watched after it");
    last_of_run_[watch.previous_of(w)] = 0;
  }
}

std::uint32_t BoundaryRecorder::watched_from(std::size_t queue) const {
  return next_ < watch_.starts.size() ? watch_.starts[next_][queue] : kNotWatched;
}

void BoundaryRecorder::issued(std::size_t queue, std::uint32_t index, sim::Tick now) {
  // Issuing at or past a watched start reaches that layer (and any later one starting there).
  while (next_ < watch_.starts.size() && index >= watch_.starts[next_][queue]) {
    boundaries_[next_].seen = true;
    boundaries_[next_].time = now;
    reached_.push_back(next_++);
  }
}

void BoundaryRecorder::settled(const sim::KernelState& state) {
  for (std::uint32_t w : reached_) {
    Boundary& b = boundaries_[w];
    sim::StateFrame frame;
    frame.starts = &watch_.starts[w];
    frame.message_base = watch_.message_base[w];
    const bool bounded = watch_.follows[w] != 0;
    if (bounded) {
      const std::int64_t base = watch_.message_base[w], previous = watch_.message_previous[w];
      frame.message_lo = previous + watch_.message_lo[w];
      frame.message_hi = base + watch_.message_hi[w] + (base - previous);
    }
    bool complete = false;
    std::vector<std::uint64_t> canonical = state.canonical(frame, complete);
    b.comparable = bounded && complete;
    // The units before it in its run, nearest first: compare, then forget what no later unit of
    // the run reaches back to (all of them when this is the run's last).
    std::size_t back[kMostBoundariesBack];
    std::size_t depth = 0;
    for (std::size_t x = w; depth < kMostBoundariesBack && watch_.follows[x] != 0; ++depth) {
      x = watch_.previous_of(x);
      back[depth] = x;
    }
    if (b.comparable) {
      for (std::size_t d = 0; d < depth; ++d) {
        const auto found = recent_.find(back[d]);
        if (found != recent_.end() && found->second == canonical) {
          b.same_as_back = static_cast<std::uint8_t>(b.same_as_back | (1u << d));
        }
      }
    }
    if (depth == kMostBoundariesBack) recent_.erase(back[depth - 1]);
    if (last_of_run_[w] != 0) {
      for (std::size_t d = 0; d < depth; ++d) recent_.erase(back[d]);
    } else if (b.comparable) {
      recent_[w] = std::move(canonical);
    }
    for (std::size_t q = 0; q < state.queues(); ++q) {
      b.completed.push_back(state.completed(q));
      b.head.push_back(state.head(q));
    }
  }
  reached_.clear();
}

}  // namespace ops
