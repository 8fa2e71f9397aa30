#include "hw/error_band.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

namespace hw {
namespace {

constexpr std::array<std::string_view, kBandKindCount> kNames{"kernel", "block", "decode",     "prefill",
                                                              "ttft",   "tpot",  "throughput", "all"};

}  // namespace

std::string_view name_of(BandKind k) { return kNames[static_cast<std::size_t>(k)]; }

std::optional<BandKind> band_kind_named(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<BandKind>(i);
  }
  return std::nullopt;
}

std::string band_kind_names() {
  std::string out;
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == kNames.size() ? " or " : ", ") + std::string(kNames[i]);
  }
  return out;
}

const ErrorBand* ErrorBands::band_for(BandKind kind) const {
  const ErrorBand* all = nullptr;
  for (const ErrorBand& b : bands) {
    if (b.kind == kind) return &b;
    if (b.kind == BandKind::all) all = &b;
  }
  return all;
}

double interpolated_quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

}  // namespace hw
