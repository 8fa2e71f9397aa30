#include "explore/deployment_search.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "api/csv_cell.hpp"
#include "api/json_text.hpp"
#include "api/parallel_for.hpp"
#include "api/result_state.hpp"
#include "explore/design_workload.hpp"
#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "hw/number_text.hpp"
#include "models/run_limits.hpp"
#include "serving/serve_settings.hpp"

namespace explore {

using serving::deployment_refusal;
using serving::kMaxBatchedTokens;
using serving::kMaxMtpDrafts;
using serving::kMaxServeSeqs;
using serving::LoadSpec;
using serving::parse_accept;
using serving::parse_disagg;
using serving::requests_of;
using serving::serve;
using serving::ServeOptions;
using serving::ServeReport;
using serving::ServeRequest;
using serving::ServeSettings;
using serving::ServeSummary;
using serving::set_mtp;
using serving::set_serve_keyword;
using serving::SharedStepTimes;

using api::csv_cell;
using api::parallel_for;
namespace {

std::uint64_t whole_number(const std::string& text, const std::string& field, std::uint64_t lo, std::uint64_t hi) {
  return hw::parse_whole_number(text, field, lo, hi);
}

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, by)) parts.push_back(part);
  if (!text.empty() && text.back() == by) parts.emplace_back();
  return parts;
}

std::string disagg_text(std::uint64_t p, std::uint64_t d) { return p == 0 ? "none" : fmt::format("{}:{}", p, d); }

std::string list_json(const std::vector<std::uint64_t>& values) { return fmt::format("[{}]", fmt::join(values, ", ")); }

// The figures an SLO is checked at.
double ttft_at(const PointOutcome& o, const std::string& stat) {
  return stat == "p50" ? o.ttft_p50_ms : stat == "p99" ? o.ttft_p99_ms : o.ttft_p90_ms;
}
double tpot_at(const PointOutcome& o, const std::string& stat) {
  return stat == "p50" ? o.tpot_p50_ms : stat == "p99" ? o.tpot_p99_ms : o.tpot_p90_ms;
}

std::string describe_load(const LoadSpec& load, std::size_t requests) {
  if (!load.trace_path.empty()) return fmt::format("trace {} ({} requests)", load.trace_path, requests);
  const std::string source =
      load.rate ? fmt::format("rate {} requests/s", *load.rate) : fmt::format("concurrency {}", load.concurrency);
  return fmt::format("{}, {} requests, input {}, output {}, seed {}", source, requests, load.input_len, load.output_len,
                     load.seed);
}

// Powers of two 1, 2, 4, ... up to n.
std::vector<std::uint64_t> powers_up_to(std::uint64_t n) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t v = 1; v <= n; v *= 2) out.push_back(v);
  return out;
}

