#include "ops/work_estimate.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"
#include "hw/cost_model.hpp"
#include "ops/attention_plan.hpp"
#include "ops/attention_unit.hpp"
#include "ops/loop_replay.hpp"
#include "ops/matmul_tiling.hpp"
#include "ops/work_split.hpp"

namespace ops {
namespace {

/// The largest attention whose plan the estimate builds (its cut size), in full commands: 2^30,
/// a plan of about 2^27 chunks (1 GB).
constexpr double kMostPlannedCommands = double(std::uint64_t{1} << 30);

using Estimate = long double;

using hw::ceil_div;

class Estimator {
 public:
  Estimator(const OpGraph& graph, const hw::Chip& chip, const LoweringOptions& options)
      : graph_(graph), chip_(chip), cost_(chip), options_(options) {}

  Estimate of(OpId op) {
    const OpNode& node = graph_[op];
    const Estimate messages = 2.0L * chip_.cores;  // a send and a wait per core, at most
    switch (traits_of(node.kind).payload) {
      case PayloadKind::matmul: return matmul(node) + messages;
      case PayloadKind::rows: return rows(node.vec(), node.dtype) + messages;
      case PayloadKind::attention:
        // Counted once, at fa2, for the read, fa2 and the combine.
        if (node.kind != OpKind::fa2) return messages;
        return attention(node.attn()) + messages;
      case PayloadKind::collective: return 2.0L * static_cast<Estimate>(node.collective().chips) + messages;
      case PayloadKind::stream: return messages;
      case PayloadKind::host: return static_cast<Estimate>(chip_.cores) + messages;  // one delay per core
    }
    return messages;
  }

 private:
  Estimate matmul(const OpNode& node) {
    const MatmulShape& s = node.mm();
    Estimate tiles = 0;
    Estimate reductions = 0;
    const std::vector<MatmulPart>& parts = splits_.get(s, node.dtype);
    const LaunchShape launch = launch_shape(s, parts);
    if (launch.m == 0) return 0;  // no core has a share
    const MatmulTiling& t = tiling(launch.m, launch.k, launch.n, node.dtype);
    for (const MatmulPart& part : parts) {
      if (part.groups.empty() || part.rows.empty() || part.cols.empty()) continue;
      for (std::uint64_t g = part.groups.begin; g < part.groups.end; ++g) {
        const std::uint64_t row_end = std::min(part.rows.end, s.rows_of(g));
        if (row_end <= part.rows.begin) continue;
        tiles += static_cast<Estimate>(ceil_div(row_end - part.rows.begin, t.tm)) *
                 static_cast<Estimate>(ceil_div(part.cols.size(), t.tn)) *
                 static_cast<Estimate>(ceil_div(part.k.size(), t.tk));
      }
      // Split-K: a send, a wait, and per row tile a load, an add and a store.
      if (part.k_parts > 1) reductions += 2 + 3.0L * static_cast<Estimate>(part.rows.size());
    }
    return 3 * tiles + reductions;
  }

  Estimate rows(const VectorShape& v, hw::DType in) const {
    const std::uint64_t load = v.load_bytes_per_row(in), store = v.store_bytes_per_row();
    const std::uint64_t tile_rows = std::max<std::uint64_t>(1, chip_.lmem_bytes_per_core / (2 * (load + store)));
    const std::uint64_t used = std::min<std::uint64_t>(chip_.cores, v.rows);
    const std::uint64_t per_core = ceil_div(v.rows, chip_.cores);
    return 4.0L * static_cast<Estimate>(ceil_div(per_core, tile_rows)) * static_cast<Estimate>(used);
  }

  // The same tiling the lowering will plan, once per distinct shape (layers repeat them).
  const MatmulTiling& tiling(std::uint64_t m, std::uint64_t k, std::uint64_t n, hw::DType t) {
    const auto key = std::make_tuple(m, k, n, t);
    auto found = tilings_.find(key);
    if (found == tilings_.end()) {
      found = tilings_.emplace(key, plan_matmul_tiling(cost_, m, k, n, t, kActivationBytes)).first;
    }
    return found->second;
  }

  // The route the lowering takes (the same decision, detail::history_route), and the plan it
  // sizes: the history resident in local memory only on the resident route.
  Estimate attention(const AttentionShape& a) {
    const bool resident_engine = chip_.engine(detail::history_engine(chip_, options_)).serves(hw::DmaRole::kv_resident);
    const detail::HistoryRoute route = detail::history_route(a.decode, a.gather, resident_engine, chip_.l2.has_value());
    const Estimate full = estimate_attention_commands(
        a, chip_, route == detail::HistoryRoute::resident, route == detail::HistoryRoute::staged, options_.attn_split,
        route == detail::HistoryRoute::stream || route == detail::HistoryRoute::none);
    if (options_.loop_kept == 0 || route != detail::HistoryRoute::none) return full;
    // The cut estimate builds the plan, whose chunk lists hold about an eighth of the full
    // commands: past kMostPlannedCommands it would itself eat memory; the full count (refused by
    // max_commands unless raised) stands.
    if (full > kMostPlannedCommands) return full;
    const std::optional<Estimate> cut = cut_attention(a);
    return cut ? *cut : full;
  }

  // Loop replay: when the lowering cuts the chunk loops (attention_unit.cpp makes the same plan
  // and the same cut), its commands from the plan itself: per chunk iteration left, as above, 8,
  // and 4 per block (its Q load, normalisation and store). Once per shape; nullopt: nothing cut.
  std::optional<Estimate> cut_attention(const AttentionShape& a) {
    auto found = cut_.find(a);
    if (found != cut_.end()) return found->second;
    const AttentionPlan plan = plan_attention(a, chip_, false, false, options_.attn_split);
    const std::vector<CutLoop> cuts = droppable_iterations(plan, options_.loop_kept, kLoopPeriodMultiple);
    std::optional<Estimate> out;
    if (!cuts.empty()) {
      Estimate commands = 0;
      for (const CoreAttention& core : plan.cores) {
        for (const AttentionBlock& block : core.blocks)
          commands += 8 * static_cast<Estimate>(block.chunk_tokens.size()) + 4;
        if (core.blocks.empty()) continue;  // the cuts are on every core that has blocks
        for (const CutLoop& cut : cuts) commands -= 8 * static_cast<Estimate>(cut.dropped);
      }
      out = commands;
    }
    return cut_.emplace(a, out).first->second;
  }

  const OpGraph& graph_;
  const hw::Chip& chip_;
  const hw::CostModel cost_;
  const LoweringOptions& options_;
  std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, hw::DType>, MatmulTiling> tilings_;
  std::map<AttentionShape, std::optional<Estimate>> cut_;
  MatmulSplits splits_{cost_};
};

}  // namespace

double estimate_commands(const OpGraph& graph, const hw::Chip& chip, const LoweringOptions& options) {
  Estimator estimator(graph, chip, options);
  Estimate total = 0;
  for (OpId op = 0; op < boost::num_vertices(graph); ++op) total += estimator.of(op);
  return static_cast<double>(total);
}

}  // namespace ops
