#pragma once
// Parses the --ctx list of `g5sim sweep`: "1024,4096,32768", or a range START:STOP:STEP with
//   xFACTOR  geometric: START, then each value the one before times FACTOR, rounded to the nearest
//            integer (halves up), while <= STOP. FACTOR is a decimal > 1 with at most 6 digits
//            after the point ("x2", "x1.414"); each value must exceed the one before (1:8:x1.1
//            is refused: 1 x 1.1 rounds back to 1).
//   +STEP    linear: START, START + STEP, ... while <= STOP ("1024:8192:+1024").
// The arithmetic is in integers (FACTOR as digits / 10^6), so a list is the same everywhere.

#include <cstdint>
#include <string>
#include <vector>

#include "hw/config_error.hpp"
#include "models/run_limits.hpp"

namespace explore {

using models::kMaxContext;
constexpr std::size_t kMaxContexts = models::kMaxContextList;

/// Throws hw::InputError naming ctx on malformed input.
std::vector<std::uint64_t> parse_context_list(const std::string& text);

}  // namespace explore
