#pragma once
// g5sim search: the deployments of a model on one or more chips, each serving the same requests
// (serving/serve.hpp), and which of them are worth having.
//
// A point p is a chip, a sharding (tp, ep, dp), the engine's limits (max_seqs, max_batched_tokens,
// chunk), micro-batches, a disaggregation P:D and MTP drafts. Its figures come from one serve:
//     x(p) = output tokens/s per chip    (output tokens / duration / the deployment's chips)
//     y(p) = output tokens/s per user    (the mean over requests of (output - 1) / decode time)
// and TTFT, TPOT (p50, p90, p99), goodput, J per token (a chip with an `energy` section).
//
// Pareto front of a chip: its points that no point of the same chip dominates, where
//     p dominates q  <=>  x(p) >= x(q), y(p) >= y(q), and one of the two is strictly greater.
// Points equal in both are on the front together. Every point off the front is dominated by one
// on it (domination is transitive and the points are finitely many).
//
// Meets the SLO: TTFT and TPOT at the SLO's statistic (p50, p90 or p99 over requests; p90 by
// default, as DistServe's 90 % attainment) within the SLOs given (no SLO: every point meets).
// Best point: of those meeting the SLO, the most by the objective (tokens/s per chip, or tokens
// per joule), ties to the more tokens/s per user, then to the earlier point of the grid.
//
// The grid is the product of every knob's values. A coarse pass runs each numeric list (max_seqs,
// max_batched_tokens, chunk, micro_batches, mtp) at every other value, its first and last always;
// the categorical ones (chip, sharding, disaggregation) whole. Refinement then runs every unrun
// neighbour (one step along one numeric list) of each point on a front or best for its chip, pass
// after pass until none is left. `exhaustive` runs the whole grid at once. The passes depend on
// the points' figures only, so the points run, and every byte out, are the same on any number of
// threads or on Dask.
//
// Shardings: the lists given (tp, ep, dp, each a filter on the enumeration when another is left
// out), else every one that fits: tp x dp = n chips for n from the smallest power of two that
// fits to max_chips (default that smallest), tp and ep powers of two, the model dividing over it
// and its weights leaving each DP rank a KV cache that holds the longest request.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "serving/serve.hpp"

