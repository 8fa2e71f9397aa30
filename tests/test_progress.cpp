// A run's progress reports (sim/progress.hpp, g5sim::ScopedProgress): what a front end's
// progress line is drawn from.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_progress {

namespace {

struct Report {
  std::string stage;
  std::uint64_t done, total;
};

void record(void* reports, const char* stage, std::uint64_t done, std::uint64_t total) {
  static_cast<std::vector<Report>*>(reports)->push_back({stage, done, total});
}

}  // namespace

TEST_CASE("a run tells its progress: each op lowered, then the commands simulated", "[progress]") {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
  const g5sim::Model model = g5sim::Model::from_file(g5sim::shipped_model_path());
  g5sim::Request request;
  request.scope = "block";
  std::vector<Report> reports;
  g5sim::Result result;
  {
    const g5sim::ScopedProgress progress(&record, &reports);
    result = g5sim::simulate(chip, model, request);
  }
  REQUIRE(!reports.empty());
  // The block's ops are lowered one by one (1, 2, ..., n of n), then the kernel reports: every
  // 65,536 events and once at the end, when every command has completed.
  std::uint64_t lowered = 0;
  for (const Report& r : reports) {
    CHECK(r.done <= r.total);
    if (r.stage == "lowering") CHECK(r.done == ++lowered);
  }
  CHECK(lowered == result.ops.size());
  CHECK(reports.front().stage == "lowering");
  CHECK(reports.back().stage == "simulating");
  CHECK(reports.back().done == result.simulated_commands);
  CHECK(reports.back().total == result.simulated_commands);

  // Out of the scope, nothing is told.
  reports.clear();
  g5sim::simulate(chip, model, request);
  CHECK(reports.empty());
}

}  // namespace test_progress
