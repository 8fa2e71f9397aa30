#pragma once
// What the compact queues (sim/command_queue.hpp, sim/record_queue.hpp) share: variable-length
// integers (seven bits a byte, low first, the top bit set on every byte but the last; signed
// differences through zigzag, 0, -1, 1, -2, ... -> 0, 1, 2, 3, ..., so that small steps back stay
// short), the byte buffer they grow, an input iterator over a Reader, and the per-thread cache
// of decoded blocks behind their random reads.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <utility>
#include <vector>

namespace sim {

/// Writes v at out (room for 10 bytes), returning the byte after it.
inline std::uint8_t* put_varint(std::uint8_t* out, std::uint64_t v) {
  while (v >= 0x80) {
    *out++ = static_cast<std::uint8_t>(v | 0x80);
    v >>= 7;
  }
  *out++ = static_cast<std::uint8_t>(v);
  return out;
}

inline void put_varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}

/// A growing byte array written at its end a few bytes at a time: room is made first (by
/// doubling), then bytes go straight to the end, without a vector's per-byte checks. Large
/// arrays are mapped from the OS directly (sim/byte_buffer.cpp), so that a finished run's
/// queues go back to it when freed instead of staying in the C library's heap.
class ByteBuffer {
 public:
  ByteBuffer() = default;
  ByteBuffer(const ByteBuffer& o) { *this = o; }
  ByteBuffer& operator=(const ByteBuffer& o) {
    if (this != &o) {
      ByteBuffer copy;
      copy.grow_to(o.capacity_);
      if (o.size_) std::memcpy(copy.data_, o.data_, o.size_);
      copy.size_ = o.size_;
      swap(copy);
    }
    return *this;
  }
  ByteBuffer(ByteBuffer&& o) noexcept { swap(o); }
  ByteBuffer& operator=(ByteBuffer&& o) noexcept {
    if (this != &o) {
      ByteBuffer gone;
      swap(gone);
      swap(o);
    }
    return *this;
  }
  ~ByteBuffer() { release(data_, capacity_); }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  const std::uint8_t* data() const { return data_; }
  void reserve(std::size_t bytes) {
    if (bytes > capacity_) grow_to(bytes);
  }
  /// Where the next `most` bytes (or fewer) go; commit() how many were written.
  std::uint8_t* room(std::size_t most) {
    if (capacity_ - size_ < most) grow_to(std::max(capacity_ * 2, size_ + most));
    return data_ + size_;
  }
  void commit(const std::uint8_t* end) { size_ = static_cast<std::size_t>(end - data_); }
  friend bool operator==(const ByteBuffer& a, const ByteBuffer& b) {
    return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data(), b.data(), a.size_) == 0);
  }
  void swap(ByteBuffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
  }

 private:
  /// Memory for `bytes` (at least 1) and its release; large blocks are mapped pages.
  static std::uint8_t* acquire(std::size_t bytes);
  static void release(std::uint8_t* data, std::size_t bytes) noexcept;
  void grow_to(std::size_t bytes) {
    std::uint8_t* grown = acquire(bytes);
    if (size_) std::memcpy(grown, data_, size_);
    release(data_, capacity_);
    data_ = grown;
    capacity_ = bytes;
  }
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
};

/// The varint at `at`, moving `at` past it.
inline std::uint64_t read_varint(const std::uint8_t*& at) {
  if (*at < 0x80) return *at++;  // most are one byte
  std::uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    const std::uint8_t b = *at++;
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if (b < 0x80) return v;
  }
}

/// The varint at bytes[at], moving `at` past it.
inline std::uint64_t get_varint(const std::uint8_t* bytes, std::size_t& at) {
  if (bytes[at] < 0x80) return bytes[at++];  // most are one byte
  std::uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    const std::uint8_t b = bytes[at++];
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if (b < 0x80) return v;
  }
}

inline std::uint64_t zigzag64(std::int64_t d) {
  return (static_cast<std::uint64_t>(d) << 1) ^ static_cast<std::uint64_t>(d >> 63);
}
inline std::int64_t unzigzag64(std::uint64_t z) {
  return static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
}

/// Puts a sequential reader of a block-encoded queue on entry `from` (one the blocks cover): at
/// the start of its block of `block` entries (`blocks[b]`: the byte offset of entry b x block,
/// where the relative state restarts), then decoding forward to it. `decode` decodes the entry
/// at `index` from the byte at `offset` and moves `offset` past it.
template <class Decode>
void seek_in_blocks(std::size_t from, std::size_t block, const std::vector<std::uint64_t>& blocks, std::size_t& index,
                    std::size_t& offset, Decode decode) {
  offset = blocks[from / block];
  index = from / block * block;
  decode();
  while (index < from) {
    ++index;
    decode();
  }
}

/// A fresh id for a queue: random reads cache decoded blocks by (id, block), and a copy, or what
/// a move leaves behind, is another queue.
inline std::uint64_t next_queue_id() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

/// A range-for over a queue: its Reader, compared by position.
template <class Queue, class Value>
class ReaderIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Value;
  using difference_type = std::ptrdiff_t;
  using pointer = const Value*;
  using reference = const Value&;
  ReaderIterator() = default;
  ReaderIterator(const Queue& q, std::size_t from) : reader_(q, from) {}
  reference operator*() const { return *reader_; }
  pointer operator->() const { return &*reader_; }
  ReaderIterator& operator++() {
    reader_.next();
    return *this;
  }
  bool operator==(const ReaderIterator& other) const { return reader_.position() == other.reader_.position(); }
  bool operator!=(const ReaderIterator& other) const { return !(*this == other); }

 private:
  typename Queue::Reader reader_;
};

/// Entry i of a queue through a per-thread cache of decoded blocks of kBlock entries (64 of them,
/// direct-mapped by queue and block: replay's look-ups jump between a few places in many
/// queues). `count`: the entries the block holds now (a partial block is decoded again once it
/// has grown); `fill(out)` decodes the block's entries into out.
template <class Value, std::size_t kBlock, class Fill>
Value cached_entry(std::uint64_t queue, std::size_t i, std::size_t count, Fill&& fill) {
  struct Decoded {
    std::uint64_t queue = 0;
    std::size_t block = 0, count = 0;
    std::array<Value, kBlock> entries;
  };
  constexpr std::size_t kCached = 64;
  thread_local std::array<Decoded, kCached> cache{};
  const std::size_t block = i / kBlock;
  Decoded& d = cache[(queue * 0x9e3779b97f4a7c15ull + block) % kCached];
  if (d.queue != queue || d.block != block || d.count != count) {
    d.queue = queue, d.block = block, d.count = count;
    fill(d.entries);
  }
  return d.entries[i % kBlock];
}

}  // namespace sim
