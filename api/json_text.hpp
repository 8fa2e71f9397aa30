#pragma once
// The one JSON string routine every writer uses: a quoted JSON string valid for any input (quotes,
// backslashes and control characters escaped; bytes that are not UTF-8 replaced by U+FFFD), so a
// chip named "SG\t2262" still gives valid JSON.

#include <string>
#include <string_view>

namespace api {

std::string json_string(std::string_view text);

}  // namespace api
