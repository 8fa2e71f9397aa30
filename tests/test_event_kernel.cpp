// The event kernel against hand-computed schedules. The tiny chip runs its TIU at 1 THz
// (1 cycle = 1 ps) and its DMA channels at 1000 GB/s = 1 byte per ps, so times are easy to derive.
#include <catch2/catch.hpp>

#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "sim/event_queue.hpp"
#include "sim/simulator.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_event_kernel {

namespace {

using sim::Command;
using sim::CommandKind;
namespace engine = test_configs::engine;

Command compute(std::uint64_t cycles, std::uint32_t wait_gdma = 0, std::uint32_t wait_sdma = 0) {
  Command c;
  c.kind = CommandKind::compute;
  c.amount = cycles;
  c.add_wait(test_configs::engine::gdma, wait_gdma);
  c.add_wait(test_configs::engine::sdma, wait_sdma);
  return c;
}

Command transfer(std::uint64_t bytes, std::uint32_t wait_tiu = 0) {
  Command c;
  c.kind = CommandKind::transfer;
  c.amount = bytes;
  c.add_wait(test_configs::engine::tiu, wait_tiu);
  return c;
}

Command message(CommandKind kind, std::uint32_t msg, std::uint32_t count = 0) {
  Command c;
  c.kind = kind;
  c.msg = msg;
  c.msg_count = count;
  return c;
}

// Queues for tiny_chip's four engines (tiu, gdma, sdma, cdma).
sim::Program program(std::size_t cores) { return sim::Program::with_queues(cores, 4); }

}  // namespace

TEST_CASE("event queue: equal times run by priority, then type, then key, whatever the insertion order",
          "[sim][events]") {
  sim::EventQueue q;
  q.push(5, sim::EventPriority::kRateUpdate, sim::EventType::rate_update, 100, 0);
  q.push(5, sim::EventPriority::kState, sim::EventType::transfer_startup_done, 4, 7);
  q.push(5, sim::EventPriority::kState, sim::EventType::serial_done, 3, 30);
  q.push(3, sim::EventPriority::kState, sim::EventType::serial_done, 0, 99);
  q.push(5, sim::EventPriority::kState, sim::EventType::serial_done, 1, 10);
  q.push(5, sim::EventPriority::kState, sim::EventType::serial_done, 2, 20);
  // Time 3 first; at time 5 the state events: instruction ends by key (10, 20, 30: subjects 1, 2,
  // 3, though 3 was queued first), then the start-up end (a later type), then the rate update.
  const std::uint32_t expected[] = {0, 1, 2, 3, 4, 100};
  for (std::uint32_t a : expected) CHECK(q.pop().subject == a);
  CHECK(q.empty());
}

TEST_CASE("sync waits: TIU waits on GDMA, GDMA waits on TIU", "[sim][kernel]") {
  // startup 0.1 ns = 100 ps. load 1000 B: 0 -> 100 + 1000 = 1100 ps.
  // TIU (500 cycles) waits on GDMA 1: 1100 -> 1600. store 200 B waits on TIU 1: 1600 -> 1600 + 100 + 200 = 1900.
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1000, 4, 0.1), "tiny");
  sim::Program p = program(1);
  p.cores[0].queue(engine::gdma) = {transfer(1000), transfer(200, 1)};
  p.cores[0].queue(engine::tiu) = {compute(500, 1)};
  const sim::Trace t = sim::Simulator(chip).run(p);
  CHECK(t.records(0, engine::gdma)[0].start == 0);
  CHECK(t.records(0, engine::gdma)[0].end == 1100);
  CHECK(t.records(0, engine::tiu)[0].start == 1100);
  CHECK(t.records(0, engine::tiu)[0].end == 1600);
  CHECK(t.records(0, engine::gdma)[1].start == 1600);
  CHECK(t.records(0, engine::gdma)[1].end == 1900);
  CHECK(t.end == 1900);
}

