#include "ops/attention_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hw/checked_count.hpp"
#include "hw/config_error.hpp"
#include "ops/work_split.hpp"

namespace ops {

using hw::ceil_div;
namespace {

// Causal prefill stripes a head's tokens over its cores when that computes at most this much
// more (query rows in lane tiles x keys) than contiguous parts (attention_plan.hpp).
constexpr long double kStripedWorkMargin = 0.01;

struct Item {
  std::uint64_t sequence, rows, kv_tokens;
  std::uint64_t q_begin = 0;     ///< prefill: the item's first query token in its sequence
  std::uint64_t key_offset = 0;  ///< prefill: keys before the sequence's first query (kv_len - q_len)
  std::uint64_t row_heads = 0;   ///< prefill: query heads per token in the rows (0: all heads_per_kv)
  std::uint64_t row_begin = 0;   ///< row tiles: the item's first query row in its sequence
  std::uint64_t kv_begin = 0;    ///< decode: the first history token of the item's slice
  /// prefill: its query tokens are q_begin, q_begin + q_stride, ... (> 1: a stripe, q_begin < q_stride)
  std::uint64_t q_stride = 1;
};

__extension__ using Wide = unsigned __int128;

// The KV streams in runs of alike ones (a group's sequences x KV heads), with each run's first
// position in the concatenation of every stream's `length` positions.
struct StreamRun {
  std::uint64_t first_stream = 0, streams = 0, q_len = 0, kv_len = 0;
  std::uint64_t first_position = 0, length = 0;  ///< per stream
  Wide first_work = 0, work = 0;                 ///< causal prefill: keys seen, before the run and per stream
};

std::vector<StreamRun> stream_runs(const AttentionShape& s, bool by_rows) {
  std::vector<StreamRun> runs;
  std::uint64_t stream = 0, position = 0;
  Wide work = 0;
  for (const QueryGroup& g : s.groups) {
    if (g.count == 0) continue;
    StreamRun r;
    r.first_stream = stream, r.streams = g.count * s.kv_heads, r.q_len = g.q_len, r.kv_len = g.kv_len;
    r.length = by_rows ? g.q_len * s.heads_per_kv() : s.decode ? g.kv_len : g.q_len;
    r.first_position = position, r.first_work = work;
    const Wide offset = g.kv_len - g.q_len;
    r.work = Wide(g.q_len) * offset + Wide(g.q_len) * (g.q_len + 1) / 2;
    stream += r.streams, position += r.streams * r.length, work += r.work * r.streams;
    runs.push_back(r);
  }
  return runs;
}

// Calls visit(run, stream, begin, end) for each stream's positions [begin, end) within `range`.
template <class Visit>
void for_each_piece(const std::vector<StreamRun>& runs, Range range, Visit visit) {
  auto run = std::upper_bound(runs.begin(), runs.end(), range.begin,
                              [](std::uint64_t p, const StreamRun& r) { return p < r.first_position; });
  if (run == runs.begin()) return;
  --run;
  for (std::uint64_t pos = range.begin; pos < range.end && run != runs.end();) {
    const std::uint64_t run_end = run->first_position + run->streams * run->length;
    if (pos >= run_end) {
      ++run;
      continue;
    }
    const std::uint64_t k = (pos - run->first_position) / run->length;
    const std::uint64_t stream_begin = run->first_position + k * run->length;
    const std::uint64_t end = std::min(range.end, stream_begin + run->length);
    visit(*run, run->first_stream + k, pos - stream_begin, end - stream_begin);
    pos = end;
  }
}

// Causal prefill over unlike sequences: the first query position whose keys seen before it
// reach `target` (positions in query-token order, a token at t of a stream seeing
// kv_len - q_len + t + 1 keys).
std::uint64_t position_of_work(const std::vector<StreamRun>& runs, Wide target) {
  auto run =
      std::upper_bound(runs.begin(), runs.end(), target, [](Wide w, const StreamRun& r) { return w < r.first_work; });
  --run;
  const Wide within = target - run->first_work;
  const std::uint64_t k = static_cast<std::uint64_t>(std::min<Wide>(within / run->work, run->streams));
  if (k == run->streams) return run->first_position + k * run->length;
  const Wide left = within - Wide(k) * run->work;
  const Wide offset = run->kv_len - run->q_len;
  // The first t with t offset + t (t + 1) / 2 >= left.
  std::uint64_t lo = 0, hi = run->q_len;
  while (lo < hi) {
    const std::uint64_t t = lo + (hi - lo) / 2;
    if (Wide(t) * offset + Wide(t) * (t + 1) / 2 >= left) {
      hi = t;
    } else {
      lo = t + 1;
    }
  }
  return run->first_position + k * run->length + lo;
}

// The decode cut by cost (attention_plan.hpp): cores 0, 1, ... take the streams' positions in
// order, each up to `payload` cost units, a piece costing `piece` units and one per token; a core
// opens a piece only when it has room for a token beside its cost. Returns the cores used (or, with
// `items`, fills them; the last core takes what is left).
std::uint64_t fill_by_cost(const std::vector<StreamRun>& runs, std::uint64_t payload, std::uint64_t piece,
                           std::uint64_t cores, std::uint64_t heads_per_kv, std::vector<std::vector<Item>>* items) {
  std::uint64_t core = 0, left = payload;
  for (const StreamRun& r : runs) {
    for (std::uint64_t k = 0; k < r.streams; ++k) {
      for (std::uint64_t begin = 0; begin < r.length;) {
        if (left <= piece) core += 1, left = payload;
        const bool last = items != nullptr && core + 1 >= cores;
        if (last) core = cores - 1;
        const std::uint64_t take = last ? r.length - begin : std::min(r.length - begin, left - piece);
        if (items != nullptr)
          (*items)[core].push_back({r.first_stream + k, r.q_len * heads_per_kv, take, 0, 0, 0, 0, begin});
        begin += take;
        left = left > piece + take ? left - piece - take : 0;
      }
    }
  }
  return core + 1;
}

// The least payload whose fill needs at most `cores` cores (the fill's cores never grow with the
// payload), and that fill. At payload U every core but the last consumes more than U - piece, and
// there are at most streams + cores - 1 pieces, so U = (tokens + (streams + cores) piece) / cores
// + piece always fits.
void cut_by_cost(const std::vector<StreamRun>& runs, std::uint64_t tokens, std::uint64_t cores, std::uint64_t piece,
                 std::uint64_t heads_per_kv, std::vector<std::vector<Item>>& items) {
  const std::uint64_t streams = runs.empty() ? 0 : runs.back().first_stream + runs.back().streams;
  const std::uint64_t cost = hw::checked(
      "the decode pieces' cost", [&] { return (hw::Count(tokens) + hw::Count(streams + cores) * piece).value(); });
  std::uint64_t lo = std::max(piece + 1, ceil_div(tokens + streams * piece, cores));
  std::uint64_t hi = ceil_div(cost, cores) + piece + 1;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (fill_by_cost(runs, mid, piece, cores, heads_per_kv, nullptr) <= cores) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  fill_by_cost(runs, lo, piece, cores, heads_per_kv, &items);
}

// Items over the independent KV streams ("sequences" below). Decode by history uses `parts` of
// the cores (decode_split_parts); the others stay idle in fa2.
std::vector<std::vector<Item>> split_items(const AttentionShape& s, std::uint64_t cores, std::uint64_t parts,
                                           AttentionSplit split, bool stripes, std::uint64_t piece_tokens) {
  std::vector<std::vector<Item>> items(cores);
  const std::uint64_t hpk = s.heads_per_kv();
  if (split == AttentionSplit::head && s.decode) {
    // The query rows of all sequences, in balanced ranges; each item reads its whole history.
    const std::vector<StreamRun> runs = stream_runs(s, true);
    const std::uint64_t total =
        runs.empty() ? 0 : runs.back().first_position + runs.back().streams * runs.back().length;
    for (std::uint64_t c = 0; c < cores; ++c) {
      for_each_piece(runs, balanced_part(total, cores, c),
                     [&](const StreamRun& r, std::uint64_t seq, std::uint64_t b, std::uint64_t e) {
                       items[c].push_back({seq, e - b, r.kv_len});
                     });
    }
    return items;
  }
  const std::vector<StreamRun> runs = stream_runs(s, false);
  const std::uint64_t total = runs.empty() ? 0 : runs.back().first_position + runs.back().streams * runs.back().length;
  auto add_range = [&](std::uint64_t c, Range range) {
    for_each_piece(runs, range, [&](const StreamRun& r, std::uint64_t seq, std::uint64_t b, std::uint64_t e) {
      if (s.decode) {
        items[c].push_back({seq, r.q_len * hpk, e - b, 0, 0, 0, 0, b});
      } else {
        items[c].push_back({seq, (e - b) * hpk, r.kv_len, b, r.kv_len - r.q_len});
      }
    });
  };
  if (s.causal && !s.decode && cores > 1 && runs.size() == 1 && (runs[0].streams * hpk) % cores == 0) {
    // Alike sequences whose (KV stream, query head) pairs divide evenly over the cores: each core
    // takes an equal run of them, every query token of each: equal causal work, and every core
    // the same blocks (loop replay can cut them), as FlashAttention parallelises over heads.
    const StreamRun& r = runs[0];
    const std::uint64_t per_core = r.streams * hpk / cores;
    for (std::uint64_t c = 0; c < cores; ++c) {
      for (std::uint64_t unit = c * per_core; unit < (c + 1) * per_core;) {
        const std::uint64_t seq = unit / hpk;
        const std::uint64_t heads = std::min((c + 1) * per_core, (seq + 1) * hpk) - unit;
        items[c].push_back({seq, r.q_len * heads, r.kv_len, 0, r.kv_len - r.q_len, heads});
        unit += heads;
      }
    }
    return items;
  }
  // A sliding window's queries see at most `window` keys each, about alike past the first window:
  // contiguous parts balance them, and the splits below, for work that grows with the position,
  // are not needed.
  const bool growing = s.causal && !s.decode && s.window == 0;
  if (stripes && growing && cores > 1 && runs.size() == 1 && runs[0].streams * hpk < cores &&
      cores % (runs[0].streams * hpk) == 0) {
    // Alike sequences, fewer (KV stream, query head) pairs than cores, dividing them: each pair
    // goes to g = cores / pairs cores, core j of them taking its query tokens j, j + g, j + 2g, ...
    // (striped attention, Brandon et al. 2023, arXiv:2311.09431): equal causal work, and, as each
    // block reads the keys up to the end of its last token's stripe of g, every core the same
    // blocks (loop replay can cut them); striped_band trims the rows of the band they span.
    const StreamRun& r = runs[0];
    const std::uint64_t g = cores / (r.streams * hpk);
    for (std::uint64_t c = 0; c < cores; ++c) {
      const std::uint64_t unit = c / g, j = c % g;
      if (j >= r.q_len) continue;
      items[c].push_back({unit / hpk, (r.q_len - j + g - 1) / g, r.kv_len, j, r.kv_len - r.q_len, 1, 0, 0, g});
    }
    return items;
  }
  if (growing && cores > 1 && runs.size() == 1) {
    // Alike sequences: a causal query's work grows with its position, so core c takes parts c
    // and 2C - 1 - c of 2C, an early and a late one: every core gets about the same keys.
    for (std::uint64_t c = 0; c < cores; ++c) {
      add_range(c, balanced_part(total, 2 * cores, c));
      add_range(c, balanced_part(total, 2 * cores, 2 * cores - 1 - c));
    }
    return items;
  }
  if (growing && cores > 1 && !runs.empty()) {
    // Unlike sequences: contiguous ranges of query tokens holding equal shares of the keys seen.
    const Wide work = runs.back().first_work + runs.back().work * runs.back().streams;
    std::uint64_t begin = 0;
    for (std::uint64_t c = 0; c < cores; ++c) {
      const std::uint64_t end = c + 1 == cores ? total : position_of_work(runs, work * (c + 1) / cores);
      add_range(c, Range{begin, std::max(begin, end)});
      begin = std::max(begin, end);
    }
    return items;
  }
  const std::uint64_t used = s.decode ? std::min(parts, cores) : cores;
  if (used > 1 && piece_tokens > 0) {
    cut_by_cost(runs, total, used, piece_tokens, hpk, items);
    return items;
  }
  for (std::uint64_t c = 0; c < used; ++c) add_range(c, balanced_part(total, used, c));
  return items;
}

// Row tiles (attention_plan.hpp): the history cut into `parts` balanced ranges, range p to the
// p-th group of cores / parts cores, whose cores take the range's (slice, row tile) items in turn.
std::vector<std::vector<Item>> split_row_tiles(const AttentionShape& s, std::uint64_t cores, std::uint64_t parts,
                                               std::uint64_t row_block) {
  std::vector<std::vector<Item>> items(cores);
  const std::vector<StreamRun> runs = stream_runs(s, false);
  const std::uint64_t total = runs.empty() ? 0 : runs.back().first_position + runs.back().streams * runs.back().length;
  const std::uint64_t group = cores / parts;
  for (std::uint64_t p = 0; p < parts; ++p) {
    std::uint64_t turn = 0;
    for_each_piece(
        runs, balanced_part(total, parts, p),
        [&](const StreamRun& r, std::uint64_t seq, std::uint64_t b, std::uint64_t e) {
          const std::uint64_t rows = r.q_len * s.heads_per_kv();
          for (std::uint64_t r0 = 0; r0 < rows; r0 += row_block, ++turn) {
            items[p * group + turn % group].push_back({seq, std::min(row_block, rows - r0), e - b, 0, 0, 0, r0, b});
          }
        });
  }
  return items;
}

std::uint64_t footprint(const AttentionShape& s, std::uint64_t rows, std::uint64_t tk, std::uint64_t buffers,
                        std::uint64_t resident_tokens) {
  std::uint64_t bytes =
      rows * s.qk_dim * kActivationBytes + rows * (s.v_dim + 2) * kAccumulatorBytes + rows * tk * kAccumulatorBytes;
  bytes += resident_tokens > 0 ? resident_tokens * s.kv_token_bytes : buffers * tk * s.kv_token_bytes;
  if (s.kv_dequant) bytes += tk * s.kv_elements * kActivationBytes;
  return bytes;
}

// Causal prefill: an item's rows are its tokens x these query heads (heads inner).
std::uint64_t token_heads(const AttentionShape& s, const Item& it) {
  return it.row_heads != 0 ? it.row_heads : s.heads_per_kv();
}

// The keys row block [r0, r0 + rows) of an item streams: all of them, or, causal, up to its last
// token's (a striped item's: up to the end of that token's stripe, so that every core's block b
// streams the same chunks), and with a sliding window from its first token's window on.
std::uint64_t block_keys(const AttentionShape& s, const Item& it, std::uint64_t r0, std::uint64_t rows) {
  if (!s.causal || s.decode) return it.kv_tokens;
  const std::uint64_t last = (r0 + rows - 1) / token_heads(s, it);
  const std::uint64_t seen = it.q_stride > 1 ? (last + 1) * it.q_stride : it.q_begin + last + 1;
  const std::uint64_t end = std::min(it.kv_tokens, seen + it.key_offset);
  if (s.window == 0) return end;
  // A sliding window (never striped): the block's first token, at position p, sees keys from
  // p - window + 1 on; the keys before them are not streamed.
  const std::uint64_t p = it.key_offset + it.q_begin + r0 / token_heads(s, it);
  return end - std::min(end, p + 1 > s.window ? p + 1 - s.window : 0);
}

// A striped block's rows span q_stride times as many positions as its tokens, so its last chunks
// (the band of keys those positions see) are seen by ever fewer of its rows: each such chunk is
// computed for the suffix of rows that see its first key (a row sees keys up to key_offset + its
// position), rounded up to a tile of rows / q_stride rows (whole lane tiles). The masked work is
// then about a contiguous block's of as many rows (R^2 / 2 keys), not q_stride times that, and
// the band's iterations come in alike stretches of about R / chunk that loop replay can cut.
// Returns the rows of the block's last chunks that are computed for fewer than `rows`.
std::vector<std::uint32_t> striped_band(const AttentionShape& s, const Item& it, std::uint64_t r0, std::uint64_t rows,
                                        std::uint64_t keys, std::uint64_t chunk, std::uint64_t lanes) {
  if (it.q_stride <= 1) return {};
  const std::uint64_t heads = token_heads(s, it);
  const std::uint64_t first_token = r0 / heads;                                                // item-local
  const std::uint64_t seen_by_first = it.key_offset + it.q_begin + it.q_stride * first_token;  // its last key
  const std::uint64_t tile = ceil_div(ceil_div(rows, it.q_stride), lanes) * lanes;
  std::vector<std::uint32_t> band;
  for (std::uint64_t i = ceil_div(keys, chunk); i-- > 0;) {
    const std::uint64_t first_key = i * chunk;
    if (first_key <= seen_by_first) break;  // every row sees this chunk and those before it
    // The first item-local token that sees first_key: key_offset + q_begin + q_stride t >= first_key.
    const std::uint64_t token = ceil_div(first_key - it.key_offset - it.q_begin, it.q_stride);
    const std::uint64_t skipped = std::min(rows, (token - first_token) * heads);
    const std::uint64_t computed = std::min(rows, std::max<std::uint64_t>(1, ceil_div(rows - skipped, tile)) * tile);
    if (computed == rows) break;
    band.push_back(static_cast<std::uint32_t>(computed));
  }
  return {band.rbegin(), band.rend()};
}

// The cube's work of a split: query rows (in whole lane tiles) x keys, over every block and chunk.
long double padded_work(const AttentionShape& s, const std::vector<std::vector<Item>>& items, std::uint64_t row_block,
                        std::uint64_t chunk, std::uint64_t lanes) {
  long double work = 0;
  auto padded = [&](std::uint64_t rows) { return static_cast<long double>(ceil_div(rows, lanes) * lanes); };
  for (const auto& core : items) {
    for (const Item& it : core) {
      for (std::uint64_t r0 = 0; r0 < it.rows; r0 += row_block) {
        const std::uint64_t rows = std::min(row_block, it.rows - r0), keys = block_keys(s, it, r0, rows);
        work += padded(rows) * static_cast<long double>(keys);
        const std::vector<std::uint32_t> band = striped_band(s, it, r0, rows, keys, chunk, lanes);
        const std::uint64_t band_begin = ceil_div(keys, chunk) - band.size();
        for (std::size_t i = 0; i < band.size(); ++i) {
          const std::uint64_t first_key = (band_begin + i) * chunk;
          work -= (padded(rows) - padded(band[i])) * static_cast<long double>(std::min(chunk, keys - first_key));
        }
      }
    }
  }
  return work;
}

// What a split asks of the tiles: its largest item's rows and keys, and a core's keys in all.
struct ItemExtent {
  std::uint64_t max_rows = 1, max_tokens = 1, max_resident = 0;
};
ItemExtent measure(const std::vector<std::vector<Item>>& items, const AttentionShape& s, std::uint64_t lanes) {
  ItemExtent e;
  for (const auto& core : items) {
    std::uint64_t share = 0;
    for (const Item& it : core) {
      // A sliding window's prompt: a row block of at most the window's tokens (in lane tiles)
      // streams its band of at most twice the window; a larger one would stream its whole span.
      const std::uint64_t rows = s.window > 0 && !s.decode
                                     ? std::min(it.rows, ceil_div(s.window, lanes) * lanes * token_heads(s, it))
                                     : it.rows;
      e.max_rows = std::max(e.max_rows, rows);
      e.max_tokens = std::max(e.max_tokens, it.kv_tokens);
      share += it.kv_tokens;
    }
    e.max_resident = std::max(e.max_resident, share);
  }
  return e;
}

// Stripes balance the cores exactly and give them alike blocks, but a block whose rows are few
// lane tiles computes a wide masked band: they are kept only when their work is within
// kStripedWorkMargin of the contiguous parts' (or the parts fit no tiles).
bool stripes_pay(const AttentionShape& s, std::uint64_t lanes, const std::vector<std::vector<Item>>& stripes,
                 const AttentionTiles& stripe_tiles, const std::vector<std::vector<Item>>& parts,
                 const AttentionTiles& part_tiles) {
  if (part_tiles.row_block == 0) return true;
  return padded_work(s, stripes, stripe_tiles.row_block, stripe_tiles.chunk_tokens, lanes) <=
         (1 + kStripedWorkMargin) * padded_work(s, parts, part_tiles.row_block, part_tiles.chunk_tokens, lanes);
}

}  // namespace

Fa2ChunkCycles fa2_chunk_cycles(const hw::CostModel& cost, const AttentionShape& s, std::uint64_t rows,
                                std::uint64_t tokens) {
  Fa2ChunkCycles c;
  if (s.kv_dequant) c.dequant = cost.vector_cycles(tokens * s.kv_elements * kDequantOpsPerElement, kActivationDtype);
  // S = Q K^T: K is stored token-major, an NT instruction.
  c.qk = cost.matmul_cycles(rows, s.qk_dim, tokens, kActivationDtype, hw::MatmulLayout::nt);
  c.softmax = cost.vector_cycles(rows * tokens * kSoftmaxOpsPerScore, kAccumulatorDtype);
  c.exp = cost.sfu_cycles(rows * tokens);  // exp of the scores
  c.pv = cost.matmul_cycles(rows, tokens, s.v_dim, kActivationDtype);
  c.row_exp = cost.sfu_cycles(rows);  // exp(m_old - m_new) per row
  c.rescale = cost.vector_cycles(rows * (s.v_dim * kRescaleOpsPerOutput + 2), kAccumulatorDtype);
  return c;
}

namespace {

// P* of decode_split_parts, at most `cores` parts: a core works on `core_rows` query rows of a
// token, and each part leaves `piece_rows` partial rows (a sequence's rows; with row tiles, the
// part's group of cores shares them).
std::uint64_t split_parts(const AttentionShape& s, const hw::Chip& chip, bool partials_may_use_l2,
                          std::uint64_t core_rows, std::uint64_t piece_rows, std::uint64_t cores) {
  const hw::CostModel cost(chip);
  // t_tok: a history token's time on one core, its transfer alone or the tensor engine's work on
  // it for its query rows (a 64-token chunk's instructions, as the lowering emits them, / 64).
  constexpr std::uint64_t kChunk = 64;
  const std::uint64_t chunk_cycles = fa2_chunk_cycles(cost, s, core_rows, kChunk).total();
  const double token_ns =
      std::max(cost.cycles_ns(chunk_cycles) / kChunk,
               static_cast<double>(s.kv_token_bytes) / cost.alone_gb_per_s(chip.default_kv_engine()));
  const double piece_bytes = static_cast<double>(piece_rows) * static_cast<double>(partial_row_bytes(s));
  const double tokens = static_cast<double>(s.kv_heads) * static_cast<double>(s.keys());
  auto parts_at = [&](double bytes_per_ns) {
    const double best = std::sqrt(tokens * token_ns * bytes_per_ns / (2 * piece_bytes));
    if (!(best < static_cast<double>(cores))) return cores;  // also NaN
    return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(best)));
  };
  if (partials_may_use_l2 && chip.l2) {
    const std::uint64_t parts = parts_at(chip.l2->bandwidth_gb_per_s);
    const double pieces = static_cast<double>(parts) + static_cast<double>(s.sequences()) - 1;
    if (pieces * piece_bytes <= static_cast<double>(chip.l2->capacity_bytes)) return parts;
  }
  return parts_at(cost.roofline_bytes_per_s() / 1e9);
}

