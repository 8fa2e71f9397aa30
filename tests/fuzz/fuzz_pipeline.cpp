// Fuzzes a whole small simulation from fuzzed configs: option bytes, then a chip YAML and a model
// (YAML, or config.json when it starts with '{') separated by a line "@@@@". It runs the block
// `g5sim run --scope block` would (automatic or 1x1x1 sharding), writes the table, the JSON and the
// Chrome trace, and checks that the JSON is valid and that no op ends before it starts. With bit 3
// of the fourth byte it also runs up to 7 layers of the step with and without layer replay
// (bit 4: two micro-batches; bit 5: up to 13 layers, room for two runs or units of two layers)
// and checks that both write the same JSON but for its replay line.
// Runs are capped at 200,000 commands (the work bound refuses bigger ones before building them).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "api/report.hpp"
#include "api/simulation.hpp"
#include "api/trace_writer.hpp"
#include "fuzz_common.hpp"
#include "hw/chip.hpp"
#include "hw/config_error.hpp"
#include "models/memory_footprint.hpp"
#include "models/model_spec.hpp"
#include "models/parallelism.hpp"
#include "models/workload.hpp"
#include "tools/output_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const std::uint8_t a = data[0], b = data[1], c = data[2], d = data[3];
  const std::string rest = fuzz::text_of(data + 4, size - 4);
  const auto split = rest.find("\n@@@@\n");
  if (split == std::string::npos) return 0;
  try {
    const hw::Chip chip = hw::chip_from_yaml(rest.substr(0, split), "fuzz-chip");
    const std::string model_text = rest.substr(split + 6);
    const models::ModelSpec model = !model_text.empty() && model_text[0] == '{'
                                        ? models::model_from_hf_json(model_text, "fuzz-config.json")
                                        : models::model_from_yaml(model_text, "fuzz-model");
    const bool decode = (a & 1) != 0;
    const std::uint64_t batch = 1 + (b & 3);
    const std::uint64_t ctx = decode ? 2 + (static_cast<std::uint64_t>(c) << 4) : 1 + c;
    const models::KvFormat kv = (a & 6) == 2   ? models::KvFormat::fp8
                                : (a & 6) == 4 ? models::KvFormat::fp8_flashmla
                                               : models::KvFormat::bf16;
    models::Workload w =
        models::make_workload(decode ? models::Phase::decode : models::Phase::prefill, batch, ctx, std::nullopt, kv);
    w.mla_mode = static_cast<models::MlaMode>((a >> 3) % 3);
    w.prefill_mla_mode = static_cast<models::MlaMode>((a >> 5) % 3);
    ops::LoweringOptions options;
    options.max_commands = 200'000;
    options.attn_split = (d & 1) ? ops::AttentionSplit::head : ops::AttentionSplit::seq;
    if (d & 2) options.kv_read_engine = chip.engines.back().name;
    models::Parallelism p{1, 1, 1};
    if (d & 4) {
      const auto chosen = models::auto_sharding(model, w, true, chip.ddr_capacity_bytes);
      p = chosen.parallelism;
    }
    const api::Simulation r = api::simulate_block(chip, model, w, options, p);
    for (const auto& op : r.timeline.ops) {
      if (op.end < op.start) std::abort();
    }
    const models::MemoryFootprint footprint = models::chip_footprint(model, w, p);
    const api::RunDescription run{chip, model, w, options, api::Scope::block, 1, p, false, footprint};
    std::ostringstream table, json, trace;
    api::write_table(table, run, r.timeline);
    api::write_json(json, run, r.timeline);
    api::write_chrome_trace(trace, chip, r.graph, r.lowered, r.trace, r.timeline, {});
    if (!nlohmann::json::accept(json.str()) || !nlohmann::json::accept(trace.str())) std::abort();
    if ((d & 8) && model.num_hidden_layers >= 5) {
      models::StepOptions step;
      step.layers = std::min<std::uint64_t>(model.num_hidden_layers, (d & 32) ? 13 : 7);
      step.parallelism = p;
      step.micro_batches = (d & 16) && w.sequences() % 2 == 0 ? 2 : 1;
      const api::Simulation replayed = api::simulate_step(chip, model, w, step, options, true);
      const api::Simulation full = api::simulate_step(chip, model, w, step, options, false);
      api::RunDescription step_run = run;
      step_run.scope = api::Scope::step;
      step_run.layers = *step.layers;
      step_run.micro_batches = step.micro_batches;
      auto without_replay = [&](const ops::Timeline& tl) {
        std::ostringstream out;
        api::write_json(out, step_run, tl);
        std::string text = out.str();
        const auto at = text.find("  \"replay\":");
        return at == std::string::npos ? text : text.substr(0, at);
      };
      if (without_replay(replayed.timeline) != without_replay(full.timeline)) std::abort();
    }
  } catch (const hw::ConfigError&) {
  }
  return 0;
}
