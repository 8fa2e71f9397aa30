// Speed of g5sim. Google Benchmark, not a test.
//   ./build/tools/g5sim_bench [--benchmark_filter=...] [--benchmark_repetitions=5]
// Step_* run whole DeepSeek-V3 steps as `g5sim run` does (g5sim::simulate: graph, lowering,
// simulation with layer replay or --no-replay, timeline), with counters
//   represented        commands of the step (what --no-replay simulates)
//   simulated          commands the event kernel ran
//   per_represented    wall time per represented command (SI prefix: 20n = 20 ns)
//   per_simulated      wall time per simulated command
//   peak_rss_MB        peak resident memory of one run, measured in a forked child
// The other benchmarks time the kernel alone: emit (graph + lowering) and simulate, per command
// (`per_command`), with `events` of the event kernel per run.

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <malloc.h>
#include <optional>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "api/parallel_for.hpp"
#include "api/simulation.hpp"
#include "explore/deployment_search.hpp"
#include "explore/required_spec.hpp"
#include "explore/sensitivity.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/chip.hpp"
#include "models/attention_block.hpp"
#include "models/decoder_step.hpp"
#include "models/graph_helpers.hpp"
#include "models/model_spec.hpp"
#include "models/workload.hpp"
#include "ops/lowering.hpp"
#include "serving/request_load.hpp"
#include "serving/serve.hpp"
#include "serving/serving_engine.hpp"
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

// Peak resident memory (MB) of `work` run once in a forked child: the parent's own peak would
// mix every workload run so far. The parent first returns the memory it freed to the system, so
// the child starts about as small as a fresh process (its peak counts the pages it inherits).
double peak_rss_mb(const std::function<void()>& work) {
  malloc_trim(0);
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    work();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const long kb = usage.ru_maxrss;
    const ssize_t written = write(fds[1], &kb, sizeof kb);
    _exit(written == sizeof kb ? 0 : 1);
  }
  close(fds[1]);
  long kb = -1;
  const ssize_t got = read(fds[0], &kb, sizeof kb);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return got == sizeof kb ? static_cast<double>(kb) / 1024.0 : -1;
}

// A whole DeepSeek-V3 step through the public API, as `g5sim run` (shipped chip and model).
void BM_Step(benchmark::State& state, g5sim::Request request) {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
  const g5sim::Model model = g5sim::Model::from_file(g5sim::shipped_model_path());
  std::uint64_t represented = 0, simulated = 0;
  for (auto _ : state) {
    const g5sim::Result r = g5sim::simulate(chip, model, request);
    represented = r.command_count;
    simulated = r.simulated_commands;
    benchmark::DoNotOptimize(r.total_ps);
  }
  auto per = [&](std::uint64_t n) {
    return benchmark::Counter(static_cast<double>(n),
                              benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  };
  state.counters["represented"] = static_cast<double>(represented);
  state.counters["simulated"] = static_cast<double>(simulated);
  state.counters["per_represented"] = per(represented);
  state.counters["per_simulated"] = per(simulated);
  state.counters["peak_rss_MB"] = peak_rss_mb([&] { benchmark::DoNotOptimize(g5sim::simulate(chip, model, request)); });
}

g5sim::Request step_request(const std::string& phase, std::optional<std::uint64_t> batch, std::uint64_t ctx,
                            bool replay) {
  g5sim::Request r;
  r.phase = phase;
  r.batch = batch;
  r.ctx = ctx;
  r.replay = replay;
  return r;
}

g5sim::Request mix_request(const std::string& mix) {
  g5sim::Request r;
  r.mix = mix;
  return r;
}

using models::Phase;
// `g5sim run` (decode, one sequence per DP rank, 4096 tokens), replayed and in full.
BENCHMARK_CAPTURE(BM_Step, v3_decode_default, step_request("decode", std::nullopt, 4096, true))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, v3_decode_default_no_replay, step_request("decode", std::nullopt, 4096, false))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, v3_decode_b64_ctx131072, step_request("decode", 64, 131072, true))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, v3_decode_b64_ctx131072_no_replay, step_request("decode", 64, 131072, false))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, v3_prefill_4k, step_request("prefill", std::nullopt, 4096, true))
    ->Unit(benchmark::kMillisecond);
