#include "hw/engine.hpp"

#include <algorithm>
#include <cctype>

namespace hw {

std::string_view name_of(EngineKind kind) {
  switch (kind) {
    case EngineKind::tensor: return "tensor";
    case EngineKind::sort: return "sort";
    case EngineKind::dma: return "dma";
    case EngineKind::collective: return "collective";
  }
  return "?";
}

std::string_view name_of(DmaRole role) {
  switch (role) {
    case DmaRole::tiles: return "tiles";
    case DmaRole::kv_stream: return "kv_stream";
    case DmaRole::kv_resident: return "kv_resident";
    case DmaRole::cross_core: return "cross_core";
    case DmaRole::gather: return "gather";
  }
  return "?";
}

std::string EngineSpec::display_name() const {
  std::string out = name;
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace hw
