#pragma once
// Output formats. All numbers are printed from integers or with fixed formats, so the same run
// gives byte-identical output. Times inside are picoseconds; outputs say nanoseconds with three
// decimals (exact).
//
// JSON (g5sim run --json): {"chip", "model", "workload": {...}, "total_ns", "regime",
//   "hbm_bytes", "flops", "ops": [{"name", "kind", "shape", "engines", "op_start_ns",
//   "op_end_ns", "hbm_bytes", "flops", "kv_bytes", "peak_lmem_bytes", "roofline_ns", "regime"}],
//   "commands": {"tiu", "gdma", "sdma"}}
// CSV (g5sim sweep): ctx,batch,total_ns,kv_cache_read_bytes,kv_cache_read_ns,fa2_ns,regime

#include <ostream>
#include <string>

#include "hw/chip.hpp"
#include "models/model_spec.hpp"
#include "models/workload.hpp"
#include "ops/lowering.hpp"
#include "ops/timeline.hpp"

namespace tools {

struct RunDescription {
  const hw::Chip& chip;
  const models::ModelSpec& model;
  const models::Workload& workload;
  const ops::LoweringOptions& options;
};

/// "1234.567" for 1234567 ps.
std::string format_ns(sim::Tick ps);

void write_table(std::ostream& out, const RunDescription& run, const ops::Timeline& timeline);
void write_json(std::ostream& out, const RunDescription& run, const ops::Timeline& timeline);
void write_sweep_header(std::ostream& out);
void write_sweep_row(std::ostream& out, const models::Workload& workload, const ops::Timeline& timeline);

}  // namespace tools
