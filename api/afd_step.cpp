// Attention-FFN disaggregation (g5sim/afd.hpp states the model): each micro-batch's two sides
// simulated on their own chips, the activations' bytes each way, and the pipeline of the four
// stages.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "api/public_errors.hpp"
#include "api/result_state.hpp"
#include "g5sim/afd.hpp"
#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"

namespace g5sim {
namespace {

// A chip's own link for the activations: its network interface when it has one, else its C2C
// links together (as disaggregation's KV transfer, serving/serve.hpp).
struct SideLink {
  double bandwidth_gb_per_s = 0, latency_ns = 0;
  std::string link;
};
SideLink side_link(const Chip& chip) {
  const hw::Chip& c = chip.data().chip;
  if (c.nodes) return {c.nodes->rdma_bandwidth_gb_per_s, c.nodes->rdma_latency_ns, "rdma"};
  return {c.c2c.bandwidth_gb_per_s * c.c2c.links, c.c2c.latency_ns, "c2c"};
}

// Each group's count dealt round robin over m micro-batches (the first count % m get one more),
// the groups kept in order; micro-batches left empty are an error (more micro-batches than
// sequences).
std::vector<std::vector<SequenceRecord>> deal(const std::vector<SequenceRecord>& groups, std::uint64_t m) {
  std::vector<std::vector<SequenceRecord>> parts(m);
  std::uint64_t next = 0;  // the micro-batch the next sequence goes to
  for (const SequenceRecord& g : groups) {
    std::vector<std::uint64_t> counts(m, 0);
    for (std::uint64_t k = 0; k < m; ++k) counts[(next + k) % m] = g.count / m + (k < g.count % m ? 1 : 0);
    next = (next + g.count) % m;
    for (std::uint64_t i = 0; i < m; ++i) {
      if (counts[i] > 0) parts[i].push_back(SequenceRecord{counts[i], g.q_len, g.history, g.path});
    }
  }
  for (const auto& p : parts) {
    if (p.empty()) {
      throw hw::InputError("micro_batches", fmt::format("{} micro-batches leave one without a sequence", m));
    }
  }
  return parts;
}

std::uint64_t tokens_of(const std::vector<SequenceRecord>& groups) {
  std::uint64_t t = 0;
  for (const SequenceRecord& g : groups) t += g.count * g.q_len;
  return t;
}

// Layer l's share of a side's timeline: from the end of layer l - 1's last op (`start` before
// layer 0) to the end of layer l's; the last layer's runs to `finish` (the head after it).
std::vector<std::uint64_t> layer_shares(const Result& side, std::uint64_t layers, std::uint64_t start,
                                        std::uint64_t finish) {
  std::vector<std::uint64_t> ends(layers, start);
  for (const OpRecord& o : side.ops) {
    if (o.layer >= 0 && static_cast<std::uint64_t>(o.layer) < layers) {
      ends[static_cast<std::size_t>(o.layer)] = std::max(ends[static_cast<std::size_t>(o.layer)], o.op_end_ps);
    }
  }
  ends.back() = std::max(ends.back(), finish);
  std::vector<std::uint64_t> shares(layers);
  std::uint64_t before = start;
  for (std::uint64_t l = 0; l < layers; ++l) {
    const std::uint64_t end = std::max(ends[l], before);  // a layer ends after the one before it
    shares[l] = end - before;
    before = end;
  }
  return shares;
}

// The end of the FFN side's embedding (the ops outside the layers: it has no head).
std::uint64_t embedding_end(const Result& side) {
  std::uint64_t end = 0;
  for (const OpRecord& o : side.ops) {
    if (o.layer < 0) end = std::max(end, o.op_end_ps);
  }
  return end;
}

Request side_request(const Request& step, const std::vector<SequenceRecord>& groups, const char* scope,
                     std::uint64_t tp, std::uint64_t ep, std::uint64_t dp) {
  Request r = step;
  r.groups = groups;
  r.micro_batches = 1;
  r.scope = scope;
  r.tp = tp;
  r.ep = ep;
  r.dp = dp;
  return r;
}

void check_step(const Request& step, std::uint64_t attention_chips, std::uint64_t ffn_chips) {
  if (step.groups.empty()) throw hw::InputError("groups", "an AFD step takes its sequences as groups");
  if (step.tp || step.ep || step.dp) {
    throw hw::InputError(step.tp   ? "tp"
                         : step.ep ? "ep"
                                   : "dp",
                         "an AFD step shards each side itself: attention tp 1 dp A, FFN ep = dp = F");
  }
  if (step.scope != "step") throw hw::InputError("scope", "an AFD step is a whole step (scope step)");
  for (const auto& [name, n] : {std::pair{"attention_chips", attention_chips}, {"ffn_chips", ffn_chips}}) {
    if (n < 1 || n > 65536) throw hw::InputError(name, fmt::format("{} is outside 1..65536", n));
  }
}

}  // namespace

AfdSchedule afd_schedule(const std::vector<std::vector<AfdStage>>& stages) {
  AfdSchedule s;
  if (stages.empty()) return s;
  const std::size_t m = stages.front().size();
  // Resources: the attention chips, the link out, the FFN chips, the link back.
  std::array<std::uint64_t, 4> free{0, 0, 0, 0};
  std::vector<std::uint64_t> done(m, 0);
  auto add = [](std::uint64_t a, std::uint64_t b) {
    return hw::checked("the AFD step's time in picoseconds", [&] { return (hw::Count(a) + b).value(); });
  };
  for (const std::vector<AfdStage>& layer : stages) {
    if (layer.size() != m) throw hw::InputError("micro_batches", "every layer needs the same micro-batches");
    for (std::size_t r = 0; r < 4; ++r) {
      for (std::size_t i = 0; i < m; ++i) {
        const AfdStage& st = layer[i];
        const std::uint64_t d = r == 0 ? st.attention_ps : r == 1 ? st.dispatch_ps : r == 2 ? st.ffn_ps : st.combine_ps;
        const std::uint64_t start = std::max(free[r], done[i]);
        done[i] = free[r] = add(start, d);
        (r == 0 ? s.attention_busy_ps : r == 2 ? s.ffn_busy_ps : s.link_busy_ps) += d;
      }
    }
  }
  s.total_ps = *std::max_element(done.begin(), done.end());
  return s;
}

std::uint64_t AfdLink::picoseconds(std::uint64_t bytes) const {
  if (bytes == 0) return 0;
  // GB/s is bytes per nanosecond: bytes / bandwidth ns, x 1,000 ps.
  return static_cast<std::uint64_t>(
      std::llround(latency_ns * 1000.0 + static_cast<double>(bytes) * 1000.0 / bandwidth_gb_per_s));
}

AfdLink afd_link(const Chip& attention_chip, std::uint64_t attention_chips, const Chip& ffn_chip,
                 std::uint64_t ffn_chips) {
  const SideLink a = side_link(attention_chip), f = side_link(ffn_chip);
  AfdLink l;
  l.bandwidth_gb_per_s = std::min(a.bandwidth_gb_per_s * static_cast<double>(attention_chips),
                                  f.bandwidth_gb_per_s * static_cast<double>(ffn_chips));
  l.latency_ns = std::max(a.latency_ns, f.latency_ns);
  l.attention_link = a.link;
  l.ffn_link = f.link;
  return l;
}

std::uint64_t afd_layer_bytes(const Model& model, std::uint64_t layer, std::uint64_t tokens) {
  const models::ModelSpec& m = model.data().spec;
  std::uint64_t destinations = 1;
  if (m.is_moe_layer(layer)) destinations = m.moe->num_experts_per_tok + (m.moe->n_shared_experts > 0 ? 1 : 0);
  return hw::checked("the AFD activation bytes",
                     [&] { return (hw::Count(tokens) * m.hidden_size * 2 * destinations).value(); });
}

AfdStep afd_step(const Chip& attention_chip, std::uint64_t attention_chips, const Chip& ffn_chip,
                 std::uint64_t ffn_chips, const Model& model, const Request& step) {
  return api::public_errors([&] {
    check_step(step, attention_chips, ffn_chips);
    AfdStep out;
    out.attention_chips = attention_chips;
    out.ffn_chips = ffn_chips;
    out.micro_batches = step.micro_batches;
    if (out.micro_batches < 1 || out.micro_batches > 64) {
      throw hw::InputError("micro_batches", fmt::format("{} is outside 1..64", out.micro_batches));
    }
    // A step of fewer sequences runs as many micro-batches as it has (a serve's step of one).
    std::uint64_t sequences = 0;
    for (const SequenceRecord& g : step.groups) sequences += g.count;
    out.micro_batches = std::min(out.micro_batches, std::max<std::uint64_t>(sequences, 1));
    out.micro_batch_groups = deal(step.groups, out.micro_batches);
    out.link = afd_link(attention_chip, attention_chips, ffn_chip, ffn_chips);
    const models::ModelSpec& spec = model.data().spec;
    out.layers = step.layers.value_or(spec.num_hidden_layers);
    out.stages.assign(out.layers, std::vector<AfdStage>(out.micro_batches));
    // Micro-batches alike (the same groups) are simulated once.
    std::map<std::string, std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>>> sides;
    for (std::uint64_t i = 0; i < out.micro_batches; ++i) {
      const std::vector<SequenceRecord>& groups = out.micro_batch_groups[i];
      auto [it, fresh] = sides.try_emplace(mix_text(groups));
      if (fresh) {
        const Result a =
            simulate(attention_chip, model, side_request(step, groups, "attention", 1, 1, attention_chips));
        const Result f = simulate(ffn_chip, model, side_request(step, groups, "ffn", 1, ffn_chips, ffn_chips));
        for (const auto& [side, r] : {std::pair{"attention", &a}, {"ffn", &f}}) {
          for (const std::string& w : r->warnings) {
            const std::string said = std::string(side) + ": " + w;
            if (std::find(out.warnings.begin(), out.warnings.end(), said) == out.warnings.end()) {
              out.warnings.push_back(said);
            }
          }
        }
        it->second.first = layer_shares(a, out.layers, 0, a.total_ps);
        const std::uint64_t start = embedding_end(f);
        it->second.second = layer_shares(f, out.layers, start, start);
      }
      const std::uint64_t tokens = tokens_of(groups);
      for (std::uint64_t l = 0; l < out.layers; ++l) {
        AfdStage& st = out.stages[l][i];
        st.attention_ps = it->second.first[l];
        st.ffn_ps = it->second.second[l];
        const std::uint64_t bytes = afd_layer_bytes(model, l, tokens);
        st.dispatch_ps = st.combine_ps = out.link.picoseconds(bytes);
        out.dispatch_bytes += bytes;
        out.combine_bytes += bytes;
      }
    }
    out.schedule = afd_schedule(out.stages);
    return out;
  });
}

}  // namespace g5sim
