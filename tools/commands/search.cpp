// g5sim search: the deployments of a model on one or more chips serving the same requests, the
// Pareto front of output tokens/s per chip against per user on each chip, and the best point
// meeting an SLO (explore/deployment_search.hpp).

#include <fmt/format.h>

#include <iostream>
#include <optional>
#include <string>
#include <unistd.h>

#include "explore/deployment_search.hpp"
#include "hw/config_error.hpp"
#include "serving/serve_settings.hpp"
#include "tools/cli_error.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/progress_line.hpp"

namespace tools {

using explore::parse_disagg_list;
using explore::parse_knob_list;
using explore::search;
using explore::SearchReport;
using explore::SearchSpace;
using explore::SearchSpec;
using explore::write_search_csv;
using explore::write_search_json;
using explore::write_search_table;
using serving::kMaxBatchedTokens;
using serving::kMaxBlockTokens;
using serving::kMaxConcurrency;
using serving::kMaxMtpDrafts;
using serving::kMaxServeRequests;
using serving::kMaxServeSeqs;
using serving::parse_schedule;
using serving::parse_step_cache;
namespace {

class SearchCommand final : public Command {
 public:
  explicit SearchCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "search",
            "the best deployment under an SLO: every sharding, batch cap, chunk, disaggregation and MTP of a model "
            "on one or more chips serves the same requests; the Pareto front of tokens/s per chip against per user")),
        options_(app(), g5sim::kServe, {"tp", "ep", "dp", "micro_batches"}) {
    CLI::App* a = app();
    a->add_option("--chip", chips_, "the chips, comma separated: config files or shipped names (sg2262,h100)")
        ->delimiter(',');
    a->add_option("--model", model_, "the model: a config file or a shipped name [default: deepseek-v3]")
        ->check(non_empty_path());
    a->add_option("--trace", trace_, "requests: a CSV or JSON-lines trace (as g5sim serve)")->check(non_empty_path());
    a->add_option("--rate", rate_, "requests: an open loop of Poisson arrivals at R requests/s");
    a->add_option("--concurrency", concurrency_, "requests: a closed loop of N clients")
        ->check(count_in(1, kMaxConcurrency));
    a->add_option("--requests", requests_, "synthetic load: how many requests")
        ->capture_default_str()
        ->check(count_in(1, kMaxServeRequests));
    a->add_option("--input-len", input_len_, "synthetic load: prompt tokens, N, LO:HI or a histogram file");
    a->add_option("--output-len", output_len_, "synthetic load: output tokens, N, LO:HI or a histogram file");
    a->add_option("--seed", seed_, "synthetic load: the generator's seed")
        ->capture_default_str()
        ->check(count_in(0, ~std::uint64_t{0}));
    a->add_option("--slo-ttft-ms", slo_ttft_ms_, "a point meets the SLO when its TTFT (at --slo-stat) is at most this");
    a->add_option("--slo-tpot-ms", slo_tpot_ms_, "a point meets the SLO when its TPOT (at --slo-stat) is at most this");
    a->add_option("--slo-stat", slo_stat_, "the statistic over requests the SLOs hold at: p50, p90 or p99")
        ->capture_default_str();
    a->add_option("--objective", objective_,
                  "what the best point has most of: tokens_per_s_per_chip or tokens_per_joule (chips with energy)")
        ->capture_default_str();
    a->add_option("--tp", tp_, "tensor-parallel degrees (1,2,4 or 1:8) [default: every sharding that fits]");
    a->add_option("--ep", ep_, "expert-parallel degrees [default: every sharding that fits]");
    a->add_option("--dp", dp_, "data-parallel degrees [default: every sharding that fits]");
    a->add_option("--max-chips", max_chips_,
                  "without all of --tp/--ep/--dp: shardings up to this many chips [default: the fewest that fit]")
        ->check(count_in(1, 1u << 20));
    a->add_option("--max-seqs", max_seqs_, "sequences a step runs at most: a list (64,128,256 or 16:512)")
        ->capture_default_str();
    a->add_option("--max-batched-tokens", max_batched_tokens_, "tokens a step computes at most: a list")
        ->capture_default_str();
    a->add_option("--chunk", chunk_, "a prompt's tokens per step at most: a list [default: the budget]");
    a->add_option("--micro-batches", micro_batches_, "micro-batches of a step: a list")->capture_default_str();
    a->add_option("--disagg", disagg_, "prefill:decode instances: a list of none or P:D (none,1:1,1:2)")
        ->capture_default_str();
    a->add_option("--mtp", mtp_, "MTP drafts: a list, 0 for none (0,1,2); above 0 needs --accept")
        ->capture_default_str();
    a->add_option("--accept", accept_, "with --mtp: each draft's acceptance rate, one or one per draft");
    a->add_option("--schedule", schedule_, "how a step is formed: mixed or prefill-first (as g5sim serve)")
        ->capture_default_str();
    a->add_option("--block-tokens", block_tokens_, "tokens per KV cache block")
        ->capture_default_str()
        ->check(count_in(1, kMaxBlockTokens));
    a->add_option("--memory-utilization", memory_utilization_, "share of the chip's DDR for weights and KV cache")
        ->capture_default_str();
    a->add_option("--step-cache", step_cache_,
                  "exact or bucket:PCT (as g5sim serve); a search serves many times, so it buckets by default")
        ->capture_default_str();
    a->add_flag("--exhaustive", exhaustive_, "run every point of the grid instead of a coarse pass and refinement");
    a->add_option("--jobs", jobs_,
                  "points served at once, on as many threads (default: the machine's cores; the "
                  "results are the same)")
        ->check(count_in(1, g5sim::run_limits().max_jobs));
    a->add_option("--csv", csv_, "write every point to PATH ('-' for stdout only)")->check(non_empty_path());
    a->add_option("--json", json_, "also write the report to PATH ('-' for stdout only)")->check(non_empty_path());
  }

