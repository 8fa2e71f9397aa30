#pragma once
// Checked unsigned 64-bit arithmetic for byte, FLOP, token and command counts. Every product of
// user-given sizes goes through Count, so a count that would pass 2^64 - 1 is an error instead of
// a silent wrap (a KV cache that wraps to 0 bytes "fits" any chip).
//
//   Count bytes = Count(batch) * kv_len * layers * per_token;   // throws CountOverflow
//   checked("KV cache bytes", [&] { return (Count(batch) * kv_len).value(); });  // ConfigError naming it

#include <cstdint>
#include <stdexcept>
#include <string>

#include "hw/config_error.hpp"

namespace hw {

/// ceil(a / b) of whole numbers (b > 0); a + b - 1 must not wrap (the callers' counts are bounded
/// far below 2^64 by their ranges).
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

/// Thrown by Count; checked() turns it into a ConfigError that says which quantity overflowed.
class CountOverflow : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

class Count {
 public:
  constexpr Count(std::uint64_t v) : v_(v) {}  // NOLINT: implicit on purpose, to mix with plain counts
  constexpr std::uint64_t value() const { return v_; }

  friend Count operator*(Count a, Count b) {
    std::uint64_t r = 0;
    if (__builtin_mul_overflow(a.v_, b.v_, &r)) overflow(a.v_, "x", b.v_);
    return Count(r);
  }
  friend Count operator+(Count a, Count b) {
    std::uint64_t r = 0;
    if (__builtin_add_overflow(a.v_, b.v_, &r)) overflow(a.v_, "+", b.v_);
    return Count(r);
  }
  friend Count operator/(Count a, Count b) { return Count(a.v_ / b.v_); }
  Count& operator+=(Count b) { return *this = *this + b; }
  Count& operator*=(Count b) { return *this = *this * b; }

 private:
  [[noreturn]] static void overflow(std::uint64_t a, const char* op, std::uint64_t b) {
    throw CountOverflow(std::to_string(a) + " " + op + " " + std::to_string(b) + " passes 2^64 - 1");
  }
  std::uint64_t v_;
};

/// Runs `f`, turning a CountOverflow into a ConfigError: "<what> overflows: a x b passes 2^64 - 1".
template <class F>
auto checked(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const CountOverflow& e) {
    throw ConfigError(what + " overflows: " + e.what());
  }
}

}  // namespace hw
