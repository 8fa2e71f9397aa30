#pragma once
// g5sim sensitivity (g5sim/sensitivity.hpp, which states the model) below its public header.

#include "explore/design_workload.hpp"
#include "g5sim/sensitivity.hpp"

namespace explore {

using g5sim::FieldSensitivity;
using g5sim::kSensitivitySchemaVersion;
using g5sim::SensitivityPoint;
using g5sim::SensitivityReport;
using g5sim::SensitivitySpec;

}  // namespace explore
