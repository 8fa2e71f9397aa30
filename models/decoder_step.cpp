#include "models/decoder_step.hpp"

#include <fmt/format.h>

#include "hw/config_error.hpp"
#include "models/attention_block.hpp"
#include "models/ffn_block.hpp"
#include "models/graph_helpers.hpp"

namespace models {

ops::OpGraph build_decoder_step(const ModelSpec& m, const Workload& global, const StepOptions& options) {
  const std::uint64_t layers = options.layers.value_or(m.num_hidden_layers);
  if (layers == 0 || layers > m.num_hidden_layers) {
    throw hw::InputError("layers", fmt::format("expected 1..{} ({} has {} layers), got {}", m.num_hidden_layers, m.name,
                                               m.num_hidden_layers, layers));
  }
  const Parallelism& p = options.parallelism;
  validate_parallelism(p, m, global);
  const Workload w = chip_workload(global, p);
  const std::uint64_t T = w.batch * w.q_len;
  if (options.expert_load) {
    if (!m.moe) throw hw::InputError("expert_load", fmt::format("{} has no MoE layers", m.name));
    options.expert_load->validate(m.num_hidden_layers, m.moe->first_k_dense_replace, m.moe->n_routed_experts,
                                  m.moe->num_experts_per_tok, routed_slots(m, w, p) / m.moe->num_experts_per_tok);
  }
  std::optional<ExpertShare> uniform;
  if (m.moe) uniform = expert_share(m, w, p, nullptr);

  ops::OpGraph graph;
  detail::LayerGraph outside(graph, -1);
  const ops::OpId embedding =
      outside.add(detail::vector_op("embedding", ops::OpKind::embedding, T, m.hidden_size, detail::kCopyOpsPerElement,
                                    hw::DType::bf16, hw::DType::bf16));
  ops::OpId previous = embedding;
  for (std::uint64_t l = 0; l < layers; ++l) {
    const int layer = static_cast<int>(l);
    const ops::OpId attention = add_attention_block(graph, m, w, layer, previous, p.tp);
    std::optional<ExpertShare> measured;
    const ExpertShare* share = nullptr;
    if (m.is_moe_layer(l)) {
      const ExpertAssignment* listed = options.expert_load ? options.expert_load->layer(l) : nullptr;
      if (listed) measured = expert_share(m, w, p, listed);
      share = measured ? &*measured : &*uniform;
    }
    previous = add_ffn_block(graph, m, w, layer, attention, p, share);
  }
  const std::uint64_t logit_rows = w.decode() ? T : w.batch;
  const ops::OpId final_norm = outside.add(detail::rmsnorm_op("final_norm", logit_rows, m.hidden_size));
  const ops::OpId lm_head =
      outside.add(detail::matmul_op("lm_head", 1, logit_rows, m.hidden_size, m.vocab_size / p.tp));
  outside.depend(previous, final_norm);
  outside.depend(final_norm, lm_head);
  return graph;
}

}  // namespace models
