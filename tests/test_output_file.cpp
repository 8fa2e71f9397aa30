// Outputs all or nothing (tools/output_file.hpp): a path keeps what it had until close() has
// checked every write, and no temporary is left either way.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "g5sim/config_error.hpp"
#include "tools/output_file.hpp"

namespace {

namespace fs = std::filesystem;

std::string contents(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh directory holding out.json = "old results\n".
fs::path scratch(const char* name) {
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "out.json") << "old results\n";
  return dir;
}

std::size_t entries(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("an output replaces its path only once it is complete", "[outputs]") {
  SECTION("an error before close leaves the old file byte for byte, and nothing else") {
    const fs::path dir = scratch("g5sim_output_error");
    try {
      tools::OutputFile out((dir / "out.json").string(), "--json");
      out.stream() << "half of the new";
      throw std::runtime_error("a later flag was wrong");
    } catch (const std::runtime_error&) {
    }
    CHECK(contents(dir / "out.json") == "old results\n");
    CHECK(entries(dir) == 1);  // the temporary is gone
    fs::remove_all(dir);
  }
  SECTION("close puts the new file at the path, keeping its permissions") {
    const fs::path dir = scratch("g5sim_output_close");
    fs::permissions(dir / "out.json", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
    {
      tools::OutputFile out((dir / "out.json").string(), "--json");
      out.stream() << "new results\n";
      CHECK(contents(dir / "out.json") == "old results\n");  // not yet
      CHECK(entries(dir) == 2);                              // the temporary beside it
      out.close();
    }
    CHECK(contents(dir / "out.json") == "new results\n");
    CHECK(entries(dir) == 1);
    CHECK(fs::status(dir / "out.json").permissions() ==
          (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
    fs::remove_all(dir);
  }
  SECTION("a directory that cannot take the file fails at once, naming the flag") {
    CHECK_THROWS_WITH(tools::OutputFile("/nonexistent-dir/out.json", "--csv"),
                      "--csv: cannot write '/nonexistent-dir/out.json': No such file or directory");
  }
  SECTION("two outputs naming one file are refused, however the path is spelt") {
    const fs::path dir = scratch("g5sim_output_shared");
    const std::string a = (dir / "out.json").string(), b = (dir / "." / "out.json").string();
    CHECK_THROWS_AS(tools::refuse_shared_outputs({{"--trace", a}, {"--json", b}}), g5sim::ConfigError);
    CHECK_THROWS_WITH(tools::refuse_shared_outputs({{"--trace", a}, {"--json", a}}),
                      "--trace and --json both name '" + a + "': give each output its own file");
    CHECK_NOTHROW(tools::refuse_shared_outputs({{"--trace", "-"}, {"--json", "-"}, {"--csv", ""}, {"--x", a}}));
    fs::remove_all(dir);
  }
}
