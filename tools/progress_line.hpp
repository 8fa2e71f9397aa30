#pragma once
// A long command's progress line on a terminal's stderr (g5sim run, g5sim serve): nothing for the
// first second (most commands end sooner), then at most twice a second, each line overwriting the
// last ('\r', padded to the longest so far); cleared when the command ends, or throws, so that
// its output or error starts on a clean line. The caller shows it only when stderr is a terminal.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "g5sim/serve.hpp"

namespace tools {

/// The pace of a long command for its progress line: its rate R = done / seconds ("10 requests/s")
/// and the rest at that pace, T = (total - done) / R ("about 88 s left": an estimate, not a
/// promise; empty when all are done); both empty before the first is done or within the first
/// second. T reads "41 s", "3 min 20 s" or "2 h 05 min" (rounded to the second, then to the minute).
struct Pace {
  std::string rate, left;
};
Pace pace_of(std::uint64_t done, std::uint64_t total, double seconds, std::string_view unit);
/// The same as a line's tail: ", R UNIT/s, about T left", ", R UNIT/s" or "".
std::string pace(std::uint64_t done, std::uint64_t total, double seconds, std::string_view unit);

/// g5sim serve's progress line, from its reports (g5sim::ServeProgress), each pass's pace its own:
///   serve: 40 of 100 requests done, about 6 s left; 14 s, 2.9 requests/s, 1003 steps, 352 simulated
/// Under step_cache auto the pass leads ("(round 2 of at most 4, 25 % grid)") and its requests'
/// pace is "left in this round". Its exact pass after rounds knows about how many steps it has to
/// simulate: its pace is theirs ("25 steps simulated/s"), the one that sets its time (the engine's
/// own work is milliseconds a thousand steps; a simulated step, tens of milliseconds).
class ServePace {
 public:
  /// The line for `p`, told `seconds` after the start; every report is given (a new pass starts
  /// its pace), whether or not its line is shown.
  std::string line(const g5sim::ServeProgress& p, double seconds);

 private:
  std::string stage_;  // a serve's one pass began with the line
  double stage_began_ = 0;
  std::uint64_t stage_simulated_ = 0;  // simulated before the pass began
  std::uint64_t stage_done_ = 0;       // requests done when it began
};

class ProgressLine {
 public:
  ProgressLine() = default;
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { clear(); }

  /// Whether a line is due now: a second since the start and half a second since the last line.
  /// When it is, the next one is due half a second later.
  bool due();
  /// Seconds since the start.
  double seconds() const;
  /// Writes `line` over the last one.
  void show(const std::string& line);
  /// Blanks the line (nothing when none was shown).
  void clear();

 private:
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now(), last_{};
  std::size_t width_ = 0;
};

}  // namespace tools
