// Exact layer replay (ops/layer_replay.hpp): the runs found, the reduced graph, the kernel's
// boundary states, and whole steps whose JSON is the same byte for byte with and without replay.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "g5sim/g5sim.hpp"
#include "hw/chip.hpp"
#include "models/decoder_step.hpp"
#include "models/model_spec.hpp"
#include "ops/layer_replay.hpp"
#include "replay_pair.hpp"
#include "sim/simulator.hpp"
#include "test_configs.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_layer_replay {

namespace {

std::string source(const std::string& path) { return std::string(G5SIM_TEST_SOURCE_DIR) + "/" + path; }

using replay_test::Pair;
using replay_test::without_replay_line;

Pair both_ways(const std::string& model_path, const g5sim::Request& request) {
  return replay_test::both_ways(g5sim::Chip::from_file(g5sim::shipped_chip_path()),
                                g5sim::Model::from_file(source(model_path)), request);
}

void check_identical(const Pair& p) {
  // Something was replayed, and the full run simulated every command.
  CHECK(p.replayed.replayed_commands > 0);
  CHECK(p.replayed.simulated_commands + p.replayed.replayed_commands == p.replayed.command_count);
  CHECK(p.full.replayed_commands == 0);
  CHECK(p.full.simulated_commands == p.full.command_count);
  CHECK(p.replayed.command_count == p.full.command_count);
  CHECK(p.replayed.total_ps == p.full.total_ps);
  CHECK(without_replay_line(p.replayed.json()) == without_replay_line(p.full.json()));
  CHECK(p.replayed.json() != p.full.json());  // the replay line tells them apart
}

const char* kV3 = "configs/models/deepseek-v3.yaml";

}  // namespace

TEST_CASE("the longest run of identical layers: DeepSeek-V3's 58 MoE layers", "[replay]") {
  const hw::Chip& chip = test_configs::sg2262();
  (void)chip;
  const models::ModelSpec v3 = models::load_model(source(kV3));
  models::StepOptions step;
  step.parallelism = models::Parallelism{1, 8, 8};
  const ops::OpGraph graph = models::build_decoder_step(
      v3, models::make_workload(models::Phase::decode, 8, 4096, std::nullopt, models::KvFormat::bf16), step);
  const auto runs = ops::find_layer_runs(graph, 4);
  REQUIRE(runs.size() == 1);
  const ops::LayerRun* run = &runs[0];
  // 61 layers, the first three dense (first_k_dense_replace = 3): layers 3..60 repeat, 58 units
  // of one layer each (a period of 2 would save fewer: (29 - 4) x 2 < 58 - 4 layers).
  CHECK(run->first_layer == 3);
  CHECK(run->period == 1);
  CHECK(run->units == 58);
  std::uint64_t layer_ops = 0;
  for (ops::OpId v = 0; v < boost::num_vertices(graph); ++v) layer_ops += graph[v].layer == 3;
  CHECK(run->ops_per_unit == layer_ops);
  // Keeping 4 of them leaves 54 x ops_per_unit ops out; final_norm now follows layer 6's last op.
  const ops::ReducedGraph reduced = ops::reduce_graph(graph, runs, 4);
  CHECK(reduced.dropped(0) == 54);
  CHECK(boost::num_vertices(reduced.graph) == boost::num_vertices(graph) - 54 * run->ops_per_unit);
  const ops::OpId final_norm = boost::num_vertices(reduced.graph) - 2;
  REQUIRE(reduced.graph[final_norm].name == "final_norm");
  const ops::OpId producer = boost::source(*boost::in_edges(final_norm, reduced.graph).first, reduced.graph);
  CHECK(reduced.graph[producer].layer == 6);
  CHECK(producer == run->first_op + 4 * run->ops_per_unit - 1);
  // Without a run longer than what is kept, nothing to replay.
  CHECK(ops::find_layer_runs(graph, 58).empty());
}

