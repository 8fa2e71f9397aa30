#include "tools/context_list.hpp"

#include <fmt/format.h>

#include <charconv>

#include "tools/cli_error.hpp"

namespace tools {
namespace {

std::uint64_t parse_positive(std::string_view s, const std::string& whole) {
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && ptr == s.data() + s.size() && v > kMaxContext)) {
    throw CliError(fmt::format("--ctx: {} in '{}' is outside 1..{}", s, whole, kMaxContext));
  }
  if (ec != std::errc() || ptr != s.data() + s.size() || v == 0) {
    throw CliError(fmt::format("--ctx: '{}' in '{}' is not a positive integer", s, whole));
  }
  return v;
}

void check_length(const std::vector<std::uint64_t>& out, const std::string& whole) {
  if (out.size() > kMaxContexts) {
    throw CliError(fmt::format("--ctx: '{}' lists more than {} contexts", whole, kMaxContexts));
  }
}

}  // namespace

std::vector<std::uint64_t> parse_context_list(const std::string& text) {
  std::vector<std::uint64_t> out;
  if (text.find(':') != std::string::npos) {
    const auto a = text.find(':');
    const auto b = text.find(':', a + 1);
    if (b == std::string::npos || b + 1 >= text.size() || text[b + 1] != 'x') {
      throw CliError(fmt::format("--ctx: '{}' is not START:STOP:xFACTOR", text));
    }
    const std::uint64_t start = parse_positive(std::string_view(text).substr(0, a), text);
    const std::uint64_t stop = parse_positive(std::string_view(text).substr(a + 1, b - a - 1), text);
    const std::uint64_t factor = parse_positive(std::string_view(text).substr(b + 2), text);
    if (factor < 2) throw CliError(fmt::format("--ctx: factor in '{}' must be at least 2", text));
    if (stop < start) throw CliError(fmt::format("--ctx: STOP < START in '{}'", text));
    // v <= stop <= kMaxContext, and the multiplication is only taken while it cannot pass stop.
    for (std::uint64_t v = start;; v *= factor) {
      out.push_back(v);
      if (v > stop / factor) break;
    }
    return out;
  }
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = text.find(',', pos);
    const std::size_t end = comma == std::string::npos ? text.size() : comma;
    out.push_back(parse_positive(std::string_view(text).substr(pos, end - pos), text));
    check_length(out, text);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace tools