std::uint64_t rows_per_sequence(const AttentionShape& s) {
  std::uint64_t rows = 1;
  for (const QueryGroup& g : s.groups) rows = std::max(rows, g.q_len * s.heads_per_kv());
  return rows;
}

// Row tiles: the tile for R rows a sequence when a block holds at most `row_block`: of the lane
// multiples up to it and the balanced ceil(R / ceil(R / row_block)), the one that leaves a core
// the fewest lane-padded rows per history token, ceil(t / lanes) lanes x ceil(M / G) tiles x
// (N / P), with M = ceil(R / t) tiles, P = max(1, floor(cores / M)) parts and G = floor(cores /
// P) cores a part (FlashMLA's 64-row tiles are one of them); on a tie the larger tile (fewer
// partials).
std::uint64_t choose_row_tile(std::uint64_t rows, std::uint64_t row_block, std::uint64_t lanes, std::uint64_t cores) {
  std::vector<std::uint64_t> options{ceil_div(rows, ceil_div(rows, row_block))};
  lanes = std::max<std::uint64_t>(1, lanes);
  for (std::uint64_t t = lanes; t <= row_block; t += lanes) options.push_back(t);
  std::uint64_t best = 0;
  double best_cost = 0;
  for (const std::uint64_t t : options) {
    const std::uint64_t tiles = ceil_div(rows, t), parts = std::max<std::uint64_t>(1, cores / tiles);
    const std::uint64_t per_core = ceil_div(tiles, cores / parts);  // tiles a core walks in turn
    const double cost = static_cast<double>(ceil_div(t, lanes) * lanes * per_core) / static_cast<double>(parts);
    if (best == 0 || cost < best_cost || (cost == best_cost && t > best)) best = t, best_cost = cost;
  }
  return best;
}

