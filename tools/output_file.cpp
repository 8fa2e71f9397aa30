#include "tools/output_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "tools/cli_error.hpp"

namespace tools {

OutputFile::OutputFile(std::string path, std::string flag) : path_(std::move(path)), flag_(std::move(flag)) {
  if (path_ == "-") return;
  file_.open(path_, std::ios::binary | std::ios::trunc);
  if (!file_) throw CliError(fmt::format("{}: cannot write '{}': {}", flag_, path_, std::strerror(errno)));
}

std::ostream& OutputFile::stream() { return path_ == "-" ? std::cout : file_; }

void OutputFile::close() {
  if (path_ == "-") {
    check_stdout();
    return;
  }
  file_.flush();
  const bool ok = static_cast<bool>(file_);
  const int error = errno;
  file_.close();
  if (!ok || !file_) {
    throw WriteError(fmt::format("{}: writing '{}' failed: {}", flag_, path_, std::strerror(error)));
  }
}

void check_stdout() {
  std::cout.flush();
  if (!std::cout) throw WriteError(fmt::format("writing standard output failed: {}", std::strerror(errno)));
}

}  // namespace tools
