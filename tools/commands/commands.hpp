#pragma once
// The subcommands of g5sim, one file each (tools/commands/*.cpp); the dispatcher
// (tools/cli.cpp) makes them in this order, which is the order `g5sim help` lists them.

#include "tools/commands/command.hpp"

namespace tools {

CommandPtr make_run(CLI::App& app);
CommandPtr make_sweep(CLI::App& app);
CommandPtr make_compare(CLI::App& app);
CommandPtr make_serve(CLI::App& app);
CommandPtr make_sensitivity(CLI::App& app);
CommandPtr make_solve(CLI::App& app);
CommandPtr make_search(CLI::App& app);
CommandPtr make_merge(CLI::App& app);
CommandPtr make_op(CLI::App& app);
CommandPtr make_check(CLI::App& app);
CommandPtr make_list(CLI::App& app);
CommandPtr make_diff(CLI::App& app);
CommandPtr make_validate(CLI::App& app);
CommandPtr make_calibrate(CLI::App& app);

}  // namespace tools
