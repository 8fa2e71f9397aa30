#pragma once
// Simulated time. Integer picoseconds everywhere inside the simulator: no floating point in an
// event key, so two runs order events identically. Conversions from rates round durations UP, so
// a transfer or instruction never takes zero time by rounding and progress never stalls.

#include <cmath>
#include <cstdint>

#include "sim/precision.hpp"

namespace sim {

using Tick = std::uint64_t;  ///< picoseconds

constexpr Tick kPicosPerNano = 1000;

/// Duration of `cycles` at `clock_mhz`, rounded up to a whole picosecond.
inline Tick cycles_to_ticks(std::uint64_t cycles, double clock_mhz) {
  const long double ps = static_cast<long double>(cycles) * 1e6L / static_cast<long double>(clock_mhz);
  return static_cast<Tick>(std::ceil(ps - kRoundingSlackPs));
}

/// A non-negative duration in nanoseconds (config value), rounded up to a whole picosecond.
inline Tick nanos_to_ticks(double ns) {
  return static_cast<Tick>(std::ceil(static_cast<long double>(ns) * kPicosPerNano - kRoundingSlackPs));
}

/// 1 GB/s = 1e9 B/s = 1e-3 B/ps.
inline double gb_per_s_to_bytes_per_tick(double gb_per_s) { return gb_per_s * 1e-3; }

}  // namespace sim
