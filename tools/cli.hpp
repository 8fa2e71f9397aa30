#pragma once
// The g5sim command line as a function, so that the binary, the tests and the fuzz harness run the
// same code: parses argv, runs the subcommand, writes to standard output and error, and returns
// the exit status (0, 2 for bad input, 1 for a failed write or an internal error).

#include <cstdint>
#include <limits>

namespace tools {

/// Ceilings an embedding program may put on every run (the fuzz harness keeps runs small).
struct CliLimits {
  std::uint64_t max_commands = std::numeric_limits<std::uint64_t>::max();  ///< caps --max-commands
  /// `validate` and `calibrate` run at most this many rows of their table (a fuzz harness's bound;
  /// the command line has none).
  std::uint64_t max_table_rows = std::numeric_limits<std::uint64_t>::max();
  /// `serve` takes at most this many steps (a fuzz harness's bound; the command line's is
  /// serving::kMaxServeSteps).
  std::uint64_t max_serve_steps = std::numeric_limits<std::uint64_t>::max();
};

int run_cli(int argc, const char* const* argv, const CliLimits& limits = {});

}  // namespace tools
