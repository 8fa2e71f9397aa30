#pragma once
// The tolerances of the simulator's floating-point steps, named once. Time itself is integer
// picoseconds (sim/time.hpp); floating point enters where rates meet bytes (max-min sharing, a
// transfer's remaining bytes, the next completion) and where a work split compares estimates.
// Each slack forgives representation error only: it is orders of magnitude below one byte or one
// picosecond at the sizes the run limits allow (models/run_limits.hpp), so it never changes which
// of two really different values wins.

namespace sim {

/// A product of config numbers that should land on a whole picosecond may land a hair above it
/// (1e6 / 3 x 3): within this slack it is not rounded up a whole picosecond more.
constexpr long double kRoundingSlackPs = 1e-9L;

/// Max-min sharing: a constraint loaded to within this fraction over its capacity is at capacity
/// (the sum of equal shares c / n, n times, may exceed c by an ulp or so).
constexpr double kCapacitySlack = 1e-12;

/// A transfer is finished when the bytes left are at most this fraction of its bytes plus
/// kFinishedBytes: what remains after advancing by a rounded-up completion time.
constexpr double kFinishedFraction = 1e-9;
constexpr double kFinishedBytes = 1e-6;

/// The next completion, bytes / rate ticks, is rounded up after shrinking by this fraction and
/// these ticks, so a quotient that should be whole does not gain a picosecond.
constexpr double kCompletionFraction = 1e-12;
constexpr double kCompletionTicks = 1e-9;

/// Two estimated durations within this fraction of each other are the same time (work splits
/// then prefer fewer bytes).
constexpr double kSameTimeFraction = 1e-9;

}  // namespace sim
