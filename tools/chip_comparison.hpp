#pragma once
// `g5sim compare`: the same workloads on several chips, one row per workload, one column group per
// chip, and each chip's speed against the first (first chip's latency / this chip's: 2.0 = twice
// as fast).
//
// Table: workload (model, phase, batch, ctx, formats), then per chip: latency (ms), tokens/s,
// deployment (tp/ep/dp), bound_by, and (after the first) "x first".
// CSV: model,phase,batch,ctx,q_len,kv_dtype,mla_mode,weight_dtype, then per chip C (its name):
//   C_total_ns,C_tokens_per_s,C_tp,C_ep,C_dp,C_bound_by, and after the first C_speedup.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "models/run_limits.hpp"

namespace tools {

/// The most workloads one comparison holds (its rows stay in memory until printed); a larger
/// study is a `g5sim sweep` over the chips (models/run_limits.hpp).
using models::kMaxComparedWorkloads;

/// What a comparison keeps of a run: its identity and figures, not its ops or internal record.
struct ComparedRun {
  std::string chip, model, phase, kv_dtype, mla_mode, weight_dtype, bound_by;
  std::uint64_t batch = 0, kv_len = 0, q_len = 0, tp = 1, ep = 1, dp = 1, total_ps = 0;
  double tokens_per_s = 0;
  std::vector<std::string> warnings;

  static ComparedRun of(const g5sim::Result& r);
};

/// rows[w][c]: workload w on chip c (every row has one run per chip, in the chips' order).
void write_comparison_table(std::ostream& out, const std::vector<std::vector<ComparedRun>>& rows);
void write_comparison_csv(std::ostream& out, const std::vector<std::vector<ComparedRun>>& rows);

}  // namespace tools