// Row tiles: the parts, at most one per group of `tiles` cores (each core a row block of a token).
std::uint64_t row_tile_parts(const AttentionShape& s, const hw::Chip& chip, bool partials_may_use_l2,
                             std::uint64_t row_block, std::uint64_t tiles) {
  const std::uint64_t cores = std::max<std::uint64_t>(1, chip.cores / tiles);
  return split_parts(s, chip, partials_may_use_l2, row_block, rows_per_sequence(s), cores);
}

}  // namespace

std::uint64_t decode_piece_tokens(const AttentionShape& s, const hw::Chip& chip, std::uint64_t cores) {
  // Cut by tokens: MLA's latent streams, and the history of prompt chunks (attention_plan.hpp).
  if (!s.decode || s.kv_heads <= 1 || s.over_chunks || s.kv_token_bytes == 0 || cores == 0) return 0;
  const hw::CostModel cost(chip);
  const hw::EngineId engine = chip.default_kv_engine();
  const double share = cost.roofline_bytes_per_s() / 1e9 / static_cast<double>(cores);
  const double bytes_per_ns = std::min(cost.alone_gb_per_s(engine), share);
  const std::uint64_t rows = rows_per_sequence(s);
  const double bytes = static_cast<double>(rows * (s.qk_dim * kActivationBytes + partial_row_bytes(s))) +
                       2 * chip.round_trip_ns(engine) * bytes_per_ns;
  return static_cast<std::uint64_t>(std::ceil(bytes / static_cast<double>(s.kv_token_bytes)));
}

