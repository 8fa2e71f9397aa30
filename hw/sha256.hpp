#pragma once
// SHA-256 (FIPS 180-4) of a config's bytes: the digest that tells two files of the same chip or
// model name apart in every table and JSON a run writes (explore/grid_sweep.hpp, api/report.cpp).
// Written from the standard's definition; its test vectors are in tests/test_sha256.cpp.

#include <string>
#include <string_view>

namespace hw {

/// The digest of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace hw
