// The Chrome trace: valid JSON, one slice per command at the recorded times, engines within their
// in-flight limits.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "api/report.hpp"
#include "api/simulation.hpp"
#include "api/trace_writer.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/chip.hpp"
#include "models/model_spec.hpp"
#include "test_configs.hpp"
#include "tools/commands/command.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_trace {

namespace {

// Picoseconds from the trace's microseconds (six decimals: a double rounds back exactly).
sim::Tick ps_of(const nlohmann::json& value) { return static_cast<sim::Tick>(std::llround(value.get<double>() * 1e6)); }

// A thread's tid: engine x 1000 + in-flight slot (api/trace_writer.hpp).
constexpr std::size_t kSlotsPerEngine = 1000;

// Every thread's X events are sequential: sorted by start, each starts at or after the previous
// one's end (so none overlaps another without nesting, the trace-event format's rule). Returns
// the number of X events and the names of the threads.
std::size_t check_tracks_nest(const nlohmann::json& doc,
                              std::map<std::pair<std::size_t, std::size_t>, std::string>& names) {
  std::map<std::pair<std::size_t, std::size_t>, std::vector<std::pair<sim::Tick, sim::Tick>>> tracks;
  std::size_t events = 0;
  for (const auto& e : doc.at("traceEvents")) {
    const std::pair<std::size_t, std::size_t> key{e.at("pid"), e.value("tid", std::size_t{0})};
    if (e.at("ph") == "M" && e.at("name") == "thread_name") names[key] = e.at("args").at("name");
    if (e.at("ph") != "X") continue;
    ++events;
    const sim::Tick start = ps_of(e.at("ts"));
    tracks[key].emplace_back(start, start + ps_of(e.at("dur")));
  }
  for (auto& [key, list] : tracks) {
    INFO("pid " << key.first << " tid " << key.second);
    CHECK(names.count(key) == 1);  // every track is named
    std::stable_sort(list.begin(), list.end());
    for (std::size_t i = 1; i < list.size(); ++i) CHECK(list[i].first >= list[i - 1].second);
  }
  return events;
}

}  // namespace

TEST_CASE("trace: one slice per command at the recorded times, engines within their limits", "[trace]") {
  const hw::Chip chip = hw::chip_from_yaml(test_configs::kSg2262, "sg2262-test");
  const auto v3 = models::model_from_yaml(test_configs::kDeepSeekV3, "v3");
  models::StepOptions step;
  step.layers = 4;
  step.parallelism = models::Parallelism{2, 8, 4};
  const auto r = api::simulate_step(
      chip, v3, models::make_workload(models::Phase::decode, 4, 2048, std::nullopt, models::KvFormat::bf16), step, {});
  std::ostringstream text;
  api::write_chrome_trace(text, chip, r.graph, r.lowered, r.trace, r.timeline, {});
  const auto doc = nlohmann::json::parse(text.str());
  const auto& events = doc.at("traceEvents");

  std::map<std::pair<std::size_t, std::size_t>, std::vector<std::pair<sim::Tick, sim::Tick>>> slices;
  std::size_t op_slices = 0;
  for (const auto& e : events) {
    if (e.at("ph") != "X") continue;
    const std::size_t pid = e.at("pid");
    if (pid == chip.cores) {
      ++op_slices;
      continue;
    }
    const std::size_t engine = e.at("tid").get<std::size_t>() / kSlotsPerEngine;
    const std::size_t id = e.at("args").at("id");
    const sim::Tick start = ps_of(e.at("ts"));
    const sim::Tick dur = ps_of(e.at("dur"));
    // Timestamps equal the records of command `id` (1-based) of that core and engine.
    const auto& record = r.trace.records(pid, static_cast<hw::EngineId>(engine))[id - 1];
    CHECK(start == record.start);
    CHECK(start + dur == record.end);
    slices[{pid, engine}].emplace_back(start, start + dur);
  }
  // One slice per command, one per op on the op track.
  std::size_t total = 0;
  for (const auto& [key, list] : slices) total += list.size();
  CHECK(total == r.lowered.program.command_count());
  CHECK(op_slices == r.timeline.ops.size());
  // At any instant, at most `limit` slices of one engine are open (serial engines: 1; transfer
  // engines: their outstanding limit, GDMA and SDMA 4, CDMA 1).
  for (auto& [key, list] : slices) {
    const hw::EngineSpec& engine = chip.engine(static_cast<hw::EngineId>(key.second));
    const std::size_t limit = engine.serial() ? 1 : engine.outstanding;
    std::vector<std::pair<sim::Tick, int>> edges;
    for (const auto& [s, e] : list) {
      if (e == s) continue;  // message commands take no time
      edges.emplace_back(s, +1);
      edges.emplace_back(e, -1);
    }
    std::sort(edges.begin(), edges.end());  // at equal times, ends (-1) before starts (+1)
    int open = 0, most = 0;
    for (const auto& [t, d] : edges) most = std::max(most, open += d);
    CHECK(most <= static_cast<int>(limit));
  }
  // Every track nests (is sequential), and a transfer engine uses at most its outstanding slots:
  // GDMA[0..3], SDMA[0..3], CDMA[0]; TIU and HAU one track each.
  std::map<std::pair<std::size_t, std::size_t>, std::string> names;
  check_tracks_nest(doc, names);
  for (const auto& [key, name] : names) {
    if (key.first == chip.cores) continue;
    const hw::EngineSpec& engine = chip.engine(static_cast<hw::EngineId>(key.second / kSlotsPerEngine));
    const std::size_t slot = key.second % kSlotsPerEngine;
    CHECK(name == (engine.serial() ? engine.display_name() : engine.display_name() + "[" + std::to_string(slot) + "]"));
    CHECK(slot < (engine.serial() ? 1 : engine.outstanding));
  }
  CHECK(names.at({0, 1 * kSlotsPerEngine + 3}) == "GDMA[3]");  // the history stream keeps 4 in flight
  // The layer filter keeps only those layers' commands.
  std::ostringstream one;
  api::TraceFilter only3;
  only3.layers = std::make_pair(3, 3);
  api::write_chrome_trace(one, chip, r.graph, r.lowered, r.trace, r.timeline, only3);
  // The parsed document must outlive the loop over it (a temporary in the range-for's chain
  // would be destroyed before the body runs).
  const auto filtered = nlohmann::json::parse(one.str());
  std::size_t kept = 0;
  for (const auto& e : filtered.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    CHECK(e.at("args").at("layer") == 3);
    ++kept;
  }
  CHECK(kept > 0);
  CHECK(tools::parse_layer_range("2:5") == std::make_pair(2, 5));
  CHECK_THROWS_WITH(tools::parse_layer_range("5:2"), "--trace-layers: '5:2' has J < I");
}

