#pragma once
// Reading an input file (a config, a measured expert load): a regular file of at most
// kMaxInputFileBytes, read whole. Anything else (a directory, a device such as /dev/zero, a FIFO, a
// file above the cap) is a ConfigError naming the path and what it is, before any byte is parsed.

#include <cstdint>
#include <string>

namespace hw {

/// 16 MiB: the largest shipped config is a few kB and a Hugging Face config.json a few tens.
constexpr std::uint64_t kMaxInputFileBytes = 16u << 20;

std::string read_input_file(const std::string& path);

}  // namespace hw
