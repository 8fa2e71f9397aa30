#pragma once
// The `calibration` record g5sim calibrate writes at the end of a calibrated config (a chip's or a
// runtime's): what was fitted, to which rows, with what held-out errors. It is checked for shape
// (every key known, every number in range) and, of it, only `bands` (hw/error_band.hpp) and the
// held-out MAPEs are read: they change no simulated time, only the band a result carries.

#include <optional>

#include "hw/error_band.hpp"
#include "hw/strict_config.hpp"

namespace hw {

/// Reads the record; throws ConfigError naming the file, line and key of a bad one.
std::optional<ErrorBands> read_calibration_record(ConfigMap record, HeldOutMape& held_out);

}  // namespace hw
