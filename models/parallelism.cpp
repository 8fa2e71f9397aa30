#include "models/parallelism.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "hw/config_error.hpp"

namespace models {
namespace {

std::string degree_name(const std::string& field) {
  if (field == "tp") return "tensor-parallel degree tp";
  if (field == "ep") return "expert-parallel degree ep";
  return "data-parallel degree dp";
}

void require_divides(std::uint64_t parts, std::uint64_t total, const std::string& field, const std::string& what) {
  if (total % parts != 0) {
    throw hw::InputError(field, fmt::format("{} = {} does not divide {} ({})", degree_name(field), parts, what, total));
  }
}

std::uint64_t group_tokens(const Workload& chip, const Parallelism& p) {
  return chip.tokens() * std::max<std::uint64_t>(1, p.ep / p.tp);
}

}  // namespace

void validate_parallelism(const Parallelism& p, const ModelSpec& m, const Workload& global) {
  for (const auto& [field, degree] : {std::pair{"tp", p.tp}, std::pair{"ep", p.ep}, std::pair{"dp", p.dp}}) {
    if (degree == 0) throw hw::InputError(field, degree_name(field) + " must be a positive integer");
    if (degree > kMaxDegree) {
      throw hw::InputError(field, fmt::format("{} = {} is outside 1..{}", degree_name(field), degree, kMaxDegree));
    }
  }
  // tp x dp chips, each at most 2^16: the product cannot wrap, but a deployment is at most 2^20 chips.
  if (p.chips() > kMaxChips) {
    throw hw::InputError("sharding", fmt::format("tp x dp = {} x {} = {} chips, above the {} a deployment may span",
                                                 p.tp, p.dp, p.chips(), kMaxChips));
  }
  if (!global.dealt) require_divides(p.dp, global.sequences(), "dp", "the batch");
  require_divides(p.tp, m.num_attention_heads, "tp", "num_attention_heads");
  // KV heads split over tp, or (tp a multiple of them) each replicated on tp / heads chips.
  if (m.attention == AttentionKind::gqa && p.tp % m.num_key_value_heads != 0) {
    require_divides(p.tp, m.num_key_value_heads, "tp", "num_key_value_heads");
  }
  if (m.linear_attention) {
    require_divides(p.tp, m.linear_attention->num_key_heads, "tp", "linear_num_key_heads");
    require_divides(p.tp, m.linear_attention->num_value_heads, "tp", "linear_num_value_heads");
  }
  require_divides(p.tp, m.intermediate_size, "tp", "intermediate_size");
  require_divides(p.tp, m.vocab_size, "tp", "vocab_size");
  if (m.moe) {
    if (p.ep > m.moe->n_routed_experts) {
      throw hw::InputError("ep", fmt::format("{} = {} exceeds n_routed_experts ({}): every EP rank holds an expert",
                                             degree_name("ep"), p.ep, m.moe->n_routed_experts));
    }
    if (p.ep == 1) require_divides(p.tp, m.moe->moe_intermediate_size, "tp", "moe_intermediate_size");
    if (m.moe->n_shared_experts > 0) {
      require_divides(p.tp, m.moe->shared_width(), "tp",
                      "the shared experts' width (n_shared_experts x moe_intermediate_size)");
    }
  } else if (p.ep != 1) {
    throw hw::InputError("ep",
                         fmt::format("{} has no routed experts: the expert-parallel degree ep must be 1", m.name));
  }
  require_divides(p.ep, p.chips(), "ep", "the chips (tp x dp)");
  if (p.ep > p.tp) require_divides(p.tp, p.ep, "ep", "an EP group spanning whole TP groups: tp");
}

Workload chip_workload(const Workload& global, const Parallelism& p) {
  Workload w = global;
  if (global.uniform() && global.groups[0].count % p.dp == 0) {
    w.groups[0].count = global.groups[0].count / p.dp;
    return w;
  }
  // Groups of unlike sequences: each group's sequences dealt round robin over the ranks, the
  // deal going on where the previous group's stopped; the simulated rank is the one with the
  // most new tokens, then the most history (the step waits for the slowest rank), then the first.
  // Group g gives every rank count / dp sequences and one more to the `extra` ranks from `next`
  // on (cyclically): the ranks' loads as sums over those ranges, in O(groups + dp).
  struct Deal {
    std::uint64_t each, extra, next;
  };
  std::vector<Deal> deals;
  std::vector<std::uint64_t> tokens(p.dp + 1, 0), history(p.dp + 1, 0);  // differences, then loads
  std::uint64_t base_tokens = 0, base_history = 0, next = 0;
  auto add = [&](std::uint64_t from, std::uint64_t to, const SequenceGroup& g) {  // ranks [from, to)
    tokens[from] += g.q_len, tokens[to] -= g.q_len;
    history[from] += g.history, history[to] -= g.history;
  };
  for (const SequenceGroup& g : global.groups) {
    const Deal d{g.count / p.dp, g.count % p.dp, next};
    deals.push_back(d);
    base_tokens += d.each * g.q_len, base_history += d.each * g.history;
    if (d.next + d.extra <= p.dp) {
      add(d.next, d.next + d.extra, g);
    } else {
      add(d.next, p.dp, g);
      add(0, d.next + d.extra - p.dp, g);
    }
    next = (next + d.extra) % p.dp;
  }
  std::uint64_t fullest = 0, running_tokens = 0, running_history = 0;
  std::pair<std::uint64_t, std::uint64_t> most{0, 0};
  for (std::uint64_t r = 0; r < p.dp; ++r) {
    running_tokens += tokens[r], running_history += history[r];
    const std::pair<std::uint64_t, std::uint64_t> load{base_tokens + running_tokens, base_history + running_history};
    if (r == 0 || load > most) most = load, fullest = r;
  }
  w.groups.clear();
  for (std::size_t i = 0; i < deals.size(); ++i) {
    const Deal& d = deals[i];
    const bool one_more = (fullest + p.dp - d.next) % p.dp < d.extra;
    const std::uint64_t count = d.each + (one_more ? 1 : 0);
    const SequenceGroup& g = global.groups[i];
    if (count > 0) w.groups.push_back(SequenceGroup{count, g.q_len, g.history, g.decode});
  }
  return w;
}

std::uint64_t routed_slots(const ModelSpec& m, const Workload& chip, const Parallelism& p) {
  return group_tokens(chip, p) * m.moe->num_experts_per_tok;
}

ExpertShare expert_share(const ModelSpec& m, const Workload& chip, const Parallelism& p, const ExpertAssignment* load) {
  const MoeSpec& moe = *m.moe;
  const std::uint64_t E = moe.n_routed_experts, k = moe.num_experts_per_tok;
  const std::uint64_t local = experts_per_rank(E, p.ep);
  ExpertShare share;
  share.group_tokens = group_tokens(chip, p);
  share.expert_width = p.ep == 1 ? moe.moe_intermediate_size / p.tp : moe.moe_intermediate_size;
  if (p.ep > p.tp) {
    // This chip's own tokens (split over its TP group) go out to the other EP ranks' experts.
    const std::uint64_t own = chip.tokens();
    const std::uint64_t H = m.hidden_size;
    // Tokens go out in the activations' format (auto: fp8 with fp8 weights, else bf16).
    const ActDtype sent = chip.act_dtype != ActDtype::auto_       ? chip.act_dtype
                          : chip.weight_dtype == WeightDtype::fp8 ? ActDtype::fp8
                                                                  : ActDtype::bf16;
    const std::uint64_t out_token = act_row_bytes(sent, H);
    share.dispatch_bytes = own * k * out_token * (p.ep - 1) / p.ep / p.tp;
    share.combine_bytes = own * k * 2 * H * (p.ep - 1) / p.ep / p.tp;
    share.sent_tokens = own / p.tp;
    share.dispatch_token_bytes = out_token;
    share.combine_token_bytes = 2 * H;
  }
  if (load) {
    // The most loaded EP rank decides the step.
    std::uint64_t best = 0, best_slots = 0;
    for (std::uint64_t r = 0; r < p.ep; ++r) {
      std::uint64_t slots = 0;
      for (std::size_t i = 0; i < load->experts.size(); ++i) {
        if (load->experts[i] / local == r) slots += load->tokens[i];
      }
      if (slots > best_slots) best_slots = slots, best = r;
    }
    share.rank = best;
    for (std::size_t i = 0; i < load->experts.size(); ++i) {
      if (load->experts[i] / local == best) {
        share.experts.experts.push_back(load->experts[i]);
        share.experts.tokens.push_back(load->tokens[i]);
      }
    }
    return share;
  }
  // Uniform routing over the EP group's tokens, restricted to the local experts.
  share.experts = uniform_routing(E, k, share.group_tokens, p.ep);
  return share;
}

}  // namespace models
