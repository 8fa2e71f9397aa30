#include "hw/input_file.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "hw/config_error.hpp"

namespace hw {

std::string read_input_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw ConfigError(fmt::format("{}: cannot open file", path));
  if (fs::is_directory(status)) throw ConfigError(fmt::format("{}: is a directory, not a file", path));
  if (!fs::is_regular_file(status)) {
    throw ConfigError(
        fmt::format("{}: not a regular file (a device, FIFO or socket cannot be read as a config)", path));
  }
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw ConfigError(fmt::format("{}: cannot read its size", path));
  if (size > kMaxInputFileBytes) {
    throw ConfigError(
        fmt::format("{}: {} bytes, above the {} byte limit of an input file", path, size, kMaxInputFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open file", path));
  std::string text;
  text.reserve(static_cast<std::size_t>(size));
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) throw ConfigError(fmt::format("{}: read error", path));
  // The file may have grown since its size was taken: the cap holds for what was read.
  if (text.size() > kMaxInputFileBytes) {
    throw ConfigError(fmt::format("{}: above the {} byte limit of an input file", path, kMaxInputFileBytes));
  }
  return text;
}

}  // namespace hw
