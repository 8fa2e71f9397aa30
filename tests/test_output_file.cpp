// Outputs all or nothing (tools/output_file.hpp): a path keeps what it had until close() has
// checked every write, and no temporary is left either way.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "g5sim/config_error.hpp"
#include "tools/output_file.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_output_file {

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
  SECTION("two outputs naming one file are refused, however the path is spelt, and nothing is written") {
    const fs::path dir = scratch("g5sim_output_shared");
    fs::remove(dir / "out.json");
    const std::string a = (dir / "out.json").string();
    auto refused = [&](const std::string& b) {
      return [&, b] { tools::OutputSet outputs({{"--trace", a}, {"--json", b}}); };
    };
    // Not yet there: the same absolute path, '.' and '..' and a symlinked folder resolved.
    fs::create_directories(dir / "sub");
    fs::create_directory_symlink(dir, dir / "link");
    for (const std::string& b : {a, (dir / "." / "out.json").string(), (dir / "sub" / ".." / "out.json").string(),
                                 (dir / "link" / "out.json").string()}) {
      CHECK_THROWS_WITH(refused(b)(), "--trace and --json both name '" + b + "': give each output its own file");
    }
    CHECK(entries(dir) == 2);  // sub and link: no output, no temporary
    // There: one device and inode, whatever the path (a symlink to it, a hard link).
    std::ofstream(dir / "out.json") << "old\n";
    fs::create_symlink(dir / "out.json", dir / "alias.json");
    fs::create_hard_link(dir / "out.json", dir / "hard.json");
    for (const std::string& b : {(dir / "alias.json").string(), (dir / "hard.json").string()}) {
      CHECK_THROWS_AS(refused(b)(), g5sim::ConfigError);
    }
    CHECK(contents(dir / "out.json") == "old\n");
    // Two on standard output; none given, or distinct files, are fine.
    CHECK_THROWS_WITH((tools::OutputSet({{"--csv", "-"}, {"--json", "-"}})),
                      "--csv - and --json - both want standard output: give one of them a PATH");
    {
      tools::OutputSet outputs({{"--trace", ""}, {"--json", "-"}, {"--csv", (dir / "other.csv").string()}});
      CHECK(outputs.on_stdout());
      CHECK(outputs.get("--trace") == nullptr);
      outputs.get("--csv")->stream() << "x\n";
      outputs.close();
    }
    CHECK(contents(dir / "other.csv") == "x\n");
    fs::remove_all(dir);
  }
}

}  // namespace test_output_file
