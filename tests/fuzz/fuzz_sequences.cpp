// Fuzzes the step's groups of sequences: the --mix text and the --seqs CSV reader (the first
// byte: decode_max_q 1..256; the second: which of the two, and dp 1..128 for the deal over DP
// ranks), then the checks of a mixed workload, its DP share and its attention block on
// DeepSeek-V3 when the step is small enough to build quickly.
#include <string>

#include "../test_configs.hpp"
#include "fuzz_common.hpp"
#include "hw/config_error.hpp"
#include "models/attention_block.hpp"
#include "models/model_spec.hpp"
#include "models/parallelism.hpp"
#include "models/workload.hpp"

namespace {

const models::ModelSpec& v3() {
  static const models::ModelSpec m = models::model_from_yaml(test_configs::kDeepSeekV3, "fuzz-v3");
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::uint64_t decode_max_q = 1 + data[0];
  const bool csv = (data[1] & 1) != 0;
  const std::uint64_t dp = 1 + (data[1] >> 1);
  const std::string text = fuzz::text_of(data + 2, size - 2);
  try {
    const auto groups =
        csv ? models::parse_sequence_text(text, "fuzz-seqs.csv", decode_max_q) : models::parse_mix(text, decode_max_q);
    const models::Workload w = models::make_mixed_workload(groups, models::KvFormat::bf16, csv ? "seqs" : "mix");
    (void)models::mix_text(w.groups);
    const models::Parallelism p{1, 1, dp};
    models::validate_parallelism(p, v3(), w);
    const models::Workload chip = models::chip_workload(w, p);
    if (chip.tokens() <= 4096 && chip.history_tokens() <= (std::uint64_t{1} << 20)) {
      (void)models::build_attention_block(v3(), chip);
    }
  } catch (const hw::ConfigError&) {
  }
  return 0;
}
