// Lowering of matmul ops: split over cores (ops/work_split.hpp), tiled per core
// (ops/matmul_tiling.hpp), and software-pipelined:
//   prologue: loads of tile 0
//   tile t:   TIU(t) waits on its last load; loads of tile t+1 wait on TIU(t-1), whose buffers
//             they overwrite; after the last k-step of an output tile, its store waits on TIU(t).
// Because GDMA completion ids advance in order, waiting on a tile's last load also covers the
// store that freed the C buffer it accumulates into.
// Split-K (ops/work_split.hpp): a core's k-range ends each output tile with a store of its fp32
// partial sum instead of the output; then every core of the cell sends a message once its
// partials are stored, waits for the cell's k_parts messages, loads its column slice of every
// partial (one strided transfer on the cross-core engine), adds them on the vector unit and
// stores the output.
// Cross-op prefetch: the first weight tile is queued ahead of the op's entry waits (it needs
// nothing the producers make), so it moves as soon as the tiles engine has issued the producers'
// transfers; the A loads and the instructions wait for the producers as before.
// When an expert_weights (or DSA indexer_cache_read) op feeds the matmul (same_core edge), the
// B tiles of the first m-tile are loaded on that op's behalf: the weight stream is its traffic; re-loads for further
// m-tiles, if the rows do not fit one tile, stay the matmul's own. A kv_cache_read feeding it
// likewise owns the first pass of the A tiles (the cached latent).

#include <algorithm>
#include <array>
#include <map>
#include <optional>

#include "hw/dtype.hpp"
#include "ops/attention_unit.hpp"
#include "ops/lowering_context.hpp"
#include "ops/matmul_tiling.hpp"
#include "ops/op_lowerings.hpp"
#include "ops/work_split.hpp"

