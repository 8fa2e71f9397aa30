// The serving engine's loop (the model in serving/serving_engine.hpp): the instance whose next
// step starts first takes it; its step is formed (serving/step_formation.hpp), timed
// (serving/step_cost.hpp), and its tokens come out at its end, moving prompts' caches to decode
// instances under disaggregation.

#include "serving/serving_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "g5sim/run_options.hpp"
#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"
#include "models/run_limits.hpp"
#include "serving/engine_state.hpp"
#include "serving/mtp_acceptance.hpp"
#include "serving/prefix_reuse.hpp"
#include "serving/serial_front_end.hpp"
#include "serving/step_cost.hpp"
#include "serving/step_formation.hpp"

namespace serving {
namespace {

// What the settings' ranges do not say: the setup's own limits and what must go together.
void check_setup(const ServeSettings& settings, const ServeSetup& setup) {
  auto in_range = [](const char* field, std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
    if (v < lo || v > hi) throw hw::InputError(field, fmt::format("{} is outside {}..{}", v, lo, hi));
  };
  in_range("bucket_percent", setup.bucket_percent, 0, 100);
  in_range("bucket_samples", setup.bucket_samples, 0, 1u << 20);
  in_range("dp", setup.dp, 1, models::kMaxDegree);
  in_range("jobs", setup.jobs, 1, g5sim::run_limits().max_jobs);
  in_range("prefill_instances", setup.prefill_instances, 0, g5sim::kMaxServeInstances);
  in_range("decode_instances", setup.decode_instances, 0, g5sim::kMaxServeInstances);
  if ((setup.prefill_instances == 0) != (setup.decode_instances == 0)) {
    throw hw::InputError("disagg", "disaggregation needs at least one prefill and one decode instance");
  }
  if (setup.prefill_instances > 0 && !(setup.kv_transfer.bandwidth_gb_per_s > 0 && setup.kv_transfer.latency_ns >= 0)) {
    throw hw::InputError("disagg", "disaggregation needs a KV transfer link with a positive bandwidth");
  }
  if (setup.decode_chip) {
    if (setup.prefill_instances == 0) throw hw::InputError("disagg", "a decode chip of its own needs --disagg P:D");
    in_range("decode_chip.dp", setup.decode_chip->dp, 1, models::kMaxDegree);
    if (setup.decode_chip->kv_tokens < settings.count("block_tokens")) {
      throw hw::InputError("kv_tokens", fmt::format("the decode chip's KV cache holds {} tokens, less than one block",
                                                    setup.decode_chip->kv_tokens));
    }
  }
  const std::uint64_t mtp = settings.count("mtp");
  if (mtp > 0) {
    if (setup.accept.size() != 1 && setup.accept.size() != mtp) {
      throw hw::InputError("accept", fmt::format("{} acceptance rates for {} drafts: give one, or one per draft",
                                                 setup.accept.size(), mtp));
    }
    for (double p : setup.accept) {
      if (!(p >= 0 && p <= 1)) throw hw::InputError("accept", fmt::format("{} is not a rate in [0, 1]", p));
    }
  }
  const std::uint64_t kv_tokens = settings.count("kv_tokens"), block_tokens = settings.count("block_tokens");
  if (kv_tokens < block_tokens) {
    throw hw::InputError(
        "kv_tokens", fmt::format("the KV cache holds {} tokens, less than one block of {}", kv_tokens, block_tokens));
  }
}

// Two chips' bucketing errors as one: their samples together.
std::optional<BucketError> merged(const std::optional<BucketError>& a, const std::optional<BucketError>& b) {
  if (!a) return b;
  if (!b) return a;
  BucketError m;
  m.samples = a->samples + b->samples;
  m.max_abs = std::max(a->max_abs, b->max_abs);
  if (m.samples > 0) {
    m.mean_abs = (a->mean_abs * static_cast<double>(a->samples) + b->mean_abs * static_cast<double>(b->samples)) /
                 static_cast<double>(m.samples);
  }
  return m;
}

class Engine {
 public:
  Engine(std::vector<ServeRequest> requests, const ServeSettings& settings, const ServeSetup& setup,
         const std::vector<ChipSteps>& chips, const std::function<void(const g5sim::ServeProgress&)>& progress);
  ServeRun run();

 private:
  // A copy steps ahead (look_ahead): the state, shared timers and hooks; the logs left out by the caller.
  Engine(const Engine&) = default;
  Engine& operator=(const Engine&) = delete;