namespace explore {

inline constexpr int kSearchSchemaVersion = 1;
/// A knob's list is at most this long; a grid at most kMaxSearchPoints points.
inline constexpr std::size_t kMaxKnobValues = 64;
inline constexpr std::size_t kMaxSearchPoints = 100'000;

/// A knob's values from "A,B,C" or "LO:HI" (LO, 2 LO, 4 LO, ... up to HI, HI included) or both
/// mixed ("1,4:16"); sorted, duplicates dropped. Throws hw::InputError naming `field` for a value
/// outside lo..hi, a bad range or more than kMaxKnobValues values.
std::vector<std::uint64_t> parse_knob_list(const std::string& text, const std::string& field, std::uint64_t lo,
                                           std::uint64_t hi);
/// --disagg's values: "none" (one instance) or P:D, comma separated. Throws hw::InputError naming
/// "disagg".
std::vector<std::pair<std::uint64_t, std::uint64_t>> parse_disagg_list(const std::string& text);

struct SearchSpace {
  std::vector<std::uint64_t> tp, ep, dp;  ///< empty: any (see the sharding rule above)
  std::uint64_t max_chips = 0;            ///< 0: the smallest count that fits
  std::vector<std::uint64_t> max_seqs{256}, max_batched_tokens{8192};
  std::vector<std::uint64_t> chunk{0};  ///< 0: the budget (max_batched_tokens)
  std::vector<std::uint64_t> micro_batches{1};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> disagg{{0, 0}};  ///< (0, 0): one instance
  std::vector<std::uint64_t> mtp{0};                                    ///< 0: no drafts
};

struct SearchSpec {
  std::vector<g5sim::Chip> chips;
  g5sim::Model model = g5sim::Model::from_file(g5sim::shipped_model_path());
  g5sim::Request base;  ///< the steps' options (tp, ep, dp, batch, ctx come from the search)
  serving::LoadSpec load;
  serving::ServeOptions engine;  ///< schedule, block_tokens, step cache, memory utilization, SLOs
  std::string accept;            ///< MTP's acceptance (with an mtp above 0)
  std::optional<std::uint64_t> accept_draw;
  SearchSpace space;
  std::string slo_stat = "p90";                     ///< p50, p90 or p99
  std::string objective = "tokens_per_s_per_chip";  ///< or tokens_per_joule
  bool exhaustive = false;
  unsigned jobs = 1;
};

/// g5sim.search()'s keywords (the command line's flags, with '_' for '-'): the space (tp, ep, dp,
/// max_chips, max_seqs, max_batched_tokens, chunk, micro_batches, disagg, mtp, as lists), accept,
/// slo_ttft_ms, slo_tpot_ms, slo_stat, objective, exhaustive (true/false), and serve's load and
/// engine keywords (trace: a file's path, rate, concurrency, requests, input_len, output_len, seed, schedule,
/// block_tokens, memory_utilization, step_cache; serving/serve_settings.hpp). The step cache
/// is bucket:10 unless given. Throws hw::InputError naming the keyword.
SearchSpec search_spec_of(std::vector<g5sim::Chip> chips, g5sim::Model model, g5sim::Request base,
                          const std::vector<std::pair<std::string, std::string>>& keywords);
/// The keywords search_spec_of takes beside serve's load and engine ones, in documentation order.
const std::vector<std::string>& search_keywords();

/// One point's knobs: indices into the spec's chips and its lists.
struct SearchKnobs {
  std::size_t chip = 0;
  std::uint64_t tp = 1, ep = 1, dp = 1;
  std::uint64_t max_seqs = 0, max_batched_tokens = 0, chunk = 0, micro_batches = 1, mtp = 0;
  std::uint64_t prefill_instances = 0, decode_instances = 0;
  std::string refusal;  ///< a given sharding that cannot serve: why (the point is not run)
};

/// What one point's serve gave; `error` when it could not run (the figures then 0).
struct PointOutcome {
  std::string error;
  std::uint64_t chips = 0;
  double tokens_per_s_per_chip = 0, tokens_per_s_per_user = 0;
  double ttft_p50_ms = 0, ttft_p90_ms = 0, ttft_p99_ms = 0, tpot_p50_ms = 0, tpot_p90_ms = 0, tpot_p99_ms = 0;
  double goodput_requests_per_s = 0;
  std::optional<double> joules_per_token;
};
/// An outcome as one line of text and back (Dask's workers send it), every number exactly.
std::string outcome_text(const PointOutcome& outcome);
PointOutcome outcome_of_text(const std::string& text);

struct SearchPoint {
  SearchKnobs knobs;
  PointOutcome outcome;
  std::uint64_t pass = 0;  ///< 1: the coarse pass; 2, 3, ...: refinement
  bool meets_slo = false, on_front = false, best = false, best_of_chip = false;
};

struct SearchReport {
  std::string model, model_source, load;
  std::vector<std::string> chips, chip_sources;
  std::optional<double> slo_ttft_ms, slo_tpot_ms;
  std::string slo_stat, objective, step_cache;
  SearchSpace space;
  std::size_t grid_points = 0;
  std::uint64_t passes = 0;
  std::vector<SearchPoint> points;               ///< the points run, in grid order
  std::vector<std::vector<std::size_t>> fronts;  ///< per chip: indices into points, by tokens/s per user
  std::optional<std::size_t> best;               ///< into points
  std::vector<std::optional<std::size_t>> best_of_chip;
};

/// The grid, its passes and its points' outcomes.
class DeploymentSearch {
 public:
  /// Checks the spec (InputError naming the knob, ConfigError for a trace) and lays out the grid.
  explicit DeploymentSearch(SearchSpec spec);

  std::size_t grid_size() const { return grid_.size(); }
  const SearchKnobs& knobs(std::size_t index) const { return grid_.at(index); }
  /// The points to run next (grid indices, ascending): the coarse pass first, then refinements;
  /// none when the search is done. Each call after the first needs the last pass recorded.
  std::vector<std::size_t> next_pass();
  /// Serves point `index` (on one thread; `shared` the chip's step store, or none).
  PointOutcome run(std::size_t index, const std::shared_ptr<serving::SharedStepTimes>& shared = {}) const;
  void record(std::size_t index, PointOutcome outcome);
  SearchReport report() const;

 private:
  SearchSpec spec_;
  std::vector<serving::ServeRequest> requests_;
  std::vector<SearchKnobs> grid_;
  std::vector<std::size_t> list_sizes_;                ///< the numeric lists' lengths: max_seqs .. mtp
  std::vector<std::vector<std::size_t>> coordinates_;  ///< each point's index along the numeric lists
  std::vector<std::optional<PointOutcome>> outcomes_;
  std::vector<std::uint64_t> pass_of_;
  std::uint64_t passes_ = 0;
  std::vector<std::size_t> last_;
  std::vector<std::size_t> neighbours(std::size_t index) const;
};

/// A whole search on spec.jobs threads (one step store per chip shared by its points).
/// `progress(done, total, pass)` after each point (total: the points of the passes so far).
SearchReport search(const SearchSpec& spec,
                    const std::function<void(std::size_t, std::size_t, std::uint64_t)>& progress = {});
/// The same with the points of each pass run by `run_pass` (Dask: the outcomes in the indices'
/// order), the same report.
SearchReport search_with(const SearchSpec& spec,
                         const std::function<std::vector<PointOutcome>(const std::vector<std::size_t>&)>& run_pass);

/// Every point as CSV, the report's JSON, the table (fronts and best points).
void write_search_csv(std::ostream& out, const SearchReport& report);
void write_search_json(std::ostream& out, const SearchReport& report);
void write_search_table(std::ostream& out, const SearchReport& report);

}  // namespace explore
