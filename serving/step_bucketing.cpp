#include "serving/step_bucketing.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "hw/checked_count.hpp"
#include "models/parallelism.hpp"
#include "models/run_limits.hpp"
#include "models/workload.hpp"

namespace serving {
namespace {

// The grid's edges up to models' longest context, per percent (built once, on first use).
const std::vector<std::uint64_t>& bucket_edges(std::uint64_t percent) {
  static std::mutex mutex;
  static std::map<std::uint64_t, std::vector<std::uint64_t>> grids;
  const std::lock_guard<std::mutex> lock(mutex);
  std::vector<std::uint64_t>& edges = grids[percent];
  if (edges.empty()) {
    std::uint64_t e = 1;
    edges.push_back(e);
    while (e < models::kMaxContext) {
      e = std::max(e + 1, e * (100 + percent) / 100);
      edges.push_back(e);
    }
  }
  return edges;
}

// The first edge >= value (end() past the last).
std::vector<std::uint64_t>::const_iterator edge_at_least(const std::vector<std::uint64_t>& edges, double value) {
  return std::lower_bound(edges.begin(), edges.end(), value,
                          [](std::uint64_t e, double v) { return static_cast<double>(e) < v; });
}

// The grid's edges around `edge` (one of them, or 0): the one below (0 below the first) and above.
std::pair<std::uint64_t, std::uint64_t> neighbours(std::uint64_t edge, std::uint64_t percent) {
  const std::vector<std::uint64_t>& edges = bucket_edges(percent);
  const auto at = std::lower_bound(edges.begin(), edges.end(), edge);
  const std::uint64_t below = at == edges.begin() ? 0 : *std::prev(at);
  const auto after = at != edges.end() && *at == edge ? std::next(at) : at;
  return {below, after == edges.end() ? edge : *after};
}

// A corner's rows are moved off a multiple of 2^kTypicalTwos (the header's typical lengths).
constexpr int kTypicalTwos = 3;

// Trailing zero bits of m (m = 0: 64).
int twos(std::uint64_t m) { return m == 0 ? 64 : __builtin_ctzll(m); }

}  // namespace

std::uint64_t typical_length(std::uint64_t edge, std::uint64_t percent, std::uint64_t decodes,
                             std::uint64_t verify_width, std::uint64_t chunks) {
  if (percent == 0 || chunks == 0 || edge == 0) return edge;
  if (neighbours(edge, percent).second < edge + 2) return edge;  // the edges keep their order
  // The count's nearest edges (0 when the step has no decodes, whose neighbour is the first edge).
  const auto [below, above] = neighbours(decodes, percent);
  const std::uint64_t gap = decodes == 0 ? above : std::min(decodes - below, above - decodes);
  if (gap == 0 || chunks > gap * verify_width) return edge;  // a count corner's rows keep their order
  const std::uint64_t rows = decodes * verify_width + chunks * edge;
  return twos(rows) >= kTypicalTwos && twos(rows + chunks) < twos(rows) ? edge + 1 : edge;
}

std::uint64_t nearest_edge(double value, std::uint64_t percent) {
  if (!(value >= 0.5)) return 0;
  if (percent == 0) return static_cast<std::uint64_t>(std::llround(value));
  const std::vector<std::uint64_t>& edges = bucket_edges(percent);
  const auto above = edge_at_least(edges, value);
  if (above == edges.end()) return edges.back();
  if (above == edges.begin()) return *above;
  const double low = static_cast<double>(*std::prev(above)), high = static_cast<double>(*above);
  return value / low < high / value ? *std::prev(above) : *above;  // the nearer by ratio; a tie goes up
}

std::vector<Bracket> bracket(double value, std::uint64_t percent) {
  if (!(value > 0)) return {{0, 1.0}};
  if (percent == 0) {
    const auto low = static_cast<std::uint64_t>(std::floor(value));
    const double w = value - static_cast<double>(low);
    if (w == 0) return {{low, 1.0}};
    return {{low, 1.0 - w}, {low + 1, w}};
  }
  const std::vector<std::uint64_t>& edges = bucket_edges(percent);
  const auto above = edge_at_least(edges, value);
  if (above == edges.end()) return {{edges.back(), 1.0}};
  if (static_cast<double>(*above) == value) return {{*above, 1.0}};
  const std::uint64_t high = *above;
  const std::uint64_t low = above == edges.begin() ? 0 : *std::prev(above);
  const double w = (value - static_cast<double>(low)) / static_cast<double>(high - low);
  return {{low, 1.0 - w}, {high, w}};
}

std::vector<StepAnchor> bucketed_step(const StepGroups& exact, std::uint64_t percent, std::uint64_t dp,
                                      std::uint64_t verify_width) {
  // The fullest rank, dealt as the simulator deals the step.
  models::Workload step;
  step.dealt = true;
  for (const g5sim::SequenceRecord& g : exact) step.groups.push_back({g.count, g.q_len, g.history, false});
  const models::Workload rank = models::chip_workload(step, models::Parallelism{1, 1, dp});

  // Decodes: count and history sum; chunks: count, tokens and causal attention pairs (doubles:
  // sums of at most 2^20 sequences of at most 2^20 tokens each, far inside a double's exact range).
  double decodes = 0, decode_history = 0, chunks = 0, chunk_tokens = 0, chunk_pairs = 0;
  for (const models::SequenceGroup& g : rank.groups) {
    const double c = static_cast<double>(g.count), q = static_cast<double>(g.q_len), h = static_cast<double>(g.history);
    if (g.q_len == verify_width && g.history > verify_width) {
      decodes += c, decode_history += c * h;
    } else {
      chunks += c, chunk_tokens += c * q, chunk_pairs += c * q * (h + (q + 1) / 2);
    }
  }
  // The interpolated numbers: decodes' count (exact in a step of decodes alone), their mean
  // history, the chunks' mean length.
  const std::vector<Bracket> counts =
      chunks > 0 ? bracket(decodes, percent) : std::vector<Bracket>{{static_cast<std::uint64_t>(decodes), 1.0}};
  const std::vector<Bracket> histories = bracket(decodes > 0 ? decode_history / decodes : 0, percent);
  const double q = chunks > 0 ? chunk_tokens / chunks : 0;
  const std::vector<Bracket> lengths = bracket(q, percent);
  const std::uint64_t chunk_history = chunks > 0 ? nearest_edge(chunk_pairs / chunk_tokens - (q + 1) / 2, percent) : 0;

  std::map<std::string, StepAnchor> anchors;  // by the anchor's mix text: equal corners merged
  // A corner: `count` decodes at `history` (none when 0) and, with `prompt`, the chunks (if the
  // step has any) at `q_len`; its weight added to the corner's.
  auto add = [&](std::uint64_t count, std::uint64_t history, bool prompt, std::uint64_t q_len, double weight) {
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> groups;  // (q_len, history) -> count
    if (count > 0) {
      const std::uint64_t h = std::clamp<std::uint64_t>(history, verify_width + 1, models::kMaxContext);
      // Typical histories (the header's): two or more decodes split between h - 1 and h + 1, the
      // odd one at h; the mean stays h.
      if (percent > 0 && count >= 2 && h - 1 > verify_width && h + 1 <= models::kMaxContext) {
        groups[{verify_width, h - 1}] += count / 2;
        groups[{verify_width, h + 1}] += count / 2;
        if (count % 2 == 1) groups[{verify_width, h}] += 1;
      } else {
        groups[{verify_width, h}] += count;
      }
    }
    if (prompt && chunks > 0) {
      q_len = std::max<std::uint64_t>(1, q_len);
      groups[{q_len, std::min(chunk_history, models::kMaxContext - q_len)}] += static_cast<std::uint64_t>(chunks);
    }
    StepGroups corner;
    for (const auto& [key, n] : groups) {
      corner.push_back(g5sim::SequenceRecord{(hw::Count(n) * dp).value(), key.first, key.second, ""});
    }
    if (corner.empty() || weight == 0) return;
    std::string mix = g5sim::mix_text(corner);
    StepAnchor& anchor = anchors[mix];
    anchor.groups = std::move(corner);
    anchor.mix = std::move(mix);
    anchor.weight += weight;
  };
  // A prompt corner: at its length, or, where its rows fill tiles exactly, half at it and half
  // one token longer (the header's typical lengths).
  auto add_prompt = [&](std::uint64_t count, std::uint64_t history, std::uint64_t q_len, double weight) {
    const std::uint64_t longer =
        typical_length(q_len, percent, count, verify_width, static_cast<std::uint64_t>(chunks));
    if (longer == q_len) return add(count, history, true, q_len, weight);
    add(count, history, true, q_len, weight / 2);
    add(count, history, true, longer, weight / 2);
  };
  if (decodes > 0 && chunks > 0 && percent > 0) {
    // Decodes beside chunks: the chunks' corners with the decodes at the reference history, and
    // the decodes' history apart, from steps of decodes alone (the header's split).
    const std::uint64_t reference = verify_width + 1;
    for (const Bracket& c : counts) {
      for (const Bracket& l : lengths) add_prompt(c.edge, reference, l.edge, c.weight * l.weight);
      for (const Bracket& h : histories) add(c.edge, h.edge, false, 0, c.weight * h.weight);
      add(c.edge, reference, false, 0, -c.weight);
    }
  } else {
    for (const Bracket& c : counts) {
      for (const Bracket& h : histories) {
        for (const Bracket& l : lengths) add_prompt(c.edge, h.edge, l.edge, c.weight * h.weight * l.weight);
      }
    }
  }
  std::vector<StepAnchor> out;
  for (auto& [text, anchor] : anchors) {
    if (anchor.weight != 0) out.push_back(std::move(anchor));  // a history at the reference cancels
  }
  return out;
}

}  // namespace serving
