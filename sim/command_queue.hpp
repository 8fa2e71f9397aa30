#pragma once
// One engine's command queue, stored compactly: a long prefill holds tens of millions of
// commands, and at 40 bytes each they, not the simulation, are what a run's memory is.
//
// Encoding. Commands are appended once and read in order (the kernel issues heads; every later
// pass walks a queue front to back), so each is stored relative to the one before it:
//   header   kind (3 bits) | wait count (3 bits) | amount differs (1) | a second byte follows (1)
//   second   direction (3 bits) | op differs (1) | row_bytes / msg nonzero (1), only when one of
//            them is not zero (a tensor command of the same op as the one before: no second byte)
//   op       zigzag varint of op - previous op                 (only when it differs)
//   amount   varint                                            (only when it differs)
//   row      varint of row_bytes (the msg of a message command) (only when nonzero)
//   waits    per wait, one varint: the zigzag of the id minus the previous id this queue waited
//            on at that engine, shifted left by 3, and the engine in the low 3 bits
// Every kBlock commands the state (previous op, amount, ids) starts again from zero and the
// byte offset is noted, so command i is found by decoding at most kBlock - 1 others.
// Decoding is exact: every field round-trips, whatever its value.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <utility>
#include <vector>

#include "sim/command.hpp"
#include "sim/compact_storage.hpp"

namespace sim {

class CommandQueue {
 public:
  static constexpr std::size_t kBlock = 64;

  CommandQueue() : id_(next_queue_id()) {}
  CommandQueue(std::initializer_list<Command> commands) : CommandQueue() {
    for (const Command& c : commands) push_back(c);
  }
  // A copy is another queue (random reads cache decoded blocks by queue id); so is what a move
  // leaves behind.
  CommandQueue(const CommandQueue& other) : CommandQueue() { copy_from(other); }
  CommandQueue& operator=(const CommandQueue& other) {
    if (this != &other) copy_from(other), id_ = next_queue_id();
    return *this;
  }
  CommandQueue(CommandQueue&& other) noexcept : CommandQueue() { swap(other); }
  CommandQueue& operator=(CommandQueue&& other) noexcept {
    if (this != &other) {
      CommandQueue fresh;
      swap(fresh);
      swap(other);
    }
    return *this;
  }
  ~CommandQueue() = default;

  void push_back(const Command& cmd);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Room for about `commands` more without regrowing: 8 bytes each, more than most take (pages
  /// never written are never resident).
  void reserve(std::size_t commands) {
    bytes_.reserve(bytes_.size() + commands * 8);
    blocks_.reserve(blocks_.size() + commands / kBlock + 1);
  }
  /// Command i. Random reads decode the block of kBlock commands around i into a small
  /// per-thread cache, so reads near each other (forwards, backwards, or two positions apart
  /// in step) cost about one decode each; a walk over the queue is cheaper with a Reader or a
  /// range-for.
  Command operator[](std::size_t i) const;
  Command back() const { return (*this)[size_ - 1]; }
  /// Bytes of the encoding in use (memory_bytes() is what is held, room included).
  std::size_t encoded_bytes() const { return bytes_.size(); }
  /// Bytes held (the encoding and its block offsets).
  std::size_t memory_bytes() const { return bytes_.capacity() + blocks_.capacity() * sizeof(std::uint64_t); }

  /// Reads the queue in order from command `from`.
  class Reader {
   public:
    Reader() = default;
    Reader(const CommandQueue& queue, std::size_t from);
    /// The command at position(); position() < size of the queue.
    const Command& operator*() const { return current_; }
    const Command* operator->() const { return &current_; }
    std::size_t position() const { return index_; }
    const CommandQueue* queue() const { return queue_; }
    bool done() const { return index_ >= queue_->size_; }
    /// Moves to the next command (if any).
    void next() {
      if (++index_ < queue_->size_) {
        decode();
        // The kernel reads hundreds of queues in turn: fetch the next command's bytes ahead.
        __builtin_prefetch(queue_->bytes_.data() + offset_);
      }
    }

   private:
    void decode();
    const CommandQueue* queue_ = nullptr;
    std::size_t index_ = 0;
    std::size_t offset_ = 0;  ///< byte of the command after current_
    Command current_{};
    std::uint32_t op_ = 0;
    std::uint64_t amount_ = 0;
    std::array<std::uint32_t, kMaxEngines> ids_{};
  };

  using const_iterator = ReaderIterator<CommandQueue, Command>;
  const_iterator begin() const { return const_iterator(*this, 0); }
  const_iterator end() const { return const_iterator(*this, size_); }

  friend bool operator==(const CommandQueue& a, const CommandQueue& b) {
    return a.size_ == b.size_ && a.bytes_ == b.bytes_;
  }

 private:
  void copy_from(const CommandQueue& other) {
    bytes_ = other.bytes_, blocks_ = other.blocks_, size_ = other.size_;
    op_ = other.op_, amount_ = other.amount_, ids_ = other.ids_;
  }
  void swap(CommandQueue& other) noexcept {
    std::swap(id_, other.id_);
    bytes_.swap(other.bytes_);
    blocks_.swap(other.blocks_);
    std::swap(size_, other.size_), std::swap(op_, other.op_), std::swap(amount_, other.amount_);
    std::swap(ids_, other.ids_);
  }

  std::uint64_t id_;
  ByteBuffer bytes_;
  std::vector<std::uint64_t> blocks_;  ///< byte offset of commands 0, kBlock, 2 kBlock, ...
  std::size_t size_ = 0;
  // The encoder's state: what the next command is stored relative to.
  std::uint32_t op_ = 0;
  std::uint64_t amount_ = 0;
  std::array<std::uint32_t, kMaxEngines> ids_{};
};

}  // namespace sim
