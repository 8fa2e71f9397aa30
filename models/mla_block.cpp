#include "models/mla_block.hpp"

#include <fmt/format.h>

#include <optional>

namespace models {
namespace {

using hw::DType;
using ops::EdgeKind;
using ops::OpKind;
using ops::OpNode;

// Vector element-operations per element, by what the kernel does:
constexpr std::uint64_t kRmsNormOpsPerElement = 4;  // square, accumulate, scale by 1/rms, scale by weight
constexpr std::uint64_t kRopeOpsPerElement = 3;     // x*cos, rotate(x)*sin, add
constexpr std::uint64_t kCacheWriteOpsPerElement = 1;  // pack (and cast to the KV dtype)

OpNode rmsnorm(std::string name, std::uint64_t rows, std::uint64_t width) {
  OpNode n;
  n.name = std::move(name);
  n.kind = OpKind::rmsnorm;
  n.shape = fmt::format("[{}, {}]", rows, width);
  n.vec = ops::VectorShape{rows, width, kRmsNormOpsPerElement, DType::fp32, DType::bf16};
  n.flops = rows * width * kRmsNormOpsPerElement;
  return n;
}

OpNode matmul(std::string name, std::uint64_t groups, std::uint64_t m, std::uint64_t k, std::uint64_t n_cols) {
  OpNode n;
  n.name = std::move(name);
  n.kind = OpKind::matmul;
  n.shape = groups == 1 ? fmt::format("[{}, {}] x [{}, {}]", m, k, k, n_cols)
                        : fmt::format("{} x [{}, {}] x [{}, {}]", groups, m, k, k, n_cols);
  n.mm = ops::MatmulShape{groups, m, k, n_cols};
  n.flops = 2 * groups * m * k * n_cols;
  return n;
}

}  // namespace

std::uint64_t latent_kv_read_bytes(const ModelSpec& model, const Workload& w) {
  return w.batch * w.kv_len * model.latent_kv_elements() * hw::bytes_of(w.kv_dtype);
}

ops::OpGraph build_mla_attention_block(const ModelSpec& m, const Workload& w) {
  ops::OpGraph g;
  const std::uint64_t T = w.batch * w.q_len;
  const std::uint64_t H = m.hidden_size, n = m.num_attention_heads;
  const std::uint64_t dc = m.kv_lora_rank, dr = m.qk_rope_head_dim, dn = m.qk_nope_head_dim, dv = m.v_head_dim;
  const bool decode = w.decode();

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
  attn.decode = decode;

  const auto attn_norm = ops::add_op(g, rmsnorm("attn_norm", T, H));
  ops::OpId q_b;
  if (m.q_lora_rank) {
    const std::uint64_t rq = *m.q_lora_rank;
    const auto q_a = ops::add_op(g, matmul("q_a_proj", 1, T, H, rq));
    const auto q_a_norm = ops::add_op(g, rmsnorm("q_a_norm", T, rq));
    q_b = ops::add_op(g, matmul("q_b_proj", 1, T, rq, n * (dn + dr)));
    ops::add_dependency(g, attn_norm, q_a);
    ops::add_dependency(g, q_a, q_a_norm);
    ops::add_dependency(g, q_a_norm, q_b);
  } else {
    q_b = ops::add_op(g, matmul("q_proj", 1, T, H, n * (dn + dr)));
    ops::add_dependency(g, attn_norm, q_b);
  }
  const auto kv_a = ops::add_op(g, matmul("kv_a_proj", 1, T, H, dc + dr));
  const auto kv_a_norm = ops::add_op(g, rmsnorm("kv_a_norm", T, dc));
  OpNode rope_node;
  rope_node.name = "rope";
  rope_node.kind = OpKind::rope;
  rope_node.shape = fmt::format("[{}, {}]", T * (n + 1), dr);
  rope_node.vec = ops::VectorShape{T * (n + 1), dr, kRopeOpsPerElement, DType::fp32, DType::bf16};
  rope_node.flops = T * (n + 1) * dr * kRopeOpsPerElement;
  const auto rope = ops::add_op(g, rope_node);

  OpNode write;
  write.name = "kv_cache_write";
  write.kind = OpKind::kv_cache_write;
  write.shape = fmt::format("[{}, {}] {}", T, dc + dr, hw::name_of(w.kv_dtype));
  write.vec = ops::VectorShape{T, dc + dr, kCacheWriteOpsPerElement, DType::bf16, w.kv_dtype};
  write.flops = T * (dc + dr) * kCacheWriteOpsPerElement;
  const auto cache_write = ops::add_op(g, write);

  const auto q_absorb = ops::add_op(g, matmul("q_absorb", n, T, dn, dc));

  ops::add_dependency(g, attn_norm, kv_a);
  ops::add_dependency(g, kv_a, kv_a_norm);
  ops::add_dependency(g, q_b, rope);
  ops::add_dependency(g, kv_a, rope);
  ops::add_dependency(g, kv_a_norm, cache_write);
  ops::add_dependency(g, rope, cache_write);
  ops::add_dependency(g, q_b, q_absorb);
  // The absorption runs once this step's latent rows are in the cache. The history read is tied
  // to the absorption's TIU command (seed 003, appendix B), so through this edge it also finds
  // the new rows written before it starts.
  ops::add_dependency(g, cache_write, q_absorb);

  const std::uint64_t kv_bytes = latent_kv_read_bytes(m, w);
  std::optional<ops::OpId> read;
  if (decode) {
    OpNode r;
    r.name = "kv_cache_read";
    r.kind = OpKind::kv_cache_read;
    r.shape = fmt::format("[{}, {}, {}] {}", w.batch, w.kv_len, dc + dr, hw::name_of(w.kv_dtype));
    r.dtype = w.kv_dtype;
    r.attn = attn;
    r.kv_bytes = kv_bytes;
    read = ops::add_op(g, r);
    ops::add_dependency(g, q_absorb, *read, EdgeKind::order);
  }

  OpNode fa;
  fa.name = "fa2";
  fa.kind = OpKind::fa2;
  fa.shape = fmt::format("B{} q{} kv{} h{} d{}/{}", w.batch, w.q_len, w.kv_len, n, dc + dr, dc);
  fa.attn = attn;
  fa.kv_bytes = kv_bytes;
  fa.flops = 2 * w.batch * w.q_len * n * w.kv_len * (attn.qk_dim + attn.v_dim);
  const auto fa2 = ops::add_op(g, fa);
  ops::add_dependency(g, q_absorb, fa2);
  ops::add_dependency(g, rope, fa2);
  ops::add_dependency(g, cache_write, fa2);
  ops::OpId attention_out = fa2;
  if (read) {
    ops::add_dependency(g, *read, fa2, EdgeKind::same_core);
    OpNode combine;
    combine.name = "fa2_combine";
    combine.kind = OpKind::fa2_combine;
    combine.shape = fmt::format("[{}, {}]", T * n, dc);
    combine.attn = attn;
    combine.dtype = DType::fp32;
    attention_out = ops::add_op(g, combine);
    ops::add_dependency(g, fa2, attention_out);
  }
  const auto v_up = ops::add_op(g, matmul("v_up", n, T, dc, dv));
  const auto o_proj = ops::add_op(g, matmul("o_proj", 1, T, n * dv, H));
  ops::add_dependency(g, attention_out, v_up);
  ops::add_dependency(g, v_up, o_proj);
  return g;
}

}  // namespace models