  void check_every_request_fits() const;
  void set_up_instances();
  void arrive(std::size_t request, std::uint64_t at);
  SerialFrontEnd* next_front();
  void take_front_job(SerialFrontEnd& from);
  std::optional<std::pair<std::size_t, std::uint64_t>> first_step() const;
  Instance& next_instance(std::optional<std::pair<std::size_t, std::uint64_t>> first);
  /// The loop's next event: a front-end job, or a step; true when a step was taken.
  bool advance();
  /// Forms, times and runs `in`'s next step; false when it only preempted.
  bool take_step(Instance& in);
  StepGroups groups_of(const FormedStep& step) const;
  std::uint64_t time_step(const Instance& in, const FormedStep& step, const StepGroups& exact, StepLog& log,
                          StepTime& verify);
  StepTime timed(const Instance& in, const StepGroups& groups, bool draft);
  std::optional<StepTime> known(std::size_t chip, const StepGroups& groups, bool draft) const;
  std::uint64_t dp_of(std::size_t chip) const { return chip == 0 ? setup_.dp : setup_.decode_chip->dp; }
  void finish_step(Instance& in, const FormedStep& step, StepLog& log, std::uint64_t device_ps, const StepTime& verify);
  void look_ahead(const Instance& in, const FormedStep& step, const StepLog& log, const StepGroups& exact);
  std::unique_ptr<Engine> copy_ahead();
  std::uint64_t scheduler_cpu(const Instance& in, const StepLog& log) const;
  void attribute_runtime();
  void emit_tokens(Instance& in, const FormedStep& step, std::uint64_t end);
  void verify_drafts(Instance& in, std::size_t i, std::uint64_t end);
  void send_to_decode(Instance& in, std::size_t i, std::uint64_t end);
  void leave(Instance& in, Live& l);
  void stream(std::size_t i, std::uint64_t at, std::uint64_t tokens, bool first, bool last);
  void deliver(std::size_t i, std::uint64_t at, std::uint64_t left, bool first, bool last);
  void finish(std::size_t i, std::uint64_t at);
  void set_up_prefix_caching();
  void wait_for_loads(Instance& in);
  std::uint64_t tier_block_bytes(bool decode_chip) const;
  void gather_tier_use();

  std::vector<ServeRequest> requests_;
  const ServeSettings& settings_;
  const ServeSetup& setup_;
  const std::function<void(const g5sim::ServeProgress&)>& progress_;
  const bool closed_;
  const std::uint64_t mtp_, block_tokens_;
  std::shared_ptr<const StepFormation> formation_;
  const std::vector<ChipSteps>& chips_;
  std::vector<std::shared_ptr<StepCost>> costs_;  // one per chip; a copy ahead only peeks into them
  // A copy stepping ahead: it times steps by what is at hand or a guess, starting the unknown ones
  // (not `current_`, the step the engine times itself), and tells no progress.
  bool ahead_ = false, current_ = false;
  std::uint64_t last_draft_ps_ = 0;  // the last draft pass's time: a copy's guess for an unknown one
  std::optional<MtpAcceptance> acceptance_;
  ServeRun run_;
  std::vector<Live> live_;
  std::vector<Instance> instances_;
  std::size_t entry_instances_ = 1;
  std::uint64_t sequence_ = 0;     // arrival order among equal times
  std::uint64_t transferred_ = 0;  // requests sent to decode instances (round robin)
  std::size_t next_client_ = 0;
  std::shared_ptr<const PrefixReuse> reuse_;           // with prefix caching
  std::vector<std::optional<std::size_t>> next_turn_;  // a multi-turn load: the turn each one is followed by
  std::uint64_t finished_ = 0;
  double band_low_ = 0, band_high_ = 0, time_sum_ = 0;
  bool every_step_banded_ = true;
  // The runtime's front end: a request reaches the scheduler request_in_ns after its client
  // sends it (and its turn at the serial part, when the runtime has one); every token reaches the
  // client after_ps after its step (or after it leaves the serial part).
  const g5sim::Runtime* runtime_ = nullptr;
  std::uint64_t after_ps_ = 0;
  std::optional<SerialFrontEnd> front_;   // the serial part: inputs (and tokens, when they share it)
  std::optional<SerialFrontEnd> stream_;  // the tokens' own process, when they do not
  std::vector<std::uint64_t> front_ps_;   // each request's front end, its queue at the serial part included
};

Engine::Engine(std::vector<ServeRequest> requests, const ServeSettings& settings, const ServeSetup& setup,
               const std::vector<ChipSteps>& chips, const std::function<void(const g5sim::ServeProgress&)>& progress)
    : requests_(std::move(requests)),
      settings_(settings),
      setup_(setup),
      progress_(progress),
      closed_(settings.count("concurrency") > 0),
      mtp_(settings.count("mtp")),
      block_tokens_(settings.count("block_tokens")),
      formation_(StepFormation::of(settings)),
      chips_(chips),
      runtime_(setup.runtime ? &*setup.runtime : nullptr),
      after_ps_(setup.runtime ? setup.runtime->after_token_ns * 1000 : 0) {
  check_setup(settings, setup);
  if (chips_.size() != (setup.decode_chip ? 2u : 1u)) {
    throw std::logic_error("serve: one step timer per chip (two with a decode chip of its own)");
  }
  for (std::size_t k = 0; k < chips_.size(); ++k) {
    costs_.push_back(std::make_shared<StepCost>(setup, 1 + mtp_, chips_[k].timer, chips_[k].draft_timer,
                                                chips_[k].hooks, k, dp_of(k)));
  }
  if (requests_.empty()) throw hw::InputError("requests", "no requests to serve");
  if (mtp_ > 0) acceptance_.emplace(mtp_, setup.accept, settings.optional_count("accept_draw"));
  if (runtime_ && runtime_->has_serial_front_end()) {
    front_.emplace();
    if (!runtime_->tokens_behind_inputs) stream_.emplace();
  }
  // A multi-turn synthetic load comes in its sessions' start order, its later turns' arrivals set
  // as the turns before them finish: it is not sorted (its turns name each other by index).
  const bool turns = std::any_of(requests_.begin(), requests_.end(), [](const ServeRequest& r) { return r.after; });
  if (!closed_ && !turns) {
    std::stable_sort(requests_.begin(), requests_.end(),
                     [](const ServeRequest& a, const ServeRequest& b) { return a.arrival_ps < b.arrival_ps; });
  }
  next_turn_.resize(requests_.size());
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    if (requests_[i].after) next_turn_.at(*requests_[i].after) = i;
  }
  set_up_prefix_caching();
  run_.kv_blocks = settings.count("kv_tokens") / block_tokens_;
  if (setup.decode_chip) run_.decode_kv_blocks = setup.decode_chip->kv_tokens / block_tokens_;
  check_every_request_fits();
  const std::size_t n = requests_.size();
  live_.resize(n);
  front_ps_.resize(n);
  run_.requests.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    RequestOutcome& o = run_.requests[i];
    o.id = requests_[i].id;
    o.input_tokens = requests_[i].input_tokens;
    o.output_tokens = requests_[i].output_tokens;
    live_[i].prompt = requests_[i].input_tokens;
    if (closed_) requests_[i].arrival_ps = 0;
    o.arrival_ps = requests_[i].arrival_ps;
  }
  set_up_instances();
}

