#include "hw/number_text.hpp"

#include <fmt/format.h>

#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "hw/config_error.hpp"

namespace hw {
namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }

// Whether `text` is [+-] digits [. digits] [e|E [+-] digits], a digit beside the point.
bool decimal_syntax(std::string_view text) {
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  std::size_t digits = 0;
  while (i < text.size() && digit(text[i])) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && digit(text[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    std::size_t exponent = 0;
    while (i < text.size() && digit(text[i])) ++i, ++exponent;
    if (exponent == 0) return false;
  }
  return i == text.size();
}

// A bound as the messages write it: the shortest text that reads back as the same double.
std::string bound_text(double v) { return fmt::format("{}", v); }

}  // namespace

std::optional<std::uint64_t> read_whole_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (!digit(c)) return std::nullopt;
  }
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<double> read_decimal_number(std::string_view text) {
  if (!decimal_syntax(text)) return std::nullopt;
  const std::string copy(text);  // strtod reads up to a NUL
  const double v = std::strtod(copy.c_str(), nullptr);
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

bool is_subnormal(double v) { return v != 0 && std::fabs(v) < DBL_MIN; }

std::string whole_number_expected(std::string_view text, std::uint64_t lo, std::uint64_t hi) {
  if (lo == 0 && hi == std::numeric_limits<std::uint64_t>::max()) {
    return fmt::format("expected a whole number, got '{}'", text);
  }
  return fmt::format("expected a whole number {}..{}, got '{}'", lo, hi, text);
}

std::string decimal_number_expected(std::string_view text, double lo, double hi, bool lo_open) {
  const double inf = std::numeric_limits<double>::infinity();
  std::string range;
  if (lo == -inf && hi == inf) {
    range = "a number";
  } else if (hi == inf) {
    range = fmt::format("a number {} {}", lo_open ? ">" : ">=", bound_text(lo));
  } else if (lo == -inf) {
    range = fmt::format("a number <= {}", bound_text(hi));
  } else {
    range = fmt::format("a number in {}{}, {}]", lo_open ? "(" : "[", bound_text(lo), bound_text(hi));
  }
  return fmt::format("expected {}, got '{}'", range, text);
}

std::string subnormal_refused(std::string_view text) {
  return fmt::format("'{}' is too small a number to hold exactly (nonzero, below 2.2e-308): write 0 or a larger number",
                     text);
}

std::uint64_t parse_whole_number(std::string_view text, const std::string& field, std::uint64_t lo, std::uint64_t hi) {
  const std::optional<std::uint64_t> v = read_whole_number(text);
  if (!v || *v < lo || *v > hi) throw InputError(field, whole_number_expected(text, lo, hi));
  return *v;
}

double parse_decimal_number(std::string_view text, const std::string& field, double lo, double hi, bool lo_open) {
  const std::optional<double> v = read_decimal_number(text);
  if (v && is_subnormal(*v)) throw InputError(field, subnormal_refused(text));
  if (!v || (lo_open ? *v <= lo : *v < lo) || *v > hi) {
    throw InputError(field, decimal_number_expected(text, lo, hi, lo_open));
  }
  return *v;
}

}  // namespace hw
