// g5sim::serve (g5sim/serve.hpp): the deployment fixed once and its KV cache sized from the chip's
// DDR (serving/serve.hpp), the settings resolved into what the engine needs, every distinct step
// simulated once on the instruction-level model, the metrics and the energy.

#include "serving/serve.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "api/parallel_for.hpp"
#include "api/public_errors.hpp"
#include "api/result_state.hpp"
#include "g5sim/run_options.hpp"
#include "hw/checked_count.hpp"
#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "models/run_limits.hpp"
#include "serving/auto_step_cache.hpp"
#include "serving/serving_engine.hpp"
#include "serving/step_store.hpp"
#include "sim/cancellation.hpp"

namespace serving {
namespace {

// The step options a serve fixes for every step: its sequences come from the engine.
void check_step(const g5sim::Request& step) {
  if (!step.mix.empty() || !step.seqs.empty() || !step.groups.empty()) {
    throw hw::InputError("mix", "serve makes each step's sequences itself: give requests, not --mix or --seqs");
  }
  if (step.scope != "step") throw hw::InputError("scope", "serve runs whole decoder steps (scope step)");
  if (step.keep_commands) throw hw::InputError("keep_commands", "serve keeps no command records");
}

std::uint64_t longest_request(const std::vector<ServeRequest>& requests) {
  std::uint64_t longest = 1;
  for (const ServeRequest& r : requests) longest = std::max(longest, r.input_tokens + r.output_tokens - 1);
  return longest;
}

// `step` on tp, ep, dp (batch one sequence per DP rank): its memory and its KV cache in tokens.
struct Fit {
  g5sim::ServingMemory memory;
  std::uint64_t kv_tokens = 0;
};
Fit fit(const g5sim::Chip& chip, const g5sim::Model& model, g5sim::Request step, std::uint64_t tp, std::uint64_t ep,
        std::uint64_t dp, double utilisation) {
  step.tp = tp;
  step.ep = ep;
  step.dp = dp;
  step.batch = dp;
  Fit f;
  f.memory = g5sim::serving_memory(chip, model, step);
  f.kv_tokens = kv_tokens_of(f.memory, utilisation, chip.name());
  return f;
}

// The deployment: as given (any of tp, ep, dp), else the smallest whose KV cache holds the
// longest request: n = 1, 2, 4, ... chips, trying dp = ep = n (tp 1), then tp = ep = n (dp 1),
// then tp = n (the automatic sharding's order, models/memory_footprint.hpp), skipping those the
// model does not divide.
g5sim::ServingMemory serving_deployment(const g5sim::Chip& chip, const g5sim::Model& model, const g5sim::Request& step,
                                        const std::vector<ServeRequest>& requests, const ServeSettings& settings) {
  // A deployment given, or a cache size given (the engine then names a request it cannot hold).
  if (step.tp || step.ep || step.dp || settings.given("kv_tokens")) return g5sim::serving_memory(chip, model, step);
  const std::uint64_t longest = longest_request(requests);
  const double utilisation = settings.decimal("memory_utilization");
  std::string last_reason;
  for (std::uint64_t n = 1; n <= models::kMaxChips; n *= 2) {
    for (const auto& [tp, ep, dp] :
         {std::tuple{std::uint64_t{1}, n, n}, {n, n, std::uint64_t{1}}, {n, std::uint64_t{1}, std::uint64_t{1}}}) {
      try {
        Fit f = fit(chip, model, step, tp, ep, dp, utilisation);
        // The longest request's cache in tokens of the capacity (a hybrid's windows and states
        // counted in bytes: g5sim::KvGrowth).
        const std::uint64_t unit = f.memory.kv.unit();
        const std::uint64_t need = unit == 0 ? longest : (f.memory.kv.bytes(longest) + unit - 1) / unit;
        if (f.kv_tokens / dp >= need) {
          f.memory.deployment.automatic = true;
          return f.memory;
        }
        last_reason = fmt::format("with tp {} ep {} dp {} the KV cache holds {} tokens per DP rank", tp, ep, dp,
                                  f.kv_tokens / dp);
      } catch (const g5sim::ConfigError& e) {
        const std::string& field = e.field();
        if (field != "memory_utilization" && field != "tp" && field != "ep" && field != "dp" && field != "sharding") {
          throw;
        }
        last_reason = e.what();
      } catch (const hw::InputError& e) {
        if (e.field() != "memory_utilization") throw;
        last_reason = e.what();
      }
    }
  }
  throw hw::InputError("sharding", fmt::format("no sharding up to {} chips holds {}'s weights and a KV cache for the "
                                               "longest request ({} tokens); the last tried: {}",
                                               models::kMaxChips, model.name(), longest, last_reason));
}

// What the engine needs beside the settings: the deployment's ranks, the parsed text knobs and
// their pairings, the link between instances.
ServeSetup setup_of(const g5sim::Chip& chip, const ServeSettings& settings, const g5sim::ServingMemory& memory,
                    const g5sim::Request& step, std::uint64_t max_steps) {
  ServeSetup setup;
  setup.dp = memory.deployment.dp;
  setup.kv = memory.kv;
  if (const std::string& tiers = settings.text("kv_tiers"); tiers != "none")
    setup.kv_tiers = g5sim::load_kv_tiers(tiers);
  const StepCacheMode cache = parse_step_cache(settings.text("step_cache"));
  setup.bucket_percent = cache.bucket_percent;
  setup.auto_percent = cache.auto_percent;
  std::tie(setup.prefill_instances, setup.decode_instances) = parse_disagg_or_none(settings.text("disagg"));
  if (setup.prefill_instances > 0) setup.kv_transfer = kv_transfer_link(chip, memory.kv_bytes_per_token);
  const std::uint64_t mtp = settings.count("mtp");
  g5sim::check_pairs(settings);
  if (mtp > 0) setup.accept = parse_accept(settings.text("accept"));
  if (mtp > 0 && 1 + mtp > step.decode_max_q) {
    throw hw::InputError("mtp", fmt::format("a verify of 1 + {} tokens is a prefill chunk to the step: raise "
                                            "decode_max_q to {} at least",
                                            mtp, 1 + mtp));
  }
  if (!step.runtime.empty() && step.runtime != "none") setup.runtime = g5sim::runtime_named(step.runtime);
  setup.jobs = static_cast<unsigned>(settings.optional_count("jobs").value_or(api::default_jobs()));
  setup.max_steps = max_steps;
  return setup;
}

// The figures that follow from a serve's dynamic and static energy: the total, per output token,
// and the average power of a chip over the serve.
void with_totals(g5sim::ServeEnergy& e, const g5sim::ServeReport& report) {
  e.total_j = e.dynamic_j + e.static_j;
  if (report.summary.output_tokens > 0 && e.total_j > 0) {
    e.joules_per_token = e.total_j / static_cast<double>(report.summary.output_tokens);
    e.tokens_per_joule = 1.0 / e.joules_per_token;
  }
  if (report.summary.duration_s > 0) {
    e.average_w = e.total_j / (static_cast<double>(report.chips) * report.summary.duration_s);
  }
}

// Every chip of the deployment: each step's simulated dynamic energy and its static power over
// the serve (g5sim::ServeEnergy).
std::optional<g5sim::ServeEnergy> energy_of(const g5sim::Chip& chip, const g5sim::ServeReport& report) {
  const std::optional<hw::ChipEnergy>& price = chip.data().chip.energy;
  if (!price) return std::nullopt;
  // W x s = J; the static power of the cores the steps run on.
  const std::uint32_t cores = report.step.cores ? static_cast<std::uint32_t>(*report.step.cores) : chip.cores();
  g5sim::ServeEnergy e;
  e.dynamic_j = report.run.dynamic_energy_j * static_cast<double>(report.memory.deployment.chips());
  e.static_j = price->static_w(cores) * static_cast<double>(report.chips) * report.summary.duration_s;
  with_totals(e, report);
  e.tdp_w = price->tdp_w;
  return e;
}

// An instance's FFN side under attention-FFN disaggregation (the attention side is the serve's chip).
struct AfdSides {
  const g5sim::Chip* ffn = nullptr;
  std::uint64_t attention_chips = 0, ffn_chips = 0;
};

// The step timers over the simulation: a step of the model, and one pass of the MTP draft module.
// They run on up to setup.jobs threads at once (a bucketed step's new anchors): the report's
// tallies under a lock; the band's basis and coverage are those of the simulated step whose mix
// text sorts first (whatever the threads' order). A step is simulated once as the chip runs it
// (g5sim::ChipStep) and priced with the serve's runtime (its device side; the scheduler's CPU is
// the engine's).
class StepSimulation {
 public:
  // `step`: what each of its steps runs with (the report's, or the decode chip's deployment).
  // `afd`: each step under attention-FFN disaggregation, `chip` its attention side's.
  StepSimulation(const g5sim::Chip& chip, const g5sim::Model& model, g5sim::Request step, g5sim::ServeReport& report,
                 std::shared_ptr<g5sim::SharedStepTimes> shared, const std::string& store_dir,
                 std::optional<AfdSides> afd = std::nullopt)
      : chip_(chip), model_(model), step_(std::move(step)), report_(report), shared_(std::move(shared)), afd_(afd) {
    const g5sim::Request& s = step_;
    const g5sim::Runtime& rt = g5sim::runtime_named(s.runtime == "none" ? std::string() : s.runtime);
    runtime_ = report.setup.runtime ? &*report.setup.runtime : nullptr;
    // A step's key in a store shared with other serves: the configs, the deployment, every run
    // option a serve takes that changes a result (weights, KV format, layers, micro-batches, ...:
    // serves that differ in one share nothing) and what of the step's graph the runtime sets. Not
    // in it: the options marked same_results (calibrate's trials run at a higher max_commands
    // than its first pass) and the runtime's name (its costs are priced apart, so calibrate's
    // trial runtimes share the chip's steps).
    prefix_ = fmt::format("{} {} tp{} ep{} dp{} {} {} {} {} ", chip.sha256(), model.sha256(), s.tp.value_or(1),
                          s.ep.value_or(1), s.dp.value_or(1), rt.kv_append, rt.lm_head_weights, rt.prefill_attention,
                          s.host_launch_ns.value_or(rt.host_launch_ns));
    for (const g5sim::RunOption& o : g5sim::run_options()) {
      if ((o.takes & g5sim::kServe) == 0 || o.same_results || o.name == "runtime") continue;
      prefix_ += fmt::format("{}={} ", o.name, g5sim::option_text(g5sim::get_option(s, o)));
    }
    if (afd_) prefix_ += fmt::format("afd {}:{} {} ", afd_->attention_chips, afd_->ffn_chips, afd_->ffn->sha256());
    if (!store_dir.empty()) store_.emplace(store_dir, prefix_);
  }
  StepTimer timer() {
    return [this](const StepGroups& groups) {
      const std::string mix = g5sim::mix_text(groups);
      const std::shared_ptr<const g5sim::ChipStep> s = shared(mix, [&] { return step(groups); });
      tally_band(mix, *s);
      return priced(*s);
    };
  }
  // DeepSeek's MTP module is one decoder layer with the model's embedding and head, priced as the
  // mean layer of the same decodes' step (its time, energy and runtime charge over its layers).
  StepTimer draft_timer() {
    return [this](const StepGroups& groups) {
      return priced(*shared("draft " + g5sim::mix_text(groups), [&] { return draft(groups); }));
    };
  }
  // Steps simulated ahead of an exact serve (serving_engine.hpp, "Steps ahead"), each on a thread
  // of its own: the timers take one from there as if they had simulated it then.
  StepPrefetch prefetch(unsigned jobs) {
    StepPrefetch p;
    p.jobs = jobs;
    p.start = [this](const StepGroups& groups, bool of_drafts) { return start_ahead(groups, of_drafts); };
    p.started = [this](const StepGroups& groups, bool of_drafts) {
      const std::lock_guard<std::mutex> lock(ahead_mutex_);
      return ahead_.count(key_of(groups, of_drafts)) != 0;
    };
    p.running = [this] { return running_ahead(); };
    p.ready = [this](const StepGroups& groups, bool of_drafts) { return ready_ahead(groups, of_drafts); };
    return p;
  }
  /// Distinct steps simulated so far (taken by the serve; not those read or shared).
  std::uint64_t simulated_steps() const { return simulated_.load(); }

