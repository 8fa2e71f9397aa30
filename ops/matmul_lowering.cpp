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
  // holds them when all of them fit (hw::Chip::L2::caches_reads), and a software-managed one is
  // where they were stored (partials_in_l2).
  const bool from_l2 = ctx.chip.l2 && split_k_partial_bytes(parts) <= ctx.chip.l2->capacity_bytes;
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

// The operands' L2 reuse on a chip whose L2 caches DDR reads (hw::Chip::L2::caches_reads): cores
// walk their tiles in step, so an operand block that another core reads too is read by both at
// about the same time, and only the first (in lowering order) fetches it from DDR; the others hit
// the L2, provided one wave's operands (every core's first A and B tiles) fit in it. A core
// re-reading its own earlier block does so a whole pass later: it hits only when all of the op's
// operands fit.
class L2OperandReuse {
 public:
  L2OperandReuse(const LoweringContext& ctx, const MatmulShape& s, std::uint64_t e) : ctx_(ctx) {
    enabled_ = ctx.chip.l2 && ctx.chip.l2->caches_reads;
    std::uint64_t operand_bytes = 0;
    for (std::uint64_t g = 0; g < s.groups; ++g)
      operand_bytes += s.rows_of(g) * (s.a_row_bytes ? s.a_row_bytes : s.k * e);
    operand_bytes += s.groups * s.n * (s.b_col_bytes ? s.b_col_bytes : s.k * e);
    operands_stay_ = enabled_ && operand_bytes <= ctx.chip.l2->capacity_bytes;
  }

  /// Once, with the first core's first tile's operand bytes: does a wave fit?
  void check_wave(std::uint64_t first_tile_bytes) {
    if (!enabled_ || wave_checked_) return;
    enabled_ = ctx_.chip.cores * first_tile_bytes <= ctx_.chip.l2->capacity_bytes;
    operands_stay_ = operands_stay_ && enabled_;
    wave_checked_ = true;
  }

  /// Whether `core`'s read of the block (group, m0 or n0, rows or cols, k0, depth) hits the L2.
  bool a_hits(const MatmulTile& t, std::uint32_t core) {
    return hits(a_reader_, {t.group, t.m0, t.rows, t.k0, t.depth}, core);
  }
  bool b_hits(const MatmulTile& t, std::uint32_t core) {
    return hits(b_reader_, {t.group, t.n0, t.cols, t.k0, t.depth}, core);
  }

 private:
  using Readers = std::map<std::array<std::uint64_t, 5>, std::uint32_t>;  // block -> the first core that read it
  bool hits(Readers& readers, std::array<std::uint64_t, 5> key, std::uint32_t core) {
    if (!enabled_) return false;
    const auto [it, fresh] = readers.try_emplace(key, core);
    return !fresh && (it->second != core || operands_stay_);
  }

  const LoweringContext& ctx_;
  bool enabled_ = false, wave_checked_ = false, operands_stay_ = false;
  Readers a_reader_, b_reader_;
};

// Staged activations (ops/work_split.hpp): every active core copies its share of A's rows into
// the L2 and sends a message; each waits for all of them before its first A load. Returns each
// core's wait (empty for idle cores).
std::vector<CmdRef> stage_activations(LoweringContext& ctx, OpId op, const std::vector<MatmulPart>& parts) {
  const MatmulShape& s = ctx.graph[op].mm();
  const std::uint64_t row = s.a_row_bytes != 0 ? s.a_row_bytes : s.k * hw::bytes_of(ctx.graph[op].dtype);
  std::vector<std::uint32_t> active;
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    if (!parts[core].rows.empty() && !parts[core].cols.empty()) active.push_back(core);
  }
  const std::uint32_t msg = ++ctx.out.program.message_count;
  std::uint32_t senders = 0;
  for (std::size_t i = 0; i < active.size(); ++i) {
    const Range rows = balanced_part(s.m, active.size(), i);
    if (rows.empty()) continue;
    CoreEmitter emit(ctx, op, active[i]);
    const CmdRef copied = emit.stage_to_l2(op, ctx.tiles(), rows.size() * row, {});
    sim::Command send;
    send.kind = sim::CommandKind::send_msg;
    send.msg = msg;
    ctx.push(op, active[i], ctx.tensor(), send, {copied});
    ++senders;
  }
  std::vector<CmdRef> staged(ctx.chip.cores);
  for (std::uint32_t core : active) {
    sim::Command wait;
    wait.kind = sim::CommandKind::wait_msg;
    wait.msg = msg;
    wait.msg_count = senders;
    staged[core] = ctx.push(op, core, ctx.tensor(), wait, {});
  }
  return staged;
}

