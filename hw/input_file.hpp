#pragma once
// Reading an input file (a config, a measured expert load): a regular file of at most
// kMaxInputFileBytes, read whole. Anything else (a directory, a device such as /dev/zero, a FIFO, a
// file above the cap) is a ConfigError naming the path and what it is, before any byte is parsed.

#include <cstdint>
#include <string>

namespace hw {

/// 16 MiB: an input that is not a config (a measured table, a run's JSON for `g5sim diff`).
constexpr std::uint64_t kMaxInputFileBytes = 16u << 20;
/// 1 MiB: a config (a chip or model YAML, a Hugging Face config.json) is a few kB.
constexpr std::uint64_t kMaxConfigFileBytes = 1u << 20;

std::string read_input_file(const std::string& path, std::uint64_t max_bytes = kMaxInputFileBytes);

}  // namespace hw
