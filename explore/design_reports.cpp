// The fields of the design floor's reports (g5sim/report_fields.hpp): g5sim search's JSON and
// per-point CSV (explore/search_writers.cpp), g5sim sensitivity's JSON and CSV
// (explore/sensitivity.cpp), g5sim solve's JSON and per-run CSV (explore/required_spec.cpp). The
// JSON head the sensitivity and the solve share is explore::write_design_json_head's
// (explore/design_workload.cpp). Rows are in the order the writers emit them.

#include <string>
#include <vector>

#include "explore/design_workload.hpp"
#include "g5sim/design.hpp"
#include "g5sim/knobs.hpp"
#include "g5sim/report_fields.hpp"

namespace g5sim {

/// The reports of the design floor: search, sensitivity and solve, each as JSON and as CSV.
const std::vector<Report>& design_reports();

namespace {

using F = FieldType;

// The metrics a sensitivity or a solve measures: a run's, then a serve's (design_workload.hpp).
std::string metric_names() {
  std::string names;
  for (const std::vector<std::string>* list : {&explore::run_metrics(), &explore::serve_metrics()}) {
    for (const std::string& m : *list) names += (names.empty() ? "" : ",") + m;
  }
  return names;
}

// Each row names only the members it sets (designated initializers); the rest keep ReportField's
// defaults, which GCC's -Wextra would report as missing.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

void append(std::vector<ReportField>& to, std::vector<ReportField> rows) {
  for (ReportField& r : rows) to.push_back(std::move(r));
}

// The head of a sensitivity's or a solve's JSON (write_design_json_head), `kind` its kind.
std::vector<ReportField> design_head(const std::string& kind, const std::string& what) {
  return {
      {.path = "schema_version",
       .type = F::integer,
       .description = "the layout's version of this " + kind + " JSON",
       .minimum = 1},
      {.path = "kind", .type = F::text, .description = "which report this is", .choices = kind},
      {.path = "chip", .type = F::text, .description = "the chip's name as its config gives it"},
      {.path = "chip_source",
       .type = F::text,
       .description = "the chip config read: shipped:NAME, or its path (relative to the working folder when under it)"},
      {.path = "model", .type = F::text, .description = "the model's name as its config gives it"},
      {.path = "model_source",
       .type = F::text,
       .description =
           "the model config read: shipped:NAME, or its path (relative to the working folder when under it)"},
      {.path = "workload",
       .type = F::text,
       .description = "one line naming what is measured: a run's phase and batch (or mix, seqs), or "
                      "'serve' and the serve's key=value items"},
      {.path = "deployment", .type = F::object, .description = "the sharding of the base run, held for every " + what},
      {.path = "deployment.tp", .type = F::integer, .description = "tensor-parallel degree", .minimum = 1},
      {.path = "deployment.ep", .type = F::integer, .description = "expert-parallel degree", .minimum = 1},
      {.path = "deployment.dp", .type = F::integer, .description = "data-parallel degree", .minimum = 1},
      {.path = "deployment.chips",
       .type = F::integer,
       .description = "chips of the deployment (tp times dp)",
       .minimum = 1},
  };
}

// The searchable knobs, one per grid dimension, from the knob tables (knobs_taking(kSearchList):
// the serve table's rows then the design table's, in table order), so that a new searchable knob
// brings its columns with its row. `prefix` is "" for a CSV column, "points[]." or "space." in
// the JSON; `space` is true for the lists of the JSON's space object (the values searched: the
// knob's list, else its one value; a chunk as given, 0 for the step's token budget).
std::vector<ReportField> search_knob_rows(const std::string& prefix, bool space) {
  std::vector<ReportField> rows;
  for (const Knob* k : knobs_taking(kSearchList)) {
    const bool words = k->type == KnobType::text || k->type == KnobType::list;
    ReportField f{.path = prefix + k->name, .unit = k->unit};
    if (space) {
      f.type = words ? F::texts : F::values;
      f.description = "the " + k->name + " values searched (" + k->doc + ")";
    } else {
      f.type = words ? F::text : k->type == KnobType::decimal ? F::number : F::integer;
      f.description = "the point's " + k->name + " (" + k->doc + ")" + (k->resolved ? ", as in effect" : "");
      if (k->type == KnobType::count) f.minimum = static_cast<double>(k->min);
    }
    rows.push_back(std::move(f));
  }
  return rows;
}

// The search's set-up: the model, the chips searched, the load, the SLO, the objective and the step cache.
std::vector<ReportField> search_setup_rows() {
  std::vector<ReportField> rows{
      {.path = "schema_version",
       .type = F::integer,
       .description = "the layout's version of this search JSON",
       .minimum = 1},
      {.path = "kind", .type = F::text, .description = "which report this is", .choices = "search"},
      {.path = "model", .type = F::text, .description = "the model's name as its config gives it"},
      {.path = "model_source",
       .type = F::text,
       .description =
           "the model config read: shipped:NAME, or its path (relative to the working folder when under it)"},
      {.path = "chips", .type = F::records, .description = "the chips searched, in the order given"},
      {.path = "chips[].name", .type = F::text, .description = "the chip's name as its config gives it"},
      {.path = "chips[].source",
       .type = F::text,
       .description = "the chip config read: shipped:NAME, or its path (relative to the working folder when under it)"},
      {.path = "load",
       .type = F::text,
       .description = "one line naming the requests every point serves (rate, concurrency or trace; "
                      "count, lengths, seed)"},
      {.path = "slo", .type = F::object, .description = "the service-level objectives points are held to"},
      {.path = "slo.ttft_ms",
       .type = F::number,
       .unit = "ms",
       .description = "the TTFT bound at the SLO's statistic; null when no TTFT SLO is given",
       .minimum = 0,
       .nullable = true},
      {.path = "slo.tpot_ms",
       .type = F::number,
       .unit = "ms",
       .description = "the TPOT bound at the SLO's statistic; null when no TPOT SLO is given",
       .minimum = 0,
       .nullable = true},
      {.path = "slo.stat",
       .type = F::text,
       .description = "the percentile over requests at which TTFT and TPOT must be within their bounds",
       .choices = "p50,p90,p99"},
      {.path = "objective",
       .type = F::text,
       .description = "what the best point maximises among those meeting the SLO",
       .choices = "tokens_per_s_per_chip,tokens_per_joule"},
      {.path = "step_cache",
       .type = F::text,
       .description = "the serves' step cache: 'exact' or 'bucket:PCT' (bucket:10 unless given)"},
      {.path = "runtime",
       .type = F::text,
       .description = "the runtime every point's steps name (its name and version); null for the chip alone",
       .nullable = true},
  };
  for (ReportField& f : runtime_band_rows()) rows.push_back(std::move(f));
  return rows;
}

// The grid's lists of shardings (the searchable knobs' lists follow).
std::vector<ReportField> search_space_rows() {
  return {
      {.path = "space",
       .type = F::object,
       .description = "the grid's lists: the shardings and each searchable knob's values"},
      {.path = "space.tp",
       .type = F::values,
       .description = "the tensor-parallel degrees given; null when --tp is not given",
       .nullable = true},
      {.path = "space.ep",
       .type = F::values,
       .description = "the expert-parallel degrees given; null when --ep is not given",
       .nullable = true},
      {.path = "space.dp",
       .type = F::values,
       .description = "the data-parallel degrees given; null when --dp is not given",
       .nullable = true},
      {.path = "space.max_chips",
       .type = F::integer,
       .description = "the most chips a sharding may take; null when --max-chips is not given",
       .minimum = 1,
       .nullable = true},
  };
}

// The grid's size and passes, and each point's place, chip and sharding.
std::vector<ReportField> search_grid_rows() {
  return {
      {.path = "grid_points",
       .type = F::integer,
       .description = "points in the whole grid, over all chips",
       .minimum = 1},
      {.path = "points_run",
       .type = F::integer,
       .description = "points run (the length of points), over all passes",
       .minimum = 1},
      {.path = "passes",
       .type = F::integer,
       .description = "passes run: the coarse one and the refinements",
       .minimum = 1},
      {.path = "points", .type = F::records, .description = "every point run, in grid order"},
      {.path = "points[].point",
       .type = F::integer,
       .description = "the point's index in points (fronts and best refer to it)",
       .minimum = 0},
      {.path = "points[].chip", .type = F::text, .description = "the name of the point's chip"},
      {.path = "points[].tp", .type = F::integer, .description = "the point's tensor-parallel degree", .minimum = 1},
      {.path = "points[].ep", .type = F::integer, .description = "the point's expert-parallel degree", .minimum = 1},
      {.path = "points[].dp", .type = F::integer, .description = "the point's data-parallel degree", .minimum = 1},
  };
}

// Each point's pass and status, then its chips and throughput; `ok` is when a figure is there.
std::vector<ReportField> search_point_outcome_rows(const std::string& ok) {
  return {
      {.path = "points[].pass",
       .type = F::integer,
       .description = "the pass that ran the point: 1 the coarse pass, 2 and later the refinements",
       .minimum = 1},
      {.path = "points[].status",
       .type = F::text,
       .description = "whether the point's serve ran",
       .choices = "ok,error"},
      {.path = "points[].error",
       .type = F::text,
       .description = "why the point could not run (a refused sharding, a serve's error)",
       .when = "status is error"},
      {.path = "points[].chips",
       .type = F::integer,
       .description = "chips the point's deployment takes (all instances when disaggregated)",
       .minimum = 1,
       .when = ok},
      {.path = "points[].tokens_per_s_per_chip",
       .type = F::number,
       .unit = "tokens/s",
       .description = "output tokens over the serve's duration, divided by the deployment's chips",
       .minimum = 0,
       .when = ok},
      {.path = "points[].tokens_per_s_per_user",
       .type = F::number,
       .unit = "tokens/s",
       .description = "mean over requests of a request's decode rate (output tokens after the first "
                      "over its decode time)",
       .minimum = 0,
       .when = ok},
  };
}

// Each point's TTFT and TPOT percentiles.
std::vector<ReportField> search_point_latency_rows(const std::string& ok) {
  return {
      {.path = "points[].ttft_ms",
       .type = F::object,
       .description = "time to first token over the point's requests",
       .when = ok},
      {.path = "points[].ttft_ms.p50",
       .type = F::number,
       .unit = "ms",
       .description = "median TTFT over requests",
       .minimum = 0,
       .when = ok},
      {.path = "points[].ttft_ms.p90",
       .type = F::number,
       .unit = "ms",
       .description = "p90 TTFT over requests",
       .minimum = 0,
       .when = ok},
      {.path = "points[].ttft_ms.p99",
       .type = F::number,
       .unit = "ms",
       .description = "p99 TTFT over requests",
       .minimum = 0,
       .when = ok},
      {.path = "points[].tpot_ms",
       .type = F::object,
       .description = "time per output token over the point's requests",
       .when = ok},
      {.path = "points[].tpot_ms.p50",
       .type = F::number,
       .unit = "ms",
       .description = "median TPOT over requests",
       .minimum = 0,
       .when = ok},
      {.path = "points[].tpot_ms.p90",
       .type = F::number,
       .unit = "ms",
       .description = "p90 TPOT over requests",
       .minimum = 0,
       .when = ok},
      {.path = "points[].tpot_ms.p99",
       .type = F::number,
       .unit = "ms",
       .description = "p99 TPOT over requests",
       .minimum = 0,
       .when = ok},
  };
}

// Each point's goodput, energy per token and marks (meets the SLO, on the front, best).
std::vector<ReportField> search_point_mark_rows(const std::string& ok) {
  return {
      {.path = "points[].goodput_requests_per_s",
       .type = F::number,
       .unit = "requests/s",
       .description = "requests within the TTFT and TPOT SLOs per second of the serve (every request "
                      "when no SLO is given)",
       .minimum = 0,
       .when = ok},
      {.path = "points[].joules_per_token",
       .type = F::number,
       .unit = "J/token",
       .description = "energy of the deployment's chips per output token; null when the chip config "
                      "has no energy section",
       .minimum = 0,
       .nullable = true,
       .when = ok},
      {.path = "points[].fits", .type = F::flag, .description = "bytes_per_chip is within the chip's DDR", .when = ok},
      {.path = "points[].bytes_per_chip",
       .type = F::integer,
       .unit = "bytes",
       .description = "a chip's weights and the KV cache the engine reserved for it",
       .minimum = 0,
       .when = ok},
      {.path = "points[].meets_slo",
       .type = F::flag,
       .description = "TTFT and TPOT at the SLO's statistic are within the SLOs given (true when none is)",
       .when = ok},
      {.path = "points[].on_front",
       .type = F::flag,
       .description = "no point of the same chip has at least its tokens/s per chip and per user and "
                      "more of one (false for a point that could not run)"},
      {.path = "points[].best", .type = F::flag, .description = "the point is the search's best (the top-level best)"},
  };
}

// Each chip's Pareto front, and the best point over all chips.
std::vector<ReportField> search_front_rows() {
  return {
      {.path = "fronts", .type = F::records, .description = "one Pareto front per chip, in the chips' order"},
      {.path = "fronts[].chip", .type = F::text, .description = "the chip's name"},
      {.path = "fronts[].points",
       .type = F::values,
       .description = "indices into points of the chip's front, by tokens/s per user"},
      {.path = "fronts[].best",
       .type = F::integer,
       .description = "index into points of the chip's best point meeting the SLO; null when none of its "
                      "points meets it",
       .minimum = 0,
       .nullable = true},
      {.path = "best",
       .type = F::integer,
       .description = "index into points of the best point over all chips meeting the SLO; null when no "
                      "point meets it",
       .minimum = 0,
       .nullable = true},
  };
}

Report search_json() {
  Report r{.name = "search",
           .format = ReportFormat::json,
           .command = "g5sim search --json PATH",
           .schema_version = 1,
           .description =
               "one search: its set-up (model, chips, load, SLO, objective, the grid's lists), every point "
               "run with its serve's figures, each chip's Pareto front of output tokens/s per chip "
               "against per user, and the best point meeting the SLO"};
  std::vector<ReportField>& f = r.fields;
  append(f, search_setup_rows());
  append(f, search_space_rows());
  append(f, search_knob_rows("space.", true));
  append(f, search_grid_rows());
  append(f, search_knob_rows("points[].", false));
  const std::string ok = "status is ok";
  append(f, search_point_outcome_rows(ok));
  append(f, search_point_latency_rows(ok));
  append(f, search_point_mark_rows(ok));
  append(f, search_front_rows());
  return r;
}

Report search_csv() {
  Report r{.name = "search_points",
           .format = ReportFormat::csv,
           .command = "g5sim search --csv PATH",
           .description =
               "one row per point run, in grid order: the point's chip, sharding and value of every "
               "searchable knob (the knob tables' rows that search may list, in table order: each a "
               "column whether its list is given or not), then its serve's figures and its marks; a "
               "point that could not run has its error in status and empty figures"};
  std::vector<ReportField>& f = r.fields;
  append(f, {
                {.path = "point",
                 .type = F::integer,
                 .description = "the point's index (the JSON's points[].point)",
                 .minimum = 0},
                {.path = "chip", .type = F::text, .description = "the name of the point's chip"},
                {.path = "tp", .type = F::integer, .description = "the point's tensor-parallel degree", .minimum = 1},
                {.path = "ep", .type = F::integer, .description = "the point's expert-parallel degree", .minimum = 1},
                {.path = "dp", .type = F::integer, .description = "the point's data-parallel degree", .minimum = 1},
                {.path = "chips",
                 .type = F::integer,
                 .description = "chips the point's deployment takes (all instances when disaggregated); empty "
                                "when the point could not run",
                 .minimum = 1,
                 .nullable = true},
            });
  append(f, search_knob_rows("", false));
  auto figure = [](const std::string& path, const std::string& unit, const std::string& what) {
    return ReportField{.path = path,
                       .type = F::number,
                       .unit = unit,
                       .description = what + "; empty when the point could not run",
                       .minimum = 0,
                       .nullable = true};
  };
  append(f, {
                {.path = "pass",
                 .type = F::integer,
                 .description = "the pass that ran the point: 1 the coarse pass, 2 and later the refinements",
                 .minimum = 1},
                {.path = "status",
                 .type = F::text,
                 .description = "'ok', or the error that kept the point from running (a refused sharding, a "
                                "serve's error)"},
                figure("tokens_per_s_per_chip", "tokens/s",
                       "output tokens over the serve's duration, divided by the deployment's chips"),
                figure("tokens_per_s_per_user", "tokens/s",
                       "mean over requests of a request's decode rate (output tokens after the first over its "
                       "decode time)"),
                figure("ttft_p50_ms", "ms", "median TTFT over requests"),
                figure("ttft_p90_ms", "ms", "p90 TTFT over requests"),
                figure("ttft_p99_ms", "ms", "p99 TTFT over requests"),
                figure("tpot_p50_ms", "ms", "median TPOT over requests"),
                figure("tpot_p90_ms", "ms", "p90 TPOT over requests"),
                figure("tpot_p99_ms", "ms", "p99 TPOT over requests"),
                figure("goodput_requests_per_s", "requests/s",
                       "requests within the TTFT and TPOT SLOs per second of the serve (every request when no SLO "
                       "is given)"),
                {.path = "joules_per_token",
                 .type = F::number,
                 .unit = "J/token",
                 .description = "energy of the deployment's chips per output token; empty when the chip config has "
                                "no energy section or the point could not run",
                 .minimum = 0,
                 .nullable = true},
                {.path = "fits",
                 .type = F::flag,
                 .description = "bytes_per_chip is within the chip's DDR (a searched sharding leaves its weights "
                                "room for a KV cache); empty when the point could not run",
                 .nullable = true},
                {.path = "bytes_per_chip",
                 .type = F::integer,
                 .unit = "bytes",
                 .description = "a chip's weights and the KV cache the engine reserved for it (kv_tokens over dp "
                                "ranks); empty when the point could not run",
                 .minimum = 0,
                 .nullable = true},
                {.path = "meets_slo",
                 .type = F::flag,
                 .description = "TTFT and TPOT at the SLO's statistic are within the SLOs given (true when none "
                                "is); empty when the point could not run",
                 .nullable = true},
                {.path = "on_front",
                 .type = F::flag,
                 .description = "the point is on its chip's Pareto front of tokens/s per chip against per user"},
                {.path = "best", .type = F::flag, .description = "the point is the search's best meeting the SLO"},
            });
  return r;
}

// The sensitivity's set-up: the metric, the step, the runs made and the base runs' warnings.
std::vector<ReportField> sensitivity_setup_rows() {
  return {
      {.path = "runtime",
       .type = F::text,
       .description = "the runtime the runs name (its name and version; its fields are varied as "
                      "runtime.PATH); null for the chip alone",
       .nullable = true},
      {.path = "runtime_source",
       .type = F::text,
       .description = "the path of the runtime config read; null for the chip alone",
       .nullable = true},
      {.path = "metric",
       .type = F::text,
       .description = "the metric differentiated (step_ms for a run and tpot_p50_ms for a serve unless "
                      "--metric is given)",
       .choices = metric_names()},
      {.path = "delta",
       .type = F::number,
       .unit = "ratio",
       .description = "the relative step each field moves down and up (--delta-pct over 100)",
       .minimum = 0},
      {.path = "runs",
       .type = F::integer,
       .description = "simulations or serves made: points times one plus twice the fields",
       .minimum = 1},
      {.path = "warnings",
       .type = F::texts,
       .description = "the base runs' warnings as text, each once (empty for a serve)"},
  };
}

// One record per point: its context length, base metric and limiting resource.
std::vector<ReportField> sensitivity_point_rows() {
  return {
      {.path = "points", .type = F::records, .description = "one per context length of a run, or one for a serve"},
      {.path = "points[].ctx",
       .type = F::integer,
       .unit = "tokens",
       .description = "the run's context length at this point; null for a serve",
       .minimum = 1,
       .nullable = true},
      {.path = "points[].metric_base",
       .type = F::number,
       .description = "the metric on the chip as it is, in the metric's own unit (its name's suffix)",
       .minimum = 0},
      {.path = "points[].bound_by",
       .type = F::text,
       .description = "the base run's limiting resource (an engine or memory level); null for a serve",
       .nullable = true},
      {.path = "points[].bound_share",
       .type = F::number,
       .unit = "ratio",
       .description = "the share of the base run's time its limiting resource is busy (0 for a serve)",
       .minimum = 0},
  };
}

// Every field varied at a point, with its variants' values and metrics and its elasticity.
std::vector<ReportField> sensitivity_field_rows() {
  return {
      {.path = "points[].fields",
       .type = F::records,
       .description = "every field varied, by decreasing absolute elasticity, those without one last"},
      {.path = "points[].fields[].field",
       .type = F::text,
       .description = "the chip field, dotted as in the config (ddr.bandwidth_gb_per_s), or the runtime's "
                      "as runtime. and its path (runtime.step.cpu_ns)"},
      {.path = "points[].fields[].value",
       .type = F::number,
       .description = "the field's value in the config, in the field's own unit"},
      {.path = "points[].fields[].low_value",
       .type = F::number,
       .description = "the field's value in the lower variant as the config holds it (a count rounds); "
                      "null when that side did not run (see note)",
       .nullable = true},
      {.path = "points[].fields[].high_value",
       .type = F::number,
       .description = "the field's value in the upper variant as the config holds it; null when that "
                      "side did not run (see note)",
       .nullable = true},
      {.path = "points[].fields[].metric_low",
       .type = F::number,
       .description = "the metric in the lower variant, in the metric's unit; null when that side did "
                      "not run",
       .nullable = true},
      {.path = "points[].fields[].metric_high",
       .type = F::number,
       .description = "the metric in the upper variant, in the metric's unit; null when that side did "
                      "not run",
       .nullable = true},
      {.path = "points[].fields[].elasticity",
       .type = F::number,
       .description = "d ln(metric) / d ln(field) from the sides that ran (a +1 % change of the field "
                      "moves the metric by about this many %); null when method is none",
       .nullable = true},
      {.path = "points[].fields[].elasticity_down",
       .type = F::number,
       .description = "the slope between the lower variant and the base; null when the lower side did "
                      "not run",
       .nullable = true},
      {.path = "points[].fields[].elasticity_up",
       .type = F::number,
       .description = "the slope between the base and the upper variant; null when the upper side did "
                      "not run",
       .nullable = true},
      {.path = "points[].fields[].uneven",
       .type = F::flag,
       .description = "the two one-sided slopes disagree (differ by more than 0.1 and more than half the "
                      "larger): the metric is not smooth in the field here"},
      {.path = "points[].fields[].method",
       .type = F::text,
       .description = "how the elasticity was taken: both sides, the upper only, the lower only, or not "
                      "at all",
       .choices = "central,forward,backward,none"},
      {.path = "points[].fields[].note",
       .type = F::text,
       .description = "why a side is missing (the config's refusal of the value, the run's error, a "
                      "value of 0); null when both sides ran",
       .nullable = true},
  };
}

Report sensitivity_json() {
  Report r{.name = "sensitivity",
           .format = ReportFormat::json,
           .command = "g5sim sensitivity --json PATH",
           .schema_version = 1,
           .description =
               "one sensitivity: its set-up, then per point (a context length of a run, or the one "
               "serve) the base metric and every chip field varied with its elasticity, fields by "
               "decreasing absolute elasticity, those without one last"};
  std::vector<ReportField>& f = r.fields;
  append(f, design_head("sensitivity", "variant"));
  append(f, sensitivity_setup_rows());
  append(f, sensitivity_point_rows());
  append(f, sensitivity_field_rows());
  return r;
}

Report sensitivity_csv() {
  Report r{.name = "sensitivity_points",
           .format = ReportFormat::csv,
           .command = "g5sim sensitivity --csv PATH",
           .description =
               "one row per point and chip field: a point is a context length of a run (or the one "
               "serve), its fields in rank order (by decreasing absolute elasticity, those without one "
               "last)"};
  r.fields = {
      {.path = "ctx",
       .type = F::integer,
       .unit = "tokens",
       .description = "the run's context length at this point; empty for a serve",
       .minimum = 1,
       .nullable = true},
      {.path = "field",
       .type = F::text,
       .description = "the chip field, dotted as in the config (ddr.bandwidth_gb_per_s)"},
      {.path = "value", .type = F::number, .description = "the field's value in the config, in the field's own unit"},
      {.path = "low_value",
       .type = F::number,
       .description = "the field's value in the lower variant as the config holds it; empty when that side did not "
                      "run (see note)",
       .nullable = true},
      {.path = "high_value",
       .type = F::number,
       .description = "the field's value in the upper variant as the config holds it; empty when that side did not "
                      "run (see note)",
       .nullable = true},
      {.path = "metric", .type = F::text, .description = "the metric differentiated", .choices = metric_names()},
      {.path = "metric_base",
       .type = F::number,
       .description = "the metric on the chip as it is at this point, in the metric's own unit",
       .minimum = 0},
      {.path = "metric_low",
       .type = F::number,
       .description = "the metric in the lower variant; empty when that side did not run",
       .nullable = true},
      {.path = "metric_high",
       .type = F::number,
       .description = "the metric in the upper variant; empty when that side did not run",
       .nullable = true},
      {.path = "elasticity",
       .type = F::number,
       .description = "d ln(metric) / d ln(field) from the sides that ran; empty when method is none",
       .nullable = true},
      {.path = "elasticity_down",
       .type = F::number,
       .description = "the slope between the lower variant and the base; empty when the lower side did not run",
       .nullable = true},
      {.path = "elasticity_up",
       .type = F::number,
       .description = "the slope between the base and the upper variant; empty when the upper side did not run",
       .nullable = true},
      {.path = "uneven",
       .type = F::flag,
       .description = "the two one-sided slopes disagree: the metric is not smooth in the field here"},
      {.path = "method",
       .type = F::text,
       .description = "how the elasticity was taken: both sides, the upper only, the lower only, or not at all",
       .choices = "central,forward,backward,none"},
      {.path = "rank",
       .type = F::integer,
       .description = "the field's place at this point by absolute elasticity; empty when it has none",
       .minimum = 1,
       .nullable = true},
      {.path = "bound_by",
       .type = F::text,
       .description = "the base run's limiting resource at this point; empty for a serve",
       .nullable = true},
      {.path = "note",
       .type = F::text,
       .description = "why a side is missing; empty when both sides ran",
       .nullable = true},
  };
  return r;
}

// The targets every trial is held to.
std::vector<ReportField> solve_target_rows() {
  return {
      {.path = "targets",
       .type = F::records,
       .description = "the targets every trial is held to: those given, then a run's SLOs as step_ms "
                      "bounds"},
      {.path = "targets[].metric", .type = F::text, .description = "the metric bounded", .choices = metric_names()},
      {.path = "targets[].op",
       .type = F::text,
       .description = "the metric at most (<=) or at least (>=) the bound",
       .choices = "<=,>="},
      {.path = "targets[].bound",
       .type = F::number,
       .description = "the bound, in the metric's own unit (its name's suffix)",
       .minimum = 0},
  };
}

// The chip fields varied: their values, ranges, costs and answers.
std::vector<ReportField> solve_field_rows() {
  return {
      {.path = "fields", .type = F::records, .description = "the chip fields varied, in the order given"},
      {.path = "fields[].field",
       .type = F::text,
       .description = "the chip field, dotted as in the config (ddr.bandwidth_gb_per_s)"},
      {.path = "fields[].value",
       .type = F::number,
       .description = "the field's value in the config, in the field's own unit",
       .minimum = 0},
      {.path = "fields[].low",
       .type = F::number,
       .description = "the least value tried (given, else a tenth of the value; a count rounds up)",
       .minimum = 0},
      {.path = "fields[].high",
       .type = F::number,
       .description = "the greatest value tried (given, else ten times the value; a count rounds down)",
       .minimum = 0},
      {.path = "fields[].cost",
       .type = F::number,
       .description = "the weight of a relative change of the field in the least-change sum (1 unless "
                      "--cost gives it)",
       .minimum = 0},
      {.path = "fields[].answer",
       .type = F::number,
       .description = "the field's value in the answer; null when the outcome is cannot",
       .nullable = true},
  };
}

// The outcome: whether a change meets the targets, why not, and the runs that show it.
std::vector<ReportField> solve_outcome_rows() {
  return {
      {.path = "outcome",
       .type = F::text,
       .description = "met: a change meets the targets; already: the chip as it is meets them; cannot: "
                      "nothing in range does",
       .choices = "met,already,cannot"},
      {.path = "reason",
       .type = F::text,
       .description = "why no change in range meets, naming the closest run's limiting resource; null "
                      "unless the outcome is cannot",
       .nullable = true},
      {.path = "answer_trial",
       .type = F::integer,
       .description = "index into trials of the answer's run; null when the outcome is cannot",
       .minimum = 0,
       .nullable = true},
      {.path = "check_trial",
       .type = F::integer,
       .description = "index into trials of the run just beyond a one-field answer showing it is the "
                      "least; null with several fields, when cannot, or when the cheap end already meets",
       .minimum = 0,
       .nullable = true},
  };
}

// Every run tried (trials[]).
std::vector<ReportField> solve_trial_rows() {
  return {
      {.path = "trials", .type = F::records, .description = "every run, in order; the first is the chip as it is"},
      {.path = "trials[].stage",
       .type = F::text,
       .description = "what the run was for: the chip as it is, a range end, a bisection, the check "
                      "beyond the answer, a gradient probe, a step, or a scaling back",
       .choices = "base,range,bisect,check,gradient,step,scale"},
      {.path = "trials[].values",
       .type = F::values,
       .description = "the varied fields' values in this run, as the config holds them, in the fields' "
                      "order"},
      {.path = "trials[].metrics",
       .type = F::values,
       .description = "the targets' metrics in this run, in the targets' order; empty when the config "
                      "refused the values (see note)"},
      {.path = "trials[].meets", .type = F::flag, .description = "the run meets every target"},
      {.path = "trials[].shortfall",
       .type = F::number,
       .description = "the summed log distance of the metrics to the bounds they miss (0 when it meets); "
                      "null when it is infinite (the config refused the values, or a >= metric is 0)",
       .minimum = 0,
       .nullable = true},
      {.path = "trials[].bound_by",
       .type = F::text,
       .description = "the run's limiting resource; null for a serve or a refused config",
       .nullable = true},
      {.path = "trials[].note",
       .type = F::text,
       .description = "the config's refusal of the values; null when it ran",
       .nullable = true},
  };
}

Report solve_json() {
  Report r{.name = "solve",
           .format = ReportFormat::json,
           .command = "g5sim solve --json PATH",
           .schema_version = 1,
           .description =
               "one solve: its set-up, the targets and the fields varied with their ranges, the outcome "
               "and the least change found (or why none in range meets), then every run tried"};
  std::vector<ReportField>& f = r.fields;
  append(f, design_head("solve", "trial"));
  append(f, solve_target_rows());
  append(f, solve_field_rows());
  append(f, solve_outcome_rows());
  append(f, solve_trial_rows());
  return r;
}

Report solve_csv() {
  Report r{.name = "solve_runs",
           .format = ReportFormat::csv,
           .command = "g5sim solve --csv PATH",
           .description =
               "one row per run tried, the first the chip as it is. Between stage and meets the writer "
               "puts a column per varied field, named by its dotted path (its value in the run), then a "
               "column per target, named by the target's metric (its value in the run, empty when the "
               "config refused the values); those columns follow --vary and --target, not a flag, so "
               "only the fixed columns are rows here"};
  r.fields = {
      {.path = "trial", .type = F::integer, .description = "the run's index (the JSON's trials index)", .minimum = 0},
      {.path = "stage",
       .type = F::text,
       .description = "what the run was for: the chip as it is, a range end, a bisection, the check beyond the "
                      "answer, a gradient probe, a step, or a scaling back",
       .choices = "base,range,bisect,check,gradient,step,scale"},
      {.path = "meets", .type = F::flag, .description = "the run meets every target"},
      {.path = "shortfall",
       .type = F::number,
       .description = "the summed log distance of the metrics to the bounds they miss (0 when it meets); empty when "
                      "it is infinite (a refused config, or a >= metric of 0)",
       .minimum = 0,
       .nullable = true},
      {.path = "bound_by",
       .type = F::text,
       .description = "the run's limiting resource; empty for a serve or a refused config",
       .nullable = true},
      {.path = "note",
       .type = F::text,
       .description = "the config's refusal of the values; empty when it ran",
       .nullable = true},
  };
  return r;
}

#pragma GCC diagnostic pop

}  // namespace

const std::vector<Report>& design_reports() {
  static const std::vector<Report> reports = {search_json(),     search_csv(), sensitivity_json(),
                                              sensitivity_csv(), solve_json(), solve_csv()};
  return reports;
}

}  // namespace g5sim