// Every instance's cache holds every request at its end: with a decode chip of its own, its
// instances' too (a prompt recomputed after a preemption runs there).
void Engine::check_every_request_fits() const {
  const KvBlockPool blocks(run_.kv_blocks, block_tokens_, setup_.kv);
  const KvBlockPool decode_blocks(run_.decode_kv_blocks, block_tokens_,
                                  setup_.decode_chip ? setup_.decode_chip->kv : setup_.kv);
  for (const ServeRequest& r : requests_) {
    // At its end: every token but the last in the cache, and a verify's drafts beside them.
    const std::uint64_t tokens = r.input_tokens + r.output_tokens - 1 + mtp_;
    for (const auto& [held, who] : {std::pair{run_.kv_blocks, "deployment"}, {run_.decode_kv_blocks, "decode chip"}}) {
      if (held == 0 && std::string_view(who) == "decode chip") continue;
      const std::uint64_t need = (std::string_view(who) == "decode chip" ? decode_blocks : blocks).blocks_for(tokens);
      if (need > held) {
        throw hw::InputError("requests",
                             fmt::format("request '{}' needs {} tokens of KV cache ({} blocks of {}) at its end, but "
                                         "the {} holds {} blocks ({} tokens): it can never run",
                                         r.id, tokens, need, block_tokens_, who, held, held * block_tokens_));
      }
    }
  }
}

// The instances: one colocated, or the prefill ones then the decode ones; requests arrive at the
// prefill (or the one) instances round robin, in arrival order; the closed loop's first clients.
void Engine::set_up_instances() {
  const bool disaggregated = setup_.prefill_instances > 0;
  const std::size_t count = disaggregated ? setup_.prefill_instances + setup_.decode_instances : 1;
  for (std::size_t k = 0; k < count; ++k) {
    const bool decode = disaggregated && k >= setup_.prefill_instances;
    const bool own_chip = decode && setup_.decode_chip;
    Instance& in = instances_.emplace_back(own_chip ? run_.decode_kv_blocks : run_.kv_blocks, block_tokens_,
                                           own_chip ? setup_.decode_chip->kv : setup_.kv);
    if (reuse_) in.pool.cache.emplace();
    if (reuse_ && setup_.kv_tiers) in.pool.tiers.emplace(*setup_.kv_tiers, tier_block_bytes(own_chip));
    if (disaggregated) in.role = decode ? Instance::Role::decode : Instance::Role::prefill;
    in.chip = own_chip ? 1 : 0;
  }
  entry_instances_ = disaggregated ? setup_.prefill_instances : 1;
  const std::size_t n = requests_.size();
  // The first requests of the load (a multi-turn load's first turns): every one of an open loop,
  // the first N of a closed loop of N clients.
  const std::size_t clients = closed_ ? settings_.count("concurrency") : n;
  std::size_t i = 0;
  for (std::size_t started = 0; i < n && started < clients; ++i) {
    if (requests_[i].after) continue;
    arrive(i, requests_[i].arrival_ps);
    ++started;
  }
  next_client_ = i;
}

// The client sends it at `at`; the scheduler has it after the runtime's front end: its turn at
// the serial part (with the other jobs there, in the order they come), then the rest.
void Engine::arrive(std::size_t request, std::uint64_t at) {
  if (front_) {
    const std::uint64_t serial_ps = runtime_->serial_in_ns(requests_[request].input_tokens) * 1000;
    front_->hand_in({SerialFrontEnd::Kind::input, request, at, serial_ps, false, false, at});
    return;
  }
  const std::uint64_t front_ps = runtime_ ? runtime_->request_in_ns(requests_[request].input_tokens) * 1000 : 0;
  const std::uint64_t queued =
      hw::checked("the serve's time in picoseconds", [&] { return (hw::Count(at) + front_ps).value(); });
  front_ps_[request] = front_ps;
  instances_[request % entry_instances_].pending.emplace(std::pair{queued, sequence_++}, request);
}

