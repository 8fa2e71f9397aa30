#pragma once
// Which run options a workload can feel. A flag given for an option that changes nothing in the
// run it is given to is a mistake the user should hear about (a decode step does not read
// --prefill-mla-mode; a GQA model has no --mla-mode), not something to drop in silence.
//
// The rules, for an option given explicitly:
//   mla_mode           the model uses MLA (its cache layout and decode compute)
//   prefill_mla_mode   the model uses MLA and the phase is prefill
//   kv_read_engine     the phase is decode (prefill reads no history: no kv_cache_read node)
//   attn_split         the phase is decode (prefill attention splits over query blocks)
//   weight_group       the weights are int8 or int4 (--weight-dtype, else the model config's)
//   replay             the scope is step (one attention block has no layers to replay)
// The library refuses the combinations that are contradictions (--layers with --scope block, an
// expert load on a dense model, a prefill q_len other than ctx); these are the quiet ones.
//
// A grid (sweep, compare) may mix phases and models: there an option is an error only when no
// point of the grid feels it.

#include <string>

#include "g5sim/g5sim.hpp"

namespace tools {

/// Why the Request field `field` changes nothing for `model` under `request`; "" when it applies
/// (or when it is not one of the fields above).
std::string why_option_does_not_apply(const std::string& field, const g5sim::Model& model,
                                      const g5sim::Request& request);

}  // namespace tools
