#pragma once
// Numbers read from text, one way everywhere: the command line's flags and lists, Python's and the
// validation table's key=value items, CSV cells, traces and the chip fields a design command
// rewrites. Each reader either returns the number or says nothing; the parse_ forms throw
// hw::InputError naming the field, in one wording:
//     expected a whole number LO..HI, got 'TEXT'       (without LO..HI when any will do)
//     expected a number in [LO, HI], got 'TEXT'        ((LO, HI] for an open end)
//
// A whole number is decimal digits alone: no sign (a "-1" would wrap to 2^64 - 1 in a C++ parser),
// no point, no space, at most 2^64 - 1. A decimal number is [+-] digits [. digits] [e|E [+-] digits]
// with a digit on at least one side of the point: no hexadecimal, no inf or nan, no spaces.
// A decimal is read with strtod (correctly rounded), and a value that underflows to a subnormal
// (below 2.2e-308 in magnitude, not zero) is kept: std::stod would throw on it (an "internal
// error" where a design command rewrote a tiny field), and a reader that must refuse it says so
// with is_subnormal().

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hw {

/// The whole number `text` writes, or nothing (not digits alone, or above 2^64 - 1).
std::optional<std::uint64_t> read_whole_number(std::string_view text);
/// The finite decimal number `text` writes, or nothing (the syntax above, or beyond the doubles).
std::optional<double> read_decimal_number(std::string_view text);
/// Nonzero and smaller in magnitude than the smallest normal double (2.2250738585072014e-308).
bool is_subnormal(double v);

/// "expected a whole number LO..HI, got 'TEXT'" ("expected a whole number, got 'TEXT'" for any)
std::string whole_number_expected(std::string_view text, std::uint64_t lo, std::uint64_t hi);
/// "expected a number in [LO, HI], got 'TEXT'" ((LO when lo_open); LO or HI omitted when infinite.
std::string decimal_number_expected(std::string_view text, double lo, double hi, bool lo_open = false);

/// "'TEXT' is too small a number to hold exactly (nonzero, below 2.2e-308): write 0 or a larger number"
std::string subnormal_refused(std::string_view text);

/// read_whole_number within lo..hi; else InputError(field, whole_number_expected(...)).
std::uint64_t parse_whole_number(std::string_view text, const std::string& field, std::uint64_t lo = 0,
                                 std::uint64_t hi = ~std::uint64_t{0});
/// read_decimal_number within [lo, hi] ((lo, hi] when lo_open); else InputError(field,
/// decimal_number_expected(...)), or subnormal_refused(...) for a subnormal.
double parse_decimal_number(std::string_view text, const std::string& field, double lo, double hi,
                            bool lo_open = false);

}  // namespace hw