 private:
  // A step simulated, and what its simulation cost (counted when the serve takes it); or read
  // from the step cache folder ahead of the timer (then counted as read).
  struct Simulated {
    g5sim::ChipStep step;
    double seconds = 0;
    std::uint64_t commands = 0;
    bool read = false;
  };
  static std::string key_of(const StepGroups& groups, bool of_drafts) {
    return (of_drafts ? "draft " : "") + g5sim::mix_text(groups);
  }
  bool start_ahead(const StepGroups& groups, bool of_drafts) {
    const std::string key = key_of(groups, of_drafts);
    if (shared_ && shared_->find(prefix_ + key)) return false;
    if (store_ && store_->find(key)) return false;
    const std::lock_guard<std::mutex> lock(ahead_mutex_);
    if (ahead_.count(key) != 0) return false;
    auto run = [this, groups, of_drafts] { return of_drafts ? draft(groups) : step(groups); };
    ahead_.emplace(key, std::async(std::launch::async, std::move(run)).share());
    return true;
  }
  std::size_t running_ahead() {
    const std::lock_guard<std::mutex> lock(ahead_mutex_);
    std::size_t running = 0;
    for (const auto& [key, result] : ahead_) {
      if (result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) ++running;
    }
    return running;
  }
  // A step's time without simulating it here: simulated ahead and done, or kept by the serves
  // sharing steps, or in the step cache folder (a warm serve's steps: the entry read is kept for
  // the timer, which then reads no file again).
  std::optional<StepTime> ready_ahead(const StepGroups& groups, bool of_drafts) {
    const std::string key = key_of(groups, of_drafts);
    if (shared_) {
      if (std::shared_ptr<const g5sim::ChipStep> kept = shared_->find(prefix_ + key)) return priced(*kept);
    }
    const std::lock_guard<std::mutex> lock(ahead_mutex_);
    if (const auto it = ahead_.find(key); it != ahead_.end()) {
      if (it->second.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return std::nullopt;
      try {
        return priced(it->second.get().step);
      } catch (const std::exception&) {
        return std::nullopt;  // the timer meets the error when the serve takes the step
      }
    }
    std::shared_ptr<const g5sim::ChipStep> read = store_ ? store_->find(key) : nullptr;
    if (!read) return std::nullopt;
    std::promise<Simulated> entry;
    entry.set_value(Simulated{*read, 0, 0, true});
    ahead_.emplace(key, entry.get_future().share());
    return priced(*read);
  }
  // The step's simulation started ahead, taken out of the map (nothing when none was).
  std::optional<std::shared_future<Simulated>> take_ahead(const std::string& key) {
    const std::lock_guard<std::mutex> lock(ahead_mutex_);
    const auto it = ahead_.find(key);
    if (it == ahead_.end()) return std::nullopt;
    std::shared_future<Simulated> result = std::move(it->second);
    ahead_.erase(it);
    return result;
  }
  // A step from the serves sharing this one's steps, else the step cache's folder, else simulated
  // (and kept in both).
  template <class Simulate>
  std::shared_ptr<const g5sim::ChipStep> shared(const std::string& key, const Simulate& simulate) {
    if (shared_) {
      if (std::shared_ptr<const g5sim::ChipStep> s = shared_->find(prefix_ + key)) return s;
    }
    // Taken from ahead (read or simulated there), read now, or simulated now: counted alike, when
    // taken. (Waiting on another thread's run, this thread asks its own cancel check, as its own
    // run would have.)
    std::optional<Simulated> r;
    if (std::optional<std::shared_future<Simulated>> ahead = take_ahead(key)) {
      r = ahead->get();
      sim::poll_cancel();
    } else if (std::shared_ptr<const g5sim::ChipStep> read = store_ ? store_->find(key) : nullptr) {
      r = Simulated{*read, 0, 0, true};
    } else {
      r = simulate();
    }
    if (!r->read) ++simulated_;
    {
      const std::lock_guard<std::mutex> lock(tally_);
      if (r->read) ++report_.steps_read;
      report_.simulate_seconds += r->seconds;
      report_.simulated_commands += r->commands;
    }
    const auto s = std::make_shared<const g5sim::ChipStep>(std::move(r->step));
    if (!r->read && store_) store_->put(key, *s);
    if (shared_) shared_->put(prefix_ + key, s);
    return s;
  }
  // The band's basis and coverage are those of the step whose mix text sorts first (whatever the
  // threads' order, and wherever the step came from).
  void tally_band(const std::string& mix, const g5sim::ChipStep& s) {
    const std::lock_guard<std::mutex> lock(tally_);
    if (!band_step_ || mix < *band_step_) {
      band_step_ = mix;
      report_.band_basis = s.band_basis;
      report_.band_coverage = s.band_coverage;
    }
  }
  // The step's device time under the serve's runtime: the chip's timeline (layer launches in it)
  // and the runtime's kernel and collective charge; the band is the chip's, the charge added to
  // both ends. A draft pass is its step's share (ChipStep::parts).
  StepTime priced(const g5sim::ChipStep& s) const {
    const std::uint64_t layers = s.parts;
    StepTime t = s.chip;
    if (!runtime_) return t;
    const g5sim::RuntimeParts p = g5sim::device_charge(*runtime_, s.ops);
    const std::uint64_t extra = (p.total_ps() - p.layer_launch_ps) / layers;
    t.ps += extra;
    if (t.has_band) t.band_low_ps += extra, t.band_high_ps += extra;
    t.runtime_ps = extra + p.layer_launch_ps / layers;
    return t;
  }
  g5sim::Result simulated(const StepGroups& groups) const {
    g5sim::Request r = step_;
    r.groups = groups;
    return g5sim::simulate(chip_, model_, r);
  }
  Simulated step(const StepGroups& groups) const {
    const auto started = std::chrono::steady_clock::now();
    if (afd_) {
      g5sim::Request r = step_;
      r.groups = groups;
      const g5sim::AfdStep a = g5sim::afd_step(chip_, afd_->attention_chips, *afd_->ffn, afd_->ffn_chips, model_, r);
      // No band (each side's own would not bound the pipeline) and no energy yet; no runtime.
      return {{StepTime{a.schedule.total_ps, false, 0, 0, 0, 0}, {}, 1, "attention-FFN disaggregation: no band", 0},
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
              0};
    }
    const g5sim::Result result = simulated(groups);
    return {{StepTime{result.total_ps, result.has_band, result.band_low_ps, result.band_high_ps,
                      result.dynamic_energy_j, 0},
             g5sim::step_ops_of(result), 1, result.band_basis, result.band_coverage},
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
            result.simulated_commands};
  }
  Simulated draft(const StepGroups& groups) const {
    const g5sim::Result result = simulated(groups);
    return {{StepTime{result.total_ps / result.layers, false, 0, 0,
                      result.dynamic_energy_j / static_cast<double>(result.layers), 0},
             g5sim::step_ops_of(result), result.layers, result.band_basis, result.band_coverage},
            0,
            result.simulated_commands};
  }

  const g5sim::Chip& chip_;
  const g5sim::Model& model_;
  const g5sim::Request step_;
  g5sim::ServeReport& report_;
  std::shared_ptr<g5sim::SharedStepTimes> shared_;
  std::optional<AfdSides> afd_;
  std::optional<StepStore> store_;
  const g5sim::Runtime* runtime_ = nullptr;
  std::string prefix_;
  std::mutex tally_;
  std::atomic<std::uint64_t> simulated_{0};
  std::optional<std::string> band_step_;
  // Last: its runs still going (steps the serve did not take) end before the rest goes.
  std::mutex ahead_mutex_;
  std::map<std::string, std::shared_future<Simulated>> ahead_;
};

// The step cache's folder (serving/step_store.hpp); one given that cannot be made is an error,
// the default one is then left out (the store only saves time).
std::string store_folder(const ServeSettings& settings) {
  const bool given = settings.given("step_cache_dir");
  const std::string dir = step_cache_dir(given ? settings.text("step_cache_dir") : std::string());
  if (dir.empty()) return dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec && std::filesystem::is_directory(dir, ec)) return dir;
  if (!given) return std::string();
  throw hw::InputError("step_cache_dir", fmt::format("cannot make the step cache folder '{}': {}", dir,
                                                     ec ? ec.message() : "not a folder"));
}

// The scheduler knobs a runtime sets (g5sim/runtime.hpp), where the user gave none: its schedule
// and limits, each rank's with a scheduler per DP rank (dp times the deployment's).
ServeSettings with_runtime_knobs(ServeSettings settings, const g5sim::Request& step, std::uint64_t dp) {
  if (step.runtime.empty() || step.runtime == "none") return settings;
  const g5sim::Runtime& rt = g5sim::runtime_named(step.runtime);
  const std::uint64_t ranks = rt.scheduler_per_dp_rank ? dp : 1;
  if (!settings.given("schedule")) settings.set_text("schedule", rt.schedule);
  if (!settings.given("max_seqs")) settings.set("max_seqs", std::min(rt.max_seqs * ranks, g5sim::kMaxServeSeqs));
  if (!settings.given("max_batched_tokens")) {
    settings.set("max_batched_tokens", std::min(rt.max_batched_tokens * ranks, g5sim::kMaxBatchedTokens));
  }
  return settings;
}

// A role's chip: the caller's, else its knob's (a shipped chip's stem or a config's path).
std::optional<g5sim::Chip> role_chip(const std::optional<g5sim::Chip>& given, const ServeSettings& settings,
                                     const char* knob) {
  if (given) return given;
  if (!settings.given(knob) || settings.text(knob).empty()) return std::nullopt;
  return g5sim::Chip::from_file(g5sim::chip_path(settings.text(knob)));
}

// One role's side of a disaggregated serve (its link's bytes per token: its chip's share).
g5sim::ServeRole role_of(const g5sim::Chip& chip, const g5sim::ServingMemory& memory, std::uint64_t instances,
                         std::uint64_t kv_tokens) {
  g5sim::ServeRole r;
  r.chip = chip.name();
  r.chip_source = g5sim::source_label(chip.source());
  r.instances = instances;
  r.kv_tokens = kv_tokens;
  r.memory = memory;
  r.link = kv_transfer_link(chip, memory.kv_bytes_per_token);
  return r;
}

// The transfer between two roles' sides: each chip of the decode side receives its share of a
// sequence's cache while each of the prefill side sends its own, both at once over their own
// links; the larger share over the slower link bounds it, after the longer latency:
//     ps(bytes) = max(latency_p, latency_d) + bytes x max(share_p, share_d) / share / min(bw_p, bw_d)
// (bytes counted at the larger share, so that bytes_per_token holds it).
g5sim::KvTransfer slower_side(const g5sim::KvTransfer& prefill, const g5sim::KvTransfer& decode) {
  g5sim::KvTransfer t;
  t.bytes_per_token = std::max(prefill.bytes_per_token, decode.bytes_per_token);
  const bool prefill_slower = prefill.bandwidth_gb_per_s < decode.bandwidth_gb_per_s;
  t.bandwidth_gb_per_s = std::min(prefill.bandwidth_gb_per_s, decode.bandwidth_gb_per_s);
  t.latency_ns = std::max(prefill.latency_ns, decode.latency_ns);
  t.link = prefill_slower ? prefill.link : decode.link;
  return t;
}

// The memory and the KV cache in tokens of `chip` serving `step`'s deployment (sized now when
// none was given), the step held to it.
struct RoleFit {
  g5sim::ServingMemory memory;
  std::uint64_t kv_tokens = 0;
};
RoleFit role_fit(const g5sim::Chip& chip, const g5sim::Model& model, const g5sim::Request& step,
                 const std::vector<ServeRequest>& requests, const ServeSettings& settings) {
  RoleFit f;
  f.memory = serving_deployment(chip, model, step, requests, settings);
  f.kv_tokens = settings.given("kv_tokens")
                    ? settings.count("kv_tokens")
                    : kv_tokens_of(f.memory, settings.decimal("memory_utilization"), chip.name());
  return f;
}

// `step` on `memory`'s deployment, whatever its sequences.
g5sim::Request held_to(g5sim::Request step, const g5sim::ServingMemory& memory) {
  step.tp = memory.deployment.tp;
  step.ep = memory.deployment.ep;
  step.dp = memory.deployment.dp;
  step.batch.reset();
  step.q_len.reset();
  return step;
}

// A decode chip of its own: its deployment and cache, the roles of the report, the slower side's
// link. Throws naming decode_chip when there is no disaggregation to give it a role in.
g5sim::Request set_up_decode_chip(const g5sim::Chip& decode, const g5sim::Model& model,
                                  const g5sim::Request& given_step, const std::vector<ServeRequest>& requests,
                                  const ServeSettings& settings, g5sim::ServeReport& report) {
  const RoleFit fit = role_fit(decode, model, given_step, requests, settings);
  ServeSetup& setup = report.setup;
  setup.decode_chip = ServeSetup::DecodeChip{fit.memory.deployment.dp, fit.kv_tokens, fit.memory.kv};
  g5sim::ServeRoles& roles = *report.roles;
  roles.decode = role_of(decode, fit.memory, setup.decode_instances, fit.kv_tokens);
  roles.own_chips = true;
  setup.kv_transfer = slower_side(roles.prefill.link, roles.decode.link);
  return held_to(given_step, fit.memory);
}

// Attention-FFN disaggregation (the afd knob): the attention side's memory (its A chips are the
// instance's DP ranks, each holding its sequences' cache), the FFN side checked to hold its
// weights at the settings' memory utilization, and what AFD does not combine with yet refused.
g5sim::ServingMemory afd_memory(const g5sim::Chip& chip, const g5sim::Chip& ffn, const g5sim::Model& model,
                                const g5sim::Request& step, const ServeSettings& settings, g5sim::ServeAfd& afd) {
  if (parse_disagg_or_none(settings.text("disagg")).first > 0) {
    throw hw::InputError("afd",
                         "attention-FFN disaggregation inside prefill/decode disaggregation is not built "
                         "yet: give --afd or --disagg");
  }
  if (step.tp || step.ep || step.dp) {
    throw hw::InputError(step.tp   ? "tp"
                         : step.ep ? "ep"
                                   : "dp",
                         "--afd A:F shards each side itself (attention dp A, FFN ep = dp F): leave --tp, --ep, "
                         "--dp out");
  }
  if (!step.runtime.empty() && step.runtime != "none") {
    throw hw::InputError("runtime", "a runtime's kernel and collective costs are not priced under --afd yet");
  }
  if (settings.count("mtp") > 0) throw hw::InputError("mtp", "MTP's draft passes are not priced under --afd yet");
  g5sim::Request side = step;
  side.scope = "attention";
  side.tp = side.ep = 1;
  side.dp = side.batch = afd.attention_chips;
  const g5sim::ServingMemory memory = g5sim::serving_memory(chip, model, side);
  side.scope = "ffn";
  side.ep = side.dp = side.batch = afd.ffn_chips;
  const g5sim::ServingMemory f = g5sim::serving_memory(ffn, model, side);
  const double utilisation = settings.decimal("memory_utilization");
  if (static_cast<double>(f.weight_bytes) > std::floor(utilisation * static_cast<double>(f.capacity_bytes))) {
    throw hw::InputError("afd", fmt::format("{} FFN chips of {} cannot hold the FFN side: its weights take {} bytes "
                                            "a chip, {} x {} bytes are usable (raise F)",
                                            afd.ffn_chips, ffn.name(), f.weight_bytes, utilisation, f.capacity_bytes));
  }
  afd.ffn_chip = ffn.name();
  afd.ffn_chip_source = g5sim::source_label(ffn.source());
  afd.ffn_weight_bytes = f.weight_bytes;
  afd.ffn_capacity_bytes = f.capacity_bytes;
  afd.micro_batches = step.micro_batches;
  afd.link = g5sim::afd_link(chip, afd.attention_chips, ffn, afd.ffn_chips);
  return memory;
}

// The activations an AFD serve moved, each way: every step's new tokens over the layers it
// simulates (g5sim::afd_layer_bytes per token and layer).
void count_afd_bytes(const g5sim::Model& model, const g5sim::Request& step, g5sim::ServeReport& report) {
  const std::uint64_t layers = step.layers.value_or(model.data().spec.num_hidden_layers);
  std::uint64_t per_token = 0;
  for (std::uint64_t l = 0; l < layers; ++l) per_token += g5sim::afd_layer_bytes(model, l, 1);
  hw::Count bytes{0};
  for (const g5sim::StepLog& s : report.run.steps) bytes += hw::Count(s.prefill_tokens + s.decode_tokens) * per_token;
  report.afd->dispatch_bytes = report.afd->combine_bytes = hw::checked("the AFD bytes", [&] { return bytes.value(); });
}

// Every chip of the deployment: each step's simulated dynamic energy and its static power over
// the serve, each role's chip its own (both need an `energy` section).
std::optional<g5sim::ServeEnergy> energy_of_roles(const g5sim::Chip& chip, const std::optional<g5sim::Chip>& decode,
                                                  const g5sim::ServeReport& report) {
  if (!decode) return energy_of(chip, report);
  const std::optional<hw::ChipEnergy>& p = chip.data().chip.energy;
  const std::optional<hw::ChipEnergy>& d = decode->data().chip.energy;
  if (!p || !d) return std::nullopt;
  const g5sim::ServeRoles& roles = *report.roles;
  const double pc = static_cast<double>(roles.prefill.memory.deployment.chips());
  const double dc = static_cast<double>(roles.decode.memory.deployment.chips());
  g5sim::ServeEnergy e;
  e.dynamic_j = report.run.dynamic_energy_j * pc + report.run.decode_chip_dynamic_energy_j * dc;
  // A role's static power: its chips, every core of its chip (a step's cores option is the prefill chip's).
  e.static_j = (p->static_w(chip.cores()) * pc * static_cast<double>(roles.prefill.instances) +
                d->static_w(decode->cores()) * dc * static_cast<double>(roles.decode.instances)) *
               report.summary.duration_s;
  with_totals(e, report);
  return e;
}

// Every chip of the serve: each role's instances' chips, an AFD instance's two sides, or the
// deployment's.
std::uint64_t chips_of(const g5sim::ServeReport& report) {
  if (report.afd) return report.afd->attention_chips + report.afd->ffn_chips;
  if (!report.roles) return report.memory.deployment.chips();
  const g5sim::ServeRoles& r = *report.roles;
  return hw::checked("the serve's chips", [&] {
    return (hw::Count(r.prefill.memory.deployment.chips()) * r.prefill.instances +
            hw::Count(r.decode.memory.deployment.chips()) * r.decode.instances)
        .value();
  });
}

// The FFN chips of attention-FFN disaggregation (the afd knob): its own config, else the serve's.
std::optional<g5sim::Chip> afd_ffn_chip(const g5sim::Chip& chip, const ServeSettings& settings) {
  if (parse_afd_or_none(settings.text("afd")).first > 0) {
    std::optional<g5sim::Chip> ffn = role_chip(std::nullopt, settings, "ffn_chip");
    return ffn ? ffn : chip;
  }
  if (settings.given("ffn_chip") && !settings.text("ffn_chip").empty()) {
    throw hw::InputError("ffn_chip", "an FFN chip needs attention-FFN disaggregation: give --afd A:F");
  }
  return std::nullopt;
}

// Each role's step request: its sharding held by the caller, else the role's own knobs
// (--decode-ep), else the step's. A role's chip or sharding without --disagg is refused, naming it.
std::pair<g5sim::Request, g5sim::Request> role_requests(const g5sim::Request& step, const ServeSettings& settings,
                                                        const g5sim::RoleChips& roles, const char* role_chip_knob) {
  auto sharded = [](g5sim::Request r, const std::optional<g5sim::Deployment>& d) {
    if (d) r.tp = d->tp, r.ep = d->ep, r.dp = d->dp;
    return r;
  };
  std::string role_knob;  // the first role sharding knob given, if any
  auto role_sharded = [&](g5sim::Request r, const std::string& role) {
    for (const auto& [dim, member] :
         {std::pair{"tp", &g5sim::Request::tp}, {"ep", &g5sim::Request::ep}, {"dp", &g5sim::Request::dp}}) {
      const std::string name = role + "_" + dim;
      if (!settings.given(name)) continue;
      r.*member = settings.count(name);
      if (role_knob.empty()) role_knob = name;
    }
    return r;
  };
  std::pair<g5sim::Request, g5sim::Request> out{sharded(role_sharded(step, "prefill"), roles.prefill_sharding),
                                                sharded(role_sharded(step, "decode"), roles.decode_sharding)};
  if (parse_disagg_or_none(settings.text("disagg")).first == 0) {
    if (role_chip_knob != nullptr) {
      throw hw::InputError(role_chip_knob, "a chip per role needs prefill and decode instances: give --disagg P:D");
    }
    if (!role_knob.empty()) {
      throw hw::InputError(role_knob, "a role's own sharding needs prefill and decode instances: give --disagg P:D");
    }
  }
  return out;
}

g5sim::ServeReport serve_steps(const g5sim::Chip& serve_chip, const g5sim::Model& model, g5sim::Request step,
                               std::vector<ServeRequest> requests, const ServeSettings& given_settings,
                               const g5sim::ServeControls& controls, const g5sim::RoleChips& given_roles) {
  check_step(step);
  // The roles' chips: the prefill instances run `chip` (the serve's, or the prefill role's own).
  const std::optional<g5sim::Chip> prefill_chip = role_chip(given_roles.prefill, given_settings, "prefill_chip");
  std::optional<g5sim::Chip> decode_chip = role_chip(given_roles.decode, given_settings, "decode_chip");
  const g5sim::Chip& chip = prefill_chip ? *prefill_chip : serve_chip;
  const auto [prefill_given, decode_given] = role_requests(step, given_settings, given_roles,
                                                           decode_chip    ? "decode_chip"
                                                           : prefill_chip ? "prefill_chip"
                                                                          : nullptr);
  step = prefill_given;
  // Roles sharded apart run apart, on one chip or two.
  const bool apart = decode_given.tp != step.tp || decode_given.ep != step.ep || decode_given.dp != step.dp;
  if (!decode_chip && (prefill_chip || apart)) decode_chip = serve_chip;
  const auto [afd_attention, afd_ffn] = parse_afd_or_none(given_settings.text("afd"));
  const std::optional<g5sim::Chip> ffn_chip = afd_ffn_chip(chip, given_settings);
  if (decode_chip && decode_chip->sha256() == chip.sha256() && !apart) decode_chip.reset();  // one chip after all
  g5sim::ServeReport report;
  report.chip = chip.name();
  report.model = model.name();
  report.chip_source = g5sim::source_label(chip.source());
  report.model_source = g5sim::source_label(model.source());
  if (ffn_chip) {
    report.afd.emplace();
    report.afd->attention_chips = afd_attention;
    report.afd->ffn_chips = afd_ffn;
    report.memory = afd_memory(chip, *ffn_chip, model, step, given_settings, *report.afd);
    step.batch.reset();  // each side shards itself: tp, ep and dp stay unset
    step.q_len.reset();
  } else {
    report.memory = serving_deployment(chip, model, step, requests, given_settings);
    // Every step runs on the deployment sized once, whatever its sequences.
    step = held_to(step, report.memory);
  }
  report.step = step;
  const ServeSettings settings = with_runtime_knobs(given_settings, step, report.memory.deployment.dp);
  report.settings = settings;
  if (!settings.given("kv_tokens")) {
    report.settings.set("kv_tokens", kv_tokens_of(report.memory, settings.decimal("memory_utilization"), report.chip));
  }
  report.settings.set("chunk", g5sim::effective_value(settings, *settings.find("chunk")));
  report.setup = setup_of(chip, settings, report.memory, step, controls.max_steps);
  ServeSetup& setup = report.setup;
  if (setup.prefill_instances > 0) {
    report.roles.emplace();
    report.roles->prefill = role_of(chip, report.memory, setup.prefill_instances, report.settings.count("kv_tokens"));
    report.roles->decode = report.roles->prefill;
    report.roles->decode.instances = setup.decode_instances;
  }
  const std::string store = store_folder(settings);
  std::optional<AfdSides> afd;
  if (ffn_chip) afd = AfdSides{&*ffn_chip, afd_attention, afd_ffn};
  setup.afd_attention_chips = afd_attention;
  setup.afd_ffn_chips = afd_ffn;
  StepSimulation simulation(chip, model, step, report, controls.shared_steps, store, afd);
  std::optional<StepSimulation> decode_simulation;
  if (decode_chip) {
    const g5sim::Request decode_step =
        set_up_decode_chip(*decode_chip, model, decode_given, requests, settings, report);
    decode_simulation.emplace(*decode_chip, model, decode_step, report, controls.shared_steps, store);
  }
  std::vector<ChipSteps> chips;
  for (StepSimulation* s : {&simulation, decode_simulation ? &*decode_simulation : nullptr}) {
    if (s == nullptr) continue;
    ChipSteps c{s->timer(), s->draft_timer(), {}};
    c.hooks.prefetch = s->prefetch(setup.jobs);
    chips.push_back(std::move(c));
  }
  // Progress says how many steps were simulated: what the serve's time goes to.
  std::function<void(const g5sim::ServeProgress&)> progress;
  if (controls.progress) {
    progress = [&](const g5sim::ServeProgress& p) {
      g5sim::ServeProgress counted = p;
      counted.simulated = simulation.simulated_steps() + (decode_simulation ? decode_simulation->simulated_steps() : 0);
      controls.progress(counted);
    };
  }
  report.run = setup.auto_percent > 0 ? serve_auto(requests, report.settings, setup, chips, progress)
                                      : serve_requests(std::move(requests), report.settings, setup, chips, progress);
  report.chips = chips_of(report);
  if (report.afd) count_afd_bytes(model, step, report);
  report.summary = summarize(report.run, report.chips, settings.optional_decimal("slo_ttft_ms"),
                             settings.optional_decimal("slo_tpot_ms"));
  if (setup.runtime) report.summary.runtime_bands = g5sim::runtime_bands_of(*setup.runtime);
  if (!report.afd) report.energy = energy_of_roles(chip, decode_chip, report);
  return report;
}

}  // namespace

std::uint64_t kv_tokens_of(const g5sim::ServingMemory& m, double utilisation, const std::string& chip) {
  if (!(utilisation > 0 && utilisation <= 1)) {
    throw hw::InputError("memory_utilization", fmt::format("{} is outside (0, 1]", utilisation));
  }
  const double usable = std::floor(utilisation * static_cast<double>(m.capacity_bytes));
  if (usable <= static_cast<double>(m.weight_bytes)) {
    throw hw::InputError(
        "memory_utilization",
        fmt::format("{}'s weights take {} bytes per chip with tp {} ep {} dp {}, but {} x {} bytes of DDR leaves no "
                    "room for a KV cache (raise the memory utilization, or shard wider)",
                    chip, m.weight_bytes, m.deployment.tp, m.deployment.ep, m.deployment.dp, utilisation,
                    m.capacity_bytes));
  }
  const auto per_rank = static_cast<std::uint64_t>((usable - static_cast<double>(m.weight_bytes)) /
                                                   static_cast<double>(m.kv_bytes_per_token));
  return hw::checked("the KV cache tokens", [&] { return (hw::Count(per_rank) * m.deployment.dp).value(); });
}

g5sim::KvTransfer kv_transfer_link(const g5sim::Chip& chip, std::uint64_t kv_bytes_per_token) {
  const hw::Chip& c = chip.data().chip;
  g5sim::KvTransfer t;
  t.bytes_per_token = kv_bytes_per_token;
  if (c.nodes) {
    t.bandwidth_gb_per_s = c.nodes->rdma_bandwidth_gb_per_s;
    t.latency_ns = c.nodes->rdma_latency_ns;
    t.link = "rdma";
  } else {
    t.bandwidth_gb_per_s = c.c2c.bandwidth_gb_per_s * c.c2c.links;
    t.latency_ns = c.c2c.latency_ns;
    t.link = "c2c";
  }
  return t;
}

}  // namespace serving

