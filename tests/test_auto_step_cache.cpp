// `step_cache auto` (serving/auto_step_cache.hpp): the step model, the checks' strata
// and estimate, a serve's rounds; and the step cache's folder (serving/step_store.hpp).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "serving/auto_step_cache.hpp"
#include "serving/step_bucketing.hpp"
#include "serving/step_cost.hpp"
#include "serving/step_store.hpp"

namespace {

using serving::StepGroups;
using StepTime = g5sim::StepTime;

constexpr std::uint64_t kMs = 1'000'000'000;  // picoseconds
constexpr std::uint64_t kUs = 1'000'000;

g5sim::SequenceRecord group(std::uint64_t count, std::uint64_t q_len, std::uint64_t history) {
  return g5sim::SequenceRecord{count, q_len, history, ""};
}

// 1 ms + 1 us per new token: linear, so every interpolation and composition is exact.
StepTime linear(const StepGroups& groups) {
  std::uint64_t tokens = 0;
  for (const g5sim::SequenceRecord& g : groups) tokens += g.count * g.q_len;
  return StepTime{kMs + kUs * tokens, false, 0, 0};
}

// A chip-like time, monotone in every driver but not linear: rows padded to tiles of 16, the
// history read at 1 ns a token, causal pairs at 1 ps each.
StepTime tiled(const StepGroups& groups) {
  std::uint64_t tokens = 0, history = 0, pairs = 0;
  for (const g5sim::SequenceRecord& g : groups) {
    tokens += g.count * g.q_len;
    history += g.count * g.history;
    pairs += g.count * g.q_len * (g.history + (g.q_len + 1) / 2);
  }
  return StepTime{kMs + 2 * kUs * ((tokens + 15) / 16 * 16) + 1000 * history + pairs, false, 0, 0};
}

std::string anchors_text(const std::vector<serving::StepAnchor>& anchors) {
  std::string out;
  for (const serving::StepAnchor& a : anchors) out += fmt::format("{} {:.6f}; ", a.mix, a.weight);
  return out;
}

g5sim::ServeSetup auto_setup(std::uint64_t grid) {
  g5sim::ServeSetup setup;
  setup.auto_percent = 1;
  setup.bucket_percent = grid;
  return setup;
}

}  // namespace

