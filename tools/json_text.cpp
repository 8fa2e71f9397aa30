#include "tools/json_text.hpp"

#include <nlohmann/json.hpp>

namespace tools {

std::string json_string(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tools
