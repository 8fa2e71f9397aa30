#pragma once
// Shared by the libFuzzer harnesses: what counts as a finding. A harness may end in a clean
// rejection (hw::ConfigError / InputError: bad input, said clearly; tools::WriteError); any other
// exception escapes and libFuzzer reports it as a crash, like a sanitizer report, a hang
// (-timeout) or an allocation past -rss_limit_mb.

#include <cstddef>
#include <cstdint>
#include <string>

namespace fuzz {

inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace fuzz