// 65,536-token sequences, one per chip of tp 1 ep 8 dp 8: layer replay with every fa2's causal
// chunk loops cut (loop replay; the 128 heads divide over the 64 cores).
BENCHMARK_CAPTURE(BM_Step, v3_prefill_b8_ctx65536, step_request("prefill", 8, 65536, true))
    ->Unit(benchmark::kMillisecond);
// One 131,072-token prompt (automatic tp 8: 16 heads for 64 cores, each head's tokens striped
// over 4 of them, so loop replay cuts their chunk loops too).
BENCHMARK_CAPTURE(BM_Step, v3_prefill_b1_ctx131072, step_request("prefill", 1, 131072, true))
    ->Unit(benchmark::kMillisecond);
// Mixed steps (--mix): 64 decodes at 4096 beside a 2048-token prompt; one long and 63 short decodes.
BENCHMARK_CAPTURE(BM_Step, v3_mixed_64x1at4096_1x2048at0, mix_request("64x1@4096,1x2048@0"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, v3_mixed_1x1at32768_63x1at1024, mix_request("1x1@32768,63x1@1024"))
    ->Unit(benchmark::kMillisecond);
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

// g5sim serve with the default step cache (auto:1), on the machine's cores, each load cold (an
// empty step cache folder) and warm (the same serve again, its steps read from the folder):
//   DeepSeek-V3 on SG2262: the README's load (40 Poisson requests at 2/s, 256-2,048 in, 32-256
//   out) and 10,000 requests at 6/s of ShareGPT-like lengths (configs/loads/, about 2.09 M output
//   tokens, about 35,000 steps);
//   Qwen3-8B on H100: 10,000 ShareGPT-like requests at 20/s;
// and the engine alone (a step time of 1 ms + 1 us per token) on 10,000 requests, its own cost per step.
struct ServeLoad {
  std::string chip, model;
  std::uint64_t requests = 0;
  double rate = 0;
  std::string input_len, output_len;
  std::string step_cache = "auto:1";
  std::uint64_t jobs = 0;  // 0: the machine's cores
};

void BM_Serve(benchmark::State& state, ServeLoad load, bool warm) {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::chip_path(load.chip));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path(load.model));
  auto shipped = [](const std::string& length) {
    return length.find(".csv") == std::string::npos ? length : g5sim::data_dir() + "/configs/loads/" + length;
  };
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / fmt::format("g5sim-bench-steps-{}", getpid());
  std::filesystem::remove_all(folder);
  g5sim::ServeSettings settings;
  settings.set("rate", load.rate);
  settings.set("requests", load.requests);
  settings.set("input_len", shipped(load.input_len));
  settings.set("output_len", shipped(load.output_len));
  settings.set("step_cache_dir", folder.string());
  settings.set_text("step_cache", load.step_cache);
  if (load.jobs > 0) settings.set("jobs", load.jobs);
  if (warm) g5sim::serve(chip, model, g5sim::Request{}, settings);
  g5sim::ServeReport r;
  for (auto _ : state) {
    if (!warm) {
      state.PauseTiming();
      std::filesystem::remove_all(folder);
      state.ResumeTiming();
    }
    r = g5sim::serve(chip, model, g5sim::Request{}, settings);
  }
  std::filesystem::remove_all(folder);
  state.counters["steps"] = static_cast<double>(r.run.steps.size());
  state.counters["simulated_steps"] = static_cast<double>(r.run.distinct_steps - r.steps_read);
  state.counters["output_tokens"] = static_cast<double>(r.summary.output_tokens);
  state.counters["tpot_p50_ms"] = r.summary.tpot_ms.p50;
  state.counters["tpot_p99_ms"] = r.summary.tpot_ms.p99;
  state.counters["ttft_mean_ms"] = r.summary.ttft_ms.mean;
  if (r.run.auto_cache) state.counters["grid_percent"] = static_cast<double>(r.run.auto_cache->grid_percent);
}
const ServeLoad kReadme{"sg2262", "deepseek-v3", 40, 2.0, "256:2048", "32:256"};
const ServeLoad kV3TenThousand{
    "sg2262", "deepseek-v3", 10'000, 6.0, "sharegpt_like_input.csv", "sharegpt_like_output.csv"};
const ServeLoad kQwenTenThousand{
    "h100", "qwen3-8b", 10'000, 20.0, "sharegpt_like_input.csv", "sharegpt_like_output.csv"};
BENCHMARK_CAPTURE(BM_Serve, v3_sg2262_40_requests_cold, kReadme, false)->Unit(benchmark::kSecond)->Iterations(1);
// The README's load exactly, on one thread and with its next steps simulated ahead on two
// (serving/serving_engine.hpp, "Steps ahead"): the same serve, the time to it.
const ServeLoad kReadmeExactOneThread{"sg2262", "deepseek-v3", 40, 2.0, "256:2048", "32:256", "exact", 1};
const ServeLoad kReadmeExactTwoThreads{"sg2262", "deepseek-v3", 40, 2.0, "256:2048", "32:256", "exact", 2};
BENCHMARK_CAPTURE(BM_Serve, v3_sg2262_40_requests_exact_1_thread, kReadmeExactOneThread, false)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Serve, v3_sg2262_40_requests_exact_2_threads, kReadmeExactTwoThreads, false)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Serve, v3_sg2262_10k_sharegpt_like_cold, kV3TenThousand, false)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Serve, v3_sg2262_10k_sharegpt_like_warm, kV3TenThousand, true)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Serve, qwen3_8b_h100_10k_sharegpt_like_cold, kQwenTenThousand, false)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Serve, qwen3_8b_h100_10k_sharegpt_like_warm, kQwenTenThousand, true)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

