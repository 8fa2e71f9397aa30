#include "serving/mtp_acceptance.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "serving/request_load.hpp"

namespace serving {

MtpAcceptance::MtpAcceptance(std::uint64_t drafts, std::vector<double> accept, std::optional<std::uint64_t> seed)
    : drafts_(drafts), accept_(std::move(accept)), drawn_(seed.has_value()), rng_(seed.value_or(0)) {
  double product = 1;
  for (std::uint64_t j = 0; j < drafts_; ++j) {
    product *= rate(j);
    expected_ += product;
  }
}

std::uint64_t MtpAcceptance::accepted(double& credit) {
  std::uint64_t a = 0;
  if (drawn_) {
    while (a < drafts_ && unit_draw(rng_) < rate(a)) ++a;
    return a;
  }
  credit += expected_;
  a = std::min<std::uint64_t>(drafts_, static_cast<std::uint64_t>(std::floor(credit)));
  credit -= static_cast<double>(a);
  return a;
}

}  // namespace serving
