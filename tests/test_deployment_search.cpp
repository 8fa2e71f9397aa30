// g5sim search (explore/deployment_search.hpp): the Pareto front of tokens/s per chip against
// tokens/s per user, the best point meeting the SLO, the coarse pass and its refinement, and the
// same bytes however the points are run.
#include <catch2/catch.hpp>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "explore/deployment_search.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/config_error.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_deployment_search {

namespace {

// Qwen2.5-1.5B (2 of its layers) on H100: quick serves; `items` add to its load's knobs.
g5sim::SearchSpec small_spec(const g5sim::KnobItems& items = {}) {
  g5sim::Request base;
  base.layers = 2;
  g5sim::KnobItems all{{"concurrency", "16"},
                       {"requests", "32"},
                       {"input_len", "128"},
                       {"output_len", "16"},
                       {"step_cache", "bucket:10"}};
  all.insert(all.end(), items.begin(), items.end());
  return g5sim::search_spec_of({g5sim::Chip::from_file(g5sim::chip_path("h100"))},
                               g5sim::Model::from_file(g5sim::model_path("qwen2.5-1.5b")), base, all);
}

g5sim::PointOutcome outcome(double per_chip, double per_user, double tpot) {
  g5sim::PointOutcome o;
  o.chips = 1;
  o.tokens_per_s_per_chip = per_chip;
  o.tokens_per_s_per_user = per_user;
  o.tpot_p50_ms = o.tpot_p90_ms = o.tpot_p99_ms = tpot;
  return o;
}

std::string texts(const g5sim::SearchReport& r) {
  std::ostringstream out;
  g5sim::write_search_csv(out, r);
  g5sim::write_search_json(out, r);
  g5sim::write_search_table(out, r);
  return out.str();
}

}  // namespace

TEST_CASE("search: a knob's list is values and doubling ranges, sorted, each checked", "[search]") {
  using explore::parse_knob_list;
  CHECK(parse_knob_list("16:128", "max_seqs", 1, 4096) == std::vector<std::uint64_t>{16, 32, 64, 128});
  // 48, 96, then HI itself.
  CHECK(parse_knob_list("48:100", "max_seqs", 1, 4096) == std::vector<std::uint64_t>{48, 96, 100});
  CHECK(parse_knob_list("8,1,4:16,8", "tp", 1, 64) == std::vector<std::uint64_t>{1, 4, 8, 16});
  CHECK(parse_knob_list("0,2", "mtp", 0, 7) == std::vector<std::uint64_t>{0, 2});
  auto error = [](const std::string& text) {
    try {
      parse_knob_list(text, "max_seqs", 1, 4096);
    } catch (const hw::InputError& e) {
      return e.field() + ": " + e.what();
    }
    return std::string("no error");
  };
  CHECK(error("0") == "max_seqs: expected a whole number 1..4096, got '0'");
  CHECK(error("64:16") == "max_seqs: expected a whole number 64..4096, got '16'");
  CHECK(error("8,,16") == "max_seqs: expected a whole number 1..4096, got ''");
  CHECK(error("x") == "max_seqs: expected a whole number 1..4096, got 'x'");
  // 1..65: one value too many.
  std::string many = "1";
  for (int v = 2; v <= 65; ++v) {
    many.push_back(',');
    many.append(std::to_string(v));
  }
  CHECK(error(many) == "max_seqs: more than 64 values in '" + many + "'");
  // A text knob's list: each value checked by the knob, in the order given, duplicates dropped.
  const g5sim::Knob& disagg = *g5sim::ServeSettings().find("disagg");
  CHECK(explore::parse_text_list("1:2,none,1:1,none", disagg) == std::vector<std::string>{"1:2", "none", "1:1"});
  CHECK_THROWS_WITH(explore::parse_text_list("1:2,2", disagg),
                    "expected P:D, prefill and decode instances 1..1024 "
                    "each, got '2'");
}

