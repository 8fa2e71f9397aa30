#include "explore/validation/validation_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iostream>
#include <map>
#include <mutex>

#include "api/csv_cell.hpp"
#include "api/json_text.hpp"
#include "api/parallel_for.hpp"
#include "api/result_state.hpp"
#include "g5sim/reports.hpp"
#include "g5sim/runtime.hpp"
#include "hw/config_error.hpp"
#include "hw/strict_config.hpp"

namespace explore::validation {

namespace {
// The validate JSON's layout: 1 since it has a version (rows' empty cells null, mape_pct null
// when no row ran).
constexpr int kValidationSchemaVersion = 1;
}  // namespace

using api::parallel_for;
namespace {

// Six significant digits: enough to compare, stable across platforms for the same double.
std::string number(double v) { return fmt::format("{:.6g}", v); }

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// A row's simulation inputs, loaded on one thread before the runs: its chip and, if it names one, its model.
struct RowJob {
  std::optional<g5sim::Chip> chip;
  std::optional<g5sim::Model> model;
};

// What loading the rows gives the runs and the summary.
struct LoadedRows {
  std::vector<RowJob> jobs;                         // by table row
  std::map<std::string, hw::HeldOutMape> held_out;  // chip cell -> its calibration record's figures
  std::vector<std::size_t> index;                   // report row -> table row
};

// Step 1, the filters: a chip no row names would validate nothing: refused, naming the table's chips;
// a workload that is not one is refused, naming the workloads.
void refuse_unknown_filters(const MeasuredTable& table, const ValidateOptions& options) {
  std::vector<std::string> known;
  for (const MeasuredRow& row : table.rows) {
    if (std::find(known.begin(), known.end(), row.chip) == known.end()) known.push_back(row.chip);
  }
  for (const std::string& chip : options.only_chips) {
    if (std::find(known.begin(), known.end(), chip) == known.end()) {
      const std::string near = hw::closest_match(chip, known);
      throw hw::ConfigError(fmt::format("--chip: no row of {} is of chip '{}'{}; its chips: {}", table.path, chip,
                                        near.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", near),
                                        fmt::join(known, ", ")));
    }
  }
  for (const std::string& w : options.only_workloads) {
    if (!workload_named(w)) {
      throw hw::ConfigError(
          fmt::format("--workload: '{}' is not a workload ({})", w, fmt::join(workload_names(), ", ")));
    }
  }
}

// Whether --chip and --workload keep the row.
bool row_selected(const MeasuredRow& row, const ValidateOptions& options) {
  if (!options.only_chips.empty() &&
      std::find(options.only_chips.begin(), options.only_chips.end(), row.chip) == options.only_chips.end()) {
    return false;
  }
  if (!options.only_workloads.empty() && std::find(options.only_workloads.begin(), options.only_workloads.end(),
                                                   name_of(row.workload)) == options.only_workloads.end()) {
    return false;
  }
  return true;
}

// Step 2, loading: each selected row becomes a report row, excluded, skipped (its configs missing or
// broken) or pending (its configs loaded into `loaded`).
LoadedRows load_rows(const MeasuredTable& table, const ValidateOptions& options, ConfigResolver& resolver,
                     ValidationReport& report) {
  LoadedRows loaded;
  loaded.jobs.resize(table.rows.size());
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    const MeasuredRow& row = table.rows[i];
    RowOutcome o;
    o.row = row;
    if (!row_selected(row, options)) continue;
    if (!row.exclude.empty()) {
      o.status = "excluded";
      o.reason = row.exclude;
    } else {
      // Configs are loaded here, on one thread; a missing or broken one skips the row.
      try {
        o.chip_config = resolver.chip_path(row.chip);
        loaded.jobs[i].chip = resolver.chip(row.chip);
        const hw::Chip& data = loaded.jobs[i].chip->data().chip;
        if (data.calibrated) loaded.held_out[row.chip] = data.held_out_mape;
        if (!row.model.empty()) loaded.jobs[i].model = resolver.model(row.model);
        o.status = "pending";
      } catch (const hw::ConfigError& e) {
        o.status = "skipped";
        o.reason = e.what();
      } catch (const g5sim::ConfigError& e) {
        o.status = "skipped";
        o.reason = e.what();
      }
    }
    report.rows.push_back(std::move(o));
    loaded.index.push_back(i);
  }
  return loaded;
}

// Step 3, grouping: the pending report rows by run; rows with the same run (e.g. a step's time and
// one of its ops' time) share one simulation.
std::vector<std::vector<std::size_t>> group_by_run(const ValidationReport& report) {
  std::vector<std::vector<std::size_t>> groups;
  std::map<std::string, std::size_t> group_of;
  for (std::size_t k = 0; k < report.rows.size(); ++k) {
    if (report.rows[k].status != "pending") continue;
    const auto [it, fresh] = group_of.try_emplace(run_key(report.rows[k].row), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(k);
  }
  return groups;
}

// The runtime a row runs with: --runtime's when given, else its own; with --calibrated, a shipped
// runtime's NAME.calibrated.yaml where one is shipped ("" keeps the row's own).
std::string runtime_of(const MeasuredRow& row, const ValidateOptions& options) {
  if (!options.runtime.empty()) return options.runtime;
  const auto it = row.options.find("runtime");
  if (!options.calibrated || it == row.options.end()) return {};
  const std::vector<std::string> shipped = g5sim::shipped_runtimes();
  const std::string calibrated = it->second + ".calibrated";
  return std::find(shipped.begin(), shipped.end(), calibrated) != shipped.end() ? calibrated : std::string();
}

// The progress line, counted after a group's runs however they end.
struct GroupProgress {
  std::atomic<std::size_t>& finished;
  std::mutex& print;
  std::size_t total;
  bool on;
  ~GroupProgress() {
    const std::size_t n = ++finished;
    if (!on) return;
    const std::lock_guard<std::mutex> lock(print);
    std::cerr << fmt::format("\rvalidate: {}/{} runs   ", n, total) << (n == total ? "\n" : "") << std::flush;
  }
};

// Step 4, the runs: each group simulated once (groups in parallel), its rows given their prediction
// and error, or skipped.
void run_groups(const std::vector<std::vector<std::size_t>>& groups, const LoadedRows& loaded,
                const ValidateOptions& options, ValidationReport& report) {
  std::atomic<std::size_t> finished{0};
  std::mutex print;
  parallel_for(groups.size(), options.jobs, [&](std::size_t g) {
    GroupProgress progress{finished, print, groups.size(), options.progress};
    std::vector<const MeasuredRow*> rows;
    for (std::size_t k : groups[g]) rows.push_back(&report.rows[k].row);
    const RowJob& job = loaded.jobs[loaded.index[groups[g].front()]];
    const std::vector<Prediction> predictions =
        predict_all(rows, *job.chip, job.model ? &*job.model : nullptr, options.max_commands,
                    RowOverrides{runtime_of(*rows.front(), options), nullptr});
    for (std::size_t j = 0; j < rows.size(); ++j) {
      RowOutcome& o = report.rows[groups[g][j]];
      const Prediction& p = predictions[j];
      o.commands = p.commands;
      if (!p.value) {
        o.status = "skipped";
        o.reason = p.skipped;
        continue;
      }
      o.status = "ok";
      o.predicted = *p.value;
      o.error_pct = (o.predicted - o.row.measured) / o.row.measured * 100.0;
    }
  });
}

// Step 5a, a serving row counted in the serving summary (its MAPE sums, per metric too).
void tally_serving_row(ServingSummary& serving, const RowOutcome& o) {
  if (o.status == "ok") {
    ++serving.rows;
    serving.mape += std::abs(o.error_pct);
    const std::string metric = name_of(o.row.metric);
    auto m = std::find_if(serving.metrics.begin(), serving.metrics.end(),
                          [&](const MetricSummary& x) { return x.metric == metric; });
    if (m == serving.metrics.end()) m = serving.metrics.insert(m, MetricSummary{metric, 0, 0});
    ++m->rows;
    m->mape += std::abs(o.error_pct);
  } else if (o.status == "skipped") {
    ++serving.skipped;
  } else {
    ++serving.excluded;
  }
}

// Step 5b, a step or op row's chip summary, made at the chip's first row (with its held-out figures).
ChipSummary& chip_summary_of(ValidationReport& report, const RowOutcome& o,
                             const std::map<std::string, hw::HeldOutMape>& held_out) {
  auto it = std::find_if(report.chips.begin(), report.chips.end(),
                         [&](const ChipSummary& c) { return c.chip == o.row.chip; });
  if (it == report.chips.end()) {
    ChipSummary summary;
    summary.chip = o.row.chip;
    report.chips.push_back(summary);
    it = report.chips.end() - 1;
    if (const auto h = held_out.find(o.row.chip); h != held_out.end()) it->held_out = h->second;
  }
  return *it;
}

// Step 5, the summary: the rows' absolute errors summed in row order per chip, per serving metric and
// overall, then averaged into MAPEs.
void summarise_mape(ValidationReport& report, const std::map<std::string, hw::HeldOutMape>& held_out) {
  double total = 0;
  ServingSummary& serving = report.serving;
  for (const RowOutcome& o : report.rows) {
    if (o.row.workload == WorkloadKind::serve) {
      tally_serving_row(serving, o);
      continue;
    }
    ChipSummary& chip = chip_summary_of(report, o, held_out);
    if (o.status == "ok") {
      ++chip.rows;
      chip.mape += std::abs(o.error_pct);
      total += std::abs(o.error_pct);
      ++report.ran;
    } else if (o.status == "skipped") {
      ++chip.skipped;
    } else {
      ++chip.excluded;
    }
  }
  for (ChipSummary& c : report.chips) {
    if (c.rows > 0) c.mape /= static_cast<double>(c.rows);
  }
  for (MetricSummary& m : serving.metrics) m.mape /= static_cast<double>(m.rows);
  if (serving.rows > 0) serving.mape /= static_cast<double>(serving.rows);
  if (report.ran > 0) report.mape = total / static_cast<double>(report.ran);
}

}  // namespace

ValidationReport validate_table(const MeasuredTable& table, const ValidateOptions& options) {
  ValidationReport report;
  report.table_path = table.path;
  report.calibrated = options.calibrated;
  ConfigResolver resolver(table.path, options.calibrated);
  refuse_unknown_filters(table, options);
  const LoadedRows loaded = load_rows(table, options, resolver, report);
  run_groups(group_by_run(report), loaded, options, report);
  summarise_mape(report, loaded.held_out);
  return report;
}

namespace {

// The step and op rows' MAPE per chip config (with a calibrated config's held-out figures) and overall.
void write_chip_mape(std::ostream& out, const ValidationReport& report) {
  fmt::print(out, "\nMAPE per chip config\n");
  for (const ChipSummary& c : report.chips) {
    if (c.rows > 0) {
      fmt::print(out, "  {:<10} {:>6.1f} %  over {} rows ({} skipped, {} excluded)\n", c.chip, c.mape, c.rows,
                 c.skipped, c.excluded);
      if (c.held_out) {
        // Figures of the fit's own record (g5sim calibrate), not of this run.
        // A record of a fit without cross-validation says 0.00 (g5sim calibrate --no-leave-one-out).
        std::string line = !c.held_out->transferred_from.empty()
                               ? fmt::format("every row {:.1f} % (the fit transferred from {})", c.held_out->rows,
                                             c.held_out->transferred_from)
                           : c.held_out->rows > 0 ? fmt::format("leave-one-out {:.1f} %", c.held_out->rows)
                                                  : std::string("leave-one-out not computed");
        if (c.held_out->models) line += fmt::format(", leave-one-model-out {:.1f} %", *c.held_out->models);
        if (c.held_out->setups) line += fmt::format(", leave-one-set-up-out {:.1f} %", *c.held_out->setups);
        if (c.held_out->runs) line += fmt::format(", leave-one-run-out {:.1f} %", *c.held_out->runs);
        fmt::print(out, "  {:<10} held out when calibrated: {}\n", "", line);
      }
    } else {
      fmt::print(out, "  {:<10} {:>6}    no row ran ({} skipped, {} excluded)\n", c.chip, "-", c.skipped, c.excluded);
    }
  }
  fmt::print(out, "overall MAPE {:.2f} % over {} rows\n", report.mape, report.ran);
}

}  // namespace

void write_validation_table(std::ostream& out, const ValidationReport& report) {
  fmt::print(out, "g5sim validate: {} ({} chip configs)\n", report.table_path,
             report.calibrated ? "calibrated where available" : "uncalibrated");
  fmt::print(out, "{:<10} {:<10} {:<14} {:<6} {:<19} {:>12} {:>12} {:>8}  {}\n", "id", "chip", "model", "phase",
             "metric", "measured", "predicted", "error%", "status");
  for (const RowOutcome& o : report.rows) {
    const MeasuredRow& r = o.row;
    const std::string model = r.model.empty() ? name_of(r.workload) : r.model;
    const std::string phase = r.workload == WorkloadKind::serve ? "serve" : r.phase;
    const std::string metric = name_of(r.metric) + (takes_stat(r.metric) ? " " + stat_of(r) : "");
    if (o.status == "ok") {
      fmt::print(out, "{:<10} {:<10} {:<14} {:<6} {:<19} {:>12} {:>12} {:>+8.1f}  ok\n", r.id, r.chip, model, phase,
                 metric, number(r.measured), number(o.predicted), o.error_pct);
    } else {
      fmt::print(out, "{:<10} {:<10} {:<14} {:<6} {:<19} {:>12} {:>12} {:>8}  {}: {}\n", r.id, r.chip, model, phase,
                 metric, number(r.measured), "-", "-", o.status, one_line(o.reason));
    }
  }
  const ServingSummary& serving = report.serving;
  if (!report.chips.empty()) write_chip_mape(out, report);
  if (serving.rows + serving.skipped + serving.excluded == 0) return;
  fmt::print(out, "\nServing rows (a whole serve each; not in the MAPE above, which is of the steps a fit uses)\n");
  for (const MetricSummary& m : serving.metrics) {
    fmt::print(out, "  {:<20} {:>6.1f} %  over {} rows\n", m.metric, m.mape, m.rows);
  }
  if (serving.rows > 0) {
    fmt::print(out, "serving MAPE {:.2f} % over {} rows ({} skipped, {} excluded)\n", serving.mape, serving.rows,
               serving.skipped, serving.excluded);
  } else {
    fmt::print(out, "serving: no row ran ({} skipped, {} excluded)\n", serving.skipped, serving.excluded);
  }
}

void write_validation_csv(std::ostream& out, const ValidationReport& report) {
  out << g5sim::csv_header(g5sim::report_named(g5sim::explore_reports(), "validate_rows")) << '\n';
  for (const RowOutcome& o : report.rows) {
    const MeasuredRow& r = o.row;
    const bool ok = o.status == "ok";
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", api::csv_cell(r.id),
                       api::csv_cell(r.hardware), api::csv_cell(r.chip), api::csv_cell(o.chip_config),
                       api::csv_cell(r.model), r.phase, name_of(r.workload), name_of(r.metric), number(r.measured),
                       ok ? number(o.predicted) : "", ok ? fmt::format("{:.2f}", o.error_pct) : "", o.status,
                       api::csv_cell(one_line(o.reason)), r.kind, api::csv_cell(r.source),
                       takes_stat(r.metric) ? stat_of(r) : "");
  }
}