namespace ops::detail {
namespace {

struct MatmulTile {
  std::uint64_t group, m0, n0, rows, cols, depth, k0;
  bool load_a;        // false when the resident A tile is reused across n-tiles
  bool first_n_tile;  // columns start at 0: the first pass over these A rows on any core
  bool first_m_tile;  // rows start at 0: the first pass over these weights on any core
  bool last_k;        // ends an output tile: store C
  bool single_c;      // its tiling has one accumulator: a new output tile waits for the last store
};

// The same-core producer of the given kind that streams one operand on this matmul's behalf.
std::optional<OpId> stream_of(const LoweringContext& ctx, OpId op, OpKind kind) {
  for (auto [e, end] = boost::in_edges(op, ctx.graph); e != end; ++e) {
    const OpId src = boost::source(*e, ctx.graph);
    if (ctx.graph[*e].kind == EdgeKind::same_core && ctx.graph[src].kind == kind) return src;
  }
  return std::nullopt;
}

// Bytes of the A tile covering k-range [k0, k0 + depth) of `rows` rows. With a row layout of
// a_row_bytes per k elements, the k-tiles' shares telescope to exactly a_row_bytes per row.
std::uint64_t a_tile_bytes(const MatmulShape& s, std::uint64_t e, std::uint64_t rows, std::uint64_t k0,
                           std::uint64_t depth) {
  if (s.a_row_bytes == 0) return rows * depth * e;
  return rows * (s.a_row_bytes * (k0 + depth) / s.k - s.a_row_bytes * k0 / s.k);
}

// Split-K's second phase on every core of a cell: a message once its partials are stored, a wait
// for all k_parts of them, then its column slice of every partial in, the adds, the output out.
void reduce_partials(LoweringContext& ctx, OpId op, const std::vector<MatmulPart>& parts,
                     const std::vector<CmdRef>& partial_stored) {
  const MatmulShape& s = ctx.graph[op].mm();
  const EngineId cross = reduction_engine(ctx.chip);
  std::map<std::uint32_t, std::uint32_t> message_of_cell;
  // The partials were written moments before by the cell's cores: an L2 that caches reads still
  // holds them when all of them fit (hw::Chip::L2::caches_reads).
  std::uint64_t partial_bytes = 0;
  for (const MatmulPart& part : parts) {
    if (part.k_parts > 1) partial_bytes += part.rows.size() * part.cols.size() * kAccumulatorBytes;
  }
  const bool from_l2 = ctx.chip.l2 && ctx.chip.l2->caches_reads && partial_bytes <= ctx.chip.l2->capacity_bytes;
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    const MatmulPart& part = parts[core];
    if (part.k_parts <= 1 || part.rows.empty() || part.cols.empty()) continue;
    auto [cell, fresh] = message_of_cell.try_emplace(part.cell, 0);
    if (fresh) cell->second = ++ctx.out.program.message_count;
    sim::Command send;
    send.kind = sim::CommandKind::send_msg;
    send.msg = cell->second;
    ctx.push(op, core, ctx.tensor(), send, {partial_stored[core]});
    sim::Command wait;
    wait.kind = sim::CommandKind::wait_msg;
    wait.msg = cell->second;
    wait.msg_count = part.k_parts;
    const CmdRef all_stored = ctx.push(op, core, ctx.tensor(), wait, {});
    const Range mine = part.reduce_cols();
    if (mine.empty()) continue;
    CoreEmitter emit(ctx, op, core);
    const std::uint64_t rows = part.rows.size(), w = mine.size();
    // Row tiles whose k_parts slices and output fit half of local memory (double buffering).
    const std::uint64_t row_bytes = part.k_parts * w * kAccumulatorBytes + w * kActivationBytes;
    const std::uint64_t tile_rows = std::max<std::uint64_t>(1, ctx.chip.lmem_bytes_per_core / 2 / row_bytes);
    CmdRef previous_add;
    for (std::uint64_t r0 = 0; r0 < rows; r0 += tile_rows) {
      const std::uint64_t n_rows = std::min(tile_rows, rows - r0);
      // One strided load gathers the slice from all k_parts partials (a descriptor with a stride
      // per dimension); the first row tile's waits for the barrier, later ones for the last add.
      const CmdRef after = previous_add.id != 0 ? previous_add : all_stored;
      const std::uint64_t bytes = part.k_parts * n_rows * w * kAccumulatorBytes;
      const CmdRef loaded = from_l2 ? emit.load_from_l2_on(cross, bytes, after, w * kAccumulatorBytes)
                                    : emit.load_on(cross, bytes, after, w * kAccumulatorBytes);
      const CmdRef add = emit.compute(ctx.cost.vector_cycles(part.k_parts * n_rows * w, hw::DType::fp32), {loaded});
      emit.store(n_rows * w * kActivationBytes, add, w == s.n ? 0 : w * kActivationBytes);
      previous_add = add;
    }
  }
}

}  // namespace