std::uint64_t decode_split_parts(const AttentionShape& s, const hw::Chip& chip, bool partials_may_use_l2) {
  if (!s.decode || chip.cores <= 1) return chip.cores;
  const std::uint64_t rows = rows_per_sequence(s);
  return split_parts(s, chip, partials_may_use_l2, rows, rows, chip.cores);
}

std::uint64_t partial_row_bytes(const AttentionShape& s) { return s.v_dim * kAccumulatorBytes + kStatBytesPerRow; }

std::uint64_t decode_partial_bytes(const AttentionShape& s, const AttentionPlan& plan) {
  std::uint64_t rows = 0;
  for (const CoreAttention& c : plan.cores) {
    for (const AttentionBlock& b : c.blocks) rows += b.rows;
  }
  return rows * partial_row_bytes(s);
}

AttentionTiles choose_tiles(const AttentionShape& s, std::uint64_t lmem, std::uint64_t max_rows,
                            std::uint64_t max_tokens, std::uint64_t max_resident, bool resident) {
  std::vector<std::uint64_t> row_options{max_rows};
  // Below one row per lane the cube wastes lanes, but a small local memory may leave no choice.
  for (std::uint64_t r = 1; r < max_rows; r *= 2) row_options.insert(row_options.begin() + 1, r);
  std::vector<std::uint64_t> chunk_options;
  for (std::uint64_t t = 512; t >= 16; t /= 2) {
    const std::uint64_t capped = std::min(t, (max_tokens + 15) / 16 * 16);
    if (chunk_options.empty() || chunk_options.back() != capped) chunk_options.push_back(capped);
  }
  AttentionTiles plan;
  if (resident) {
    // The whole share if any tiles leave room for it.
    for (std::uint64_t rows : row_options) {
      for (std::uint64_t tk : chunk_options) {
        const std::uint64_t share = std::max<std::uint64_t>(1, max_resident);
        const std::uint64_t bytes = footprint(s, rows, tk, 0, share);
        if (bytes <= lmem) return AttentionTiles{rows, tk, 0, bytes, share, 1};
      }
    }
    // Rounds: all rows in one block; two round buffers of whole chunks if they fit, else one.
    for (std::uint64_t tk : chunk_options) {
      const std::uint64_t base = footprint(s, max_rows, tk, 0, 0);
      if (base >= lmem) continue;
      const std::uint64_t room_tokens = (lmem - base) / s.kv_token_bytes;
      for (std::uint64_t round_buffers : {2, 1}) {
        const std::uint64_t round = room_tokens / round_buffers / tk * tk;
        if (round == 0) continue;
        return AttentionTiles{max_rows, tk,           0, footprint(s, max_rows, tk, 0, round * round_buffers),
                              round,    round_buffers};
      }
    }
    return plan;
  }
  for (std::uint64_t rows : row_options) {
    for (std::uint64_t tk : chunk_options) {
      if (footprint(s, rows, tk, 2, 0) <= lmem) {
        std::uint64_t buffers = 2;
        while (buffers < 4 && footprint(s, rows, tk, buffers + 1, 0) <= lmem) ++buffers;
        return AttentionTiles{rows, tk, buffers, footprint(s, rows, tk, buffers, 0)};
      }
    }
  }
  return plan;  // row_block 0: nothing fits
}