void write_validation_json(std::ostream& out, const ValidationReport& report) {
  using api::json_string;
  // A cell the row leaves empty (an op row's model and phase, a row that ran's reason) is null,
  // as the CSV's empty cell.
  const auto text_or_null = [](const std::string& text) { return text.empty() ? "null" : json_string(text); };
  fmt::print(out, "{{\n  \"schema_version\": {},\n  \"table\": {},\n  \"calibrated\": {},\n  \"rows\": [",
             kValidationSchemaVersion, json_string(report.table_path), report.calibrated ? "true" : "false");
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    const RowOutcome& o = report.rows[i];
    const MeasuredRow& r = o.row;
    const bool ok = o.status == "ok";
    fmt::print(out,
               "{}\n    {{\"id\": {}, \"chip\": {}, \"chip_config\": {}, \"model\": {}, \"phase\": {}, \"workload\": "
               "\"{}\", \"metric\": \"{}\", \"measured\": {}, \"predicted\": {}, \"error_pct\": {}, \"status\": "
               "\"{}\", \"reason\": {}, \"kind\": \"{}\", \"source\": {}, \"stat\": {}}}",
               i == 0 ? "" : ",", json_string(r.id), json_string(r.chip), text_or_null(o.chip_config),
               text_or_null(r.model), text_or_null(r.phase), name_of(r.workload), name_of(r.metric), number(r.measured),
               ok ? number(o.predicted) : "null", ok ? fmt::format("{:.4f}", o.error_pct) : "null", o.status,
               text_or_null(o.reason), r.kind, json_string(r.source),
               takes_stat(r.metric) ? json_string(stat_of(r)) : "null");
  }
  fmt::print(out, "\n  ],\n  \"chips\": [");
  for (std::size_t i = 0; i < report.chips.size(); ++i) {
    const ChipSummary& c = report.chips[i];
    const auto pct = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : "null"; };
    fmt::print(out,
               "{}\n    {{\"chip\": {}, \"rows\": {}, \"skipped\": {}, \"excluded\": {}, \"mape_pct\": {}, "
               "\"leave_one_out_mape_pct\": {}, \"leave_one_model_out_mape_pct\": {}, "
               "\"leave_one_setup_out_mape_pct\": {}}}",
               i == 0 ? "" : ",", json_string(c.chip), c.rows, c.skipped, c.excluded,
               c.rows > 0 ? fmt::format("{:.4f}", c.mape) : "null",
               pct(c.held_out ? std::optional<double>(c.held_out->rows) : std::nullopt),
               pct(c.held_out ? c.held_out->models : std::nullopt),
               pct(c.held_out ? c.held_out->setups : std::nullopt));
  }
  const ServingSummary& serving = report.serving;
  fmt::print(out, "\n  ],\n  \"rows_ran\": {},\n  \"mape_pct\": {},\n", report.ran,
             report.ran > 0 ? fmt::format("{:.4f}", report.mape) : "null");
  fmt::print(out, "  \"serving\": {{\"rows\": {}, \"skipped\": {}, \"excluded\": {}, \"mape_pct\": {}, \"metrics\": [",
             serving.rows, serving.skipped, serving.excluded,
             serving.rows > 0 ? fmt::format("{:.4f}", serving.mape) : "null");
  for (std::size_t i = 0; i < serving.metrics.size(); ++i) {
    const MetricSummary& m = serving.metrics[i];
    fmt::print(out, "{}{{\"metric\": \"{}\", \"rows\": {}, \"mape_pct\": {:.4f}}}", i == 0 ? "" : ", ", m.metric,
               m.rows, m.mape);
  }
  fmt::print(out, "]}}\n}}\n");
}

}  // namespace explore::validation