void BM_ServeEngineOnly(benchmark::State& state) {
  serving::SyntheticLoad load;
  load.requests = 10'000;
  load.rate = 50;
  load.input = serving::LengthDistribution::range(16, 2048);
  load.output = serving::LengthDistribution::range(1, 400);
  const std::vector<g5sim::ServeRequest> requests = serving::synthetic_requests(load);
  g5sim::ServeSettings settings;
  settings.set("kv_tokens", std::uint64_t{2'000'000});
  const g5sim::ServeSetup setup;
  std::uint64_t steps = 0;
  for (auto _ : state) {
    const g5sim::ServeRun run =
        serving::serve_requests(requests, settings, setup, [](const serving::StepGroups& groups) {
          std::uint64_t tokens = 0;
          for (const auto& g : groups) tokens += g.count * g.q_len;
          return g5sim::StepTime{1'000'000'000 + 1'000'000 * tokens, false, 0, 0};
        });
    steps = run.steps.size();
  }
  state.counters["steps"] = static_cast<double>(steps);
  state.counters["per_step"] = benchmark::Counter(
      static_cast<double>(steps), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ServeEngineOnly)->Unit(benchmark::kMillisecond);

// The design-space commands on the README's journeys, on the machine's cores: g5sim sensitivity
// of a V3 decode step (256 sequences, 4k and 32k, every numeric SG2262 field +-5 %) and g5sim
// solve for 2,000 tokens/s per chip at 30 ms over three fields (512 sequences at 4k).
g5sim::DesignWorkload v3_decode(std::uint64_t batch) {
  g5sim::DesignWorkload w;
  w.chip = g5sim::chip_text_of(g5sim::shipped_chip_path());
  w.base.batch = batch;
  return w;
}

void BM_Sensitivity(benchmark::State& state) {
  g5sim::SensitivitySpec spec;
  spec.workload = v3_decode(256);
  spec.contexts = {4096, 32768};
  spec.jobs = api::default_jobs();
  std::uint64_t runs = 0;
  for (auto _ : state) runs = g5sim::sensitivity(spec).runs;
  state.counters["runs"] = static_cast<double>(runs);
  state.counters["per_run"] = benchmark::Counter(
      static_cast<double>(runs), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Sensitivity)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_Solve(benchmark::State& state) {
  g5sim::SolveSpec spec;
  spec.workload = v3_decode(512);
  spec.targets = {g5sim::parse_target("tokens_per_s_per_chip>=2000"), g5sim::parse_target("step_ms<=30")};
  for (const char* f : {"engines.gdma.bandwidth_gb_per_s", "engines.tiu.clock_mhz", "ddr.bandwidth_gb_per_s"}) {
    spec.vary.push_back(g5sim::parse_varied_field(f));
  }
  spec.jobs = api::default_jobs();
  std::uint64_t runs = 0;
  for (auto _ : state) runs = g5sim::solve(spec).trials.size();
  state.counters["runs"] = static_cast<double>(runs);
}
BENCHMARK(BM_Solve)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

// The README's search: DeepSeek-V3 on SG2262 and H100, 16 clients, 32 requests of 1,024 in and 64
// out, batch caps 4, 8, 16, TPOT p90 <= 50 ms; every sharding that fits.
// g5sim search of DeepSeek-V3 over SG2262 and H100 on the machine's cores, with the search's
// default step cache (bucket:10): the README's 33 points of 32 requests (a coarse pass, then the
// fronts' neighbours), and 198 points of 100 requests (max_seqs 4-128 x max_batched_tokens
// 2,048-8,192 x every deployment that fits, --exhaustive) cold (an empty step cache folder) and
// warm (the same search again, its steps read from the folder).
struct SearchGrid {
  std::string requests, max_seqs, max_batched_tokens;
  bool exhaustive = false;
};

void BM_Search(benchmark::State& state, SearchGrid grid, bool warm) {
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / fmt::format("g5sim-bench-search-{}", getpid());
  std::filesystem::remove_all(folder);
  g5sim::KnobItems items{{"concurrency", "16"},       {"requests", grid.requests},
                         {"input_len", "1024"},       {"output_len", "64"},
                         {"max_seqs", grid.max_seqs}, {"max_batched_tokens", grid.max_batched_tokens},
                         {"slo_tpot_ms", "50"},       {"step_cache_dir", folder.string()}};
  if (grid.exhaustive) items.emplace_back("exhaustive", "true");
  const g5sim::SearchSpec spec = g5sim::search_spec_of(
      {g5sim::Chip::from_file(g5sim::chip_path("sg2262")), g5sim::Chip::from_file(g5sim::chip_path("h100"))},
      g5sim::Model::from_file(g5sim::shipped_model_path()), g5sim::Request{}, items);
  g5sim::SearchSpec threaded = spec;
  threaded.design.set("jobs", std::uint64_t{api::default_jobs()});
  if (warm) g5sim::search(threaded);
  std::size_t points = 0;
  for (auto _ : state) {
    if (!warm) {
      state.PauseTiming();
      std::filesystem::remove_all(folder);
      state.ResumeTiming();
    }
    points = g5sim::search(threaded).points.size();
  }
  std::filesystem::remove_all(folder);
  state.counters["points"] = static_cast<double>(points);
}
const SearchGrid kReadmeSearch{"32", "4,8,16", "8192", false};
const SearchGrid kSearch200{"100", "4,8,16,32,64,128", "2048,4096,8192", true};
BENCHMARK_CAPTURE(BM_Search, readme_33_points, kReadmeSearch, false)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Search, v3_198_points_100_requests_cold, kSearch200, false)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Search, v3_198_points_100_requests_warm, kSearch200, true)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

BENCHMARK_MAIN();