double estimate_attention_commands(const AttentionShape& s, const hw::Chip& chip, bool resident, bool staged,
                                   AttentionSplit split, bool tile_rows) {
  using LD = long double;
  const std::uint64_t cores = chip.cores, seqs = s.sequences(), hpk = s.heads_per_kv();
  // The largest item (the split's balanced ranges), and how many items there are.
  std::uint64_t max_q = 0, max_kv = 0, min_q = ~std::uint64_t{0};
  for (const QueryGroup& g : s.groups) {
    max_q = std::max(max_q, g.q_len), max_kv = std::max(max_kv, g.kv_len), min_q = std::min(min_q, g.q_len);
  }
  const std::uint64_t rows_per_seq = max_q * hpk;
  const bool by_history = s.decode && split == AttentionSplit::seq;
  const std::uint64_t positions = s.kv_heads * (by_history ? s.keys()
                                                : s.decode ? s.query_tokens() * hpk
                                                           : s.query_tokens());
  std::uint64_t parts = by_history ? decode_split_parts(s, chip, chip.l2.has_value() && !staged) : cores;
  LD items =
      static_cast<LD>(std::min(parts, s.kv_heads * (s.decode ? s.keys() : s.query_tokens()))) + static_cast<LD>(seqs);
  std::uint64_t max_rows = 0, max_tokens = 0, max_resident = 0;
  if (by_history) {
    // Every item holds all rows of its sequence and a slice of its history.
    const std::uint64_t share = ceil_div(positions, parts);
    max_rows = rows_per_seq, max_tokens = std::min(max_kv, share), max_resident = share;
  } else {
    const std::uint64_t share = ceil_div(positions, cores);
    max_rows = s.decode ? std::min(rows_per_seq, share) : std::min(max_q, share) * hpk;
    max_tokens = max_kv, max_resident = max_kv * ceil_div(share, s.decode ? min_q * hpk : min_q);
  }
  AttentionTiles tiles = choose_tiles(s, chip.lmem_bytes_per_core, std::max<std::uint64_t>(1, max_rows),
                                      std::max<std::uint64_t>(1, max_tokens), max_resident, resident);
  if (tiles.row_block == 0) return 0;  // the plan will say what does not fit
  if (by_history && tile_rows && !resident && tiles.row_block < max_rows) {
    // Row tiles: fewer, shorter slices, each walked once per tile (on the tiles' cores).
    const std::uint64_t rows =
        choose_row_tile(rows_per_seq, tiles.row_block, chip.tensor_unit().lanes_per_core, chip.cores);
    const std::uint64_t tiles_per_sequence = ceil_div(rows_per_seq, rows);
    parts = row_tile_parts(s, chip, chip.l2.has_value() && !staged, rows, tiles_per_sequence);
    items = static_cast<LD>(std::min(parts, s.kv_heads * s.keys())) + static_cast<LD>(seqs);
    tiles = choose_tiles(s, chip.lmem_bytes_per_core, rows,
                         std::max<std::uint64_t>(1, std::min(max_kv, ceil_div(positions, parts))), 0, false);
    if (tiles.row_block == 0) return 0;
  }
  const LD chunk = static_cast<LD>(tiles.chunk_tokens), row_block = static_cast<LD>(tiles.row_block);
  // By history: each item's row blocks stream only its slice (all slices add up to the history);
  // otherwise each row block streams its sequence's whole KV (an upper bound when causal).
  LD chunks = 0;
  if (by_history) {
    chunks = std::ceil(static_cast<LD>(rows_per_seq) / row_block) *
             (static_cast<LD>(s.kv_heads) * static_cast<LD>(s.keys()) / chunk + items);
  } else {
    for (const QueryGroup& g : s.groups) {
      const LD rows = static_cast<LD>(g.count) * static_cast<LD>(s.kv_heads) * static_cast<LD>(g.q_len * hpk);
      const LD group_items = items * rows / std::max<LD>(1, static_cast<LD>(s.query_tokens() * s.kv_heads * hpk));
      chunks += (rows / row_block + group_items) * std::ceil(static_cast<LD>(g.kv_len) / chunk);
    }
  }
  // Staged through the L2, a chunk adds at most a DDR -> L2 read and a fence (a round holds one
  // chunk or more).
  return static_cast<double>(chunks * (staged ? 10 : 8) + items * 4);
}

