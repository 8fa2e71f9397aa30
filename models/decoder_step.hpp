#pragma once
// One whole step of a decoder-only model: embedding rows, L decoder layers (attention block +
// FFN block), final norm and lm_head.
//   embedding    gathers the T token rows of the table ([T, H]): every new token of every
//                sequence (models/workload.hpp: T = the sum of count x q_len over the groups)
//   layers 0..L-1 (models/attention_block.hpp, models/ffn_block.hpp), each fed by the previous
//   final_norm   RMSNorm over the rows that need logits
//   lm_head      [rows, H] x [H, vocab]
// Rows that need logits (Workload::logit_rows): every new token of a decode-path sequence
// (q_len > 1 verifies drafted tokens), the last token of each prefill-path sequence (a prompt
// or a chunk). With tp > 1 each chip computes
// vocab / tp logits (gathering them is left to the sampler).

#include <cstdint>
#include <optional>

#include "models/expert_routing.hpp"
#include "models/model_spec.hpp"
#include "models/parallelism.hpp"
#include "models/step_part.hpp"
#include "models/workload.hpp"
#include "ops/op_graph.hpp"

namespace models {

struct StepOptions {
  std::optional<std::uint64_t> layers;  ///< simulate only the first N layers (--layers)
  /// Micro-batches (--micro-batches): the chip's sequences in N equal groups (a mix's or a serving
  /// step's groups: dealt round robin over min(N, sequences) groups, their counts within one of
  /// each other), each running every layer on its own (its own attention, routing and weight
  /// reads); in each MoE layer, every group's attention and routing is queued before any group's
  /// experts, so one group computes while another's tokens cross chips (DeepSeek's
  /// two-micro-batch overlap).
  std::uint64_t micro_batches = 1;
  const ExpertLoad* expert_load = nullptr;
  Parallelism parallelism;
  /// The host launches each layer as a program of its own (--host-launch-ns; 0: the step is one
  /// program). Sophgo's demos run every decoder block as its own network, launched from the host
  /// when the previous one has returned: layer l starts with a host_launch op of this length
  /// that waits for every op of layer l - 1 (the embedding for layer 0) and that every op of
  /// layer l waits for, so nothing overlaps the launch, not even a weight prefetch.
  std::uint64_t host_launch_ns = 0;
  StepPart part = StepPart::whole;
};

/// One chip's share of the step of the global `workload` (batch over all DP ranks). Throws
/// hw::ConfigError when --layers exceeds the model, the sharding does not divide, the expert
/// load does not fit, or micro_batches does not divide a uniform batch's sequences.
ops::OpGraph build_decoder_step(const ModelSpec& model, const Workload& workload, const StepOptions& options);

}  // namespace models