bool listed(const std::vector<std::uint64_t>& list, std::uint64_t v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

struct Sharding {
  std::uint64_t tp = 1, ep = 1, dp = 1;
  std::string refusal;
};

g5sim::Request with_sharding(g5sim::Request r, std::uint64_t tp, std::uint64_t ep, std::uint64_t dp) {
  r.tp = tp;
  r.ep = ep;
  r.dp = dp;
  return r;
}

// The shardings a chip's points take (the rule in the header).
std::vector<Sharding> shardings_of(const g5sim::Chip& chip, const SearchSpec& spec,
                                   const std::vector<ServeRequest>& requests) {
  const SearchSpace& s = spec.space;
  const double mu = spec.engine.memory_utilization;
  std::vector<Sharding> out;
  if (!s.tp.empty() && !s.ep.empty() && !s.dp.empty()) {
    for (std::uint64_t tp : s.tp) {
      for (std::uint64_t ep : s.ep) {
        for (std::uint64_t dp : s.dp) {
          const std::optional<std::string> why =
              deployment_refusal(chip, spec.model, with_sharding(spec.base, tp, ep, dp), requests, mu);
          out.push_back(Sharding{tp, ep, dp, why.value_or("")});
        }
      }
    }
    return out;
  }
  std::optional<std::uint64_t> smallest;
  std::string last_reason;
  for (std::uint64_t n = 1; n <= models::kMaxChips; n *= 2) {
    if (smallest && n > std::max(*smallest, s.max_chips)) break;
    for (std::uint64_t tp : powers_up_to(n)) {
      const std::uint64_t dp = n / tp;
      for (std::uint64_t ep : powers_up_to(n)) {
        if (!listed(s.tp, tp) || !listed(s.ep, ep) || !listed(s.dp, dp)) continue;
        const std::optional<std::string> why =
            deployment_refusal(chip, spec.model, with_sharding(spec.base, tp, ep, dp), requests, mu);
        if (why) {
          last_reason = fmt::format("tp {} ep {} dp {}: {}", tp, ep, dp, *why);
          continue;
        }
        if (!smallest) smallest = n;
        out.push_back(Sharding{tp, ep, dp, ""});
      }
    }
  }
  if (out.empty()) {
    throw hw::InputError("sharding",
                         fmt::format("no sharding of {} on {} serves this load{}{}", spec.model.name(), chip.name(),
                                     last_reason.empty() ? "" : "; the last tried: ", last_reason));
  }
  return out;
}

// Each point's place on the fronts and against the SLO (the rule in the header).
struct Marks {
  std::vector<bool> meets, on_front;
  std::vector<std::vector<std::size_t>> fronts;  // per chip
  std::optional<std::size_t> best;
  std::vector<std::optional<std::size_t>> best_of_chip;
};

Marks mark(const std::vector<SearchPoint>& points, std::size_t chips, const SearchSpec& spec) {
  Marks m;
  const std::size_t n = points.size();
  m.meets.assign(n, false);
  m.on_front.assign(n, false);
  m.fronts.resize(chips);
  m.best_of_chip.resize(chips);
  const std::optional<double>& slo_ttft = spec.engine.slo_ttft_ms;
  const std::optional<double>& slo_tpot = spec.engine.slo_tpot_ms;
  for (std::size_t i = 0; i < n; ++i) {
    const PointOutcome& o = points[i].outcome;
    if (!o.error.empty()) continue;
    m.meets[i] =
        (!slo_ttft || ttft_at(o, spec.slo_stat) <= *slo_ttft) && (!slo_tpot || tpot_at(o, spec.slo_stat) <= *slo_tpot);
  }
  for (std::size_t c = 0; c < chips; ++c) {
    std::vector<std::size_t> ok;
    for (std::size_t i = 0; i < n; ++i) {
      if (points[i].knobs.chip == c && points[i].outcome.error.empty()) ok.push_back(i);
    }
    // By x descending, then y descending: a point is dominated when a point of larger x has at
    // least its y, or a point of equal x has more.
    auto x = [&](std::size_t i) { return points[i].outcome.tokens_per_s_per_chip; };
    auto y = [&](std::size_t i) { return points[i].outcome.tokens_per_s_per_user; };
    std::stable_sort(ok.begin(), ok.end(),
                     [&](std::size_t a, std::size_t b) { return x(a) != x(b) ? x(a) > x(b) : y(a) > y(b); });
    double best_y_of_larger_x = -std::numeric_limits<double>::infinity();
    for (std::size_t g = 0; g < ok.size();) {
      std::size_t end = g;
      while (end < ok.size() && x(ok[end]) == x(ok[g])) ++end;
      const double group_max_y = y(ok[g]);
      for (std::size_t k = g; k < end; ++k) {
        const bool dominated = best_y_of_larger_x >= y(ok[k]) || group_max_y > y(ok[k]);
        if (!dominated) m.on_front[ok[k]] = true;
      }
      best_y_of_larger_x = std::max(best_y_of_larger_x, group_max_y);
      g = end;
    }
    for (std::size_t i : ok) {
      if (m.on_front[i]) m.fronts[c].push_back(i);
    }
    std::stable_sort(m.fronts[c].begin(), m.fronts[c].end(),
                     [&](std::size_t a, std::size_t b) { return y(a) != y(b) ? y(a) < y(b) : x(a) > x(b); });
  }
  auto objective = [&](std::size_t i) {
    const PointOutcome& o = points[i].outcome;
    if (spec.objective == "tokens_per_joule") return o.joules_per_token ? 1.0 / *o.joules_per_token : 0.0;
    return o.tokens_per_s_per_chip;
  };
  auto better = [&](std::size_t a, std::optional<std::size_t> b) {
    if (!b) return true;
    if (objective(a) != objective(*b)) return objective(a) > objective(*b);
    if (points[a].outcome.tokens_per_s_per_user != points[*b].outcome.tokens_per_s_per_user) {
      return points[a].outcome.tokens_per_s_per_user > points[*b].outcome.tokens_per_s_per_user;
    }
    return a < *b;
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (!m.meets[i]) continue;
    std::optional<std::size_t>& chip_best = m.best_of_chip[points[i].knobs.chip];
    if (better(i, chip_best)) chip_best = i;
    if (better(i, m.best)) m.best = i;
  }
  return m;
}

std::string knobs_text(const SearchKnobs& k) {
  return fmt::format(
      "tp {} ep {} dp {}, max_seqs {}, max_batched_tokens {}, chunk {}, micro_batches {}, disagg {}, "
      "mtp {}",
      k.tp, k.ep, k.dp, k.max_seqs, k.max_batched_tokens, k.chunk, k.micro_batches,
      disagg_text(k.prefill_instances, k.decode_instances), k.mtp);
}

}  // namespace

