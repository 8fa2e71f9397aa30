#pragma once
// How many of a verify's drafts are accepted (serving/serving_engine.hpp, MTP): drawn position by
// position, each accepted with its chance given the ones before, until the first rejection
// (seeded: the same draws every run); or the expected number
//     E = sum over j of prod over i <= j of accept_i
// carried as a running credit per request: whole tokens out, the fraction kept for its next
// verify (no randomness; the same tokens on average).

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace serving {

class MtpAcceptance {
 public:
  /// `drafts` per verify; `accept` one rate for every draft or one per draft; `seed`: draw, else expect.
  MtpAcceptance(std::uint64_t drafts, std::vector<double> accept, std::optional<std::uint64_t> seed);
  /// The drafts accepted at one verify of a request whose running credit is `credit`.
  std::uint64_t accepted(double& credit);

 private:
  double rate(std::uint64_t draft) const { return accept_.size() == 1 ? accept_[0] : accept_[draft]; }

  std::uint64_t drafts_;
  std::vector<double> accept_;
  bool drawn_;
  std::mt19937_64 rng_;
  double expected_ = 0;
};

}  // namespace serving