TEST_CASE("the kernel's state repeats at the boundaries of identical layers", "[replay][sim]") {
  // One core, three layers, each a load then an instruction on it; each load waits for the
  // previous layer's instruction. startup 0.1 ns = 100 ps, 1 B/ps: a 1000 B load takes 1100 ps;
  // 500 cycles at 1 GHz 500 ps. Layer k: load [1600k, 1600k + 1100), instruction to 1600(k + 1).
  const hw::Chip chip = hw::chip_from_yaml(test_configs::tiny_chip(1, 1000, 4, 0.1), "tiny");
  sim::Program p = sim::Program::with_queues(1, 4);
  auto& tiu = p.cores[0].queue(0);
  auto& gdma = p.cores[0].queue(1);
  for (std::uint32_t k = 0; k < 3; ++k) {
    sim::Command load;
    load.kind = sim::CommandKind::transfer;
    load.amount = 1000;
    load.op = k;
    load.add_wait(0, k);  // the previous layer's instruction (id 0 in layer 0: none)
    gdma.push_back(load);
    sim::Command compute;
    compute.amount = 500;
    compute.op = k;
    compute.add_wait(1, k + 1);
    tiu.push_back(compute);
  }
  ops::BoundaryWatch watch;
  // Queues tiu, gdma, sdma, cdma of core 0: layer k starts at index k on tiu and gdma, nowhere else.
  for (std::uint32_t k = 0; k < 3; ++k) watch.starts.push_back({k, k, 0, 0});
  watch.message_base = {0, 0, 0};
  watch.message_lo = watch.message_hi = {0, 0, 0};
  watch.follows = {0, 1, 1};
  watch.message_previous = {0, 0, 0};
  ops::BoundaryRecorder recorder(watch, 4);
  const sim::Trace t = sim::Simulator(chip).run(p, &recorder);
  const std::vector<ops::Boundary>& boundaries = recorder.boundaries();
  REQUIRE(boundaries.size() == 3);
  // Each layer is reached when its load issues: 0, 1600, 3200 ps.
  CHECK(boundaries[0].time == 0);
  CHECK(boundaries[1].time == 1600);
  CHECK(boundaries[2].time == 3200);
  CHECK_FALSE(boundaries[0].comparable);  // no layer before it to bound the message window
  CHECK(boundaries[1].comparable);
  // The same relative state at 1600 and 3200: a load in flight 100 ps from the end of its
  // start-up, the previous instruction done, nothing else pending.
  CHECK(boundaries[2].same_as(1));
  CHECK_FALSE(boundaries[1].same_as(1));  // B_0 is not comparable
  CHECK(t.end == 4800);
}

TEST_CASE("replayed steps write the JSON of a full simulation, byte for byte", "[replay][slow]") {
  g5sim::Request r;  // g5sim run's defaults: DeepSeek-V3 decode, one sequence per DP rank, 4096
  SECTION("the default decode step") { check_identical(both_ways(kV3, r)); }
  SECTION("a prefill step") {
    r.phase = "prefill";
    r.ctx = 512;
    check_identical(both_ways(kV3, r));
  }
  SECTION("DeepSeek-V3.2 with DSA (indexer and top-k attention)") {
    r.ctx = 8192;
    check_identical(both_ways("configs/models/deepseek-v3.2-exp.yaml", r));
  }
  SECTION("a measured expert load that makes layers 10 and 30 differ") {
    // 8 sequences x 8 experts each = 64 routed slots per layer (over all EP ranks): layer 10 sends
    // them all to experts 0..7, layer 30 one to each of experts 0, 4, ..., 252.
    const auto path = std::filesystem::temp_directory_path() / "g5sim_replay_load.csv";
    {
      std::ofstream csv(path);
      csv << "layer,expert,tokens\n";
      for (int e = 0; e < 8; ++e) csv << "10," << e << ",8\n";
      for (int e = 0; e < 64; ++e) csv << "30," << 4 * e << ",1\n";
    }
    r.expert_load = path.string();
    const Pair p = both_ways(kV3, r);
    check_identical(p);
    std::filesystem::remove(path);
    // Each run of identical layers is replayed: 3..9 (7 layers, 4 kept, 3 replayed), 11..29 (19,
    // 15) and 31..60 (30, 26), 44 in all, against 54 of the 58 MoE layers with uniform routing; a
    // MoE layer lowers to the same commands in both.
    r.expert_load.clear();
    const Pair uniform = both_ways(kV3, r);
    CHECK(p.replayed.replayed_commands * 54 == uniform.replayed.replayed_commands * 44);
  }
  SECTION("work crossing layer boundaries: two micro-batches and cross-op prefetch") {
    r.batch = 16;
    r.micro_batches = 2;
    r.prefetch = true;
    check_identical(both_ways(kV3, r));
  }
}

TEST_CASE("a step without a run of identical layers is simulated in full, and says why", "[replay]") {
  g5sim::Request r;
  r.layers = 4;  // 3 dense + 1 MoE layer: no run longer than the 4 layers replay keeps
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
  const g5sim::Model model = g5sim::Model::from_file(source(kV3));
  const g5sim::Result result = g5sim::simulate(chip, model, r);
  CHECK(result.replayed_commands == 0);
  CHECK(result.simulated_commands == result.command_count);
  CHECK(result.json().find("\"not_replayed\": \"no run of more than 4 identical layers\"") != std::string::npos);
}