  int run(const CliLimits& limits) override {
    try {
      return search_command(limits);
    } catch (const hw::InputError& e) {
      if (e.field() == "requests" || e.field() == "trace") throw CliError("search: " + std::string(e.what()));
      static const std::vector<std::string> kFlags{"rate",
                                                   "concurrency",
                                                   "input_len",
                                                   "output_len",
                                                   "memory_utilization",
                                                   "slo_ttft_ms",
                                                   "slo_tpot_ms",
                                                   "slo_stat",
                                                   "objective",
                                                   "max_seqs",
                                                   "max_batched_tokens",
                                                   "chunk",
                                                   "micro_batches",
                                                   "block_tokens",
                                                   "step_cache",
                                                   "schedule",
                                                   "disagg",
                                                   "mtp",
                                                   "accept",
                                                   "tp",
                                                   "ep",
                                                   "dp",
                                                   "chip",
                                                   "sharding"};
      if (std::find(kFlags.begin(), kFlags.end(), e.field()) == kFlags.end()) throw;
      std::string flag = "--" + e.field();
      std::replace(flag.begin(), flag.end(), '_', '-');
      if (e.field() == "sharding") flag = "search";
      const std::string message = e.what();
      const std::string rest = message.rfind(e.field() + ": ", 0) == 0 ? message.substr(e.field().size() + 2) : message;
      throw CliError(flag + ": " + rest);
    }
  }

