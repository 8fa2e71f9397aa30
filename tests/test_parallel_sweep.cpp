// Parallel sweep points (g5sim sweep --jobs N): the same bytes whatever N, and the same error.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/cli.hpp"
#include "tools/parallel_for.hpp"

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int cli(std::vector<std::string> args) {
  std::vector<const char*> argv{"g5sim"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return tools::run_cli(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("sweep points on several threads write the same bytes as on one", "[cli][sweep][jobs]") {
  const std::string src = G5SIM_TEST_SOURCE_DIR;
  const auto dir = std::filesystem::temp_directory_path() / "g5sim_test_parallel_sweep";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<std::string> base{"sweep",
                                "--chip",
                                src + "/tests/golden/chip.yaml",
                                "--model",
                                src + "/tests/golden/model.yaml",
                                "--scope",
                                "block",
                                "--dp",
                                "1",
                                "--ctx",
                                "1024:65536:x2",
                                "--kv-dtype",
                                "fp8"};
  std::vector<std::string> files;
  for (const char* jobs : {"1", "2", "3", "7"}) {
    auto args = base;
    const std::string out = (dir / (std::string("jobs") + jobs + ".csv")).string();
    args.insert(args.end(), {"--jobs", jobs, "--csv", out});
    REQUIRE(cli(args) == 0);
    files.push_back(slurp(out));
  }
  // 7 points (1024 .. 65536) and a header.
  CHECK(std::count(files[0].begin(), files[0].end(), '\n') == 8);
  for (std::size_t i = 1; i < files.size(); ++i) CHECK(files[i] == files[0]);
}

TEST_CASE("parallel_for reports the lowest failing item's error, whatever the timing", "[cli][jobs]") {
  std::atomic<int> ran{0};
  for (unsigned jobs : {1u, 2u, 8u}) {
    ran = 0;
    try {
      tools::parallel_for(20, jobs, [&](std::size_t i) {
        ++ran;
        if (i % 5 == 3) throw std::runtime_error("item " + std::to_string(i));
      });
      FAIL("no exception");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "item 3");
    }
    // On one thread the loop stops at the first failure; on several every item runs.
    CHECK(ran == (jobs == 1 ? 4 : 20));
  }
}