TEST_CASE("auto: a step is interpolated between its grid's corners, and one on the grid is its own anchor",
          "[serve][auto]") {
  // 5 decodes at 100 beside one 250-token prompt (dp 1, decodes of width 1), on the 50 % grid
  // (edges 1, 2, 3, 4, 6, 9, 13, 19, 28, 42, 63, 94, 141, 211, 316, ...): 5 between 4 and 6 by
  // 1/2 each, 100 between 94 and 141 by 41/47 and 6/47, 250 between 211 and 316 by 66/105 and
  // 39/105; the prompt's history stays 0 (its pairs are a fresh prompt's). Timed linearly, the
  // corners' weighted sum is the exact step's time: 1 ms once (the weights sum to 1) and the
  // tokens 5 + (66 x 211 + 39 x 316) / 105 = 5 + 250.
  const g5sim::ServeSetup setup = auto_setup(50);
  serving::StepCost cost(setup, 1, linear, {});
  // The corners' rows: 4 + 211 = 215, 4 + 316 = 320, 6 + 211 = 217, 6 + 316 = 322. 320 is a
  // multiple of 8 and 321 is odd: that corner is simulated half with a 316-token prompt and half
  // with a 317-token one (typical lengths, step_bucketing.hpp), half a token more on a weight of
  // 1/2 x 39/105: 92,857.14 ps, truncated.
  CHECK(cost.step({group(5, 1, 100), group(1, 250, 0)}).ps == kMs + 255 * kUs + 92'857);
  // 7 decodes: between 6 and 9, rows 217, 322, 220 and 325, none a multiple of 8: exact.
  CHECK(cost.step({group(7, 1, 100), group(1, 250, 0)}).ps == kMs + 257 * kUs);
  // 4 decodes at the reference history 2 beside a 211-token prompt: every number an edge, one
  // corner of weight 1. 4 decodes alone at 141: the corner of typical histories, 2 at 140 and 2
  // at 142 (mean 141), which is its own anchor; so is a step of 4 decodes at 140, 140, 142, 142.
  const StepGroups on_grid{group(4, 1, 2), group(1, 211, 0)};
  CHECK(anchors_text(serving::bucketed_step(on_grid, 50, 1, 1)) == "4x1@2,1x211@0 1.000000; ");
  CHECK(anchors_text(serving::bucketed_step({group(4, 1, 141)}, 50, 1, 1)) == "2x1@140,2x1@142 1.000000; ");
  CHECK(anchors_text(serving::bucketed_step({group(2, 1, 140), group(2, 1, 142)}, 50, 1, 1)) ==
        "2x1@140,2x1@142 1.000000; ");
  serving::StepCost tiled_cost(setup, 1, tiled, {});
  CHECK(tiled_cost.step(on_grid).ps == tiled(on_grid).ps);
  // Off the grid, a step the serve already simulated (the hook knows it) takes that time.
  const StepGroups off_grid{group(5, 1, 100), group(1, 250, 0)};
  serving::StepHooks hooks;
  hooks.known = [&](const StepGroups& groups, bool) -> std::optional<StepTime> {
    if (g5sim::mix_text(groups) == g5sim::mix_text(off_grid)) return tiled(off_grid);
    return std::nullopt;
  };
  serving::StepCost known(setup, 1, tiled, {}, hooks);
  CHECK(known.step(off_grid).ps == tiled(off_grid).ps);
}

TEST_CASE("auto: a corner whose rows fill tiles exactly is simulated half as it is and half one token longer",
          "[serve][auto]") {
  // 50 % edges: ... 4, 6, 9, 13, 19, 28, 42, ..., 94, 141, 211, ..., 1066, 1599, 2398.
  // One decode (width 1) beside a 1,599-token prompt: 1,600 rows = 2^6 x 25; 1,601 is odd.
  CHECK(serving::typical_length(1599, 50, 1, 1, 1) == 1600);
  // No decode: 1,599 rows, odd: kept.
  CHECK(serving::typical_length(1599, 50, 0, 1, 1) == 1599);
  // Two prompts beside one decode: the count's gap to its edges 0 and 2 is 1, 2 > 1 x 1: moving
  // the prompts would give the count corner below (no decode) more rows than the one above.
  CHECK(serving::typical_length(1599, 50, 1, 1, 2) == 1599);
  // 6 decodes (gap 2 to the edges 4 and 9) and 2 prompts of 141: 6 + 282 = 288 = 2^5 x 9, 290 has
  // one factor of two: 142.
  CHECK(serving::typical_length(141, 50, 6, 1, 2) == 142);
  // 28 decodes of width 2 (gap 9: 19 and 42; 16 <= 2 x 9) and 16 prompts of 141: 56 + 2,256 =
  // 2,312 = 2^3 x 289; 2,328 = 2^3 x 291 has as many: kept.
  CHECK(serving::typical_length(141, 50, 28, 2, 16) == 141);
  // Edge 3's next edge is 4: moving it would meet it (3 + 5 = 8 rows).
  CHECK(serving::typical_length(3, 50, 5, 1, 1) == 3);
  // Percent 0: whole numbers, nothing moved.
  CHECK(serving::typical_length(1599, 0, 1, 1, 1) == 1599);
  // In a step: one decode at 500 beside a 1,599-token prompt, dp 1: the prompt's corner is
  // simulated half at 1,599 and half at 1,600 tokens (beside the decode at the reference history
  // 2); the history 500 lies between 474 and 711: 211 / 237 and 26 / 237.
  CHECK(anchors_text(serving::bucketed_step({group(1, 1, 500), group(1, 1599, 0)}, 50, 1, 1)) ==
        "1x1@2 -1.000000; 1x1@2,1x1599@0 0.500000; 1x1@2,1x1600@0 0.500000; 1x1@474 0.890295; 1x1@711 "
        "0.109705; ");
}

TEST_CASE("auto: decodes beside a prompt take their history from steps of decodes alone", "[serve][auto]") {
  // 4 decodes at 141 beside a 211-token prompt, every number on the 50 % grid: the prompt's corner
  // with the decodes at the reference history 2, plus 4 decodes alone at 141 (typical histories: 2
  // at 140 and 2 at 142), minus 4 at 2.
  const StepGroups mixed{group(4, 1, 141), group(1, 211, 0)};
  CHECK(anchors_text(serving::bucketed_step(mixed, 50, 1, 1)) ==
        "2x1@140,2x1@142 1.000000; 4x1@2 -1.000000; 4x1@2,1x211@0 1.000000; ");
  // The tiled time reads history apart from the tokens (1 ns a history token): the split is exact.
  // Its terms: the corner 1 ms + 2 us x 224 (215 tokens padded to 16) + 1 ns x 8 (history) + pairs
  // 211 x 106 + 4 x 3 = 22,378 ps; 4 decodes alone at 141: 1 ms + 2 us x 16 + 564 ns + 4 x 142 =
  // 568 ps; at 2: 1 ms + 32 us + 8 ns + 12 ps. The sum: 1 ms + 448 us + 564 ns + 22,366 + 568 ps.
  const g5sim::ServeSetup setup = auto_setup(50);
  serving::StepCost tiled_cost(setup, 1, tiled, {});
  CHECK(tiled_cost.step(mixed).ps == kMs + 448 * kUs + 564'000 + 22'366 + 568);
  CHECK(tiled_cost.step(mixed).ps == tiled(mixed).ps);
  // Its anchors: the three, each simulated once.
  CHECK(tiled_cost.distinct_steps() == 3);
}

TEST_CASE("auto: the model is monotone in decodes, history and prompt tokens", "[serve][auto]") {
  // On the tiled time (monotone, not linear), each driver moved alone over a wide range, the
  // others held: the modelled step never gets faster (corners of a monotone time, weights that
  // move toward the larger corner as the driver grows, a history rounded up or down monotonely).
  const g5sim::ServeSetup setup = auto_setup(50);
  serving::StepCost cost(setup, 1, tiled, {});
  auto monotone = [&](const std::function<StepGroups(std::uint64_t)>& step, std::uint64_t to) {
    std::uint64_t last = 0;
    for (std::uint64_t x = 1; x <= to; x += 1 + x / 16) {
      const std::uint64_t ps = cost.step(step(x)).ps;
      if (ps < last) return x;
      last = ps;
    }
    return std::uint64_t{0};
  };
  CHECK(monotone([](std::uint64_t c) { return StepGroups{group(c, 1, 700), group(1, 300, 0)}; }, 256) == 0);
  CHECK(monotone([](std::uint64_t h) { return StepGroups{group(9, 1, 1 + h), group(1, 300, 0)}; }, 60'000) == 0);
  CHECK(monotone([](std::uint64_t q) { return StepGroups{group(9, 1, 700), group(1, q, 0)}; }, 16'000) == 0);
  CHECK(monotone([](std::uint64_t h) { return StepGroups{group(1, 400, h)}; }, 60'000) == 0);
  CHECK(monotone([](std::uint64_t c) { return StepGroups{group(c, 1, 700)}; }, 256) == 0);
}

TEST_CASE("auto: the checks' strata weigh each step by the requests it makes each metric of", "[serve][auto]") {
  // Five steps of 10 ps at 0, 10, 20, 30, 40. Request r0 arrives at 0, first token 15, ends 35
  // with 3 tokens (TPOT 10); r1 arrives at 5, first token 25, ends 45 with 2 (TPOT 20).
  g5sim::ServeRun run;
  for (std::uint64_t s = 0; s < 5; ++s) run.steps.push_back(g5sim::StepLog{0, 10 * s, 10});
  g5sim::RequestOutcome r0, r1;
  r0.arrival_ps = 0, r0.first_token_ps = 15, r0.finish_ps = 35, r0.output_tokens = 3;
  r1.arrival_ps = 5, r1.first_token_ps = 25, r1.finish_ps = 45, r1.output_tokens = 2;
  run.requests = {r0, r1};
  const std::vector<std::vector<std::uint64_t>> w = serving::strata_weights(run);
  REQUIRE(w.size() == 7);
  CHECK(w[0] == std::vector<std::uint64_t>{1, 1, 1, 1, 1});  // mean_step: every step once
  // ttft_mean: r0 waits through the steps starting at 0 and 10, r1 through 10 and 20. By TTFT r0
  // (15) ranks before r1 (20); of 2 requests the middle tenth is ranks 0 (2 x 45 / 100) to 2
  // (ceil(2 x 55 / 100), and at least one past 0): both again; the slowest fiftieth ranks
  // min(1, 2 x 98 / 100) on: r1 alone.
  CHECK(w[1] == std::vector<std::uint64_t>{1, 2, 1, 0, 0});
  CHECK(w[2] == std::vector<std::uint64_t>{1, 2, 1, 0, 0});
  CHECK(w[3] == std::vector<std::uint64_t>{0, 1, 1, 0, 0});
  // By TPOT the same ranks: r0 decodes through the steps at 20 and 30, r1 through 30 and 40.
  CHECK(w[4] == std::vector<std::uint64_t>{0, 0, 1, 2, 1});
  CHECK(w[5] == std::vector<std::uint64_t>{0, 0, 1, 2, 1});
  CHECK(w[6] == std::vector<std::uint64_t>{0, 0, 0, 1, 1});
}

TEST_CASE("auto: a stratum's error is the weighed mean of (model - exact) / duration over its draws", "[serve][auto]") {
  // Two draws of ratio 1: x = 10 / 110 and -10 / 100, mean (1/11 - 1/10) / 2 = -1/220; over the
  // exact duration -1/220 / (1 + 1/220) = -1/221. Spread: both 21/220 from the mean, so
  // sqrt(2 (21/220)^2) / 2 / (221/220) = 21 sqrt(2) / 442.
  const serving::StratumError e = serving::stratum_error({{110, 100, 110}, {90, 100, 100}});
  CHECK(e.error == Approx(-1.0 / 221).epsilon(1e-12));
  CHECK(e.standard_error == Approx(21 * std::sqrt(2.0) / 442).epsilon(1e-12));
  // A draw of ratio 3 counts three times: (3 x 1/11 - 1/10) / 4 = 19/440; over the exact
  // duration 19/440 / (421/440) = 19/421.
  CHECK(serving::stratum_error({{110, 100, 110, 3}, {90, 100, 100, 1}}).error == Approx(19.0 / 421).epsilon(1e-12));
  CHECK(serving::stratum_error({}).error == 0);
}

TEST_CASE("auto: a serve with few distinct steps is exact, and a larger one is modelled, checked and within bound",
          "[serve][auto]") {
  g5sim::ServeSettings settings;
  settings.set("kv_tokens", std::uint64_t{1'000'000});
  g5sim::ServeSetup setup;
  setup.auto_percent = 1;
  // 3 requests of 20, 30 and 40 tokens in, 3 out, far apart: 3 prompts and 6 decodes, 9
  // distinct steps, within the 32 simulated exactly.
  std::vector<g5sim::ServeRequest> few;
  for (std::uint64_t i = 0; i < 3; ++i) few.push_back({fmt::format("r{}", i), i * 100 * kMs, 20 + 10 * i, 3});
  const g5sim::ServeRun small = serving::serve_auto(few, settings, setup, linear, {}, {});
  REQUIRE(small.auto_cache);
  CHECK(small.auto_cache->exact);
  CHECK(small.distinct_steps == 9);
  const g5sim::ServeRun small_exact = serving::serve_requests(few, settings, g5sim::ServeSetup{}, linear);
  CHECK(small.requests[2].finish_ps == small_exact.requests[2].finish_ps);
  // 40 requests of 10 .. 49 tokens in, 4 out, far apart: 40 prompts and 120 decodes, all distinct.
  // The linear time makes the model exact, so the first round's grid (50 %) meets the bound with
  // every check's error exactly 0, and every request's times are the exact serve's.
  std::vector<g5sim::ServeRequest> many;
  for (std::uint64_t i = 0; i < 40; ++i) many.push_back({fmt::format("r{}", i), i * 100 * kMs, 10 + i, 4});
  const g5sim::ServeRun big = serving::serve_auto(many, settings, setup, linear, {}, {});
  REQUIRE(big.auto_cache);
  CHECK_FALSE(big.auto_cache->exact);
  CHECK(big.auto_cache->rounds == 1);
  CHECK(big.auto_cache->grid_percent == 50);
  CHECK(big.auto_cache->met);
  REQUIRE(big.auto_cache->checks.size() == 7);
  for (const g5sim::StepCacheCheck& c : big.auto_cache->checks) {
    CHECK(c.draws > 0);
    CHECK(c.draws <= serving::kDraws);
    CHECK(c.error == 0);
  }
  const g5sim::ServeRun big_exact = serving::serve_requests(many, settings, g5sim::ServeSetup{}, linear);
  for (std::size_t i = 0; i < many.size(); ++i) CHECK(big.requests[i].finish_ps == big_exact.requests[i].finish_ps);
}

TEST_CASE("step cache folder: an entry reads back whole, and nothing else reads", "[serve][store]") {
  g5sim::ChipStep s;
  s.chip = StepTime{47'283'418'826, true, 45'000'000'000, 49'000'000'000, 6.4982760819435, 0};
  s.ops.ops = {{3, 1000, 0, 500, false}, {5, 2000, 4096, 0, true}};
  s.ops.decode_only = false;
  s.ops.chip_sequences = 8, s.ops.chip_tokens = 64;
  s.parts = 61;
  s.band_basis = "held-out rows (2 folds)";
  s.band_coverage = 0.8;
  const std::string text = serving::step_entry_text("k 1", s);
  CHECK(text ==
        "g5sim-step 1\nkey k 1\ntime 47283418826 1 45000000000 49000000000 6.4982760819435 61\nband 0.8 held-out "
        "rows (2 folds)\nops 0 0 8 64 2\n3 1000 0 500 0\n5 2000 4096 0 1\nend\n");
  const std::optional<g5sim::ChipStep> back = serving::read_step_entry(text, "k 1");
  REQUIRE(back);
  CHECK(serving::step_entry_text("k 1", *back) == text);
  CHECK(back->chip.dynamic_j == s.chip.dynamic_j);     // the shortest text that reads back the same double
  CHECK_FALSE(serving::read_step_entry(text, "k 2"));  // another key: a miss
  CHECK_FALSE(serving::read_step_entry(text.substr(0, text.size() - 1), "k 1"));  // cut short
  std::string more_ops = text;
  more_ops.replace(more_ops.find("ops 0 0 8 64 2"), 14, "ops 0 0 8 64 3");
  CHECK_FALSE(serving::read_step_entry(more_ops, "k 1"));  // fewer op lines than it says
  CHECK_FALSE(serving::read_step_entry(text + "x\n", "k 1"));
}

TEST_CASE("step cache folder: a warm serve reads every step with the same results, and a changed chip reads none",
          "[serve][store][sim]") {
  // Qwen2.5-1.5B, 2 layers, on H100, 3 requests: 9 distinct steps (3 prompts, 6 decodes).
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "g5sim-test-step-store";
  std::filesystem::remove_all(dir);
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("qwen2.5-1.5b"));
  std::ifstream file(g5sim::chip_path("h100"));
  std::stringstream yaml;
  yaml << file.rdbuf();
  const g5sim::Chip chip = g5sim::Chip::from_yaml(yaml.str(), "h100.yaml");
  g5sim::Request base;
  base.layers = 2;
  g5sim::ServeSettings settings;
  settings.set("step_cache_dir", dir.string());
  std::vector<g5sim::ServeRequest> requests;
  for (std::uint64_t i = 0; i < 3; ++i) requests.push_back({fmt::format("r{}", i), i * 100 * kMs, 64 + 32 * i, 3});
  const g5sim::ServeReport cold = g5sim::serve(chip, model, base, requests, settings);
  const g5sim::ServeReport warm = g5sim::serve(chip, model, base, requests, settings);
  CHECK(cold.run.distinct_steps == 9);
  CHECK(cold.steps_read == 0);
  CHECK(warm.steps_read == 9);
  CHECK(warm.simulated_commands == 0);
  std::ostringstream cold_json, warm_json;
  g5sim::write_request_csv(cold_json, cold);
  g5sim::write_request_csv(warm_json, warm);
  CHECK(cold_json.str() == warm_json.str());
  // The same chip with a 1 before its first latency's digits (250 ns: 1250 ns): another sha256,
  // another key.
  std::string changed = yaml.str();
  const std::size_t at = changed.find("latency_ns:");
  REQUIRE(at != std::string::npos);
  changed.insert(changed.find_first_of("0123456789", at), "1");
  const g5sim::ServeReport other =
      g5sim::serve(g5sim::Chip::from_yaml(changed, "h100.yaml"), model, base, requests, settings);
  CHECK(other.steps_read == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("auto: when a finer grid does not close in, the serve runs exactly sooner", "[serve][auto]") {
  g5sim::ServeSettings settings;
  settings.set("kv_tokens", std::uint64_t{1'000'000});
  g5sim::ServeSetup setup;
  setup.auto_percent = 1;
  // A step time no grid holds: 40 us more for each unit of the step's history sum mod 5 (as a
  // decode split's or a kernel tiling's bumps), on 1 ms + 1 us a token.
  auto bumpy = [](const StepGroups& groups) {
    std::uint64_t tokens = 0, history = 0;
    for (const g5sim::SequenceRecord& g : groups) tokens += g.count * g.q_len, history += g.count * g.history;
    return StepTime{kMs + kUs * tokens + 40 * kUs * (history % 5), false, 0, 0};
  };
  // 1,600 requests of 10 .. 59 tokens in, 8 .. 14 out, one every 3 ms: about 4,400 steps. The
  // 25 % grid's check misses by more than half the 50 % grid's miss: refining has stalled, and
  // the steps left are more than 3 but at most 10 times those simulated, so the serve runs
  // exactly after round 2 (with the rule of three alone it refined to 12 % first: 1,641
  // simulated against 1,432), and every request's times are the exact serve's.
  std::vector<g5sim::ServeRequest> many;
  for (std::uint64_t i = 0; i < 1600; ++i) {
    many.push_back({fmt::format("r{}", i), i * 3 * kMs, 10 + i % 50, 8 + i % 7});
  }
  // Its progress (a progress line's): each pass named, told first with nothing done, then each
  // request finished, up to all; the exact pass after the rounds with the steps it has to simulate.
  struct Pass {
    std::string stage;
    std::uint64_t first_done = 0, last_done = 0, to_simulate = 0;
    bool in_order = true;
  };
  std::vector<Pass> passes;
  std::uint64_t simulated = 0, simulated_before_exact = 0;
  auto counted = [&](const StepGroups& groups) {
    ++simulated;  // once per distinct step: the serve keeps what it simulated
    return bumpy(groups);
  };
  auto told = [&](const g5sim::ServeProgress& p) {
    if (passes.empty() || passes.back().stage != p.stage) {
      passes.push_back({p.stage, p.requests_done, 0, 0, true});
      simulated_before_exact = simulated;
    }
    Pass& pass = passes.back();
    pass.in_order = pass.in_order && p.requests_done >= pass.last_done && p.requests == many.size();
    pass.last_done = p.requests_done;
    pass.to_simulate = p.to_simulate;
  };
  const g5sim::ServeRun run = serving::serve_auto(many, settings, setup, counted, told, {});
  REQUIRE(run.auto_cache);
  CHECK(run.auto_cache->exact);
  CHECK(run.auto_cache->met);
  CHECK(run.auto_cache->rounds == 2);
  CHECK(run.auto_cache->grid_percent == 25);
  // The 32-step exact try stops at its 33rd distinct step, before every request is done; each
  // round's check (64 draws: both missed by more than their noise) is told with every request done.
  REQUIRE(passes.size() == 6);
  CHECK(passes[0].stage == "exact if at most 32 distinct steps");
  CHECK(passes[0].last_done < many.size());
  CHECK(passes[1].stage == "round 1 of at most 4, 50 % grid");
  CHECK(passes[2].stage == "round 1 of at most 4: checking 64 steps drawn");
  CHECK(passes[3].stage == "round 2 of at most 4, 25 % grid");
  CHECK(passes[4].stage == "round 2 of at most 4: checking 64 steps drawn");
  CHECK(passes[5].stage == "exact");
  for (const std::size_t i : {1, 3, 5}) {
    CHECK(passes[i].first_done == 0);
    CHECK(passes[i].last_done == many.size());
    CHECK(passes[i].in_order);
  }
  for (const std::size_t i : {2, 4}) CHECK(passes[i].first_done == many.size());
  // The exact pass is told the steps round 2 took that no pass had simulated: more than 3 and at
  // most 10 times those simulated before it (the rule above).
  for (const std::size_t i : {0, 1, 2, 3, 4}) CHECK(passes[i].to_simulate == 0);
  CHECK(simulated == run.distinct_steps);
  CHECK(passes[5].to_simulate > 3 * simulated_before_exact);
  CHECK(passes[5].to_simulate <= 10 * simulated_before_exact);
  const g5sim::ServeRun exact = serving::serve_requests(many, settings, g5sim::ServeSetup{}, bumpy);
  REQUIRE(run.requests.size() == exact.requests.size());
  for (std::size_t i = 0; i < many.size(); ++i) CHECK(run.requests[i].finish_ps == exact.requests[i].finish_ps);
}

TEST_CASE("auto: a miss within one standard error of its bound is drawn again, twice as many", "[serve][auto]") {
  auto check = [](double error, double standard_error, double bound) {
    g5sim::StepCacheCheck c;
    c.error = error, c.standard_error = standard_error, c.bound_percent = bound;
    return c;
  };
  // 1.2 % against 1 % with a standard error of 0.3 %: 1.2 - 0.3 = 0.9 <= 1, within the noise.
  CHECK(serving::miss_within_noise({check(0.012, 0.003, 1)}));
  // With 0.1 %: 1.1 > 1, a miss the draws can tell.
  CHECK_FALSE(serving::miss_within_noise({check(0.012, 0.001, 1)}));
  // Every check met: nothing to draw again.
  CHECK_FALSE(serving::miss_within_noise({check(0.005, 0.004, 1), check(-0.02, 0.01, 3)}));
  // A p99's -3.5 % against 3 % with 0.6 %: 2.9 <= 3; beside a told miss, the round is a miss.
  CHECK(serving::miss_within_noise({check(0.005, 0.004, 1), check(-0.035, 0.006, 3)}));
  CHECK_FALSE(serving::miss_within_noise({check(0.012, 0.001, 1), check(-0.035, 0.006, 3)}));

  // A serve on a step time with a bump no grid holds (4 us x a hash of the step's groups mod 7,
  // on 1 ms + 1 us a token): 400 requests of 10 .. 59 tokens in, 8 .. 14 out, one every 3 ms.
  // Its first round's 64 draws miss within their noise; 128 (the 64 and as many more) meet the
  // bound on the 50 % grid, and the serve ends there. The mean step's stratum holds every step,
  // so its draws are all 128.
  g5sim::ServeSettings settings;
  settings.set("kv_tokens", std::uint64_t{1'000'000});
  g5sim::ServeSetup setup;
  setup.auto_percent = 1;
  auto noisy = [](const StepGroups& groups) {
    std::uint64_t tokens = 0, h = 1469598103934665603ULL;
    for (const g5sim::SequenceRecord& g : groups) {
      tokens += g.count * g.q_len;
      h = (h ^ (g.count * 31 + g.q_len * 7 + g.history)) * 1099511628211ULL;
    }
    return StepTime{kMs + kUs * tokens + 4 * kUs * (h % 7), false, 0, 0};
  };
  std::vector<g5sim::ServeRequest> many;
  for (std::uint64_t i = 0; i < 400; ++i) many.push_back({fmt::format("r{}", i), i * 3 * kMs, 10 + i % 50, 8 + i % 7});
  const g5sim::ServeRun run = serving::serve_auto(many, settings, setup, noisy, {}, {});
  REQUIRE(run.auto_cache);
  CHECK(run.auto_cache->rounds == 1);
  CHECK(run.auto_cache->grid_percent == 50);
  CHECK_FALSE(run.auto_cache->exact);
  CHECK(run.auto_cache->met);
  REQUIRE_FALSE(run.auto_cache->checks.empty());
  CHECK(run.auto_cache->checks[0].metric == "mean_step");
  CHECK(run.auto_cache->checks[0].draws == 2 * serving::kDraws);
}
