#include "serving/step_formation.hpp"

#include <algorithm>

namespace serving {
namespace {

class MixedSteps final : public StepFormation {
 public:
  explicit MixedSteps(const g5sim::ServeSettings& settings) : StepFormation(settings) {}

 protected:
  Focus focus(const Instance&, const std::vector<Live>&) const override { return {}; }
};

class PrefillFirstSteps final : public StepFormation {
 public:
  explicit PrefillFirstSteps(const g5sim::ServeSettings& settings) : StepFormation(settings) {}

 protected:
  Focus focus(const Instance& in, const std::vector<Live>& live) const override {
    Focus f;
    for (const std::size_t i : in.running) f.prompts_only = f.prompts_only || live[i].in_prompt();
    if (!f.prompts_only && !in.waiting.empty() && room_for_one_more(in)) {
      const Live& w = live[in.waiting.front()];
      f.prompts_only = in.pool.blocks_for(w.computed + wants(w, step_budget())) <= in.pool.free();
    }
    f.decodes_only = !f.prompts_only;
    return f;
  }
};

}  // namespace

std::unique_ptr<StepFormation> StepFormation::of(const g5sim::ServeSettings& settings) {
  if (settings.text("schedule") == "prefill-first") return std::make_unique<PrefillFirstSteps>(settings);
  return std::make_unique<MixedSteps>(settings);
}

std::uint64_t StepFormation::wants(const Live& l, std::uint64_t budget) const {
  return l.in_prompt() ? std::min({l.prompt - l.computed, chunk_, budget}) : verify_width_;
}

bool StepFormation::room_for_one_more(const Instance& in) const { return in.running.size() < sequence_cap_; }

std::size_t StepFormation::preempt_newest(Instance& in, std::vector<Live>& live,
                                          std::vector<g5sim::RequestOutcome>& outcomes,
                                          std::uint64_t& preemptions) const {
  const std::size_t victim = in.running.back();
  in.running.pop_back();
  Live& v = live[victim];
  release_blocks(in.pool, v);
  v.computed = 0;
  v.ready_ps = 0;
  v.prompt = outcomes[victim].input_tokens + v.generated;
  ++outcomes[victim].preemptions;
  ++preemptions;
  in.waiting.push_front(victim);
  return victim;
}

FormedStep StepFormation::form(Instance& in, std::vector<Live>& live, std::vector<g5sim::RequestOutcome>& outcomes,
                               std::uint64_t& preemptions, const PrefixReuse* reuse) const {
  FormedStep step;
  std::uint64_t budget = budget_;
  const Focus f = focus(in, live);
  // 1. The running requests, oldest admission first; decodes wait while a prefill-first step runs prompts.
  for (std::size_t r = 0; r < in.running.size() && budget > 0; ++r) {
    const std::size_t i = in.running[r];
    Live& l = live[i];
    if (f.prompts_only && !l.in_prompt()) continue;
    if (l.ready_ps > in.now) continue;  // still loading its prefix from a lower tier
    const std::uint64_t q = wants(l, budget);
    const std::uint64_t need = in.pool.blocks_for(l.computed + q) - l.blocks;
    bool self_preempted = false;
    while (in.pool.free() < need) {
      step.preempted = true;
      if (preempt_newest(in, live, outcomes, preemptions) == i) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    in.pool.take(need);
    l.blocks += need;
    step.scheduled.emplace_back(i, q);
    budget -= q;
  }
  // 2. Arrivals, in arrival order, unless this step preempted or runs decodes alone.
  while (!step.preempted && !f.decodes_only && !in.waiting.empty() && room_for_one_more(in) && budget > 0) {
    const std::size_t i = in.waiting.front();
    Live& l = live[i];
    const PrefixReuse::Hit hit = reuse ? reuse->find(in.pool, i, l) : PrefixReuse::Hit{};
    Live from = l;  // where it starts: after the blocks it reuses
    if (hit.blocks > 0) from.computed = hit.blocks * reuse->block_tokens();
    const std::uint64_t q = wants(from, budget);
    const std::uint64_t total = in.pool.blocks_for(from.computed + q);
    if (total - hit.blocks + hit.free_blocks + hit.loaded > in.pool.free()) break;
    in.waiting.pop_front();
    if (hit.blocks > 0) outcomes[i].cached_tokens += reuse->admit(in.pool, i, l, hit, in.now);
    in.pool.take(total - l.blocks);
    l.blocks = total;
    in.running.push_back(i);
    if (!l.started) outcomes[i].first_step_ps = in.now, l.started = true;
    if (l.ready_ps > in.now) continue;  // its cached prefix is coming up from a lower tier
    step.scheduled.emplace_back(i, q);
    budget -= q;
  }
  return step;
}

}  // namespace serving
