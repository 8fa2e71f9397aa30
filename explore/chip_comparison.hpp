#pragma once
// `g5sim compare`: the same workloads on several chips, one row per workload, one column group per
// chip, and each chip's speed against the first: speedup = first chip's latency / this chip's
// (2.0 = twice as fast), and speedup per chip = this chip's tokens/s per chip / the first's (the
// same number when both run on one deployment, which `compare` does unless --sharding auto).
//
// Table: workload (model, phase, batch, ctx, formats), then per chip: latency (ms), tokens/s,
// tokens/s per chip, deployment (tp/ep/dp), chips, bound_by, and (after the first) "x first" and,
// when some workload's deployments differ, "x/chip".
// CSV: a grid line (as a sweep's, explore/grid_sweep.hpp), then the columns of the report table
// "compare" (explore/explore_reports.cpp, docs/reference.md): the workload's, then each chip's
// (its label for <chip>), the speedups after the first chip.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "models/run_limits.hpp"

namespace explore {

/// The most workloads one comparison holds (its rows stay in memory until printed); a larger
/// study is a `g5sim sweep` over the chips (models/run_limits.hpp).
using models::kMaxComparedWorkloads;

/// What a comparison keeps of a run: its identity and figures, not its ops or internal record.
struct ComparedRun {
  std::string chip, model, phase, kv_dtype, mla_mode, weight_dtype, bound_by;
  std::string mix;  ///< the step's groups as --mix writes them (a uniform batch: one group)
  std::uint64_t batch = 0, kv_len = 0, q_len = 0, tp = 1, ep = 1, dp = 1, chips = 1, total_ps = 0;
  double tokens_per_s = 0, tokens_per_s_per_chip = 0;
  bool has_band = false;  ///< the run's error band (g5sim::Result::band_low_ps ...), when its chip has one
  std::uint64_t band_low_ps = 0, band_high_ps = 0;
  std::uint64_t bytes_per_chip = 0;  ///< weights and KV cache a chip holds
  bool fits = true;                  ///< bytes_per_chip within the chip's DDR
  std::vector<std::string> warnings;

  static ComparedRun of(const g5sim::Result& r);
};

/// rows[w][c]: workload w on chip c (every row has one run per chip, in the chips' order).
void write_comparison_table(std::ostream& out, const std::vector<std::vector<ComparedRun>>& rows);
/// `grid_line`: the first line, "# g5sim VERSION compare grid POINTS points sha256 HEX sharding fixed|auto".
void write_comparison_csv(std::ostream& out, const std::string& grid_line,
                          const std::vector<std::vector<ComparedRun>>& rows);

}  // namespace explore