TEST_CASE("a delay holds the tensor queue for its picoseconds, and the DMA that waits on it starts after",
          "[sim][kernel]") {
  // TIU: delay 5,000 ps (0 -> 5000), then compute 500 cycles (5000 -> 5500). GDMA: a load of
  // 1000 B waiting on TIU 1 (the delay): 5000 + 100 start-up + 1000 = 6100 ps.
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1000, 4, 0.1), "tiny");
  sim::Program p = program(1);
  Command delay;
  delay.kind = CommandKind::delay;
  delay.amount = 5'000;
  p.cores[0].queue(engine::tiu) = {delay, compute(500)};
  p.cores[0].queue(engine::gdma) = {transfer(1000, 1)};
  const sim::Trace t = sim::Simulator(chip).run(p);
  CHECK(t.records(0, engine::tiu)[0].start == 0);
  CHECK(t.records(0, engine::tiu)[0].end == 5'000);
  CHECK(t.records(0, engine::tiu)[1].start == 5'000);
  CHECK(t.records(0, engine::tiu)[1].end == 5'500);
  CHECK(t.records(0, engine::gdma)[0].start == 5'000);
  CHECK(t.records(0, engine::gdma)[0].end == 6'100);
  CHECK(t.end == 6'100);
  // A delay belongs on the tensor engine only.
  sim::Program bad = program(1);
  bad.cores[0].queue(engine::gdma) = {delay};
  CHECK_THROWS_WITH(sim::Simulator(chip).run(bad), "core 0: engine gdma queue holds a command of the wrong kind");
}

TEST_CASE("one engine serves its descriptors in order: the head's bytes first", "[sim][kernel][order]") {
  // Several transfers in flight hide start-ups and round trips; the channel delivers the oldest
  // descriptor's bytes first, so the next tile never slows the one needed now.
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1000, 4), "tiny");
  SECTION("equal sizes: 1000 B each at 1 B/ps, one after the other: 1000 and 2000 ps") {
    sim::Program p = program(1);
    p.cores[0].queue(engine::gdma) = {transfer(1000), transfer(1000)};
    const sim::Trace t = sim::Simulator(chip).run(p);
    CHECK(t.records(0, engine::gdma)[0].start == 0);
    CHECK(t.records(0, engine::gdma)[1].start == 0);  // issued at once (4 in flight)
    CHECK(t.records(0, engine::gdma)[0].end == 1000);
    CHECK(t.records(0, engine::gdma)[1].end == 2000);
  }
  SECTION("3000 B then 1000 B: 3000 ps, then 4000; a TIU waiting on id 2 starts at 4000") {
    sim::Program p = program(1);
    p.cores[0].queue(engine::gdma) = {transfer(3000), transfer(1000)};
    p.cores[0].queue(engine::tiu) = {compute(10, 2)};
    const sim::Trace t = sim::Simulator(chip).run(p);
    CHECK(t.records(0, engine::gdma)[0].end == 3000);
    CHECK(t.records(0, engine::gdma)[1].end == 4000);
    CHECK(t.records(0, engine::tiu)[0].start == 4000);
    CHECK(t.records(0, engine::tiu)[0].end == 4010);
  }
  SECTION("start-ups overlap the head's transfer: 100 ps each, 1000 B each -> 1100, 2100") {
    const hw::Chip slow_start = hw::chip_from_yaml(test_configs::tiny_chip(1, 1000, 4, 0.1), "tiny");
    sim::Program p = program(1);
    p.cores[0].queue(engine::gdma) = {transfer(1000), transfer(1000)};
    const sim::Trace t = sim::Simulator(slow_start).run(p);
    CHECK(t.records(0, engine::gdma)[0].end == 1100);
    CHECK(t.records(0, engine::gdma)[1].end == 2100);
  }
  SECTION("two engines of one core move at once: GDMA and SDMA each at their own 1 B/ps") {
    // DDR 2000 GB/s = 2 B/ps carries both channels.
    const hw::Chip wide_ddr = hw::chip_from_yaml(test_configs::tiny_chip(1, 2000, 4), "tiny");
    sim::Program p = program(1);
    p.cores[0].queue(engine::gdma) = {transfer(1000)};
    p.cores[0].queue(engine::sdma) = {transfer(1000)};
    const sim::Trace t = sim::Simulator(wide_ddr).run(p);
    CHECK(t.records(0, engine::gdma)[0].end == 1000);
    CHECK(t.records(0, engine::sdma)[0].end == 1000);
  }
}

TEST_CASE("three concurrent transfers on three cores share the DDR", "[sim][kernel][sharing]") {
  // Channels 1 B/ps each, DDR 1500 GB/s = 1.5 B/ps: three flows get 0.5 B/ps each.
  //   1000 B ends at 1000/0.5 = 2000 ps (2000 B and 3000 B have 1000 and 2000 left);
  //   two flows: DDR 1.5/2 = 0.75 each: 2000 B ends at 2000 + 1000/0.75 = 3333.33 -> 3334 ps
  //     (rounded up; at 3334 the 3000 B flow has 2000 - 0.75*1334 = 999.5 B left);
  //   alone: min(channel 1, DDR 1.5) = 1 B/ps: 3334 + 999.5 = 4333.5 -> 4334 ps.
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(3, 1500, 1), "tiny");
  sim::Program p = program(3);
  p.cores[0].queue(engine::gdma) = {transfer(1000)};
  p.cores[1].queue(engine::gdma) = {transfer(2000)};
  p.cores[2].queue(engine::gdma) = {transfer(3000)};
  const sim::Trace t = sim::Simulator(chip).run(p);
  CHECK(t.records(0, engine::gdma)[0].end == 2000);
  CHECK(t.records(1, engine::gdma)[0].end == 3334);
  CHECK(t.records(2, engine::gdma)[0].end == 4334);
}

TEST_CASE("the outstanding limit queues further transfers in order", "[sim][kernel]") {
  // Limit 2: transfers 1 and 2 issue at 0; 1 moves 0 -> 1000, 2 moves 1000 -> 2000. Transfer 3
  // issues when 1 completes (1000 ps: one slot free) and moves after 2: 2000 -> 3000.
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1000, 2), "tiny");
  sim::Program p = program(1);
  p.cores[0].queue(engine::gdma) = {transfer(1000), transfer(1000), transfer(1000)};
  const sim::Trace t = sim::Simulator(chip).run(p);
  CHECK(t.records(0, engine::gdma)[2].start == 1000);
  CHECK(t.records(0, engine::gdma)[2].end == 3000);
}