void lower_matmul(LoweringContext& ctx, OpId op) {
  const OpNode& node = ctx.graph[op];
  const MatmulShape& s = node.mm();
  const std::uint64_t e = hw::bytes_of(node.dtype);
  const std::uint64_t e_out = kActivationBytes;
  std::optional<OpId> weights = stream_of(ctx, op, OpKind::expert_weights);
  if (!weights) weights = stream_of(ctx, op, OpKind::indexer_cache_read);
  const std::optional<OpId> activations = stream_of(ctx, op, OpKind::kv_cache_read);
  // The cached history streams as A on the history engine (MLA standard mode).
  const EngineId history_engine = activations ? ctx.attention_unit(*activations).history_engine : ctx.tiles();
  const std::vector<MatmulPart>& parts = ctx.splits.get(s, node.dtype, !weights && !activations);
  // Most cores get the same part shape, and layers repeat them: plan each shape once a run.
  auto tiling_for = [&](std::uint64_t rows, std::uint64_t depth, std::uint64_t cols) -> const MatmulTiling& {
    return ctx.tiling(rows, depth, cols, node.dtype, e_out);
  };
  std::vector<MatmulTile> tiles;
  std::vector<CmdRef> last_partial_store(ctx.chip.cores);
  // A chip whose L2 caches DDR reads (hw::Chip::L2::caches_reads): cores walk their tiles in step,
  // so an operand block that another core reads too is read by both at about the same time, and
  // only the first (in lowering order) fetches it from DDR; the others hit the L2, provided one
  // wave's operands (every core's first A and B tiles) fit in it. A core re-reading its own
  // earlier block does so a whole pass later: it hits only when all of the op's operands fit.
  bool l2_caches = ctx.chip.l2 && ctx.chip.l2->caches_reads;
  bool wave_checked = false;
  std::uint64_t operand_bytes = 0;
  for (std::uint64_t g = 0; g < s.groups; ++g)
    operand_bytes += s.rows_of(g) * (s.a_row_bytes ? s.a_row_bytes : s.k * e);
  operand_bytes += s.groups * s.n * (s.b_col_bytes ? s.b_col_bytes : s.k * e);
  bool operands_stay = l2_caches && operand_bytes <= ctx.chip.l2->capacity_bytes;
  // (group, m0 or n0, rows or cols, k0, depth) -> the first core that read the block.
  std::map<std::array<std::uint64_t, 5>, std::uint32_t> a_reader, b_reader;
  auto hits = [&](std::map<std::array<std::uint64_t, 5>, std::uint32_t>& readers, std::array<std::uint64_t, 5> key,
                  std::uint32_t core) {
    if (!l2_caches) return false;
    const auto [it, fresh] = readers.try_emplace(key, core);
    return !fresh && (it->second != core || operands_stay);
  };
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    const MatmulPart& part = parts[core];
    if (part.groups.empty() || part.rows.empty() || part.cols.empty()) continue;
    // This core's tiles in loop order (groups, m, n, k).
    tiles.clear();
    for (std::uint64_t g = part.groups.begin; g < part.groups.end; ++g) {
      const std::uint64_t row_end = std::min(part.rows.end, s.rows_of(g));
      if (row_end <= part.rows.begin) continue;
      const MatmulTiling& t = tiling_for(row_end - part.rows.begin, part.k.size(), part.cols.size());
      ctx.out.ops[op].peak_lmem_bytes = std::max(ctx.out.ops[op].peak_lmem_bytes, t.lmem_bytes);
      for (std::uint64_t m0 = part.rows.begin; m0 < row_end; m0 += t.tm) {
        const std::uint64_t rows = std::min(t.tm, row_end - m0);
        for (std::uint64_t n0 = part.cols.begin; n0 < part.cols.end; n0 += t.tn) {
          const std::uint64_t cols = std::min(t.tn, part.cols.end - n0);
          for (std::uint64_t k0 = part.k.begin; k0 < part.k.end; k0 += t.tk) {
            const std::uint64_t depth = std::min(t.tk, part.k.end - k0);
            const bool reuse_a = t.tk == part.k.size() && n0 != part.cols.begin;
            tiles.push_back({g, m0, n0, rows, cols, depth, k0, !reuse_a, n0 == 0, m0 == 0, k0 + depth == part.k.end,
                             t.c_buffers == 1});
          }
        }
      }
    }
    if (tiles.empty()) continue;
    CoreEmitter emit(ctx, op, core);
    // Row-major operands: an A tile is rows of its k-slice, contiguous when it spans all of k; a
    // B tile is depth rows of its columns, contiguous when it spans all n columns; likewise C.
    // The first weight tile loads ahead of the producers (LoweringOptions::prefetch_weights).
    auto b_bytes_of = [&](const MatmulTile& t) {
      return s.b_col_bytes == 0 ? t.depth * t.cols * e
                                : t.cols * (s.b_col_bytes * (t.k0 + t.depth) / s.k - s.b_col_bytes * t.k0 / s.k);
    };
    if (l2_caches && !wave_checked) {
      const MatmulTile& t = tiles.front();
      const std::uint64_t wave = ctx.chip.cores * (a_tile_bytes(s, e, t.rows, t.k0, t.depth) + b_bytes_of(t));
      l2_caches = wave <= ctx.chip.l2->capacity_bytes;
      operands_stay = operands_stay && l2_caches;
      wave_checked = true;
    }
    CmdRef prefetched;
    if (!weights && ctx.may_prefetch(op, b_bytes_of(tiles.front()))) {
      prefetched = emit.prefetch(b_bytes_of(tiles.front()), tiles.front().cols == s.n ? 0 : tiles.front().cols * e);
    }
    auto loads = [&](const MatmulTile& t, CmdRef after) {
      CmdRef a_loaded;
      if (t.load_a) {
        const std::uint64_t a_bytes = a_tile_bytes(s, e, t.rows, t.k0, t.depth);
        const std::uint64_t a_row = t.depth == s.k ? 0 : a_bytes / t.rows;
        const bool cached = hits(a_reader, {t.group, t.m0, t.rows, t.k0, t.depth}, core);
        a_loaded = cached                          ? emit.load_from_l2(a_bytes, after, a_row)
                   : activations && t.first_n_tile ? emit.load_as(*activations, history_engine, a_bytes, after, a_row)
                                                   : emit.load(a_bytes, after, a_row);
      }
      const bool b_cached = hits(b_reader, {t.group, t.n0, t.cols, t.k0, t.depth}, core);
      if (&t == &tiles.front() && prefetched.id != 0) return std::array<CmdRef, 2>{a_loaded, prefetched};
      const std::uint64_t b_bytes = b_bytes_of(t);
      const std::uint64_t b_row = t.cols == s.n ? 0 : t.cols * e;
      const CmdRef b_loaded = b_cached                    ? emit.load_from_l2(b_bytes, after, b_row)
                              : weights && t.first_m_tile ? emit.load_as(*weights, ctx.tiles(), b_bytes, after, b_row)
                                                          : emit.load(b_bytes, after, b_row);
      // Both operands must be in: on one engine the later id covers the earlier.
      return std::array<CmdRef, 2>{a_loaded, b_loaded};
    };
    // With one accumulator, an output tile's first instruction also waits for the previous
    // output tile's store (completion ids are in order, so waiting on it covers the loads).
    std::array<CmdRef, 2> next_loaded = loads(tiles.front(), CmdRef{});
    CmdRef previous_tiu, last_store;
    bool first_k = true;
    const bool partial = part.k_parts > 1;
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      const MatmulTile& t = tiles[i];
      const CmdRef store_wait = t.single_c && first_k ? last_store : CmdRef{};
      // Quantised weights (models/weight_format.hpp): fp8 quantises the bf16 A tile first, int
      // formats dequantise the B tile; fp8's block scales rescale the fp32 sums after the cube.
      if (s.a_quant_ops != 0 && t.load_a) {
        emit.compute(ctx.cost.vector_cycles(t.rows * t.depth * s.a_quant_ops, kAccumulatorDtype), {next_loaded[0]});
      }
      if (s.b_dequant_ops != 0) {
        emit.compute(ctx.cost.vector_cycles(t.depth * t.cols * s.b_dequant_ops, kActivationDtype), {next_loaded[1]});
      }
      const CmdRef cube = emit.compute(ctx.cost.matmul_cycles(t.rows, t.depth, t.cols, node.dtype),
                                       {next_loaded[0], next_loaded[1], store_wait});
      CmdRef tiu = cube;  // the last instruction writing this tile's C
      if (s.k_block_rescale != 0) {
        const std::uint64_t blocks = (t.depth + s.k_block_rescale - 1) / s.k_block_rescale;
        tiu = emit.compute(ctx.cost.vector_cycles(t.rows * t.cols * blocks, kAccumulatorDtype));
      }
      if (i + 1 < tiles.size()) next_loaded = loads(tiles[i + 1], previous_tiu);
      if (t.last_k && partial) {
        // The fp32 partial of this k-range, in the core's own [rows, cols] buffer.
        last_store = emit.store(t.rows * t.cols * kAccumulatorBytes, tiu,
                                t.cols == part.cols.size() ? 0 : t.cols * kAccumulatorBytes);
      } else if (t.last_k) {
        CmdRef done = tiu;
        if (s.bias) {
          // The tile's bias columns in, added to each of its rows.
          const CmdRef bias = emit.load(t.cols * kActivationBytes, {});
          done = emit.compute(ctx.cost.vector_cycles(t.rows * t.cols, kAccumulatorDtype), {bias});
        }
        last_store = emit.store((t.rows + s.out_reduce - 1) / s.out_reduce * t.cols * e_out, done,
                                t.cols == s.n ? 0 : t.cols * e_out);
      }
      first_k = t.last_k;
      previous_tiu = tiu;  // (the next loads reuse A and B buffers: waiting on the rescale is safe)
    }
    if (partial) last_partial_store[core] = last_store;
  }
  reduce_partials(ctx, op, parts, last_partial_store);
}

}  // namespace ops::detail