TEST_CASE("search: the front is the undominated points, the best the most per chip meeting the SLO", "[search]") {
  const g5sim::SearchSpec spec = small_spec({{"tp", "1"},
                                             {"ep", "1"},
                                             {"dp", "1"},
                                             {"max_seqs", "1,2,3,4,5,6"},
                                             {"exhaustive", "true"},
                                             {"slo_tpot_ms", "30"}});
  g5sim::DeploymentSearch search(spec);
  const std::vector<std::size_t> pass = search.next_pass();
  REQUIRE(pass == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
  // Hand-made figures (x per chip, y per user, TPOT):
  //   0 (100, 10, 40)  on the front: nothing has more x
  //   1 ( 90,  5, 35)  dominated by 0 (100 >= 90, 10 >= 5)
  //   2 ( 80, 20, 25)  on the front: only 3 matches it, equal in both
  //   3 ( 80, 20, 25)  on the front with 2
  //   4 ( 50, 15, 10)  dominated by 2 and 3
  //   5 ( 40, 30, 30)  on the front: the most per user
  // Meeting TPOT <= 30 ms: 2..5 (0's 40 ms and 1's 35 ms miss). Best: the most per chip among them, 80, shared
  // by 2 and 3 with equal y: the earlier, 2.
  const std::vector<g5sim::PointOutcome> figures{outcome(100, 10, 40), outcome(90, 5, 35),  outcome(80, 20, 25),
                                                 outcome(80, 20, 25),  outcome(50, 15, 10), outcome(40, 30, 30)};
  for (std::size_t i = 0; i < pass.size(); ++i) search.record(pass[i], figures[i]);
  const g5sim::SearchReport r = search.report();
  REQUIRE(r.points.size() == 6);
  std::vector<bool> front, meets;
  for (const g5sim::SearchPoint& p : r.points) {
    front.push_back(p.on_front);
    meets.push_back(p.meets_slo);
  }
  CHECK(front == std::vector<bool>{true, false, true, true, false, true});
  CHECK(meets == std::vector<bool>{false, false, true, true, true, true});
  // The front by tokens/s per user, ascending.
  CHECK(r.fronts.at(0) == std::vector<std::size_t>{0, 2, 3, 5});
  CHECK(r.best == 2u);
  CHECK(r.points[2].best);
  // Refinement: 0's, 2's, 3's and 5's neighbours all ran (exhaustive): nothing left.
  CHECK(search.next_pass().empty());
}

TEST_CASE("search: a coarse pass, then the front's unrun neighbours", "[search]") {
  const g5sim::SearchSpec spec = small_spec({{"tp", "1"}, {"ep", "1"}, {"dp", "1"}, {"max_seqs", "1,2,3,4,5"}});
  g5sim::DeploymentSearch search(spec);
  // Every other value, the ends always: 1, 3, 5.
  const std::vector<std::size_t> coarse = search.next_pass();
  REQUIRE(coarse == std::vector<std::size_t>{0, 2, 4});
  // 3 (index 2) alone on the front: its neighbours 2 and 4 (indices 1 and 3) run next.
  search.record(0, outcome(10, 10, 1));
  search.record(2, outcome(50, 50, 1));
  search.record(4, outcome(40, 40, 1));
  CHECK(search.next_pass() == std::vector<std::size_t>{1, 3});
  // 2 (index 1) joins the front; its neighbours have run: done.
  search.record(1, outcome(60, 45, 1));
  search.record(3, outcome(45, 45, 1));
  CHECK(search.next_pass().empty());
  const g5sim::SearchReport r = search.report();
  CHECK(r.passes == 2);
  CHECK(r.points.size() == 5);
}

TEST_CASE("search: an AFD point is laid out once per chip, its sharding the attention side's", "[search][sim][afd]") {
  // max_chips 2: three shardings (tp 1 dp 1, tp 1 dp 2, tp 2 dp 1) for the colocated points; the
  // AFD point (1 attention chip, 1 FFN chip) shards each side itself: one point, tp 1 ep 1 dp 1.
  g5sim::SearchSpec spec = small_spec({{"max_chips", "2"}, {"afd", "none,1:1"}, {"exhaustive", "true"}});
  const g5sim::SearchReport r = g5sim::search(spec);
  std::size_t afd_dimension = r.dimensions.size();
  for (std::size_t d = 0; d < r.dimensions.size(); ++d) {
    if (r.dimensions[d].knob->name == "afd") afd_dimension = d;
  }
  REQUIRE(afd_dimension < r.dimensions.size());
  std::size_t colocated = 0, afd = 0;
  for (const g5sim::SearchPoint& p : r.points) {
    if (p.knobs.values[afd_dimension] == "none") {
      ++colocated;
      continue;
    }
    ++afd;
    CHECK(p.knobs.tp == 1);
    CHECK(p.knobs.ep == 1);
    CHECK(p.knobs.dp == 1);
    CHECK(p.outcome.error.empty());
    CHECK(p.outcome.chips == 2);
  }
  CHECK(colocated == 3);
  CHECK(afd == 1);
}

TEST_CASE(
    "search: on a real serve every front point is undominated, every other dominated by one on it, and "
    "the best point served again meets the SLO",
    "[search][sim][slow]") {
  // max_chips 2: tp 1 dp 1, tp 1 dp 2, tp 2 dp 1.
  g5sim::SearchSpec spec =
      small_spec({{"max_chips", "2"}, {"max_seqs", "2,4,8,16"}, {"slo_tpot_ms", "2"}, {"jobs", "2"}});
  const g5sim::SearchReport r = g5sim::search(spec);
  REQUIRE(r.points.size() >= 6);
  auto dominates = [](const g5sim::PointOutcome& p, const g5sim::PointOutcome& q) {
    return p.tokens_per_s_per_chip >= q.tokens_per_s_per_chip && p.tokens_per_s_per_user >= q.tokens_per_s_per_user &&
           (p.tokens_per_s_per_chip > q.tokens_per_s_per_chip || p.tokens_per_s_per_user > q.tokens_per_s_per_user);
  };
  for (const g5sim::SearchPoint& q : r.points) {
    REQUIRE(q.outcome.error.empty());
    bool dominated = false, by_front = false;
    for (const g5sim::SearchPoint& p : r.points) {
      if (!dominates(p.outcome, q.outcome)) continue;
      dominated = true;
      by_front = by_front || p.on_front;
    }
    CHECK(q.on_front == !dominated);
    if (!q.on_front) CHECK(by_front);
  }
  REQUIRE(r.best);
  const g5sim::SearchPoint& best = r.points[*r.best];
  CHECK(best.meets_slo);
  // The best point as `g5sim serve` runs it: the same figures, within the SLO.
  g5sim::Request base = spec.base;
  base.tp = best.knobs.tp;
  base.ep = best.knobs.ep;
  base.dp = best.knobs.dp;
  g5sim::ServeSettings settings = spec.serve;
  for (std::size_t d = 0; d < r.dimensions.size(); ++d) {
    if (!r.dimensions[d].knob->run_option) settings.set_text(r.dimensions[d].knob->name, best.knobs.values[d]);
  }
  const g5sim::ServeReport again = g5sim::serve(spec.chips[0], spec.model, base, settings);
  CHECK(again.summary.tpot_ms.p90 <= 2.0);
  CHECK(again.summary.tpot_ms.p90 == best.outcome.tpot_p90_ms);
  CHECK(again.summary.output_tokens_per_s_per_chip == best.outcome.tokens_per_s_per_chip);
  // No point meeting the SLO that has more tokens/s per chip.
  for (const g5sim::SearchPoint& p : r.points) {
    if (p.meets_slo) CHECK(p.outcome.tokens_per_s_per_chip <= best.outcome.tokens_per_s_per_chip);
  }

  // The same bytes on one thread, and with the points run elsewhere (outcomes sent as text).
  spec.design.set("jobs", std::uint64_t{1});
  const std::string one_thread = texts(g5sim::search(spec));
  CHECK(one_thread == texts(r));
  const g5sim::DeploymentSearch worker(spec);
  const g5sim::SearchReport remote = g5sim::search_with(spec, [&](const std::vector<std::size_t>& pass) {
    std::vector<g5sim::PointOutcome> out;
    for (std::size_t i : pass) out.push_back(g5sim::outcome_of_text(g5sim::outcome_text(worker.run(i))));
    return out;
  });
  CHECK(texts(remote) == one_thread);
}

TEST_CASE("search: bad input names its knob", "[search]") {
  auto error = [&](const g5sim::KnobItems& items, const std::function<void(g5sim::SearchSpec&)>& change = {}) {
    try {
      g5sim::SearchSpec s = small_spec(items);
      if (change) change(s);
      g5sim::DeploymentSearch search(s);
    } catch (const g5sim::ConfigError& e) {
      return e.field() + ": " + e.what();
    }
    return std::string("no error");
  };
  CHECK(error({{"slo_stat", "p95"}}) == "slo_stat: expected p50, p90 or p99, got 'p95'");
  CHECK(error({{"mtp", "0,1"}}) == "mtp: an mtp above 0 needs --accept (0.8, or 0.9,0.8)");
  CHECK(error({{"objective", "tokens"}}) ==
        "objective: expected tokens_per_s_per_chip or tokens_per_joule, got 'tokens'");
  CHECK(error({}, [](g5sim::SearchSpec& s) { s.base.tp = 2; }) ==
        "tp: a search takes its shardings from --tp, --ep and --dp lists (the batch from the load)");
  CHECK(error({{"max_seq", "8"}}).rfind("max_seq: not a search keyword (keywords: trace, rate, ", 0) == 0);
  // A given sharding the model does not divide over is a point that says why, not a failure.
  g5sim::DeploymentSearch search(small_spec({{"tp", "3"}, {"ep", "1"}, {"dp", "1"}}));
  const std::vector<std::size_t> pass = search.next_pass();
  REQUIRE(pass.size() == 1);
  const g5sim::PointOutcome o = search.run(pass[0]);
  CHECK(o.error.find("tp") != std::string::npos);
  // A chunk above every budget: no point could run. One above some budgets: those points are
  // refused (a step's budget caps a prompt's chunk: the point is chunk = budget's), the rest run.
  CHECK(error({{"chunk", "16384"}, {"max_batched_tokens", "8192"}}) ==
        "chunk: every chunk (16384) is above every max_batched_tokens (8192): a step's budget caps a prompt's chunk");
  {
    g5sim::DeploymentSearch mixed(small_spec(
        {{"tp", "1"}, {"ep", "1"}, {"dp", "1"}, {"chunk", "64,16384"}, {"max_batched_tokens", "256,16384"}}));
    // 2 x 2 points; the one with chunk 16384 over a budget of 256 is refused, the others run.
    REQUIRE(mixed.grid_size() == 4);
    std::size_t refused = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      const g5sim::PointOutcome p = mixed.run(i);
      if (!p.error.empty()) {
        ++refused;
        CHECK(p.error ==
              "chunk 16384 is above max_batched_tokens 256: a step's budget caps a prompt's chunk (chunk 256 is the "
              "same step)");
      }
    }
    CHECK(refused == 1);
  }
  {
    // What a chip holds: Qwen2.5-1.5B's weights and the KV cache the engine reserved, floor((0.9 x
    // 80 GiB - W) / b) tokens of b bytes: so 0.9 x 80 GiB - b < bytes_per_chip <= 0.9 x 80 GiB.
    g5sim::DeploymentSearch one(small_spec({{"tp", "1"}, {"ep", "1"}, {"dp", "1"}}));
    REQUIRE(one.next_pass().size() == 1);
    const g5sim::PointOutcome p = one.run(0);
    REQUIRE(p.error.empty());
    const std::uint64_t budget = 85'899'345'920ull * 9 / 10;  // 77,309,411,328
    // Qwen2.5-1.5B's KV bytes a token: 28 layers x 2 (K, V) x 2 KV heads x 128 x 2 B = 28,672.
    CHECK(p.bytes_per_chip <= budget);
    CHECK(p.bytes_per_chip > budget - 28'672);
    CHECK(p.fits);
    // And through the text Dask's workers send back.
    const g5sim::PointOutcome back = g5sim::outcome_of_text(g5sim::outcome_text(p));
    CHECK(back.bytes_per_chip == p.bytes_per_chip);
    CHECK(back.fits);
  }
  // A list given alone is taken as it is (5 is no power of two, and was never tried), and when no
  // sharding serves, each value given says why, as serve does.
  CHECK(error({{"tp", "5"}}) ==
        "sharding: no sharding of Qwen2.5-1.5B on H100 serves this load: tp 5: tensor-parallel degree tp = 5 "
        "does not divide num_attention_heads (12) (tp 5 ep 1 dp 1)");
}

}  // namespace test_deployment_search
