#pragma once
// `g5sim sweep` over a grid: every combination of chips x models x phases x KV formats x MLA modes
// x weight formats x batches x contexts, in that nesting (the context varies fastest), numbered
// from 0. Each point is one g5sim::simulate; its row carries the point's whole identity and the
// deployment it ran on (tp, ep, dp, chips), so rows of different shardings never mix unseen.
//
// CSV columns (tidy: one row per point, units in the names):
//   point,chip,model,phase,batch,ctx,q_len,kv_dtype,mla_mode,prefill_mla_mode,weight_dtype,
//   tp,ep,dp,chips,total_ns,tokens_per_s,kv_cache_read_bytes,kv_cache_read_ns,fa2_ns,regime,bound_by
//   [,head_split_total_ns,head_split_kv_cache_read_bytes]   (--head-split; empty for prefill
//                                                            points, whose attention has no such split)
// kv_cache_read_* and fa2_ns add up over the layers of a step. JSON lines (--json) hold the same
// fields, one object per point. A shard I/N (0 <= I < N) holds the points p with p mod N == I;
// merge_sweeps() puts shards back together into the bytes of the unsharded file.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "models/run_limits.hpp"
#include "tools/cli_error.hpp"

namespace tools {

/// The lists a grid is made of; empty lists take the request's single value.
struct SweepGrid {
  std::vector<std::string> chips, models;  ///< config paths ("" = the shipped one)
  std::vector<std::string> phases, kv_dtypes, mla_modes, weight_dtypes;
  std::vector<std::uint64_t> batches;  ///< empty: one per DP rank
  std::vector<std::uint64_t> contexts;
};

struct SweepPoint {
  std::uint64_t index = 0;  ///< its number in the whole grid
  std::size_t chip = 0, model = 0;
  std::string phase, kv_dtype, mla_mode, weight_dtype;
  std::optional<std::uint64_t> batch;
  std::uint64_t ctx = 0;
};

/// The most points a grid may have (2^32): points are made one at a time from their number, so
/// a large grid costs no memory, but one past this could not finish.
using models::kMaxGridPoints;

/// The number of points: the product of the lists' lengths (an empty list counts one). Throws
/// CliError past kMaxGridPoints.
std::uint64_t grid_size(const SweepGrid& grid);
/// Point `index` (< grid_size(grid)) of the grid.
SweepPoint grid_point(const SweepGrid& grid, std::uint64_t index);
/// Every point of the grid in order, or those of shard `shard` of `shards` (round robin), held
/// in memory: for small grids (a comparison, tests). A sweep walks grid_point instead.
std::vector<SweepPoint> grid_points(const SweepGrid& grid, std::uint64_t shard = 0, std::uint64_t shards = 1);

/// The request of a point: `base` with the point's values.
g5sim::Request point_request(const g5sim::Request& base, const SweepPoint& point);

void write_sweep_csv_header(std::ostream& out, bool head_split);
/// head_split_columns: the --head-split columns are there; `head_split` is the point's run with
/// attention split by heads, or null when it has none (a prefill point: empty cells, JSON null).
void write_sweep_csv_row(std::ostream& out, const SweepPoint& point, const g5sim::Result& result,
                         bool head_split_columns, const g5sim::Result* head_split);
void write_sweep_json_line(std::ostream& out, const SweepPoint& point, const g5sim::Result& result,
                           bool head_split_columns, const g5sim::Result* head_split);

/// Joins sweep CSV shards (the same header, points that together are 0..n-1 once each) into the
/// unsharded file's bytes. Throws CliError naming the file and line of any mismatch.
std::string merge_sweeps(const std::vector<std::string>& paths);

}  // namespace tools
