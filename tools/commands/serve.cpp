// g5sim serve: requests in (a trace, or a synthetic open or closed loop), TTFT / TPOT / ITL /
// goodput per request and per chip out, each step of the continuous batching simulated on the
// instruction-level model (serving/).

#include "serving/serve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unistd.h>

#include "hw/config_error.hpp"
#include "serving/serve_settings.hpp"
#include "tools/cli_error.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/progress_line.hpp"

namespace tools {

using serving::kMaxBatchedTokens;
using serving::kMaxBlockTokens;
using serving::kMaxConcurrency;
using serving::kMaxMtpDrafts;
using serving::kMaxServeRequests;
using serving::kMaxServeSeqs;
using serving::LoadSpec;
using serving::parse_disagg;
using serving::parse_schedule;
using serving::parse_step_cache;
using serving::requests_of;
using serving::serve;
using serving::ServeLimits;
using serving::ServeOptions;
using serving::ServeReport;
using serving::ServeRequest;
using serving::set_mtp;
using serving::write_request_csv;
using serving::write_serve_json;
using serving::write_serve_perfetto;
using serving::write_serve_table;
namespace {

class ServeCommand final : public Command {
 public:
  explicit ServeCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "serve", "serve requests with continuous batching and chunked prefill: TTFT, TPOT, ITL, goodput per chip")),
        options_(app(), g5sim::kServe) {
    add_config_flags(app(), chip_, model_);
    CLI::App* a = app();
    a->add_option("--trace", trace_,
                  "requests: a CSV (arrival_s,input_tokens,output_tokens[,id]) or JSON-lines (.jsonl) file")
        ->check(non_empty_path());
    a->add_option("--rate", rate_, "requests: an open loop of Poisson arrivals at R requests/s");
    a->add_option("--concurrency", concurrency_, "requests: a closed loop of N clients, each sending on its last reply")
        ->check(count_in(1, kMaxConcurrency));
    a->add_option("--requests", requests_, "synthetic load: how many requests")
        ->capture_default_str()
        ->check(count_in(1, kMaxServeRequests));
    a->add_option("--input-len", input_len_,
                  "synthetic load: prompt tokens, N, a uniform range LO:HI, or a histogram file (CSV low,high,weight)");
    a->add_option("--output-len", output_len_,
                  "synthetic load: output tokens, N, a uniform range LO:HI, or a histogram file (CSV low,high,weight)");
    a->add_option("--seed", seed_, "synthetic load: the generator's seed")
        ->capture_default_str()
        ->check(count_in(0, ~std::uint64_t{0}));
    a->add_option("--schedule", schedule_,
                  "how a step is formed: mixed (vLLM v1: decodes and prompt chunks in one step) or prefill-first "
                  "(SGLang's default: a step of prompts whenever one can run, else a step of decodes)")
        ->capture_default_str();
    a->add_option("--max-seqs", limits_.max_seqs, "sequences a step runs at most (vLLM's max_num_seqs)")
        ->capture_default_str()
        ->check(count_in(1, kMaxServeSeqs));
    a->add_option("--max-batched-tokens", limits_.max_batched_tokens,
                  "tokens a step computes at most (vLLM's max_num_batched_tokens)")
        ->capture_default_str()
        ->check(count_in(1, kMaxBatchedTokens));
    a->add_option("--chunk", limits_.chunk,
                  "a prompt's tokens per step at most (chunked prefill) [default: the budget]")
        ->check(count_in(1, kMaxBatchedTokens));
    a->add_option("--block-tokens", limits_.block_tokens, "tokens per KV cache block (paged attention)")
        ->capture_default_str()
        ->check(count_in(1, kMaxBlockTokens));
    a->add_option("--memory-utilization", memory_utilization_,
                  "share of the chip's DDR for weights and KV cache (vLLM's gpu_memory_utilization)")
        ->capture_default_str();
    a->add_option("--kv-tokens", kv_tokens_, "the deployment's KV cache in tokens, instead of sizing it from DDR")
        ->check(count_in(1, std::uint64_t{1} << 50));
    a->add_option("--disagg", disagg_,
                  "P:D prefill and decode instances of the deployment each; prompts' KV caches move between them");
    a->add_option("--mtp", mtp_, "MTP / speculative decoding: drafts each decode verifies a step (1..7)")
        ->check(count_in(1, kMaxMtpDrafts));
    a->add_option("--accept", accept_,
                  "with --mtp: each draft's acceptance rate, one or one per draft (0.8 or 0.9,0.8)");
    a->add_option("--accept-draw", accept_seed_,
                  "with --mtp: draw acceptances with this seed (default: the expected tokens, no randomness)")
        ->check(count_in(0, ~std::uint64_t{0}));
    a->add_option("--step-cache", step_cache_,
                  "exact: every distinct step simulated; bucket:PCT: a step interpolated from anchor steps on a "
                  "PCT % grid (its fullest DP rank's decodes, their mean history and its mean prompt chunk)")
        ->capture_default_str();
    a->add_option("--jobs", jobs_,
                  "with bucket:PCT: a step's new anchor steps simulated at once, on as many threads (default: the "
                  "machine's cores; the results are the same)")
        ->check(count_in(1, g5sim::run_limits().max_jobs));
    a->add_option("--slo-ttft-ms", slo_ttft_ms_, "goodput counts requests whose TTFT is at most this");
    a->add_option("--slo-tpot-ms", slo_tpot_ms_, "goodput counts requests whose TPOT is at most this");
    a->add_option("--csv", csv_, "write the per-request CSV to PATH ('-' for stdout only)")->check(non_empty_path());
    a->add_option("--json", json_, "also write the summary JSON to PATH ('-' for stdout only)")
        ->check(non_empty_path());
    a->add_option("--perfetto", perfetto_,
                  "also write a Chrome trace-event JSON (Perfetto): a track per instance with its steps, a track per "
                  "request slot with each request's queued, prefill and decode")
        ->check(non_empty_path());
  }

