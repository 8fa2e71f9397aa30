#pragma once
// The one error a user of g5sim's API can cause: a config document or a request parameter that
// is wrong. what() is one line naming the place and the field; the same facts as data below.

#include <stdexcept>
#include <string>
#include <utility>

namespace g5sim {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(const std::string& message, std::string source, std::string field, int line, int column)
      : std::runtime_error(message),
        source_(std::move(source)),
        field_(std::move(field)),
        line_(line),
        column_(column) {}

  /// The file path, "<memory:NAME>" for YAML text, the name given to an in-memory document; ""
  /// for a Request parameter.
  const std::string& source() const noexcept { return source_; }
  /// The dotted path of the field ("ddr.bandwidth_gb_per_s"), or the Request member's name
  /// ("tp"); "" when the error concerns the document as a whole (unreadable, not a mapping).
  const std::string& field() const noexcept { return field_; }
  /// 1-based position in the source text; 0 when it has none (a dict, a parameter).
  int line() const noexcept { return line_; }
  int column() const noexcept { return column_; }

 private:
  std::string source_, field_;
  int line_ = 0, column_ = 0;
};

}  // namespace g5sim
