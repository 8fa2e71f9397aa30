// SHA-256 against the test vectors of FIPS 180-4's examples (NIST CSRC, "SHA256.pdf") and of
// the NIST byte-oriented test suite: the padding's edges (55, 56, 63, 64 bytes) included.
#include <catch2/catch.hpp>

#include <string>

#include "hw/sha256.hpp"

// One namespace per test file: a unity build compiles several files as one.
namespace test_sha256 {

TEST_CASE("SHA-256 gives the published digests", "[hw][sha256]") {
  CHECK(hw::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hw::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding needs a second block.
  CHECK(hw::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a' (FIPS 180-4's third example).
  CHECK(hw::sha256_hex(std::string(1'000'000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace test_sha256
