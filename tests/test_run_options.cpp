// The run-option table (g5sim/run_options.hpp) and the command line built from it: every row
// well formed, every row a flag of the subcommands that take it, values checked as documented.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "g5sim/run_options.hpp"
#include "tools/cli.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_run_options {

namespace {

// `g5sim help SUBCOMMAND`'s text.
std::string help_of(const std::string& subcommand) {
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  const char* argv[] = {"g5sim", "help", subcommand.c_str()};
  const int rc = tools::run_cli(3, argv);
  std::cout.rdbuf(old);
  REQUIRE(rc == 0);
  return captured.str();
}

}  // namespace

TEST_CASE("the run-option table is well formed", "[run_options]") {
  std::set<std::string> names, flags;
  const g5sim::Request defaults;
  for (const g5sim::RunOption& o : g5sim::run_options()) {
    INFO(o.name);
    CHECK(names.insert(o.name).second);
    CHECK(flags.insert(o.flag).second);
    CHECK(o.flag.rfind("--", 0) == 0);
    CHECK(!o.doc.empty());
    CHECK((o.takes & g5sim::kRun) != 0);  // every option is a run's
    CHECK(g5sim::find_run_option(o.name) == &o);
    for (const std::string& alias : o.library_names) CHECK(g5sim::find_run_option(alias) == &o);
    const g5sim::OptionValue d = g5sim::get_option(defaults, o);
    CHECK(std::holds_alternative<std::monostate>(d) == o.optional);
    if (o.type == g5sim::OptionType::count) {
      CHECK(o.min <= o.max);
      if (!o.optional) CHECK((std::get<std::uint64_t>(d) >= o.min && std::get<std::uint64_t>(d) <= o.max));
    }
    if (o.type == g5sim::OptionType::flag) CHECK(std::holds_alternative<bool>(d));
    // A default-on switch is turned off by its flag: the flag says so.
    if (o.type == g5sim::OptionType::flag && std::get<bool>(d)) CHECK(o.flag.rfind("--no-", 0) == 0);
  }
}

TEST_CASE("each subcommand has a flag for every row it takes, with the row's doc", "[run_options][cli]") {
  const std::string run = help_of("run"), sweep = help_of("sweep"), compare = help_of("compare"),
                    serve = help_of("serve");
  for (const g5sim::RunOption& o : g5sim::run_options()) {
    INFO(o.name);
    CHECK(run.find("  " + o.flag + " ") != std::string::npos);
    CHECK(run.find(o.doc) != std::string::npos);
    const bool grid = (o.takes & (g5sim::kGridAxis | g5sim::kGridFixed)) != 0;
    CHECK((sweep.find("  " + o.flag + " ") != std::string::npos) == grid);
    CHECK((compare.find("  " + o.flag + " ") != std::string::npos) == grid);
    // serve takes one value for every step of the options that shape a step, not its sequences.
    CHECK((serve.find("  " + o.flag + " ") != std::string::npos) == ((o.takes & g5sim::kServe) != 0));
  }
}

TEST_CASE("options are set as checked values, and errors name them", "[run_options]") {
  g5sim::Request r;
  const g5sim::RunOption& batch = *g5sim::find_run_option("batch");
  g5sim::set_option_text(r, batch, "64");
  CHECK(r.batch == std::uint64_t{64});
  auto message = [&](const g5sim::RunOption& o, const std::string& text) {
    try {
      g5sim::set_option_text(r, o, text);
    } catch (const g5sim::ConfigError& e) {
      CHECK(e.field() == o.name);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // The ranges: batch 1..2^20 sequences, ctx 1..2^24 tokens.
  CHECK(message(batch, "0") == "expected a whole number 1..1048576, got '0'");
  CHECK(message(batch, "-1") == "expected a whole number 1..1048576, got '-1'");
  CHECK(message(*g5sim::find_run_option("ctx"), "16777217") == "expected a whole number 1..16777216, got '16777217'");
  CHECK(message(*g5sim::find_run_option("ctx"), "99999999999999999999") ==
        "expected a whole number 1..16777216, got '99999999999999999999'");
  CHECK(message(*g5sim::find_run_option("replay"), "maybe") == "expected true or false, got 'maybe'");
  CHECK(message(*g5sim::find_run_option("expert_load"), "") == "an empty path names no file");
  g5sim::set_option(r, batch, g5sim::OptionValue{});
  CHECK(!r.batch);
  CHECK(g5sim::option_text(g5sim::get_option(r, *g5sim::find_run_option("ctx"))) == "4096");
  // The library's names for an option are the option's flag on the command line.
  CHECK(g5sim::flag_of("kv_len") == "--ctx");
  CHECK(g5sim::flag_of("kv_format") == "--kv-dtype");
  CHECK(g5sim::flag_of("replay") == "--no-replay");
  CHECK(g5sim::flag_of("sharding") == "--tp/--ep/--dp");
  CHECK(g5sim::flag_of("something_else") == "something_else");
}

TEST_CASE("command lines run at once share nothing: each writes what it writes alone", "[cli]") {
  // Each call of run_cli owns its parser and its limits (tools/cli.hpp): eight threads running
  // four command lines twice write byte for byte what each writes alone.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "g5sim_concurrent_cli";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto run = [&](std::uint64_t batch, const std::string& name) {
    const std::string b = std::to_string(batch), path = (dir / name).string();
    const std::vector<const char*> argv{"g5sim", "run",  "--scope", "block",     "--batch", b.c_str(),
                                        "--ctx", "8192", "--tp",    "1",         "--ep",    "1",
                                        "--dp",  "1",    "--json",  path.c_str()};
    return tools::run_cli(static_cast<int>(argv.size()), argv.data());
  };
  auto slurp = [&](const std::string& name) {
    std::ifstream in(dir / name);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::uint64_t batches[4] = {1, 2, 4, 8};
  std::vector<std::string> expected;
  for (int i = 0; i < 4; ++i) {
    REQUIRE(run(batches[i], "alone" + std::to_string(i)) == 0);
    expected.push_back(slurp("alone" + std::to_string(i)));
  }
  std::vector<int> codes(8, -1);
  std::vector<std::thread> threads;
  for (int k = 0; k < 8; ++k) {
    threads.emplace_back([&, k] { codes[k] = run(batches[k % 4], "together" + std::to_string(k)); });
  }
  for (std::thread& t : threads) t.join();
  CHECK(codes == std::vector<int>(8, 0));
  for (int k = 0; k < 8; ++k) CHECK(slurp("together" + std::to_string(k)) == expected[k % 4]);
  std::filesystem::remove_all(dir);
}

}  // namespace test_run_options