// A core's tiles in loop order (groups, m, n, k), with what each loads and ends.
std::vector<MatmulTile> core_tiles(LoweringContext& ctx, OpId op, const MatmulPart& part, const MatmulTiling& t) {
  const OpNode& node = ctx.graph[op];
  const MatmulShape& s = node.mm();
  std::vector<MatmulTile> tiles;
  for (std::uint64_t g = part.groups.begin; g < part.groups.end; ++g) {
    const std::uint64_t row_end = std::min(part.rows.end, s.rows_of(g));
    if (row_end <= part.rows.begin) continue;
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
  return tiles;
}

// Where a core's A and B tiles come from: the L2 when A was staged there (after the staging's
// barrier, `staged`) or when another core read them (L2OperandReuse),
// the stream that feeds the matmul for the first pass (kv_cache_read's history as A, expert or
// indexer weights as B), the prefetched first weight tile, else the matmul's own DDR loads.
// Row-major operands: an A tile is rows of its k-slice, contiguous when it spans all of k; a B
// tile is depth rows of its columns, contiguous when it spans all n columns.
class OperandLoader {
 public:
  OperandLoader(LoweringContext& ctx, OpId op, CoreEmitter& emit, std::uint32_t core, L2OperandReuse& l2, CmdRef staged)
      : ctx_(ctx),
        s_(ctx.graph[op].mm()),
        e_(hw::bytes_of(ctx.graph[op].dtype)),
        emit_(emit),
        core_(core),
        l2_(l2),
        staged_(staged) {
    weights_ = stream_of(ctx, op, OpKind::expert_weights);
    if (!weights_) weights_ = stream_of(ctx, op, OpKind::indexer_cache_read);
    activations_ = stream_of(ctx, op, OpKind::kv_cache_read);
    // The cached history streams as A on the history engine (MLA standard mode).
    history_engine_ = activations_ ? ctx.attention_unit(*activations_).history_engine : ctx.tiles();
  }

  bool streamed() const { return weights_ || activations_; }

  std::uint64_t a_bytes(const MatmulTile& t) const { return a_tile_bytes(s_, e_, t.rows, t.k0, t.depth); }
  std::uint64_t b_bytes(const MatmulTile& t) const {
    return s_.b_col_bytes == 0 ? t.depth * t.cols * e_
                               : t.cols * (s_.b_col_bytes * (t.k0 + t.depth) / s_.k - s_.b_col_bytes * t.k0 / s_.k);
  }

  /// The DDR rows tile t's B load moves (0: one contiguous run).
  std::uint64_t b_row(const MatmulTile& t) const {
    return b_tile_row_bytes(ctx_.chip.weight_layout, s_.k, s_.n, t.depth, t.cols, b_bytes(t), e_);
  }

  /// The first weight tile, queued ahead of the producers (LoweringOptions::prefetch_weights).
  void prefetch_first(const MatmulTile& first, OpId op) {
    if (!weights_ && ctx_.may_prefetch(op, b_bytes(first))) {
      prefetched_ = emit_.prefetch(b_bytes(first), b_row(first));
      if (prefetched_.id != 0) prefetched_tile_ = &first;
    }
  }

  /// Tile t's A (when it loads one) and B loads after `after`; on one engine the later id covers
  /// the earlier.
  std::array<CmdRef, 2> load(const MatmulTile& t, CmdRef after) {
    CmdRef a_loaded;
    if (t.load_a) {
      const std::uint64_t bytes = a_bytes(t);
      const std::uint64_t row = t.depth == s_.k ? 0 : bytes / t.rows;
      a_loaded = staged_.id != 0                  ? emit_.load_from_l2(bytes, after.id != 0 ? after : staged_, row)
                 : l2_.a_hits(t, core_)           ? emit_.load_from_l2(bytes, after, row)
                 : activations_ && t.first_n_tile ? emit_.load_as(*activations_, history_engine_, bytes, after, row)
                                                  : emit_.load(bytes, after, row);
    }
    const bool b_cached = l2_.b_hits(t, core_);
    if (&t == prefetched_tile_) return {a_loaded, prefetched_};
    const std::uint64_t bytes = b_bytes(t);
    const std::uint64_t row = b_row(t);
    const CmdRef b_loaded = b_cached                     ? emit_.load_from_l2(bytes, after, row)
                            : weights_ && t.first_m_tile ? emit_.load_as(*weights_, ctx_.tiles(), bytes, after, row)
                                                         : emit_.load(bytes, after, row);
    return {a_loaded, b_loaded};
  }

 private:
  LoweringContext& ctx_;
  const MatmulShape& s_;
  std::uint64_t e_;
  CoreEmitter& emit_;
  std::uint32_t core_;
  L2OperandReuse& l2_;
  CmdRef staged_;  // the staging barrier when A is read from the L2, else empty
  std::optional<OpId> weights_, activations_;
  EngineId history_engine_;
  CmdRef prefetched_;
  const MatmulTile* prefetched_tile_ = nullptr;
};

// What ends an output tile: the fp32 partial of a split-K range into the core's own buffer, or
// the output (with the tile's bias added, and out_reduce rows summed into one); returns the store.
CmdRef store_tile(LoweringContext& ctx, CoreEmitter& emit, const MatmulShape& s, const MatmulPart& part,
                  const MatmulTile& t, CmdRef tiu, bool partials_in_l2) {
  if (part.k_parts > 1) {
    const std::uint64_t bytes = t.rows * t.cols * kAccumulatorBytes;
    const std::uint64_t row = t.cols == part.cols.size() ? 0 : t.cols * kAccumulatorBytes;
    return partials_in_l2 ? emit.store_to_l2(bytes, tiu, row) : emit.store(bytes, tiu, row);
  }
  CmdRef done = tiu;
  if (s.bias) {
    const CmdRef bias = emit.load(t.cols * kActivationBytes, {});
    done = emit.compute(ctx.cost.vector_cycles(t.rows * t.cols, kAccumulatorDtype), {bias});
  }
  return emit.store((t.rows + s.out_reduce - 1) / s.out_reduce * t.cols * kActivationBytes, done,
                    t.cols == s.n ? 0 : t.cols * kActivationBytes);
}

// One core's tiles, software-pipelined (the header comment); returns its last store.
CmdRef lower_matmul_core(LoweringContext& ctx, OpId op, const MatmulPart& part, std::uint32_t core,
                         const std::vector<MatmulTile>& tiles, L2OperandReuse& l2, CmdRef staged, bool partials_in_l2) {
  const OpNode& node = ctx.graph[op];
  const MatmulShape& s = node.mm();
  CoreEmitter emit(ctx, op, core);
  OperandLoader operands(ctx, op, emit, core, l2, staged);
  l2.check_wave(operands.a_bytes(tiles.front()) + operands.b_bytes(tiles.front()));
  operands.prefetch_first(tiles.front(), op);
  // With one accumulator, an output tile's first instruction also waits for the previous output
  // tile's store (completion ids are in order, so waiting on it covers the loads).
  std::array<CmdRef, 2> next_loaded = operands.load(tiles.front(), CmdRef{});
  CmdRef previous_tiu, last_store;
  bool first_k = true;
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
    if (i + 1 < tiles.size()) next_loaded = operands.load(tiles[i + 1], previous_tiu);
    if (t.last_k) last_store = store_tile(ctx, emit, s, part, t, tiu, partials_in_l2);
    first_k = t.last_k;
    previous_tiu = tiu;  // (the next loads reuse A and B buffers: waiting on the rescale is safe)
  }
  return last_store;
}

}  // namespace

