#include "explore/context_list.hpp"

#include <fmt/format.h>

#include "hw/config_error.hpp"
#include "hw/number_text.hpp"

namespace explore {

namespace {

std::uint64_t parse_positive(std::string_view s, const std::string& whole) {
  const std::optional<std::uint64_t> v = hw::read_whole_number(s);
  const bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
  if (digits && (!v || *v > kMaxContext)) {
    throw hw::InputError("ctx", fmt::format("{} in '{}' is outside 1..{}", s, whole, kMaxContext));
  }
  if (!v || *v == 0) throw hw::InputError("ctx", fmt::format("'{}' in '{}' is not a positive integer", s, whole));
  return *v;
}

// FACTOR of a geometric range in millionths: digits, at most one point and 6 decimals, > 1, <= 1024.
constexpr std::uint64_t kFactorScale = 1'000'000;
constexpr std::uint64_t kMaxFactor = 1024;

std::uint64_t parse_factor(std::string_view s, const std::string& whole) {
  const auto bad = [&] {
    return hw::InputError("ctx", fmt::format("factor '{}' in '{}' is not a decimal in (1, {}] with at most 6 decimals",
                                             s, whole, kMaxFactor));
  };
  const auto point = s.find('.');
  const std::string_view integer = s.substr(0, point);
  const std::string_view fraction = point == std::string_view::npos ? std::string_view() : s.substr(point + 1);
  if (integer.empty() || integer.size() > 4 || fraction.size() > 6 ||
      (point != std::string_view::npos && fraction.empty())) {
    throw bad();
  }
  std::uint64_t value = 0;
  for (const char c : integer) {
    if (c < '0' || c > '9') throw bad();
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  value *= kFactorScale;
  std::uint64_t unit = kFactorScale;
  for (const char c : fraction) {
    if (c < '0' || c > '9') throw bad();
    unit /= 10;
    value += unit * static_cast<std::uint64_t>(c - '0');
  }
  if (value <= kFactorScale || value > kMaxFactor * kFactorScale) throw bad();
  return value;
}

void check_length(const std::vector<std::uint64_t>& out, const std::string& whole) {
  if (out.size() > kMaxContexts) {
    throw hw::InputError("ctx", fmt::format("'{}' lists more than {} contexts", whole, kMaxContexts));
  }
}

}  // namespace

std::vector<std::uint64_t> parse_context_list(const std::string& text) {
  std::vector<std::uint64_t> out;
  if (text.find(':') != std::string::npos) {
    const auto a = text.find(':');
    const auto b = text.find(':', a + 1);
    if (b == std::string::npos || b + 1 >= text.size() || (text[b + 1] != 'x' && text[b + 1] != '+')) {
      throw hw::InputError("ctx", fmt::format("'{}' is not START:STOP:xFACTOR or START:STOP:+STEP", text));
    }
    const std::uint64_t start = parse_positive(std::string_view(text).substr(0, a), text);
    const std::uint64_t stop = parse_positive(std::string_view(text).substr(a + 1, b - a - 1), text);
    if (stop < start) throw hw::InputError("ctx", fmt::format("STOP < START in '{}'", text));
    const std::string_view step = std::string_view(text).substr(b + 2);
    if (text[b + 1] == '+') {
      const std::uint64_t by = parse_positive(step, text);
      if ((stop - start) / by + 1 > kMaxContexts) {
        throw hw::InputError("ctx", fmt::format("'{}' lists more than {} contexts", text, kMaxContexts));
      }
      for (std::uint64_t v = start; v <= stop; v += by) out.push_back(v);  // v + by <= 2 x kMaxContext: no wrap
      return out;
    }
    const std::uint64_t factor = parse_factor(step, text);  // x 10^6
    // v <= stop <= kMaxContext < 2^25 and factor < 2^31: v x factor cannot wrap.
    for (std::uint64_t v = start; v <= stop;) {
      out.push_back(v);
      check_length(out, text);
      const std::uint64_t next = (v * factor + kFactorScale / 2) / kFactorScale;
      if (next <= v) {
        throw hw::InputError("ctx", fmt::format("in '{}', {} x {} rounds to {}: the factor is too small to grow it",
                                                text, v, step, next));
      }
      v = next;
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

}  // namespace explore
