// Fuzzes the model reader, as strict YAML and as a Hugging Face config.json, and the per-chip
// footprint derived from a model.
#include "fuzz_common.hpp"
#include "hw/config_error.hpp"
#include "models/memory_footprint.hpp"
#include "models/model_spec.hpp"
#include "models/workload.hpp"

namespace {

void use(const models::ModelSpec& m) {
  auto w = models::make_workload(models::Phase::decode, 4, 4096, std::nullopt, models::KvFormat::bf16);
  volatile std::uint64_t sink = models::chip_footprint(m, w, models::Parallelism{1, 1, 1}).total();
  (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::text_of(data, size);
  try {
    use(models::model_from_yaml(text, "fuzz-model"));
  } catch (const hw::ConfigError&) {
  }
  try {
    use(models::model_from_hf_json(text, "fuzz-config.json"));
  } catch (const hw::ConfigError&) {
  }
  return 0;
}
