#include "ops/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "ops/lowering_context.hpp"

namespace ops {
namespace detail {

using sim::Engine;
constexpr std::size_t E(Engine e) { return static_cast<std::size_t>(e); }

LoweringContext::LoweringContext(const OpGraph& g, const hw::Chip& c, const LoweringOptions& o, Lowered& l)
    : graph(g), chip(c), options(o), out(l) {
  const std::size_t n = boost::num_vertices(g);
  last.assign(n, std::vector<LastIds>(c.cores, LastIds{}));
  entry.assign(n, std::vector<Entry>(c.cores));
  message.assign(n, 0);
}

const AttentionPlan& LoweringContext::attention_plan(const AttentionShape& s, bool resident) {
  const std::vector<std::uint64_t> key{s.batch,       s.q_len,          s.kv_len,     s.heads,  s.kv_heads,
                                       s.qk_dim,      s.v_dim,          s.kv_elements, s.kv_token_bytes,
                                       s.kv_dequant,  s.decode,         s.gather,     resident,
                                       static_cast<std::uint64_t>(options.attn_split)};
  auto found = plans_.find(key);
  if (found == plans_.end()) found = plans_.emplace(key, plan_attention(s, chip, resident, options.attn_split)).first;
  return found->second;
}

bool LoweringContext::is_barrier(const OpGraph::edge_descriptor& e) const {
  const EdgeKind kind = graph[e].kind;
  if (kind == EdgeKind::data) return true;
  // The SDMA route, and a DSA gather, make fa2 wait for the whole read, on every core.
  const OpNode& source = graph[boost::source(e, graph)];
  return kind == EdgeKind::same_core && source.kind == OpKind::kv_cache_read &&
         (options.kv_read_engine == Engine::sdma || source.attn.gather);
}

void enter_op(LoweringContext& ctx, OpId op, std::uint32_t core) {
  LoweringContext::Entry& entry = ctx.entry[op][core];
  if (entry.entered) return;
  entry.entered = true;
  auto& tiu = ctx.out.program.cores[core].queue(Engine::tiu);
  for (auto [e, end] = boost::in_edges(op, ctx.graph); e != end; ++e) {
    const OpId producer = boost::source(*e, ctx.graph);
    const LastIds& produced = ctx.last[producer][core];
    if (ctx.is_barrier(*e)) {
      sim::Command wait;
      wait.kind = sim::CommandKind::wait_msg;
      wait.op = static_cast<std::uint32_t>(op);
      wait.msg = ctx.message[producer];
      wait.msg_count = ctx.chip.cores;
      tiu.push_back(wait);
      entry.tiu_for_dma = static_cast<std::uint32_t>(tiu.size());
      ctx.last[op][core][E(Engine::tiu)] = entry.tiu_for_dma;
    }
    switch (ctx.graph[*e].kind) {
      case EdgeKind::data: break;
      case EdgeKind::order:
        entry.tiu_for_dma = std::max(entry.tiu_for_dma, produced[E(Engine::tiu)]);
        break;
      case EdgeKind::same_core:
        entry.gdma_for_tiu = std::max(entry.gdma_for_tiu, produced[E(Engine::gdma)]);
        entry.sdma_for_tiu = std::max(entry.sdma_for_tiu, produced[E(Engine::sdma)]);
        break;
    }
  }
}

CoreEmitter::CoreEmitter(LoweringContext& ctx, OpId op, std::uint32_t core)
    : ctx_(ctx), op_(op), core_(core), queues_(ctx.out.program.cores[core]) {}

std::uint32_t CoreEmitter::push(OpId as, Engine engine, sim::Command cmd) {
  enter_op(ctx_, as, core_);
  LoweringContext::Entry& entry = ctx_.entry[as][core_];
  if (!entry.applied[E(engine)]) {  // the op's first command on this engine carries its entry waits
    entry.applied[E(engine)] = 1;
    if (engine == Engine::tiu) {
      cmd.wait_gdma = std::max(cmd.wait_gdma, entry.gdma_for_tiu);
      cmd.wait_sdma = std::max(cmd.wait_sdma, entry.sdma_for_tiu);
    } else {
      cmd.wait_tiu = std::max(cmd.wait_tiu, entry.tiu_for_dma);
    }
  }
  cmd.op = static_cast<std::uint32_t>(as);
  auto& q = queues_.queue(engine);
  q.push_back(cmd);
  const auto id = static_cast<std::uint32_t>(q.size());
  ctx_.last[as][core_][E(engine)] = id;
  return id;
}

std::uint32_t CoreEmitter::compute(std::uint64_t cycles, std::uint32_t wait_gdma, std::uint32_t wait_sdma) {
  sim::Command cmd;
  cmd.kind = sim::CommandKind::compute;
  cmd.amount = cycles;
  cmd.wait_gdma = wait_gdma;
  cmd.wait_sdma = wait_sdma;
  return push(op_, Engine::tiu, cmd);
}

std::uint32_t CoreEmitter::hau(std::uint64_t cycles, std::uint32_t wait_gdma) {
  sim::Command cmd;
  cmd.kind = sim::CommandKind::compute;
  cmd.amount = cycles;
  cmd.wait_gdma = wait_gdma;
  return push(op_, Engine::hau, cmd);
}

std::uint32_t CoreEmitter::dma(OpId as, Engine engine, std::uint64_t bytes, sim::Direction dir,
                               std::uint32_t wait_tiu, std::uint32_t wait_hau, std::uint64_t row_bytes) {
  if (bytes == 0) throw std::logic_error("lowering emitted an empty transfer");
  sim::Command cmd;
  cmd.kind = sim::CommandKind::transfer;
  cmd.amount = bytes;
  cmd.direction = dir;
  cmd.wait_tiu = wait_tiu;
  cmd.wait_hau = wait_hau;
  cmd.row_bytes = row_bytes < bytes ? static_cast<std::uint32_t>(row_bytes) : 0;  // one row is contiguous
  return push(as, engine, cmd);
}

std::uint32_t CoreEmitter::load(std::uint64_t bytes, std::uint32_t wait_tiu, Engine engine, std::uint64_t row_bytes) {
  return dma(op_, engine, bytes, sim::Direction::ddr_to_lmem, wait_tiu, 0, row_bytes);
}

std::uint32_t CoreEmitter::load_as(OpId as, std::uint64_t bytes, std::uint32_t wait_tiu, Engine engine,
                                   std::uint64_t row_bytes) {
  return dma(as, engine, bytes, sim::Direction::ddr_to_lmem, wait_tiu, 0, row_bytes);
}

std::uint32_t CoreEmitter::send_to_chip(std::uint64_t bytes, std::uint32_t wait_tiu) {
  return dma(op_, Engine::cdma, bytes, sim::Direction::chip_to_chip, wait_tiu);
}

std::uint32_t CoreEmitter::store(std::uint64_t bytes, std::uint32_t wait_tiu, std::uint32_t wait_hau,
                                 std::uint64_t row_bytes) {
  return dma(op_, Engine::gdma, bytes, sim::Direction::lmem_to_ddr, wait_tiu, wait_hau, row_bytes);
}

namespace {

// After an op with barrier consumers: every core announces that the op's last commands there
// have completed. The send is a TIU command, so it also follows the op's TIU work in order.
void emit_barrier_sends(LoweringContext& ctx, OpId op) {
  for (std::uint32_t core = 0; core < ctx.chip.cores; ++core) {
    sim::Command send;
    send.kind = sim::CommandKind::send_msg;
    send.op = static_cast<std::uint32_t>(op);
    send.msg = ctx.message[op];
    send.wait_gdma = ctx.last[op][core][E(Engine::gdma)];
    send.wait_sdma = ctx.last[op][core][E(Engine::sdma)];
    send.wait_cdma = ctx.last[op][core][E(Engine::cdma)];
    send.wait_hau = ctx.last[op][core][E(Engine::hau)];
    ctx.out.program.cores[core].queue(Engine::tiu).push_back(send);
  }
}

}  // namespace
}  // namespace detail

Lowered lower(const OpGraph& graph, const hw::Chip& chip, const LoweringOptions& options) {
  if (options.kv_read_engine != sim::Engine::gdma && options.kv_read_engine != sim::Engine::sdma) {
    throw std::invalid_argument("kv_read_engine must be gdma or sdma");
  }
  Lowered out;
  out.program.cores.resize(chip.cores);
  out.ops.resize(boost::num_vertices(graph));
  detail::LoweringContext ctx(graph, chip, options, out);

  // One message id per op that some consumer must wait for on every core.
  for (OpId v = 0; v < boost::num_vertices(graph); ++v) {
    for (auto [e, end] = boost::out_edges(v, graph); e != end; ++e) {
      if (ctx.is_barrier(*e)) {
        ctx.message[v] = ++out.program.message_count;
        break;
      }
    }
  }
  for (OpId op : topological_order(graph)) {
    switch (graph[op].kind) {
      case OpKind::matmul: detail::lower_matmul(ctx, op); break;
      case OpKind::moe_topk:
      case OpKind::indexer_topk:
        // On the HAU when the chip has one, else on the vector unit.
        if (chip.hau) {
          detail::lower_topk(ctx, op);
        } else {
          detail::lower_vector(ctx, op);
        }
        break;
      case OpKind::embedding:
      case OpKind::rmsnorm:
      case OpKind::rope:
      case OpKind::swiglu:
      case OpKind::moe_combine:
      case OpKind::kv_cache_write: detail::lower_vector(ctx, op); break;
      case OpKind::indexer_cache_read: break;  // the score matmul loads the keys on its behalf
      case OpKind::expert_weights: break;  // its consumers load on its behalf
      case OpKind::kv_cache_read: detail::lower_kv_cache_read(ctx, op); break;
      case OpKind::fa2: detail::lower_fa2(ctx, op); break;
      case OpKind::fa2_combine: detail::lower_fa2_combine(ctx, op); break;
      case OpKind::all_reduce:
      case OpKind::all_to_all: detail::lower_collective(ctx, op); break;
    }
    if (ctx.message[op] != 0) detail::emit_barrier_sends(ctx, op);
  }
  return out;
}

}  // namespace ops
