// The requests a serve's load makes, and the readers of its text knobs (serving/serve.hpp).

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string_view>

#include "api/public_errors.hpp"
#include "g5sim/serve.hpp"
#include "hw/config_error.hpp"
#include "hw/number_text.hpp"
#include "serving/request_load.hpp"
#include "serving/serve.hpp"

namespace serving {

using g5sim::ServeSettings;

namespace {

std::vector<ServeRequest> requests_of_load(const ServeSettings& s) {
  const std::string& trace = s.text("trace");
  const bool traced = !trace.empty() || s.trace_text.has_value();
  const bool rate = s.optional_decimal("rate").has_value(), closed = s.count("concurrency") > 0;
  if ((traced ? 1 : 0) + (rate ? 1 : 0) + (closed ? 1 : 0) != 1) {
    // A trace beside a rate is often a timeline meant as an output (run's --trace writes one):
    // say which is which.
    const std::string note =
        traced && (rate || closed)
            ? fmt::format(
                  " ('{}' is read as the requests' trace, an input here; --perfetto writes the serve's "
                  "timeline)",
                  trace.empty() ? std::string("the trace given") : trace)
            : std::string();
    throw hw::InputError("trace", "give the requests once: a trace, a rate or a concurrency" + note);
  }
  if (traced) {
    for (const char* knob : {"input_len", "output_len", "requests", "seed", "turns", "think_s", "system_prompt"}) {
      if (s.given(knob)) {
        throw hw::InputError(knob,
                             "requests, input_len, output_len, seed, turns, think_s and system_prompt shape a "
                             "synthetic load, not a trace (a trace's session and shared_prefix columns say "
                             "its conversations)");
      }
    }
    return s.trace_text ? parse_request_trace(*s.trace_text, trace) : read_request_trace(trace);
  }
  for (const char* name : {"input_len", "output_len"}) {
    if (s.text(name).empty())
      throw hw::InputError(name, "a synthetic load needs both lengths: N, LO:HI tokens or a histogram file");
  }
  SyntheticLoad load;
  load.requests = s.count("requests");
  load.rate = s.optional_decimal("rate").value_or(0);
  load.concurrency = s.count("concurrency");
  load.input = LengthDistribution::parse(s.text("input_len"), "input_len");
  load.output = LengthDistribution::parse(s.text("output_len"), "output_len");
  load.seed = s.count("seed");
  load.turns = s.count("turns");
  load.think_s = s.decimal("think_s");
  load.system_prompt = s.count("system_prompt");
  return synthetic_requests(load);
}

}  // namespace

// "A:B", each a whole number 1..most; nothing else.
std::optional<std::pair<std::uint64_t, std::uint64_t>> count_pair(const std::string& text, std::uint64_t most) {
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::optional<std::uint64_t> a = hw::read_whole_number(text.substr(0, colon));
  const std::optional<std::uint64_t> b = hw::read_whole_number(text.substr(colon + 1));
  if (!a || !b || *a < 1 || *b < 1 || *a > most || *b > most) return std::nullopt;
  return std::pair{*a, *b};
}

std::pair<std::uint64_t, std::uint64_t> parse_disagg(const std::string& text) {
  if (const auto counts = count_pair(text, g5sim::kMaxServeInstances)) return *counts;
  throw hw::InputError("disagg", fmt::format("expected P:D, prefill and decode instances 1..{} each, got '{}'",
                                             g5sim::kMaxServeInstances, text));
}

std::pair<std::uint64_t, std::uint64_t> parse_afd_or_none(const std::string& text) {
  if (text == "none") return {0, 0};
  if (const auto counts = count_pair(text, g5sim::kMaxAfdChips)) return *counts;
  throw hw::InputError("afd", fmt::format("expected A:F, attention and FFN chips 1..{} each, or none, got '{}'",
                                          g5sim::kMaxAfdChips, text));
}

std::pair<std::uint64_t, std::uint64_t> parse_disagg_or_none(const std::string& text) {
  return text == "none" ? std::pair<std::uint64_t, std::uint64_t>{0, 0} : parse_disagg(text);
}

std::vector<double> parse_accept(const std::string& text) {
  std::vector<double> out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::optional<double> p = hw::read_decimal_number(std::string_view(text).substr(begin, comma - begin));
    if (!p || !(*p >= 0 && *p <= 1) || out.size() == g5sim::kMaxMtpDrafts) {
      throw hw::InputError("accept", fmt::format("expected acceptance rates in [0, 1], one or one per draft (at most "
                                                 "{}), comma separated, got '{}'",
                                                 g5sim::kMaxMtpDrafts, text));
    }
    out.push_back(*p);
    if (comma == text.size()) return out;
    begin = comma + 1;
  }
}

StepCacheMode parse_step_cache(const std::string& text) {
  if (text == "exact") return {};
  if (text == "auto") return {0, 1};
  const std::string bucket = "bucket:", automatic = "auto:";
  if (text.rfind(bucket, 0) == 0) {
    const std::optional<std::uint64_t> pct = hw::read_whole_number(std::string_view(text).substr(bucket.size()));
    if (pct && *pct >= 1 && *pct <= 100) return {*pct, 0};
  }
  if (text.rfind(automatic, 0) == 0) {
    const std::optional<double> pct = hw::read_decimal_number(std::string_view(text).substr(automatic.size()));
    if (pct && *pct >= 0.1 && *pct <= 100) return {0, *pct};
  }
  throw hw::InputError("step_cache", fmt::format("expected auto, auto:PCT (a bound in percent, 0.1..100), exact or "
                                                 "bucket:PCT (a whole percent 1..100), got '{}'",
                                                 text));
}

void check_length_text(const std::string& text) {
  // A histogram file is read when the load is made; N and LO:HI are checked now. The knob names
  // the field (an InputError with none).
  if (!text.empty() && text.find_first_not_of("0123456789:") == std::string::npos) {
    LengthDistribution::parse(text, "");
  } else if (text.empty()) {
    throw hw::InputError("", "'' is not a length N, a range LO:HI or a histogram file");
  }
}

}  // namespace serving

std::vector<g5sim::ServeRequest> g5sim::requests_of(const ServeSettings& settings) {
  return api::public_errors([&] { return serving::requests_of_load(settings); });
}
