#include "tools/progress_line.hpp"

#include <algorithm>
#include <iostream>

namespace tools {

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
