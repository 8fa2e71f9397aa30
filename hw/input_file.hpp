#pragma once
// Reading an input file (a config, a measured expert load): a regular file of at most
// kMaxInputFileBytes, read whole. Anything else (a directory, a device such as /dev/zero, a FIFO, a
// file above the cap) is a ConfigError naming the path and what it is, before any byte is parsed.
// A leading UTF-8 byte order mark is dropped, so every text input (config, trace, histogram,
// table) reads the same with or without one.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

namespace hw {

/// 16 MiB: an input that is not a config (a measured table, a run's JSON for `g5sim diff`).
constexpr std::uint64_t kMaxInputFileBytes = 16u << 20;
/// 1 MiB: a config (a chip or model YAML, a Hugging Face config.json) is a few kB.
constexpr std::uint64_t kMaxConfigFileBytes = 1u << 20;

std::string read_input_file(const std::string& path, std::uint64_t max_bytes = kMaxInputFileBytes);

/// Calls `visit(line, number)` for each line of a text file's contents (split at '\n', a '\r'
/// before it dropped; numbers from 1, as errors quote them); returns the number of lines. The one
/// line walk of the line-based readers (--seqs, serve traces).
template <class Visit>
int for_each_line(std::string_view text, Visit&& visit) {
  int number = 0;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = std::min(text.find('\n', begin), text.size());
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    visit(line, ++number);
  }
  return number;
}

}  // namespace hw
