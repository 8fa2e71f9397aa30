#include <new>

#include "sim/compact_storage.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace sim {
namespace {
// From here on a buffer is its own pages: the C library would keep a freed block this size in
// its heap (its threshold for mapping rises to the largest block freed), and a tool running
// many large simulations would then hold the sum of their peaks.
constexpr std::size_t kMapped = std::size_t{1} << 18;
}  // namespace

std::uint8_t* ByteBuffer::acquire(std::size_t bytes) {
#if defined(__linux__)
  if (bytes >= kMapped) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<std::uint8_t*>(p);
  }
#endif
  return new std::uint8_t[bytes];
}

void ByteBuffer::release(std::uint8_t* data, std::size_t bytes) noexcept {
  if (data == nullptr) return;
#if defined(__linux__)
  if (bytes >= kMapped) {
    munmap(data, bytes);
    return;
  }
#endif
  delete[] data;
}

}  // namespace sim