TEST_CASE("JSON output stays valid for any name: quotes, backslashes, control bytes, bad UTF-8", "[trace][json]") {
  hw::Chip chip = hw::chip_from_yaml(test_configs::kSg2262, "sg2262-test");
  chip.name = std::string("SG\t2262 \"q\" \\ \x01 \xff");
  const auto v3 = models::model_from_yaml(test_configs::kDeepSeekV3, "v3");
  const auto w = models::make_workload(models::Phase::decode, 1, 1024, std::nullopt, models::KvFormat::bf16);
  const auto r = api::simulate_block(chip, v3, w, {});
  std::ostringstream json, trace;
  api::write_json(json, api::RunDescription{chip, v3, w, {}}, r.timeline);
  api::write_chrome_trace(trace, chip, r.graph, r.lowered, r.trace, r.timeline, {});
  CHECK(nlohmann::json::accept(trace.str()));
  REQUIRE(nlohmann::json::accept(json.str()));
  // The name round-trips, the byte that is not UTF-8 replaced by U+FFFD (EF BF BD).
  CHECK(nlohmann::json::parse(json.str()).at("chip") == std::string("SG\t2262 \"q\" \\ \x01 \xef\xbf\xbd"));
}

TEST_CASE("the public API writes the trace: every command of a kept run, a layer range, errors", "[trace][api]") {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::shipped_chip_path());
  const g5sim::Model model = g5sim::Model::from_file(g5sim::shipped_model_path());
  g5sim::Request r;
  r.layers = 4;
  r.ctx = 1024;
  // Without the command records there is nothing to trace: the error names keep_commands.
  const g5sim::Result plain = g5sim::simulate(chip, model, r);
  std::ostringstream none;
  try {
    plain.write_chrome_trace(none);
    FAIL("no error");
  } catch (const g5sim::ConfigError& e) {
    CHECK(e.field() == "keep_commands");
  }
  r.keep_commands = true;
  const g5sim::Result kept = g5sim::simulate(chip, model, r);
  std::ostringstream all, one;
  kept.write_chrome_trace(all);
  kept.write_chrome_trace(one, std::make_pair(2, 2));
  const auto doc = nlohmann::json::parse(all.str());
  // One complete event per command (kernel slices) plus one per op with commands: more events
  // than commands, and the layer-2 trace is shorter.
  std::uint64_t slices = 0;
  for (const auto& e : doc.at("traceEvents")) slices += e.at("ph") == "X";
  CHECK(slices > kept.command_count);
  CHECK(nlohmann::json::accept(one.str()));
  CHECK(one.str().size() < all.str().size());
  CHECK_THROWS_AS(kept.write_chrome_trace(none, std::make_pair(3, 2)), g5sim::ConfigError);
}

TEST_CASE("every track of a block trace and of a 2-layer step trace nests", "[trace]") {
  const g5sim::Chip chip = g5sim::Chip::from_file(std::string(G5SIM_TEST_SOURCE_DIR) + "/tests/golden/chip.yaml");
  const g5sim::Model model = g5sim::Model::from_file(std::string(G5SIM_TEST_SOURCE_DIR) + "/tests/golden/model.yaml");
  auto trace = [&](g5sim::Request request) {
    request.keep_commands = true;
    std::ostringstream out;
    g5sim::simulate(chip, model, request).write_chrome_trace(out);
    return nlohmann::json::parse(out.str());
  };
  g5sim::Request block;
  block.scope = "block";
  block.dp = 1;
  block.batch = 4;
  block.ctx = 32768;
  std::map<std::pair<std::size_t, std::size_t>, std::string> names;
  CHECK(check_tracks_nest(trace(block), names) > 0);
  // A 2-layer step in 2 micro-batches: ops of one kind overlap, so the op track has rows.
  g5sim::Request step;
  step.layers = 2;
  step.tp = 1;
  step.ep = 8;
  step.dp = 8;
  step.batch = 16;
  step.micro_batches = 2;
  names.clear();
  CHECK(check_tracks_nest(trace(step), names) > 0);
  bool rows = false;
  for (const auto& [key, name] : names) rows = rows || name.find(" #2") != std::string::npos;
  CHECK(rows);
}

}  // namespace test_trace