// The serial part's earliest job: an input goes on to the scheduler, tokens to the client.
void Engine::take_front_job(SerialFrontEnd& from) {
  const std::pair<SerialFrontEnd::Job, std::uint64_t> taken = from.take();
  const SerialFrontEnd::Job& job = taken.first;
  const std::uint64_t left = taken.second;  // when it leaves the process
  if (job.kind == SerialFrontEnd::Kind::tokens) {
    deliver(job.request, job.at_ps, left, job.first, job.last);
    return;
  }
  // One event loop for inputs and tokens (tokens_behind_inputs): a preprocessed request goes on
  // when the loop comes back to it, behind every job that reached the loop before it was done (a
  // burst's requests reach the engine together, once the last of them is preprocessed).
  if (job.kind == SerialFrontEnd::Kind::input && !stream_) {
    front_->hand_in({SerialFrontEnd::Kind::handoff, job.request, left, 0, false, false, job.sent_ps});
    return;
  }
  const std::uint64_t queued = hw::checked("the serve's time in picoseconds", [&] {
    return (hw::Count(left) + runtime_->request_in_ns(requests_[job.request].input_tokens) * 1000).value();
  });
  front_ps_[job.request] = queued - job.sent_ps;
  instances_[job.request % entry_instances_].pending.emplace(std::pair{queued, sequence_++}, job.request);
}

// The serial process whose next job comes first (the inputs' on a tie); null when none waits.
SerialFrontEnd* Engine::next_front() {
  if (!front_) return nullptr;
  SerialFrontEnd* first = front_->next_at() ? &*front_ : nullptr;
  if (stream_ && stream_->next_at() && (!first || *stream_->next_at() < *first->next_at())) first = &*stream_;
  return first;
}

// The instance whose next step starts first (then the lowest index), with that start; nothing
// when none has work.
std::optional<std::pair<std::size_t, std::uint64_t>> Engine::first_step() const {
  std::optional<std::pair<std::size_t, std::uint64_t>> first;
  for (std::size_t j = 0; j < instances_.size(); ++j) {
    const std::optional<std::uint64_t> s = instances_[j].next_start();
    if (s && (!first || *s < first->second)) first.emplace(j, *s);
  }
  return first;
}

// The instance whose step comes next, its clock moved to that step's start: a step can only add
// arrivals after its own start, so every arrival before a step's start is known by then.
Instance& Engine::next_instance(std::optional<std::pair<std::size_t, std::uint64_t>> first) {
  if (!first) throw std::logic_error("serve: requests left but no instance has work");
  instances_[first->first].now = first->second;
  return instances_[first->first];
}

ServeRun Engine::run() {
  while (finished_ < requests_.size()) advance();
  if (runtime_) attribute_runtime();
  gather_tier_use();
  run_.has_runtime = runtime_ != nullptr;
  run_.distinct_steps = 0;
  for (const std::shared_ptr<StepCost>& cost : costs_) {
    run_.distinct_steps += cost->distinct_steps();
    run_.bucket_error = merged(run_.bucket_error, cost->bucket_error());
  }
  if (every_step_banded_ && time_sum_ > 0) {
    run_.band_low_ratio = band_low_ / time_sum_;
    run_.band_high_ratio = band_high_ / time_sum_;
  }
  return std::move(run_);
}

bool Engine::advance() {
  // A front-end job before the next step's start: no job earlier than it can come any more.
  const std::optional<std::pair<std::size_t, std::uint64_t>> first = first_step();
  if (SerialFrontEnd* from = next_front()) {
    if (!first || *from->next_at() <= first->second) {
      take_front_job(*from);
      return false;
    }
  }
  Instance& in = next_instance(first);
  in.admit_arrivals();
  const std::uint64_t max_steps = std::min(setup_.max_steps, g5sim::kMaxServeSteps);
  if (run_.steps.size() == max_steps) throw hw::InputError("requests", fmt::format("more than {} steps", max_steps));
  return take_step(in);
}

bool Engine::take_step(Instance& in) {
  StepLog log;
  log.instance = static_cast<std::uint64_t>(&in - instances_.data());
  log.start_ps = in.now;
  const FormedStep step = formation_->form(in, live_, run_.requests, run_.preemptions, reuse_.get());
  // Left waiting once the step has admitted what it can: a request admitted by this step is
  // running in it, not waiting (vLLM's num_requests_waiting after scheduling).
  log.waiting = in.waiting.size();
  // Only preemptions (every running request gave its blocks back): the next step admits from the
  // queue. A queue that cannot be admitted with every block free cannot happen: each request fits alone.
  // Or every runnable request is loading its prefix from a lower tier: the instance waits for the
  // first load (or an arrival before it).
  if (step.scheduled.empty()) {
    wait_for_loads(in);
    return false;
  }
  const StepGroups exact = groups_of(step);
  if (!ahead_ && chips_[in.chip].hooks.prefetch.on() && setup_.bucket_percent == 0) look_ahead(in, step, log, exact);
  StepTime verify;
  const std::uint64_t device_ps = time_step(in, step, exact, log, verify);
  finish_step(in, step, log, device_ps, verify);
  return true;
}

