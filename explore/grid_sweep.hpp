#pragma once
// `g5sim sweep` over a grid: every combination of chips x models x the run options' grid axes (the
// run-option table's kGridAxis rows: phase, q_len, mix, KV format, MLA mode, weight format,
// cores, tp, ep, dp, batch, context), nested in that order (grid_nesting(): the table's order,
// with the batch and then the context innermost, so the context varies fastest), numbered from 0.
// Each point is one g5sim::simulate; its row carries the point's whole identity and the
// deployment it ran on (tp, ep, dp, chips), so rows of different shardings never mix unseen. A
// grid of mixes (--mix A;B, or one --seqs file) has no context axis: each point's sequences are
// its mix.
//
// CSV columns (tidy: one row per point, units in the names): the report table "sweep"
// (explore/explore_reports.cpp, docs/reference.md): the point, chip and model, the run-option
// table's column options, the deployment and configs' identities, the figures, then
// --head-split's two and --keep-going's `error`.
// (ctx and q_len: the largest of a mix's groups; mix: the groups as --mix writes them, one group
// for a uniform batch.) kv_cache_read_* and fa2_ns add up over the layers of a step. JSON lines
// (--json) hold the same fields, one object per point. A shard I/N (0 <= I < N) holds the points
// p with p mod N == I; merge_sweeps() puts shards back together into the bytes of the unsharded
// file.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "hw/config_error.hpp"
#include "models/run_limits.hpp"

namespace explore {

/// The grid axes but the context (the table's kGridAxis rows), outermost first: the table's order
/// with the batch last. Chips and models are outside them, the context inside.
const std::vector<std::string>& grid_nesting();

/// One axis of a grid: a run option and its values, as text (each checked by set_option_text).
struct GridAxis {
  std::string option;
  std::vector<std::string> values;
};

/// The lists a grid is made of; an axis not given takes the request's single value.
struct SweepGrid {
  std::vector<std::string> chips, models;  ///< config names or paths ("" = the shipped one)
  std::vector<GridAxis> axes;              ///< in grid_nesting() order, each with one value or more
  std::vector<std::uint64_t> contexts;

  /// The axis of `option`, or nullptr when the grid has none.
  const GridAxis* axis(const std::string& option) const;
  /// Sets the axis of `option` (a grid_nesting() name) to `values`, in nesting order; no values
  /// removes it. Throws std::logic_error for a name that is no grid axis.
  void set_axis(const std::string& option, std::vector<std::string> values);
};

struct SweepPoint {
  std::uint64_t index = 0;  ///< its number in the whole grid
  std::size_t chip = 0, model = 0;
  std::vector<std::pair<std::string, std::string>> settings;  ///< (option, value): one per axis of the grid
  std::uint64_t ctx = 0;

  /// The point's value of `option`, or "" when the grid has no such axis.
  std::string value(const std::string& option) const;
  /// "batch 8, ctx 4096": the point's settings as a message names it.
  std::string describe() const;
};

/// The most points a grid may have (2^32): points are made one at a time from their number, so
/// a large grid costs no memory, but one past this could not finish.
using models::kMaxGridPoints;

/// The number of points: the product of the lists' lengths (an empty list counts one). Throws
/// hw::ConfigError past kMaxGridPoints.
std::uint64_t grid_size(const SweepGrid& grid);
/// Point `index` (< grid_size(grid)) of the grid.
SweepPoint grid_point(const SweepGrid& grid, std::uint64_t index);
/// Every point of the grid in order, or those of shard `shard` of `shards` (round robin), held
/// in memory: for small grids (a comparison, tests). A sweep walks grid_point instead.
std::vector<SweepPoint> grid_points(const SweepGrid& grid, std::uint64_t shard = 0, std::uint64_t shards = 1);

/// The request of a point: `base` with the point's values. Throws ConfigError (the option's
/// field) for a value the option does not take.
g5sim::Request point_request(const g5sim::Request& base, const SweepPoint& point);
/// Every value of every axis checked (as point_request would), so that a bad one is refused
/// before any point runs.
void check_grid_values(const SweepGrid& grid);

/// What the first line of a sweep CSV says of its grid, so that a file tells which grid it is a
/// part of and whether it is whole:
///   # g5sim VERSION sweep grid POINTS points sha256 HEX shard I/N
/// HEX: grid_fingerprint (the configs' bytes, the axes, the contexts, every fixed option).
struct GridHeader {
  std::string version;
  std::uint64_t points = 0;
  std::string sha256;
  std::uint64_t shard = 0, shards = 1;

  std::string line() const;
  /// Parses a first line; throws hw::ConfigError naming `path`:1 for anything else.
  static GridHeader parse(const std::string& line, const std::string& path);
};

/// SHA-256 of everything that makes the grid's rows: the chips' and models' config digests (in
/// their order), each axis and its values, the contexts, every fixed run option's value as the
/// table spells it, and the extra columns (--head-split).
std::string grid_fingerprint(const SweepGrid& grid, const std::vector<g5sim::Chip>& chips,
                             const std::vector<g5sim::Model>& models, const g5sim::Request& base, bool head_split);

/// The names tables show for `chips`: each chip's name, or "NAME (STEM)" (the config file's stem,
/// else its source) where two configs name their chip alike.
std::vector<std::string> chip_labels(const std::vector<g5sim::Chip>& chips);

/// The columns a sweep adds: --head-split's two, and --keep-going's `error` (the last).
struct SweepColumns {
  bool head_split = false;
  bool error = false;
};

/// One row: the point's run (and its --head-split run: null when it has none, a prefill point,
/// whose cells are then empty, JSON null), or, for a point that failed, why and what identifies it.
struct SweepRow {
  const SweepPoint* point = nullptr;
  std::string chip_label;                 ///< the point's chip as tables name it (chip_labels)
  const g5sim::Result* result = nullptr;  ///< null when the point failed
  const g5sim::Result* head_split = nullptr;
  std::string error;                                          ///< "" when it ran
  std::vector<std::pair<std::string, std::string>> identity;  ///< a failed point's known columns
};

/// A failed point's identity columns as far as the point, the request and the configs tell them
/// (the rest stay empty): its row under --keep-going.
std::vector<std::pair<std::string, std::string>> failed_point_identity(const SweepPoint& point,
                                                                       const g5sim::Request& base,
                                                                       const g5sim::Chip& chip,
                                                                       const g5sim::Model& model);

void write_sweep_csv_header(std::ostream& out, const GridHeader& grid, const SweepColumns& columns);
void write_sweep_csv_row(std::ostream& out, const SweepRow& row, const SweepColumns& columns);
void write_sweep_json_line(std::ostream& out, const SweepRow& row, const SweepColumns& columns);

/// Cells of a CSV line (RFC 4180 quotes: a comma inside quotes is text).
std::size_t csv_cell_count(const std::string& line);

/// Joins sweep CSV shards into the unsharded file's bytes: every file's grid line must name the
/// same grid (version, points, fingerprint, shard count) and a shard of its own, the column
/// lines must agree, every row must have the header's cells and a point of its file's shard,
/// and the points must be 0..POINTS-1 once each. Throws hw::ConfigError naming the file and line of
/// any mismatch, or the points no file has.
std::string merge_sweeps(const std::vector<std::string>& paths);

}  // namespace explore
