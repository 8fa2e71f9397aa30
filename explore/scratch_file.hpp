#pragma once
// A scratch file in /tmp that lives as long as its owner: where a design command hands the
// simulator a config it made (a runtime with one field moved), since rows and requests name a
// runtime by path. Created empty and unique (mkstemp), removed by the destructor.

#include <string>

namespace explore {

class ScratchFile {
 public:
  /// `what` names the use in the error when /tmp refuses the file (hw::ConfigError).
  explicit ScratchFile(const std::string& what);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  const std::string& path() const { return path_; }
  /// Replaces the file's contents with `text`; throws hw::ConfigError when the write fails.
  void write(const std::string& text) const;

 private:
  std::string path_;
};

}  // namespace explore
