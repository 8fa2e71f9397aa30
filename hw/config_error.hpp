#pragma once
// The error types for everything a user can get wrong in an input. The library throws them; only
// a front end (the CLI's main(), the Python module) turns them into exit status 2 or ValueError.
//
//   ConfigError - a config document or file: the message names the source, position and field.
//   InputError  - a parameter of the library's API (a workload, sharding or run option): field()
//                 is the parameter's name as the API spells it ("tp", "q_len", "kv_read_engine"),
//                 and the message speaks the API's words too. A front end maps the field to its
//                 own spelling (the CLI: "--tp") in one table.

#include <stdexcept>
#include <string>

namespace hw {

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message) : std::runtime_error(message) {}
};

class InputError : public ConfigError {
 public:
  InputError(std::string field, const std::string& message) : ConfigError(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

}  // namespace hw