namespace g5sim {

std::optional<RuntimeBands> runtime_bands_of(const g5sim::Runtime& runtime) {
  if (runtime.bands.empty()) return std::nullopt;
  RuntimeBands out;
  out.coverage = runtime.band_coverage;
  out.basis = runtime.band_basis;
  // A time t measured within [t / high_ratio, t / low_ratio]; a rate r (time's inverse) within
  // [r low_ratio, r high_ratio].
  auto band = [&](const std::string& kind, bool rate) {
    const g5sim::Runtime::Band* b = runtime.band_for(kind);
    if (b == nullptr) return MetricBand{"", 0, 1, 1};
    return rate ? MetricBand{b->kind, b->rows, b->low_ratio, b->high_ratio}
                : MetricBand{b->kind, b->rows, 1 / b->high_ratio, 1 / b->low_ratio};
  };
  out.ttft = band("ttft", false);
  out.tpot = band("tpot", false);
  out.throughput = band("throughput", true);
  return out;
}

std::uint64_t KvTransfer::picoseconds(std::uint64_t bytes) const {
  // GB/s is bytes per nanosecond: bytes / bandwidth ns, x 1,000 ps.
  return static_cast<std::uint64_t>(
      std::llround(latency_ns * 1000.0 + static_cast<double>(bytes) * 1000.0 / bandwidth_gb_per_s));
}

std::shared_ptr<const ChipStep> SharedStepTimes::find(const std::string& key) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = steps_.find(key);
  return it == steps_.end() ? nullptr : it->second;
}

