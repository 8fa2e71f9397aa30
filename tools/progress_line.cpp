#include "tools/progress_line.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sys/ioctl.h>
#include <unistd.h>

namespace tools {

namespace {

std::string duration_text(double seconds) {
  const auto s = static_cast<std::uint64_t>(std::llround(std::max(seconds, 0.0)));
  if (s < 90) return fmt::format("{} s", s);
  if (s < 90 * 60) return fmt::format("{} min {} s", s / 60, s % 60);
  const std::uint64_t minutes = (s + 30) / 60;
  return fmt::format("{} h {:02} min", minutes / 60, minutes % 60);
}

}  // namespace

Pace pace_of(std::uint64_t done, std::uint64_t total, double seconds, std::string_view unit) {
  // Within its first second a rate is noise (a first request done in a millisecond is no pace).
  if (done == 0 || !(seconds >= 1) || !std::isfinite(seconds)) return {};
  const double rate = static_cast<double>(done) / seconds;
  // Two significant figures at least, no more decimals than that needs.
  Pace p;
  p.rate = fmt::format("{} {}/s", rate >= 10 ? fmt::format("{:.0f}", rate) : fmt::format("{:.2g}", rate), unit);
  if (done < total) p.left = "about " + duration_text(static_cast<double>(total - done) / rate) + " left";
  return p;
}

std::string pace(std::uint64_t done, std::uint64_t total, double seconds, std::string_view unit) {
  const Pace p = pace_of(done, total, seconds, unit);
  if (p.rate.empty()) return "";
  return ", " + p.rate + (p.left.empty() ? "" : ", " + p.left);
}

std::string ServePace::line(const g5sim::ServeProgress& p, double seconds) {
  if (p.stage != stage_) {
    stage_ = p.stage;
    stage_began_ = seconds;
    stage_simulated_ = p.simulated;
    stage_done_ = p.requests_done;  // a round's check begins with every request done
  }
  std::string stage = p.stage;
  if (p.to_simulate > 0) stage += fmt::format(", {} steps to simulate", p.to_simulate);
  const double in_stage = seconds - stage_began_;
  Pace pace;
  if (p.to_simulate > 0) {
    const std::uint64_t done = std::min(p.simulated - std::min(p.simulated, stage_simulated_), p.to_simulate);
    pace = pace_of(done, p.to_simulate, in_stage, "steps simulated");
  } else {
    const std::uint64_t before = std::min(stage_done_, p.requests_done);
    pace = pace_of(p.requests_done - before, p.requests - before, in_stage, "requests");
    if (!pace.left.empty() && p.stage.rfind("round", 0) == 0) pace.left += " in this round";
  }
  // What was asked first (how long), then the counts: a narrow terminal cuts the line's end.
  return fmt::format("serve{}: {} of {} requests done{}; {:.0f} s{}, {} steps, {} simulated",
                     stage.empty() ? "" : " (" + stage + ")", p.requests_done, p.requests,
                     pace.left.empty() ? "" : ", " + pace.left, seconds, pace.rate.empty() ? "" : ", " + pace.rate,
                     p.steps, p.simulated);
}

bool ProgressLine::due() {
  const auto now = std::chrono::steady_clock::now();
  if (now - started_ < std::chrono::seconds(1) || now - last_ < std::chrono::milliseconds(500)) return false;
  last_ = now;
  return true;
}

double ProgressLine::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

void ProgressLine::show(const std::string& line) {
  // A line wider than the terminal wraps, and '\r' then rewrites only its last row: cut it to a
  // column short of the width (the lines are ASCII).
  winsize size{};
  const std::size_t columns = ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
  const std::string shown = columns > 1 && line.size() >= columns ? line.substr(0, columns - 1) : line;
  width_ = std::max(width_, shown.size());
  if (columns > 1) width_ = std::min(width_, columns - 1);
  std::cerr << '\r' << shown << std::string(width_ - std::min(width_, shown.size()), ' ') << std::flush;
}

void ProgressLine::clear() {
  if (width_ > 0) std::cerr << '\r' << std::string(width_, ' ') << '\r' << std::flush;
  width_ = 0;
}

}  // namespace tools
