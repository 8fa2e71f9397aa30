// The knob tables (g5sim/knobs.hpp, g5sim/design.hpp): each row whole and consistent, and every
// front end taking what the table says: the command line's flags and help, a Settings' checks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "g5sim/design.hpp"
#include "g5sim/knobs.hpp"
#include "tools/cli.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_knobs {

namespace {

// What `g5sim COMMAND --help` prints.
std::string help_of(const char* command) {
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  const char* argv[] = {"g5sim", command, "--help"};
  tools::run_cli(3, argv);
  std::cout.rdbuf(old);
  return captured.str();
}

std::string flag_of_name(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return "--" + name;
}

}  // namespace

TEST_CASE("every knob row is whole: a flag of its name, a default within its range, its words", "[knobs]") {
  for (const std::vector<g5sim::Knob>* table : {&g5sim::serve_knobs(), &g5sim::design_knobs()}) {
    std::set<std::string> names;
    for (const g5sim::Knob& k : *table) {
      INFO(k.name);
      CHECK(names.insert(k.name).second);  // once per table
      CHECK(!k.doc.empty());
      CHECK(k.takes != 0);
      if (!k.flag.empty()) CHECK(k.flag == flag_of_name(k.name));
      if (k.type == g5sim::KnobType::count) CHECK(k.min <= k.max);
      if (k.type == g5sim::KnobType::decimal) CHECK(k.low < k.high);
      // A default reads as the knob reads a value, and a knob without one is optional (or a flag).
      if (!k.default_text.empty()) {
        CHECK_NOTHROW(g5sim::knob_value(k, k.default_text));
      } else {
        CHECK((k.optional || k.type == g5sim::KnobType::flag));
      }
      if (!k.choices.empty()) CHECK(k.choices.find(k.default_text) != std::string::npos);
      // A searchable count has a column in the search table.
      if (k.takes_in(g5sim::kSearchList)) CHECK(k.width > 0);
    }
  }
}

TEST_CASE("a Settings checks a value as the flag does, and reads knobs by name", "[knobs]") {
  g5sim::ServeSettings s;
  CHECK(s.count("block_tokens") == 16);
  CHECK_FALSE(s.given("block_tokens"));
  s.set_text("block_tokens", "32");
  CHECK(s.count("block_tokens") == 32);
  CHECK(s.given("block_tokens"));
  s.reset("block_tokens");
  CHECK(s.count("block_tokens") == 16);
  try {
    s.set_text("block_tokens", "0");
    FAIL("no error");
  } catch (const g5sim::ConfigError& e) {
    CHECK(e.field() == "block_tokens");
    CHECK(std::string(e.what()) == "expected a whole number 1..65536, got '0'");
  }
  CHECK_THROWS_WITH(s.set_text("schedule", "fifo"), "expected mixed or prefill-first, got 'fifo'");
  CHECK_THROWS_WITH(s.set_text("memory_utilization", "1.5"), "expected a number in (0, 1], got '1.5'");
  CHECK_THROWS_WITH(s.set_text("disagg", "2"), "expected P:D, prefill and decode instances 1..1024 each, got '2'");
  CHECK_THROWS_WITH(s.set("block_tokens", 1.5), "expected a whole number");
  // A decimal takes a whole number, and an optional knob nothing.
  s.set("rate", std::uint64_t{2});
  CHECK(s.decimal("rate") == 2.0);
  s.set("rate", g5sim::KnobValue{});
  CHECK_FALSE(s.optional_decimal("rate").has_value());
  CHECK_THROWS_WITH(s.set("block_tokens", g5sim::KnobValue{}), "required: it has no 'not given' value");
  // chunk 0 defers to the budget.
  CHECK(std::get<std::uint64_t>(g5sim::effective_value(s, *s.find("chunk"))) == 8192);
  // A name no row has is a bug.
  CHECK_THROWS_AS(s.count("max_seq"), std::logic_error);
  // A list given as '' is refused, not read as the default (sensitivity --fields '' ran every field).
  g5sim::Settings design(g5sim::design_knobs());
  CHECK_THROWS_WITH(design.set_text("fields", ""),
                    "an empty list names nothing; leave it out for every numeric field of the chip, and of the "
                    "runtime when --runtime names one");
  CHECK_THROWS_WITH(design.set_text("tp", ""),
                    "an empty list names nothing; leave it out for every sharding that fits");
}

TEST_CASE("each command's flags are its knobs: serve, search (lists), sensitivity, solve", "[knobs][cli]") {
  for (const auto& [command, use] : {std::pair{"serve", unsigned{g5sim::kServeKnob}},
                                     {"search", g5sim::kSearchKnob | g5sim::kSearchList},
                                     {"sensitivity", unsigned{g5sim::kSensitivityKnob}},
                                     {"solve", unsigned{g5sim::kSolveKnob}}}) {
    const std::string help = help_of(command);
    for (const g5sim::Knob* k : g5sim::knobs_taking(use)) {
      INFO(command << " " << k->name);
      CHECK(help.find(k->flag) != std::string::npos);
    }
  }
  // In search a searchable knob takes a list; in serve one value.
  CHECK(help_of("search").find(": a list (64,128,256 or LO:HI, doubling)") != std::string::npos);
  CHECK(help_of("serve").find(": a list (64,128,256") == std::string::npos);
}

}  // namespace test_knobs