TEST_CASE("messages synchronise cores, and SDMA waits feed the TIU", "[sim][kernel]") {
  // Core 0: compute 100 cycles, then send. Core 1: send, wait for 2 sends, compute 10 cycles.
  // Core 1's wait passes at 100 ps (core 0's send); its compute runs 100 -> 110.
  // Core 0 also has an SDMA read of 50 B (1 B/ps, no startup: 0 -> 50) that its second TIU
  // command names (initial_sdma_dep): it starts when the first compute ends, at 100.
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(2, 1000, 1), "tiny");
  sim::Program p = program(2);
  p.message_count = 1;
  p.cores[0].queue(engine::tiu) = {compute(100), message(CommandKind::send_msg, 1), compute(5, 0, 1)};
  p.cores[0].queue(engine::sdma) = {transfer(50)};
  p.cores[1].queue(engine::tiu) = {message(CommandKind::send_msg, 1), message(CommandKind::wait_msg, 1, 2),
                                   compute(10)};
  const sim::Trace t = sim::Simulator(chip).run(p);
  CHECK(t.records(1, engine::tiu)[1].end == 100);
  CHECK(t.records(1, engine::tiu)[2].start == 100);
  CHECK(t.records(1, engine::tiu)[2].end == 110);
  CHECK(t.records(0, engine::sdma)[0].end == 50);
  CHECK(t.records(0, engine::tiu)[2].start == 100);
  CHECK(t.records(0, engine::tiu)[2].end == 105);
}

TEST_CASE("a program that can never finish is reported, not hung", "[sim][kernel]") {
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1000, 1), "tiny");
  sim::Program p = program(1);
  p.cores[0].queue(engine::tiu) = {compute(10, 1)};  // waits on a GDMA command that does not exist
  CHECK_THROWS_WITH(sim::Simulator(chip).run(p), Catch::Contains("deadlocked"));
}

