// Runtime configs (g5sim/runtime.hpp): read strictly, and what a runtime adds to a run and to a
// serve, derived by hand from the chip's own times.

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "explore/scratch_file.hpp"
#include "g5sim/g5sim.hpp"
#include "g5sim/runtime.hpp"
#include "g5sim/sensitivity.hpp"
#include "g5sim/serve.hpp"
#include "test_configs.hpp"

namespace test_runtime {
namespace {

// A runtime's kernels section: every field 0 (or none), efficiencies 1, unless given.
struct Kernels {
  std::string graph_max_batch = "0";
  std::string piecewise_max_tokens = "0";
  std::string graph = "{floor_ns: 0, gap_ns: 0, launch_ns: 0, expert_launch_ns: 0}";
  std::string eager = "{floor_ns: 0, gap_ns: 0, launch_ns: 0, expert_launch_ns: 0}";
  std::string fused = "[]";
  std::string tensor = "1", expert = "1";
  std::string text() const {
    return fmt::format(
        "kernels: {{graph_max_batch: {}, piecewise_max_tokens: {}, graph: {}, eager: {}, fused_kinds: {}, "
        "tensor_efficiency: {}, expert_tensor_efficiency: {}}}\n",
        graph_max_batch, piecewise_max_tokens, graph, eager, fused, tensor, expert);
  }
};

// A runtime of the given sections (the others all zero), as YAML text.
struct Sections {
  std::string kernels = Kernels{}.text();
  std::string collectives =
      "collectives:\n  all_reduce: [{up_to_bytes: null, algorithm: nccl, latency_ns: 0}]\n"
      "  all_to_all: [{up_to_bytes: null, algorithm: nccl, latency_ns: 0}]\n";
  std::string layers = "layers: {host_launch_ns: 0}\n";
  std::string step = "step: {cpu_ns: 0, cpu_ns_per_sequence: 0, cpu_ns_per_token: 0, overlap: false}\n";
  std::string request =
      "request: {before_scheduler_ns: 0, per_input_token_ns: 0, serial_ns: 0, serial_ns_per_input_token: 0, "
      "serial_ns_per_output_token: 0, tokens_behind_inputs: true, "
      "after_token_ns: 0}\n";
  std::string graph = "graph: {kv_append: in-place, lm_head_weights: bf16, prefill_attention: causal}\n";
  std::string scheduler =
      "scheduler: {schedule: mixed, max_seqs: 256, max_batched_tokens: 8192, per_dp_rank: false, "
      "first_token: after-transfer}\n";
  std::string text() const {
    return "name: test\nversion: '1'\nadds: a test\n" + kernels + collectives + layers + step + request + graph +
           scheduler;
  }
};

// The runtime written to a file of its own (simulate() takes a runtime by name or path).
class RuntimeFile {
 public:
  explicit RuntimeFile(const std::string& text) : file_("test runtime") { file_.write(text); }
  const std::string& path() const { return file_.path(); }

