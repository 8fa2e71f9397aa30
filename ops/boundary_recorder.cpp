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
  boundaries_.resize(watched);
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
    b.state = state.canonical(frame, complete);
    b.comparable = bounded && complete;
    for (std::size_t q = 0; q < state.queues(); ++q) {
      b.completed.push_back(state.completed(q));
      b.head.push_back(state.head(q));
    }
  }
  reached_.clear();
}

}  // namespace ops
