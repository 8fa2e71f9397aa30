#pragma once
// Output destinations checked like inputs, and written all or nothing.
//
// A file path is written through a temporary file beside it (same directory, so the final rename
// is atomic) that replaces the path only when close() has checked every write: an error before
// (a bad flag, a failed point, a full disk) or an interrupt leaves whatever was at the path as it
// was, and no temporary behind. A path that cannot be written fails at once (ConfigError, exit 2);
// a failed write names the path (WriteError, exit 1), never a silent exit 0 with a truncated file.
// "-" is standard output, checked the same way; a path that exists and is not a regular file (a
// device, a pipe) is written in place, as there is nothing to keep.

#include <fstream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

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
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  /// Not closed: the temporary is removed and the path keeps what it had.
  ~OutputFile();
  std::ostream& stream();
  /// Flushes and checks every write, then puts the file at its path; throws WriteError naming it.
  void close();
  /// What was written so far is kept at `path` (renamed there) when the command ends without
  /// close(), by an error or an interrupt, instead of being removed: a sweep's rows for --resume.
  void keep_unfinished_at(const std::string& path);

 private:
  void discard() noexcept;

  std::string path_, flag_;
  std::string temporary_;  ///< "" when written in place (standard output, a device)
  int slot_ = -1;          ///< its entry among the temporaries an interrupt removes
  std::string keep_at_;    ///< keep_unfinished_at's path, or ""
  std::ofstream file_;
};

/// Flushes standard output and throws WriteError if any write to it failed.
void check_stdout();

/// Refuses two outputs of one command naming the same file (CliError naming both flags).
/// `outputs`: (flag, path) pairs; "" and "-" are not files.
void refuse_shared_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

/// For the program's main(): SIGINT and SIGTERM remove every temporary output (or rename it
/// where keep_unfinished_at said) and exit at once with 128 + the signal (130, 143), leaving the
/// paths as they were.
void remove_outputs_on_interrupt();

}  // namespace tools
