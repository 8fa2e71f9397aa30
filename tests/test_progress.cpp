// A run's progress reports (sim/progress.hpp, g5sim::ScopedProgress): what a front end's
// progress line is drawn from.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "tools/progress_line.hpp"

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

TEST_CASE("a long command's pace: its rate so far and the rest at that rate", "[progress]") {
  // Nothing done, or no time yet: no pace to tell.
  CHECK(tools::pace(0, 1000, 12.0, "requests").empty());
  CHECK(tools::pace(5, 1000, 0.0, "requests").empty());
  // A stage's first request done 2 ms after it began is no pace (it read 6,369,427 requests/s).
  CHECK(tools::pace(1, 100, 0.002, "requests").empty());
  // 120 of 1000 in 12 s: 10 a second, 880 left = 88 s.
  CHECK(tools::pace(120, 1000, 12.0, "requests") == ", 10 requests/s, about 88 s left");
  // 3 of 33 points in 10 s: 0.3 a second, 30 left = 100 s = 1 min 40 s.
  CHECK(tools::pace(3, 33, 10.0, "points") == ", 0.3 points/s, about 1 min 40 s left");
  // 1 of 1000 in 9 s: 0.11 a second, 999 left = 8991 s = 149.85 min, to the minute 150 = 2 h 30 min.
  CHECK(tools::pace(1, 1000, 9.0, "requests") == ", 0.11 requests/s, about 2 h 30 min left");
  // All done: the rate alone.
  CHECK(tools::pace(1000, 1000, 40.0, "requests") == ", 25 requests/s");
}

TEST_CASE("serve's progress line: each pass's pace its own, the exact pass's by the steps it simulates", "[progress]") {
  // One pass: 10 of 100 requests in 5 s is 2 requests/s, and the other 90 take 45 s.
  tools::ServePace one;
  CHECK(one.line({10, 100, 250, "", 40, 0}, 5.0) ==
        "serve: 10 of 100 requests done, about 45 s left; 5 s, 2 requests/s, 250 steps, 40 simulated");
  // Under auto, round 2 begins at 20 s (told with nothing done); at 30 s 25 of 100 are done: 2.5
  // requests/s over its 10 s, the other 75 in 30 s, of this round.
  tools::ServePace passes;
  const std::string round = "round 2 of at most 4, 25 % grid";
  CHECK(passes.line({0, 100, 0, round, 300, 0}, 20.0) ==
        "serve (round 2 of at most 4, 25 % grid): 0 of 100 requests done; 20 s, 0 steps, 300 simulated");
  CHECK(passes.line({25, 100, 600, round, 340, 0}, 30.0) ==
        "serve (round 2 of at most 4, 25 % grid): 25 of 100 requests done, about 30 s left in this round; 30 s, "
        "2.5 requests/s, 600 steps, 340 simulated");
  // The exact pass begins at 40 s with 400 steps simulated and 2,000 to simulate; at 60 s 500 more
  // are: 25 steps simulated/s, and the other 1,500 take 60 s, whatever the requests' pace.
  passes.line({0, 100, 0, "exact", 400, 2000}, 40.0);
  CHECK(passes.line({30, 100, 900, "exact", 900, 2000}, 60.0) ==
        "serve (exact, 2000 steps to simulate): 30 of 100 requests done, about 60 s left; 60 s, 25 steps "
        "simulated/s, 900 steps, 900 simulated");
  // A round's check is told with every request done: no requests' pace of its own.
  tools::ServePace check;
  check.line({0, 100, 0, round, 300, 0}, 20.0);
  check.line({100, 100, 2400, round, 380, 0}, 30.0);
  check.line({100, 100, 2400, "round 2 of at most 4: checking 64 steps drawn", 380, 0}, 30.0);
  CHECK(check.line({100, 100, 2400, "round 2 of at most 4: checking 64 steps drawn", 420, 0}, 32.0) ==
        "serve (round 2 of at most 4: checking 64 steps drawn): 100 of 100 requests done; 32 s, 2400 steps, 420 "
        "simulated");
  // Past its estimate (its steps differ a little from the round's), the rate alone.
  CHECK(passes.line({90, 100, 2700, "exact", 2500, 2000}, 100.0) ==
        "serve (exact, 2000 steps to simulate): 90 of 100 requests done; 100 s, 33 steps simulated/s, 2700 steps, "
        "2500 simulated");
}

}  // namespace test_progress
