// g5sim serve's engine (serving/serving_engine.hpp) with a step timer whose times are
// derived by hand, and once with the simulator itself (every time a real step's).

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "hw/config_error.hpp"
#include "serving/request_load.hpp"
#include "serving/serve.hpp"
#include "serving/serving_engine.hpp"
#include "serving/step_bucketing.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_serving {

namespace {

using serving::ServeRequest;
using serving::StepGroups;
using serving::StepTime;

// The engine's knobs and set-up in one struct, as these tests give them: serve_requests below puts
// each where the engine reads it (the settings by name, the serve's set-up).
struct ServeLimits {
  std::string schedule = "mixed";
  std::uint64_t max_seqs = 256, max_batched_tokens = 8192, chunk = 0, block_tokens = 16, kv_tokens = 0;
  std::uint64_t concurrency = 0, mtp = 0;
  std::vector<double> accept;
  bool accept_drawn = false;
  std::uint64_t accept_seed = 0;
  std::uint64_t bucket_percent = 0, bucket_samples = 16, dp = 1;
  unsigned jobs = 1;
  std::uint64_t prefill_instances = 0, decode_instances = 0;
  g5sim::KvTransfer kv_transfer;
  std::string prefix_caching = "auto";
  g5sim::KvGrowth kv;
  std::optional<g5sim::KvTiers> kv_tiers;
};

g5sim::ServeRun serve_requests(std::vector<ServeRequest> requests, const ServeLimits& l,
                               const serving::StepTimer& timer,
                               const std::function<void(const g5sim::ServeProgress&)>& progress = {},
                               const serving::StepTimer& draft_timer = {}, const serving::StepHooks& hooks = {}) {
  g5sim::ServeSettings s;
  s.set("schedule", l.schedule);
  s.set("max_seqs", l.max_seqs);
  s.set("max_batched_tokens", l.max_batched_tokens);
  s.set("chunk", l.chunk);
  s.set("block_tokens", l.block_tokens);
  if (l.kv_tokens > 0) s.set("kv_tokens", l.kv_tokens);
  s.set("concurrency", l.concurrency);
  s.set("mtp", l.mtp);
  s.set("prefix_caching", l.prefix_caching);
  if (l.accept_drawn) s.set("accept_draw", l.accept_seed);
  g5sim::ServeSetup setup;
  setup.dp = l.dp;
  setup.bucket_percent = l.bucket_percent;
  setup.bucket_samples = l.bucket_samples;
  setup.prefill_instances = l.prefill_instances;
  setup.decode_instances = l.decode_instances;
  setup.kv_transfer = l.kv_transfer;
  setup.kv = l.kv;
  setup.kv_tiers = l.kv_tiers;
  setup.accept = l.accept;
  setup.jobs = l.jobs;
  return serving::serve_requests(std::move(requests), s, setup, timer, progress, draft_timer, hooks);
}

constexpr std::uint64_t kMs = 1'000'000'000;  // picoseconds
constexpr std::uint64_t kUs = 1'000'000;

// A step takes 1 ms + 1 us per new token: the times below follow by hand.
struct HandTimer {
  std::vector<std::string> mixes;  // every step asked for, in order
  StepTime operator()(const StepGroups& groups) {
    mixes.push_back(g5sim::mix_text(groups));
    std::uint64_t tokens = 0;
    for (const g5sim::SequenceRecord& g : groups) tokens += g.count * g.q_len;
    return StepTime{kMs + kUs * tokens, false, 0, 0};
  }
};

ServeRequest request(const std::string& id, std::uint64_t arrival_ps, std::uint64_t input, std::uint64_t output) {
  return ServeRequest{id, arrival_ps, input, output};
}

ServeLimits roomy() {
  ServeLimits l;
  l.kv_tokens = 1'000'000;
  return l;
}

}  // namespace

