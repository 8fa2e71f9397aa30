#include "models/linear_attention_block.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "hw/checked_count.hpp"
#include "models/graph_helpers.hpp"

namespace models {
namespace {

using hw::DType;
using ops::OpId;
using ops::OpKind;
using ops::OpNode;
using namespace detail;

constexpr std::uint64_t kChunkTokens = 64;             // flash-linear-attention's chunk (BT)
constexpr std::uint64_t kSiluOpsPerElement = 3;        // add, divide, multiply (the exp on the SFU)
constexpr std::uint64_t kDeltaRuleOpsPerElement = 7;   // decay 1, retrieve and write 4, read out 2
constexpr std::uint64_t kStateDecayOpsPerElement = 1;  // a prompt's state: the decay per chunk

// The state's element as the vector unit computes and stores it.
DType state_dtype(const GatedDeltaNetSpec& g) { return g.state_bytes == 4 ? DType::fp32 : DType::bf16; }

struct Heads {
  std::uint64_t nk, nv, dk, dv, kd, vd, conv;
};

Heads heads_on_chip(const GatedDeltaNetSpec& g, std::uint64_t tp) {
  Heads h{g.num_key_heads / tp, g.num_value_heads / tp, g.key_head_dim, g.value_head_dim, 0, 0, 0};
  h.kd = h.nk * h.dk, h.vd = h.nv * h.dv, h.conv = 2 * h.kd + h.vd;
  return h;
}

// delta_rule over `sequences` states of the part: `load` and `store` bytes a sequence (B n_v rows
// of d_k d_v elements, each row a value head's share; the caller keeps them whole multiples).
OpNode delta_rule_op(const Heads& h, const GatedDeltaNetSpec& g, std::uint64_t sequences, std::uint64_t ops,
                     std::uint64_t load, std::uint64_t store) {
  OpNode n =
      vector_op("delta_rule", OpKind::delta_rule, sequences * h.nv, h.dk * h.dv, ops, DType::fp32, state_dtype(g));
  n.dtype = state_dtype(g);
  n.vec().load_row_bytes = hw::ceil_div(load, h.nv);
  n.vec().store_row_bytes = hw::ceil_div(store, h.nv);
  n.shape = fmt::format("[{}, {}, {}] x {} B", sequences, h.nv, h.dk * h.dv, g.state_bytes);
  return n;
}

// The prompts' chunked form (linear_attention_block.hpp): four matmuls over every chunk and value head.
std::vector<OpId> add_chunked_form(LayerGraph& lg, const Workload& part, const Heads& h) {
  std::uint64_t chunks = 0, longest = 0;
  for (const SequenceGroup& g : part.groups) {
    chunks += g.count * hw::ceil_div(g.q_len, kChunkTokens);
    longest = std::max(longest, g.q_len);
  }
  const std::uint64_t c = std::min(kChunkTokens, longest), batch = chunks * h.nv;
  const OpId scores = lg.add(matmul_op("gdn_chunk_scores", batch, c, h.dk, 2 * c));
  const OpId values = lg.add(matmul_op("gdn_chunk_values", batch, c, c, h.dk + 2 * h.dv));
  const OpId state = lg.add(matmul_op("gdn_chunk_state", batch, c, h.dk, 2 * h.dv));
  const OpId update = lg.add(matmul_op("gdn_state_update", batch, h.dk, c, h.dv));
  lg.depend(scores, values);
  lg.depend(values, state);
  lg.depend(state, update);
  return {scores, update};
}

}  // namespace

std::uint64_t linear_state_bytes(const ModelSpec& m, std::uint64_t tp) {
  if (!m.linear_attention) return 0;
  const GatedDeltaNetSpec& g = *m.linear_attention;
  const Heads h = heads_on_chip(g, tp);
  return hw::checked("the linear-attention state bytes", [&] {
    return (hw::Count(h.nv) * h.dk * h.dv * g.state_bytes + hw::Count(2) * (g.conv_kernel - 1) * h.conv).value();
  });
}

OpId add_gated_deltanet(LayerGraph& lg, const ModelSpec& m, const Workload& w, std::optional<OpId> input,
                        std::uint64_t tp) {
  const GatedDeltaNetSpec& g = *m.linear_attention;
  const Heads h = heads_on_chip(g, tp);
  const std::uint64_t T = w.tokens(), H = m.hidden_size, Z = linear_state_bytes(m, tp);
  const WeightFormat weights = dense_weights(m, w);

  const OpId attn_norm = lg.add(rmsnorm_op("attn_norm", T, H));
  if (input) lg.depend(*input, attn_norm);
  const OpId qkvz = lg.add(projection(matmul_op("in_proj_qkvz", 1, T, H, 2 * h.kd + 2 * h.vd), weights));
  const OpId ba = lg.add(projection(matmul_op("in_proj_ba", 1, T, H, 2 * h.nv), weights));
  lg.depend(attn_norm, qkvz);
  lg.depend(attn_norm, ba);
  OpNode conv_node = vector_op("conv1d", OpKind::conv1d, T, h.conv, 2 * g.conv_kernel + kSiluOpsPerElement);
  add_sfu(conv_node, 1, 0);
  const OpId conv = lg.add(conv_node);
  lg.depend(qkvz, conv);
  const OpId l2norm = lg.add(rmsnorm_op("qk_l2norm", T * 2 * h.nk, h.dk));
  lg.depend(conv, l2norm);

  std::vector<OpId> outputs;
  for (const bool decode_path : {true, false}) {
    const Workload part = w.part(decode_path);
    if (part.groups.empty()) continue;
    const std::uint64_t B = part.sequences(), tokens = part.tokens();
    // A sequence's inputs (q, k, v, a, b in bf16) and outputs, per token.
    const std::uint64_t in_per_token = 2 * (2 * h.kd + h.vd + 2 * h.nv), out_per_token = 2 * h.vd;
    if (part.decode()) {
      // Every token's update in turn on the state, read and written once (a verify's q_len tokens
      // a sequence: the part's tokens / B, rounded up, when they differ).
      const std::uint64_t q = hw::ceil_div(tokens, B);
      const OpId rule =
          lg.add(delta_rule_op(h, g, B, kDeltaRuleOpsPerElement * q, Z + hw::ceil_div(tokens * in_per_token, B),
                               Z + hw::ceil_div(tokens * out_per_token, B)));
      lg.depend(l2norm, rule);
      lg.depend(ba, rule);
      outputs.push_back(rule);
      continue;
    }
    const std::vector<OpId> chunked = add_chunked_form(lg, part, h);
    lg.depend(l2norm, chunked.front());
    lg.depend(ba, chunked.front());
    // Each chunk with history starts from its cached state; every prompt leaves its final state.
    std::uint64_t with_history = 0;
    for (const SequenceGroup& sg : part.groups) with_history += sg.history > 0 ? sg.count : 0;
    const std::uint64_t load = hw::ceil_div(with_history * Z, B);
    const OpId state = lg.add(delta_rule_op(h, g, B, kStateDecayOpsPerElement, load, Z));
    lg.depend(chunked.back(), state);
    outputs.push_back(state);
  }
  const OpId norm = lg.add(rmsnorm_op("gdn_norm", T * h.nv, h.dv));
  for (OpId out : outputs) lg.depend(out, norm);
  OpNode gate = vector_op("gdn_output_gate", OpKind::swiglu, T, h.vd, kSwigluOpsPerElement);
  add_sfu(gate, kSwigluSfuPerElement, 0);
  gate.vec().load_width = 2 * h.vd;  // the normed output and z
  const OpId gated = lg.add(gate);
  lg.depend(norm, gated);
  lg.depend(qkvz, gated);
  const OpId out_proj = lg.add(projection(matmul_op("out_proj", 1, T, h.vd, H), weights));
  lg.depend(gated, out_proj);
  return out_proj;
}

}  // namespace models
