// Numbers read from text (hw/number_text.hpp): what each reader takes, and the one wording of its
// refusals.

#include <catch2/catch.hpp>

#include <cfloat>
#include <limits>

#include "hw/config_error.hpp"
#include "hw/number_text.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_number_text {

TEST_CASE("a whole number is digits alone, up to 2^64 - 1", "[numbers]") {
  CHECK(hw::read_whole_number("0") == 0u);
  CHECK(hw::read_whole_number("007") == 7u);
  CHECK(hw::read_whole_number("18446744073709551615") == std::numeric_limits<std::uint64_t>::max());
  for (const char* text : {"18446744073709551616", "", "-1", "+1", " 1", "1 ", "1.0", "1e3", "0x10", "one"}) {
    INFO(text);
    CHECK_FALSE(hw::read_whole_number(text).has_value());
  }
}

TEST_CASE("a decimal number is a sign, digits, a point and an exponent, and finite", "[numbers]") {
  CHECK(hw::read_decimal_number("1.5") == 1.5);
  CHECK(hw::read_decimal_number("-2") == -2.0);
  CHECK(hw::read_decimal_number("+.5") == 0.5);
  CHECK(hw::read_decimal_number("5.") == 5.0);
  CHECK(hw::read_decimal_number("1E3") == 1000.0);
  CHECK(hw::read_decimal_number("2.5e-1") == 0.25);
  // strtod rounds correctly: the shortest text of a double reads back as that double.
  CHECK(hw::read_decimal_number("0.1") == 0.1);
  for (const char* text : {"", ".", "e5", "1e", "1e+", "inf", "nan", "infinity", "0x1p3", " 1", "1 ", "1,5", "1e999"}) {
    INFO(text);
    CHECK_FALSE(hw::read_decimal_number(text).has_value());
  }
}

TEST_CASE("a subnormal is read, and refused where a number is parsed for use", "[numbers]") {
  // 1e-320 underflows to a subnormal: std::stod throws on it, the reader keeps it.
  const std::optional<double> tiny = hw::read_decimal_number("1e-320");
  REQUIRE(tiny.has_value());
  CHECK(hw::is_subnormal(*tiny));
  CHECK_FALSE(hw::is_subnormal(0.0));
  CHECK_FALSE(hw::is_subnormal(DBL_MIN));
  CHECK(hw::is_subnormal(-DBL_MIN / 2));
  CHECK_THROWS_WITH(hw::parse_decimal_number("1e-320", "latency_ns", 0, 1e6),
                    "'1e-320' is too small a number to hold exactly (nonzero, below 2.2e-308): write 0 or a larger "
                    "number");
}

TEST_CASE("the refusals: one wording, naming the field", "[numbers]") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(hw::parse_whole_number("64", "max_seqs", 1, 4096) == 64u);
  try {
    hw::parse_whole_number("0", "max_seqs", 1, 4096);
    FAIL("no error");
  } catch (const hw::InputError& e) {
    CHECK(e.field() == "max_seqs");
    CHECK(std::string(e.what()) == "expected a whole number 1..4096, got '0'");
  }
  CHECK_THROWS_WITH(hw::parse_whole_number("-1", "seed"), "expected a whole number, got '-1'");
  CHECK_THROWS_WITH(hw::parse_decimal_number("x", "rate", -inf, inf), "expected a number, got 'x'");
  CHECK_THROWS_WITH(hw::parse_decimal_number("0", "slo_tpot_ms", 0, inf, true), "expected a number > 0, got '0'");
  CHECK_THROWS_WITH(hw::parse_decimal_number("-1", "x", 0, inf), "expected a number >= 0, got '-1'");
  CHECK_THROWS_WITH(hw::parse_decimal_number("2", "memory_utilization", 0, 1, true),
                    "expected a number in (0, 1], got '2'");
  CHECK_THROWS_WITH(hw::parse_decimal_number("5", "x", -inf, 1), "expected a number <= 1, got '5'");
  CHECK(hw::parse_decimal_number("1", "memory_utilization", 0, 1, true) == 1.0);
}

}  // namespace test_number_text
