#pragma once
// The error types for everything a user can get wrong in an input. The library throws them; only
// a front end (the CLI's main(), the Python module) turns them into exit status 2 or ValueError.
//
//   ConfigError - a config document or file: the message names the source, position and field,
//                 and site() holds the same facts apart, for front ends that show them as data
//                 (the Python module's ConfigError.source / .field / .line / .column).
//   InputError  - a parameter of the library's API (a workload, sharding or run option): field()
//                 is the parameter's name as the API spells it ("tp", "q_len", "kv_read_engine"),
//                 and the message speaks the API's words too. A front end maps the field to its
//                 own spelling (the CLI: "--tp") in one table.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace hw {

/// Messages quote input back (a CSV row, a key, a value); a quote of a huge input would bury the
/// message: a message longer than this keeps its head and tail and says how much was cut.
constexpr std::size_t kMaxErrorMessageBytes = 1024;

inline std::string bounded_message(const std::string& message) {
  constexpr std::size_t kTail = 120;
  if (message.size() <= kMaxErrorMessageBytes) return message;
  const std::size_t head = kMaxErrorMessageBytes - kTail;
  return message.substr(0, head) + "... [" + std::to_string(message.size() - head - kTail) + " bytes cut] ..." +
         message.substr(message.size() - kTail);
}

/// Where an error is. `source`: the file path, "<memory:NAME>" for YAML text held in memory, or
/// the name given to an in-memory document (a Python dict); empty for an API parameter.
/// `field`: the dotted path of the field ("ddr.bandwidth_gb_per_s") or the parameter's name;
/// empty when the error is about the document as a whole. `line`, `column`: 1-based, 0 when the
/// source has no text positions (a dict, an API parameter).
struct ErrorSite {
  std::string source;
  std::string field;
  int line = 0;
  int column = 0;
};

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message) : std::runtime_error(bounded_message(message)) {}
  ConfigError(const std::string& message, ErrorSite site)
      : std::runtime_error(bounded_message(message)), site_(std::move(site)) {}
  const ErrorSite& site() const { return site_; }

 private:
  ErrorSite site_;
};

class InputError : public ConfigError {
 public:
  InputError(std::string field, const std::string& message) : ConfigError(message, ErrorSite{"", std::move(field)}) {}
  const std::string& field() const { return site().field; }
};

}  // namespace hw
