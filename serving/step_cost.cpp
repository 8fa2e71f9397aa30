#include "serving/step_cost.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "api/parallel_for.hpp"
#include "serving/step_bucketing.hpp"

namespace serving {

bool StepCost::Key::operator<(const Key& other) const {
  if (draft != other.draft) return draft < other.draft;
  return std::lexicographical_compare(groups.begin(), groups.end(), other.groups.begin(), other.groups.end(),
                                      [](const g5sim::SequenceRecord& a, const g5sim::SequenceRecord& b) {
                                        return std::tie(a.count, a.q_len, a.history) <
                                               std::tie(b.count, b.q_len, b.history);
                                      });
}

StepCost::StepCost(const g5sim::ServeSetup& setup, std::uint64_t verify_width, StepTimer timer, StepTimer draft_timer,
                   StepHooks hooks, std::size_t chip, std::uint64_t dp)
    : setup_(setup),
      verify_width_(verify_width),
      chip_(chip),
      dp_(dp == 0 ? setup.dp : dp),
      timer_(std::move(timer)),
      draft_timer_(std::move(draft_timer)),
      hooks_(std::move(hooks)) {}

g5sim::StepTime StepCost::step(const StepGroups& exact) {
  const g5sim::StepTime t = timed(exact, false, timer_, verify_width_);
  if (hooks_.taken) hooks_.taken->push_back({exact, t.ps, chip_});
  return t;
}

std::optional<g5sim::StepTime> StepCost::peek(const StepGroups& groups, bool draft) const {
  if (setup_.bucket_percent != 0) return std::nullopt;
  const auto it = cache_.find(Key{draft, groups});
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

g5sim::StepTime StepCost::drafts(const StepGroups& decodes) { return timed(decodes, true, draft_timer_, 1); }

const g5sim::StepTime& StepCost::cached(const StepGroups& groups, bool draft, const StepTimer& simulate) {
  Key key{draft, groups};
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    it = cache_.emplace(std::move(key), simulate(groups)).first;
    if (!draft) ++distinct_steps_;
  }
  return it->second;
}

g5sim::StepTime StepCost::timed(const StepGroups& exact, bool draft, const StepTimer& simulate, std::uint64_t width) {
  if (setup_.bucket_percent == 0) return cached(exact, draft, simulate);
  // A step this serve already simulated exactly is its own anchor.
  if (hooks_.known) {
    if (std::optional<g5sim::StepTime> t = hooks_.known(exact, draft)) return *t;
  }
  const std::vector<StepAnchor> anchors = bucketed_step(exact, setup_.bucket_percent, dp_, width);
  // The anchors not yet simulated, simulated at once, then cached in the anchors' order.
  std::vector<const StepAnchor*> fresh;
  for (const StepAnchor& a : anchors) {
    if (cache_.count(Key{draft, a.groups}) == 0) fresh.push_back(&a);
  }
  std::vector<g5sim::StepTime> times(fresh.size());
  api::parallel_for(fresh.size(), setup_.jobs, [&](std::size_t i) { times[i] = simulate(fresh[i]->groups); });
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    cache_.emplace(Key{draft, fresh[i]->groups}, times[i]);
    if (!draft) ++distinct_steps_;
  }
  // Summed in the anchors' order (bucketed_step's): the same doubles on every run.
  double ps = 0, low = 0, high = 0, joules = 0, runtime = 0;
  bool banded = true;
  for (const StepAnchor& a : anchors) {
    const g5sim::StepTime& t = cache_.at(Key{draft, a.groups});
    ps += a.weight * static_cast<double>(t.ps);
    low += a.weight * static_cast<double>(t.band_low_ps);
    high += a.weight * static_cast<double>(t.band_high_ps);
    joules += a.weight * t.dynamic_j;
    runtime += a.weight * static_cast<double>(t.runtime_ps);
    banded = banded && t.has_band;
  }
  const g5sim::StepTime interpolated{
      static_cast<std::uint64_t>(std::llround(ps)),   banded, static_cast<std::uint64_t>(std::llround(low)),
      static_cast<std::uint64_t>(std::llround(high)), joules, static_cast<std::uint64_t>(std::llround(runtime))};
  const bool own_anchor = anchors.size() == 1 && !(Key{false, anchors[0].groups} < Key{false, exact}) &&
                          !(Key{false, exact} < Key{false, anchors[0].groups});
  if (!fresh.empty() && !own_anchor && !draft) first_exact_.emplace_back(interpolated.ps, exact);
  return interpolated;
}

std::optional<g5sim::BucketError> StepCost::bucket_error() const {
  if (setup_.bucket_percent == 0) return std::nullopt;
  g5sim::BucketError e;
  const std::size_t m = first_exact_.size();
  const std::size_t samples = std::min<std::size_t>(m, setup_.bucket_samples);
  std::vector<g5sim::StepTime> exact(samples);
  api::parallel_for(samples, setup_.jobs,
                    [&](std::size_t s) { exact[s] = timer_(first_exact_[s * m / samples].second); });
  for (std::size_t s = 0; s < samples; ++s) {
    const std::uint64_t bucketed_ps = first_exact_[s * m / samples].first;
    const double error = std::abs(static_cast<double>(bucketed_ps) - static_cast<double>(exact[s].ps)) /
                         static_cast<double>(exact[s].ps);
    e.mean_abs += error;
    e.max_abs = std::max(e.max_abs, error);
    ++e.samples;
  }
  if (e.samples > 0) e.mean_abs /= static_cast<double>(e.samples);
  return e;
}

}  // namespace serving
