#include "models/decoder_step.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "hw/config_error.hpp"
#include "models/attention_block.hpp"
#include "models/ffn_block.hpp"
#include "models/graph_helpers.hpp"
#include "models/run_limits.hpp"

namespace models {
namespace {

// Lowering order of one micro-batch's ops of `layer` (ids from `first`): stage 0 (attention,
// routing, the dispatch, the shared experts), stage 1 (what waits for the dispatch: the routed
// experts, the combine all-to-all), stage 2 (what waits for the combine all-to-all), each stage
// for every micro-batch before the next, layer after layer. So one micro-batch's all-to-alls
// are in flight while the other's attention or experts compute.
void schedule_micro_batch(ops::OpGraph& graph, ops::OpId first, int layer) {
  const std::size_t n = boost::num_vertices(graph);
  std::vector<std::uint8_t> stage(n, 0);
  for (ops::OpId v = first; v < n; ++v) {
    std::uint8_t s = 0;
    for (auto [e, end] = boost::in_edges(v, graph); e != end; ++e) {
      const ops::OpId u = boost::source(*e, graph);
      if (u < first) continue;
      const std::uint8_t past = graph[u].name == "moe_dispatch" ? 1 : graph[u].name == "moe_combine_a2a" ? 2 : 0;
      s = std::max({s, stage[u], past});
    }
    stage[v] = s;
    graph[v].schedule = static_cast<std::uint32_t>(3 * layer + s + 1);
  }
}

// The host launch of `layer` (StepOptions::host_launch_ns): after every op before it without a
// consumer yet (the previous layer's outputs and its cache writes; the embedding for layer 0).
ops::OpId add_host_launch(ops::OpGraph& graph, int layer, std::uint64_t launch_ns) {
  std::vector<ops::OpId> returned;
  for (ops::OpId v = 0; v < boost::num_vertices(graph); ++v) {
    if (boost::out_degree(v, graph) == 0) returned.push_back(v);
  }
  ops::OpNode node;
  node.name = "host_launch";
  node.kind = ops::OpKind::host_launch;
  node.layer = layer;
  node.shape = fmt::format("{} ns", launch_ns);
  node.payload = ops::HostShape{launch_ns * 1000};  // ns -> ps; launch_ns is at most kMaxHostLaunchNs
  const ops::OpId launch = ops::add_op(graph, node);
  for (ops::OpId v : returned) ops::add_dependency(graph, v, launch);
  return launch;
}

// Every op of the layer that starts it, launched at `first` (its host_launch), waits for the
// launch: those fed by no op of the layer (a history read, a first projection) included.
void wait_for_launch(ops::OpGraph& graph, ops::OpId first) {
  for (ops::OpId v = first + 1; v < boost::num_vertices(graph); ++v) {
    bool fed = false;
    for (auto [e, end] = boost::in_edges(v, graph); e != end && !fed; ++e) fed = boost::source(*e, graph) >= first;
    if (!fed) ops::add_dependency(graph, first, v);
  }
}

// Checks the step's host launch time and layer count; returns how many layers to build.
std::uint64_t checked_step_layers(const ModelSpec& m, const StepOptions& options) {
  if (options.host_launch_ns > kMaxHostLaunchNs) {
    throw hw::InputError("host_launch_ns",
                         fmt::format("expected 0..{} ns, got {}", kMaxHostLaunchNs, options.host_launch_ns));
  }
  const std::uint64_t layers = options.layers.value_or(m.num_hidden_layers);
  if (layers == 0 || layers > m.num_hidden_layers) {
    throw hw::InputError("layers", fmt::format("expected 1..{} ({} has {} layers), got {}", m.num_hidden_layers, m.name,
                                               m.num_hidden_layers, layers));
  }
  return layers;
}

// The measured expert load (StepOptions::expert_load) in token slots of this chip's step, checked;
// none when the run gives none.
std::optional<ExpertLoad> step_expert_load(const ModelSpec& m, const Workload& w, const Parallelism& p,
                                           const StepOptions& options) {
  std::optional<ExpertLoad> load;  // the measured load in token slots of this step
  if (options.expert_load) {
    if (!m.moe) throw hw::InputError("expert_load", fmt::format("{} has no MoE layers", m.name));
    const std::uint64_t step_tokens = routed_slots(m, w, p) / m.moe->num_experts_per_tok;
    load = options.expert_load->for_step(step_tokens, m.moe->num_experts_per_tok);
    load->validate(
        m.num_hidden_layers, [&m](std::uint64_t l) { return m.why_dense(l); }, m.moe->n_routed_experts,
        m.moe->num_experts_per_tok, step_tokens);
  }
  return load;
}

// How many micro-batches the step runs: the asked count, checked against the chip's sequences,
// or for dealt groups at most one per sequence.
std::uint64_t step_micro_batches(const Workload& w, const StepOptions& options) {
  // A uniform batch splits into N equal micro-batches (N divides it). Groups (a mix, a serving
  // step) are dealt round robin over min(N, sequences) micro-batches, each group's deal going on
  // where the previous one stopped: their counts differ by one at most, so a step of unlike
  // sequences (one per history) still overlaps; with fewer sequences than N, one each.
  const std::uint64_t asked = options.micro_batches;
  if (asked == 0 || asked > 64) {
    throw hw::InputError("micro_batches", fmt::format("{} micro-batches is outside 1..64", asked));
  }
  const bool divides =
      std::all_of(w.groups.begin(), w.groups.end(), [&](const SequenceGroup& g) { return g.count % asked == 0; });
  if (!w.dealt && !divides) {
    throw hw::InputError(
        "micro_batches",
        w.uniform() ? fmt::format("{} micro-batches must divide this chip's {} sequences (1..64)", asked, w.sequences())
                    : fmt::format("{} micro-batches must divide the count of every group of this "
                                  "chip's sequences ({}) (1..64)",
                                  asked, mix_text(w.groups)));
  }
  const std::uint64_t N = w.dealt ? std::max<std::uint64_t>(1, std::min(asked, w.sequences())) : asked;
  if (N > 1 && options.expert_load) {
    throw hw::InputError("micro_batches", "a measured expert load describes the whole step: use one micro-batch");
  }
  return N;
}

// The chip's sequences dealt into N micro-batches, group after group, round robin.
std::vector<Workload> deal_micro_batches(const Workload& w, std::uint64_t N) {
  std::vector<Workload> parts(N, w);  // micro-batch i's sequences
  for (Workload& part : parts) part.groups.clear();
  std::uint64_t next = 0;
  for (const SequenceGroup& g : w.groups) {
    for (std::uint64_t k = 0; k < N; ++k) {
      // Micro-batch (next + k) % N gets count / N and one of the count % N left over.
      SequenceGroup share = g;
      share.count = g.count / N + (k < g.count % N ? 1 : 0);
      if (share.count > 0) parts[(next + k) % N].groups.push_back(share);
    }
    next = (next + g.count % N) % N;
  }
  return parts;
}

}  // namespace

ops::OpGraph build_decoder_step(const ModelSpec& m, const Workload& global, const StepOptions& options) {
  const std::uint64_t layers = checked_step_layers(m, options);
  const Parallelism& p = options.parallelism;
  validate_parallelism(p, m, global);
  const Workload w = chip_workload(global, p);
  const std::uint64_t T = w.tokens();
  const std::optional<ExpertLoad> load = step_expert_load(m, w, p, options);
  const std::uint64_t N = step_micro_batches(w, options);
  const std::vector<Workload> parts = deal_micro_batches(w, N);
  std::vector<std::optional<ExpertShare>> uniform(N);
  if (m.moe) {
    for (std::uint64_t i = 0; i < N; ++i) uniform[i] = expert_share(m, parts[i], p, nullptr);
  }
  const Workload& mw = parts[0];  // the measured expert load's step (one micro-batch)

  ops::OpGraph graph;
  detail::LayerGraph outside(graph, -1);
  const ops::OpId embedding =
      outside.add(detail::vector_op("embedding", ops::OpKind::embedding, T, m.hidden_size, detail::kCopyOpsPerElement,
                                    hw::DType::bf16, hw::DType::bf16));
  std::vector<ops::OpId> previous(N, embedding);
  for (std::uint64_t l = 0; l < layers; ++l) {
    const int layer = static_cast<int>(l);
    const auto layer_begin = static_cast<ops::OpId>(boost::num_vertices(graph));
    if (options.host_launch_ns > 0) {
      const ops::OpId launch = add_host_launch(graph, layer, options.host_launch_ns);
      std::fill(previous.begin(), previous.end(), launch);
    }
    std::optional<ExpertShare> measured;
    if (m.is_moe_layer(l)) {
      const ExpertAssignment* listed = load ? load->layer(l) : nullptr;
      if (listed) measured = expert_share(m, mw, p, listed);
    }
    for (std::uint64_t i = 0; i < N; ++i) {
      const ExpertShare* share = nullptr;
      if (m.is_moe_layer(l)) share = measured ? &*measured : &*uniform[i];
      // The FFN side's tokens come from the attention chips, not from each other.
      std::optional<ExpertShare> arriving;
      if (share && options.part == StepPart::ffn) {
        arriving = *share;
        arriving->dispatch_bytes = arriving->combine_bytes = 0;
        share = &*arriving;
      }
      const ops::OpId first = static_cast<ops::OpId>(boost::num_vertices(graph));
      const ops::OpId attention = options.part == StepPart::ffn
                                      ? previous[i]
                                      : add_attention_block(graph, m, parts[i], layer, previous[i], p.tp);
      previous[i] = options.part == StepPart::attention ? attention
                                                        : add_ffn_block(graph, m, parts[i], layer, attention, p, share);
      if (N > 1) schedule_micro_batch(graph, first, layer);
    }
    if (options.host_launch_ns > 0) wait_for_launch(graph, layer_begin);
  }
  if (options.part == StepPart::ffn) return graph;  // the head is the attention side's
  const std::uint64_t logit_rows = w.logit_rows();
  const ops::OpId final_norm = outside.add(detail::rmsnorm_op("final_norm", logit_rows, m.hidden_size));
  // The output layer stays 16-bit unless the run says it is stored as the projections are.
  ops::OpNode head = detail::matmul_op("lm_head", 1, logit_rows, m.hidden_size, m.vocab_size / p.tp);
  if (w.lm_head_weights == LmHeadWeights::projections)
    head = detail::projection(std::move(head), detail::dense_weights(m, w));
  const ops::OpId lm_head = outside.add(head);
  for (ops::OpId last : previous) outside.depend(last, final_norm);
  outside.depend(final_norm, lm_head);
  return graph;
}

}  // namespace models
