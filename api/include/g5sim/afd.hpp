#pragma once
// Attention-FFN disaggregation (AFD) as a step mode: a step's attention (and its KV cache) on A
// chips of one config, its FFN (the experts) on F chips of another, the activations crossing both
// ways at every layer, and m micro-batches keeping both sides busy (the ping-pong of
// MegaScale-Infer, arXiv 2504.02263, and of Step-3's AFD, arXiv 2507.19427).
//
// The model. The step's sequences are dealt into m micro-batches (each group's count round robin,
// as --micro-batches deals them). Micro-batch i, of T_i new tokens, passes four stages a layer,
// each on a resource of its own:
//   A(l, i)  its attention on the attention chips: the attention side of the step simulated on
//            the attention chip (every layer's attention block, the embedding before layer 0 and
//            the head after the last; tp 1, dp A: each chip holds its sequences and their cache),
//            layer l's share the time from layer l - 1's last op's end to layer l's;
//   D(l, i)  the dispatch, attention to FFN chips: bytes(l, T_i) over the link;
//   F(l, i)  its FFN on the FFN chips: the FFN side simulated on the FFN chip (every layer's FFN
//            block; tp 1, ep = dp = F; the tokens arrive from the attention chips, so no
//            all-to-all runs among the FFN chips), layer l's share as above from the embedding's end;
//   C(l, i)  the combine, FFN to attention chips: bytes(l, T_i) back.
//   bytes(l, T) = T x hidden_size x 2 (bf16 activations) x d_l, d_l = top_k + 1 if the model has
//                 shared experts (a token's hidden state to each of its routed experts and once to
//                 the shared ones; each output back) or top_k without, for an MoE layer; 1 for a
//                 dense one.
//   link(bytes)  = max(latency_a, latency_f) + bytes / min(A x bandwidth_a, F x bandwidth_f):
//                 every chip of a side sends (receives) its share at once over its own link, the
//                 link disaggregation uses (the chip's nodes' RDMA, else its C2C links together).
// Each resource takes its stages layer by layer and, within a layer, micro-batch by micro-batch;
// a stage starts when its resource is free and its micro-batch's stage before is done:
//   start = max(free(resource), done(i)),   done(i) = free(resource) = start + duration.
// The step's time is the last stage's end. With m = 1 it is the sum of every stage; with m = 2 one
// micro-batch's attention runs while the other's tokens cross or its FFN runs, so a layer costs
// about max(2 A, 2 F, 2 D) rather than A + D + F + C once the pipeline is full.
// What it leaves out: the capacity of each side (weights and the KV cache are a serve's question),
// the gate's placement (its router runs on the FFN side with the experts), and any overlap of a
// side's layer l + 1 weight reads with its layer l beyond what each side's own simulation has.

#include <cstdint>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"

namespace g5sim {

/// One micro-batch's four stages in one layer, picoseconds.
struct AfdStage {
  std::uint64_t attention_ps = 0, dispatch_ps = 0, ffn_ps = 0, combine_ps = 0;
};

/// The pipeline of the stages ([layer][micro-batch]): the step's time and each resource's busy
/// time (the two links' together).
struct AfdSchedule {
  std::uint64_t total_ps = 0, attention_busy_ps = 0, ffn_busy_ps = 0, link_busy_ps = 0;
};
/// The schedule of the header's model. Throws ConfigError naming micro_batches when the layers
/// do not all have the same number of micro-batches, and when the time overflows.
AfdSchedule afd_schedule(const std::vector<std::vector<AfdStage>>& stages);

/// The link between the two sides: the slower side's bandwidth times its chips, the longer latency.
struct AfdLink {
  double bandwidth_gb_per_s = 0, latency_ns = 0;
  std::string attention_link, ffn_link;  ///< "rdma" or "c2c": each side's
  /// latency + bytes / bandwidth, rounded to the nearest picosecond (0 bytes: 0).
  std::uint64_t picoseconds(std::uint64_t bytes) const;
};
AfdLink afd_link(const Chip& attention_chip, std::uint64_t attention_chips, const Chip& ffn_chip,
                 std::uint64_t ffn_chips);

/// bytes(l, T): the activations one way at layer `layer` for `tokens` new tokens.
std::uint64_t afd_layer_bytes(const Model& model, std::uint64_t layer, std::uint64_t tokens);

struct AfdStep {
  AfdSchedule schedule;
  AfdLink link;
  std::uint64_t layers = 0, micro_batches = 1, attention_chips = 0, ffn_chips = 0;
  /// Over every layer and micro-batch, each way.
  std::uint64_t dispatch_bytes = 0, combine_bytes = 0;
  std::vector<std::vector<AfdStage>> stages;  ///< [layer][micro-batch]
  /// Each micro-batch's sequences.
  std::vector<std::vector<SequenceRecord>> micro_batch_groups;
  /// The sides' warnings, each once, "attention: ..." or "ffn: ..." (a side whose weights and
  /// cache do not fit its chip: Request::strict_capacity makes it an error).
  std::vector<std::string> warnings;
};

/// `step` (its groups, its micro_batches as m; every other option as a run takes it, its tp, ep
/// and dp not given) under AFD: attention on `attention_chips` chips of `attention_chip`, FFN on
/// `ffn_chips` of `ffn_chip`. Throws ConfigError naming the field (groups, micro_batches, tp, ...)
/// or what simulate() throws for a side.
AfdStep afd_step(const Chip& attention_chip, std::uint64_t attention_chips, const Chip& ffn_chip,
                 std::uint64_t ffn_chips, const Model& model, const Request& step);

}  // namespace g5sim
