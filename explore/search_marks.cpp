// g5sim search's lists, fronts and best points, and its outcomes as text (g5sim/search.hpp).

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include "explore/deployment_search.hpp"
#include "explore/design_workload.hpp"
#include "hw/config_error.hpp"
#include "hw/number_text.hpp"

namespace explore {
namespace {

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, by)) parts.push_back(part);
  if (!text.empty() && text.back() == by) parts.emplace_back();
  return parts;
}

}  // namespace

double ttft_at(const PointOutcome& o, const std::string& stat) {
  return stat == "p50" ? o.ttft_p50_ms : stat == "p99" ? o.ttft_p99_ms : o.ttft_p90_ms;
}
double tpot_at(const PointOutcome& o, const std::string& stat) {
  return stat == "p50" ? o.tpot_p50_ms : stat == "p99" ? o.tpot_p99_ms : o.tpot_p90_ms;
}

std::vector<std::uint64_t> parse_knob_list(const std::string& text, const std::string& field, std::uint64_t lo,
                                           std::uint64_t hi) {
  std::set<std::uint64_t> values;
  for (const std::string& item : split(text, ',')) {
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) {
      values.insert(hw::parse_whole_number(item, field, lo, hi));
    } else {
      const std::uint64_t from =
          hw::parse_whole_number(item.substr(0, colon), field, std::max<std::uint64_t>(lo, 1), hi);
      const std::uint64_t to = hw::parse_whole_number(item.substr(colon + 1), field, from, hi);
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

std::vector<std::string> parse_text_list(const std::string& text, const g5sim::Knob& knob) {
  std::vector<std::string> values;
  for (const std::string& item : split(text, ',')) {
    g5sim::knob_value(knob, item);  // checked as one value of the knob
    if (std::find(values.begin(), values.end(), item) == values.end()) values.push_back(item);
    if (values.size() > g5sim::kMaxKnobValues) {
      throw hw::InputError(knob.name, fmt::format("more than {} values in '{}'", g5sim::kMaxKnobValues, text));
    }
  }
  if (values.empty()) throw hw::InputError(knob.name, "expected a list of values, comma separated");
  return values;
}

Marks mark(const std::vector<SearchPoint>& points, std::size_t chips, const SearchSpec& spec) {
  Marks m;
  const std::size_t n = points.size();
  m.meets.assign(n, false);
  m.on_front.assign(n, false);
  m.fronts.resize(chips);
  m.best_of_chip.resize(chips);
  const std::optional<double> slo_ttft = spec.serve.optional_decimal("slo_ttft_ms");
  const std::optional<double> slo_tpot = spec.serve.optional_decimal("slo_tpot_ms");
  const std::string& slo_stat = spec.design.text("slo_stat");
  const bool per_joule = spec.design.text("objective") == "tokens_per_joule";
  for (std::size_t i = 0; i < n; ++i) {
    const PointOutcome& o = points[i].outcome;
    if (!o.error.empty()) continue;
    m.meets[i] = (!slo_ttft || ttft_at(o, slo_stat) <= *slo_ttft) && (!slo_tpot || tpot_at(o, slo_stat) <= *slo_tpot);
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
    if (per_joule) return o.joules_per_token ? 1.0 / *o.joules_per_token : 0.0;
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

}  // namespace explore

namespace g5sim {

std::string outcome_text(const PointOutcome& o) {
  if (!o.error.empty()) return "error " + o.error;
  return fmt::format("ok {} {} {} {} {} {} {} {} {} {} {} {} {}", o.chips, o.bytes_per_chip, o.fits ? 1 : 0,
                     explore::number_text(o.tokens_per_s_per_chip), explore::number_text(o.tokens_per_s_per_user),
                     explore::number_text(o.ttft_p50_ms), explore::number_text(o.ttft_p90_ms),
                     explore::number_text(o.ttft_p99_ms), explore::number_text(o.tpot_p50_ms),
                     explore::number_text(o.tpot_p90_ms), explore::number_text(o.tpot_p99_ms),
                     explore::number_text(o.goodput_requests_per_s),
                     o.joules_per_token ? explore::number_text(*o.joules_per_token) : "none");
}

PointOutcome outcome_of_text(const std::string& text) {
  PointOutcome o;
  if (text.rfind("error ", 0) == 0) {
    o.error = text.substr(6);
    return o;
  }
  std::istringstream in(text);
  std::string status, joules;
  int fits = 0;
  in >> status >> o.chips >> o.bytes_per_chip >> fits >> o.tokens_per_s_per_chip >> o.tokens_per_s_per_user >>
      o.ttft_p50_ms >> o.ttft_p90_ms >> o.ttft_p99_ms >> o.tpot_p50_ms >> o.tpot_p90_ms >> o.tpot_p99_ms >>
      o.goodput_requests_per_s >> joules;
  if (status != "ok" || !in) throw std::invalid_argument("search: not a point's outcome: " + text);
  o.fits = fits == 1;
  if (joules != "none") {
    o.joules_per_token = hw::read_decimal_number(joules);
    if (!o.joules_per_token) throw std::invalid_argument("search: not a point's outcome: " + text);
  }
  return o;
}

}  // namespace g5sim
