// The compact command and record queues give back exactly what was stored.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "sim/program.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_compact_queues {

namespace {

bool same(const sim::Command& a, const sim::Command& b) {
  if (a.kind != b.kind || a.direction != b.direction || a.op != b.op || a.amount != b.amount ||
      a.row_bytes != b.row_bytes || a.wait_count != b.wait_count) {
    return false;
  }
  for (std::uint8_t i = 0; i < a.wait_count; ++i) {
    if (a.wait_engine[i] != b.wait_engine[i] || a.wait_id[i] != b.wait_id[i]) return false;
  }
  return true;
}

std::vector<sim::Command> random_commands(std::size_t n, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<sim::Command> out;
  const std::uint64_t extremes[] = {
      0, 1, 127, 128, std::numeric_limits<std::uint32_t>::max(), std::numeric_limits<std::uint64_t>::max()};
  for (std::size_t i = 0; i < n; ++i) {
    sim::Command c;
    c.kind = static_cast<sim::CommandKind>(rng() % 5);
    c.direction = static_cast<sim::Direction>(rng() % 6);
    c.op = rng() % 4 == 0 ? static_cast<std::uint32_t>(rng()) : static_cast<std::uint32_t>(i / 10);
    c.amount = rng() % 3 == 0 ? extremes[rng() % 6] : rng() % 100000;
    c.row_bytes = rng() % 2 == 0 ? 0 : static_cast<std::uint32_t>(rng());
    const std::uint8_t waits = static_cast<std::uint8_t>(rng() % (sim::Command::kMaxWaits + 1));
    for (std::uint8_t w = 0; w < waits; ++w) {
      // Distinct engines, ids anywhere in 32 bits (also far below the previous one).
      c.add_wait(static_cast<sim::EngineId>(w * 2 + rng() % 2),
                 rng() % 2 == 0 ? static_cast<std::uint32_t>(rng()) : static_cast<std::uint32_t>(i + 1));
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

TEST_CASE("a command queue returns every command as stored, by walking and by index", "[compact]") {
  // 1,000 commands: 15 full blocks of 64 and a partial one, every field at its extremes.
  const std::vector<sim::Command> commands = random_commands(1000, 7);
  sim::CommandQueue q;
  for (const sim::Command& c : commands) q.push_back(c);
  REQUIRE(q.size() == 1000);
  std::size_t i = 0;
  for (const sim::Command& c : q) CHECK(same(c, commands[i++]));
  CHECK(i == 1000);
  for (std::size_t k = commands.size(); k-- > 0;) CHECK(same(q[k], commands[k]));  // backwards
  for (std::size_t k = 100; k < commands.size(); ++k) CHECK(same(q[k - 100], commands[k - 100]));
  CHECK_THROWS_AS(q[1000], std::out_of_range);
  // A queue read while it grows: the partial last block is decoded again.
  sim::CommandQueue growing;
  for (std::size_t k = 0; k < 130; ++k) {
    growing.push_back(commands[k]);
    CHECK(same(growing[k], commands[k]));
    CHECK(same(growing[k / 2], commands[k / 2]));
  }
}

TEST_CASE("a record queue keeps out-of-order ends and encodes once its front is finished", "[compact]") {
  sim::RecordQueue r;
  // Three transfers in flight: they start at 10, 20, 30 and finish 25, 50, 40 (the third before
  // the second); then 200 back-to-back serial records.
  r.start(0, 10);
  r.start(1, 20);
  r.start(2, 30);
  r.finish(0, 25);
  r.finish(2, 40);
  CHECK(r[1].start == 20);
  CHECK(r[1].end == 0);  // not finished yet
  CHECK(r[2].end == 40);
  r.finish(1, 50);
  std::vector<sim::CommandRecord> expected{{10, 25}, {20, 50}, {30, 40}};
  sim::Tick t = 50;
  for (int k = 0; k < 200; ++k, t += 7) {
    r.instant(3 + static_cast<std::size_t>(k), t);
    expected.push_back({t, t});
  }
  // Durations cycling over 10 values (the recent list holds 8), gaps of 0 to 2 ticks.
  for (int k = 0; k < 300; ++k) {
    const sim::Tick d = 1000 * static_cast<sim::Tick>(k % 10) + 1, start = t + static_cast<sim::Tick>(k % 3);
    r.push_back({start, start + d});
    expected.push_back({start, start + d});
    t = start + d;
  }
  // Gaps too large to shift (far ahead, then far back), and the largest duration.
  const sim::Tick far = sim::Tick{1} << 62;
  for (const sim::CommandRecord rec : {sim::CommandRecord{far, far + 5}, sim::CommandRecord{3, 4},
                                       sim::CommandRecord{t, std::numeric_limits<sim::Tick>::max()}}) {
    r.push_back(rec);
    expected.push_back(rec);
  }
  REQUIRE(r.size() == expected.size());
  std::size_t i = 0;
  for (const sim::CommandRecord& rec : r) {
    CHECK(rec.start == expected[i].start);
    CHECK(rec.end == expected[i].end);
    ++i;
  }
  for (std::size_t k = expected.size(); k-- > 0;) {
    CHECK(r[k].start == expected[k].start);
    CHECK(r[k].end == expected[k].end);
  }
  CHECK_THROWS_AS(r.start(5, 0), std::logic_error);    // not the next index
  CHECK_THROWS_AS(r.finish(0, 99), std::logic_error);  // finished already
}

}  // namespace test_compact_queues
