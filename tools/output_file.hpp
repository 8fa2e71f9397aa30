#pragma once
// Output destinations checked like inputs. A path is opened before the (possibly long) run, so a
// path that cannot be written fails at once (ConfigError, exit 2); every write is checked when the
// file is closed, so a full disk is an error naming the path (WriteError, exit 1), never a silent
// exit 0 with a truncated file. "-" is standard output, checked the same way.

#include <fstream>
#include <ostream>
#include <stdexcept>
#include <string>

namespace tools {

/// Writing an output failed (disk full, I/O error): the CLI exits 1 with this message.
class WriteError : public std::runtime_error {
 public:
  explicit WriteError(const std::string& message) : std::runtime_error(message) {}
};

class OutputFile {
 public:
  /// `flag` names the option in messages ("--json"). "-" writes to standard output.
  OutputFile(std::string path, std::string flag);
  std::ostream& stream();
  /// Flushes and checks every write; throws WriteError naming the path.
  void close();

 private:
  std::string path_, flag_;
  std::ofstream file_;
};

/// Flushes standard output and throws WriteError if any write to it failed.
void check_stdout();

}  // namespace tools