std::vector<std::uint64_t> parse_knob_list(const std::string& text, const std::string& field, std::uint64_t lo,
                                           std::uint64_t hi) {
  std::set<std::uint64_t> values;
  for (const std::string& item : split(text, ',')) {
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) {
      values.insert(whole_number(item, field, lo, hi));
    } else {
      const std::uint64_t from = whole_number(item.substr(0, colon), field, std::max<std::uint64_t>(lo, 1), hi);
      const std::uint64_t to = whole_number(item.substr(colon + 1), field, from, hi);
      for (std::uint64_t v = from; v < to; v *= 2) {
        values.insert(v);
        if (values.size() > kMaxKnobValues) break;
      }
      values.insert(to);
    }
    if (values.size() > kMaxKnobValues) {
      throw hw::InputError(field, fmt::format("more than {} values in '{}'", kMaxKnobValues, text));
    }
  }
  if (values.empty()) throw hw::InputError(field, "expected a list of values (8,16 or 8:256)");
  return {values.begin(), values.end()};
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> parse_disagg_list(const std::string& text) {
  std::set<std::pair<std::uint64_t, std::uint64_t>> values;
  for (const std::string& item : split(text, ',')) {
    values.insert(item == "none" ? std::pair<std::uint64_t, std::uint64_t>{0, 0} : parse_disagg(item));
    if (values.size() > kMaxKnobValues) {
      throw hw::InputError("disagg", fmt::format("more than {} values in '{}'", kMaxKnobValues, text));
    }
  }
  if (values.empty()) throw hw::InputError("disagg", "expected none or P:D values, comma separated");
  return {values.begin(), values.end()};
}

std::string outcome_text(const PointOutcome& o) {
  if (!o.error.empty()) return "error " + o.error;
  return fmt::format("ok {} {} {} {} {} {} {} {} {} {} {}", o.chips, number_text(o.tokens_per_s_per_chip),
                     number_text(o.tokens_per_s_per_user), number_text(o.ttft_p50_ms), number_text(o.ttft_p90_ms),
                     number_text(o.ttft_p99_ms), number_text(o.tpot_p50_ms), number_text(o.tpot_p90_ms),
                     number_text(o.tpot_p99_ms), number_text(o.goodput_requests_per_s),
                     o.joules_per_token ? number_text(*o.joules_per_token) : "none");
}

PointOutcome outcome_of_text(const std::string& text) {
  PointOutcome o;
  if (text.rfind("error ", 0) == 0) {
    o.error = text.substr(6);
    return o;
  }
  std::istringstream in(text);
  std::string status, joules;
  in >> status >> o.chips >> o.tokens_per_s_per_chip >> o.tokens_per_s_per_user >> o.ttft_p50_ms >> o.ttft_p90_ms >>
      o.ttft_p99_ms >> o.tpot_p50_ms >> o.tpot_p90_ms >> o.tpot_p99_ms >> o.goodput_requests_per_s >> joules;
  if (status != "ok" || !in) throw std::invalid_argument("search: not a point's outcome: " + text);
  if (joules != "none") {
    o.joules_per_token = hw::read_decimal_number(joules);
    if (!o.joules_per_token) throw std::invalid_argument("search: not a point's outcome: " + text);
  }
  return o;
}

const std::vector<std::string>& search_keywords() {
  static const std::vector<std::string> kKeywords{
      "tp",     "ep",  "dp",     "max_chips",   "max_seqs",    "max_batched_tokens", "chunk",     "micro_batches",
      "disagg", "mtp", "accept", "slo_ttft_ms", "slo_tpot_ms", "slo_stat",           "objective", "exhaustive",
      "trace"};
  return kKeywords;
}

SearchSpec search_spec_of(std::vector<g5sim::Chip> chips, g5sim::Model model, g5sim::Request base,
                          const std::vector<std::pair<std::string, std::string>>& keywords) {
  SearchSpec spec;
  spec.chips = std::move(chips);
  spec.model = std::move(model);
  spec.base = std::move(base);
  ServeSettings serve;
  serve.options.limits.bucket_percent = 10;
  static const std::set<std::string> kServeOwn{
      "rate", "concurrency", "requests",     "input_len",          "output_len",
      "seed", "schedule",    "block_tokens", "memory_utilization", "step_cache"};
  auto positive_ms = [](const std::string& key, const std::string& value) {
    return hw::parse_decimal_number(value, key, 0, std::numeric_limits<double>::infinity(), true);
  };
  SearchSpace& s = spec.space;
  for (const auto& [key, value] : keywords) {
    if (key == "tp" || key == "ep" || key == "dp") {
      (key == "tp" ? s.tp : key == "ep" ? s.ep : s.dp) = parse_knob_list(value, key, 1, 65536);
    } else if (key == "max_chips") {
      s.max_chips = whole_number(value, key, 1, models::kMaxChips);
    } else if (key == "max_seqs") {
      s.max_seqs = parse_knob_list(value, key, 1, kMaxServeSeqs);
    } else if (key == "max_batched_tokens") {
      s.max_batched_tokens = parse_knob_list(value, key, 1, kMaxBatchedTokens);
    } else if (key == "chunk") {
      s.chunk = parse_knob_list(value, key, 1, kMaxBatchedTokens);
    } else if (key == "micro_batches") {
      s.micro_batches = parse_knob_list(value, key, 1, 64);
    } else if (key == "disagg") {
      s.disagg = parse_disagg_list(value);
    } else if (key == "mtp") {
      s.mtp = parse_knob_list(value, key, 0, kMaxMtpDrafts);
    } else if (key == "accept") {
      parse_accept(value);
      spec.accept = value;
    } else if (key == "slo_ttft_ms") {
      serve.options.slo_ttft_ms = positive_ms(key, value);
    } else if (key == "slo_tpot_ms") {
      serve.options.slo_tpot_ms = positive_ms(key, value);
    } else if (key == "slo_stat") {
      spec.slo_stat = value;
    } else if (key == "objective") {
      spec.objective = value;
    } else if (key == "exhaustive") {
      if (value != "true" && value != "false") {
        throw hw::InputError(key, fmt::format("expected true or false, got '{}'", value));
      }
      spec.exhaustive = value == "true";
    } else if (key == "trace") {
      if (value.empty()) throw hw::InputError(key, "expected a trace file's path");
      serve.load.trace_path = value;
    } else if (kServeOwn.count(key) > 0) {
      set_serve_keyword(serve, key, value);
    } else {
      std::vector<std::string> all = search_keywords();
      all.insert(all.end(), kServeOwn.begin(), kServeOwn.end());
      throw hw::InputError(key, fmt::format("not a search keyword (keywords: {})", fmt::join(all, ", ")));
    }
  }
  spec.load = serve.load;
  spec.engine = serve.options;
  spec.engine.limits.concurrency = serve.load.concurrency;
  return spec;
}