std::vector<std::vector<RoundPiece>> cut_rounds(const std::vector<AttentionBlock>& blocks, std::uint64_t round_tokens) {
  std::vector<std::vector<RoundPiece>> rounds;
  std::uint64_t in_round = round_tokens;  // full: the first chunk opens a round
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    if (!blocks[b].first_pass) continue;
    for (std::size_t i = 0; i < blocks[b].chunk_tokens.size(); ++i) {
      const std::uint64_t tk = blocks[b].chunk_tokens[i];
      if (in_round + tk > round_tokens) rounds.emplace_back(), in_round = 0;
      auto& pieces = rounds.back();
      if (pieces.empty() || pieces.back().block != b) pieces.push_back(RoundPiece{b, i, 0, 0});
      ++pieces.back().chunks;
      pieces.back().tokens += tk;
      in_round += tk;
    }
  }
  return rounds;
}

namespace {

// Where iteration i of a block stops being alike the one before: it computes other rows or keys
// than i - 1 (chunk_rows, chunk_tokens), or queues another chunk (i + buffers's keys, or none
// from n - buffers on). Added to `breaks`, unsorted.
void add_breaks(const AttentionBlock& block, std::uint64_t buffers, std::vector<std::size_t>& breaks) {
  const std::vector<std::uint64_t>& t = block.chunk_tokens;
  const std::size_t n = t.size();
  for (std::size_t i = 1; i < n; ++i) {
    if (t[i] == t[i - 1]) continue;
    breaks.push_back(i);
    if (i >= buffers + 1) breaks.push_back(i - buffers);  // the iteration that queues chunk i
  }
  if (n > buffers) breaks.push_back(n - buffers);  // the first to queue nothing
  const std::size_t band_begin = n - block.band_rows.size();
  for (std::size_t k = 0; k < block.band_rows.size(); ++k) {
    if (k == 0 ? band_begin > 0 && block.band_rows[0] != block.rows : block.band_rows[k] != block.band_rows[k - 1]) {
      breaks.push_back(band_begin + k);
    }
  }
}

}  // namespace