 private:
  int search_command(const CliLimits& limits) {
    SearchSpec spec;
    spec.base = options_.request(limits);
    if (chips_.empty()) chips_.push_back("");
    for (const std::string& c : chips_) spec.chips.push_back(chip_of(c));
    spec.model = model_of(model_);
    spec.load.trace_path = trace_;
    spec.load.rate = rate_;
    spec.load.concurrency = concurrency_.value_or(0);
    spec.load.requests = requests_;
    spec.load.input_len = input_len_;
    spec.load.output_len = output_len_;
    spec.load.seed = seed_;
    spec.load.requests_given = app()->count("--requests") > 0;
    spec.load.seed_given = app()->count("--seed") > 0;
    spec.engine.limits.concurrency = concurrency_.value_or(0);
    spec.engine.limits.block_tokens = block_tokens_;
    spec.engine.limits.bucket_percent = parse_step_cache(step_cache_);
    spec.engine.limits.schedule = parse_schedule(schedule_);
    spec.engine.limits.max_steps = limits.max_serve_steps;
    spec.engine.memory_utilization = memory_utilization_;
    spec.engine.slo_ttft_ms = slo_ttft_ms_;
    spec.engine.slo_tpot_ms = slo_tpot_ms_;
    spec.accept = accept_;
    spec.slo_stat = slo_stat_;
    spec.objective = objective_;
    spec.exhaustive = exhaustive_;
    spec.jobs = jobs_or_default(jobs_);
    SearchSpace& s = spec.space;
    if (!tp_.empty()) s.tp = parse_knob_list(tp_, "tp", 1, 65536);
    if (!ep_.empty()) s.ep = parse_knob_list(ep_, "ep", 1, 65536);
    if (!dp_.empty()) s.dp = parse_knob_list(dp_, "dp", 1, 65536);
    s.max_chips = max_chips_.value_or(0);
    s.max_seqs = parse_knob_list(max_seqs_, "max_seqs", 1, kMaxServeSeqs);
    s.max_batched_tokens = parse_knob_list(max_batched_tokens_, "max_batched_tokens", 1, kMaxBatchedTokens);
    if (!chunk_.empty()) s.chunk = parse_knob_list(chunk_, "chunk", 1, kMaxBatchedTokens);
    s.micro_batches = parse_knob_list(micro_batches_, "micro_batches", 1, 64);
    s.disagg = parse_disagg_list(disagg_);
    s.mtp = parse_knob_list(mtp_, "mtp", 0, kMaxMtpDrafts);
    // Outputs are opened (checked) before the long part.
    OutputSet outputs({{"--csv", csv_}, {"--json", json_}});
    std::optional<ProgressLine> progress;
    if (isatty(STDERR_FILENO) != 0) progress.emplace();
    const SearchReport report = search(spec, [&](std::size_t done, std::size_t total, std::uint64_t pass) {
      if (progress && progress->due()) {
        progress->show(
            fmt::format("search: {} of {} points (pass {}), {:.0f} s", done, total, pass, progress->seconds()));
      }
    });
    if (progress) progress->clear();
    if (!outputs.on_stdout()) write_search_table(std::cout, report);
    if (OutputFile* csv = outputs.get("--csv")) write_search_csv(csv->stream(), report);
    if (OutputFile* json = outputs.get("--json")) write_search_json(json->stream(), report);
    outputs.close();
    return 0;
  }

  RunOptionFlags options_;
  std::vector<std::string> chips_;
  std::string model_, trace_, input_len_, output_len_, csv_, json_, accept_, tp_, ep_, dp_, chunk_;
  std::string max_seqs_ = "256", max_batched_tokens_ = "8192", micro_batches_ = "1", disagg_ = "none", mtp_ = "0";
  std::string step_cache_ = "bucket:10", schedule_ = "mixed", slo_stat_ = "p90", objective_ = "tokens_per_s_per_chip";
  std::optional<double> rate_, slo_ttft_ms_, slo_tpot_ms_;
  std::optional<std::uint64_t> concurrency_, max_chips_;
  std::uint64_t requests_ = 100, seed_ = 0, block_tokens_ = 16;
  double memory_utilization_ = 0.9;
  bool exhaustive_ = false;
  unsigned jobs_ = 0;
};

}  // namespace

CommandPtr make_search(CLI::App& app) { return std::make_unique<SearchCommand>(app); }

}  // namespace tools