DeploymentSearch::DeploymentSearch(SearchSpec spec) : spec_(std::move(spec)) {
  if (spec_.chips.empty()) throw hw::InputError("chip", "give at least one chip");
  if (spec_.slo_stat != "p50" && spec_.slo_stat != "p90" && spec_.slo_stat != "p99") {
    throw hw::InputError("slo_stat", fmt::format("expected p50, p90 or p99, got '{}'", spec_.slo_stat));
  }
  if (spec_.objective != "tokens_per_s_per_chip" && spec_.objective != "tokens_per_joule") {
    throw hw::InputError("objective",
                         fmt::format("expected tokens_per_s_per_chip or tokens_per_joule, got '{}'", spec_.objective));
  }
  for (const g5sim::Chip& chip : spec_.chips) {
    if (spec_.objective == "tokens_per_joule" && !chip.data().chip.energy) {
      throw hw::InputError("objective", fmt::format("tokens_per_joule needs every chip's energy section; {} ({}) has "
                                                    "none",
                                                    chip.name(), chip.source()));
    }
  }
  for (const auto& [name, slo] :
       {std::pair{"slo_ttft_ms", spec_.engine.slo_ttft_ms}, {"slo_tpot_ms", spec_.engine.slo_tpot_ms}}) {
    if (slo && !(std::isfinite(*slo) && *slo > 0)) {
      throw hw::InputError(name, fmt::format("{} is not a positive number of milliseconds", *slo));
    }
  }
  if (spec_.base.tp || spec_.base.ep || spec_.base.dp || spec_.base.batch) {
    throw hw::InputError("tp", "a search takes its shardings from --tp, --ep and --dp lists (the batch from the load)");
  }
  const bool drafts = std::any_of(spec_.space.mtp.begin(), spec_.space.mtp.end(), [](auto v) { return v > 0; });
  if (drafts && spec_.accept.empty()) throw hw::InputError("mtp", "an mtp above 0 needs --accept (0.8, or 0.9,0.8)");
  if (!drafts && !spec_.accept.empty()) throw hw::InputError("mtp", "--accept without an mtp above 0");
  requests_ = requests_of(spec_.load);

  // The grid: per chip, sharding and disaggregation, the product of the numeric lists.
  const SearchSpace& s = spec_.space;
  list_sizes_ = {s.max_seqs.size(), s.max_batched_tokens.size(), s.chunk.size(), s.micro_batches.size(), s.mtp.size()};
  const std::vector<std::size_t>& sizes = list_sizes_;
  std::size_t block = 1;
  for (std::size_t n : sizes) block *= n;
  for (std::size_t c = 0; c < spec_.chips.size(); ++c) {
    for (const Sharding& sh : shardings_of(spec_.chips[c], spec_, requests_)) {
      for (const auto& [p, d] : s.disagg) {
        if (grid_.size() + block > kMaxSearchPoints) {
          throw hw::InputError("sharding",
                               fmt::format("the grid has more than {} points: give shorter lists", kMaxSearchPoints));
        }
        for (std::size_t i = 0; i < block; ++i) {
          std::vector<std::size_t> at(sizes.size());
          std::size_t rest = i;
          for (std::size_t a = sizes.size(); a-- > 0;) {
            at[a] = rest % sizes[a];
            rest /= sizes[a];
          }
          SearchKnobs k;
          k.chip = c;
          k.tp = sh.tp;
          k.ep = sh.ep;
          k.dp = sh.dp;
          k.refusal = sh.refusal;
          k.max_seqs = s.max_seqs[at[0]];
          k.max_batched_tokens = s.max_batched_tokens[at[1]];
          k.chunk = s.chunk[at[2]] == 0 ? k.max_batched_tokens : s.chunk[at[2]];
          k.micro_batches = s.micro_batches[at[3]];
          k.mtp = s.mtp[at[4]];
          k.prefill_instances = p;
          k.decode_instances = d;
          grid_.push_back(k);
          coordinates_.push_back(at);
        }
      }
    }
  }
  outcomes_.resize(grid_.size());
  pass_of_.assign(grid_.size(), 0);
}

