// Every report, gathered (g5sim/reports.hpp).

#include "g5sim/reports.hpp"

namespace g5sim {

const std::vector<Report>& all_reports() {
  static const std::vector<Report> all = [] {
    std::vector<Report> out;
    for (const std::vector<Report>* floor : {&run_reports(), &serve_reports(), &explore_reports(), &design_reports()}) {
      out.insert(out.end(), floor->begin(), floor->end());
    }
    return out;
  }();
  return all;
}

}  // namespace g5sim
