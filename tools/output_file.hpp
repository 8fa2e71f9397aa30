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

#include <deque>
#include <fstream>
#include <optional>
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

/// Every output of one command, declared together so that they are checked together before the
/// command runs anything: two of them on standard output ('-'), or two naming one file, are refused
/// (CliError naming both flags). One file is one identity: the device and inode of a file that
/// exists (so X, ./X, dir/../X, a symlink or a hard link to X are X), else its absolute path with
/// '.', '..' and the symlinks of its existing folders resolved. Then each is opened (OutputFile:
/// written through a temporary, the old file kept on any failure or signal).
class OutputSet {
 public:
  /// (flag, path) of each output the command takes; a path "" is an output not given.
  explicit OutputSet(const std::vector<std::pair<std::string, std::string>>& outputs);
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  /// The output given by `flag`, or nullptr when it was not given.
  OutputFile* get(const std::string& flag);
  /// Whether one of them writes to standard output (which a command's table then leaves alone).
  bool on_stdout() const { return on_stdout_; }
  /// Closes each open output in declaration order (OutputFile::close), then checks standard output.
  void close();

 private:
  std::deque<std::pair<std::string, std::optional<OutputFile>>> files_;  // stable: OutputFile does not move
  bool on_stdout_ = false;
};

/// For the program's main(): SIGINT and SIGTERM remove every temporary output (or rename it
/// where keep_unfinished_at said) and exit at once with 128 + the signal (130, 143), leaving the
/// paths as they were.
void remove_outputs_on_interrupt();

}  // namespace tools
