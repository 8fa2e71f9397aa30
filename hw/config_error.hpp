#pragma once
// The one error type for everything a user can get wrong in an input: config files, in-memory
// configs and command-line values. The library throws it; only main() turns it into exit status 2.

#include <stdexcept>
#include <string>

namespace hw {

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace hw