std::vector<std::size_t> DeploymentSearch::neighbours(std::size_t index) const {
  // A point's block (its chip, sharding and disaggregation) starts at index - its offset in the
  // block; a neighbour moves one coordinate by one.
  const std::vector<std::size_t>& sizes = list_sizes_;
  const std::vector<std::size_t>& at = coordinates_[index];
  std::size_t offset = 0;
  for (std::size_t a = 0; a < sizes.size(); ++a) offset = offset * sizes[a] + at[a];
  const std::size_t start = index - offset;
  std::vector<std::size_t> out;
  for (std::size_t a = 0; a < sizes.size(); ++a) {
    for (int step : {-1, 1}) {
      if ((step < 0 && at[a] == 0) || (step > 0 && at[a] + 1 >= sizes[a])) continue;
      std::vector<std::size_t> moved = at;
      moved[a] = step < 0 ? at[a] - 1 : at[a] + 1;
      std::size_t o = 0;
      for (std::size_t b = 0; b < sizes.size(); ++b) o = o * sizes[b] + moved[b];
      out.push_back(start + o);
    }
  }
  return out;
}

std::vector<std::size_t> DeploymentSearch::next_pass() {
  for (std::size_t i : last_) {
    if (!outcomes_[i]) throw std::logic_error("search: a pass's point was not recorded");
  }
  std::vector<std::size_t> next;
  if (passes_ == 0) {
    // The coarse pass: every other value of each numeric list, its ends always.
    for (std::size_t i = 0; i < grid_.size(); ++i) {
      const std::vector<std::size_t>& sizes = list_sizes_;
      bool coarse = true;
      for (std::size_t a = 0; a < sizes.size(); ++a) {
        const std::size_t at = coordinates_[i][a];
        coarse = coarse && (spec_.exhaustive || at % 2 == 0 || at + 1 == sizes[a]);
      }
      if (coarse) next.push_back(i);
    }
  } else {
    // The report's points are the run points in grid order.
    const SearchReport r = report();
    std::set<std::size_t> wanted;
    std::size_t k = 0;
    for (std::size_t i = 0; i < grid_.size(); ++i) {
      if (pass_of_[i] == 0) continue;
      const SearchPoint& p = r.points[k++];
      if (!p.on_front && !p.best_of_chip) continue;
      for (std::size_t n : neighbours(i)) {
        if (pass_of_[n] == 0) wanted.insert(n);
      }
    }
    next.assign(wanted.begin(), wanted.end());
  }
  if (!next.empty()) ++passes_;
  for (std::size_t i : next) pass_of_[i] = passes_;
  last_ = next;
  return next;
}

PointOutcome DeploymentSearch::run(std::size_t index, const std::shared_ptr<SharedStepTimes>& shared) const {
  const SearchKnobs& k = grid_.at(index);
  PointOutcome o;
  if (!k.refusal.empty()) {
    o.error = k.refusal;
    return o;
  }
  g5sim::Request r = with_sharding(spec_.base, k.tp, k.ep, k.dp);
  r.micro_batches = k.micro_batches;
  ServeOptions options = spec_.engine;
  options.limits.max_seqs = k.max_seqs;
  options.limits.max_batched_tokens = k.max_batched_tokens;
  options.limits.chunk = k.chunk;
  options.limits.prefill_instances = k.prefill_instances;
  options.limits.decode_instances = k.decode_instances;
  options.limits.jobs = 1;
  options.shared_steps = shared;
  try {
    set_mtp(options.limits, k.mtp, k.mtp > 0 ? spec_.accept : "", k.mtp > 0 ? spec_.accept_draw : std::nullopt);
    const ServeReport report = serve(spec_.chips[k.chip], spec_.model, r, requests_, options);
    const ServeSummary& s = report.summary;
    o.chips = report.chips;
    o.tokens_per_s_per_chip = s.output_tokens_per_s_per_chip;
    o.tokens_per_s_per_user = s.output_tokens_per_s_per_user;
    o.ttft_p50_ms = s.ttft_ms.p50;
    o.ttft_p90_ms = s.ttft_ms.p90;
    o.ttft_p99_ms = s.ttft_ms.p99;
    o.tpot_p50_ms = s.tpot_ms.p50;
    o.tpot_p90_ms = s.tpot_ms.p90;
    o.tpot_p99_ms = s.tpot_ms.p99;
    o.goodput_requests_per_s = s.goodput_requests_per_s;
    if (report.energy) o.joules_per_token = report.energy->joules_per_token;
  } catch (const g5sim::ConfigError& e) {
    o = PointOutcome{};
    o.error = e.what();
  } catch (const hw::ConfigError& e) {
    o = PointOutcome{};
    o.error = e.what();
  }
  return o;
}

void DeploymentSearch::record(std::size_t index, PointOutcome outcome) { outcomes_.at(index) = std::move(outcome); }