// The rest of a step once timed: its log, the clock, its tokens.
void Engine::finish_step(Instance& in, const FormedStep& step, StepLog& log, std::uint64_t device_ps,
                         const StepTime& verify) {
  log.sequences = step.scheduled.size();
  log.cpu_ps = scheduler_cpu(in, log);
  log.runtime_ps += log.cpu_ps;
  const std::uint64_t step_ps = device_ps + log.cpu_ps;
  in.last_device_ps = device_ps;
  log.duration_ps = step_ps;
  log.sequences = step.scheduled.size();
  log.kv_blocks_used = in.pool.used();
  log.kv_blocks = in.pool.blocks();
  time_sum_ += static_cast<double>(step_ps);
  if (verify.has_band) {
    // The band's ratios of the verify step, applied to the whole step.
    band_low_ +=
        static_cast<double>(step_ps) * static_cast<double>(verify.band_low_ps) / static_cast<double>(verify.ps);
    band_high_ +=
        static_cast<double>(step_ps) * static_cast<double>(verify.band_high_ps) / static_cast<double>(verify.ps);
  } else {
    every_step_banded_ = false;
  }
  in.now = hw::checked("the serve's time in picoseconds", [&] { return (hw::Count(in.now) + step_ps).value(); });
  in.last_step_end = in.now;
  run_.steps.push_back(log);
  emit_tokens(in, step, in.now);
  in.running.erase(std::remove_if(in.running.begin(), in.running.end(),
                                  [&](std::size_t i) { return std::exchange(live_[i].leaving, false); }),
                   in.running.end());
}

// The step's groups of equal (q_len, history), sorted.
StepGroups Engine::groups_of(const FormedStep& step) const {
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> counts;
  for (const auto& [i, q] : step.scheduled) ++counts[{q, live_[i].computed}];
  StepGroups exact;
  for (const auto& [key, count] : counts) exact.push_back(g5sim::SequenceRecord{count, key.first, key.second, ""});
  return exact;
}

// The step's groups timed; with MTP, the drafts' passes over its decodes beside it.
std::uint64_t Engine::time_step(const Instance& in, const FormedStep& step, const StepGroups& exact, StepLog& log,
                                StepTime& verify) {
  for (const auto& [i, q] : step.scheduled) (live_[i].in_prompt() ? log.prefill_tokens : log.decode_tokens) += q;
  verify = timed(in, exact, false);
  if (verify.ps == 0) throw std::logic_error("serve: a step took no time");
  std::uint64_t step_ps = verify.ps;
  log.runtime_ps = verify.runtime_ps;
  double& energy = in.chip == 0 ? run_.dynamic_energy_j : run_.decode_chip_dynamic_energy_j;
  energy += verify.dynamic_j;
  if (mtp_ == 0 || !costs_[in.chip]->has_draft_timer() || log.decode_tokens == 0) return step_ps;
  // The drafts: mtp passes of the draft module over the step's decodes (one token each).
  std::map<std::uint64_t, std::uint64_t> histories;
  for (const auto& [i, q] : step.scheduled) {
    if (live_[i].computed == live_[i].prompt) ++histories[live_[i].computed];
  }
  StepGroups drafts;
  for (const auto& [history, count] : histories) drafts.push_back(g5sim::SequenceRecord{count, 1, history, ""});
  if (drafts.empty()) return step_ps;
  const StepTime draft = timed(in, drafts, true);
  last_draft_ps_ = draft.ps;
  energy += draft.dynamic_j * static_cast<double>(mtp_);
  log.runtime_ps += draft.runtime_ps * mtp_;
  return hw::checked("the step's time in picoseconds", [&] { return (hw::Count(draft.ps) * mtp_ + step_ps).value(); });
}

// A step's time: the step cache's; in a copy stepping ahead, the time at hand, else a guess (the
// instance's last device time, the last draft pass's), the step started on another thread unless
// it is the one the engine is about to time itself.
StepTime Engine::timed(const Instance& in, const StepGroups& groups, bool draft) {
  StepCost& cost = *costs_[in.chip];
  if (!ahead_) return draft ? cost.drafts(groups) : cost.step(groups);
  if (std::optional<StepTime> t = known(in.chip, groups, draft)) return *t;
  // The engine's own drafts come after its step.
  if (!current_ || draft) chips_[in.chip].hooks.prefetch.start(groups, draft);
  StepTime guess;
  guess.ps = std::max<std::uint64_t>(1, draft ? last_draft_ps_ : in.last_device_ps);
  return guess;
}

// A step's time when this serve has it without simulating: timed already, known to the hooks, or
// simulated ahead and done.
std::optional<StepTime> Engine::known(std::size_t chip, const StepGroups& groups, bool draft) const {
  if (std::optional<StepTime> t = costs_[chip]->peek(groups, draft)) return t;
  const StepHooks& hooks = chips_[chip].hooks;
  if (hooks.known) {
    if (std::optional<StepTime> t = hooks.known(groups, draft)) return t;
  }
  if (hooks.prefetch.ready) return hooks.prefetch.ready(groups, draft);
  return std::nullopt;
}

// Steps ahead (serving_engine.hpp): when this step is not at hand and fewer than J simulations
// run (this step's own among them when this thread simulates it), a copy of the engine (its logs
// and ITLs left here: they form no step) finishes this step with a guessed time and goes on,
// starting the unknown steps it takes, until J run, 4 J steps are taken or every request is done.
// The copy's errors end it quietly: the engine meets its own.
void Engine::look_ahead(const Instance& in, const FormedStep& step, const StepLog& log, const StepGroups& exact) {
  const StepPrefetch& prefetch = chips_[in.chip].hooks.prefetch;
  if (known(in.chip, exact, false)) return;
  const std::size_t own = prefetch.started(exact, false) ? 0 : 1;
  if (prefetch.running() + own >= prefetch.jobs) return;
  const std::unique_ptr<Engine> ahead = copy_ahead();
  try {
    Instance& copy = ahead->instances_[static_cast<std::size_t>(&in - instances_.data())];
    StepLog copy_log = log;
    StepTime verify;
    ahead->current_ = true;
    const std::uint64_t device_ps = ahead->time_step(copy, step, exact, copy_log, verify);
    ahead->current_ = false;
    ahead->finish_step(copy, step, copy_log, device_ps, verify);
    const std::uint64_t most = 4 * std::uint64_t{prefetch.jobs};
    for (std::uint64_t taken = 0, events = 0;
         taken < most && events < 16 * most && ahead->finished_ < requests_.size() &&
         prefetch.running() + own < prefetch.jobs;
         ++events) {
      if (ahead->advance()) ++taken;
    }
  } catch (const std::exception&) {
  }
}

