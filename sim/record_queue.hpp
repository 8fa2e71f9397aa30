#pragma once
// The records of one engine's queue (when each command started and ended), stored compactly
// like the commands (sim/command_queue.hpp), in the same order.
//
// The kernel writes a record in two steps: its start when the command issues (in queue order)
// and its end when it finishes, which for a transfer engine with several descriptors in flight
// may come out of order. Records between the first unfinished and the last started wait in a
// small window; once the window's front is finished it is encoded as one varint
//   (zigzag(start - the previous record's end) << 4) | code
// where code 0..7 names the duration (end - start) by its place among the last 8 distinct
// durations (most recent first: a tensor engine's loop repeats a few instruction lengths, and
// messages take 0), 8 says a varint of the duration follows, and 9 (the varint's value is 9)
// says the start's zigzag and the duration follow as varints of their own (a gap too large to
// shift). Back-to-back repeated work costs one byte. Every kBlock records the previous end and
// the recent durations start again from zero and the byte offset is noted: record i is found by
// decoding at most kBlock - 1 others.

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/command.hpp"
#include "sim/compact_storage.hpp"

namespace sim {

/// The last few distinct durations a queue's records took, most recent first (record_queue.cpp).
struct RecentDurations {
  static constexpr unsigned kSize = 8;
  std::array<Tick, kSize> d{};
  unsigned find(Tick x) const {
    for (unsigned i = 0; i < kSize; ++i) {
      if (d[i] == x) return i;
    }
    return kSize;
  }
  /// x (at place i, or new when i == kSize) moves to the front.
  void use(unsigned i, Tick x) {
    for (unsigned k = i < kSize ? i : kSize - 1; k > 0; --k) d[k] = d[k - 1];
    d[0] = x;
  }
};

class RecordQueue {
 public:
  static constexpr std::size_t kBlock = 64;

  RecordQueue() : id_(next_queue_id()) {}
  RecordQueue(const RecordQueue& other) : RecordQueue() { copy_from(other); }
  RecordQueue& operator=(const RecordQueue& other) {
    if (this != &other) copy_from(other), id_ = next_queue_id();
    return *this;
  }
  RecordQueue(RecordQueue&& other) noexcept : RecordQueue() { swap(other); }
  RecordQueue& operator=(RecordQueue&& other) noexcept {
    if (this != &other) {
      RecordQueue fresh;
      swap(fresh);
      swap(other);
    }
    return *this;
  }
  ~RecordQueue() = default;

  /// Room for `records` without regrowing: 12 bytes each, more than most take (pages never
  /// written are never resident, and regrowing would copy and double).
  void reserve(std::size_t records) {
    bytes_.reserve(records * 12);
    blocks_.reserve(records / kBlock + 1);
  }
  /// Records written, finished or not (the next start() is of this index).
  std::size_t size() const { return started_; }
  bool empty() const { return started_ == 0; }
  /// Command `index` (== size()) issued at `t`.
  void start(std::size_t index, Tick t);
  /// Command `index` (already started, not yet finished) finished at `t`.
  void finish(std::size_t index, Tick t);
  /// Started and finished at once (a message or a fence).
  void instant(std::size_t index, Tick t) {
    start(index, t);
    finish(index, t);
  }
  /// A whole record at the end (for building traces by hand, as tests and replay do).
  void push_back(const CommandRecord& r) {
    start(started_, r.start);
    finish(started_ - 1, r.end);
  }

  /// Record i; an unfinished one has end 0. Random reads decode the block around i into a small
  /// per-thread cache (as CommandQueue's do); a walk is cheaper with a Reader or a range-for.
  CommandRecord operator[](std::size_t i) const;
  /// Bytes of the encoding in use (memory_bytes() is what is held, room included).
  std::size_t encoded_bytes() const { return bytes_.size(); }
  std::size_t memory_bytes() const {
    return bytes_.capacity() + blocks_.capacity() * sizeof(std::uint64_t) + window_.capacity() * sizeof(Pending);
  }

  /// Reads the records in order from record `from`.
  class Reader {
   public:
    Reader() = default;
    Reader(const RecordQueue& queue, std::size_t from);
    const CommandRecord& operator*() const { return current_; }
    const CommandRecord* operator->() const { return &current_; }
    std::size_t position() const { return index_; }
    bool done() const { return index_ >= queue_->started_; }
    void next() {
      if (++index_ < queue_->started_) decode();
    }

   private:
    void decode();
    const RecordQueue* queue_ = nullptr;
    std::size_t index_ = 0;
    std::size_t offset_ = 0;
    Tick end_ = 0;
    RecentDurations recent_;
    CommandRecord current_{};
  };

  using const_iterator = ReaderIterator<RecordQueue, CommandRecord>;
  const_iterator begin() const { return const_iterator(*this, 0); }
  const_iterator end() const { return const_iterator(*this, started_); }

 private:
  struct Pending {
    Tick start = 0, end = 0;
    bool finished = false;
  };
  void encode(const CommandRecord& r);
  void copy_from(const RecordQueue& o) {
    bytes_ = o.bytes_, blocks_ = o.blocks_, encoded_ = o.encoded_, started_ = o.started_, end_ = o.end_;
    recent_ = o.recent_;
    window_ = o.window_, head_ = o.head_;
  }
  void swap(RecordQueue& o) noexcept {
    std::swap(id_, o.id_);
    bytes_.swap(o.bytes_);
    blocks_.swap(o.blocks_), window_.swap(o.window_);
    std::swap(encoded_, o.encoded_), std::swap(started_, o.started_), std::swap(end_, o.end_);
    std::swap(recent_, o.recent_);
    std::swap(head_, o.head_);
  }

  std::uint64_t id_;

  ByteBuffer bytes_;
  std::vector<std::uint64_t> blocks_;
  std::size_t encoded_ = 0;  ///< records [0, encoded_) are in bytes_
  std::size_t started_ = 0;  ///< records [encoded_, started_) are in the window
  Tick end_ = 0;             ///< the encoder's previous end
  RecentDurations recent_;   ///< and its recent durations
  // The window as a ring: record encoded_ + k is window_[(head_ + k) & (capacity - 1)].
  std::vector<Pending> window_;
  std::size_t head_ = 0;
};

}  // namespace sim
