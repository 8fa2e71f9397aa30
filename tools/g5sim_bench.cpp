// Speed of g5sim: emit (graph + lowering) and simulate, per command, for attention blocks and a
// whole DeepSeek-V3 decode step. Google Benchmark, not a test.
//   ./build/tools/g5sim_bench [--benchmark_filter=...]
// Counters: `commands` per run; `per_command` = wall time per command (printed with an SI
// prefix: 250n = 250 ns); `events` of the event kernel per run.

#include <benchmark/benchmark.h>

#include <functional>

#include "api/simulation.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/chip.hpp"
#include "models/attention_block.hpp"
#include "models/decoder_step.hpp"
#include "models/graph_helpers.hpp"
#include "models/model_spec.hpp"
#include "models/workload.hpp"
#include "ops/lowering.hpp"
#include "sim/simulator.hpp"

namespace {

struct Setup {
  hw::Chip chip = hw::load_chip(g5sim::shipped_chip_path());
  models::ModelSpec model = models::load_model(g5sim::shipped_model_path());
};

const Setup& setup() {
  static const Setup s;
  return s;
}

models::Workload workload(models::Phase phase, std::uint64_t batch, std::uint64_t ctx) {
  return models::make_workload(phase, batch, ctx, std::nullopt, models::KvFormat::bf16);
}

void set_counters(benchmark::State& state, std::uint64_t commands, std::uint64_t events) {
  state.counters["commands"] = static_cast<double>(commands);
  state.counters["events"] = static_cast<double>(events);
  state.counters["per_command"] = benchmark::Counter(
      static_cast<double>(commands), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Emit + simulate: the whole cost of one graph, from op graph to command records.
void emit_and_simulate(benchmark::State& state, const std::function<ops::OpGraph()>& build) {
  const Setup& s = setup();
  std::uint64_t commands = 0, events = 0;
  for (auto _ : state) {
    const ops::Lowered lowered = ops::lower(build(), s.chip, {});
    const sim::Trace trace = sim::Simulator(s.chip).run(lowered.program);
    commands = lowered.program.command_count();
    events = trace.events;
    benchmark::DoNotOptimize(trace.end);
  }
  set_counters(state, commands, events);
}

void BM_EmitAndSimulate(benchmark::State& state, models::Phase phase, std::uint64_t batch, std::uint64_t ctx) {
  const auto w = workload(phase, batch, ctx);
  emit_and_simulate(state, [&] { return models::build_attention_block(setup().model, w); });
}

// Simulate only: the event kernel on an already lowered program.
void BM_SimulateOnly(benchmark::State& state, models::Phase phase, std::uint64_t batch, std::uint64_t ctx) {
  const Setup& s = setup();
  const ops::Lowered lowered =
      ops::lower(models::build_attention_block(s.model, workload(phase, batch, ctx)), s.chip, {});
  std::uint64_t events = 0;
  for (auto _ : state) {
    const sim::Trace trace = sim::Simulator(s.chip).run(lowered.program);
    events = trace.events;
    benchmark::DoNotOptimize(trace.end);
  }
  set_counters(state, lowered.program.command_count(), events);
}

// The default `g5sim run`: a whole DeepSeek-V3 decode step, 61 layers, dp = ep = 16, one
// sequence per chip, kv_len 4096.
void BM_WholeDecodeStep(benchmark::State& state, std::uint64_t batch_per_chip, std::uint64_t ctx) {
  models::StepOptions step;
  step.parallelism = models::Parallelism{1, 16, 16};
  const auto w = workload(models::Phase::decode, 16 * batch_per_chip, ctx);
  emit_and_simulate(state, [&] { return models::build_decoder_step(setup().model, w, step); });
}

// A large matmul alone on one core (the Python G5 takes 132.6 ms for 4096^3: 85 emit + 37 simulate).
void BM_Matmul(benchmark::State& state, std::uint64_t m, std::uint64_t n, std::uint64_t k, std::uint32_t cores) {
  hw::Chip chip = setup().chip;
  chip.cores = cores;
  std::uint64_t commands = 0, events = 0;
  for (auto _ : state) {
    ops::OpGraph graph;
    ops::add_op(graph, models::detail::matmul_op("matmul", 1, m, k, n));
    const ops::Lowered lowered = ops::lower(graph, chip, {});
    const sim::Trace trace = sim::Simulator(chip).run(lowered.program);
    commands = lowered.program.command_count();
    events = trace.events;
    benchmark::DoNotOptimize(trace.end);
  }
  set_counters(state, commands, events);
}

using models::Phase;
BENCHMARK_CAPTURE(BM_Matmul, m4096_n4096_k4096_1core, 4096, 4096, 4096, 1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Matmul, m512_n2048_k4096_1core, 512, 2048, 4096, 1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Matmul, m4096_n4096_k4096_64cores, 4096, 4096, 4096, 64)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WholeDecodeStep, v3_61_layers_b1_ctx4k, 1, 4096)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WholeDecodeStep, v3_61_layers_b8_ctx32k, 8, 32768)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EmitAndSimulate, decode_b1_ctx4k, Phase::decode, 1, 4096)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EmitAndSimulate, decode_b32_ctx32k, Phase::decode, 32, 32768)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EmitAndSimulate, decode_b1_ctx128k, Phase::decode, 1, 131072)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EmitAndSimulate, prefill_b1_4k, Phase::prefill, 1, 4096)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateOnly, decode_b1_ctx4k, Phase::decode, 1, 4096)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateOnly, prefill_b1_4k, Phase::prefill, 1, 4096)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
