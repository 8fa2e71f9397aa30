#include "serving/serve_settings.hpp"

#include <fmt/format.h>

#include <cmath>
#include <functional>

#include "hw/config_error.hpp"
#include "hw/number_text.hpp"

namespace serving {
namespace {

std::uint64_t whole(const std::string& key, const std::string& text, std::uint64_t lo, std::uint64_t hi) {
  return hw::parse_whole_number(text, key, lo, hi);
}

double decimal(const std::string& key, const std::string& text) {
  const double inf = std::numeric_limits<double>::infinity();
  return hw::parse_decimal_number(text, key, -inf, inf);
}

using Setter = std::function<void(ServeSettings&, const std::string&, const std::string&)>;

// The keywords in documentation order, each with how its text sets the settings. Ranges are the
// command line's (tools/commands/serve.cpp checks its flags against the same constants).
const std::vector<std::pair<std::string, Setter>>& setters() {
  constexpr std::uint64_t kAny = ~std::uint64_t{0};
  static const std::vector<std::pair<std::string, Setter>> table{
      {"rate", [](ServeSettings& s, const std::string& k, const std::string& v) { s.load.rate = decimal(k, v); }},
      {"concurrency",
       [](ServeSettings& s, const std::string& k, const std::string& v) {
         s.load.concurrency = whole(k, v, 1, kMaxConcurrency);
         s.options.limits.concurrency = s.load.concurrency;
       }},
      {"requests",
       [](ServeSettings& s, const std::string& k, const std::string& v) {
         s.load.requests = whole(k, v, 1, kMaxServeRequests);
         s.load.requests_given = true;
       }},
      {"input_len", [](ServeSettings& s, const std::string&, const std::string& v) { s.load.input_len = v; }},
      {"output_len", [](ServeSettings& s, const std::string&, const std::string& v) { s.load.output_len = v; }},
      {"seed",
       [](ServeSettings& s, const std::string& k, const std::string& v) {
         s.load.seed = whole(k, v, 0, kAny);
         s.load.seed_given = true;
       }},
      {"schedule", [](ServeSettings& s, const std::string&,
                      const std::string& v) { s.options.limits.schedule = parse_schedule(v); }},
      {"max_seqs", [](ServeSettings& s, const std::string& k,
                      const std::string& v) { s.options.limits.max_seqs = whole(k, v, 1, kMaxServeSeqs); }},
      {"max_batched_tokens",
       [](ServeSettings& s, const std::string& k, const std::string& v) {
         s.options.limits.max_batched_tokens = whole(k, v, 1, kMaxBatchedTokens);
       }},
      {"chunk", [](ServeSettings& s, const std::string& k,
                   const std::string& v) { s.options.limits.chunk = whole(k, v, 1, kMaxBatchedTokens); }},
      {"block_tokens", [](ServeSettings& s, const std::string& k,
                          const std::string& v) { s.options.limits.block_tokens = whole(k, v, 1, kMaxBlockTokens); }},
      {"memory_utilization", [](ServeSettings& s, const std::string& k,
                                const std::string& v) { s.options.memory_utilization = decimal(k, v); }},
      {"kv_tokens", [](ServeSettings& s, const std::string& k,
                       const std::string& v) { s.options.limits.kv_tokens = whole(k, v, 1, std::uint64_t{1} << 50); }},
      {"step_cache", [](ServeSettings& s, const std::string&,
                        const std::string& v) { s.options.limits.bucket_percent = parse_step_cache(v); }},
      {"disagg",
       [](ServeSettings& s, const std::string&, const std::string& v) {
         std::tie(s.options.limits.prefill_instances, s.options.limits.decode_instances) = parse_disagg(v);
       }},
      {"mtp",
       [](ServeSettings& s, const std::string& k, const std::string& v) { s.mtp = whole(k, v, 1, kMaxMtpDrafts); }},
      {"accept",
       [](ServeSettings& s, const std::string&, const std::string& v) {
         parse_accept(v);  // checked now; applied with mtp
         s.accept = v;
       }},
      {"accept_draw",
       [](ServeSettings& s, const std::string& k, const std::string& v) { s.accept_draw = whole(k, v, 0, kAny); }},
  };
  return table;
}

}  // namespace

const std::vector<std::string>& serve_keywords() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, setter] : setters()) out.push_back(name);
    return out;
  }();
  return names;
}

void set_serve_keyword(ServeSettings& settings, const std::string& key, const std::string& value) {
  for (const auto& [name, setter] : setters()) {
    if (name == key) return setter(settings, key, value);
  }
  throw hw::InputError(key, fmt::format("not a serve keyword (keywords: {})", fmt::join(serve_keywords(), ", ")));
}

void set_mtp(ServeLimits& limits, std::uint64_t mtp, const std::string& accept, std::optional<std::uint64_t> draw) {
  if (mtp == 0 && accept.empty() && !draw) return;
  if (mtp == 0 || accept.empty())
    throw hw::InputError("mtp", "the drafts (mtp) and their acceptance rates (accept) go together");
  limits.mtp = mtp;
  limits.accept = parse_accept(accept);
  limits.accept_drawn = draw.has_value();
  limits.accept_seed = draw.value_or(0);
}

ServeOptions ServeSettings::resolved() const {
  ServeOptions out = options;
  set_mtp(out.limits, mtp, accept, accept_draw);
  return out;
}

}  // namespace serving
