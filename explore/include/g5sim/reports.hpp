#pragma once
// Every report g5sim writes (g5sim/report_fields.hpp), gathered from the floors that write them:
// the run's (api), the serve's (serving), the grid's and the design commands' (explore).
//
//   #include <g5sim/reports.hpp>
//   for (const g5sim::Report& r : g5sim::all_reports()) ...   // name, command, fields

#include <vector>

#include "g5sim/report_fields.hpp"
#include "g5sim/serve.hpp"

namespace g5sim {

/// sweep (CSV and JSON lines), compare, diff, validate and validate_rows: explore/explore_reports.cpp.
const std::vector<Report>& explore_reports();
/// search, search_points, sensitivity, sensitivity_points, solve, solve_runs: explore/design_reports.cpp.
const std::vector<Report>& design_reports();
/// run_reports(), serve_reports(), explore_reports(), design_reports(), in that order.
const std::vector<Report>& all_reports();

}  // namespace g5sim