// The copy that steps ahead: the engine's step logs and ITLs (they form no step, and are the most
// to copy) are set aside while it is made and put back whatever happens.
std::unique_ptr<Engine> Engine::copy_ahead() {
  struct SetAside {
    ServeRun& run;
    std::vector<StepLog> steps;
    std::vector<std::vector<std::uint64_t>> itl;
    explicit SetAside(ServeRun& r) : run(r), steps(std::exchange(r.steps, {})), itl(r.requests.size()) {
      for (std::size_t i = 0; i < itl.size(); ++i) itl[i].swap(r.requests[i].itl_ps);
    }
    SetAside(const SetAside&) = delete;
    SetAside& operator=(const SetAside&) = delete;
    ~SetAside() {
      for (std::size_t i = 0; i < itl.size(); ++i) itl[i].swap(run.requests[i].itl_ps);
      run.steps = std::move(steps);
    }
  };
  const SetAside aside(run_);
  std::unique_ptr<Engine> copy(new Engine(*this));
  copy->ahead_ = true;
  return copy;
}

// The runtime's scheduling CPU before the step (g5sim/runtime.hpp): for its sequences and tokens
// (a DP rank's share, rounded up, when each rank has its own scheduler); with an overlapping
// runtime, less the device time of the instance's step just before (none after an idle gap).
std::uint64_t Engine::scheduler_cpu(const Instance& in, const StepLog& log) const {
  if (!runtime_) return 0;
  std::uint64_t sequences = log.sequences, tokens = log.prefill_tokens + log.decode_tokens;
  if (runtime_->scheduler_per_dp_rank) {
    const std::uint64_t dp = dp_of(in.chip);
    sequences = (sequences + dp - 1) / dp;
    tokens = (tokens + dp - 1) / dp;
  }
  const std::uint64_t cpu_ps = runtime_->step_cpu_ns(sequences, tokens) * 1000;
  if (!runtime_->overlap) return cpu_ps;
  const std::uint64_t hidden = in.last_step_end == log.start_ps ? in.last_device_ps : 0;
  return cpu_ps - std::min(cpu_ps, hidden);
}

// Each request's runtime share: its front end, and of every step of the instance it waited or
// ran on, the runtime's part pro rata to the overlap with its TTFT (arrival at the scheduler ..
// first token's step end) and with its decode span (first token .. last token's step end).
void Engine::attribute_runtime() {
  // Per instance: its steps' starts and ends and the runtime time before each.
  struct Track {
    std::vector<std::uint64_t> start, end;
    std::vector<double> before, runtime;
  };
  std::vector<Track> tracks(instances_.size());
  for (const StepLog& s : run_.steps) {
    Track& t = tracks[s.instance];
    t.before.push_back(t.before.empty() ? 0.0 : t.before.back() + t.runtime.back());
    t.start.push_back(s.start_ps);
    t.end.push_back(s.start_ps + s.duration_ps);
    t.runtime.push_back(static_cast<double>(s.runtime_ps));
  }
  // The runtime's time on track t up to `at` (linear within a step).
  const auto upto = [](const Track& t, std::uint64_t at) {
    const auto k = std::upper_bound(t.start.begin(), t.start.end(), at) - t.start.begin();
    if (k == 0) return 0.0;
    const std::size_t i = static_cast<std::size_t>(k - 1);
    const double span = static_cast<double>(t.end[i] - t.start[i]);
    const double into = static_cast<double>(std::min(at, t.end[i]) - t.start[i]);
    return t.before[i] + t.runtime[i] * into / span;
  };
  for (std::size_t i = 0; i < run_.requests.size(); ++i) {
    RequestOutcome& o = run_.requests[i];
    const Live& l = live_[i];
    const std::uint64_t front_ps = front_ps_[i];
    // Its first and last tokens' steps' ends (their wait at the serial front end is the runtime's).
    const std::uint64_t first_end = o.first_token_ps - after_ps_ - l.first_wait_ps;
    const std::uint64_t last_end = o.finish_ps - after_ps_ - l.last_wait_ps;
    const Track& first = tracks[l.first_instance];
    const Track& last = tracks[l.last_instance];
    const double ttft = upto(first, first_end) - upto(first, o.arrival_ps + front_ps);
    const double decode = upto(last, last_end) - upto(last, first_end) + static_cast<double>(l.last_wait_ps) -
                          static_cast<double>(l.first_wait_ps);
    o.ttft_runtime_ps =
        front_ps + after_ps_ + l.first_wait_ps + static_cast<std::uint64_t>(std::llround(std::max(0.0, ttft)));
    o.decode_runtime_ps = static_cast<std::uint64_t>(std::llround(std::max(0.0, decode)));
  }
}

