// The design table (g5sim/design.hpp): the knobs search, sensitivity and solve add to the serve's
// (serving/serve_knobs.cpp), a row each, in documentation order.

#include <limits>

#include "explore/context_list.hpp"
#include "explore/deployment_search.hpp"
#include "g5sim/design.hpp"
#include "g5sim/run_options.hpp"
#include "models/run_limits.hpp"

namespace g5sim {
namespace {

void check_degrees(const std::string& text) { explore::parse_knob_list(text, "", 1, models::kMaxDegree); }
void check_contexts(const std::string& text) { explore::parse_context_list(text); }

using T = KnobType;

// Each row names only the fields it sets (designated initializers); the rest keep Knob's defaults,
// which GCC's -Wextra would report as missing.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
std::vector<Knob> search_rows() {
  std::vector<Knob> rows;
  for (const char* degree : {"tp", "ep", "dp"}) {
    const RunOption* o = find_run_option(degree);
    rows.push_back({.name = degree,
                    .flag = o->flag,
                    .type = T::list,
                    .optional = true,
                    .default_doc = "every sharding that fits",
                    .doc = std::string(o->doc) + ": a list (1,2,4 or 1:8)",
                    .group = "sharding",
                    .takes = kSearchKnob,
                    .check = check_degrees});
  }
  rows.push_back({.name = "max_chips",
                  .flag = "--max-chips",
                  .type = T::count,
                  .min = 1,
                  .max = models::kMaxChips,
                  .optional = true,
                  .default_doc = "the fewest that fit",
                  .unit = "chips",
                  .doc = "without all of --tp/--ep/--dp: shardings up to this many chips",
                  .group = "sharding",
                  .takes = kSearchKnob});
  rows.push_back({.name = "slo_stat",
                  .flag = "--slo-stat",
                  .type = T::text,
                  .choices = "p50,p90,p99",
                  .default_text = "p90",
                  .doc = "the statistic over requests the SLOs hold at: p50, p90 or p99",
                  .group = "slo",
                  .takes = kSearchKnob});
  rows.push_back({.name = "objective",
                  .flag = "--objective",
                  .type = T::text,
                  .choices = "tokens_per_s_per_chip,tokens_per_joule",
                  .default_text = "tokens_per_s_per_chip",
                  .doc = "what the best point has most of: tokens_per_s_per_chip or tokens_per_joule (chips with "
                         "energy)",
                  .group = "search",
                  .takes = kSearchKnob});
  rows.push_back({.name = "exhaustive",
                  .flag = "--exhaustive",
                  .type = T::flag,
                  .default_text = "false",
                  .doc = "run every point of the grid instead of a coarse pass and refinement",
                  .group = "search",
                  .takes = kSearchKnob});
  return rows;
}

// What sensitivity and solve measure: a serve instead of a run, or the run's context lengths.
std::vector<Knob> workload_rows() {
  return {
      {.name = "serve",
       .flag = "--serve",
       .type = T::text,
       .optional = true,
       .doc = "a serve workload instead of a run: g5sim serve's settings as key=value items, space separated "
              "('rate=2 requests=100 input_len=4096 output_len=1024'; keys as g5sim.serve()'s)",
       .group = "workload",
       .takes = kSensitivityKnob | kSolveKnob},
      {.name = "ctx",
       .flag = "--ctx",
       .type = T::list,
       .optional = true,
       .default_doc = "the run's --ctx default",
       .unit = "tokens",
       .doc = "the run's context length, or a list of them (4096,32768 or 1024:32768:x2): a ranking per length",
       .group = "workload",
       .takes = kSensitivityKnob,
       .check = check_contexts},
      {.name = "role",
       .flag = "--role",
       .type = T::text,
       .choices = "both,prefill,decode",
       .default_text = "both",
       .doc = "with a disaggregated serve (--serve 'disagg=P:D ...'): vary the chip of one role, the other held (its "
              "prefill_chip or decode_chip item, else the chip as given)",
       .group = "workload",
       .takes = kSensitivityKnob | kSolveKnob},
  };
}

// The sensitivity's knobs: the fields varied, the metric, the step and the table's length.
std::vector<Knob> sensitivity_rows() {
  return {
      {.name = "fields",
       .flag = "--fields",
       .type = T::list,
       .optional = true,
       .default_doc = "every numeric field of the chip, and of the runtime when --runtime names one",
       .doc = "the chip fields to vary, dotted as errors name them (ddr.bandwidth_gb_per_s,engines.tiu.clock_mhz), "
              "and the runtime's as runtime. and its path (runtime.step.cpu_ns,runtime.kernels.graph.gap_ns)",
       .group = "sensitivity",
       .takes = kSensitivityKnob},
      {.name = "metric",
       .flag = "--metric",
       .type = T::text,
       .optional = true,
       .default_doc = "step_ms for a run, tpot_p50_ms for a serve",
       .doc = "what is differentiated: a run's step_ms or tokens_per_s_per_chip; a serve's tpot_p50_ms, tpot_p99_ms, "
              "ttft_p50_ms, ttft_p99_ms, itl_p99_ms, e2e_p50_s, output_tokens_per_s_per_chip or "
              "goodput_requests_per_s",
       .group = "sensitivity",
       .takes = kSensitivityKnob},
      {.name = "delta_pct",
       .flag = "--delta-pct",
       .type = T::decimal,
       .low = 0.1,
       .high = 50,
       .default_text = "5",
       .unit = "%",
       .doc = "each field is moved by this percent down and up",
       .group = "sensitivity",
       .takes = kSensitivityKnob},
      {.name = "top",
       .flag = "--top",
       .type = T::count,
       .min = 1,
       .max = 100000,
       .default_text = "10",
       .doc = "rows the table lists: sensitivity's fields per point, search's front rows per chip (points "
              "alike in every figure one row); the JSON and CSV have every one",
       .group = "sensitivity",
       .takes = kSensitivityKnob | kSearchKnob},
  };
}

// The solve's knobs: the targets, the fields changed and their costs, the precision and the budget.
std::vector<Knob> solve_rows() {
  return {
      {.name = "target",
       .flag = "--target",
       .keyword = "targets",
       .type = T::list,
       .optional = true,
       .doc = "METRIC<=X or METRIC>=X, repeatable: a run's step_ms, tokens_per_s_per_chip; a serve's tpot_p50_ms, "
              "tpot_p99_ms, ttft_p50_ms, ttft_p99_ms, itl_p99_ms, e2e_p50_s, output_tokens_per_s_per_chip, "
              "goodput_requests_per_s",
       .group = "solve",
       .takes = kSolveKnob},
      {.name = "vary",
       .flag = "--vary",
       .type = T::list,
       .optional = true,
       .doc = "chip fields to change, dotted, each optionally =LO:HI (default: a tenth to ten times its value): "
              "ddr.bandwidth_gb_per_s or ddr.bandwidth_gb_per_s=4000:20000,engines.tiu.clock_mhz",
       .group = "solve",
       .takes = kSolveKnob},
      {.name = "cost",
       .flag = "--cost",
       .type = T::list,
       .optional = true,
       .default_doc = "1 each",
       .doc = "with several --vary fields: FIELD=W, the weight of a relative change of that field; the answer "
              "minimises the weighted sum of squared log changes",
       .group = "solve",
       .takes = kSolveKnob},
      {.name = "tolerance_pct",
       .flag = "--tolerance-pct",
       .type = T::decimal,
       .low = 0.0001,
       .high = 10,
       .default_text = "0.1",
       .unit = "%",
       .doc = "the answer's precision in percent",
       .group = "solve",
       .takes = kSolveKnob},
      {.name = "max_runs",
       .flag = "--max-runs",
       .type = T::count,
       .min = 3,
       .max = 100000,
       .default_text = "400",
       .doc = "give up after this many runs",
       .group = "solve",
       .takes = kSolveKnob},
  };
}

// The knob search, sensitivity and solve share: how many points or runs at once.
std::vector<Knob> shared_rows() {
  return {
      {.name = "jobs",
       .flag = "--jobs",
       .type = T::count,
       .min = 1,
       .max = run_limits().max_jobs,
       .optional = true,
       .default_doc = "the machine's cores; the results are the same",
       .doc = "points or runs at once, on as many threads",
       .group = "run",
       .takes = kSearchKnob | kSensitivityKnob | kSolveKnob},
  };
}

// The rows after search's: the workload, then sensitivity's, solve's, and the shared ones.
std::vector<Knob> design_rows() {
  std::vector<Knob> rows = workload_rows();
  for (Knob& k : sensitivity_rows()) rows.push_back(std::move(k));
  for (Knob& k : solve_rows()) rows.push_back(std::move(k));
  for (Knob& k : shared_rows()) rows.push_back(std::move(k));
  return rows;
}
#pragma GCC diagnostic pop

}  // namespace

const std::vector<Knob>& design_knobs() {
  static const std::vector<Knob> table = [] {
    std::vector<Knob> out = search_rows();
    for (Knob& k : design_rows()) out.push_back(std::move(k));
    return out;
  }();
  return table;
}

std::vector<const Knob*> knobs_taking(unsigned use) {
  std::vector<const Knob*> out;
  for (const std::vector<Knob>* table : {&serve_knobs(), &design_knobs()}) {
    for (const Knob& k : *table) {
      if (k.takes_in(use)) out.push_back(&k);
    }
  }
  return out;
}

}  // namespace g5sim
