#pragma once
// What the design-space commands share (g5sim/search.hpp, g5sim/sensitivity.hpp,
// g5sim/solve.hpp): their own knobs (explore/design_knobs.cpp, beside the serve's in
// g5sim/knobs.hpp), a chip config held as text so that any numeric field can be set and the chip
// read again, and a workload, a run or a serve, measured on such a chip by named metrics.
//
// A run's metrics: step_ms (the step's time) and tokens_per_s_per_chip. A serve's: ttft_p50_ms,
// ttft_p99_ms, tpot_p50_ms, tpot_p99_ms, itl_p99_ms, e2e_p50_s, output_tokens_per_s_per_chip and
// goodput_requests_per_s (which needs an SLO). A serve keeps its requests (load, seed, lengths)
// for every chip it is measured on.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "g5sim/knobs.hpp"
#include "g5sim/serve.hpp"

namespace g5sim {

/// The knobs search, sensitivity and solve add to the serve's (their flags, keywords, ranges),
/// in documentation order.
const std::vector<Knob>& design_knobs();
/// The knobs a command takes (`use`: kSearchKnob, kSensitivityKnob, kSolveKnob; kSearchList too
/// for search): the serve table's rows, then the design table's.
std::vector<const Knob*> knobs_taking(unsigned use);

/// The values of design_knobs().
struct DesignSettings : Settings {
  DesignSettings() : Settings(design_knobs()) {}
};

/// (knob, text) items as the command line's flags and Python's keywords give them.
using KnobItems = std::vector<std::pair<std::string, std::string>>;

/// A chip config as text: what sensitivity and solve rewrite. `source` names it in errors.
struct ChipText {
  std::string text, source;
};
/// The config a chip name or path names (g5sim::chip_path), read whole. Throws ConfigError.
ChipText chip_text_of(const std::string& name_or_path);

/// A run (base's step) or a serve (its settings; its steps' options in base).
struct DesignWorkload {
  ChipText chip;
  Model model = Model::from_file(shipped_model_path());
  Request base;
  std::optional<ServeSettings> serve;
  /// The serve as its KEY=VALUE items were given ("rate=2 requests=100 ..."), which reports
  /// quote; "" quotes the given knobs in table order.
  std::string serve_items;
  std::optional<double> slo_ttft_ms, slo_tpot_ms;
  /// Which of a disaggregated serve's chips the varied chip is: "both" (every instance), "prefill"
  /// or "decode" (that role's; the other role runs its prefill_chip / decode_chip item, else the
  /// chip as given, held).
  std::string role = "both";
};

/// A serve's settings from its KEY=VALUE items separated by spaces (a design command's --serve,
/// Python's serve= dict): the serve table's kServeItem knobs. Throws ConfigError naming "serve" or
/// the knob.
ServeSettings serve_settings_of(const std::string& items);

}  // namespace g5sim
