#pragma once
// Parses the --ctx list of `g5sim sweep`: "1024,4096,32768" or "START:STOP:xFACTOR"
// (geometric: START, START*F, ... while <= STOP; e.g. "1024:131072:x2").

#include <cstdint>
#include <string>
#include <vector>

#include "models/run_limits.hpp"
#include "tools/cli_error.hpp"

namespace tools {

using models::kMaxContext;
constexpr std::size_t kMaxContexts = models::kMaxContextList;

/// Throws CliError naming --ctx on malformed input.
std::vector<std::uint64_t> parse_context_list(const std::string& text);

}  // namespace tools
