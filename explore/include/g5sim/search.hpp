#pragma once
// g5sim search from C++: the deployments of a model on one or more chips, each serving the same
// requests (g5sim/serve.hpp), and which of them are worth having.
//
// A point p is a chip, a sharding (tp, ep, dp) and a value of every searchable knob (the knob
// tables' kSearchList rows: the engine's limits, micro-batches, disaggregation, MTP drafts).
// Its figures come from one serve:
//     x(p) = output tokens/s per chip    (output tokens / duration / the deployment's chips)
//     y(p) = output tokens/s per user    (the mean over requests of (output - 1) / decode time)
// and TTFT, TPOT (p50, p90, p99), goodput, J per token (a chip with an `energy` section).
//
// Pareto front of a chip: its points that no point of the same chip dominates, where
//     p dominates q  <=>  x(p) >= x(q), y(p) >= y(q), and one of the two is strictly greater.
// Points equal in both are on the front together. Every point off the front is dominated by one
// on it (domination is transitive and the points are finitely many).
//
// Meets the SLO: TTFT and TPOT at the SLO's statistic (slo_stat: p50, p90 or p99 over requests;
// p90 by default, as DistServe's 90 % attainment) within the SLOs given (no SLO: every point
// meets). Best point: of those meeting the SLO, the most by the objective (tokens/s per chip, or
// tokens per joule), ties to the more tokens/s per user, then to the earlier point of the grid.
//
// The grid: per chip and sharding, the product of the text lists (disagg; whole) and of the
// numeric lists (the counts). A coarse pass runs each numeric list at every other value, its
// first and last always. Refinement then runs every unrun neighbour (one step along one numeric
// list) of each point on a front or best for its chip, pass after pass until none is left.
// `exhaustive` runs the whole grid at once. The passes depend on the points' figures only, so the
// points run, and every byte out, are the same on any number of threads or on Dask.
//
// Shardings: the lists given (tp, ep, dp), else every one that fits: tp x dp = n chips for n from
// the smallest that fits to max_chips (default that smallest), a degree left out running over the
// powers of two (a list given alone is taken as it is), the model dividing over it and its weights
// leaving each DP rank a KV cache that holds the longest request. When none serves, the error
// gives each value given its first refusal.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/design.hpp"
#include "g5sim/g5sim.hpp"
#include "g5sim/serve.hpp"

namespace g5sim {

inline constexpr int kSearchSchemaVersion = 1;
/// A knob's list is at most this long; a grid at most kMaxSearchPoints points.
inline constexpr std::size_t kMaxKnobValues = 64;
inline constexpr std::size_t kMaxSearchPoints = 100'000;

struct SearchSpec {
  std::vector<Chip> chips;
  Model model = Model::from_file(shipped_model_path());
  Request base;           ///< the steps' options (tp, ep, dp and the batch come from the search)
  ServeSettings serve;    ///< every point's load, engine and SLOs (its step cache bucket:10 unless given)
  DesignSettings design;  ///< the search's own knobs: tp, ep, dp, max_chips, slo_stat, objective, exhaustive, jobs
  /// A list of values per searchable knob given ("chunk" -> "256:2048", "mtp" -> "0,1,2",
  /// "disagg" -> "none,1:1"); a knob not listed keeps serve's value (or its run option's).
  KnobItems lists;
  std::uint64_t max_steps = kMaxServeSteps;  ///< every point's serve takes at most this many steps
};

/// A search from knob items, as the command line's flags and g5sim.search()'s keywords give them:
/// a searchable knob's list, a serve knob search takes (kSearchKnob: the load, the engine, the
/// SLOs), or one of its own (design_knobs()). Throws ConfigError naming the knob.
SearchSpec search_spec_of(std::vector<Chip> chips, Model model, Request base, const KnobItems& items);

/// One dimension of the grid: a searchable knob and its values (numbers sorted, texts as given).
struct SearchDimension {
  const Knob* knob = nullptr;
  std::vector<std::string> values;
  bool numeric() const { return knob->type == KnobType::count; }
};

/// One point's knobs: its chip (an index into the spec's), its sharding and each dimension's
/// value as in effect (chunk 0: the point's budget).
struct SearchKnobs {
  std::size_t chip = 0;
  std::uint64_t tp = 1, ep = 1, dp = 1;
  std::vector<std::string> values;  ///< by dimension
  std::string refusal;              ///< a given sharding that cannot serve: why (the point is not run)
};

/// What one point's serve gave; `error` when it could not run (the figures then 0).
struct PointOutcome {
  std::string error;
  std::uint64_t chips = 0;
  double tokens_per_s_per_chip = 0, tokens_per_s_per_user = 0;
  double ttft_p50_ms = 0, ttft_p90_ms = 0, ttft_p99_ms = 0, tpot_p50_ms = 0, tpot_p90_ms = 0, tpot_p99_ms = 0;
  double goodput_requests_per_s = 0;
  std::optional<double> joules_per_token;
  /// What a chip of the deployment holds: its weights and the KV cache the engine reserved for it,
  /// and whether that is within its DDR (a searched sharding is one whose weights leave room).
  std::uint64_t bytes_per_chip = 0;
  bool fits = true;
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
  std::string runtime;  ///< the runtime every point's steps name (its name and version); "" for the chip alone
  /// Its calibrated bands on TTFT, TPOT and throughput (the same ratios at every point): how far
  /// each point's figures may be from a measurement.
  std::optional<RuntimeBands> runtime_bands;
  std::optional<std::vector<std::uint64_t>> tp, ep, dp;  ///< the sharding lists given
  std::optional<std::uint64_t> max_chips;
  std::uint64_t top = 10;  ///< front rows the table lists per chip (points alike in every figure: one)
  std::vector<SearchDimension> dimensions;
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
  /// Checks the spec (ConfigError naming the knob, or a trace's) and lays out the grid.
  explicit DeploymentSearch(SearchSpec spec);
  ~DeploymentSearch();
  DeploymentSearch(const DeploymentSearch&) = delete;
  DeploymentSearch& operator=(const DeploymentSearch&) = delete;

  std::size_t grid_size() const;
  const SearchKnobs& knobs(std::size_t index) const;
  /// The points to run next (grid indices, ascending): the coarse pass first, then refinements;
  /// none when the search is done. Each call after the first needs the last pass recorded.
  std::vector<std::size_t> next_pass();
  /// Serves point `index` (on one thread; `shared` the chip's step store, or none).
  PointOutcome run(std::size_t index, const std::shared_ptr<SharedStepTimes>& shared = {}) const;
  void record(std::size_t index, PointOutcome outcome);
  SearchReport report() const;

 private:
  struct Grid;
  std::unique_ptr<Grid> grid_;
};

/// A whole search on the design's jobs threads (one step store per chip shared by its points).
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

}  // namespace g5sim