std::vector<CutLoop> droppable_iterations(const AttentionPlan& plan, std::uint64_t kept, std::uint64_t multiple) {
  if (plan.resident || plan.buffers == 0 || kept == 0 || multiple == 0) return {};
  std::vector<const CoreAttention*> cores;
  for (const CoreAttention& c : plan.cores) {
    if (!c.blocks.empty()) cores.push_back(&c);
  }
  if (cores.empty()) return {};
  const std::vector<AttentionBlock>& blocks = cores.front()->blocks;
  for (const CoreAttention* c : cores) {
    if (c->blocks.size() != blocks.size()) return {};
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      if (c->blocks[b].chunk_tokens.size() != blocks[b].chunk_tokens.size()) return {};
    }
  }
  std::vector<CutLoop> cuts;
  std::vector<std::size_t> breaks;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const std::size_t n = blocks[b].chunk_tokens.size();
    // A run ends where some core's iteration differs from its one before.
    breaks.assign({0, n});
    for (const CoreAttention* c : cores) add_breaks(c->blocks[b], plan.buffers, breaks);
    std::sort(breaks.begin(), breaks.end());
    breaks.erase(std::unique(breaks.begin(), breaks.end()), breaks.end());
    for (std::size_t k = 0; k + 1 < breaks.size(); ++k) {
      const std::size_t first = breaks[k], end = breaks[k + 1];
      const std::uint64_t length = end - first;
      // An iteration follows the left-out ones (always: the last `buffers` queue none).
      if (length > kept && end < n) {
        const std::uint64_t dropped = (length - kept) / multiple * multiple;
        if (dropped > 0) cuts.push_back(CutLoop{b, first, length - dropped, dropped});
      }
    }
  }
  return cuts;
}

AttentionPlan with_iterations_dropped(const AttentionPlan& plan, const std::vector<CutLoop>& cuts) {
  AttentionPlan out;
  out.row_block = plan.row_block;
  out.chunk_tokens = plan.chunk_tokens;
  out.buffers = plan.buffers;
  out.resident = plan.resident;
  out.round_tokens = plan.round_tokens;
  out.round_buffers = plan.round_buffers;
  out.lmem_bytes = plan.lmem_bytes;
  out.partials_per_sequence = plan.partials_per_sequence;
  out.partials_in_l2 = plan.partials_in_l2;
  out.row_tiles = plan.row_tiles;
  out.cores.resize(plan.cores.size());
  for (std::size_t c = 0; c < plan.cores.size(); ++c) {
    const CoreAttention& from = plan.cores[c];
    CoreAttention& to = out.cores[c];
    to.first_pass_tokens = from.first_pass_tokens;
    to.rounds = from.rounds;
    to.blocks.reserve(from.blocks.size());
    for (std::size_t b = 0; b < from.blocks.size(); ++b) {
      const AttentionBlock& block = from.blocks[b];
      AttentionBlock cut{block.sequence, block.rows, {}, block.first_pass, block.row_begin, block.kv_begin, {}};
      std::size_t from_chunk = 0;
      auto keep_until = [&](std::size_t end) {
        for (; from_chunk < end; ++from_chunk) {
          cut.chunk_tokens.push_back(block.chunk_tokens[from_chunk]);
          if (block.chunk_rows(from_chunk) != block.rows || !cut.band_rows.empty()) {
            cut.band_rows.push_back(static_cast<std::uint32_t>(block.chunk_rows(from_chunk)));
          }
        }
      };
      for (const CutLoop& loop : cuts) {
        if (loop.block != b) continue;
        keep_until(loop.first + loop.kept);
        from_chunk += loop.dropped;
      }
      keep_until(block.chunk_tokens.size());
      to.blocks.push_back(std::move(cut));
    }
  }
  return out;
}

