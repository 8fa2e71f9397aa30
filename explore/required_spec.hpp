#pragma once
// g5sim solve (g5sim/solve.hpp, which states the model) below its public header.

#include "explore/design_workload.hpp"
#include "g5sim/solve.hpp"

namespace explore {

using g5sim::kSolveSchemaVersion;
using g5sim::SolveField;
using g5sim::SolveReport;
using g5sim::SolveSpec;
using g5sim::SolveTrial;
using g5sim::Target;
using g5sim::VariedField;

}  // namespace explore
