// g5sim search's outputs (g5sim/search.hpp): every point as CSV, the JSON, the table. The
// searchable knobs' columns come from the knob tables, in their order.

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "api/csv_cell.hpp"
#include "api/json_text.hpp"
#include "explore/deployment_search.hpp"
#include "explore/design_workload.hpp"
#include "g5sim/reports.hpp"

namespace g5sim {
namespace {

using api::csv_cell;
using explore::number_text;
using explore::tpot_at;
using explore::ttft_at;

// A dimension's value in the JSON: a number as it is, a word quoted.
std::string json_value(const SearchDimension& d, const std::string& value) {
  return d.numeric() ? value : api::json_string(value);
}

// Whether the table shows a dimension: not a quiet knob at its default at every point (a role's
// chip not given, no AFD: the JSON and CSV still hold its column).
bool shown(const SearchDimension& d) {
  const Knob& k = *d.knob;
  return !k.quiet_at_default || std::any_of(d.values.begin(), d.values.end(),
                                            [&](const std::string& v) { return !v.empty() && v != k.default_text; });
}

std::string knobs_text(const SearchReport& r, const SearchKnobs& k) {
  std::string out = fmt::format("tp {} ep {} dp {}", k.tp, k.ep, k.dp);
  for (std::size_t d = 0; d < r.dimensions.size(); ++d) {
    if (!shown(r.dimensions[d]) || k.values[d].empty()) continue;
    out += fmt::format("{} {} {}", d == 0 ? "," : ",", r.dimensions[d].knob->name, k.values[d]);
  }
  return out;
}

// Two points alike in every figure the front is drawn from: knobs that change nothing tie.
bool alike(const PointOutcome& a, const PointOutcome& b) {
  return a.chips == b.chips && a.tokens_per_s_per_chip == b.tokens_per_s_per_chip &&
         a.tokens_per_s_per_user == b.tokens_per_s_per_user && a.ttft_p50_ms == b.ttft_p50_ms &&
         a.ttft_p90_ms == b.ttft_p90_ms && a.ttft_p99_ms == b.ttft_p99_ms && a.tpot_p50_ms == b.tpot_p50_ms &&
         a.tpot_p90_ms == b.tpot_p90_ms && a.tpot_p99_ms == b.tpot_p99_ms &&
         a.goodput_requests_per_s == b.goodput_requests_per_s && a.joules_per_token == b.joules_per_token;
}

// A chip's front as rows: points alike in every figure are one row, the best (else the first)
// with the count of the others ("+7 alike"); at most r.top rows, then how many are left.
template <class Row>
void write_front_rows(std::ostream& out, const SearchReport& r, const std::vector<std::size_t>& front, Row&& row) {
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t i : front) {
    auto same = std::find_if(groups.begin(), groups.end(), [&](const std::vector<std::size_t>& g) {
      return alike(r.points[g.front()].outcome, r.points[i].outcome);
    });
    if (same == groups.end()) {
      groups.push_back({i});
    } else {
      same->push_back(i);
    }
  }
  std::size_t shown = 0;
  for (const std::vector<std::size_t>& g : groups) {
    if (shown == r.top) break;
    ++shown;
    const auto best = std::find_if(g.begin(), g.end(), [&](std::size_t i) { return r.points[i].best; });
    const std::size_t first = best != g.end() ? *best : g.front();
    row(first, g.size() > 1 ? fmt::format("  +{} alike", g.size() - 1) : std::string());
  }
  if (shown < groups.size()) {
    std::size_t points = 0;
    for (std::size_t k = shown; k < groups.size(); ++k) points += groups[k].size();
    fmt::print(out, "  ... {} more rows ({} points; --top N lists more, the CSV and JSON have every point)\n",
               groups.size() - shown, points);
  }
}

}  // namespace