void lower_matmul(LoweringContext& ctx, OpId op) {
  const OpNode& node = ctx.graph[op];
  const MatmulShape& s = node.mm();
  const bool streamed = stream_of(ctx, op, OpKind::expert_weights) || stream_of(ctx, op, OpKind::indexer_cache_read) ||
                        stream_of(ctx, op, OpKind::kv_cache_read);
  const std::vector<MatmulPart>& parts = ctx.splits.get(s, node.dtype, !streamed);
  L2OperandReuse l2(ctx, s, hw::bytes_of(node.dtype));
  const bool a_staged = std::any_of(parts.begin(), parts.end(), [](const MatmulPart& p) { return p.a_staged; });
  const std::vector<CmdRef> staged = a_staged ? stage_activations(ctx, op, parts) : std::vector<CmdRef>(ctx.chip.cores);
  const bool partials_in_l2 = ops::partials_in_l2(ctx.chip, parts);
  std::vector<CmdRef> last_partial_store(ctx.chip.cores);
  // One tiling for every core (ops/work_split.hpp, launch_shape); layers repeat their matmuls, so
  // each shape is planned once a run.
  const LaunchShape launch = launch_shape(s, parts);
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    const MatmulPart& part = parts[core];
    if (part.groups.empty() || part.rows.empty() || part.cols.empty()) continue;
    const std::vector<MatmulTile> tiles =
        core_tiles(ctx, op, part, ctx.tiling(launch.m, launch.k, launch.n, node.dtype, kActivationBytes));
    if (tiles.empty()) continue;
    const CmdRef last_store = lower_matmul_core(ctx, op, part, core, tiles, l2, staged[core], partials_in_l2);
    if (part.k_parts > 1) last_partial_store[core] = last_store;
  }
  reduce_partials(ctx, op, parts, last_partial_store);
}

}  // namespace ops::detail
