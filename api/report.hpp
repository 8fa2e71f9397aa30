#pragma once
// Output formats. All numbers are printed from integers or with fixed formats, so the same run
// gives byte-identical output. Times inside are picoseconds; outputs say nanoseconds with three
// decimals (exact).
//
// JSON (g5sim run --json): the keys and their meaning are docs/schema/run.schema.json's (checked
//   by tests/test_json_schema.cpp); "commands" has one key per engine of the chip, "replay" says
//   how the run was done (api/simulation.hpp).
// The table (g5sim run). A sweep's CSV and JSON lines are explore/grid_sweep.hpp's.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "hw/chip.hpp"
#include "models/memory_footprint.hpp"
#include "models/model_spec.hpp"
#include "models/parallelism.hpp"
#include "models/workload.hpp"
#include "ops/lowering.hpp"
#include "ops/timeline.hpp"

namespace api {

enum class Scope { block, step };

/// The runtime a run was charged (g5sim/runtime.hpp), for the outputs.
struct RuntimeReport {
  std::string name, version, source, sha256, adds;
  g5sim::RuntimeParts parts;
  double tensor_efficiency = 1;  ///< the runtime's (below 1: the table names the compute floor's part)
  bool host_launches = false;    ///< the runtime issues kernels from the host at a cost (the table names the waits)
};

struct RunDescription {
  const hw::Chip& chip;
  const models::ModelSpec& model;
  const models::Workload& workload;  ///< the global step (batch over all DP ranks)
  const ops::LoweringOptions& options;
  Scope scope = Scope::block;
  std::uint64_t layers = 1;  ///< decoder layers simulated
  models::Parallelism parallelism{};
  bool automatic_sharding = false;
  models::MemoryFootprint footprint{};
  std::uint64_t micro_batches = 1;
  std::uint64_t host_launch_ns = 0;        ///< the host's launch of each layer (StepOptions)
  const RuntimeReport* runtime = nullptr;  ///< the runtime's charge; none: the chip alone
};

/// The step as its software runs it: the simulated timeline plus the runtime's charge beyond its
/// layer launches (which are on the timeline); the timeline alone without a runtime.
sim::Tick step_time(const RunDescription& run, const ops::Timeline& timeline);

/// Time, bytes and work of all ops of one kind.
struct KindSummary {
  ops::OpKind kind;
  std::uint64_t ops = 0;
  sim::Tick busy = 0;  ///< length of the union of the ops' intervals (kinds may overlap each other)
  std::uint64_t hbm_bytes = 0, c2c_bytes = 0, flops = 0;
  double compute_ns = 0, memory_ns = 0, comm_ns = 0;
  double energy_pj = 0;  ///< the ops' dynamic energy
  ops::Regime regime = ops::Regime::memory;
  std::string bound_by = "-";  ///< the bound_by of most of the kind's op time
};
std::vector<KindSummary> summarize_by_kind(const ops::Timeline& timeline);

/// A run's energy on a chip with an `energy` section (hw/energy.hpp): its ops' dynamic energy, the
/// chip's static power over the run, their sum over the run's time, and per token of the chip's
/// share of a step (a block has no tokens of its own).
struct RunEnergy {
  double dynamic_pj = 0, static_pj = 0, total_pj = 0;
  double average_w = 0;
  std::optional<double> tdp_w, joules_per_token;
};
std::optional<RunEnergy> run_energy(const RunDescription& run, const ops::Timeline& timeline);

/// The engine of the decode history read: the one the options name, or the chip's default.
std::string kv_read_engine_name(const hw::Chip& chip, const ops::LoweringOptions& options);

/// Tokens per second of the whole deployment: B * q_len tokens (B over all DP ranks) per step.
/// "decode", "prefill", or "mixed" when the step has groups on both paths.
std::string phase_name(const models::Workload& workload);
double tokens_per_s(const models::Workload& workload, sim::Tick total);
/// The same over the deployment's chips: tokens_per_s / chips (what one chip delivers).
double tokens_per_s_per_chip(const models::Workload& workload, sim::Tick total, const models::Parallelism& p);

/// The run's error band (hw/error_band.hpp): a block run takes the chip's `block` band, a decode
/// or prefill step that kind's, a mixed step the union of both; a kind without rows of its own
/// the `all` band. Without a recorded band, no bounds, and `basis` says why.
struct RunBand {
  std::optional<sim::Tick> low, high;
  double coverage = 0;
  std::string basis;
};
RunBand run_band(const RunDescription& run, sim::Tick total);

/// "1234.567" for 1234567 ps.
std::string format_ns(sim::Tick ps);

void write_table(std::ostream& out, const RunDescription& run, const ops::Timeline& timeline);
void write_json(std::ostream& out, const RunDescription& run, const ops::Timeline& timeline);

}  // namespace api
