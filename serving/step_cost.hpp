#pragma once
// A serve's step times (serving/serving_engine.hpp, "Step cache"): each distinct step simulated
// once and kept, keyed by its groups as values; with bucketing (bucket:PCT) a step is the
// interpolation of its anchor steps (serving/step_bucketing.hpp), each anchor simulated once, the
// new ones of a step at once on `jobs` threads (each its own slot: the same times whatever the
// threads); and the bucketing's error, measured by simulating a spread sample of the bucketed
// steps exactly.

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "g5sim/serve.hpp"
#include "serving/serving_engine.hpp"

namespace serving {

class StepCost {
 public:
  /// `timer` times a step of the model; `draft_timer` one pass of the MTP draft module over decodes
  /// of one token each. `verify_width`: a decode's q_len (1 + mtp). `chip`: which of the serve's
  /// chips it times (its taken steps say so), with `dp` DP ranks (bucketing keys a step by its
  /// fullest); 0: setup.dp.
  StepCost(const g5sim::ServeSetup& setup, std::uint64_t verify_width, StepTimer timer, StepTimer draft_timer,
           StepHooks hooks = {}, std::size_t chip = 0, std::uint64_t dp = 0);

  /// The step of `exact` groups.
  g5sim::StepTime step(const StepGroups& exact);
  /// One pass of the draft module over `decodes`.
  g5sim::StepTime drafts(const StepGroups& decodes);
  bool has_draft_timer() const { return static_cast<bool>(draft_timer_); }
  /// An exact serve's time of `groups` (draft: the draft module's pass) when this serve has timed
  /// it already; nothing otherwise, or with bucketing.
  std::optional<g5sim::StepTime> peek(const StepGroups& groups, bool draft) const;
  /// Distinct steps simulated (the draft module's and the error samples aside).
  std::uint64_t distinct_steps() const { return distinct_steps_; }
  /// With bucketing: up to bucket_samples bucketed steps, evenly spread over those that needed a
  /// new simulation and were not their own anchor, simulated exactly; (bucketed - exact) / exact.
  std::optional<g5sim::BucketError> bucket_error() const;

 private:
  // The cache's key: the draft module's steps apart from the model's.
  struct Key {
    bool draft = false;
    StepGroups groups;
    bool operator<(const Key& other) const;
  };
  g5sim::StepTime timed(const StepGroups& exact, bool draft, const StepTimer& simulate, std::uint64_t width);
  const g5sim::StepTime& cached(const StepGroups& groups, bool draft, const StepTimer& simulate);

  const g5sim::ServeSetup& setup_;
  std::uint64_t verify_width_;
  std::size_t chip_;
  std::uint64_t dp_;
  StepTimer timer_, draft_timer_;
  StepHooks hooks_;
  std::map<Key, g5sim::StepTime> cache_;
  std::uint64_t distinct_steps_ = 0;
  std::vector<std::pair<std::uint64_t, StepGroups>> first_exact_;  ///< bucketed steps: time, exact groups
};

}  // namespace serving
