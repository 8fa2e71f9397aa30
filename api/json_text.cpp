#include "api/json_text.hpp"

#include <nlohmann/json.hpp>

namespace api {

std::string json_string(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace api