 private:
  explore::ScratchFile file_;
};

// A 2-layer prompt of 2,048 tokens at `tp` (no EP, no DP).
// Qwen2.5-1.5B on H100, the model and chip of the tests' small steps.
struct SmallStep {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("qwen2.5-1.5b"));
};

// Its first 2 layers: `batch` sequences at `ctx` in `phase`, over tp chips (no EP, no DP).
g5sim::Request two_layers(const char* phase, std::uint64_t batch, std::uint64_t ctx, std::uint64_t tp = 1) {
  g5sim::Request r;
  r.layers = 2;
  r.phase = phase;
  r.batch = batch;
  r.ctx = ctx;
  r.tp = tp;
  r.ep = r.dp = 1;
  return r;
}

g5sim::Request prompt_of_2048(std::uint64_t tp) { return two_layers("prefill", 1, 2048, tp); }

// The compute floor's charge, by hand, of a runtime whose kernels reach 1/factor of the peak:
// sum_k max(0, factor x c_k - t_k) over the ops `selected` picks (c_k = compute_ns rounded to a
// picosecond), and how many ops it picked.
template <class Selected>
std::pair<std::uint64_t, std::uint64_t> raised_at(const g5sim::Result& alone, std::uint64_t factor, Selected selected) {
  std::uint64_t raised = 0, picked = 0;
  for (const g5sim::OpRecord& op : alone.ops) {
    if (!selected(op)) continue;
    picked += 1;
    const auto reached = factor * static_cast<std::uint64_t>(std::llround(op.compute_ns * 1000));
    const std::uint64_t t = op.op_end_ps - op.op_start_ps;
    raised += reached > t ? reached - t : 0;
  }
  return {raised, picked};
}

std::string error_of(const std::string& text) {
  try {
    (void)g5sim::Runtime::from_yaml(text, "rt");
  } catch (const g5sim::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("runtime: every shipped runtime reads, and none adds nothing", "[runtime]") {
  const std::vector<std::string> shipped = g5sim::shipped_runtimes();
  for (const char* name :
       {"none", "vllm", "vllm-v0", "sglang", "sglang-0.4.1", "trtllm", "sophgo-demo-cpp", "sophgo-demo-python"}) {
    CHECK(std::find(shipped.begin(), shipped.end(), name) != shipped.end());
  }
  for (const std::string& name : shipped) {
    const g5sim::Runtime r = g5sim::Runtime::from_file(g5sim::runtime_path(name));
    CHECK(!r.version.empty());
  }
  const g5sim::Runtime none = g5sim::Runtime::from_file(g5sim::runtime_path("none"));
  CHECK(none.step_cpu_ns(100, 1000) == 0);
  CHECK(none.request_in_ns(100000) == 0);
  CHECK(none.collective("all_reduce", 1 << 30).latency_ns == 0);
}

TEST_CASE("runtime: the one-line summary names the serial front end and a calibrated runtime's band", "[runtime]") {
  // vllm.yaml: 2 ms of front end + 17 ms one request at a time (its serial_ns) and 110 us a
  // streamed token in the same process (serial_ns_per_output_token); not calibrated.
  const g5sim::Runtime vllm = g5sim::Runtime::from_file(g5sim::runtime_path("vllm"));
  CHECK_THAT(
      vllm.summary(),
      Catch::Contains("; front end 2.0 ms + 17.0 ms one request at a time, streaming 110.0 us a token behind them;"));
  CHECK_THAT(vllm.summary(), !Catch::Contains("calibrated"));
  // vllm-v0.calibrated's record: all {rows: 24, low: 0.9671, high: 1.0395}: a measured time is
  // predicted x 1/1.0395 = 0.962 .. x 1/0.9671 = 1.034; no serial part.
  const g5sim::Runtime v0 = g5sim::Runtime::from_file(g5sim::runtime_path("vllm-v0.calibrated"));
  CHECK_THAT(v0.summary(), Catch::EndsWith("; calibrated: 80 % of 24 held-out rows within x0.96..x1.03"));
  CHECK_THAT(v0.summary(), !Catch::Contains("one request at a time"));
  // The step CPU's parts that grow with the step: sglang-0.4.1.yaml's 1 ms + 5 us a sequence (no
  // per-token part), not overlapped under DP attention.
  const g5sim::Runtime dp = g5sim::Runtime::from_file(g5sim::runtime_path("sglang-0.4.1"));
  CHECK_THAT(dp.summary(), Catch::Contains("; step CPU 1.0 ms + 5.0 us a sequence; front end 2.0 ms"));
}

TEST_CASE("runtime: a config is read strictly, errors naming the line and the field", "[runtime]") {
  Sections s;
  CHECK(error_of(s.text()) == "no error");
  Sections typo = s;
  typo.step = "step: {cpu_ns: 0, cpu_ns_per_seqence: 0, cpu_ns_per_token: 0, overlap: false}\n";
  // Line 9 (name, version, adds, kernels, collectives: three lines, layers, then step), column 19.
  CHECK_THAT(error_of(typo.text()),
             Catch::StartsWith("<memory:rt>:9:19: step.cpu_ns_per_seqence: unknown key (did you mean "
                               "'cpu_ns_per_sequence'?)"));
  Sections range = s;
  range.kernels = Kernels{.graph = "{floor_ns: 20000000, gap_ns: 0, launch_ns: 0, expert_launch_ns: 0}"}.text();
  CHECK_THAT(error_of(range.text()), Catch::Contains("kernels.graph.floor_ns") && Catch::Contains("10000000"));
  Sections kind = s;
  kind.kernels = Kernels{.fused = "[kv_cache_reed]"}.text();
  CHECK_THAT(error_of(kind.text()), Catch::Contains("did you mean 'kv_cache_read'"));
  Sections order = s;
  order.collectives =
      "collectives:\n  all_reduce: [{up_to_bytes: 100, algorithm: a, latency_ns: 1}, "
      "{up_to_bytes: 50, algorithm: b, latency_ns: 2}, {up_to_bytes: null, algorithm: c, latency_ns: 3}]\n"
      "  all_to_all: [{up_to_bytes: null, algorithm: nccl, latency_ns: 0}]\n";
  CHECK_THAT(error_of(order.text()), Catch::Contains("collectives.all_reduce[1]") && Catch::Contains("ascend"));
  Sections open_end = s;
  open_end.collectives =
      "collectives:\n  all_reduce: [{up_to_bytes: 100, algorithm: a, latency_ns: 1}]\n"
      "  all_to_all: [{up_to_bytes: null, algorithm: nccl, latency_ns: 0}]\n";
  CHECK_THAT(error_of(open_end.text()), Catch::Contains("the last row must be null"));
  Sections missing = s;
  missing.request =
      "request: {before_scheduler_ns: 0, serial_ns: 0, serial_ns_per_input_token: 0, serial_ns_per_output_token: 0, "
      "tokens_behind_inputs: true, "
      "after_token_ns: 0}\n";
  CHECK_THAT(error_of(missing.text()), Catch::Contains("per_input_token_ns"));
  CHECK_THROWS_WITH(g5sim::runtime_path("sglan"), Catch::Contains("did you mean 'sglang'"));
}

TEST_CASE("runtime: a collective's latency is the first row of its table that holds its message", "[runtime]") {
  Sections s;
  s.collectives =
      "collectives:\n  all_reduce: [{up_to_bytes: 32768, algorithm: one-shot, latency_ns: 5000}, "
      "{up_to_bytes: null, algorithm: ring, latency_ns: 30000}]\n"
      "  all_to_all: [{up_to_bytes: null, algorithm: deepep, latency_ns: 40000}]\n";
  const g5sim::Runtime r = g5sim::Runtime::from_yaml(s.text(), "rt");
  CHECK(r.collective("all_reduce", 32768).latency_ns == 5000);
  CHECK(r.collective("all_reduce", 32769).latency_ns == 30000);
  CHECK(r.collective("all_to_all", 1).algorithm == "deepep");
}

TEST_CASE("runtime: a step of N kernels costs the chip's time, each kernel raised to the floor, plus N gaps",
          "[runtime][sim]") {
  // Qwen2.5-1.5B, 2 layers, one chip (no collectives), decode batch 4 at 1,024 on H100; eager
  // costs (graph_max_batch 0) floor f = 500 us, longer than every op of this step, and gap g =
  // 3 us, nothing fused: the runtime adds sum_k (f - t_k) + N x g over the N ops of the run
  // without it, exactly.
  const SmallStep small;
  const g5sim::Chip& chip = small.chip;
  const g5sim::Model& model = small.model;
  const g5sim::Request base = two_layers("decode", 4, 1024);
  const g5sim::Result alone = g5sim::simulate(chip, model, base);
  Sections s;
  s.kernels = Kernels{.graph = "{floor_ns: 1, gap_ns: 1, launch_ns: 0, expert_launch_ns: 0}",
                      .eager = "{floor_ns: 500000, gap_ns: 3000, launch_ns: 0, expert_launch_ns: 0}"}
                  .text();
  const RuntimeFile file(s.text());
  g5sim::Request with = base;
  with.runtime = file.path();
  const g5sim::Result charged = g5sim::simulate(chip, model, with);
  std::uint64_t raised = 0;
  for (const g5sim::OpRecord& op : alone.ops) {
    REQUIRE(op.op_end_ps - op.op_start_ps < 500'000'000);
    raised += 500'000'000 - (op.op_end_ps - op.op_start_ps);
  }
  const std::uint64_t n = alone.ops.size();
  CHECK(charged.total_ps == alone.total_ps);  // the chip's timeline is the chip's
  CHECK(charged.runtime_parts.kernels == n);
  CHECK(charged.runtime_parts.kernel_mode == "eager");
  CHECK(charged.runtime_parts.kernel_floor_ps == raised);
  CHECK(charged.runtime_parts.kernel_gap_ps == n * 3'000'000);
  CHECK(charged.step_ps == alone.total_ps + raised + n * 3'000'000);
  CHECK(charged.chip_ps == alone.total_ps);
  // A decode batch of 4 within graph_max_batch 4 takes the graph pair (1 ns, 1 ns) instead.
  Sections g = s;
  g.kernels = Kernels{.graph_max_batch = "4",
                      .graph = "{floor_ns: 0, gap_ns: 1, launch_ns: 0, expert_launch_ns: 0}",
                      .eager = "{floor_ns: 500000, gap_ns: 3000, launch_ns: 0, expert_launch_ns: 0}",
                      .fused = "[kv_cache_read]"}
                  .text();
  const RuntimeFile graphed(g.text());
  with.runtime = graphed.path();
  const g5sim::Result replayed = g5sim::simulate(chip, model, with);
  const auto reads = static_cast<std::uint64_t>(std::count_if(
      alone.ops.begin(), alone.ops.end(), [](const g5sim::OpRecord& o) { return o.kind == "kv_cache_read"; }));
  CHECK(reads == 2);  // one a layer
  CHECK(replayed.runtime_parts.kernel_mode == "graph");
  CHECK(replayed.runtime_parts.kernels == n - reads);
  CHECK(replayed.step_ps == alone.total_ps + (n - reads) * 1'000);
}

TEST_CASE("runtime: a prompt within the piecewise graphs' tokens runs its attention eager, the rest graphed",
          "[runtime][sim]") {
  // Qwen2.5-1.5B, 2 layers, a 256-token prompt on one H100; piecewise_max_tokens 256, graph pair
  // gap 1 ns, eager pair gap 3 us, no floors, nothing fused. The attention's kernels (each layer's
  // kv_cache_write and fa2: A of them) take the eager gap, the other N - A the graph gap:
  //   runtime = A x 3,000,000 + (N - A) x 1,000 ps.
  // One token more than the bound: every kernel eager, N x 3,000,000 ps.
  const SmallStep small;
  const g5sim::Chip& chip = small.chip;
  const g5sim::Model& model = small.model;
  g5sim::Request base = two_layers("prefill", 1, 256);
  const g5sim::Result alone = g5sim::simulate(chip, model, base);
  const std::uint64_t n = alone.ops.size();
  const auto attention =
      static_cast<std::uint64_t>(std::count_if(alone.ops.begin(), alone.ops.end(), [](const g5sim::OpRecord& o) {
        return o.kind == "kv_cache_write" || o.kind == "kv_cache_read" || o.kind == "fa2" || o.kind == "fa2_combine";
      }));
  CHECK(attention == 4);  // a prefill layer: kv_cache_write and fa2, 2 layers
  Sections s;
  s.kernels = Kernels{.graph_max_batch = "512",
                      .piecewise_max_tokens = "256",
                      .graph = "{floor_ns: 0, gap_ns: 1, launch_ns: 0, expert_launch_ns: 0}",
                      .eager = "{floor_ns: 0, gap_ns: 3000, launch_ns: 0, expert_launch_ns: 0}"}
                  .text();
  const RuntimeFile file(s.text());
  g5sim::Request with = base;
  with.runtime = file.path();
  const g5sim::Result piecewise = g5sim::simulate(chip, model, with);
  CHECK(piecewise.runtime_parts.kernel_mode == "piecewise");
  CHECK(piecewise.runtime_parts.kernels == n);
  CHECK(piecewise.runtime_parts.kernel_gap_ps == attention * 3'000'000 + (n - attention) * 1'000);
  CHECK(piecewise.step_ps == alone.total_ps + attention * 3'000'000 + (n - attention) * 1'000);
  base.ctx = 257;
  with.ctx = 257;
  const g5sim::Result longer = g5sim::simulate(chip, model, base);
  const g5sim::Result eager = g5sim::simulate(chip, model, with);
  CHECK(eager.runtime_parts.kernel_mode == "eager");
  CHECK(eager.step_ps == longer.total_ps + longer.ops.size() * 3'000'000);
}

TEST_CASE("runtime: a host issuing kernels slower than they run bounds the step at N launches", "[runtime][sim]") {
  // Qwen2.5-1.5B, 2 layers, a decode batch of 4 on one H100, every op launched eagerly (no graphs,
  // nothing fused, no floor, no gap). The host issues kernel k (from 0) at (k + 1) x L from the
  // step's start and the device starts it then or when the previous one ends, whichever is later.
  // With L = 1 ms, longer than every op: each kernel waits for its launch, so the last ends at
  // N x L + t_last, and the waits are N x L + t_last - sum_k t_k.
  const SmallStep small;
  const g5sim::Chip& chip = small.chip;
  const g5sim::Model& model = small.model;
  const g5sim::Request base = two_layers("decode", 4, 1024);
  const g5sim::Result alone = g5sim::simulate(chip, model, base);
  std::uint64_t busy = 0;
  for (const g5sim::OpRecord& op : alone.ops) {
    REQUIRE(op.op_end_ps - op.op_start_ps < 1'000'000'000);
    REQUIRE(op.op_end_ps - op.op_start_ps > 1'000);
    busy += op.op_end_ps - op.op_start_ps;
  }
  const std::uint64_t n = alone.ops.size();
  const std::uint64_t last = alone.ops.back().op_end_ps - alone.ops.back().op_start_ps;
  const auto charged = [&](const std::string& launch_ns) {
    Sections s;
    s.kernels = Kernels{.eager = "{floor_ns: 0, gap_ns: 0, launch_ns: " + launch_ns + ", expert_launch_ns: 0}"}.text();
    const RuntimeFile file(s.text());
    g5sim::Request with = base;
    with.runtime = file.path();
    return g5sim::simulate(chip, model, with);
  };
  const g5sim::Result host_bound = charged("1000000");
  CHECK(host_bound.runtime_parts.kernels == n);
  CHECK(host_bound.runtime_parts.kernel_launch_ps == n * 1'000'000'000 + last - busy);
  CHECK(host_bound.step_ps == alone.total_ps + n * 1'000'000'000 + last - busy);
  CHECK(host_bound.chip_ps == alone.total_ps);
  // L = 1 ns, shorter than every op: only the first kernel waits for its launch, 1 ns.
  CHECK(charged("1").runtime_parts.kernel_launch_ps == 1'000);
  // 0: no wait at all (every shipped runtime's graphs).
  CHECK(charged("0").step_ps == alone.total_ps);
  // Qwen3-30B-A3B's routed experts (experts_gate_up, experts_swiglu, experts_down: three ops a layer) are issued in
  // expert_launch = 3 ms each, every other op in 1 ms: the host's clock is the sum of the ops'
  // launches, and the last kernel still waits for its own.
  const g5sim::Model moe = g5sim::Model::from_file(g5sim::model_path("qwen3-30b-a3b"));
  const g5sim::Result moe_alone = g5sim::simulate(chip, moe, base);
  std::uint64_t launches = 0, moe_busy = 0, experts = 0;
  for (const g5sim::OpRecord& op : moe_alone.ops) {
    REQUIRE(op.op_end_ps - op.op_start_ps < 1'000'000'000);
    const bool expert = op.name.rfind("experts_", 0) == 0;
    experts += expert;
    launches += expert ? 3'000'000'000 : 1'000'000'000;
    moe_busy += op.op_end_ps - op.op_start_ps;
  }
  REQUIRE(experts == 2 * 3);
  const std::uint64_t moe_last = moe_alone.ops.back().op_end_ps - moe_alone.ops.back().op_start_ps;
  Sections split;
  split.kernels = Kernels{.eager = "{floor_ns: 0, gap_ns: 0, launch_ns: 1000000, expert_launch_ns: 3000000}"}.text();
  const RuntimeFile split_file(split.text());
  g5sim::Request moe_with = base;
  moe_with.runtime = split_file.path();
  CHECK(g5sim::simulate(chip, moe, moe_with).runtime_parts.kernel_launch_ps == launches + moe_last - moe_busy);
  // The field is required, and named when missing.
  Sections missing;
  missing.kernels = Kernels{.eager = "{floor_ns: 0, gap_ns: 0}"}.text();
  CHECK_THAT(error_of(missing.text()), Catch::Contains("kernels.eager.launch_ns"));
}

TEST_CASE("runtime: its matrix kernels reach at most tensor_efficiency of the chip's peak", "[runtime][sim]") {
  // Qwen2.5-1.5B, 2 layers, a 2,048-token prefill on one H100: its matrix ops (matmul, fa2) are
  // compute-bound. A runtime without floors or gaps and tensor_efficiency 1/4 raises each of them
  // to 4 x its arithmetic at the chip's peak (c_k = compute_ns, rounded to a picosecond), where
  // that is longer than the chip's time t_k: the charge is sum_k max(0, 4 c_k - t_k) over them;
  // every other op (norms, rope, the cache write) is left alone.
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("qwen2.5-1.5b"));
  const g5sim::Request base = prompt_of_2048(1);
  const g5sim::Result alone = g5sim::simulate(chip, model, base);
  const auto [raised, matrix] =
      raised_at(alone, 4, [](const g5sim::OpRecord& op) { return op.kind == "matmul" || op.kind == "fa2"; });
  REQUIRE(matrix == 2 * 5 + 1);  // a layer: q/k/v fused, attention, o, gate/up, down; then lm_head
  REQUIRE(raised > 0);
  Sections s;
  s.kernels = Kernels{.tensor = "0.25"}.text();
  const RuntimeFile file(s.text());
  g5sim::Request with = base;
  with.runtime = file.path();
  const g5sim::Result r = g5sim::simulate(chip, model, with);
  CHECK(r.total_ps == alone.total_ps);
  CHECK(r.runtime_parts.kernel_compute_ps == raised);
  CHECK(r.step_ps == alone.total_ps + raised);
  // At 1, the chip's own kernels: nothing charged.
  Sections one = s;
  one.kernels = Kernels{}.text();
  const RuntimeFile own(one.text());
  with.runtime = own.path();
  CHECK(g5sim::simulate(chip, model, with).runtime_parts.kernel_compute_ps == 0);
  // Below its documented floor of 0.05, the reader refuses it, naming the field.
  Sections low = s;
  low.kernels = Kernels{.tensor = "0.01"}.text();
  CHECK_THAT(error_of(low.text()), Catch::Contains("kernels.tensor_efficiency"));
}

TEST_CASE("runtime: the routed experts' kernels reach at most expert_tensor_efficiency", "[runtime][sim]") {
  // Qwen3-30B-A3B, 2 layers, a 2,048-token prefill at TP2 (no EP: each expert's width split in
  // two) on H100. A runtime without floors or gaps, the dense matrices at the chip's own
  // efficiency (1) and the routed experts' grouped matrices (experts_gate_up, experts_down: a
  // fused MoE kernel over the split experts) at 1/5: the charge is sum_k max(0, 5 c_k - t_k) over
  // those two ops of each layer alone (c_k = compute_ns, rounded to a picosecond). Under EP2 (DP2)
  // instead the chip runs whole experts: they take tensor_efficiency (1), nothing is charged.
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("qwen3-30b-a3b"));
  const g5sim::Request base = prompt_of_2048(2);
  const g5sim::Result alone = g5sim::simulate(chip, model, base);
  const auto [raised, experts] = raised_at(
      alone, 5, [](const g5sim::OpRecord& op) { return op.name == "experts_gate_up" || op.name == "experts_down"; });
  REQUIRE(experts == 2 * 2);
  REQUIRE(raised > 0);
  Sections s;
  s.kernels = Kernels{.expert = "0.2"}.text();
  const RuntimeFile file(s.text());
  g5sim::Request with = base;
  with.runtime = file.path();
  const g5sim::Result r = g5sim::simulate(chip, model, with);
  CHECK(r.runtime_parts.kernel_compute_ps == raised);
  CHECK(r.step_ps == alone.total_ps + raised);
  with.tp = 1;
  with.ep = with.dp = with.batch = 2;  // a prompt per DP rank
  CHECK(g5sim::simulate(chip, model, with).runtime_parts.kernel_compute_ps == 0);
  Sections low = s;
  low.kernels = Kernels{.expert = "0"}.text();
  CHECK_THAT(error_of(low.text()), Catch::Contains("kernels.expert_tensor_efficiency"));
}

TEST_CASE("runtime: collectives, the step's CPU and host launches are charged as stated", "[runtime][sim]") {
  // Qwen2.5-1.5B, 2 layers, tp 2: two all-reduces a layer of 1 x 1,536 x 2 B = 3,072 B messages.
  const SmallStep small;
  const g5sim::Chip& chip = small.chip;
  const g5sim::Model& model = small.model;
  const g5sim::Request base = two_layers("decode", 3, 512, 2);
  Sections s;
  s.collectives =
      "collectives:\n  all_reduce: [{up_to_bytes: 1000, algorithm: tiny, latency_ns: 1}, "
      "{up_to_bytes: 10000, algorithm: one-shot, latency_ns: 7000}, {up_to_bytes: null, algorithm: ring, "
      "latency_ns: 30000}]\n  all_to_all: [{up_to_bytes: null, algorithm: deepep, latency_ns: 40000}]\n";
  // Scheduler CPU 100 us + 10 us a sequence + 1 us a token, not overlapped: 100 + 3 x 10 + 3 x 1 = 133 us.
  s.step = "step: {cpu_ns: 100000, cpu_ns_per_sequence: 10000, cpu_ns_per_token: 1000, overlap: false}\n";
  const RuntimeFile file(s.text());
  g5sim::Request with = base;
  with.runtime = file.path();
  const g5sim::Result r = g5sim::simulate(chip, model, with);
  CHECK(r.runtime_parts.collectives == 4);
  CHECK(r.runtime_parts.collective_ps == 4 * 7'000'000);
  CHECK(r.runtime_parts.step_cpu_ps == 133'000'000);
  CHECK(r.step_ps == r.total_ps + 4 * 7'000'000 + 133'000'000);
  // Overlapped, the CPU hides behind the step's own device time (well above 133 us here).
  Sections o = s;
  o.step = "step: {cpu_ns: 100000, cpu_ns_per_sequence: 10000, cpu_ns_per_token: 1000, overlap: true}\n";
  const RuntimeFile overlapped(o.text());
  with.runtime = overlapped.path();
  REQUIRE(r.total_ps > 133'000'000);
  CHECK(g5sim::simulate(chip, model, with).runtime_parts.step_cpu_ps == 0);
  // A host launch of 200 us before each layer: 2 launches on the chip's timeline, reported apart.
  Sections l = s;
  l.layers = "layers: {host_launch_ns: 200000}\n";
  const RuntimeFile launched(l.text());
  with.runtime = launched.path();
  const g5sim::Result h = g5sim::simulate(chip, model, with);
  CHECK(h.host_launch_ns == 200'000);
  CHECK(h.runtime_parts.layer_launches == 2);
  CHECK(h.runtime_parts.layer_launch_ps == 400'000'000);
  CHECK(h.chip_ps == h.total_ps - 400'000'000);
  // The option given overrides the runtime's.
  with.host_launch_ns = 0;
  CHECK(g5sim::simulate(chip, model, with).runtime_parts.layer_launches == 0);
}

TEST_CASE("runtime: its graph choices fill the options not given, where they apply", "[runtime][sim]") {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::chip_path("bm1684x"));
  const g5sim::Model gqa = g5sim::Model::from_file(g5sim::model_path("qwen1.5-7b"));
  const g5sim::Model mla = g5sim::Model::from_file(g5sim::model_path("deepseek-v2-lite"));
  g5sim::Request r;
  r.layers = 1;
  r.ctx = 512;
  r.batch = 1;
  r.tp = r.ep = r.dp = 1;
  r.runtime = "sophgo-demo-cpp";
  const g5sim::Result demo = g5sim::simulate(chip, gqa, r);
  CHECK(demo.kv_append == "concat");
  CHECK(demo.lm_head_weights == "projections");
  CHECK(demo.host_launch_ns == 200'000);
  // An MLA model reads its latent cache in place: the runtime's concat does not apply to it.
  CHECK(g5sim::simulate(chip, mla, r).kv_append == "in-place");
  r.kv_append = "in-place";
  CHECK(g5sim::simulate(chip, gqa, r).kv_append == "in-place");
}

TEST_CASE("runtime: one request served: TTFT = prefill + o + r and TPOT = step + o", "[runtime][serve][sim]") {
  // Qwen2.5-1.5B, 2 layers, H100, one request of 256 in and 3 out. The runtime charges a
  // scheduler step o = 300 us (not overlapped) and a front end r = 2 ms before the scheduler + 1 us
  // a prompt token (256 us) + 50 us after each token; nothing per kernel.
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("qwen2.5-1.5b"));
  Sections s;
  s.step = "step: {cpu_ns: 300000, cpu_ns_per_sequence: 0, cpu_ns_per_token: 0, overlap: false}\n";
  s.request =
      "request: {before_scheduler_ns: 2000000, per_input_token_ns: 1000, serial_ns: 0, serial_ns_per_input_token: 0, "
      "serial_ns_per_output_token: 0, tokens_behind_inputs: true, "
      "after_token_ns: 50000}\n";
  const RuntimeFile file(s.text());
  g5sim::Request base;
  base.layers = 2;
  base.runtime = file.path();
  const g5sim::ServeRequest only{"only", 0, 256, 3};
  const g5sim::ServeReport report = g5sim::serve(chip, model, base, {only}, g5sim::ServeSettings{});
  auto step_ps = [&](const std::string& mix) {
    g5sim::Request r;
    r.layers = 2;
    r.mix = mix;
    r.tp = r.ep = r.dp = 1;
    return g5sim::simulate(chip, model, r).total_ps;
  };
  constexpr std::uint64_t o = 300'000'000, r = 2'000'000'000ULL + 256'000'000 + 50'000'000;
  const g5sim::RequestOutcome& q = report.run.requests.at(0);
  CHECK(q.first_token_ps - q.arrival_ps == step_ps("1x256@0") + o + r);
  CHECK(q.itl_ps == std::vector<std::uint64_t>{step_ps("1x1@256") + o, step_ps("1x1@257") + o});
  // TPOT = (finish - first token) / 2: the two decode steps and their o each.
  CHECK(q.finish_ps - q.first_token_ps == step_ps("1x1@256") + step_ps("1x1@257") + 2 * o);
  // The split: TTFT's runtime part is r + o (the front end and the prompt step's CPU), TPOT's is o.
  CHECK(q.ttft_runtime_ps == r + o);
  CHECK(q.decode_runtime_ps == 2 * o);
  CHECK(report.summary.has_runtime);
  CHECK(report.summary.ttft_runtime_ms == Approx(static_cast<double>(r + o) / 1e9).epsilon(1e-12));
  CHECK(report.summary.tpot_runtime_ms == Approx(static_cast<double>(o) / 1e9).epsilon(1e-12));
}

}  // namespace test_runtime

namespace test_runtime {

// The serial front end's tests: Qwen2.5-1.5B on 2 layers of an H100, under a runtime whose
// `request:` section is given (nothing else charged), and its steps alone.
struct TwoLayerServe {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("qwen2.5-1.5b"));
  g5sim::ServeReport serve(const std::string& request, const std::vector<g5sim::ServeRequest>& requests) const {
    Sections s;
    s.request = request;
    const RuntimeFile file(s.text());
    g5sim::Request base;
    base.layers = 2;
    base.runtime = file.path();
    return g5sim::serve(chip, model, base, requests, g5sim::ServeSettings{});
  }
  std::uint64_t step_ps(const std::string& mix) const {
    g5sim::Request step;
    step.layers = 2;
    step.tp = step.ep = step.dp = 1;
    step.mix = mix;
    return g5sim::simulate(chip, model, step).total_ps;
  }
};

TEST_CASE("runtime: a burst queues at the serial front end, one request at a time", "[runtime][serve][sim]") {
  // Three requests of 64 prompt tokens and one output token, all sent at 0; the front end's serial
  // part takes 10 ms + 10 us a prompt token = 10.64 ms a request. One event loop for inputs and
  // tokens (tokens_behind_inputs): a preprocessed request goes on to the scheduler when the loop
  // comes back to it, behind the inputs that reached it before: all three at 3 x 10.64 = 31.92
  // ms, prefilled together in one step of 3 x 64 tokens (P3). TTFT = 31.92 ms + P3 for each.
  const TwoLayerServe t;
  const std::vector<g5sim::ServeRequest> burst{{"a", 0, 64, 1}, {"b", 0, 64, 1}, {"c", 0, 64, 1}};
  const g5sim::ServeReport report = t.serve(
      "request: {before_scheduler_ns: 0, per_input_token_ns: 0, serial_ns: 10000000, serial_ns_per_input_token: "
      "10000, serial_ns_per_output_token: 0, tokens_behind_inputs: true, after_token_ns: 0}\n",
      burst);
  const std::uint64_t together = t.step_ps("3x64@0");
  const std::uint64_t prefill = t.step_ps("1x64@0");
  REQUIRE(prefill < 10'640'000'000ULL);
  constexpr std::uint64_t inputs_done = 3 * 10'640'000'000ULL;
  const std::vector<g5sim::RequestOutcome>& q = report.run.requests;
  for (const g5sim::RequestOutcome& r : q) CHECK(r.first_token_ps - r.arrival_ps == inputs_done + together);
  // The split: the 31.92 ms at the front end are the runtime's, the prompts' step the chip's.
  CHECK(q.at(0).ttft_runtime_ps == inputs_done);
  // Tokens in a process of their own (tokens_behind_inputs false, SGLang's detokenizer): nothing
  // holds them, request k's token leaves at k x 10.64 ms + P.
  const g5sim::ServeReport apart = t.serve(
      "request: {before_scheduler_ns: 0, per_input_token_ns: 0, serial_ns: 10000000, serial_ns_per_input_token: "
      "10000, serial_ns_per_output_token: 0, tokens_behind_inputs: false, after_token_ns: 0}\n",
      burst);
  for (std::uint64_t k = 1; k <= 3; ++k) {
    const g5sim::RequestOutcome& r = apart.run.requests.at(k - 1);
    CHECK(r.first_token_ps - r.arrival_ps == k * 10'640'000'000ULL + prefill);
  }
}

TEST_CASE("runtime: tokens stream one at a time through the serial front end", "[runtime][serve][sim]") {
  // One request of 256 in and 4 out on 2 layers of Qwen2.5-1.5B (H100); the runtime charges
  // nothing but 1 ms of its serial front end for each output token. Its prefill step takes P and
  // each decode step D_k < 1 ms, so the front end is the bottleneck: token 1 reaches it at P and
  // leaves at P + 1 ms; token k reaches it before token k-1 has left and leaves 1 ms after it.
  // TTFT = P + 1 ms, every ITL 1 ms, TPOT 1 ms, exactly; all of the wait is the runtime's.
  const TwoLayerServe t;
  const g5sim::ServeReport report = t.serve(
      "request: {before_scheduler_ns: 0, per_input_token_ns: 0, serial_ns: 0, serial_ns_per_input_token: 0, "
      "serial_ns_per_output_token: 1000000, tokens_behind_inputs: true, after_token_ns: 0}\n",
      {{"only", 0, 256, 4}});
  const std::uint64_t prefill = t.step_ps("1x256@0");
  REQUIRE(t.step_ps("1x1@258") < 1'000'000'000ULL);  // the longest decode step
  constexpr std::uint64_t c = 1'000'000'000;
  const g5sim::RequestOutcome& q = report.run.requests.at(0);
  CHECK(q.first_token_ps - q.arrival_ps == prefill + c);
  CHECK(q.itl_ps == std::vector<std::uint64_t>{c, c, c});
  CHECK(q.finish_ps - q.first_token_ps == 3 * c);
  CHECK(q.ttft_runtime_ps == c);
  // Decode: the chip's three steps (D_1 + D_2 + D_3) fall inside the 3 ms; the rest is the front end's.
  const std::uint64_t decode = t.step_ps("1x1@256") + t.step_ps("1x1@257") + t.step_ps("1x1@258");
  CHECK(q.decode_runtime_ps == 3 * c - decode);
}

}  // namespace test_runtime

#include <filesystem>

#include "explore/validation/calibration.hpp"
#include "explore/validation/measured_rows.hpp"
#include "explore/validation/validation_report.hpp"

namespace test_runtime {

TEST_CASE("calibrate --runtime recovers a front end from serves measured on the simulator", "[runtime][calibrate]") {
  // The truth: a front end of 5 ms before the scheduler. Two serve rows "measured" with it (TTFT
  // and TPOT of 3 closed-loop requests, Qwen2.5-1.5B on 2 layers of an H100); the rows name a
  // runtime that says 1 ms. The fit of request.before_scheduler_ns over the two rows finds 5 ms
  // again (TTFT moves with it one for one; TPOT does not move).
  namespace v = explore::validation;
  const auto dir = std::filesystem::temp_directory_path() / "g5sim_test_runtime_calibrate";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Sections truth, start;
  truth.request =
      "request: {before_scheduler_ns: 5000000, per_input_token_ns: 0, serial_ns: 0, serial_ns_per_input_token: 0, "
      "serial_ns_per_output_token: 0, tokens_behind_inputs: true, "
      "after_token_ns: 0}\n";
  start.request =
      "request: {before_scheduler_ns: 1000000, per_input_token_ns: 0, serial_ns: 0, serial_ns_per_input_token: 0, "
      "serial_ns_per_output_token: 0, tokens_behind_inputs: true, "
      "after_token_ns: 0}\n";
  std::ofstream(dir / "truth.yaml") << truth.text();
  std::ofstream(dir / "rt.yaml") << start.text();
  const std::string header =
      "id,hardware,chip,model,phase,batch,ctx,q_len,weight_dtype,weight_group,kv_dtype,tp,ep,dp,cores,workload,"
      "options,metric,measured,kind,source,note,exclude\n";
  const auto row = [&](const char* id, const char* runtime, const char* metric, double measured) {
    return fmt::format(
        "{},test,h100,qwen2.5-1.5b,,,,,,,,1,1,1,,serve,concurrency=1 requests=3 input_len=128 output_len=4 "
        "layers=2 runtime={},{},{:.17g},U,test,,\n",
        id, (dir / runtime).string(), metric, measured);
  };
  std::ofstream(dir / "probe.csv") << header + row("a", "truth.yaml", "ttft_ms", 1) +
                                          row("b", "truth.yaml", "tpot_ms", 1);
  v::ValidateOptions calibrated;
  calibrated.calibrated = true;  // as the fit runs each row: on its calibrated chip
  const v::ValidationReport probe = v::validate_table(v::read_measured_file((dir / "probe.csv").string()), calibrated);
  REQUIRE(probe.rows.size() == 2);
  REQUIRE(probe.rows[0].status == "ok");
  std::ofstream(dir / "measured.csv") << header + row("a", "rt.yaml", "ttft_ms", probe.rows[0].predicted) +
                                             row("b", "rt.yaml", "tpot_ms", probe.rows[1].predicted);
  v::CalibrationOptions options;
  options.fit = {"request.before_scheduler_ns=0:20000000"};
  options.leave_one_out = false;
  const v::CalibrationResult r =
      v::calibrate_runtime((dir / "rt.yaml").string(), v::read_measured_file((dir / "measured.csv").string()), options);
  REQUIRE(r.fields.size() == 1);
  // Within 1 us of 5 ms: the fit stops when a step changes the error by less than 1e-6.
  CHECK(std::abs(r.fields[0].fitted - 5'000'000) < 1'000);
  CHECK(r.mape_after < 0.1);
  CHECK(r.calibrated_yaml.find("calibration:") != std::string::npos);
  // The written config reads back (its record is not read).
  CHECK(g5sim::Runtime::from_yaml(r.calibrated_yaml, "calibrated").before_scheduler_ns == r.fields[0].fitted);
  std::filesystem::remove_all(dir);
}

TEST_CASE("sensitivity varies a runtime's fields as it varies the chip's", "[runtime][sensitivity]") {
  // One V2-Lite layer on the DDR-bound tiny chip under a runtime whose only cost is 1 ms of
  // scheduler CPU a step, not overlapped: step_ms = chip + 1 ms. Moved by 5 %, the field is
  // 950,000 and 1,050,000 ns and the step chip + 0.95 ms and chip + 1.05 ms, exactly (integer ps);
  // the elasticity ln(M+ / M-) / ln(1.05 / 0.95).
  Sections s;
  s.step = "step: {cpu_ns: 1000000, cpu_ns_per_sequence: 0, cpu_ns_per_token: 0, overlap: false}\n";
  const RuntimeFile rt(s.text());
  g5sim::SensitivitySpec spec;
  spec.workload.chip = {test_configs::tiny_chip(4, 10, 4), "ddr-bound"};
  spec.workload.model = g5sim::Model::from_yaml(test_configs::kDeepSeekV2Lite, "v2-lite-test");
  spec.workload.base.layers = 1;
  spec.workload.base.tp = spec.workload.base.ep = spec.workload.base.dp = 1;
  spec.workload.base.ctx = 4096;
  spec.workload.base.runtime = rt.path();
  spec.fields = {"runtime.step.cpu_ns", "ddr.bandwidth_gb_per_s"};
  const g5sim::Result base = g5sim::simulate(g5sim::Chip::from_yaml(spec.workload.chip.text, "ddr-bound"),
                                             spec.workload.model, spec.workload.base);
  REQUIRE(base.step_ps == base.chip_ps + 1'000'000'000);
  const g5sim::SensitivityReport r = g5sim::sensitivity(spec);
  CHECK(r.runtime == "test 1");
  CHECK(r.runs == 5);  // the base run and two per field
  REQUIRE(r.points.size() == 1);
  const auto& fields = r.points[0].fields;
  const auto cpu = std::find_if(fields.begin(), fields.end(),
                                [](const g5sim::FieldSensitivity& f) { return f.field == "runtime.step.cpu_ns"; });
  REQUIRE(cpu != fields.end());
  CHECK(r.points[0].metric_base == static_cast<double>(base.step_ps) / 1e9);
  CHECK(cpu->value == 1'000'000);
  CHECK(cpu->low_value == 950'000);
  CHECK(cpu->high_value == 1'050'000);
  CHECK(cpu->metric_low == static_cast<double>(base.chip_ps + 950'000'000) / 1e9);
  CHECK(cpu->metric_high == static_cast<double>(base.chip_ps + 1'050'000'000) / 1e9);
  CHECK(cpu->method == "central");
  CHECK(*cpu->elasticity == Approx(std::log(*cpu->metric_high / *cpu->metric_low) / std::log(1.05 / 0.95)));
  // The chip's field is still the chip's: the DDR sets the chip's part of the step only.
  CHECK(fields[0].field == "ddr.bandwidth_gb_per_s");
  CHECK(*fields[0].elasticity < 0);
  // A runtime's field without a runtime: one line naming the fix.
  spec.workload.base.runtime = "";
  CHECK_THROWS_WITH(g5sim::sensitivity(spec),
                    "fields: runtime.step.cpu_ns is a runtime's field, but the run names no runtime (give --runtime "
                    "NAME|PATH, g5sim list shows them)");
}

TEST_CASE("runtime: a calibrated runtime's bands reach the serve, per metric", "[runtime][serve][bands]") {
  // The record g5sim calibrate --runtime writes: ttft and tpot bands of their own, no throughput
  // band (it takes all's). A time t measured within [t / high, t / low], a rate r within [r low,
  // r high]: TTFT x[1 / 1.25, 1 / 0.8] = x[0.8, 1.25], TPOT x[1 / 1.1, 1 / 0.95], throughput
  // (all: 0.9 .. 1.2) x[0.9, 1.2].
  Sections s;
  const std::string record =
      "calibration:\n  g5sim: '0'\n  date: d\n  base: b\n  measured: m\n  rows: [a]\n  fitted: []\n"
      "  mape_before_pct: 30\n  mape_after_pct: 10\n  leave_one_out_mape_pct: 12\n"
      "  bands:\n    coverage: 0.8\n    basis: 2 folds\n    ttft: {rows: 7, low: 0.8, high: 1.25}\n"
      "    tpot: {rows: 6, low: 0.95, high: 1.1}\n    all: {rows: 21, low: 0.9, high: 1.2}\n";
  const g5sim::Runtime rt = g5sim::Runtime::from_yaml(s.text() + record, "rt");
  REQUIRE(rt.bands.size() == 3);
  CHECK(rt.band_basis == "2 folds");
  CHECK(rt.band_for("throughput")->kind == "all");
  const std::optional<g5sim::RuntimeBands> b = g5sim::runtime_bands_of(rt);
  REQUIRE(b);
  CHECK(b->ttft.kind == "ttft");
  CHECK(b->ttft.low == 1 / 1.25);
  CHECK(b->ttft.high == 1 / 0.8);
  CHECK(b->tpot.low == 1 / 1.1);
  CHECK(b->tpot.high == 1 / 0.95);
  CHECK(b->throughput.kind == "all");
  CHECK(b->throughput.rows == 21);
  CHECK(b->throughput.low == 0.9);
  CHECK(b->throughput.high == 1.2);
  // A bad band is the record's error, with its line.
  CHECK_THAT(error_of(s.text() + record + "    tpot2: {rows: 1, low: 1, high: 1}\n"),
             Catch::Contains("calibration.bands.tpot2: unknown key"));

  // A serve under it: the summary carries them, the JSON's TTFT band is TTFT's, TPOT's TPOT's.
  const RuntimeFile file(s.text() + record);
  g5sim::Request base;
  base.layers = 2;
  base.runtime = file.path();
  const g5sim::ServeReport report =
      g5sim::serve(g5sim::Chip::from_file(g5sim::chip_path("h100")),
                   g5sim::Model::from_file(g5sim::model_path("qwen2.5-1.5b")), base, {{"only", 0, 64, 3}}, {});
  REQUIRE(report.summary.runtime_bands);
  CHECK(report.summary.runtime_bands->tpot.high == 1 / 0.95);
  std::ostringstream json;
  g5sim::write_serve_json(json, report);
  CHECK_THAT(json.str(),
             Catch::Contains(fmt::format(R"("band_high": {{"mean": {})", report.summary.ttft_ms.mean * (1 / 0.8))));
  CHECK_THAT(json.str(), Catch::Contains(R"("runtime_bands": {"coverage": 0.8, "basis": "2 folds", "ttft": )"));
  // Without a record: none.
  CHECK_FALSE(g5sim::runtime_bands_of(g5sim::Runtime::from_yaml(s.text(), "rt")));
}

}  // namespace test_runtime
