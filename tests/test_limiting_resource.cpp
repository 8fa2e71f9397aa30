// bound_by: which resource limited an op (ops/limiting_resource.hpp), on hand-built programs of
// the tiny chip (1 cycle = 1 ps, 1 B/ps channels) and on a whole decode block.
#include <catch2/catch.hpp>

#include "api/simulation.hpp"
#include "hw/chip.hpp"
#include "models/model_spec.hpp"
#include "ops/limiting_resource.hpp"
#include "ops/lowering.hpp"
#include "sim/simulator.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_limiting_resource {

namespace {

namespace engine = test_configs::engine;

sim::Command work(sim::CommandKind kind, std::uint64_t amount) {
  sim::Command c;
  c.kind = kind;
  c.amount = amount;
  c.op = 0;
  return c;
}

// Runs `program` and returns the bound of op 0 over its interval (its first start to last end).
ops::Bound bound_of(const hw::Chip& chip, const sim::Program& program) {
  ops::Lowered lowered;
  lowered.program = program;
  const sim::Trace trace = sim::Simulator(chip).run(lowered.program);
  ops::LimitingResource limits(chip);
  limits.measure(lowered, trace, 1);
  return limits.bound(limits.op_work(0), trace.end);
}

}  // namespace

TEST_CASE("bound_by names the resource that fills the op's interval", "[ops][bound]") {
  SECTION("TIU: 1000 cycles = 1000 ps of a 1000 ps op") {
    const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1500, 1), "tiny");
    sim::Program p = sim::Program::with_queues(1, 4);
    p.cores[0].queue(engine::tiu) = {work(sim::CommandKind::compute, 1000)};
    const ops::Bound b = bound_of(chip, p);
    CHECK(b.resource == "TIU");
    CHECK(b.share == 1.0);
  }
  SECTION("a DMA channel: 1000 B at 1 B/ps fill 1000 ps; the DDR (1.5 B/ps) is busy 2/3") {
    const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1500, 1), "tiny");
    sim::Program p = sim::Program::with_queues(1, 4);
    p.cores[0].queue(engine::gdma) = {work(sim::CommandKind::transfer, 1000)};
    const ops::Bound b = bound_of(chip, p);
    CHECK(b.resource == "GDMA");
    CHECK(b.share == 1.0);
  }
  SECTION("the DDR: two cores' 3000 B share 1.5 B/ps, 4000 ps; each channel is busy 3000 ps") {
    const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(2, 1500, 1), "tiny");
    sim::Program p = sim::Program::with_queues(2, 4);
    p.cores[0].queue(engine::gdma) = {work(sim::CommandKind::transfer, 3000)};
    p.cores[1].queue(engine::gdma) = {work(sim::CommandKind::transfer, 3000)};
    const ops::Bound b = bound_of(chip, p);
    CHECK(b.resource == "DDR");
    CHECK(b.share == 1.0);  // 6000 B / 1.5 B/ps = 4000 ps of a 4000 ps op
  }
  SECTION("latency: 100 B after a 10 ns start-up; the channel is busy 100 of 10,100 ps") {
    const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1500, 1, 10), "tiny");
    sim::Program p = sim::Program::with_queues(1, 4);
    p.cores[0].queue(engine::gdma) = {work(sim::CommandKind::transfer, 100)};
    const ops::Bound b = bound_of(chip, p);
    CHECK(b.resource == "latency");
    CHECK(b.share == 100.0 / 10100.0);
  }
}

TEST_CASE("bound_by in a decode block: fa2 on the TIU, the weight projections on GDMA", "[ops][bound]") {
  // B = 4, kv_len 32,768 on SG2262: fa2 does 36.5 GFLOP in about 170 us (the cube is busy most of
  // it); o_proj streams 235 MB of weights through the 64 GDMA channels.
  const auto model = models::model_from_yaml(test_configs::kDeepSeekV3, "v3");
  const auto r = api::simulate_block(test_configs::sg2262(), model, test_configs::decode(4, 32768), {});
  const ops::OpTiming& fa2 = r.timeline.op(ops::OpKind::fa2);
  CHECK(fa2.bound_by == "TIU");
  CHECK(fa2.bound_share > 0.5);
  for (const ops::OpTiming& t : r.timeline.ops) {
    if (t.name == "o_proj") CHECK(t.bound_by == "GDMA");
    CHECK(t.bound_share >= 0);
  }
}

}  // namespace test_limiting_resource
