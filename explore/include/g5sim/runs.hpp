#pragma once
// Tables of runs from C++ beside the grid commands: the order `g5sim sweep` nests its axes in, and
// what moved between two runs (`g5sim diff`).

#include <cstddef>
#include <string>
#include <vector>

namespace g5sim {

/// The grid axes but the context, outermost first, as `g5sim sweep` nests them (the context
/// innermost).
std::vector<std::string> sweep_nesting();

/// `g5sim diff --json -` of two run JSON texts (`g5sim run --json`), each named in errors; `top`
/// ops, the most moved first. Throws ConfigError for a text that is not a run's JSON.
std::string diff_json(const std::string& a, const std::string& a_name, const std::string& b, const std::string& b_name,
                      std::size_t top);

}  // namespace g5sim