SearchReport DeploymentSearch::report() const {
  SearchReport r;
  r.model = spec_.model.name();
  r.model_source = spec_.model.source();
  r.load = describe_load(spec_.load, requests_.size());
  for (const g5sim::Chip& c : spec_.chips) {
    r.chips.push_back(c.name());
    r.chip_sources.push_back(c.source());
  }
  r.slo_ttft_ms = spec_.engine.slo_ttft_ms;
  r.slo_tpot_ms = spec_.engine.slo_tpot_ms;
  r.slo_stat = spec_.slo_stat;
  r.objective = spec_.objective;
  r.step_cache =
      spec_.engine.limits.bucket_percent == 0 ? "exact" : fmt::format("bucket:{}", spec_.engine.limits.bucket_percent);
  r.space = spec_.space;
  r.grid_points = grid_.size();
  r.passes = passes_;
  std::vector<std::size_t> grid_index;
  for (std::size_t i = 0; i < grid_.size(); ++i) {
    if (pass_of_[i] == 0 || !outcomes_[i]) continue;
    SearchPoint p;
    p.knobs = grid_[i];
    p.outcome = *outcomes_[i];
    p.pass = pass_of_[i];
    r.points.push_back(p);
    grid_index.push_back(i);
  }
  const Marks m = mark(r.points, spec_.chips.size(), spec_);
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    r.points[i].meets_slo = m.meets[i];
    r.points[i].on_front = m.on_front[i];
    r.points[i].best = m.best == i;
  }
  for (const std::optional<std::size_t>& b : m.best_of_chip) {
    if (b) r.points[*b].best_of_chip = true;
  }
  r.fronts = m.fronts;
  r.best = m.best;
  r.best_of_chip = m.best_of_chip;
  return r;
}

SearchReport search_with(const SearchSpec& spec,
                         const std::function<std::vector<PointOutcome>(const std::vector<std::size_t>&)>& run_pass) {
  DeploymentSearch s(spec);
  for (std::vector<std::size_t> pass = s.next_pass(); !pass.empty(); pass = s.next_pass()) {
    const std::vector<PointOutcome> outcomes = run_pass(pass);
    if (outcomes.size() != pass.size()) throw std::logic_error("search: a pass returned another count of points");
    for (std::size_t i = 0; i < pass.size(); ++i) s.record(pass[i], outcomes[i]);
  }
  return s.report();
}

SearchReport search(const SearchSpec& spec,
                    const std::function<void(std::size_t, std::size_t, std::uint64_t)>& progress) {
  DeploymentSearch s(spec);
  std::vector<std::shared_ptr<SharedStepTimes>> stores;
  for (std::size_t c = 0; c < spec.chips.size(); ++c) stores.push_back(std::make_shared<SharedStepTimes>());
  std::size_t done = 0, total = 0;
  std::uint64_t pass_number = 0;
  std::mutex lock;
  for (std::vector<std::size_t> pass = s.next_pass(); !pass.empty(); pass = s.next_pass()) {
    ++pass_number;
    total += pass.size();
    std::vector<PointOutcome> outcomes(pass.size());
    parallel_for(pass.size(), spec.jobs, [&](std::size_t i) {
      // The point's chip's step store.
      outcomes[i] = s.run(pass[i], stores[s.knobs(pass[i]).chip]);
      const std::lock_guard<std::mutex> guard(lock);
      ++done;
      if (progress) progress(done, total, pass_number);
    });
    for (std::size_t i = 0; i < pass.size(); ++i) s.record(pass[i], outcomes[i]);
  }
  return s.report();
}

void write_search_csv(std::ostream& out, const SearchReport& r) {
  out << "point,chip,tp,ep,dp,chips,max_seqs,max_batched_tokens,chunk,micro_batches,disagg,mtp,pass,status,"
         "tokens_per_s_per_chip,tokens_per_s_per_user,ttft_p50_ms,ttft_p90_ms,ttft_p99_ms,tpot_p50_ms,tpot_p90_ms,"
         "tpot_p99_ms,goodput_requests_per_s,joules_per_token,meets_slo,on_front,best\n";
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const SearchPoint& p = r.points[i];
    const SearchKnobs& k = p.knobs;
    const PointOutcome& o = p.outcome;
    const bool ok = o.error.empty();
    auto figure = [&](double v) { return ok ? number_text(v) : std::string(); };
    fmt::print(out, "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", i,
               csv_cell(r.chips[k.chip]), k.tp, k.ep, k.dp, ok ? std::to_string(o.chips) : std::string(), k.max_seqs,
               k.max_batched_tokens, k.chunk, k.micro_batches, disagg_text(k.prefill_instances, k.decode_instances),
               k.mtp, p.pass, ok ? "ok" : csv_cell(o.error), figure(o.tokens_per_s_per_chip),
               figure(o.tokens_per_s_per_user), figure(o.ttft_p50_ms), figure(o.ttft_p90_ms), figure(o.ttft_p99_ms),
               figure(o.tpot_p50_ms), figure(o.tpot_p90_ms), figure(o.tpot_p99_ms), figure(o.goodput_requests_per_s),
               o.joules_per_token ? number_text(*o.joules_per_token) : "", ok ? (p.meets_slo ? "true" : "false") : "",
               p.on_front ? "true" : "false", p.best ? "true" : "false");
  }
}