namespace {

// Qwen3-30B-A3B as shipped, with its layer rule changed: `mlp_only_layers` or `decoder_sparse_step`.
std::string qwen3_moe_with(const std::string& key, const std::string& value) {
  std::ifstream in(source("configs/models/qwen3-30b-a3b.yaml"));
  std::string line, out;
  while (std::getline(in, line)) out += (line.rfind(key + ":", 0) == 0 ? key + ": " + value : line) + "\n";
  return out;
}

ops::OpGraph decode_graph(const std::string& yaml) {
  models::StepOptions step;
  step.parallelism = models::Parallelism{1, 1, 1};
  return models::build_decoder_step(
      models::model_from_yaml(yaml, "qwen3-moe"),
      models::make_workload(models::Phase::decode, 8, 4096, std::nullopt, models::KvFormat::bf16), step);
}

Pair both_ways_yaml(const std::string& yaml, g5sim::Request request) {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
  const g5sim::Model model = g5sim::Model::from_yaml(yaml, "qwen3-moe");
  request.replay = true;
  g5sim::Result replayed = g5sim::simulate(chip, model, request);
  request.replay = false;
  g5sim::Result full = g5sim::simulate(chip, model, request);
  return {std::move(replayed), std::move(full)};
}

}  // namespace

TEST_CASE("every run of identical layers is replayed, and alternating layers as blocks of two", "[replay]") {
  SECTION("a dense layer in the middle: two runs") {
    // mlp_only_layers [24]: layers 0..23 and 25..47 are MoE layers alike, layer 24 is dense.
    const std::string yaml = qwen3_moe_with("mlp_only_layers", "[24]");
    const auto runs = ops::find_layer_runs(decode_graph(yaml), 4);
    REQUIRE(runs.size() == 2);
    CHECK(runs[0].first_layer == 0);
    CHECK(runs[0].units == 24);
    CHECK(runs[1].first_layer == 25);
    CHECK(runs[1].units == 23);
    CHECK(runs[0].period == 1);
    CHECK(runs[1].period == 1);
    CHECK(runs[0].ops_per_unit == runs[1].ops_per_unit);
    g5sim::Request r;
    r.batch = 8;
    const Pair p = both_ways_yaml(yaml, r);
    check_identical(p);
    // 20 + 19 = 39 MoE layers replayed; the shipped model (every layer MoE, one run of 48) replays
    // 44, and its MoE layers lower to the same commands.
    const Pair uniform = both_ways("configs/models/qwen3-30b-a3b.yaml", r);
    CHECK(p.replayed.replayed_commands * 44 == uniform.replayed.replayed_commands * 39);
  }
  SECTION("dense and MoE layers alternating: one run of two-layer units") {
    // decoder_sparse_step 2: layer l is MoE when (l + 1) % 2 == 0, so layers 0, 2, ... are dense
    // and 1, 3, ... MoE; no two neighbours alike, but 24 units of (dense, MoE) are.
    const std::string yaml = qwen3_moe_with("decoder_sparse_step", "2");
    const ops::OpGraph graph = decode_graph(yaml);
    const auto runs = ops::find_layer_runs(graph, 4);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].first_layer == 0);
    CHECK(runs[0].period == 2);
    CHECK(runs[0].units == 24);
    std::uint64_t unit_ops = 0;
    for (ops::OpId v = 0; v < boost::num_vertices(graph); ++v) unit_ops += graph[v].layer == 0 || graph[v].layer == 1;
    CHECK(runs[0].ops_per_unit == unit_ops);
    g5sim::Request r;
    r.batch = 8;
    const Pair p = both_ways_yaml(yaml, r);
    check_identical(p);
    // 4 of 24 units kept, 20 replayed; one unit's commands are those 6 layers add over 4 (the
    // steps of 4 and 6 layers have too few units to replay, and lower each unit alike).
    r.layers = 4;
    const std::uint64_t four = g5sim::simulate(g5sim::Chip::from_file(g5sim::shipped_chip_path()),
                                               g5sim::Model::from_yaml(yaml, "qwen3-moe"), r)
                                   .command_count;
    r.layers = 6;
    const std::uint64_t six = g5sim::simulate(g5sim::Chip::from_file(g5sim::shipped_chip_path()),
                                              g5sim::Model::from_yaml(yaml, "qwen3-moe"), r)
                                  .command_count;
    CHECK(p.replayed.replayed_commands == 20 * (six - four));
  }
}

}  // namespace test_layer_replay
