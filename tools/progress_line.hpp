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

namespace tools {

/// The pace of a long command for its progress line: ", R UNIT/s, about T left", where R = done /
/// seconds and T = (total - done) / R (the rest at the pace so far: an estimate, not a promise);
/// ", R UNIT/s" when all are done; "" before the first is done or the first instant has passed.
/// T reads "41 s", "3 min 20 s" or "2 h 05 min" (rounded to the second, then to the minute).
std::string pace(std::uint64_t done, std::uint64_t total, double seconds, std::string_view unit);

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