// The step's tokens, at its end.
void Engine::emit_tokens(Instance& in, const FormedStep& step, std::uint64_t end) {
  for (const auto& [i, q] : step.scheduled) {
    Live& l = live_[i];
    RequestOutcome& o = run_.requests[i];
    if (mtp_ > 0 && l.computed == l.prompt) {
      verify_drafts(in, i, end);
      continue;
    }
    l.computed += q;
    if (reuse_) reuse_->enter_full_blocks(in.pool, i, l);
    if (l.in_prompt()) continue;  // a prompt chunk: no token yet
    ++l.generated;
    l.prompt = l.computed;  // decoding: each step feeds the token before
    if (in.role == Instance::Role::prefill && l.generated < o.output_tokens) {
      send_to_decode(in, i, end);
      continue;
    }
    l.last_instance = static_cast<std::size_t>(&in - instances_.data());
    if (l.generated == 1) l.first_instance = l.last_instance;
    const bool last = l.generated == o.output_tokens;
    if (last) leave(in, l);
    stream(i, end, 1, l.generated == 1, last);
  }
}

// A verify: the fed token and the accepted drafts stay in the cache, and as many tokens come out
// (the last one the target's own); the rejected positions' blocks go back.
void Engine::verify_drafts(Instance& in, std::size_t i, std::uint64_t end) {
  Live& l = live_[i];
  RequestOutcome& o = run_.requests[i];
  const std::uint64_t tokens = std::min(1 + acceptance_->accepted(l.credit), o.output_tokens - l.generated);
  l.computed += tokens;
  l.generated += tokens;
  l.prompt = l.computed;
  const std::uint64_t keep = in.pool.blocks_for(l.computed);
  in.pool.give_back(l.blocks - keep);
  l.blocks = keep;
  if (reuse_) reuse_->enter_full_blocks(in.pool, i, l);
  l.last_instance = static_cast<std::size_t>(&in - instances_.data());
  run_.mtp_tokens += tokens;
  ++run_.mtp_verifies;
  const bool last = l.generated == o.output_tokens;
  if (last) leave(in, l);
  stream(i, end, tokens, false, last);
}

// A finished prompt's KV cache moves to a decode instance (round robin); its first token comes with it.
void Engine::send_to_decode(Instance& in, std::size_t i, std::uint64_t end) {
  Live& l = live_[i];
  RequestOutcome& o = run_.requests[i];
  const KvTransfer& link = setup_.kv_transfer;
  // The history at the link's bytes a token (none when no layer keeps the whole history: its
  // bytes are the window's), and a hybrid's sliding windows and states with it.
  const bool grows = setup_.kv.unit() == 0 || setup_.kv.per_token > 0;
  const std::uint64_t bytes = hw::checked("the KV transfer bytes", [&] {
    return (hw::Count(grows ? l.computed : 0) * link.bytes_per_token + setup_.kv.bounded(l.computed)).value();
  });
  o.kv_transfer_bytes += bytes;
  run_.kv_transfer_bytes += bytes;
  const std::uint64_t arrival = hw::checked("the serve's time in picoseconds",
                                            [&] { return (hw::Count(end) + link.picoseconds(bytes)).value(); });
  l.first_instance = static_cast<std::size_t>(&in - instances_.data());
  // The first token reaches the client from the prefill instance at once, or with the cache
  // from the decode one (the runtime's first_token; the chip alone: with the cache).
  const bool from_prefill = runtime_ && runtime_->first_token == "prefill";
  if (l.generated == 1) {
    stream(i, from_prefill ? end : arrival, 1, true, false);
  } else {
    l.last_token_ps = from_prefill ? end : arrival;  // a prompt recomputed after a preemption: no new token out
  }
  leave(in, l);  // it holds blocks on no instance until a decode one admits it
  Instance& to = instances_[setup_.prefill_instances + transferred_++ % setup_.decode_instances];
  to.pending.emplace(std::pair{arrival, sequence_++}, i);
}

// A request done on its instance gives its blocks back and leaves its running list.
void Engine::leave(Instance& in, Live& l) {
  release_blocks(in.pool, l);
  l.leaving = true;
}

// Request i's `tokens` new tokens, out of a step at `at`: to the client at once, or a job of the
// serial front end.
void Engine::stream(std::size_t i, std::uint64_t at, std::uint64_t tokens, bool first, bool last) {
  if (!front_) {
    deliver(i, at, at, first, last);
    return;
  }
  const std::uint64_t cost = hw::checked("the serve's time in picoseconds", [&] {
    return (hw::Count(tokens) * runtime_->serial_ns_per_output_token * 1000).value();
  });
  (stream_ ? *stream_ : *front_).hand_in({SerialFrontEnd::Kind::tokens, i, at, cost, first, last, at});
}

// Request i's tokens out of a step at `at` leave the front end at `left` (>= at); the client has
// them after_ps later. A gap between them is an ITL (one per step, however many tokens it brought).
void Engine::deliver(std::size_t i, std::uint64_t at, std::uint64_t left, bool first, bool last) {
  Live& l = live_[i];
  RequestOutcome& o = run_.requests[i];
  if (first) {
    o.first_token_ps = left + after_ps_;
    l.first_wait_ps = left - at;
  } else {
    o.itl_ps.push_back(left - l.last_token_ps);
  }
  l.last_token_ps = left;
  l.last_wait_ps = left - at;
  if (last) finish(i, left);
}

