#include "models/memory_footprint.hpp"

#include <fmt/format.h>

#include <vector>

#include "hw/config_error.hpp"
#include "models/kv_cache.hpp"

namespace models {

MemoryFootprint chip_footprint(const ModelSpec& m, const Workload& global, const Parallelism& p) {
  const std::uint64_t H = m.hidden_size, tp = p.tp;
  std::uint64_t params = 2 * m.vocab_size * H / tp + H;  // embedding, lm_head, final norm
  for (std::uint64_t l = 0; l < m.num_hidden_layers; ++l) {
    params += 2 * H;  // attention and FFN norms
    if (m.attention == AttentionKind::mla) {
      const std::uint64_t n = m.num_attention_heads, dc = m.kv_lora_rank, dr = m.qk_rope_head_dim;
      const std::uint64_t dn = m.qk_nope_head_dim, dv = m.v_head_dim;
      params += m.q_lora_rank ? H * *m.q_lora_rank + *m.q_lora_rank + *m.q_lora_rank * n * (dn + dr) / tp
                              : H * n * (dn + dr) / tp;
      params += H * (dc + dr) + dc + dc * n * (dn + dv) / tp + n * dv * H / tp;
      if (m.dsa) {
        // The DSA indexer (replicated): wq_b, wk (+ its norm), weights_proj.
        const std::uint64_t q_width = m.q_lora_rank ? *m.q_lora_rank : H;
        params += q_width * m.dsa->index_n_heads * m.dsa->index_head_dim + H * m.dsa->index_head_dim +
                  m.dsa->index_head_dim + H * m.dsa->index_n_heads;
      }
    } else {
      const std::uint64_t n = m.num_attention_heads, g = m.num_key_value_heads, d = m.head_dim;
      params += H * (n + 2 * g) * d / tp + n * d * H / tp;
    }
    if (m.is_moe_layer(l)) {
      const MoeSpec& moe = *m.moe;
      const std::uint64_t width = p.ep == 1 ? moe.moe_intermediate_size / tp : moe.moe_intermediate_size;
      params += H * moe.n_routed_experts + 3 * H * moe.n_shared_experts * moe.moe_intermediate_size / tp;
      params += moe.n_routed_experts / p.ep * 3 * H * width;
    } else {
      params += 3 * H * m.intermediate_size / tp;
    }
  }
  MemoryFootprint f;
  f.weight_bytes = params * 2;
  const Workload chip = chip_workload(global, p);
  std::uint64_t per_token = kv_bytes_per_token_per_layer(m, chip, tp);
  if (m.dsa) per_token += m.dsa->index_head_dim + 4;  // the indexer's fp8 key and fp32 scale
  f.kv_cache_bytes = chip.batch * chip.kv_len * m.num_hidden_layers * per_token;
  return f;
}

AutoSharding auto_sharding(const ModelSpec& m, Workload global, bool batch_given, std::uint64_t capacity) {
  for (std::uint64_t n = 1; n <= 1024; n *= 2) {
    // Candidates for n chips: MoE models shard the batch and the experts (dp = ep = n) or, when
    // the batch does not split, heads and experts (tp = ep = n); dense models shard heads (tp = n).
    std::vector<Parallelism> candidates;
    if (m.moe) {
      if (n > m.moe->n_routed_experts) break;
      candidates.push_back(Parallelism{1, n, n});
      candidates.push_back(Parallelism{n, n, 1});
    } else {
      candidates.push_back(Parallelism{n, 1, 1});
    }
    for (const Parallelism& p : candidates) {
      if (batch_given && global.batch % p.dp != 0) continue;
      Workload w = global;
      if (!batch_given) w.batch = p.dp;
      try {
        validate_parallelism(p, m, w);
      } catch (const hw::ConfigError&) {
        continue;
      }
      if (chip_footprint(m, w, p).total() <= capacity) return AutoSharding{p, w.batch};
    }
  }
  throw hw::InputError("sharding", fmt::format("no automatic sharding of {} fits {} bytes per chip (dp = ep, tp = ep "
                                               "or tp up to 1024 chips); give tp, ep and dp",
                                               m.name, capacity));
}

}  // namespace models
