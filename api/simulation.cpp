#include "api/simulation.hpp"

#include "models/attention_block.hpp"
#include "sim/simulator.hpp"

namespace api {

Simulation simulate_graph(const hw::Chip& chip, ops::OpGraph graph, const ops::LoweringOptions& options) {
  Simulation out;
  out.graph = std::move(graph);
  out.lowered = ops::lower(out.graph, chip, options);
  out.trace = sim::Simulator(chip).run(out.lowered.program);
  out.timeline = ops::build_timeline(out.graph, chip, out.lowered, out.trace);
  return out;
}

Simulation simulate_block(const hw::Chip& chip, const models::ModelSpec& model, const models::Workload& workload,
                          const ops::LoweringOptions& options, const models::Parallelism& parallelism) {
  models::validate_parallelism(parallelism, model, workload);
  return simulate_graph(
      chip, models::build_attention_block(model, models::chip_workload(workload, parallelism), parallelism.tp),
      options);
}

Simulation simulate_step(const hw::Chip& chip, const models::ModelSpec& model, const models::Workload& workload,
                         const models::StepOptions& step, const ops::LoweringOptions& options) {
  return simulate_graph(chip, models::build_decoder_step(model, workload, step), options);
}

}  // namespace api
