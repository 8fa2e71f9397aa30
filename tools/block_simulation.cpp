#include "tools/block_simulation.hpp"

#include "models/mla_block.hpp"
#include "sim/simulator.hpp"

namespace tools {

BlockSimulation simulate_block(const hw::Chip& chip, const models::ModelSpec& model,
                               const models::Workload& workload, const ops::LoweringOptions& options) {
  BlockSimulation out;
  out.graph = models::build_mla_attention_block(model, workload);
  out.lowered = ops::lower(out.graph, chip, options);
  out.trace = sim::Simulator(chip).run(out.lowered.program);
  out.timeline = ops::build_timeline(out.graph, chip, out.lowered, out.trace);
  return out;
}

std::string default_chip_path() { return std::string(G5SIM_SOURCE_DIR) + "/configs/chips/sg2262.yaml"; }
std::string default_model_path() { return std::string(G5SIM_SOURCE_DIR) + "/configs/models/deepseek-v3.yaml"; }

}  // namespace tools