void write_search_json(std::ostream& out, const SearchReport& r) {
  auto optional = [](const std::optional<double>& v) { return v ? number_text(*v) : std::string("null"); };
  fmt::print(out, "{{\n  \"schema_version\": {},\n  \"kind\": \"search\",\n", kSearchSchemaVersion);
  fmt::print(out, "  \"model\": {},\n  \"model_source\": {},\n", api::json_string(r.model),
             api::json_string(r.model_source));
  out << "  \"chips\": [";
  for (std::size_t c = 0; c < r.chips.size(); ++c) {
    fmt::print(out, "{}{{\"name\": {}, \"source\": {}}}", c ? ", " : "", api::json_string(r.chips[c]),
               api::json_string(r.chip_sources[c]));
  }
  out << "],\n";
  fmt::print(out, "  \"load\": {},\n", api::json_string(r.load));
  fmt::print(out, "  \"slo\": {{\"ttft_ms\": {}, \"tpot_ms\": {}, \"stat\": {}}},\n", optional(r.slo_ttft_ms),
             optional(r.slo_tpot_ms), api::json_string(r.slo_stat));
  fmt::print(out, "  \"objective\": {},\n  \"step_cache\": {},\n", api::json_string(r.objective),
             api::json_string(r.step_cache));
  const SearchSpace& s = r.space;
  std::vector<std::string> disagg;
  for (const auto& [p, d] : s.disagg) disagg.push_back(api::json_string(disagg_text(p, d)));
  auto given = [&](const std::vector<std::uint64_t>& v) { return v.empty() ? std::string("null") : list_json(v); };
  fmt::print(out,
             "  \"space\": {{\"tp\": {}, \"ep\": {}, \"dp\": {}, \"max_chips\": {}, \"max_seqs\": {}, "
             "\"max_batched_tokens\": {}, \"chunk\": {}, \"micro_batches\": {}, \"disagg\": [{}], \"mtp\": {}}},\n",
             given(s.tp), given(s.ep), given(s.dp), s.max_chips == 0 ? "null" : std::to_string(s.max_chips),
             list_json(s.max_seqs), list_json(s.max_batched_tokens), list_json(s.chunk), list_json(s.micro_batches),
             fmt::join(disagg, ", "), list_json(s.mtp));
  fmt::print(out, "  \"grid_points\": {},\n  \"points_run\": {},\n  \"passes\": {},\n", r.grid_points, r.points.size(),
             r.passes);
  out << "  \"points\": [";
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const SearchPoint& p = r.points[i];
    const SearchKnobs& k = p.knobs;
    const PointOutcome& o = p.outcome;
    fmt::print(out,
               "{}\n    {{\"point\": {}, \"chip\": {}, \"tp\": {}, \"ep\": {}, \"dp\": {}, \"max_seqs\": {}, "
               "\"max_batched_tokens\": {}, \"chunk\": {}, \"micro_batches\": {}, \"disagg\": {}, \"mtp\": {}, "
               "\"pass\": {}, ",
               i ? "," : "", i, api::json_string(r.chips[k.chip]), k.tp, k.ep, k.dp, k.max_seqs, k.max_batched_tokens,
               k.chunk, k.micro_batches, api::json_string(disagg_text(k.prefill_instances, k.decode_instances)), k.mtp,
               p.pass);
    if (!o.error.empty()) {
      fmt::print(out, "\"status\": \"error\", \"error\": {}, \"on_front\": false, \"best\": false}}",
                 api::json_string(o.error));
      continue;
    }
    fmt::print(out,
               "\"status\": \"ok\", \"chips\": {}, \"tokens_per_s_per_chip\": {}, \"tokens_per_s_per_user\": {}, "
               "\"ttft_ms\": {{\"p50\": {}, \"p90\": {}, \"p99\": {}}}, \"tpot_ms\": {{\"p50\": {}, \"p90\": {}, "
               "\"p99\": {}}}, \"goodput_requests_per_s\": {}, \"joules_per_token\": {}, \"meets_slo\": {}, "
               "\"on_front\": {}, \"best\": {}}}",
               o.chips, number_text(o.tokens_per_s_per_chip), number_text(o.tokens_per_s_per_user),
               number_text(o.ttft_p50_ms), number_text(o.ttft_p90_ms), number_text(o.ttft_p99_ms),
               number_text(o.tpot_p50_ms), number_text(o.tpot_p90_ms), number_text(o.tpot_p99_ms),
               number_text(o.goodput_requests_per_s), optional(o.joules_per_token), p.meets_slo ? "true" : "false",
               p.on_front ? "true" : "false", p.best ? "true" : "false");
  }
  out << "\n  ],\n  \"fronts\": [";
  for (std::size_t c = 0; c < r.chips.size(); ++c) {
    fmt::print(out, "{}{{\"chip\": {}, \"points\": [{}], \"best\": {}}}", c ? ", " : "", api::json_string(r.chips[c]),
               fmt::join(r.fronts[c], ", "), r.best_of_chip[c] ? std::to_string(*r.best_of_chip[c]) : "null");
  }
  fmt::print(out, "],\n  \"best\": {}\n}}\n", r.best ? std::to_string(*r.best) : "null");
}

