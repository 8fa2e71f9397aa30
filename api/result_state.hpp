#pragma once
// What g5sim::Result keeps of a run for the outputs it can still write (the JSON and the table,
// on demand) and for the front ends inside the project (the CLI's sweep rows and Chrome trace).
// Not installed: the public API stops at <g5sim/g5sim.hpp>.

#include <optional>
#include <utility>

#include "api/report.hpp"
#include "api/simulation.hpp"
#include "g5sim/g5sim.hpp"
#include "hw/chip.hpp"
#include "models/memory_footprint.hpp"
#include "models/model_spec.hpp"
#include "models/parallelism.hpp"
#include "models/workload.hpp"
#include "ops/lowering.hpp"
#include "ops/timeline.hpp"

namespace g5sim {

struct Chip::Data {
  hw::Chip chip;
};

struct Model::Data {
  models::ModelSpec spec;
};

/// A restored result's outputs (Result::restore): it has no State.
struct Result::Saved {
  std::string json, table;
};

struct Result::State {
  State(Chip c, Model m) : chip(std::move(c)), model(std::move(m)) {}

  Chip chip;  ///< shares the caller's data
  Model model;
  models::Workload workload;  ///< the global step (batch over all DP ranks)
  ops::LoweringOptions options;
  api::Scope scope = api::Scope::step;
  models::StepPart part = models::StepPart::whole;  ///< a side of the step (api/step_part.hpp)
  std::uint64_t layers = 0;
  std::uint64_t micro_batches = 1;
  std::uint64_t host_launch_ns = 0;
  models::Parallelism parallelism;
  bool automatic_sharding = false;
  models::MemoryFootprint footprint;
  ops::Timeline timeline;
  std::optional<api::RuntimeReport> runtime;  ///< a runtime's charge (Request::runtime), none for the chip alone
  /// The op graph, commands and their records: only with Request::keep_commands.
  std::optional<api::Simulation> simulation;

  api::RunDescription description() const {
    api::RunDescription d{chip.data().chip, model.data().spec, workload,           options,  scope,
                          layers,           parallelism,       automatic_sharding, footprint};
    d.micro_batches = micro_batches;
    d.host_launch_ns = host_launch_ns;
    d.runtime = runtime ? &*runtime : nullptr;
    return d;
  }
};

}  // namespace g5sim
