#pragma once
// An error in what the user gave the command line (a flag's value, a shard file): g5sim's public
// ConfigError with no source or field, its message naming the flag or file:line itself. The CLI
// reports it as any ConfigError: one line, exit status 2.

#include <string>

#include "g5sim/config_error.hpp"

namespace tools {

class CliError : public g5sim::ConfigError {
 public:
  explicit CliError(const std::string& message) : g5sim::ConfigError(message, "", "", 0, 0) {}
};

}  // namespace tools