TEST_CASE("Little's law: one engine sustains min(channel, bytes in flight / latency)", "[sim][kernel][dma]") {
  // Channel 1 B/ps, DDR latency 10 ns = 10,000 ps.
  SECTION("1,000 bytes in flight: 1,000 / 10,000 = 0.1 B/ps, below the channel") {
    const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 100000, 4, 0, 10, 1000), "little");
    sim::Program p = program(1);
    p.cores[0].queue(engine::gdma) = {transfer(100'000)};
    const sim::Trace t = sim::Simulator(chip).run(p);
    // 10,000 ps latency, then 100,000 B at 0.1 B/ps = 1,000,000 ps: ends at 1,010,000.
    CHECK(t.records(0, engine::gdma)[0].end == 1'010'000);
  }
  SECTION("100,000 bytes in flight: 10 B/ps, the channel's 1 B/ps binds") {
    const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 100000, 4, 0, 10, 100000), "little");
    sim::Program p = program(1);
    p.cores[0].queue(engine::gdma) = {transfer(100'000)};
    const sim::Trace t = sim::Simulator(chip).run(p);
    CHECK(t.records(0, engine::gdma)[0].end == 110'000);
  }
}

TEST_CASE("bursts: transfers move whole DDR bursts, per row when strided", "[sim][kernel][dma]") {
  // 64-byte bursts, channel 1 B/ps, no latency.
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 100000, 1, 0, 0, 1 << 30, 64), "burst");
  sim::Program p = program(1);
  Command strided = transfer(6560);  // 10 FlashMLA rows of 656 B -> 10 x 704 = 7,040 bus bytes
  strided.row_bytes = 656;
  Command contiguous = transfer(6560);  // one block: 6,560 -> 103 bursts = 6,592 bus bytes
  p.cores[0].queue(engine::gdma) = {strided, contiguous};
  const sim::Trace t = sim::Simulator(chip).run(p);
  CHECK(t.records(0, engine::gdma)[0].end == 7040);
  CHECK(t.records(0, engine::gdma)[1].end == 7040 + 6592);
}

TEST_CASE("a fence holds the tensor queue until its waits complete, then takes no time", "[sim][kernel]") {
  // GDMA load of 1,000 B at 1 B/ps: 0 -> 1,000 ps. The fence waits on it and passes at 1,000; the
  // compute behind it (no waits of its own: the queue is in order) runs 1,000 -> 1,010.
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1000, 1), "tiny");
  sim::Program p = program(1);
  Command fence;
  fence.kind = CommandKind::fence;
  fence.add_wait(engine::gdma, 1);
  p.cores[0].queue(engine::tiu) = {fence, compute(10)};
  p.cores[0].queue(engine::gdma) = {transfer(1000)};
  const sim::Trace t = sim::Simulator(chip).run(p);
  CHECK(t.records(0, engine::tiu)[0].start == 1000);
  CHECK(t.records(0, engine::tiu)[0].end == 1000);
  CHECK(t.records(0, engine::tiu)[1].start == 1000);
  CHECK(t.records(0, engine::tiu)[1].end == 1010);
}

TEST_CASE("a run that would leave the picosecond clock's range is refused, not wrapped", "[sim][kernel][limits]") {
  // 1 MHz clock: 10^6 ps per cycle; 2^60 cycles would end at about 1.2e24 ps, past 2^62 ps.
  std::string text = test_configs::tiny_chip(1, 1000, 1);
  text.replace(text.find("clock_mhz: 1000000"), 18, "clock_mhz: 1");
  const hw::Chip chip = hw::chip_from_yaml(text, "slow");
  sim::Program p = program(1);
  p.cores[0].queue(engine::tiu) = {compute(std::uint64_t{1} << 60)};
  CHECK_THROWS_WITH(sim::Simulator(chip).run(p),
                    "the simulated time would pass 4611686018427387904 ps (about 53 days), the range of the "
                    "picosecond clock; simulate fewer layers, a shorter context or a smaller batch");
}

}  // namespace test_event_kernel
