// Fuzzes g5sim serve's trace reader (CSV, or JSON lines when the first byte is odd) and, for a
// trace it accepts that is small enough, the serving engine over it with a step time of 1 ms +
// 1 us per token and a KV cache and limits from the second byte (preemptions included), colocated
// or disaggregated (the first byte), with or without MTP (the second), with or without prefix
// caching over the trace's sessions and shared prefixes (the first byte): no crash, no hang, every
// output token emitted once, and no request reusing more prompt tokens than it has.
#include <cstdlib>
#include <string>

#include "fuzz_common.hpp"
#include "hw/config_error.hpp"
#include "serving/request_load.hpp"
#include "serving/serving_engine.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const bool json_lines = (data[0] & 1) != 0;
  const std::string text = fuzz::text_of(data + 2, size - 2);
  try {
    const auto requests = serving::parse_request_trace(text, json_lines ? "fuzz.jsonl" : "fuzz.csv");
    if (requests.size() > 64) return 0;
    std::uint64_t wanted = 0;
    for (const g5sim::ServeRequest& r : requests) {
      if (r.input_tokens > 4096 || r.output_tokens > 256) return 0;
      wanted += r.output_tokens;
    }
    g5sim::ServeSettings settings;
    g5sim::ServeSetup setup;
    settings.set("block_tokens", std::uint64_t{1} + (data[1] & 15));
    settings.set("kv_tokens", 4096 + 256 * std::uint64_t{data[1]});
    settings.set("max_seqs", std::uint64_t{1} + (data[1] >> 4));
    settings.set("max_batched_tokens", std::uint64_t{64} + data[1]);
    settings.set("chunk", std::uint64_t{data[0]} >> 3);
    settings.set("prefix_caching", std::string(data[0] & 8 ? "off" : "on"));
    setup.bucket_percent = data[0] & 2 ? 5 : 0;
    setup.dp = 1 + (data[1] >> 6);  // bucketing keys a step by its fullest of dp ranks
    if (data[1] & 8) {              // MTP: 1 + (data[0] >> 6) drafts at 0.7, expected or drawn
      settings.set("mtp", std::uint64_t{1} + (data[0] >> 6));
      setup.accept = {0.7};
      if (data[1] & 4) settings.set("accept_draw", std::uint64_t{0});
    }
    if (data[0] & 4) {  // disaggregated: 1 prefill, 2 decode instances
      setup.prefill_instances = 1;
      setup.decode_instances = 2;
      setup.kv_transfer = g5sim::KvTransfer{1000, 1.0, 100.0, "c2c"};
    }
    const g5sim::ServeRun run =
        serving::serve_requests(requests, settings, setup, [](const serving::StepGroups& groups) {
          std::uint64_t tokens = 0;
          for (const auto& g : groups) tokens += g.count * g.q_len;
          return g5sim::StepTime{1'000'000'000 + 1'000'000 * tokens, false, 0, 0};
        });
    std::uint64_t emitted = run.mtp_tokens - run.mtp_verifies;  // a verify's tokens beyond its one gap
    for (const g5sim::RequestOutcome& r : run.requests) {
      emitted += 1 + r.itl_ps.size();
      if (r.cached_tokens > r.input_tokens + r.output_tokens) std::abort();
    }
    if (emitted != wanted) std::abort();
  } catch (const hw::ConfigError&) {
  } catch (const g5sim::ConfigError&) {
  }
  return 0;
}
