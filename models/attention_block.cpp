#include "models/attention_block.hpp"

#include <fmt/format.h>

#include "hw/config_error.hpp"
#include "models/graph_helpers.hpp"

namespace models {
namespace {

using hw::DType;
using ops::EdgeKind;
using ops::OpId;
using ops::OpKind;
using ops::OpNode;
using namespace detail;

std::uint64_t kv_elements_per_token(const ModelSpec& m) {
  return m.attention == AttentionKind::mla ? m.latent_kv_elements() : 2 * m.num_key_value_heads * m.head_dim;
}

OpNode cache_write_op(std::uint64_t tokens, std::uint64_t width, DType kv) {
  OpNode n = vector_op("kv_cache_write", OpKind::kv_cache_write, tokens, width, kCacheWriteOpsPerElement,
                       DType::bf16, kv);
  n.shape = fmt::format("[{}, {}] {}", tokens, width, hw::name_of(kv));
  return n;
}

OpNode cache_read_op(const ops::AttentionShape& attn, std::uint64_t bytes) {
  OpNode r;
  r.name = "kv_cache_read";
  r.kind = OpKind::kv_cache_read;
  r.shape = fmt::format("[{}, {}, {}] {}", attn.batch, attn.kv_len, attn.kv_heads * attn.kv_elements,
                        hw::name_of(attn.kv_dtype));
  r.dtype = attn.kv_dtype;
  r.attn = attn;
  r.kv_bytes = bytes;
  return r;
}

OpNode fa2_op(const ops::AttentionShape& attn, std::uint64_t kv_bytes) {
  OpNode fa;
  fa.name = "fa2";
  fa.kind = OpKind::fa2;
  fa.shape = fmt::format("B{} q{} kv{} h{}/{} d{}/{}", attn.batch, attn.q_len, attn.kv_len, attn.heads, attn.kv_heads,
                         attn.qk_dim, attn.v_dim);
  fa.attn = attn;
  fa.kv_bytes = kv_bytes;
  fa.flops = 2 * attn.batch * attn.q_len * attn.heads * attn.kv_len * (attn.qk_dim + attn.v_dim);
  return fa;
}

OpNode combine_op(const ops::AttentionShape& attn) {
  OpNode c;
  c.name = "fa2_combine";
  c.kind = OpKind::fa2_combine;
  c.shape = fmt::format("[{}, {}]", attn.batch * attn.q_len * attn.heads, attn.v_dim);
  c.attn = attn;
  c.dtype = DType::fp32;
  return c;
}

// fa2 (+ the history read and the combine in decode); returns the op whose output feeds the
// output projection. `read_after` orders the history read: absorption (order) or cache write.
OpId add_attention_core(LayerGraph& lg, const ops::AttentionShape& attn, std::uint64_t kv_bytes, OpId read_after,
                        EdgeKind read_edge, std::initializer_list<OpId> fa2_inputs) {
  std::optional<OpId> read;
  if (attn.decode) {
    read = lg.add(cache_read_op(attn, kv_bytes));
    lg.depend(read_after, *read, read_edge);
  }
  const OpId fa2 = lg.add(fa2_op(attn, kv_bytes));
  for (OpId in : fa2_inputs) lg.depend(in, fa2);
  if (!read) return fa2;
  lg.depend(*read, fa2, EdgeKind::same_core);
  const OpId combine = lg.add(combine_op(attn));
  lg.depend(fa2, combine);
  return combine;
}

OpId add_mla(LayerGraph& lg, const ModelSpec& m, const Workload& w, std::optional<OpId> input) {
  const std::uint64_t T = w.batch * w.q_len;
  const std::uint64_t H = m.hidden_size, n = m.num_attention_heads;
  const std::uint64_t dc = m.kv_lora_rank, dr = m.qk_rope_head_dim, dn = m.qk_nope_head_dim, dv = m.v_head_dim;

  ops::AttentionShape attn;
  attn.batch = w.batch;
  attn.q_len = w.q_len;
  attn.kv_len = w.kv_len;
  attn.heads = n;
  attn.kv_heads = 1;
  attn.qk_dim = dc + dr;
  attn.v_dim = dc;
  attn.kv_elements = dc + dr;
  attn.kv_dtype = w.kv_dtype;
  attn.decode = w.decode();

  const OpId attn_norm = lg.add(rmsnorm_op("attn_norm", T, H));
  if (input) lg.depend(*input, attn_norm);
  OpId q_b;
  if (m.q_lora_rank) {
    const std::uint64_t rq = *m.q_lora_rank;
    const OpId q_a = lg.add(matmul_op("q_a_proj", 1, T, H, rq));
    const OpId q_a_norm = lg.add(rmsnorm_op("q_a_norm", T, rq));
    q_b = lg.add(matmul_op("q_b_proj", 1, T, rq, n * (dn + dr)));
    lg.depend(attn_norm, q_a);
    lg.depend(q_a, q_a_norm);
    lg.depend(q_a_norm, q_b);
  } else {
    q_b = lg.add(matmul_op("q_proj", 1, T, H, n * (dn + dr)));
    lg.depend(attn_norm, q_b);
  }
  const OpId kv_a = lg.add(matmul_op("kv_a_proj", 1, T, H, dc + dr));
  const OpId kv_a_norm = lg.add(rmsnorm_op("kv_a_norm", T, dc));
  const OpId rope = lg.add(vector_op("rope", OpKind::rope, T * (n + 1), dr, kRopeOpsPerElement));
  const OpId cache_write = lg.add(cache_write_op(T, dc + dr, w.kv_dtype));
  const OpId q_absorb = lg.add(matmul_op("q_absorb", n, T, dn, dc));
  lg.depend(attn_norm, kv_a);
  lg.depend(kv_a, kv_a_norm);
  lg.depend(q_b, rope);
  lg.depend(kv_a, rope);
  lg.depend(kv_a_norm, cache_write);
  lg.depend(rope, cache_write);
  lg.depend(q_b, q_absorb);
  // The absorption runs once this step's latent rows are in the cache. The history read is tied
  // to the absorption's TIU command (seed 003, appendix B), so through this edge it also finds
  // the new rows written before it starts.
  lg.depend(cache_write, q_absorb);

  const OpId attention_out = add_attention_core(lg, attn, kv_read_bytes(m, w), q_absorb, EdgeKind::order,
                                                {q_absorb, rope, cache_write});
  const OpId v_up = lg.add(matmul_op("v_up", n, T, dc, dv));
  const OpId o_proj = lg.add(matmul_op("o_proj", 1, T, n * dv, H));
  lg.depend(attention_out, v_up);
  lg.depend(v_up, o_proj);
  return o_proj;
}

OpId add_gqa(LayerGraph& lg, const ModelSpec& m, const Workload& w, std::optional<OpId> input) {
  const std::uint64_t T = w.batch * w.q_len;
  const std::uint64_t H = m.hidden_size, n = m.num_attention_heads, g = m.num_key_value_heads, d = m.head_dim;

  ops::AttentionShape attn;
  attn.batch = w.batch;
  attn.q_len = w.q_len;
  attn.kv_len = w.kv_len;
  attn.heads = n;
  attn.kv_heads = g;
  attn.qk_dim = d;
  attn.v_dim = d;
  attn.kv_elements = 2 * d;
  attn.kv_dtype = w.kv_dtype;
  attn.decode = w.decode();

  const OpId attn_norm = lg.add(rmsnorm_op("attn_norm", T, H));
  if (input) lg.depend(*input, attn_norm);
  const OpId qkv = lg.add(matmul_op("qkv_proj", 1, T, H, (n + 2 * g) * d));
  const OpId rope = lg.add(vector_op("rope", OpKind::rope, T * (n + g), d, kRopeOpsPerElement));
  const OpId cache_write = lg.add(cache_write_op(T, 2 * g * d, w.kv_dtype));
  lg.depend(attn_norm, qkv);
  lg.depend(qkv, rope);
  lg.depend(qkv, cache_write);
  lg.depend(rope, cache_write);
  const OpId attention_out =
      add_attention_core(lg, attn, kv_read_bytes(m, w), cache_write, EdgeKind::data, {rope, cache_write});
  const OpId o_proj = lg.add(matmul_op("o_proj", 1, T, n * d, H));
  lg.depend(attention_out, o_proj);
  return o_proj;
}

}  // namespace

std::uint64_t kv_read_bytes(const ModelSpec& model, const Workload& w) {
  return w.batch * w.kv_len * kv_elements_per_token(model) * hw::bytes_of(w.kv_dtype);
}

OpId add_attention_block(ops::OpGraph& graph, const ModelSpec& model, const Workload& workload, int layer,
                         std::optional<OpId> input) {
  LayerGraph lg(graph, layer);
  return model.attention == AttentionKind::mla ? add_mla(lg, model, workload, input)
                                               : add_gqa(lg, model, workload, input);
}

ops::OpGraph build_attention_block(const ModelSpec& model, const Workload& workload) {
  ops::OpGraph graph;
  add_attention_block(graph, model, workload, 0, std::nullopt);
  return graph;
}

}  // namespace models
