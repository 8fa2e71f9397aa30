#include "explore/chip_comparison.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <string>

#include "api/csv_cell.hpp"
#include "api/report.hpp"
#include "g5sim/reports.hpp"

namespace explore {

using api::csv_cell;
namespace {

std::string workload(const ComparedRun& r) {
  if (r.mix.find(',') != std::string::npos) {  // several groups: the mix says what the step is
    return fmt::format("{} {} {} kv={} {} w={}", r.model, r.phase, r.mix, r.kv_dtype, r.mla_mode, r.weight_dtype);
  }
  return fmt::format("{} {} B={} ctx={} kv={} {} w={}", r.model, r.phase, r.batch, r.kv_len, r.kv_dtype, r.mla_mode,
                     r.weight_dtype);
}

// The first chip's latency over this one's: how many times faster this chip is.
double speedup(const ComparedRun& first, const ComparedRun& r) {
  return r.total_ps == 0 ? 0.0 : static_cast<double>(first.total_ps) / static_cast<double>(r.total_ps);
}

// This chip's tokens/s per chip over the first's.
double speedup_per_chip(const ComparedRun& first, const ComparedRun& r) {
  return first.tokens_per_s_per_chip == 0 ? 0.0 : r.tokens_per_s_per_chip / first.tokens_per_s_per_chip;
}

bool deployments_differ(const std::vector<std::vector<ComparedRun>>& rows) {
  for (const auto& row : rows) {
    for (const ComparedRun& r : row) {
      if (r.tp != row.front().tp || r.ep != row.front().ep || r.dp != row.front().dp) return true;
    }
  }
  return false;
}

}  // namespace

ComparedRun ComparedRun::of(const g5sim::Result& r) {
  ComparedRun c;
  c.chip = r.chip;
  c.model = r.model;
  c.phase = r.phase;
  c.kv_dtype = r.kv_dtype;
  c.mla_mode = r.mla_mode;
  c.weight_dtype = r.weight_dtype;
  c.bound_by = r.bound_by;
  c.batch = r.batch;
  c.kv_len = r.kv_len;
  c.q_len = r.q_len;
  c.mix = g5sim::mix_text(r.sequences);
  c.tp = r.tp;
  c.ep = r.ep;
  c.dp = r.dp;
  c.chips = r.chips;
  c.total_ps = r.step_ps;  // with a runtime, the step as it runs it (what tokens/s is over)
  c.tokens_per_s = r.tokens_per_s;
  c.tokens_per_s_per_chip = r.tokens_per_s_per_chip;
  c.has_band = r.has_band;
  c.band_low_ps = r.band_low_ps;
  c.band_high_ps = r.band_high_ps;
  c.bytes_per_chip = r.weight_bytes + r.kv_cache_bytes;
  c.fits = c.bytes_per_chip <= r.capacity_bytes;
  c.warnings = r.warnings;
  return c;
}

void write_comparison_table(std::ostream& out, const std::vector<std::vector<ComparedRun>>& rows) {
  if (rows.empty()) return;
  std::size_t width = 8;
  for (const auto& row : rows) width = std::max(width, workload(row.front()).size());
  const bool per_chip = deployments_differ(rows);
  std::string header = fmt::format("{:<{}}", "workload", width);
  for (std::size_t c = 0; c < rows.front().size(); ++c) {
    const std::string& chip = rows.front()[c].chip;
    header += fmt::format("  {:>12} {:>15} {:>10} {:>9} {:>10} {:>5} {:>8}", chip + " ms", "80% band ms", "tokens/s",
                          "per chip", "tp/ep/dp", "chips", "bound_by");
    if (c > 0) header += fmt::format(" {:>8}", "x first");
    if (c > 0 && per_chip) header += fmt::format(" {:>7}", "x/chip");
  }
  fmt::print(out, "{}\n", header);
  bool unfit = false;
  for (const auto& row : rows) {
    std::string line = fmt::format("{:<{}}", workload(row.front()), width);
    for (std::size_t c = 0; c < row.size(); ++c) {
      const ComparedRun& r = row[c];
      const std::string band = r.has_band ? fmt::format("{:.3f}-{:.3f}", static_cast<double>(r.band_low_ps) / 1e9,
                                                        static_cast<double>(r.band_high_ps) / 1e9)
                                          : "none";
      unfit = unfit || !r.fits;
      line += fmt::format("  {:>12} {:>15} {:>10.1f} {:>9.1f} {:>10} {:>5} {:>8}",
                          fmt::format("{:.3f}{}", static_cast<double>(r.total_ps) / 1e9, r.fits ? "" : "*"), band,
                          r.tokens_per_s, r.tokens_per_s_per_chip, fmt::format("{}/{}/{}", r.tp, r.ep, r.dp), r.chips,
                          r.bound_by);
      if (c > 0) line += fmt::format(" {:>8.3f}", speedup(row.front(), r));
      if (c > 0 && per_chip) line += fmt::format(" {:>7.3f}", speedup_per_chip(row.front(), r));
    }
    fmt::print(out, "{}\n", line);
  }
  if (unfit) out << "* does not fit the chip's DDR: the weights and KV cache a chip holds exceed it (CSV: fits)\n";
}

void write_comparison_csv(std::ostream& out, const std::string& grid_line,
                          const std::vector<std::vector<ComparedRun>>& rows) {
  out << grid_line << '\n';
  if (rows.empty()) return;
  // The report table's columns (explore/explore_reports.cpp): the workload's, then each chip's
  // (the rows named "<chip>_X", the chip's label for <chip>; those with a `when`, the speedups,
  // for every chip after the first).
  const g5sim::Report& report = g5sim::report_named(g5sim::explore_reports(), "compare");
  const std::string kEach = "<chip>_";
  bool first = true;
  for (const g5sim::ReportField& f : report.fields) {
    if (f.path.rfind(kEach, 0) == 0) continue;
    out << (first ? "" : ",") << f.path;
    first = false;
  }
  for (std::size_t c = 0; c < rows.front().size(); ++c) {
    for (const g5sim::ReportField& f : report.fields) {
      if (f.path.rfind(kEach, 0) != 0 || (c == 0 && !f.when.empty())) continue;
      out << ',' << csv_cell(rows.front()[c].chip + "_" + f.path.substr(kEach.size()));
    }
  }
  out << '\n';
  for (const auto& row : rows) {
    const ComparedRun& w = row.front();
    fmt::print(out, "{},{},{},{},{},{},{},{},{}", csv_cell(w.model), w.phase, w.batch, w.kv_len, w.q_len,
               csv_cell(w.mix), w.kv_dtype, w.mla_mode, w.weight_dtype);
    for (std::size_t c = 0; c < row.size(); ++c) {
      const ComparedRun& r = row[c];
      fmt::print(out, ",{},{},{},{:.3f},{:.3f},{},{},{},{},{},{},{}", api::format_ns(r.total_ps),
                 r.has_band ? api::format_ns(r.band_low_ps) : "", r.has_band ? api::format_ns(r.band_high_ps) : "",
                 r.tokens_per_s, r.tokens_per_s_per_chip, r.tp, r.ep, r.dp, r.chips, r.bound_by,
                 r.fits ? "true" : "false", r.bytes_per_chip);
      if (c > 0) fmt::print(out, ",{:.4f},{:.4f}", speedup(row.front(), r), speedup_per_chip(row.front(), r));
    }
    out << '\n';
  }
}

}  // namespace explore
