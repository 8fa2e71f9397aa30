#pragma once
// Which requests an instance's next step runs, and how many tokens each: the rule of vLLM v1's
// scheduler for continuous batching with chunked prefill (one scheduler for the deployment; its
// limits are the deployment's). A request has `computed` tokens in the KV cache, `generated`
// output tokens and its prompt P = input_tokens + the tokens it had generated when last
// preempted (recompute). A step at time t, with a token budget T = max_batched_tokens:
//   1. running requests, oldest admission first: one still in its prompt takes
//      q = min(P - computed, chunk, T) tokens, a decoding one q = 1 + mtp (its last output token
//      and the drafts it verifies); each needs ceil((computed + q) / block_tokens) KV blocks; when
//      the free blocks are too few, the newest running request is preempted (its blocks freed,
//      computed = 0, back to the head of the queue), until they suffice or the request itself was
//      the newest;
//   2. then, when nothing was preempted, waiting requests that have arrived by t, in arrival
//      order, while fewer than max_seqs run and T > 0: q = min(P - c, chunk, T), admitted if its
//      ceil((c + q) / block_tokens) - h blocks (and the h cached blocks it reuses, where they are
//      free entries) are free (else admission stops for this step); c = h x block_tokens, h the
//      prefix cache's hit (serving/prefix_cache.hpp; 0 without it).
// The schedules (the settings' schedule knob) differ only in which requests a step may take:
//   mixed          (vLLM v1) every running request and arrivals, decodes and prompt chunks together;
//   prefill-first  (SGLang's default, without its mixed chunks) a step of prompts when one can run
//                  (a running prompt's next chunk, or the oldest arrival's first chunk with its
//                  blocks free and fewer than max_seqs running: 1. over the running ones in their
//                  prompt, then 2.), else a step of every decode (1. over the others) that admits
//                  nothing. Decodes wait while prompts run.
//
// Contract of a formation: form() reads and changes only the instance it is given (its queue,
// running list and blocks), the live state of the requests it touches and their outcomes'
// preemption counts and first steps; it never moves time.

#include <cstdint>
#include <memory>
#include <utility>
#include <variant>
#include <vector>

#include "g5sim/serve.hpp"
#include "serving/engine_state.hpp"
#include "serving/prefix_reuse.hpp"

namespace serving {

/// A step as formed: (request, q_len) in the order scheduled, and whether it preempted.
struct FormedStep {
  std::vector<std::pair<std::size_t, std::uint64_t>> scheduled;
  bool preempted = false;
};

class StepFormation {
 public:
  /// The policy the settings' schedule knob names.
  static std::unique_ptr<StepFormation> of(const g5sim::ServeSettings& settings);
  virtual ~StepFormation() = default;

  /// Forms `in`'s next step at its clock (its arrivals admitted to the queue). With `reuse`
  /// (prefix caching), an arrival with nothing computed starts from its prompt's cached blocks
  /// (its outcome's cached_tokens count them) and needs blocks only for the rest.
  FormedStep form(Instance& in, std::vector<Live>& live, std::vector<g5sim::RequestOutcome>& outcomes,
                  std::uint64_t& preemptions, const PrefixReuse* reuse = nullptr) const;

 protected:
  explicit StepFormation(const g5sim::ServeSettings& settings)
      : sequence_cap_(settings.count("max_seqs")),
        budget_(settings.count("max_batched_tokens")),
        chunk_(std::get<std::uint64_t>(g5sim::effective_value(settings, *settings.find("chunk")))),
        verify_width_(1 + settings.count("mtp")) {}
  /// Which requests this step may take.
  struct Focus {
    bool prompts_only = false, decodes_only = false;
  };
  virtual Focus focus(const Instance& in, const std::vector<Live>& live) const = 0;
  /// The tokens `l` takes next: its prompt's next chunk within `budget`, else its last token and
  /// the drafts it verifies.
  std::uint64_t wants(const Live& l, std::uint64_t budget) const;
  /// Whether one more request may run beside those running.
  bool room_for_one_more(const Instance& in) const;
  /// A step's token budget.
  std::uint64_t step_budget() const { return budget_; }

 private:
  // Preempts `in`'s newest running request (its blocks freed, its prompt to compute again).
  std::size_t preempt_newest(Instance& in, std::vector<Live>& live, std::vector<g5sim::RequestOutcome>& outcomes,
                             std::uint64_t& preemptions) const;

  std::uint64_t sequence_cap_, budget_, chunk_, verify_width_;
};

}  // namespace serving
