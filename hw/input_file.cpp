#include "hw/input_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>

#include "hw/config_error.hpp"

namespace hw {

std::string read_input_file(const std::string& path, std::uint64_t max_bytes) {
  namespace fs = std::filesystem;
  if (path.empty()) throw ConfigError("an empty path names no file");
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw ConfigError(fmt::format("{}: cannot open file", path));
  if (fs::is_directory(status)) throw ConfigError(fmt::format("{}: is a directory, not a file", path));
  if (!fs::is_regular_file(status)) {
    throw ConfigError(
        fmt::format("{}: not a regular file (a device, FIFO or socket cannot be read as an input file)", path));
  }
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw ConfigError(fmt::format("{}: cannot read its size", path));
  if (size > max_bytes) {
    throw ConfigError(fmt::format("{}: {} bytes, above the {} byte limit of an input file", path, size, max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open file", path));
  // Read in blocks up to one past the cap: some regular files (in /proc) report size 0 and then
  // deliver any amount, or fail on the first read (/proc/self/mem); the stream's buffer may throw.
  std::string text;
  text.reserve(static_cast<std::size_t>(std::min<std::uintmax_t>(size, max_bytes)));
  try {
    char block[65536];
    while (text.size() <= max_bytes) {
      in.read(block, sizeof block);
      text.append(block, static_cast<std::size_t>(in.gcount()));
      if (!in) break;
    }
  } catch (const std::exception&) {
    throw ConfigError(fmt::format("{}: read error (the file cannot be read as a stream of bytes)", path));
  }
  if (in.bad()) throw ConfigError(fmt::format("{}: read error", path));
  // The file may have grown since its size was taken: the cap holds for what was read.
  if (text.size() > max_bytes) {
    throw ConfigError(fmt::format("{}: above the {} byte limit of an input file", path, max_bytes));
  }
  // A UTF-8 byte order mark (Excel's "CSV UTF-8", Notepad) is no part of the text: without this
  // a trace's first column would read as "\ufeffarrival_s", shown as a baffling "arrival_s".
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  return text;
}

}  // namespace hw
