#include "models/memory_footprint.hpp"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"
#include "models/kv_cache.hpp"
#include "models/parallelism.hpp"

namespace models {

MemoryFootprint chip_footprint(const ModelSpec& m, const Workload& global, const Parallelism& p, StepPart part) {
  const bool attention_side = part != StepPart::ffn, ffn_side = part != StepPart::attention;
  // Every product is checked: with large fields a weight or KV byte count passes 2^64.
  using hw::Count;
  const Count H = m.hidden_size;
  const std::uint64_t tp = p.tp;
  // Projections in the workload's weight format (models/weight_format.hpp), the rest in bf16.
  const WeightFormat fmt_w = global.weight_format();
  auto mat = [fmt_w](const Count& k, const Count& n) {
    return Count(weight_matrix_bytes(fmt_w, k.value(), n.value()));
  };
  // Every projection but the routed experts' (bf16 when the checkpoint quantises experts alone).
  const WeightFormat fmt_dense = m.quantised_experts_only ? WeightFormat{} : fmt_w;
  auto dense = [fmt_dense](const Count& k, const Count& n) {
    return Count(weight_matrix_bytes(fmt_dense, k.value(), n.value()));
  };
  auto plain = [](const Count& elements) { return elements * 2; };
  MemoryFootprint f;
  f.weight_bytes = hw::checked(fmt::format("the weight bytes of {} ({})", m.name, m.source), [&] {
    // The embedding (16-bit rows), the final norm, and the lm_head: in the projections' format
    // when the run says so, else 16-bit and one table with the embedding when tied.
    Count total{0};
    if (attention_side) total += plain(Count(m.vocab_size) * H / tp + H);
    if (attention_side && global.lm_head_weights == LmHeadWeights::projections) {
      total += dense(H, Count(m.vocab_size) / tp);
    } else if (attention_side && !m.tie_word_embeddings) {
      total += plain(Count(m.vocab_size) * H / tp);
    }
    // A layer's attention weights (with its norm's) and its FFN's.
    auto attention_layer = [&](std::uint64_t l) {
      Count bytes = plain(H);
      if (m.mixer(l) == LayerMixer::linear_attention) {
        // Gated DeltaNet (models/linear_attention_block.hpp): in_proj_qkvz, in_proj_ba, the
        // convolution's taps, A_log and dt_bias per value head, the gated norm, out_proj.
        const GatedDeltaNetSpec& g = *m.linear_attention;
        const Count kd = Count(g.key_dim()) / tp, vd = Count(g.value_dim()) / tp, nv = Count(g.num_value_heads) / tp;
        bytes += dense(H, Count(2) * kd + Count(2) * vd) + dense(H, Count(2) * nv);
        bytes += plain((Count(2) * kd + vd) * g.conv_kernel + Count(2) * nv + g.value_head_dim);
        bytes += dense(vd, H);
      } else if (m.attention == AttentionKind::mla) {
        const Count n = m.num_attention_heads, dc = m.kv_lora_rank, dr = m.qk_rope_head_dim;
        const Count dn = m.qk_nope_head_dim, dv = m.v_head_dim;
        if (m.q_lora_rank) {
          const Count rq = *m.q_lora_rank;
          bytes += dense(H, rq) + plain(rq) + dense(rq, n * (dn + dr) / tp);
        } else {
          bytes += dense(H, n * (dn + dr) / tp);
        }
        bytes += dense(H, dc + dr) + plain(dc) + dense(dc, n * (dn + dv) / tp) + dense(n * dv / tp, H);
        if (m.dsa) {
          // The DSA indexer (replicated, bf16): wq_b, wk (+ its norm), weights_proj.
          const Count q_width = m.q_lora_rank ? *m.q_lora_rank : m.hidden_size;
          const Count ih = m.dsa->index_n_heads, id = m.dsa->index_head_dim;
          bytes += plain(q_width * ih * id + H * id + id + H * ih);
        }
      } else {
        // q (twice over with an output gate) and each chip's K/V heads (replicated past tp = g).
        const Count n = Count(m.num_attention_heads) / tp, g = m.kv_heads_on_chip(tp), d = m.head_dim;
        const Count q = n * (m.attention_output_gate ? 2 : 1);
        bytes += dense(H, (q + Count(2) * g) * d) + dense(n * d, H);
        if (m.qkv_bias) bytes += plain((q + Count(2) * g) * d);
        if (m.qk_norm) bytes += plain(Count(2) * d);  // one RMSNorm weight for q heads, one for k
        if (m.attention_sinks) bytes += plain(n);     // a sink logit per head
      }
      return bytes;
    };
    auto ffn_layer = [&](std::uint64_t l) {
      Count bytes = plain(H);
      if (m.is_moe_layer(l)) {
        const MoeSpec& moe = *m.moe;
        const Count width = p.ep == 1 ? moe.moe_intermediate_size / tp : moe.moe_intermediate_size;
        const Count shared = Count(moe.shared_width()) / tp;
        bytes += plain(H * moe.n_routed_experts);  // the router
        if (moe.n_shared_experts > 0) bytes += dense(H, Count(2) * shared) + dense(shared, H);
        bytes += Count(experts_per_rank(moe.n_routed_experts, p.ep)) * (mat(H, Count(2) * width) + mat(width, H));
      } else {
        const Count I = Count(m.intermediate_size) / tp;
        bytes += dense(H, Count(2) * I) + dense(I, H);
      }
      return bytes;
    };
    for (std::uint64_t l = 0; l < m.num_hidden_layers; ++l) {
      if (attention_side) total += attention_layer(l);
      if (ffn_side) total += ffn_layer(l);
    }
    return total.value();
  });
  const Workload chip = chip_workload(global, p);
  if (!attention_side) return f;  // the FFN side holds no cache
  f.kv_cache_bytes = hw::checked("the KV cache bytes per chip", [&] {
    Count total{0};
    for (const SequenceGroup& g : chip.groups) total += Count(g.count) * sequence_kv_bytes(m, chip, tp, g.kv_len());
    return total.value();
  });
  // The total is compared with the capacity: it must not wrap either.
  hw::checked("the bytes per chip", [&] { return (Count(f.weight_bytes) + f.kv_cache_bytes).value(); });
  return f;
}

std::uint64_t parameter_count(const ModelSpec& model) {
  // The footprint of bf16 weights (two bytes each) on one unsharded chip; the workload only sizes
  // the cache, which is not counted here.
  Workload w = make_workload(Phase::decode, 1, 2, std::nullopt, KvFormat::bf16);
  w.weight_dtype = WeightDtype::bf16;
  return chip_footprint(model, w, Parallelism{1, 1, 1}).weight_bytes / 2;
}

namespace {

// The fewest chips, then the least tp, of powers of two tp (up to the heads), dp (dividing the
// batch) and ep (up to the experts, dividing tp x dp) whose footprint fits `capacity`.
std::optional<Parallelism> fitting_sharding(const ModelSpec& m, const Workload& global, std::uint64_t capacity) {
  std::optional<Parallelism> best;
  const std::uint64_t experts = m.moe ? m.moe->n_routed_experts : 1;
  for (std::uint64_t tp = 1; tp <= m.num_attention_heads; tp *= 2) {
    for (std::uint64_t dp = 1; dp <= global.sequences(); dp *= 2) {
      if (best && tp * dp >= best->chips()) break;
      for (std::uint64_t ep = 1; ep <= std::min(experts, tp * dp); ep *= 2) {
        const Parallelism p{tp, ep, dp};
        try {
          validate_parallelism(p, m, global);
          if (chip_footprint(m, global, p).total() <= capacity) {
            best = p;
            break;
          }
        } catch (const hw::ConfigError&) {
        }
      }
    }
  }
  return best;
}

}  // namespace

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
      // A batch that does not split evenly, or groups too few for every rank (the automatic
      // choice gives each rank a sequence; a given dp may leave ranks idle), skips the candidate.
      if (batch_given && global.uniform() && global.sequences() % p.dp != 0) continue;
      if (global.dealt && global.sequences() < p.dp) continue;
      Workload w = global;
      if (!batch_given) w.groups[0].count = p.dp;
      try {
        validate_parallelism(p, m, w);
      } catch (const hw::ConfigError&) {
        continue;
      }
      if (chip_footprint(m, w, p).total() <= capacity) return AutoSharding{p, w.sequences()};
    }
  }
  // The least a chip can hold under any sharding: the weights split as far as they go (tp over
  // every head, ep over every expert) and one sequence a DP rank. Above the capacity no tp, ep and
  // dp can help, and the error says so instead of asking for them.
  const auto gib = [](std::uint64_t b) { return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1u << 30)); };
  const Parallelism widest{m.num_attention_heads, m.moe ? m.moe->n_routed_experts : 1, global.sequences()};
  std::optional<MemoryFootprint> least;
  try {
    least = chip_footprint(m, global, widest);
  } catch (const hw::ConfigError&) {
    // A footprint past 2^64 bytes: certainly above the capacity, said below as such.
  }
  if (!least || least->total() > capacity) {
    throw hw::InputError(
        "sharding",
        fmt::format(
            "no sharding of {} can fit {} a chip: even one sequence a chip with tp {} and ep {} needs {}{}", m.name,
            gib(capacity), widest.tp, widest.ep,
            least ? fmt::format("{} (weights {}, KV cache {})", gib(least->total()), gib(least->weight_bytes),
                                gib(least->kv_cache_bytes))
                  : std::string("more than 2^64 bytes"),
            m.attention == AttentionKind::mla ? ", MLA's latent cache being whole on every tensor-parallel rank" : ""));
  }
  // A sharding beyond the automatic rule that fits, the fewest chips first: named, so the error
  // is one the user can act on at once.
  const std::optional<Parallelism> manual = fitting_sharding(m, global, capacity);
  throw hw::InputError("sharding", fmt::format("no automatic sharding of {} fits {} a chip ({} bytes; dp = ep, tp = "
                                               "ep or tp up to 1024 chips){}",
                                               m.name, gib(capacity), capacity,
                                               manual ? fmt::format("; tp {} ep {} dp {} ({} chips) fits: give those",
                                                                    manual->tp, manual->ep, manual->dp, manual->chips())
                                                      : std::string("; give tp, ep and dp")));
}

}  // namespace models