void write_search_csv(std::ostream& out, const SearchReport& r) {
  // The columns: the report table's (explore/design_reports.cpp), whose knob columns are the
  // searchable knobs in table order: the grid's dimensions.
  out << csv_header(report_named(design_reports(), "search_points")) << '\n';
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const SearchPoint& p = r.points[i];
    const SearchKnobs& k = p.knobs;
    const PointOutcome& o = p.outcome;
    const bool ok = o.error.empty();
    auto figure = [&](double v) { return ok ? number_text(v) : std::string(); };
    fmt::print(out, "{},{},{},{},{},{}", i, csv_cell(r.chips[k.chip]), k.tp, k.ep, k.dp,
               ok ? std::to_string(o.chips) : std::string());
    for (const std::string& v : k.values) out << ',' << csv_cell(v);
    fmt::print(out, ",{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", p.pass, ok ? "ok" : csv_cell(o.error),
               figure(o.tokens_per_s_per_chip), figure(o.tokens_per_s_per_user), figure(o.ttft_p50_ms),
               figure(o.ttft_p90_ms), figure(o.ttft_p99_ms), figure(o.tpot_p50_ms), figure(o.tpot_p90_ms),
               figure(o.tpot_p99_ms), figure(o.goodput_requests_per_s),
               o.joules_per_token ? number_text(*o.joules_per_token) : "", ok ? (o.fits ? "true" : "false") : "",
               ok ? std::to_string(o.bytes_per_chip) : "", ok ? (p.meets_slo ? "true" : "false") : "",
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
  fmt::print(out, "  \"runtime\": {},\n  \"runtime_bands\": {},\n",
             r.runtime.empty() ? "null" : api::json_string(r.runtime), runtime_bands_json(r.runtime_bands));
  auto given = [](const std::optional<std::vector<std::uint64_t>>& v) {
    return v ? fmt::format("[{}]", fmt::join(*v, ", ")) : std::string("null");
  };
  fmt::print(out, "  \"space\": {{\"tp\": {}, \"ep\": {}, \"dp\": {}, \"max_chips\": {}", given(r.tp), given(r.ep),
             given(r.dp), r.max_chips ? std::to_string(*r.max_chips) : "null");
  for (const SearchDimension& d : r.dimensions) {
    std::vector<std::string> values;
    for (const std::string& v : d.values) values.push_back(json_value(d, v));
    fmt::print(out, ", \"{}\": [{}]", d.knob->name, fmt::join(values, ", "));
  }
  out << "},\n";
  fmt::print(out, "  \"grid_points\": {},\n  \"points_run\": {},\n  \"passes\": {},\n", r.grid_points, r.points.size(),
             r.passes);
  out << "  \"points\": [";
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const SearchPoint& p = r.points[i];
    const SearchKnobs& k = p.knobs;
    const PointOutcome& o = p.outcome;
    fmt::print(out, "{}\n    {{\"point\": {}, \"chip\": {}, \"tp\": {}, \"ep\": {}, \"dp\": {}, ", i ? "," : "", i,
               api::json_string(r.chips[k.chip]), k.tp, k.ep, k.dp);
    for (std::size_t d = 0; d < r.dimensions.size(); ++d) {
      fmt::print(out, "\"{}\": {}, ", r.dimensions[d].knob->name, json_value(r.dimensions[d], k.values[d]));
    }
    fmt::print(out, "\"pass\": {}, ", p.pass);
    if (!o.error.empty()) {
      fmt::print(out, "\"status\": \"error\", \"error\": {}, \"on_front\": false, \"best\": false}}",
                 api::json_string(o.error));
      continue;
    }
    fmt::print(out,
               "\"status\": \"ok\", \"chips\": {}, \"tokens_per_s_per_chip\": {}, \"tokens_per_s_per_user\": {}, "
               "\"ttft_ms\": {{\"p50\": {}, \"p90\": {}, \"p99\": {}}}, \"tpot_ms\": {{\"p50\": {}, \"p90\": {}, "
               "\"p99\": {}}}, \"goodput_requests_per_s\": {}, \"joules_per_token\": {}, \"fits\": {}, "
               "\"bytes_per_chip\": {}, \"meets_slo\": {}, \"on_front\": {}, \"best\": {}}}",
               o.chips, number_text(o.tokens_per_s_per_chip), number_text(o.tokens_per_s_per_user),
               number_text(o.ttft_p50_ms), number_text(o.ttft_p90_ms), number_text(o.ttft_p99_ms),
               number_text(o.tpot_p50_ms), number_text(o.tpot_p90_ms), number_text(o.tpot_p99_ms),
               number_text(o.goodput_requests_per_s), optional(o.joules_per_token), o.fits ? "true" : "false",
               o.bytes_per_chip, p.meets_slo ? "true" : "false", p.on_front ? "true" : "false",
               p.best ? "true" : "false");
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
  if (!r.runtime.empty()) {
    fmt::print(out, "runtime       {}{}\n", r.runtime,
               r.runtime_bands ? "; its bands on every point: " + runtime_bands_text(*r.runtime_bands)
                               : std::string("; not calibrated: no band"));
  }
  auto row = [&](std::size_t i, const std::string& alike) {
    const SearchPoint& p = r.points[i];
    const SearchKnobs& k = p.knobs;
    const PointOutcome& o = p.outcome;
    fmt::print(out, "  {:>5} {:>3} {:>3} {:>3} {:>5}", i, k.tp, k.ep, k.dp, o.chips);
    for (std::size_t d = 0; d < r.dimensions.size(); ++d) {
      if (shown(r.dimensions[d])) fmt::print(out, " {:>{}}", k.values[d], r.dimensions[d].knob->width);
    }
    fmt::print(out, " {:>11.1f} {:>10.2f} {:>9.1f} {:>9.2f} {:>5}{}\n", o.tokens_per_s_per_chip,
               o.tokens_per_s_per_user, ttft_at(o, r.slo_stat), tpot_at(o, r.slo_stat),
               p.meets_slo ? (p.best ? "best" : "yes") : "no", alike);
  };
  for (std::size_t c = 0; c < r.chips.size(); ++c) {
    std::size_t run = 0;
    for (const SearchPoint& p : r.points) run += p.knobs.chip == c;
    fmt::print(out, "{} front: {} of its {} points run (output tokens/s per chip against per user)\n", r.chips[c],
               r.fronts[c].size(), run);
    fmt::print(out, "  {:>5} {:>3} {:>3} {:>3} {:>5}", "point", "tp", "ep", "dp", "chips");
    for (const SearchDimension& d : r.dimensions) {
      if (shown(d)) fmt::print(out, " {:>{}}", d.knob->label.empty() ? d.knob->name : d.knob->label, d.knob->width);
    }
    fmt::print(out, " {:>11} {:>10} {:>9} {:>9} {:>5}\n", "tok/s/chip", "tok/s/user",
               fmt::format("ttft_{}", r.slo_stat), fmt::format("tpot_{}", r.slo_stat), "slo");
    write_front_rows(out, r, r.fronts[c], row);
    if (r.best_of_chip[c] && !r.points[*r.best_of_chip[c]].on_front) {
      out << "  (best meeting the SLO, off the front)\n";
      row(*r.best_of_chip[c], "");
    }
  }
  if (r.best) {
    const SearchPoint& p = r.points[*r.best];
    const PointOutcome& o = p.outcome;
    fmt::print(out,
               "best          {} point {}: {}: {:.1f} output tokens/s per chip, {:.2f} per user, TTFT {} {:.1f} ms, "
               "TPOT {} {:.2f} ms{}\n",
               r.chips[p.knobs.chip], *r.best, knobs_text(r, p.knobs), o.tokens_per_s_per_chip, o.tokens_per_s_per_user,
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
                 r.chips[p.knobs.chip], *closest, knobs_text(r, p.knobs), r.slo_stat, ttft_at(p.outcome, r.slo_stat),
                 r.slo_stat, tpot_at(p.outcome, r.slo_stat));
    } else {
      out << "best          no point could run\n";
    }
  }
}

}  // namespace g5sim
