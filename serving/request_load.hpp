#pragma once
// The requests `g5sim serve` answers: a trace file, or a synthetic load.
//
// A trace is CSV or JSON lines, one request a row:
//   CSV         a header naming the columns arrival_s,input_tokens,output_tokens and optionally id,
//               in any order, then a row per request ('#' lines and blank lines skipped);
//   JSON lines  (a path ending in .jsonl or .ndjson) one object per line with the same keys.
// arrival_s is a decimal number of seconds, 0..kMaxArrivalSeconds; input_tokens and output_tokens
// whole numbers 1..models::kMaxContext; id any text without a line break (default: the row's
// number, from 0). Rows may come in any order: requests are served by arrival, ties by their
// order in the file. Unknown columns or keys, a missing one, a repeated id: errors naming the file,
// line and column. Times become integer picoseconds on reading (rounded to the nearest).
// (The limits, g5sim/serve.hpp: kMaxArrivalSeconds, kMaxServeRequests, kMaxRate, kMaxConcurrency.)
//
// A synthetic load draws from one seeded generator (std::mt19937_64, whose sequence the C++
// standard fixes, and our own inverse-CDF draws: the same numbers on every machine):
//   open loop   --rate R: Poisson arrivals, gaps -ln(1 - u) / R seconds, u uniform in [0, 1);
//   closed loop --concurrency N: N clients; each sends its next request when its last one ends
//               (arrival_s of the first N is 0; the others' arrivals are set by the serving).
// Lengths: fixed ("512"), uniform over whole numbers in a range ("128:2048", both ends included),
// or a histogram file (LengthDistribution below), drawn per request in the order input then output.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "g5sim/serve.hpp"

namespace serving {

using g5sim::kMaxArrivalSeconds;
using g5sim::kMaxConcurrency;
using g5sim::kMaxRate;
using g5sim::kMaxServeRequests;
using g5sim::ServeRequest;

/// A trace file read whole (hw::read_input_file), sorted by arrival (stable).
std::vector<ServeRequest> read_request_trace(const std::string& path);
/// The same from text; `path` names it in errors and its extension picks the format.
std::vector<ServeRequest> parse_request_trace(const std::string& text, const std::string& path);

/// One bin of a length histogram: lengths low..high (both included), drawn with chance weight / total.
struct LengthBin {
  std::uint64_t low = 0, high = 0;
  double weight = 0;
};

/// A length: fixed ("N"), a uniform range ("LO:HI"), or a histogram read from a file (any other
/// text is its path): a bin drawn by weight (u uniform in [0, 1) times the total weight, the first
/// bin whose running total passes it), then a whole number uniform within the bin.
/// The histogram file is CSV: a header naming the columns low,high,weight in any order, then a row
/// per bin, '#' lines and blank lines skipped; low and high whole numbers 1..models::kMaxContext,
/// low <= high; weight a decimal number 0..kMaxLengthWeight (counts or fractions: only ratios
/// matter), some weight > 0; at most kMaxLengthBins bins. Errors name the file, line and column.
/// The weight's bound keeps every sum finite: the total is at most 2^16 x 1e15 < 1e20, and the
/// mean's terms at most that times 2^24 tokens, far inside a double's range.
constexpr std::size_t kMaxLengthBins = 1u << 16;
constexpr double kMaxLengthWeight = 1e15;
struct LengthDistribution {
  std::uint64_t low = 0, high = 0;  ///< fixed or uniform; a histogram's smallest and largest
  std::vector<LengthBin> bins;      ///< a histogram's bins (empty: fixed or uniform)
  std::vector<double> running;      ///< the bins' running weight totals
  std::string source;               ///< the histogram's file ("" otherwise)
  /// Uniform over low..high (low == high: fixed).
  static LengthDistribution range(std::uint64_t low, std::uint64_t high);
  static LengthDistribution parse(const std::string& text, const std::string& field);
  /// A histogram from its file's text (`path` names it in errors).
  static LengthDistribution parse_histogram(const std::string& text, const std::string& path);
  std::uint64_t draw(std::mt19937_64& rng) const;
  /// The expected length (a histogram's: each bin's midpoint by its weight).
  double mean() const;
};

/// Multi-turn conversations (turns > 1): the requests are sessions of `turns` turns each (the
/// last session's may be fewer), generated session after session. Turn k's prompt is the
/// conversation so far (the system prompt, every earlier turn's new tokens and reply) and its own
/// new tokens, drawn from `input` (its reply from `output`): its shared_prefix is that
/// conversation, system_prompt tokens for a first turn. A session's first turn arrives as a
/// single-turn load's request would (the rate is then sessions per second; a closed loop's client
/// runs one session after another); each later turn think_s after its client has the previous
/// turn's last token. With turns 1 and system_prompt > 0 every request shares the system prompt.
struct SyntheticLoad {
  std::uint64_t requests = 0;
  double rate = 0;                ///< requests (with turns: sessions) per second (open loop); 0 with concurrency
  std::uint64_t concurrency = 0;  ///< closed-loop clients; 0 with rate
  LengthDistribution input, output;
  std::uint64_t seed = 0;
  std::uint64_t turns = 1;          ///< turns a session
  double think_s = 0;               ///< a user's pause between a reply and the next turn
  std::uint64_t system_prompt = 0;  ///< tokens every conversation starts with
};

/// A uniform double in [0, 1) from the top 53 bits of one draw: the same on every machine (the
/// standard's distributions are not). Synthetic arrivals and MTP's drawn acceptances use it.
double unit_draw(std::mt19937_64& rng);

/// The requests of a synthetic load, ids "0", "1", ...; arrivals for the open loop (the closed
/// loop's are 0 and set while serving). Throws ConfigError on a rate that is not a positive finite
/// number up to kMaxRate, or a count out of range.
std::vector<ServeRequest> synthetic_requests(const SyntheticLoad& load);

}  // namespace serving