  int run(const CliLimits& limits) override {
    try {
      return serve_command(limits);
    } catch (const hw::InputError& e) {
      // serve's own parameters (g5sim.serve()'s keywords) behind their flags.
      static const std::set<std::string> kServeFields{
          "rate",         "concurrency", "input_len",  "output_len",         "memory_utilization",
          "slo_ttft_ms",  "slo_tpot_ms", "max_seqs",   "max_batched_tokens", "chunk",
          "block_tokens", "kv_tokens",   "step_cache", "schedule",           "disagg",
          "mtp",          "accept"};
      // The load as a whole (one source of requests; a request that can never run): said as is.
      if (e.field() == "requests" || e.field() == "trace") throw CliError("serve: " + std::string(e.what()));
      if (kServeFields.count(e.field()) == 0) throw;
      std::string flag = "--" + e.field();
      std::replace(flag.begin(), flag.end(), '_', '-');
      throw CliError(flag + ": " + e.what());
    }
  }

 private:
  int serve_command(const CliLimits& limits) {
    g5sim::Request base = options_.request(limits);
    const g5sim::Chip chip = chip_of(chip_);
    const g5sim::Model model = model_of(model_);
    LoadSpec load;
    load.trace_path = trace_;
    load.rate = rate_;
    load.concurrency = concurrency_.value_or(0);
    load.requests = requests_;
    load.input_len = input_len_;
    load.output_len = output_len_;
    load.seed = seed_;
    load.requests_given = app()->count("--requests") > 0;
    load.seed_given = app()->count("--seed") > 0;
    std::vector<ServeRequest> requests = requests_of(load);
    ServeOptions options;
    options.limits = limits_;
    options.limits.concurrency = concurrency_.value_or(0);
    options.limits.kv_tokens = kv_tokens_.value_or(0);
    options.limits.bucket_percent = parse_step_cache(step_cache_);
    options.limits.schedule = parse_schedule(schedule_);
    options.limits.max_steps = limits.max_serve_steps;
    options.limits.jobs = jobs_or_default(jobs_);
    set_mtp(options.limits, mtp_.value_or(0), accept_, accept_seed_);
    if (!disagg_.empty()) {
      std::tie(options.limits.prefill_instances, options.limits.decode_instances) = parse_disagg(disagg_);
    }
    options.memory_utilization = memory_utilization_;
    options.slo_ttft_ms = slo_ttft_ms_;
    options.slo_tpot_ms = slo_tpot_ms_;
    // Outputs are opened (checked) before the long part.
    OutputSet outputs({{"--csv", csv_}, {"--json", json_}, {"--perfetto", perfetto_}});
    // "serve: 120 of 1000 requests done, 12 s" (tools/progress_line.hpp).
    std::optional<ProgressLine> progress;
    if (isatty(STDERR_FILENO) != 0) progress.emplace();
    const ServeReport report =
        serve(chip, model, base, std::move(requests), options, [&](std::uint64_t d, std::uint64_t t) {
          if (progress && progress->due()) {
            progress->show(fmt::format("serve: {} of {} requests done, {:.0f} s", d, t, progress->seconds()));
          }
        });
    if (progress) progress->clear();
    if (!outputs.on_stdout()) write_serve_table(std::cout, report);
    if (OutputFile* csv = outputs.get("--csv")) write_request_csv(csv->stream(), report);
    if (OutputFile* json = outputs.get("--json")) write_serve_json(json->stream(), report);
    if (OutputFile* perfetto = outputs.get("--perfetto")) write_serve_perfetto(perfetto->stream(), report);
    outputs.close();
    return 0;
  }

  RunOptionFlags options_;
  unsigned jobs_ = 0;
  std::string chip_, model_, trace_, input_len_, output_len_, csv_, json_, step_cache_ = "exact", schedule_ = "mixed",
                                                                           disagg_, accept_, perfetto_;
  std::optional<std::uint64_t> mtp_, accept_seed_;
  std::optional<double> rate_;
  std::optional<std::uint64_t> concurrency_, kv_tokens_;
  std::optional<double> slo_ttft_ms_, slo_tpot_ms_;
  std::uint64_t requests_ = 100, seed_ = 0;
  double memory_utilization_ = 0.9;
  ServeLimits limits_;
};

}  // namespace

CommandPtr make_serve(CLI::App& app) { return std::make_unique<ServeCommand>(app); }

}  // namespace tools