AttentionPlan plan_attention(const AttentionShape& s, const hw::Chip& chip, bool resident, bool partials_may_use_l2,
                             AttentionSplit split, bool tile_rows) {
  const bool by_history = s.decode && split == AttentionSplit::seq;
  const std::uint64_t parts = by_history ? decode_split_parts(s, chip, partials_may_use_l2) : chip.cores;
  const std::uint64_t piece_tokens =
      by_history ? decode_piece_tokens(s, chip, std::min<std::uint64_t>(parts, chip.cores)) : 0;
  auto items = split_items(s, chip.cores, parts, split, true, piece_tokens);
  const std::uint64_t lanes = std::max<std::uint64_t>(1, chip.tensor_unit().lanes_per_core);
  ItemExtent extent = measure(items, s, lanes);
  const std::uint64_t lmem = chip.lmem_bytes_per_core;
  AttentionPlan plan;
  plan.resident = resident;
  AttentionTiles tiles = choose_tiles(s, lmem, extent.max_rows, extent.max_tokens, extent.max_resident, resident);
  const bool striped = std::any_of(items.begin(), items.end(), [](const std::vector<Item>& core) {
    return !core.empty() && core.front().q_stride > 1;
  });
  if (striped && tiles.row_block != 0) {
    auto parts_items = split_items(s, chip.cores, parts, split, false, piece_tokens);
    const ItemExtent parts_extent = measure(parts_items, s, lanes);
    const AttentionTiles parts_tiles =
        choose_tiles(s, lmem, parts_extent.max_rows, parts_extent.max_tokens, parts_extent.max_resident, resident);
    if (!stripes_pay(s, lanes, items, tiles, parts_items, parts_tiles)) {
      items = std::move(parts_items), extent = parts_extent, tiles = parts_tiles;
    }
  }
  if (by_history && tile_rows && !resident && tiles.row_block != 0 && tiles.row_block < extent.max_rows) {
    // Row tiles (attention_plan.hpp): the rows of a sequence over a group of cores, in M alike tiles.
    const std::uint64_t row_block =
        choose_row_tile(extent.max_rows, tiles.row_block, chip.tensor_unit().lanes_per_core, chip.cores);
    const std::uint64_t tiles_per_sequence = ceil_div(extent.max_rows, row_block);
    items = split_row_tiles(s, chip.cores, row_tile_parts(s, chip, partials_may_use_l2, row_block, tiles_per_sequence),
                            row_block);
    extent = measure(items, s, lanes);
    tiles = choose_tiles(s, lmem, extent.max_rows, extent.max_tokens, 0, false);
    plan.row_tiles = true;
  }
  const bool found = tiles.row_block != 0;
  plan.row_block = tiles.row_block, plan.chunk_tokens = tiles.chunk_tokens, plan.buffers = tiles.buffers;
  plan.lmem_bytes = tiles.lmem_bytes;
  plan.round_tokens = tiles.round_tokens, plan.round_buffers = tiles.round_buffers;
  if (!found) {
    if (resident) {
      throw hw::InputError(
          "kv_read_engine",
          fmt::format("a kv_resident engine reads the history into local memory in rounds beside all {} query "
                      "rows of an item, but {} ({}) has lmem_bytes_per_core = {}, too little for those rows and one "
                      "{}-byte history row; read it with a kv_stream engine ({}) or use fewer query rows",
                      extent.max_rows, chip.name, chip.source, lmem, s.kv_token_bytes,
                      chip.engine(chip.default_kv_engine()).name));
    }
    throw hw::ConfigError(
        fmt::format("{}: lmem_bytes_per_core: {} B cannot hold the smallest fa2 tiles", chip.source, lmem));
  }

  plan.cores.resize(chip.cores);
  if (s.decode) plan.partials_per_sequence.assign(s.sequences(), 0);
  for (std::uint64_t c = 0; c < chip.cores; ++c) {
    for (const Item& it : items[c]) {
      // A slice's other row tiles read it again: it is one partial, and read once, by its first.
      if (it.row_begin == 0) {
        if (s.decode) ++plan.partials_per_sequence[it.sequence];
        plan.cores[c].first_pass_tokens += it.kv_tokens;
      }
      for (std::uint64_t r0 = 0; r0 < it.rows; r0 += plan.row_block) {
        AttentionBlock block;
        block.sequence = it.sequence;
        block.rows = std::min(plan.row_block, it.rows - r0);
        block.first_pass = r0 == 0 && it.row_begin == 0;
        block.row_begin = it.row_begin + r0;
        block.kv_begin = it.kv_begin;
        // Causal prefill: rows are tokens x heads (heads inner: row_heads of them, or all); the
        // block's last token sees keys up to itself (plus the kv_len - q_len before its first query).
        const std::uint64_t keys = block_keys(s, it, r0, block.rows);
        for (std::uint64_t t0 = 0; t0 < keys; t0 += plan.chunk_tokens) {
          block.chunk_tokens.push_back(std::min(plan.chunk_tokens, keys - t0));
        }
        block.band_rows = striped_band(s, it, r0, block.rows, keys, plan.chunk_tokens, lanes);
        plan.cores[c].blocks.push_back(std::move(block));
      }
    }
    if (resident) plan.cores[c].rounds = cut_rounds(plan.cores[c].blocks, plan.round_tokens);
  }
  plan.partials_in_l2 =
      by_history && partials_may_use_l2 && chip.l2 && decode_partial_bytes(s, plan) <= chip.l2->capacity_bytes;
  return plan;
}

}  // namespace ops