void write_search_table(std::ostream& out, const SearchReport& r) {
  std::string slo;
  if (r.slo_ttft_ms) slo += fmt::format(" TTFT {} <= {} ms", r.slo_stat, *r.slo_ttft_ms);
  if (r.slo_tpot_ms) slo += fmt::format("{} TPOT {} <= {} ms", slo.empty() ? "" : ",", r.slo_stat, *r.slo_tpot_ms);
  fmt::print(out, "g5sim search: {}, {}; SLO{}\n", r.model, r.load, slo.empty() ? " none" : slo);
  std::size_t coarse = 0, failed = 0;
  for (const SearchPoint& p : r.points) {
    coarse += p.pass == 1;
    failed += !p.outcome.error.empty();
  }
  fmt::print(out,
             "grid          {} points; {} run in {} passes ({} coarse, {} refining the fronts), {} could not run\n",
             r.grid_points, r.points.size(), r.passes, coarse, r.points.size() - coarse, failed);
  fmt::print(out, "step cache    {} (every point serves the same requests)\n", r.step_cache);
  auto row = [&](std::size_t i) {
    const SearchPoint& p = r.points[i];
    const SearchKnobs& k = p.knobs;
    const PointOutcome& o = p.outcome;
    fmt::print(out,
               "  {:>5} {:>3} {:>3} {:>3} {:>5} {:>8} {:>6} {:>6} {:>3} {:>6} {:>3} {:>11.1f} {:>10.2f} {:>9.1f} "
               "{:>9.2f} {:>5}\n",
               i, k.tp, k.ep, k.dp, o.chips, k.max_seqs, k.max_batched_tokens, k.chunk, k.micro_batches,
               disagg_text(k.prefill_instances, k.decode_instances), k.mtp, o.tokens_per_s_per_chip,
               o.tokens_per_s_per_user, ttft_at(o, r.slo_stat), tpot_at(o, r.slo_stat),
               p.meets_slo ? (p.best ? "best" : "yes") : "no");
  };
  for (std::size_t c = 0; c < r.chips.size(); ++c) {
    std::size_t run = 0;
    for (const SearchPoint& p : r.points) run += p.knobs.chip == c;
    fmt::print(out, "{} front: {} of its {} points run (output tokens/s per chip against per user)\n", r.chips[c],
               r.fronts[c].size(), run);
    fmt::print(out,
               "  {:>5} {:>3} {:>3} {:>3} {:>5} {:>8} {:>6} {:>6} {:>3} {:>6} {:>3} {:>11} {:>10} {:>9} {:>9} {:>5}\n",
               "point", "tp", "ep", "dp", "chips", "max_seqs", "mbt", "chunk", "mb", "disagg", "mtp", "tok/s/chip",
               "tok/s/user", fmt::format("ttft_{}", r.slo_stat), fmt::format("tpot_{}", r.slo_stat), "slo");
    for (std::size_t i : r.fronts[c]) row(i);
    if (r.best_of_chip[c] && !r.points[*r.best_of_chip[c]].on_front) {
      out << "  (best meeting the SLO, off the front)\n";
      row(*r.best_of_chip[c]);
    }
  }
  if (r.best) {
    const SearchPoint& p = r.points[*r.best];
    const PointOutcome& o = p.outcome;
    fmt::print(out,
               "best          {} point {}: {}: {:.1f} output tokens/s per chip, {:.2f} per user, TTFT {} {:.1f} ms, "
               "TPOT {} {:.2f} ms{}\n",
               r.chips[p.knobs.chip], *r.best, knobs_text(p.knobs), o.tokens_per_s_per_chip, o.tokens_per_s_per_user,
               r.slo_stat, ttft_at(o, r.slo_stat), r.slo_stat, tpot_at(o, r.slo_stat),
               o.joules_per_token ? fmt::format(", {:.1f} mJ/token", *o.joules_per_token * 1e3) : std::string());
  } else {
    // The closest: the point whose worse SLO ratio is the smallest.
    std::optional<std::size_t> closest;
    double closest_ratio = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < r.points.size(); ++i) {
      const PointOutcome& o = r.points[i].outcome;
      if (!o.error.empty()) continue;
      double ratio = 0;
      if (r.slo_ttft_ms) ratio = std::max(ratio, ttft_at(o, r.slo_stat) / *r.slo_ttft_ms);
      if (r.slo_tpot_ms) ratio = std::max(ratio, tpot_at(o, r.slo_stat) / *r.slo_tpot_ms);
      if (ratio < closest_ratio) closest_ratio = ratio, closest = i;
    }
    if (closest) {
      const SearchPoint& p = r.points[*closest];
      fmt::print(out,
                 "best          no point meets the SLO; the closest, {} point {} ({}), has TTFT {} {:.1f} ms, "
                 "TPOT {} {:.2f} ms\n",
                 r.chips[p.knobs.chip], *closest, knobs_text(p.knobs), r.slo_stat, ttft_at(p.outcome, r.slo_stat),
                 r.slo_stat, tpot_at(p.outcome, r.slo_stat));
    } else {
      out << "best          no point could run\n";
    }
  }
}

}  // namespace explore
