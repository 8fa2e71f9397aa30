#include "tools/progress_line.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>

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

std::string pace(std::uint64_t done, std::uint64_t total, double seconds, std::string_view unit) {
  // Within its first second a rate is noise (a first request done in a millisecond is no pace).
  if (done == 0 || !(seconds >= 1) || !std::isfinite(seconds)) return "";
  const double rate = static_cast<double>(done) / seconds;
  // Two significant figures at least, no more decimals than that needs.
  const std::string rate_text = rate >= 10 ? fmt::format("{:.0f}", rate) : fmt::format("{:.2g}", rate);
  std::string text = fmt::format(", {} {}/s", rate_text, unit);
  if (done < total) text += ", about " + duration_text(static_cast<double>(total - done) / rate) + " left";
  return text;
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
  width_ = std::max(width_, line.size());
  std::cerr << '\r' << line << std::string(width_ - line.size(), ' ') << std::flush;
}

void ProgressLine::clear() {
  if (width_ > 0) std::cerr << '\r' << std::string(width_, ' ') << '\r' << std::flush;
  width_ = 0;
}

}  // namespace tools
