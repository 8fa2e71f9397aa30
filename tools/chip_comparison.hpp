#pragma once
// `g5sim compare`: the same workloads on several chips, one row per workload, one column group per
// chip, and each chip's speed against the first (first chip's latency / this chip's: 2.0 = twice
// as fast).
//
// Table: workload (model, phase, batch, ctx, formats), then per chip: latency (ms), tokens/s,
// deployment (tp/ep/dp), bound_by, and (after the first) "x first".
// CSV: model,phase,batch,ctx,q_len,kv_dtype,mla_mode,weight_dtype, then per chip C (its name):
//   C_total_ns,C_tokens_per_s,C_tp,C_ep,C_dp,C_bound_by, and after the first C_speedup.

#include <ostream>
#include <vector>

#include "g5sim/g5sim.hpp"

namespace tools {

/// rows[w][c]: workload w on chip c (every row has one result per chip, in the chips' order).
void write_comparison_table(std::ostream& out, const std::vector<std::vector<g5sim::Result>>& rows);
void write_comparison_csv(std::ostream& out, const std::vector<std::vector<g5sim::Result>>& rows);

}  // namespace tools
