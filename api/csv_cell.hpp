#pragma once
// The one CSV cell routine the CLI's CSV writers use: quoted when the text holds a comma, a quote
// or a line break (RFC 4180), as is otherwise.

#include <string>

namespace api {

inline std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace api