TEST_CASE("serve: one request alone: TTFT is its prefill step, TPOT its decode steps", "[serve]") {
  HandTimer timer;
  const g5sim::ServeRun run = serve_requests({request("a", 0, 100, 4)}, roomy(), std::ref(timer));
  // Prefill of 100 tokens: 1 ms + 100 us = 1.1 ms; then 3 decodes of 1.001 ms at histories 100,
  // 101, 102 (the token fed back each step).
  CHECK(timer.mixes == std::vector<std::string>{"1x100@0", "1x1@100", "1x1@101", "1x1@102"});
  const serving::RequestOutcome& a = run.requests.at(0);
  CHECK(a.first_token_ps == 1'100'000'000);
  CHECK(a.finish_ps == 1'100'000'000 + 3 * std::uint64_t{1'001'000'000});
  CHECK(a.itl_ps == std::vector<std::uint64_t>{1'001'000'000, 1'001'000'000, 1'001'000'000});
  const serving::ServeSummary s = serving::summarize(run, 1, 2.0, 1.0);
  CHECK(s.ttft_ms.mean == 1.1);
  // TPOT = (4.103 - 1.1) ms / 3 = 1.001 ms: above the 1.0 ms SLO, so no request meets it.
  CHECK(s.tpot_ms.p50 == Approx(1.001).epsilon(1e-12));
  CHECK(s.slo_met == 0);
  CHECK(run.steps.size() == 4);
  CHECK(run.distinct_steps == 4);
}

TEST_CASE("serve: its progress, after each finished request, counts the steps taken so far", "[serve][progress]") {
  HandTimer timer;
  std::vector<std::array<std::uint64_t, 3>> told;
  const auto tell = [&](const g5sim::ServeProgress& p) { told.push_back({p.requests_done, p.requests, p.steps}); };
  // a (1 output token) ends with its prefill step, the one step both prompts share (a 10-token and
  // a 20-token prompt in one step); b (3 tokens) after two more decodes: steps 1 and 3.
  const g5sim::ServeRun run =
      serve_requests({request("a", 0, 10, 1), request("b", 0, 20, 3)}, roomy(), std::ref(timer), tell);
  CHECK(timer.mixes == std::vector<std::string>{"1x10@0,1x20@0", "1x1@20", "1x1@21"});
  CHECK(told == std::vector<std::array<std::uint64_t, 3>>{{1, 2, 1}, {2, 2, 3}});
  CHECK(run.steps.size() == 3);
}

TEST_CASE("serve: chunked prefill splits a prompt over steps, and the first token ends the last chunk", "[serve]") {
  HandTimer timer;
  ServeLimits limits = roomy();
  limits.chunk = 40;
  const g5sim::ServeRun run = serve_requests({request("a", 0, 100, 2)}, limits, std::ref(timer));
  // Chunks of 40, 40 and 20 after their history: 1.04 + 1.04 + 1.02 = 3.1 ms to the first token.
  CHECK(timer.mixes == std::vector<std::string>{"1x40@0", "1x40@40", "1x20@80", "1x1@100"});
  CHECK(run.requests[0].first_token_ps == 3'100'000'000);
  CHECK(run.steps[0].prefill_tokens == 40);
  CHECK(run.steps[3].decode_tokens == 1);
}

TEST_CASE("serve: decodes go first and the token budget limits what a step computes", "[serve]") {
  HandTimer timer;
  ServeLimits limits = roomy();
  limits.max_batched_tokens = 50;
  // a arrives at 0 (10 in, 3 out); b at 0.5 ms with a 100-token prompt. Step 1 (t 0): a's
  // prompt, 1.01 ms. Step 2 (t 1.01 ms): a's decode first (1 token), then b's first 49 tokens of
  // the budget left. Step 3: a's decode and b's next 49. Step 4: b's last 2.
  const g5sim::ServeRun run =
      serve_requests({request("a", 0, 10, 3), request("b", kMs / 2, 100, 1)}, limits, std::ref(timer));
  CHECK(timer.mixes == std::vector<std::string>{"1x10@0", "1x1@10,1x49@0", "1x1@11,1x49@49", "1x2@98"});
  // b's output is its first token only: TPOT has no value for it (vLLM leaves such requests out).
  const serving::ServeSummary s = serving::summarize(run, 1, std::nullopt, std::nullopt);
  CHECK(s.tpot_ms.count == 1);
  // b: arrives 0.5 ms; steps end at 1.01, 2.06, 3.11, 4.112 ms: TTFT 3.612 ms.
  CHECK(run.requests[1].first_token_ps - run.requests[1].arrival_ps == 3'612'000'000);
}

TEST_CASE("serve: a full KV cache preempts the newest request, which recomputes its tokens", "[serve]") {
  HandTimer timer;
  ServeLimits limits;
  limits.kv_tokens = 10;
  limits.block_tokens = 1;
  limits.prefix_caching = "off";  // recompute from nothing (the test below: from its cached blocks)
  // Two requests of 4 in, 4 out; 10 one-token blocks. Step 1: both prompts (8 blocks). Step 2:
  // both decode (10 blocks). Step 3: a needs an 11th: b (the newest) is preempted, freeing 5;
  // a decodes alone. Step 4: a's last token (7 blocks held; b's prompt of 4 + 2 generated = 6
  // does not fit the 3 free), a ends. Step 5: b recomputes 6 tokens and emits its third token.
  // Step 6: b's last decode at history 6.
  const g5sim::ServeRun run = serve_requests({request("a", 0, 4, 4), request("b", 0, 4, 4)}, limits, std::ref(timer));
  // Six steps; the sixth is the fourth's mix again, timed once (the step cache).
  CHECK(timer.mixes == std::vector<std::string>{"2x4@0", "2x1@4", "1x1@5", "1x1@6", "1x6@0"});
  CHECK(run.steps.size() == 6);
  CHECK(run.distinct_steps == 5);
  CHECK(run.preemptions == 1);
  CHECK(run.requests[0].preemptions == 0);
  CHECK(run.requests[1].preemptions == 1);
  // Step times: 1.008, 1.002, 1.001, 1.001, 1.006, 1.001 ms. a ends after step 4 (4.012 ms); b's
  // tokens at 1.008, 2.010, 5.018 and 6.019 ms.
  CHECK(run.requests[0].finish_ps == 4'012'000'000);
  CHECK(run.requests[1].itl_ps == std::vector<std::uint64_t>{1'002'000'000, 3'008'000'000, 1'001'000'000});
  CHECK(run.requests[1].finish_ps == 6'019'000'000);
}

TEST_CASE("serve: a preempted request comes back to its own cached blocks", "[serve][prefix]") {
  HandTimer timer;
  ServeLimits limits;
  limits.kv_tokens = 10;
  limits.block_tokens = 1;
  // As above, with prefix caching. When b is preempted (step 3) it has computed 5 tokens: 5 full
  // one-token blocks, entered in the cache. Freed tail first, its blocks 4, 3, 2, 1, 0 become free
  // entries in that LRU order, and no other block is free (a holds the other 5). a's steps 3 and
  // 4 take a block each, evicting b's blocks 4 and 3. At step 5, b's prompt of 6 (4 in, 2
  // generated) starts with its blocks 0, 1, 2, still cached: it reuses 3 (at most 6 - 1 = 5) and
  // computes 3 tokens at history 3 ("1x3@3"), 1.003 ms, so its third token is at 5.015 ms and its
  // last (step 6, "1x1@6", timed before) at 6.016 ms.
  const g5sim::ServeRun run = serve_requests({request("a", 0, 4, 4), request("b", 0, 4, 4)}, limits, std::ref(timer));
  CHECK(timer.mixes == std::vector<std::string>{"2x4@0", "2x1@4", "1x1@5", "1x1@6", "1x3@3"});
  CHECK(run.steps.size() == 6);
  CHECK(run.requests[1].cached_tokens == 3);
  CHECK(run.requests[1].itl_ps == std::vector<std::uint64_t>{1'002'000'000, 3'005'000'000, 1'001'000'000});
  CHECK(run.requests[1].finish_ps == 6'016'000'000);
}

TEST_CASE("serve: every output token is emitted once (conservation)", "[serve]") {
  serving::SyntheticLoad load;
  load.requests = 200;
  load.rate = 500;
  load.input = serving::LengthDistribution::range(1, 300);
  load.output = serving::LengthDistribution::range(1, 40);
  load.seed = 7;
  ServeLimits limits;
  limits.kv_tokens = 2000;  // tight: preemptions happen
  limits.max_seqs = 16;
  limits.max_batched_tokens = 256;
  limits.chunk = 64;
  HandTimer timer;
  const std::vector<ServeRequest> requests = serving::synthetic_requests(load);
  const g5sim::ServeRun run = serve_requests(requests, limits, std::ref(timer));
  std::uint64_t wanted = 0, emitted = 0, decode_tokens = 0, preemptions = 0;
  for (const ServeRequest& r : requests) wanted += r.output_tokens;
  for (const serving::RequestOutcome& r : run.requests) {
    emitted += 1 + r.itl_ps.size();
    preemptions += r.preemptions;
    CHECK(r.finish_ps >= r.first_token_ps);
    CHECK(r.first_token_ps > r.arrival_ps);
  }
  for (const serving::StepLog& s : run.steps) decode_tokens += s.decode_tokens;
  CHECK(emitted == wanted);
  CHECK(preemptions == run.preemptions);
  CHECK(run.preemptions > 0);
  // Every token after a request's first comes from a decode step, unless a recompute emitted it.
  CHECK(decode_tokens + run.requests.size() + preemptions >= wanted);
  CHECK(decode_tokens <= wanted - run.requests.size());
}

TEST_CASE("serve: a closed loop keeps its clients busy (Little's law)", "[serve]") {
  // 2 clients, 6 requests of 10 in, 5 out: each pair runs together, the next pair arrives when it
  // ends. E2E of each = 1.02 ms (prompts) + 4 x 1.002 ms = 5.028 ms; duration 3 x 5.028 ms.
  // Throughput x mean E2E = 6 / 15.084 ms x 5.028 ms = 2 = the concurrency, exactly.
  HandTimer timer;
  ServeLimits limits = roomy();
  limits.concurrency = 2;
  std::vector<ServeRequest> requests;
  for (int i = 0; i < 6; ++i) requests.push_back(request(std::to_string(i), 0, 10, 5));
  const g5sim::ServeRun run = serve_requests(requests, limits, std::ref(timer));
  for (const serving::RequestOutcome& r : run.requests) CHECK(r.finish_ps - r.arrival_ps == 5'028'000'000);
  CHECK(run.requests[2].arrival_ps == 5'028'000'000);
  const serving::ServeSummary s = serving::summarize(run, 1, std::nullopt, std::nullopt);
  CHECK(s.requests_per_s * s.e2e_s.mean == Approx(2.0).epsilon(1e-12));
}

TEST_CASE("serve: bucketing places a number between the edges of a geometric grid of integer edges", "[serve]") {
  // 10 %: edges 1, 2, 3, ... 20 (each step of 10 % rounds down to +1), then 22, 24, 26, 28, 30, 33.
  CHECK(serving::nearest_edge(0, 10) == 0);
  CHECK(serving::nearest_edge(0.49, 10) == 0);
  CHECK(serving::nearest_edge(7.4, 0) == 7);
  CHECK(serving::nearest_edge(20, 10) == 20);
  CHECK(serving::nearest_edge(21, 10) == 22);  // 21 / 20 = 1.050 > 22 / 21 = 1.048
  CHECK(serving::nearest_edge(31, 10) == 30);  // 31 / 30 = 1.033 < 33 / 31 = 1.065
  auto text = [](const std::vector<serving::Bracket>& b) {
    std::string s;
    for (const serving::Bracket& x : b) s += fmt::format("{}:{} ", x.edge, x.weight);
    return s;
  };
  CHECK(text(serving::bracket(0, 10)) == "0:1 ");
  CHECK(text(serving::bracket(20, 10)) == "20:1 ");
  CHECK(text(serving::bracket(21, 10)) == "20:0.5 22:0.5 ");   // halfway between 20 and 22
  CHECK(text(serving::bracket(0.5, 10)) == "0:0.5 1:0.5 ");    // below the first edge: from 0
  CHECK(text(serving::bracket(7.25, 0)) == "7:0.75 8:0.25 ");  // percent 0: whole numbers
  // 32: (32 - 30) / 3 = 2 / 3 to 33, 1 - 2 / 3 to 30 (as doubles: 0.6666666666666666 and its complement).
  CHECK(text(serving::bracket(32, 10)) == "30:0.33333333333333337 33:0.6666666666666666 ");
}

TEST_CASE("serve: a bucketed step interpolates its anchors: with a step time linear in tokens, exactly", "[serve]") {
  // Prompts of 21 and 22 tokens (10 %): one group of 2 at the mean 21.5, between the edges 20 and
  // 22 (weights 0.25 and 0.75); their history: pairs 21 x 11 + 22 x 11.5 = 484, 484 / 43 - 22.5 / 2
  // = 0.006 -> 0. Then both decode, at 21 and 22: 2 decodes at the mean 21.5, again 20 and 22,
  // each corner's two decodes one token below and above it (typical histories).
  // Both steps needed new anchors and are not their own anchor, so both are sampled (4 allowed)
  // and re-timed exactly. HandTimer's time is 1 ms + 1 us a token, linear: the interpolation
  // 0.25 x (1 ms + 40 us) + 0.75 x (1 ms + 44 us) = 1 ms + 43 us is the exact prompt step's
  // time, and both decode anchors take 1 ms + 2 us: the measured error is exactly 0.
  HandTimer timer;
  ServeLimits limits = roomy();
  limits.bucket_percent = 10;
  limits.bucket_samples = 4;
  const g5sim::ServeRun run = serve_requests({request("a", 0, 21, 2), request("b", 0, 22, 2)}, limits, std::ref(timer));
  CHECK(timer.mixes == std::vector<std::string>{"2x20@0", "2x22@0", "1x1@19,1x1@21", "1x1@21,1x1@23", "1x21@0,1x22@0",
                                                "1x1@21,1x1@22"});
  CHECK(run.distinct_steps == 4);
  CHECK(run.steps[0].duration_ps == kMs + 43 * kUs);
  REQUIRE(run.bucket_error);
  CHECK(run.bucket_error->samples == 2);
  CHECK(run.bucket_error->max_abs == 0);
}

TEST_CASE("serve: a bucketed step is its fullest DP rank, decodes at their mean history, dealt to every rank",
          "[serve]") {
  auto anchors = [](const serving::StepGroups& exact, std::uint64_t percent, std::uint64_t dp, std::uint64_t width) {
    std::string s;
    for (const serving::StepAnchor& a : serving::bucketed_step(exact, percent, dp, width)) {
      s += fmt::format("{} x{:.6f}; ", g5sim::mix_text(a.groups), a.weight);
    }
    return s;
  };
  auto one = [](std::uint64_t q, std::uint64_t h) { return g5sim::SequenceRecord{1, q, h, ""}; };
  // dp 2, round robin in mix order: 1@100 -> rank 0, 1@200 -> 1, 1@300 -> 0, 1@1000 -> 1. Both ranks
  // have 2 new tokens; rank 1 has more history (1,200 against 400): its decodes at their mean
  // 1,200 / 2 = 600 (percent 0: whole numbers), the 2 sequences dealt to each of the 2 ranks.
  const serving::StepGroups decodes{one(1, 100), one(1, 200), one(1, 300), one(1, 1000)};
  CHECK(anchors(decodes, 0, 2, 1) == "4x1@600 x1.000000; ");
  // A 512-token prompt after them goes to rank 0 (the deal goes on where it stopped): rank 0 now
  // has 514 new tokens and is the fullest: decodes 100 and 300 at 200, the prompt kept (its
  // history: 512 x 256.5 / 512 - 513 / 2 = 0).
  serving::StepGroups mixed = decodes;
  mixed.push_back(one(512, 0));
  CHECK(anchors(mixed, 0, 2, 1) == "4x1@200,2x512@0 x1.000000; ");
  // Chunks 1x100@0 and 1x300@200 (percent 0): 2 chunks of the mean 200 tokens; causal pairs
  // 100 x 50.5 + 300 x (200 + 150.5) = 110,200 = 2 x 200 x (h + 100.5) -> h = 175.
  CHECK(anchors({one(100, 0), one(300, 200)}, 0, 1, 1) == "2x200@175 x1.000000; ");
  // 10 %, edges from 30 on: 33 36 39 42 46 50 55 60 66 72 79 86 94 103 113 124 136 149 163 179 196
  // 215 236 259 284 312 343 377 414 455 500 550 605 665. 2 decodes (an edge) at the mean 650.5:
  // 605 x 14.5 / 60 = 0.241667, 665 x 45.5 / 60 = 0.758333; the chunk's 64 tokens: 60 x 2 / 6,
  // 66 x 4 / 6; its history 300 -> the nearest edge 312 (1.040 < 1.056). Decodes beside a chunk
  // split (step_bucketing.hpp): the chunk's two corners with the 2 decodes at the reference
  // history 2 (weights 1/3 and 2/3), the decodes alone at 605 and 665 (their history weights),
  // and the decodes alone at 2 taken away (weight -1 x the count's 1). The decodes alone are
  // simulated one token below and above their edge (typical histories; not at the reference 2).
  CHECK(anchors({one(1, 301), one(1, 1000), one(64, 300)}, 10, 1, 1) ==
        "1x1@604,1x1@606 x0.241667; 1x1@664,1x1@666 x0.758333; 2x1@2 x-1.000000; 2x1@2,1x60@312 x0.333333; "
        "2x1@2,1x66@312 x0.666667; ");
  // Percent 0 (whole numbers) keeps the decodes' history in the corner: no split saves anything.
  CHECK(anchors({one(1, 301), one(1, 1000), one(64, 300)}, 0, 1, 1) ==
        "2x1@650,1x64@300 x0.500000; "
        "2x1@651,1x64@300 x0.500000; ");
  // MTP's verify width 3: groups of q_len 3 are the decodes; a q_len-1 chunk is not merged with
  // them (its history: 1 x (50 + 1) / 1 - 1 = 50).
  CHECK(anchors({one(1, 50), one(3, 100), one(3, 200)}, 0, 1, 3) == "1x1@50,2x3@150 x1.000000; ");
}

TEST_CASE("serve: a request that can never fit the KV cache is an error naming it", "[serve]") {
  HandTimer timer;
  ServeLimits limits;
  limits.kv_tokens = 64;
  limits.block_tokens = 16;
  // 60 in + 10 out needs 69 tokens at its end: 5 blocks of 16, the cache has 4.
  CHECK_THROWS_WITH(serve_requests({request("big", 0, 60, 10)}, limits, std::ref(timer)),
                    "request 'big' needs 69 tokens of KV cache (5 blocks of 16) at its end, but the deployment holds "
                    "4 blocks (64 tokens): it can never run");
  // With 2 MTP drafts its last verify holds 2 more: 50 in + 14 out - 1 + 2 = 65 tokens, 5 blocks.
  limits.mtp = 2;
  limits.accept = {0.5};
  CHECK_THROWS_WITH(serve_requests({request("drafts", 0, 50, 14)}, limits, std::ref(timer)),
                    "request 'drafts' needs 65 tokens of KV cache (5 blocks of 16) at its end, but the deployment "
                    "holds 4 blocks (64 tokens): it can never run");
  // One token less fits: 63 + 2 = 64 tokens, the 4 blocks, filled at the last verify.
  CHECK_NOTHROW(serve_requests({request("fits", 0, 50, 13)}, limits, std::ref(timer)));
}

TEST_CASE("serve: the trace reader names the file, line and column of what is wrong", "[serve][trace]") {
  const auto requests = serving::parse_request_trace(
      "# a comment\nid,arrival_s,input_tokens,output_tokens\n"
      "x,0.5,10,2\n\"y,z\",0.25,20,3\n",
      "t.csv");
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].id == "y,z");  // sorted by arrival
  CHECK(requests[0].arrival_ps == 250'000'000'000);
  CHECK(requests[1].input_tokens == 10);
  auto error = [](const std::string& text, const std::string& path) {
    try {
      (void)serving::parse_request_trace(text, path);
    } catch (const hw::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("arrival_s,input_tokens,output_tokens\n0,10,x\n", "t.csv") ==
        "t.csv:2:6: output_tokens: 'x' is not a whole number");
  CHECK(error("arrival_s,input_tokens,output_tokens\nnan,10,1\n", "t.csv") ==
        "t.csv:2:1: arrival_s: 'nan' is not a decimal number");
  CHECK(error("arrival_s,input,output_tokens\n", "t.csv") ==
        "t.csv:1:11: unknown column 'input' in the header: expected arrival_s,input_tokens,output_tokens and "
        "optionally id, session, shared_prefix");
  CHECK(error("arrival_s,input_tokens,output_tokens\n0,0,1\n", "t.csv") ==
        "t.csv:2:3: input_tokens: 0 is outside 1..16777216 tokens");
  CHECK(error("{\"arrival_s\": 0, \"input_tokens\": 5}\n", "t.jsonl") ==
        "t.jsonl:1:1: no key output_tokens: expected arrival_s,input_tokens,output_tokens and optionally id, session, "
        "shared_prefix");
  CHECK(error("{\"arrival_s\": 0, \"input_tokens\": 5, \"output_tokens\": 1, \"x\": 1}\n", "t.jsonl") ==
        "t.jsonl:1:1: unknown key 'x': expected arrival_s,input_tokens,output_tokens and optionally id, session, "
        "shared_prefix");
  CHECK(error("id,arrival_s,input_tokens,output_tokens\na,0,1,1\na,1,1,1\n", "t.csv") ==
        "t.csv: id 'a' names two requests");
  CHECK(error("", "t.csv") ==
        "t.csv: empty: expected a header (arrival_s,input_tokens,output_tokens and optionally id, session, "
        "shared_prefix) and a row per "
        "request");
}

TEST_CASE("serve: a trace or histogram saved with a UTF-8 byte order mark reads as without one", "[serve][trace]") {
  // Excel's "CSV UTF-8" starts the file with EF BB BF; before, the header's first column read as
  // "\ufeffarrival_s" and the trace was refused as an unknown column.
  const auto dir = std::filesystem::temp_directory_path() / "g5sim_test_bom";
  std::filesystem::create_directories(dir);
  const std::string trace = (dir / "t.csv").string(), histogram = (dir / "h.csv").string();
  {
    std::ofstream(trace, std::ios::binary) << "\xEF\xBB\xBF"
                                              "arrival_s,input_tokens,output_tokens\r\n0,10,2\r\n";
    std::ofstream(histogram, std::ios::binary) << "\xEF\xBB\xBFlow,high,weight\n7,7,1\n";
  }
  const auto requests = serving::read_request_trace(trace);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].input_tokens == 10);
  CHECK(requests[0].output_tokens == 2);
  const serving::LengthDistribution lengths = serving::LengthDistribution::parse(histogram, "input_len");
  REQUIRE(lengths.bins.size() == 1);
  CHECK(lengths.low == 7);
  // A mark anywhere else is text, and still refused where it stands (line 1, column 11).
  std::ofstream(trace, std::ios::binary) << "arrival_s,\xEF\xBB\xBF"
                                            "input_tokens,output_tokens\n";
  CHECK_THROWS_WITH(serving::read_request_trace(trace), Catch::StartsWith(trace + ":1:11: unknown column '\xEF\xBB\xBF"
                                                                                  "input_tokens'"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("serve: a synthetic load is the same for a seed, and its lengths stay in range", "[serve][trace]") {
  serving::SyntheticLoad load;
  load.requests = 1000;
  load.rate = 10;
  load.input = serving::LengthDistribution::parse("100:200", "input_len");
  load.output = serving::LengthDistribution::parse("50", "output_len");
  load.seed = 3;
  const auto a = serving::synthetic_requests(load), b = serving::synthetic_requests(load);
  REQUIRE(a.size() == 1000);
  std::uint64_t low = 1000, high = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].arrival_ps == b[i].arrival_ps);
    CHECK(a[i].input_tokens == b[i].input_tokens);
    low = std::min(low, a[i].input_tokens);
    high = std::max(high, a[i].input_tokens);
    CHECK(a[i].output_tokens == 50);
    if (i > 0) CHECK(a[i].arrival_ps >= a[i - 1].arrival_ps);
  }
  CHECK(low == 100);
  CHECK(high == 200);
  // 1,000 gaps of mean 0.1 s: the last arrival near 100 s (a Poisson sum: within 10 %).
  CHECK(a.back().arrival_ps > 90 * std::uint64_t{1'000'000'000'000});
  CHECK(a.back().arrival_ps < 110 * std::uint64_t{1'000'000'000'000});
  load.rate = 0;
  CHECK_THROWS_WITH(serving::synthetic_requests(load), "0 is not a rate in (0, 1000000] requests per second");
  CHECK_THROWS_WITH(serving::LengthDistribution::parse("9:3", "input_len"),
                    "'9:3' is outside 1..16777216 tokens (or LO > HI)");
}

TEST_CASE("serve: a length histogram draws a bin by weight, then a length in it, and its reader is strict",
          "[serve][trace]") {
  // Bins 1..1 (weight 1), 5..5 (weight 3) and 7..9 (weight 0: never drawn).
  const serving::LengthDistribution d =
      serving::LengthDistribution::parse_histogram("# lengths\nweight,low,high\n1,1,1\n3,5,5\n0,7,9\n", "h.csv");
  REQUIRE(d.bins.size() == 3);
  CHECK(d.low == 1);
  CHECK(d.high == 9);
  // Midpoints by weight: (1 x 1 + 5 x 3 + 8 x 0) / 4 = 4, exactly.
  CHECK(d.mean() == 4.0);
  std::mt19937_64 rng(7);
  std::uint64_t ones = 0, fives = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::uint64_t length = d.draw(rng);
    REQUIRE((length == 1 || length == 5));
    (length == 1 ? ones : fives) += 1;
  }
  // 1,000 and 3,000 expected; a binomial's standard deviation is 27: well within 150.
  CHECK(ones > 850);
  CHECK(ones < 1150);
  CHECK(ones + fives == 4000);
  auto error = [](const std::string& text) {
    try {
      (void)serving::LengthDistribution::parse_histogram(text, "h.csv");
    } catch (const hw::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("low,high,weight\n5,2,1\n") == "h.csv:2:3: high 2 is below low 5");
  CHECK(error("low,high,weight\n0,2,1\n") == "h.csv:2:1: low: '0' is not a whole number of tokens 1..16777216");
  CHECK(error("low,high,weight\n1,2,-1\n") == "h.csv:2:5: weight: '-1' is not a decimal number 0..1e+15");
  // The fuzz campaign's finding: a weight of 1.51e302 summed finitely but its bin's midpoint
  // (2,560,640.5 tokens) times it did not; weights above 1e15 are refused where they are read.
  CHECK(error("low,high,weight\n257,5121024,151e300\n") ==
        "h.csv:2:13: weight: '151e300' is not a decimal number 0..1e+15");
  CHECK(error("low,high\n") == "h.csv:1:1: the header has no column weight: expected low,high,weight");
  CHECK(error("low,high,weight,x\n") == "h.csv:1:17: unknown column 'x' in the header: expected low,high,weight");
  CHECK(error("low,high,weight\n1,2,0\n") == "h.csv: the weights sum to 0: at least one bin needs a positive weight");
  CHECK(error("# nothing\n") == "h.csv: no bins: expected a header (low,high,weight) and a row per bin");
  // A length that is neither N nor LO:HI is a histogram file's path: a missing one says so.
  CHECK_THROWS_AS(serving::LengthDistribution::parse("no/such/file.csv", "input_len"), hw::ConfigError);
  // A mistyped length (the letter O for a zero) names no file: the error says what a length is.
  CHECK_THROWS_WITH(serving::LengthDistribution::parse("12O", "input_len"),
                    "'12O' is not a length N, a range LO:HI, or a histogram file that exists");
}

TEST_CASE("serve: on the simulator, TTFT is the prompt's step and each ITL a decode step's time", "[serve][sim]") {
  // Qwen2.5-1.5B, 2 layers, on H100: every time below is simulate()'s own for the same mix.
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("qwen2.5-1.5b"));
  g5sim::Request base;
  base.layers = 2;
  const g5sim::ServeReport report =
      g5sim::serve(chip, model, base, {request("only", 0, 256, 3)}, g5sim::ServeSettings{});
  auto step_ps = [&](const std::string& mix) {
    g5sim::Request r = base;
    r.mix = mix;
    r.tp = r.ep = r.dp = 1;
    return g5sim::simulate(chip, model, r).total_ps;
  };
  const serving::RequestOutcome& o = report.run.requests.at(0);
  CHECK(o.first_token_ps == step_ps("1x256@0"));
  CHECK(o.itl_ps == std::vector<std::uint64_t>{step_ps("1x1@256"), step_ps("1x1@257")});
  // The KV cache: (0.9 x 80 GiB - the weights) / (28 layers x 2 KV heads x 2 x 128 x 2 B = 28,672 B).
  CHECK(report.memory.kv_bytes_per_token == 28'672);
  const double usable = std::floor(0.9 * 85'899'345'920.0) - static_cast<double>(report.memory.weight_bytes);
  CHECK(report.settings.count("kv_tokens") == static_cast<std::uint64_t>(usable / 28'672.0));
}

TEST_CASE("serve: energy is every step's dynamic energy on each chip plus static power over the serve",
          "[serve][sim][energy]") {
  // H100 has an energy section (configs/chips/h100.yaml): one request alone, 256 in, 3 out, on a
  // one-chip deployment, so the serve's steps are exactly the three simulations below and its
  // duration their sum (arrival at 0, no idle time).
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("qwen2.5-1.5b"));
  g5sim::Request base;
  base.layers = 2;
  const g5sim::ServeReport report =
      g5sim::serve(chip, model, base, {request("only", 0, 256, 3)}, g5sim::ServeSettings{});
  REQUIRE(report.energy);
  REQUIRE(report.chips == 1);
  double dynamic_j = 0, static_w = 0;
  std::uint64_t total_ps = 0;
  for (const char* mix : {"1x256@0", "1x1@256", "1x1@257"}) {
    g5sim::Request r = base;
    r.mix = mix;
    r.tp = r.ep = r.dp = 1;
    const g5sim::Result s = g5sim::simulate(chip, model, r);
    dynamic_j += s.dynamic_energy_j;
    total_ps += s.total_ps;
    static_w = s.static_energy_j * 1e12 / static_cast<double>(s.total_ps);  // W = pJ / ps
  }
  const g5sim::ServeEnergy& e = *report.energy;
  // The same three additions in the same order: exact.
  CHECK(e.dynamic_j == dynamic_j);
  // Static: the chip's watts over the serve's duration (ps -> s: the summary's own division).
  CHECK(report.summary.duration_s == static_cast<double>(total_ps) / 1e12);
  CHECK(e.static_j == Approx(static_w * static_cast<double>(total_ps) / 1e12).epsilon(1e-12));
  CHECK(e.total_j == e.dynamic_j + e.static_j);
  // Three output tokens.
  CHECK(e.joules_per_token == e.total_j / 3);
  CHECK(e.tokens_per_joule == 1 / e.joules_per_token);
  CHECK(e.average_w == e.total_j / report.summary.duration_s);
  CHECK(e.tdp_w == 700);
}

TEST_CASE("serve: a shared step store gives the same serve and simulates nothing the second time", "[serve][sim]") {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("qwen2.5-1.5b"));
  g5sim::Request base;
  base.layers = 2;
  g5sim::ServeControls shared;
  shared.shared_steps = std::make_shared<g5sim::SharedStepTimes>();
  const std::vector<ServeRequest> load{request("a", 0, 256, 3), request("b", 1'000'000, 128, 4)};
  const g5sim::ServeSettings settings;
  const g5sim::ServeReport alone = g5sim::serve(chip, model, base, load, settings);
  const g5sim::ServeReport first = g5sim::serve(chip, model, base, load, settings, shared);
  g5sim::ServeSettings one_at_a_time;  // another engine, the same deployment: its steps are a subset
  one_at_a_time.set("max_seqs", std::uint64_t{1});
  const g5sim::ServeReport second = g5sim::serve(chip, model, base, load, one_at_a_time, shared);
  CHECK(first.simulated_commands == alone.simulated_commands);
  for (std::size_t i = 0; i < load.size(); ++i) {
    CHECK(first.run.requests[i].finish_ps == alone.run.requests[i].finish_ps);
    CHECK(first.run.requests[i].itl_ps == alone.run.requests[i].itl_ps);
  }
  CHECK(first.energy->total_j == alone.energy->total_j);
  // max_seqs 1 runs a alone, then b: its first step (a's prompt, 1x256@0) is the first serve's
  // first step, found in the store, so it simulates less than the same serve without the store,
  // with the same times.
  const g5sim::ServeReport unshared = g5sim::serve(chip, model, base, load, one_at_a_time);
  CHECK(second.simulated_commands < unshared.simulated_commands);
  // A serve whose steps differ in a run option (int8 weights) shares none of them: it simulates
  // as much as it does alone and finishes when it does alone (the store once handed it the bf16
  // steps, since its key held the deployment but not the weights' format).
  g5sim::Request int8 = base;
  int8.weight_dtype = "int8";
  const g5sim::ServeReport int8_alone = g5sim::serve(chip, model, int8, load, settings);
  const g5sim::ServeReport int8_shared = g5sim::serve(chip, model, int8, load, settings, shared);
  CHECK(int8_shared.simulated_commands == int8_alone.simulated_commands);
  CHECK(int8_shared.run.requests[1].finish_ps == int8_alone.run.requests[1].finish_ps);
  CHECK(int8_shared.run.requests[1].finish_ps != alone.run.requests[1].finish_ps);
  // A limit that changes no result (calibrate's trials run at 4x its first pass's max_commands)
  // and the replay switch share every step: the same serve simulates nothing and ends the same.
  g5sim::Request limits = base;
  limits.max_commands = base.max_commands * 4;
  limits.replay = false;
  const g5sim::ServeReport same = g5sim::serve(chip, model, limits, load, settings, shared);
  CHECK(same.simulated_commands == 0);
  CHECK(same.run.requests[1].finish_ps == alone.run.requests[1].finish_ps);
}

namespace {

// Steps ahead (serving_engine.hpp) with a prefetch whose simulations end at once with the hand
// timer's times: it records what the engine started.
struct HandPrefetch {
  HandTimer times;
  std::set<std::string> started;
  serving::StepPrefetch hooks(unsigned jobs) {
    serving::StepPrefetch p;
    p.jobs = jobs;
    p.start = [this](const StepGroups& groups, bool) { return started.insert(g5sim::mix_text(groups)).second; };
    p.started = [this](const StepGroups& groups, bool) { return started.count(g5sim::mix_text(groups)) != 0; };
    p.running = [] { return std::size_t{0}; };
    p.ready = [this](const StepGroups& groups, bool) -> std::optional<StepTime> {
      if (started.count(g5sim::mix_text(groups)) == 0) return std::nullopt;
      return times(groups);
    };
    return p;
  }
};

// The serve with steps ahead on 2 threads (the prefetch's; the exact steps' timer is this thread's).
g5sim::ServeRun serve_ahead(std::vector<ServeRequest> requests, const ServeLimits& l, HandTimer& timer,
                            HandPrefetch& ahead) {
  serving::StepHooks hooks;
  hooks.prefetch = ahead.hooks(2);
  return serve_requests(std::move(requests), l, std::ref(timer), {}, {}, hooks);
}

void check_same_serve(const g5sim::ServeRun& a, const g5sim::ServeRun& b) {
  REQUIRE(a.requests.size() == b.requests.size());
  for (std::size_t i = 0; i < a.requests.size(); ++i) {
    CHECK(a.requests[i].first_token_ps == b.requests[i].first_token_ps);
    CHECK(a.requests[i].finish_ps == b.requests[i].finish_ps);
    CHECK(a.requests[i].itl_ps == b.requests[i].itl_ps);
  }
  REQUIRE(a.steps.size() == b.steps.size());
  for (std::size_t k = 0; k < a.steps.size(); ++k) {
    CHECK(a.steps[k].start_ps == b.steps[k].start_ps);
    CHECK(a.steps[k].duration_ps == b.steps[k].duration_ps);
  }
  CHECK(a.distinct_steps == b.distinct_steps);
}

}  // namespace

TEST_CASE("serve: steps simulated ahead change nothing, and where time decides no step every one is taken",
          "[serve][ahead]") {
  // An open loop whose arrivals fall between steps: a copy of the engine guesses each step's time
  // (the last one's), so some steps it started are not the ones taken. The serve is the same, and
  // the timer is asked for the same steps in the same order.
  std::vector<ServeRequest> open;
  for (std::uint64_t i = 0; i < 30; ++i)
    open.push_back(request(fmt::format("r{}", i), i * 2'300 * kUs, 40 + 9 * i, 3 + i % 7));
  HandTimer alone_timer, ahead_timer;
  HandPrefetch ahead;
  const g5sim::ServeRun alone = serve_requests(open, roomy(), std::ref(alone_timer));
  const g5sim::ServeRun with_ahead = serve_ahead(open, roomy(), ahead_timer, ahead);
  check_same_serve(alone, with_ahead);
  CHECK(ahead_timer.mixes == alone_timer.mixes);
  std::size_t taken = 0;
  for (const std::string& m : ahead_timer.mixes) taken += ahead.started.count(m);
  CHECK(taken > 0);
  // A closed loop of one client: each request comes when the last one ends, so no step depends
  // on a time and every step the copy takes is the engine's. Four requests of 5 output tokens,
  // prompts 100 tokens apart: a prompt step and 4 decodes each (histories 100p .. 100p + 3), 20
  // distinct steps. On 2 threads the copy takes 4 x 2 = 8 steps past the engine's own (this
  // prefetch's runs end at once, so none is running): the engine times steps 1, 10 and 19 itself
  // (each not at hand, and never started) and the 17 others were started ahead; none started is
  // left over.
  ServeLimits one = roomy();
  one.concurrency = 1;
  std::vector<ServeRequest> closed;
  for (std::uint64_t p = 1; p <= 4; ++p) closed.push_back(request(fmt::format("c{}", p), 0, 100 * p, 5));
  HandTimer closed_alone_timer, closed_timer;
  HandPrefetch closed_ahead;
  const g5sim::ServeRun closed_alone = serve_requests(closed, one, std::ref(closed_alone_timer));
  const g5sim::ServeRun closed_run = serve_ahead(closed, one, closed_timer, closed_ahead);
  check_same_serve(closed_alone, closed_run);
  REQUIRE(closed_timer.mixes.size() == 20);
  std::size_t closed_taken = 0;
  for (const std::string& m : closed_timer.mixes) closed_taken += closed_ahead.started.count(m);
  CHECK(closed_taken == 17);
  CHECK(closed_ahead.started.size() == 17);
  CHECK(closed_timer.mixes[0] == "1x100@0");
  CHECK(closed_ahead.started.count("1x100@0") == 0);
}

TEST_CASE("serve: an exact serve on the simulator is the same on one thread and with steps simulated ahead",
          "[serve][sim][ahead]") {
  const g5sim::Chip chip = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("qwen2.5-1.5b"));
  g5sim::Request base;
  base.layers = 2;
  base.runtime = "sglang";  // its serial front end: jobs between the steps
  std::vector<ServeRequest> load;
  for (std::uint64_t i = 0; i < 12; ++i)
    load.push_back(request(fmt::format("r{}", i), i * 900 * kUs, 64 + 37 * i, 2 + i % 5));
  g5sim::ServeSettings one_thread;
  one_thread.set_text("step_cache", "exact");
  one_thread.set("jobs", std::uint64_t{1});
  one_thread.set_text("step_cache_dir", "off");  // both simulate every step (no folder shared between them)
  g5sim::ServeSettings three = one_thread;
  three.set("jobs", std::uint64_t{3});
  const g5sim::ServeReport a = g5sim::serve(chip, model, base, load, one_thread);
  const g5sim::ServeReport b = g5sim::serve(chip, model, base, load, three);
  check_same_serve(a.run, b.run);
  CHECK(a.simulated_commands == b.simulated_commands);
  CHECK(b.steps_read == 0);
  CHECK(a.summary.tpot_ms.p99 == b.summary.tpot_ms.p99);
  // A step cache folder, cold then warm: the warm serve reads every step (ahead of its timer, once
  // each) and simulates none; both are the serve above.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "g5sim_test_ahead_folder";
  std::filesystem::remove_all(dir);
  g5sim::ServeSettings folder = three;
  folder.set_text("step_cache_dir", dir.string());
  const g5sim::ServeReport cold = g5sim::serve(chip, model, base, load, folder);
  const g5sim::ServeReport warm = g5sim::serve(chip, model, base, load, folder);
  std::filesystem::remove_all(dir);
  check_same_serve(a.run, cold.run);
  check_same_serve(a.run, warm.run);
  CHECK(cold.steps_read == 0);
  CHECK(cold.simulated_commands == a.simulated_commands);
  CHECK(warm.steps_read == a.run.distinct_steps);
  CHECK(warm.simulated_commands == 0);
}

TEST_CASE("serve: disaggregated, a prompt's KV cache moves to a decode instance and its first token with it",
          "[serve][disagg]") {
  HandTimer timer;
  ServeLimits limits = roomy();
  limits.prefill_instances = 1;
  limits.decode_instances = 1;
  // 1,000 B per cached token over 1 GB/s (1 B per ns) after 500 ns: a 100-token prompt moves
  // 100,000 B in 500 + 100,000 ns = 100.5 us.
  limits.kv_transfer = g5sim::KvTransfer{1000, 1.0, 500.0, "c2c"};
  const g5sim::ServeRun run = serve_requests({request("a", 0, 100, 3)}, limits, std::ref(timer));
  // The prefill instance: 1.1 ms; the token arrives with the cache at 1.2005 ms; the decode
  // instance then takes 2 steps of 1.001 ms at histories 100 and 101.
  CHECK(timer.mixes == std::vector<std::string>{"1x100@0", "1x1@100", "1x1@101"});
  const serving::RequestOutcome& a = run.requests.at(0);
  CHECK(a.kv_transfer_bytes == 100'000);
  CHECK(run.kv_transfer_bytes == 100'000);
  CHECK(a.first_token_ps == 1'100'000'000 + 100'500'000);
  CHECK(a.itl_ps == std::vector<std::uint64_t>{1'001'000'000, 1'001'000'000});
  CHECK(a.finish_ps == 1'200'500'000 + 2 * std::uint64_t{1'001'000'000});
  REQUIRE(run.steps.size() == 3);
  CHECK(run.steps[0].instance == 0);
  CHECK(run.steps[1].instance == 1);
  CHECK(run.steps[1].start_ps == 1'200'500'000);
}

TEST_CASE("serve: disaggregated, finished prompts go to the decode instances round robin", "[serve][disagg]") {
  HandTimer timer;
  ServeLimits limits = roomy();
  limits.prefill_instances = 1;
  limits.decode_instances = 2;
  limits.kv_transfer = g5sim::KvTransfer{1000, 1.0, 500.0, "c2c"};
  // a (10 in) and b (20 in) share the prefill step (1.03 ms); a's cache (10,000 B, 10.5 us) goes
  // to decode instance 1, b's (20,000 B, 20.5 us) to instance 2; each decodes there alone. A
  // request of one output token ends on the prefill instance: nothing moves.
  const g5sim::ServeRun run = serve_requests(
      {request("a", 0, 10, 2), request("b", 0, 20, 2), request("c", 5 * kMs, 30, 1)}, limits, std::ref(timer));
  REQUIRE(run.steps.size() == 4);
  CHECK(run.steps[1].instance == 1);
  CHECK(run.steps[1].start_ps == 1'040'500'000);
  CHECK(run.steps[2].instance == 2);
  CHECK(run.steps[2].start_ps == 1'050'500'000);
  CHECK(run.steps[3].instance == 0);
  CHECK(run.kv_transfer_bytes == 30'000);
  CHECK(run.requests[2].kv_transfer_bytes == 0);
  CHECK(run.requests[2].finish_ps == 5 * kMs + 1'030'000'000);
}

TEST_CASE("serve: a decode chip of its own times the decode instances' steps, with its own KV cache and DP ranks",
          "[serve][disagg][roles]") {
  // The prefill chip: 1 ms + 1 us a token (HandTimer); the decode chip: 3 ms + 2 us a token.
  HandTimer prefill;
  std::vector<std::string> decode_mixes;
  serving::StepTimer decode = [&](const StepGroups& groups) {
    decode_mixes.push_back(g5sim::mix_text(groups));
    std::uint64_t tokens = 0;
    for (const g5sim::SequenceRecord& g : groups) tokens += g.count * g.q_len;
    return StepTime{3 * kMs + 2 * kUs * tokens, false, 0, 0};
  };
  g5sim::ServeSettings s;
  s.set("kv_tokens", std::uint64_t{1'000'000});
  g5sim::ServeSetup setup;
  setup.prefill_instances = 1;
  setup.decode_instances = 1;
  setup.kv_transfer = g5sim::KvTransfer{1000, 1.0, 500.0, "c2c"};
  // The decode instance holds 160 tokens: 10 blocks of 16.
  setup.decode_chip = g5sim::ServeSetup::DecodeChip{2, 160, {}};
  const std::vector<serving::ChipSteps> chips{{std::ref(prefill), {}, {}}, {decode, {}, {}}};
  const g5sim::ServeRun run = serving::serve_requests({request("a", 0, 100, 3)}, s, setup, chips);
  // The prompt on the prefill chip (1.1 ms), its cache over the link (100,000 B: 100.5 us), then
  // 2 decodes on the decode chip at 3.002 ms each.
  CHECK(prefill.mixes == std::vector<std::string>{"1x100@0"});
  CHECK(decode_mixes == std::vector<std::string>{"1x1@100", "1x1@101"});
  REQUIRE(run.steps.size() == 3);
  CHECK(run.steps[0].duration_ps == 1'100'000'000);
  CHECK(run.steps[1].start_ps == 1'200'500'000);
  CHECK(run.steps[1].duration_ps == 3'002'000'000);
  CHECK(run.requests[0].finish_ps == 1'200'500'000 + 2 * std::uint64_t{3'002'000'000});
  // Each instance's blocks: 62,500 on the prefill side, 10 on the decode side; a step's use is of its own.
  CHECK(run.kv_blocks == 62'500);
  CHECK(run.decode_kv_blocks == 10);
  CHECK(run.steps[0].kv_blocks == 62'500);
  CHECK(run.steps[1].kv_blocks == 10);
  CHECK(run.steps[1].kv_blocks_used == 7);  // 101 tokens: ceil(101 / 16)
}

TEST_CASE("serve: a request the decode chip's cache cannot hold is refused before anything runs",
          "[serve][disagg][roles]") {
  HandTimer timer;
  g5sim::ServeSettings s;
  s.set("kv_tokens", std::uint64_t{1'000'000});
  g5sim::ServeSetup setup;
  setup.prefill_instances = 1;
  setup.decode_instances = 1;
  setup.kv_transfer = g5sim::KvTransfer{1000, 1.0, 500.0, "c2c"};
  setup.decode_chip = g5sim::ServeSetup::DecodeChip{1, 64, {}};
  const std::vector<serving::ChipSteps> chips{{std::ref(timer), {}, {}}, {std::ref(timer), {}, {}}};
  // 100 + 3 - 1 = 102 tokens at its end: 7 blocks of 16; the decode chip holds 4.
  CHECK_THROWS_WITH(
      serving::serve_requests({request("a", 0, 100, 3)}, s, setup, chips),
      Catch::Contains("request 'a' needs 102 tokens") && Catch::Contains("the decode chip holds 4 blocks"));
  CHECK(timer.mixes.empty());
}

TEST_CASE("serve: H100 prefill beside SG2262 decode: the latent cache crosses at H100's RDMA rate",
          "[serve][sim][disagg][roles]") {
  // DeepSeek-V3 (2 of its layers simulated; memory and cache are the whole model's): one request of
  // 1,024 tokens and 2 outputs, its prompt on H100, its one decode on SG2262.
  const g5sim::Chip h100 = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Chip sg2262 = g5sim::Chip::from_file(g5sim::chip_path("sg2262"));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("deepseek-v3"));
  g5sim::Request base;
  base.layers = 2;
  g5sim::ServeSettings settings;
  settings.set_text("disagg", "1:1");
  settings.set_text("step_cache", "exact");
  settings.set_text("decode_chip", "sg2262");
  const g5sim::ServeReport report = g5sim::serve(h100, model, base, {request("only", 0, 1024, 2)}, settings);
  REQUIRE(report.roles);
  const g5sim::ServeRoles& roles = *report.roles;
  CHECK(roles.own_chips);
  CHECK(roles.prefill.chip == "H100");
  CHECK(roles.decode.chip == "SG2262");
  // MLA's latent cache, every layer: 61 x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 B = 70,272
  // B a token, on every chip of either side (DP ranks each hold their sequences whole).
  CHECK(roles.prefill.memory.kv_bytes_per_token == 70'272);
  CHECK(roles.decode.memory.kv_bytes_per_token == 70'272);
  // The prompt's 1,024 tokens: 71,958,528 B.
  CHECK(report.run.kv_transfer_bytes == 71'958'528);
  CHECK(report.run.requests.at(0).kv_transfer_bytes == 71'958'528);
  // The slower side: H100's RDMA, 50 GB/s after 5,000 ns (configs/chips/h100.yaml nodes), against
  // SG2262's 8 C2C links of 56 GB/s (448 GB/s, 250 ns).
  CHECK(roles.prefill.link.link == "rdma");
  CHECK(roles.decode.link.link == "c2c");
  CHECK(roles.decode.link.bandwidth_gb_per_s == 448);
  const g5sim::KvTransfer& t = report.setup.kv_transfer;
  CHECK(t.bandwidth_gb_per_s == 50);
  CHECK(t.latency_ns == 5000);
  CHECK(t.bytes_per_token == 70'272);
  // 5,000 ns + 71,958,528 B / 50 B/ns = 5,000 + 1,439,170.56 ns = 1,444,170,560 ps.
  CHECK(t.picoseconds(71'958'528) == 1'444'170'560);
  // Each side's steps are its own chip's simulation, on its own deployment.
  const g5sim::Deployment& pd = roles.prefill.memory.deployment;
  const g5sim::Deployment& dd = roles.decode.memory.deployment;
  auto step_ps = [&](const g5sim::Chip& chip, const g5sim::Deployment& d, const std::string& mix) {
    g5sim::Request r = base;
    r.mix = mix;
    r.tp = d.tp;
    r.ep = d.ep;
    r.dp = d.dp;
    return g5sim::simulate(chip, model, r).total_ps;
  };
  REQUIRE(report.run.steps.size() == 2);
  const g5sim::StepLog& first = report.run.steps[0];
  const g5sim::StepLog& second = report.run.steps[1];
  CHECK(first.instance == 0);
  CHECK(first.start_ps == 0);
  CHECK(first.duration_ps == step_ps(h100, pd, "1x1024@0"));
  CHECK(second.instance == 1);
  CHECK(second.start_ps == first.duration_ps + 1'444'170'560);
  CHECK(second.duration_ps == step_ps(sg2262, dd, "1x1@1024"));
  // The first token comes with the cache; the second ends the decode.
  const serving::RequestOutcome& o = report.run.requests.at(0);
  CHECK(o.first_token_ps == second.start_ps);
  CHECK(o.finish_ps == second.start_ps + second.duration_ps);
  // Chips: each side's instance, sharded for its own chip.
  CHECK(report.chips == pd.chips() + dd.chips());
}

TEST_CASE("serve: attention-FFN disaggregation times each step as g5sim::afd_step, on A + F chips",
          "[serve][sim][afd]") {
  // DeepSeek-V3's first 2 (dense) layers simulated; attention on 2 SG2262, FFN on 16 H100 (the
  // whole model's FFN side, 44.8 GB a chip; 4 could not hold it).
  const g5sim::Chip sg2262 = g5sim::Chip::from_file(g5sim::chip_path("sg2262"));
  const g5sim::Chip h100 = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model v3 = g5sim::Model::from_file(g5sim::model_path("deepseek-v3"));
  g5sim::Request base;
  base.layers = 2;
  g5sim::ServeSettings settings;
  settings.set_text("afd", "2:16");
  settings.set_text("ffn_chip", "h100");
  settings.set_text("step_cache", "exact");
  const g5sim::ServeReport report = g5sim::serve(sg2262, v3, base, {request("only", 0, 256, 2)}, settings);
  REQUIRE(report.afd);
  CHECK(report.chips == 18);
  CHECK(report.afd->ffn_chip == "H100");
  // Each step is the AFD step of its groups: the prompt, then one decode.
  auto afd_ps = [&](const std::string& mix) {
    g5sim::Request r = base;
    r.groups = {mix == "1x256@0" ? g5sim::SequenceRecord{1, 256, 0, ""} : g5sim::SequenceRecord{1, 1, 256, ""}};
    return g5sim::afd_step(sg2262, 2, h100, 16, v3, r).schedule.total_ps;
  };
  REQUIRE(report.run.steps.size() == 2);
  CHECK(report.run.steps[0].duration_ps == afd_ps("1x256@0"));
  CHECK(report.run.steps[1].duration_ps == afd_ps("1x1@256"));
  // 257 new tokens over 2 dense layers, 7,168 x 2 B each way: 257 x 2 x 14,336 = 7,368,704 B.
  CHECK(report.afd->dispatch_bytes == 7'368'704);
  CHECK(report.afd->combine_bytes == 7'368'704);
  // The KV cache is the attention side's: 2 DP ranks, each (0.9 x DDR - its attention weights) /
  // 70,272 B a token.
  CHECK(report.memory.deployment.dp == 2);
  CHECK(report.memory.kv_bytes_per_token == 70'272);
  const double usable = std::floor(0.9 * static_cast<double>(report.memory.capacity_bytes));
  CHECK(report.settings.count("kv_tokens") ==
        2 * static_cast<std::uint64_t>((usable - static_cast<double>(report.memory.weight_bytes)) / 70'272.0));
  // What AFD does not combine with yet is refused, naming the field.
  auto field_of = [&](const char* knob, const char* value, std::optional<std::uint64_t> tp = std::nullopt) {
    g5sim::ServeSettings s = settings;
    if (*knob) s.set_text(knob, value);
    g5sim::Request r = base;
    r.tp = tp;
    try {
      (void)g5sim::serve(sg2262, v3, r, {request("only", 0, 16, 2)}, s);
    } catch (const g5sim::ConfigError& e) {
      return e.field();
    }
    return std::string("none");
  };
  CHECK(field_of("disagg", "1:1") == "afd");
  CHECK(field_of("", "", 2) == "tp");
  CHECK(field_of("mtp", "1") == "mtp");
  CHECK(field_of("afd", "none") == "ffn_chip");  // an FFN chip without --afd
  CHECK(field_of("afd", "2:4") == "afd");        // four H100s cannot hold DeepSeek-V3's FFN side
}

TEST_CASE("serve: a chip per role needs a disaggregation", "[serve][disagg][roles]") {
  const g5sim::Chip h100 = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("qwen2.5-1.5b"));
  g5sim::ServeSettings settings;
  settings.set_text("decode_chip", "sg2262");
  try {
    (void)g5sim::serve(h100, model, g5sim::Request{}, {request("only", 0, 16, 2)}, settings);
    FAIL("no error");
  } catch (const g5sim::ConfigError& e) {
    CHECK(e.field() == "decode_chip");
    CHECK_THAT(e.what(), Catch::Contains("give --disagg P:D"));
  }
  // A chip no config has is refused when given, naming the knob.
  try {
    settings.set_text("prefill_chip", "h1000");
    FAIL("no error");
  } catch (const g5sim::ConfigError& e) {
    CHECK(e.field() == "prefill_chip");
    CHECK_THAT(e.what(), Catch::Contains("did you mean 'h100'"));
  }
}

TEST_CASE("serve: each role sharded its own way on one chip (--decode-ep, --decode-dp)",
          "[serve][sim][disagg][roles]") {
  // DeepSeek-V3 on H100 (2 of its layers simulated): prefill instances at tp 1 ep 16 dp 16 (the
  // step's --tp/--ep/--dp), decode instances at ep 32 dp 32 (their tp from --tp), as DeepSeek's
  // own deployment shards decode wider than prefill.
  const g5sim::Chip h100 = g5sim::Chip::from_file(g5sim::chip_path("h100"));
  const g5sim::Model model = g5sim::Model::from_file(g5sim::model_path("deepseek-v3"));
  g5sim::Request base;
  base.layers = 2;
  base.tp = 1;
  base.ep = 16;
  base.dp = 16;
  g5sim::ServeSettings settings;
  settings.set_text("disagg", "1:1");
  settings.set_text("step_cache", "exact");
  settings.set_text("decode_ep", "32");
  settings.set_text("decode_dp", "32");
  const g5sim::ServeReport report = g5sim::serve(h100, model, base, {request("only", 0, 256, 2)}, settings);
  REQUIRE(report.roles);
  const g5sim::Deployment& pd = report.roles->prefill.memory.deployment;
  const g5sim::Deployment& dd = report.roles->decode.memory.deployment;
  CHECK((pd.tp == 1 && pd.ep == 16 && pd.dp == 16));
  CHECK((dd.tp == 1 && dd.ep == 32 && dd.dp == 32));
  CHECK(report.roles->decode.chip == "H100");
  CHECK(report.roles->own_chips);  // sized apart
  // Chips: one prefill instance of 16 and one decode instance of 32.
  CHECK(report.chips == 48);
  // The decode step is the 32-chip deployment's simulation of one sequence at 256 tokens.
  g5sim::Request decode = base;
  decode.mix = "1x1@256";
  decode.ep = 32;
  decode.dp = 32;
  REQUIRE(report.run.steps.size() == 2);
  CHECK(report.run.steps[1].duration_ps == g5sim::simulate(h100, model, decode).total_ps);
  // Without prefill and decode instances a role's sharding is refused, naming the knob.
  g5sim::ServeSettings colocated;
  colocated.set_text("decode_ep", "32");
  try {
    (void)g5sim::serve(h100, model, base, {request("only", 0, 256, 2)}, colocated);
    FAIL("no error");
  } catch (const g5sim::ConfigError& e) {
    CHECK(e.field() == "decode_ep");
    CHECK_THAT(e.what(), Catch::Contains("give --disagg P:D"));
  }
}

TEST_CASE("serve: MTP with every draft accepted emits K + 1 tokens a verify", "[serve][mtp]") {
  HandTimer timer;
  ServeLimits limits = roomy();
  limits.mtp = 2;
  limits.accept = {1.0};
  // A draft pass costs 100 us: a verify step of one request is 1 ms + 3 us (3 tokens) + 2 x
  // 100 us = 1.203 ms. 10 output tokens: the prompt's step gives the first, then 3 verifies give
  // 3 each, their histories 10, 13 and 16.
  const auto draft = [](const StepGroups& groups) {
    CHECK(groups.size() == 1);
    CHECK(groups[0].q_len == 1);
    return StepTime{100 * kUs, false, 0, 0};
  };
  const g5sim::ServeRun run = serve_requests({request("a", 0, 10, 10)}, limits, std::ref(timer), {}, draft);
  CHECK(timer.mixes == std::vector<std::string>{"1x10@0", "1x3@10", "1x3@13", "1x3@16"});
  CHECK(run.mtp_verifies == 3);
  CHECK(run.mtp_tokens == 9);
  const serving::RequestOutcome& a = run.requests[0];
  CHECK(a.first_token_ps == 1'010'000'000);
  CHECK(a.itl_ps == std::vector<std::uint64_t>{1'203'000'000, 1'203'000'000, 1'203'000'000});
  CHECK(a.finish_ps == 1'010'000'000 + 3 * std::uint64_t{1'203'000'000});
}

TEST_CASE("serve: MTP's expected acceptance carries the fraction of a token to the next verify", "[serve][mtp]") {
  HandTimer timer;
  ServeLimits limits = roomy();
  limits.mtp = 2;
  limits.accept = {0.5};
  // E = 0.5 + 0.25 = 0.75 drafts a verify: credits 0.75, 1.5, 1.25, 1.0 accept 0, 1, 1, 1 drafts:
  // 1, 2, 2, 2 tokens, so 8 output tokens take the prompt's step and 4 verifies; the cache keeps
  // only the fed and accepted tokens: histories 10, 11, 13, 15.
  const g5sim::ServeRun run = serve_requests({request("a", 0, 10, 8)}, limits, std::ref(timer));
  CHECK(timer.mixes == std::vector<std::string>{"1x10@0", "1x3@10", "1x3@11", "1x3@13", "1x3@15"});
  CHECK(run.mtp_tokens == 7);
  // Nothing drafts them (no draft timer): each verify is 1.003 ms.
  CHECK(run.requests[0].finish_ps == 1'010'000'000 + 4 * std::uint64_t{1'003'000'000});
  limits.accept = {0.5, 2.0};
  CHECK_THROWS_WITH(serve_requests({request("a", 0, 10, 8)}, limits, std::ref(timer)), "2 is not a rate in [0, 1]");
}

TEST_CASE("serve: prefill-first steps run prompts alone while decodes wait (SGLang's default)", "[serve]") {
  HandTimer timer;
  ServeLimits limits = roomy();
  limits.max_batched_tokens = 50;
  limits.schedule = "prefill-first";
  // The set-up of "decodes go first" above. Step 1 (t 0): a's prompt, 1.01 ms. Step 2 (t 1.01):
  // b has arrived and fits: a prompt step, b's first 50 tokens alone (a's decode waits), 1.05 ms.
  // Step 3 (t 2.06): b's last 50, 1.05 ms; b's token at 3.11 ms. Steps 4 and 5: a's two decodes,
  // 1.001 ms each, at histories 10 and 11.
  const g5sim::ServeRun run =
      serve_requests({request("a", 0, 10, 3), request("b", kMs / 2, 100, 1)}, limits, std::ref(timer));
  CHECK(timer.mixes == std::vector<std::string>{"1x10@0", "1x50@0", "1x50@50", "1x1@10", "1x1@11"});
  // b: TTFT 3.11 - 0.5 = 2.61 ms (3.612 ms with mixed steps). a: its first gap spans b's prompt,
  // 4.111 - 1.01 = 3.101 ms, then 1.001 ms.
  CHECK(run.requests[1].first_token_ps - run.requests[1].arrival_ps == 2'610'000'000);
  CHECK(run.requests[0].itl_ps == std::vector<std::uint64_t>{3'101'000'000, 1'001'000'000});
  CHECK_THROWS_WITH(g5sim::ServeSettings().set_text("schedule", "fifo"), "expected mixed or prefill-first, got 'fifo'");
}

}  // namespace test_serving

namespace test_serving {

TEST_CASE("serve: prefix caching on a hand-made trace of two conversations", "[serve][prefix]") {
  // A 64-token system prompt starts both conversations; blocks of 16 tokens.
  //   a1, b1 (t = 0): 100 in, 10 out, their first 64 the system prompt. Admitted in one step, so
  //     neither finds the other's blocks: both compute 100. Then each has 109 tokens cached (the
  //     last output never fed back): full blocks 0..5; 0..3 are the system prompt's (one entry
  //     for both), 4 and 5 each its own.
  //   a2 (t = 1 s): 150 in, its first 110 a1's conversation (100 in + 10 out). Blocks b with
  //     16 (b + 1) <= 110 are a1's: 0..5, all cached: it reuses 96 tokens and computes 54.
  //   b2 (t = 1 s): 130 in, sharing only 70 with b1: blocks 0..3 (64 tokens) reused, 66 computed.
  // Saved prefill: 96 + 64 = 160 tokens; computed 100 + 100 + 54 + 66 = 320; hit rate 160 / 480.
  const auto requests = serving::parse_request_trace(
      "arrival_s,input_tokens,output_tokens,id,session,shared_prefix\n"
      "0,100,10,a1,A,64\n"
      "0,100,10,b1,B,64\n"
      "1,150,10,a2,A,110\n"
      "1,130,10,b2,B,70\n",
      "two.csv");
  HandTimer timer;
  const g5sim::ServeRun run = serve_requests(requests, roomy(), std::ref(timer));
  CHECK(run.prefix_caching);
  CHECK(run.requests[0].cached_tokens == 0);
  CHECK(run.requests[1].cached_tokens == 0);
  CHECK(run.requests[2].cached_tokens == 96);
  CHECK(run.requests[3].cached_tokens == 64);
  // The step that admits the second turns computes 54 tokens at history 96 and 66 at history 64.
  INFO(fmt::format("{}", fmt::join(timer.mixes, " ")));
  CHECK(std::find(timer.mixes.begin(), timer.mixes.end(), "1x54@96,1x66@64") != timer.mixes.end());
  const serving::ServeSummary s = serving::summarize(run, 1, 0, 0);
  CHECK(s.prefix_hit_tokens == 160);
  CHECK(s.prefix_computed_tokens == 320);
  CHECK(s.prefix_hit_rate == Approx(1.0 / 3).epsilon(1e-12));
  CHECK(s.prefix_requests_hit == 2);

  // Off: every prompt computed whole.
  ServeLimits off = roomy();
  off.prefix_caching = "off";
  HandTimer plain;
  const g5sim::ServeRun cold = serve_requests(requests, off, std::ref(plain));
  CHECK(serving::summarize(cold, 1, 0, 0).prefix_computed_tokens == 480);
  CHECK(cold.requests[2].first_token_ps - cold.requests[2].arrival_ps >
        run.requests[2].first_token_ps - run.requests[2].arrival_ps);

  // A turn cannot share more than its conversation holds: a2 after a1's 110 tokens.
  CHECK_THROWS_WITH(serving::parse_request_trace("arrival_s,input_tokens,output_tokens,id,session,shared_prefix\n"
                                                 "0,100,10,a1,A,64\n"
                                                 "1,150,10,a2,A,111\n",
                                                 "bad.csv"),
                    "bad.csv: request 'a2': shared_prefix 111 is more than session 'A' holds before it (110 tokens: "
                    "request 'a1''s 100 input and 10 output)");
  CHECK_THROWS_WITH(
      serving::parse_request_trace("arrival_s,input_tokens,output_tokens,shared_prefix\n0,10,1,11\n", "big.csv"),
      "big.csv:2:8: shared_prefix: 11 is more than the request's 10 input tokens");
}

TEST_CASE("serve: a synthetic multi-turn load: each turn's prompt is the conversation so far", "[serve][prefix]") {
  serving::SyntheticLoad load;
  load.requests = 5;
  load.rate = 1;
  load.turns = 3;
  load.think_s = 2;
  load.system_prompt = 32;
  load.input = serving::LengthDistribution::range(10, 10);
  load.output = serving::LengthDistribution::range(5, 5);
  const std::vector<ServeRequest> r = serving::synthetic_requests(load);
  REQUIRE(r.size() == 5);
  // Session s0: 32 + 10 = 42 in (shares the 32); then 42 + 5 + 10 = 57 (shares 47); then 57 + 5 +
  // 10 = 72 (shares 62). Session s1 (2 turns left): 42, then 57.
  CHECK(r[0].session == "s0");
  CHECK(r[0].input_tokens == 42);
  CHECK(r[0].shared_prefix == 32);
  CHECK(!r[0].after);
  CHECK(r[1].input_tokens == 57);
  CHECK(r[1].shared_prefix == 47);
  CHECK(r[1].after == std::optional<std::size_t>(0));
  CHECK(r[1].think_ps == 2'000'000'000'000);
  CHECK(r[2].input_tokens == 72);
  CHECK(r[2].shared_prefix == 62);
  CHECK(r[3].session == "s1");
  CHECK(r[3].input_tokens == 42);
  CHECK(r[3].arrival_ps > r[0].arrival_ps);
  CHECK(r[4].after == std::optional<std::size_t>(3));

  // Served: a later turn arrives think_s after its previous turn's last token, and reuses the
  // whole conversation's full blocks (blocks of 16: turn 2 reuses 32 of its 47 shared tokens).
  HandTimer timer;
  const g5sim::ServeRun run = serve_requests(r, roomy(), std::ref(timer));
  CHECK(run.requests[1].arrival_ps == run.requests[0].finish_ps + 2'000'000'000'000);
  CHECK(run.requests[1].cached_tokens == 32);
  // Turn 3 shares 62: blocks 0..2 (48 tokens) reused.
  CHECK(run.requests[2].cached_tokens == 48);
  // s1's first turn finds s0's system prompt (2 blocks).
  CHECK(run.requests[3].cached_tokens == 32);
}

TEST_CASE("serve: evicted blocks go down to the host tier and a prompt reloads them at bytes / bandwidth + latency",
          "[serve][prefix][tiers]") {
  // 6 blocks of 16 tokens, 1,000 B a token: 16,000 B a block. One tier: host DRAM, 1 GB/s, 10 us.
  ServeLimits limits;
  limits.kv_tokens = 96;
  limits.kv = g5sim::KvGrowth{1000, 0, 0, 0};
  limits.kv_tiers = g5sim::kv_tiers_from_yaml(
      "name: test\ntiers:\n  - name: host\n    capacity_gb: 0.001\n    bandwidth_gb_per_s: 1\n    latency_us: 10\n",
      "test-tiers");
  // a (t = 0): 48 in, 1 out, conversation A: its 3 full blocks are entered, freed when it ends.
  // f (t = 0.5 s): 96 in, 1 out: its 6 blocks take the 3 plain free ones and evict a's 3 entries,
  //   which go down to the host tier (3 written).
  // a2 (t = 1 s): 80 in, its first 49 a's conversation (48 in + 1 out): blocks 0..2 are a's, all in
  //   the tier: 3 loaded, 48,000 B: 10 us + 48,000 B / 1 GB/s = 58 us. Its 5 blocks evict 5 of f's 6
  //   free entries into the tier (written 3 + 5 = 8; it held at most 5). It computes 32 tokens at
  //   history 48 once they are in: its first token 58 us + 1.032 ms after it arrived.
  const std::vector<ServeRequest> requests = serving::parse_request_trace(
      "arrival_s,input_tokens,output_tokens,id,session,shared_prefix\n0,48,1,a,A,0\n0.5,96,1,f,,0\n1,80,1,a2,A,49\n",
      "tiers.csv");
  HandTimer timer;
  const g5sim::ServeRun run = serve_requests(requests, limits, std::ref(timer));
  CHECK(run.requests[2].cached_tokens == 48);
  CHECK(run.requests[2].first_token_ps - run.requests[2].arrival_ps == 58'000'000 + 1'032'000'000);
  REQUIRE(run.kv_tiers.size() == 1);
  const g5sim::KvTierUse& host = run.kv_tiers[0];
  CHECK(host.capacity_blocks == 62);  // 1,000,000 B / 16,000 B
  CHECK(host.block_bytes == 16'000);
  CHECK(host.written_blocks == 8);
  CHECK(host.read_blocks == 3);
  CHECK(host.peak_blocks == 5);
  CHECK(host.dropped_blocks == 0);
  CHECK(host.read_ps == 58'000'000);
  // Without the tier, a's blocks are gone: a2 computes its 80 tokens, 1.080 ms.
  limits.kv_tiers.reset();
  HandTimer plain;
  const g5sim::ServeRun cold = serve_requests(requests, limits, std::ref(plain));
  CHECK(cold.requests[2].cached_tokens == 0);
  CHECK(cold.requests[2].first_token_ps - cold.requests[2].arrival_ps == 1'080'000'000);
}

TEST_CASE("serve: a KV tier file is read strictly", "[serve][tiers]") {
  auto error = [](const std::string& text) {
    try {
      g5sim::kv_tiers_from_yaml(text, "t");
    } catch (const g5sim::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string ok =
      "name: h\ntiers:\n  - name: host\n    capacity_gb: 1\n    bandwidth_gb_per_s: 50\n    latency_us: 5\n";
  CHECK(error(ok) == "no error");
  CHECK_THAT(error(ok + "    speed: 1\n"), Catch::Contains("<memory:t>:7:5") && Catch::Contains("speed"));
  CHECK_THAT(error("name: h\ntiers:\n  - name: host\n    capacity_gb: 0\n    bandwidth_gb_per_s: 50\n    "
                   "latency_us: 5\n"),
             Catch::Contains("capacity_gb") && Catch::Contains(":4:"));
  CHECK_THAT(error("name: h\ntiers:\n  - name: host\n    capacity_gb: 1\n    bandwidth_gb_per_s: 50\n"),
             Catch::Contains("latency_us"));
  CHECK_THAT(error(ok + "  - name: host\n    capacity_gb: 1\n    bandwidth_gb_per_s: 5\n    latency_us: 50\n"),
             Catch::Contains("'host' names two tiers"));
  // The shipped host reads.
  const g5sim::KvTiers shipped = g5sim::load_kv_tiers("host-dram-ssd");
  REQUIRE(shipped.tiers.size() == 2);
  CHECK(shipped.tiers[0].capacity_bytes == 256'000'000'000);
  CHECK(shipped.tiers[1].latency_ps == 100'000'000);
}

}  // namespace test_serving
