#include "tools/option_scope.hpp"

#include <fmt/format.h>

#include "api/result_state.hpp"
#include "models/model_spec.hpp"
#include "models/weight_format.hpp"

namespace tools {

std::string why_option_does_not_apply(const std::string& field, const g5sim::Model& model,
                                      const g5sim::Request& request) {
  const bool mla = model.attention() == "mla";
  if ((field == "mla_mode" || field == "prefill_mla_mode") && !mla) {
    return fmt::format("{} has GQA attention: MLA modes apply to MLA models only", model.name());
  }
  if (field == "prefill_mla_mode" && request.phase == "decode") {
    return "it sets MLA prefill compute, and this is a decode step";
  }
  if (field == "kv_read_engine" && request.phase == "prefill") {
    return "a prefill step reads no KV history (it has no kv_cache_read): the engine is decode's";
  }
  if (field == "attn_split" && request.phase == "prefill") {
    return "it splits decode attention over the cores; prefill attention splits by query blocks";
  }
  if (field == "weight_group") {
    const std::string dtype = request.weight_dtype.empty()
                                  ? std::string(models::name_of(model.data().spec.weight_dtype))
                                  : request.weight_dtype;
    if (dtype != "int8" && dtype != "int4") {
      return fmt::format("the weights are {}: scale groups apply to int8 and int4 weights", dtype);
    }
  }
  if (field == "replay" && request.scope == "block") {
    return "one attention block has no layers to replay";
  }
  return {};
}

}  // namespace tools