void SharedStepTimes::put(const std::string& key, std::shared_ptr<const ChipStep> step) {
  const std::lock_guard<std::mutex> lock(mutex_);
  steps_.emplace(key, std::move(step));
}

void check_pairs(const ServeSettings& settings) {
  const bool mtp = settings.count("mtp") > 0, accept = !settings.text("accept").empty();
  if ((mtp || accept || settings.optional_count("accept_draw")) && !(mtp && accept)) {
    throw ConfigError("the drafts (mtp) and their acceptance rates (accept) go together", "", "mtp", 0, 0);
  }
}

std::optional<std::string> deployment_refusal(const Chip& chip, const Model& model, const Request& step,
                                              const std::vector<ServeRequest>& requests,
                                              const ServeSettings& settings) {
  // Under attention-FFN disaggregation each side is sized by the serve itself.
  if (settings.text("afd") != "none") return std::nullopt;
  const std::uint64_t longest = serving::longest_request(requests);
  const std::uint64_t dp = step.dp.value_or(1);
  // Every role's chip holds the deployment: the serve's (or the prefill role's own) and the decode
  // role's own (a bad name is the serve's error to give).
  std::vector<Chip> chips;
  for (const char* knob : {"prefill_chip", "decode_chip"}) {
    std::optional<Chip> own;
    try {
      own = serving::role_chip(std::nullopt, settings, knob);
    } catch (const ConfigError&) {
    }
    chips.push_back(own ? *own : chip);
  }
  if (chips[0].sha256() == chips[1].sha256()) chips.pop_back();
  for (const Chip& c : chips) {
    const std::string who = chips.size() > 1 ? c.name() + ": " : std::string();
    try {
      const serving::Fit f = serving::fit(c, model, step, step.tp.value_or(1), step.ep.value_or(1), dp,
                                          settings.decimal("memory_utilization"));
      const std::uint64_t per_rank = f.kv_tokens / dp;
      if (per_rank < longest) {
        return fmt::format("{}the KV cache of a DP rank holds {} tokens, the longest request needs {}", who, per_rank,
                           longest);
      }
    } catch (const ConfigError& e) {
      return who + e.what();
    } catch (const hw::InputError& e) {
      return who + e.what();
    }
  }
  return std::nullopt;
}

ServeReport serve(const Chip& chip, const Model& model, const Request& step, std::vector<ServeRequest> requests,
                  const ServeSettings& settings, const ServeControls& controls, const RoleChips& roles) {
  return api::public_errors(
      [&] { return serving::serve_steps(chip, model, step, std::move(requests), settings, controls, roles); });
}

ServeReport serve(const Chip& chip, const Model& model, const Request& step, const ServeSettings& settings,
                  const ServeControls& controls) {
  return serve(chip, model, step, requests_of(settings), settings, controls);
}

}  // namespace g5sim
