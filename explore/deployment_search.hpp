#pragma once
// g5sim search's parts below its public header (g5sim/search.hpp, which states the rules): the
// knob lists' syntax, the grid behind DeploymentSearch, the fronts and the best points.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "g5sim/search.hpp"

namespace explore {

using g5sim::DeploymentSearch;
using g5sim::kMaxKnobValues;
using g5sim::kMaxSearchPoints;
using g5sim::PointOutcome;
using g5sim::SearchDimension;
using g5sim::SearchKnobs;
using g5sim::SearchPoint;
using g5sim::SearchReport;
using g5sim::SearchSpec;

/// A numeric knob's values from "A,B,C" or "LO:HI" (LO, 2 LO, 4 LO, ... up to HI, HI included) or
/// both mixed ("1,4:16"); sorted, duplicates dropped. Throws hw::InputError naming `field` for a
/// value outside lo..hi, a bad range or more than kMaxKnobValues values.
std::vector<std::uint64_t> parse_knob_list(const std::string& text, const std::string& field, std::uint64_t lo,
                                           std::uint64_t hi);
/// A text knob's values, comma separated, each checked by the knob, in the order given with
/// duplicates dropped. Throws hw::InputError naming the knob.
std::vector<std::string> parse_text_list(const std::string& text, const g5sim::Knob& knob);

/// Each point's place on the fronts and against the SLO (the rules in g5sim/search.hpp).
struct Marks {
  std::vector<bool> meets, on_front;
  std::vector<std::vector<std::size_t>> fronts;  // per chip
  std::optional<std::size_t> best;
  std::vector<std::optional<std::size_t>> best_of_chip;
};
Marks mark(const std::vector<SearchPoint>& points, std::size_t chips, const SearchSpec& spec);

/// TTFT and TPOT at the SLO's statistic.
double ttft_at(const PointOutcome& o, const std::string& stat);
double tpot_at(const PointOutcome& o, const std::string& stat);

}  // namespace explore