// Its last token left the front end at `end`; the client has it after_ps later.
void Engine::finish(std::size_t i, std::uint64_t end) {
  const std::uint64_t at = end + after_ps_;
  run_.requests[i].finish_ps = at;
  ++finished_;
  if (progress_ && !ahead_) progress_(g5sim::ServeProgress{finished_, requests_.size(), run_.steps.size(), ""});
  if (const std::optional<std::size_t> next = next_turn_[i]) {
    // The conversation's next turn, once its user has read this reply and thought.
    const std::uint64_t sent = hw::checked("the serve's time in picoseconds",
                                           [&] { return (hw::Count(at) + requests_[*next].think_ps).value(); });
    requests_[*next].arrival_ps = sent;
    run_.requests[*next].arrival_ps = sent;
    arrive(*next, sent);
    return;
  }
  while (closed_ && next_client_ < requests_.size() && requests_[next_client_].after) ++next_client_;
  if (closed_ && next_client_ < requests_.size()) {
    requests_[next_client_].arrival_ps = at;
    run_.requests[next_client_].arrival_ps = at;
    arrive(next_client_++, at);
  }
}

// Nothing to run while prompts load from a lower tier: the clock moves to the first load's end or
// the next arrival, whichever comes first.
void Engine::wait_for_loads(Instance& in) {
  std::optional<std::uint64_t> next;
  for (const std::size_t i : in.running) {
    if (live_[i].ready_ps > in.now) next = std::min(next.value_or(live_[i].ready_ps), live_[i].ready_ps);
  }
  if (!next) return;
  if (!in.pending.empty()) next = std::min(*next, std::max(in.now, in.pending.begin()->first.first));
  in.now = *next;
}

// Prefix caching (the prefix_caching knob): auto is on where a sequence's cache is its tokens'
// alone; a model's sliding windows or recurrent states would have to be cached with them, which
// is not modelled, so `on` is refused there.
void Engine::set_up_prefix_caching() {
  const std::string mode = settings_.text("prefix_caching");
  const auto bounded = [](const g5sim::KvGrowth& g) { return g.window_per_token > 0 || g.fixed > 0; };
  const bool hybrid = bounded(setup_.kv) || (setup_.decode_chip && bounded(setup_.decode_chip->kv));
  if (mode == "on" && hybrid) {
    throw hw::InputError("prefix_caching",
                         "the model keeps sliding windows or recurrent states beside its KV "
                         "history: reusing a prefix would need them cached too, which is not "
                         "modelled (use auto or off)");
  }
  run_.prefix_caching = mode == "on" || (mode == "auto" && !hybrid);
  if (run_.prefix_caching) reuse_ = std::make_shared<const PrefixReuse>(requests_, block_tokens_);
  if (setup_.kv_tiers && !run_.prefix_caching) {
    throw hw::InputError("kv_tiers", fmt::format("tiers below device memory keep what the prefix cache evicts, and "
                                                 "prefix caching is {} here{}",
                                                 mode == "off" ? "off" : "not modelled",
                                                 mode == "off" ? " (--prefix-caching off)"
                                                               : " (the model's windows "
                                                                 "or states)"));
  }
}

// Each tier's use over the instances: counts summed, the peak the largest instance's.
void Engine::gather_tier_use() {
  for (const Instance& in : instances_) {
    if (!in.pool.tiers) continue;
    const std::vector<g5sim::KvTierUse>& use = in.pool.tiers->use();
    if (run_.kv_tiers.empty()) {
      run_.kv_tiers = use;
      continue;
    }
    for (std::size_t t = 0; t < use.size(); ++t) {
      g5sim::KvTierUse& sum = run_.kv_tiers[t];
      sum.peak_blocks = std::max(sum.peak_blocks, use[t].peak_blocks);
      sum.written_blocks += use[t].written_blocks;
      sum.read_blocks += use[t].read_blocks;
      sum.dropped_blocks += use[t].dropped_blocks;
      sum.read_ps += use[t].read_ps;
    }
  }
}

// Bytes of one block on an instance's chip: block_tokens of its cache's tokens.
std::uint64_t Engine::tier_block_bytes(bool decode_chip) const {
  const g5sim::KvGrowth& kv = decode_chip ? setup_.decode_chip->kv : setup_.kv;
  if (kv.unit() == 0) {
    throw hw::InputError("kv_tiers",
                         "the serve's KV bytes a token are not known (ServeSetup::kv): a tier's "
                         "blocks have no size");
  }
  return hw::checked("a KV block's bytes", [&] { return (hw::Count(block_tokens_) * kv.unit()).value(); });
}

}  // namespace

ServeRun serve_requests(std::vector<ServeRequest> requests, const ServeSettings& settings, const ServeSetup& setup,
                        const std::vector<ChipSteps>& chips,
                        const std::function<void(const g5sim::ServeProgress&)>& progress) {
  return Engine(std::move(requests), settings, setup, chips, progress).run();
}

ServeRun serve_requests(std::vector<ServeRequest> requests, const ServeSettings& settings, const ServeSetup& setup,
                        const StepTimer& timer, const std::function<void(const g5sim::ServeProgress&)>& progress,
                        const StepTimer& draft_timer, const StepHooks& hooks) {
  const std::vector<ChipSteps> chips{ChipSteps{timer, draft_timer, hooks}};
  return Engine(std::move(requests), settings, setup, chips, progress).run();
}

}  // namespace serving
