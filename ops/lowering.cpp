#include "ops/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "hw/config_error.hpp"
#include "ops/attention_unit.hpp"
#include "ops/lowering_context.hpp"
#include "ops/op_lowerings.hpp"
#include "ops/work_estimate.hpp"
#include "sim/cancellation.hpp"
#include "sim/progress.hpp"
#include "sim/simulator.hpp"

namespace ops {
namespace detail {

LoweringContext::LoweringContext(const OpGraph& g, const hw::Chip& c, const LoweringOptions& o, Lowered& l)
    : graph(g), chip(c), cost(c), options(o), out(l), tiles_(c.dma_for(hw::DmaRole::tiles)) {
  const std::size_t n = boost::num_vertices(g);
  last_.assign(n, std::vector<LastIds>(c.cores, LastIds{}));
  entry_.assign(n, std::vector<Entry>(c.cores));
  message_.assign(n, 0);
  launched_.assign(c.cores, 0);
  kv_engine_ = history_engine(c, o);
  kv_resident_ = c.engine(kv_engine_).serves(hw::DmaRole::kv_resident);
}

const AttentionPlan& LoweringContext::attention_plan(const AttentionShape& s, bool resident, bool partials_may_use_l2,
                                                     bool tile_rows) {
  const auto key = std::make_tuple(s, resident, partials_may_use_l2, tile_rows);
  auto found = plans_.find(key);
  if (found == plans_.end()) {
    found = plans_.emplace(key, plan_attention(s, chip, resident, partials_may_use_l2, options.attn_split, tile_rows))
                .first;
  }
  return found->second;
}

LoweringContext::~LoweringContext() = default;

AttentionUnit& LoweringContext::attention_unit(OpId op) {
  if (auto found = unit_of_.find(op); found != unit_of_.end()) return *found->second;
  units_.push_back(std::make_unique<AttentionUnit>(build_attention_unit(*this, op)));
  AttentionUnit& unit = *units_.back();
  for (OpId member : unit.members()) unit_of_[member] = &unit;
  return unit;
}

std::optional<OpId> LoweringContext::unit_barrier(OpId op) {
  if (graph[op].kind != OpKind::fa2) return std::nullopt;
  const AttentionUnit& unit = attention_unit(op);
  return unit.history_barrier() ? unit.reader : std::nullopt;
}

void LoweringContext::assign_messages() {
  // Which ops some consumer waits for on every core. Their message ids are given when their
  // sends are queued (emit_barrier_sends), so ids follow the queues as split-K cells' do: a
  // layer's messages are one contiguous range whatever came before (ops/layer_replay.hpp).
  std::vector<std::uint8_t> waited_for(boost::num_vertices(graph), 0);
  for (OpId v = 0; v < boost::num_vertices(graph); ++v) {
    for (auto [e, end] = boost::out_edges(v, graph); e != end; ++e) {
      if (graph[*e].kind == EdgeKind::data) waited_for[v] = 1;
    }
    if (const auto producer = unit_barrier(v)) waited_for[*producer] = 1;
  }
  for (OpId v = 0; v < boost::num_vertices(graph); ++v) {
    if (waited_for[v]) message_[v] = kMessageToGive;
  }
}

void LoweringContext::enter_op(OpId op, std::uint32_t core) {
  Entry& entry = entry_[op][core];
  if (entry.entered) return;
  entry.entered = true;
  auto barrier = [&](OpId producer) {
    sim::Command wait;
    wait.kind = sim::CommandKind::wait_msg;
    wait.op = static_cast<std::uint32_t>(op);
    wait.msg = message_[producer];
    wait.msg_count = chip.cores;
    entry.tensor_wait = queue_command(core, tensor(), wait);
    last_[op][core][tensor()] = entry.tensor_wait;
  };
  for (auto [e, end] = boost::in_edges(op, graph); e != end; ++e) {
    const OpId producer = boost::source(*e, graph);
    const LastIds& produced = last_[producer][core];
    switch (graph[*e].kind) {
      case EdgeKind::data: barrier(producer); break;
      case EdgeKind::order: entry.tensor_wait = std::max(entry.tensor_wait, produced[tensor()]); break;
      case EdgeKind::same_core:
        for (std::size_t x = 0; x < chip.engines.size(); ++x) {
          if (chip.engines[x].kind == hw::EngineKind::dma) {
            entry.for_tensor[x] = std::max(entry.for_tensor[x], produced[x]);
          }
        }
        break;
    }
  }
  if (const auto producer = unit_barrier(op)) barrier(*producer);
}

void LoweringContext::forbidden_wait(EngineId engine, EngineId on, OpId as) const {
  const hw::EngineSpec& spec = chip.engine(engine);
  throw hw::ConfigError(
      fmt::format("{}: engines.{}.waits_on: {} must wait on {} ids to run {} ({}), but the chip does not allow it",
                  chip.source, spec.name, spec.name, chip.engine(on).name, graph[as].name, kind_name(graph[as].kind)));
}

void LoweringContext::add_wait_with_fence(std::uint32_t core, EngineId engine, sim::Command& cmd, EngineId on,
                                          std::uint32_t id) {
  if (engine != tensor()) throw std::logic_error("lowering: a transfer or sort command waits on too many engines");
  // The tensor queue is in order: a fence carrying the waits so far, then the command.
  sim::Command fence = cmd;
  fence.kind = sim::CommandKind::fence;
  fence.amount = 0;
  queue_command(core, engine, fence);
  cmd.wait_count = 0;
  cmd.add_wait(on, id);
}

CmdRef LoweringContext::push(OpId as, std::uint32_t core, EngineId engine, sim::Command cmd,
                             std::initializer_list<CmdRef> after) {
  Entry& entry = entry_[as][core];
  if (!entry.entered) enter_op(as, core);
  cmd.op = static_cast<std::uint32_t>(as);
  for (const CmdRef& a : after) add_wait(core, engine, cmd, a.engine, a.id, as);
  if (!entry.applied[engine]) {  // the op's first command on this engine carries its entry waits
    entry.applied[engine] = 1;
    if (engine == tensor()) {
      for (std::size_t x = 0; x < chip.engines.size(); ++x) {
        add_wait(core, engine, cmd, static_cast<EngineId>(x), entry.for_tensor[x], as);
      }
    } else {
      add_wait(core, engine, cmd, tensor(), entry.tensor_wait, as);
    }
  }
  const std::uint32_t id = queue_command(core, engine, cmd);
  if (cmd.kind == sim::CommandKind::delay) launched_[core] = id;
  last_[as][core][engine] = id;
  return CmdRef{engine, id};
}

CmdRef LoweringContext::push_ahead(OpId as, std::uint32_t core, EngineId engine, sim::Command cmd) {
  // Entering the op (its barrier wait on the tensor queue) is left to its next command.
  cmd.op = static_cast<std::uint32_t>(as);
  add_wait(core, engine, cmd, tensor(), launched_[core], as);
  const std::uint32_t id = queue_command(core, engine, cmd);
  last_[as][core][engine] = id;
  return CmdRef{engine, id};
}

bool LoweringContext::may_prefetch(OpId op, std::uint64_t bytes) const {
  if (!options.prefetch_weights || boost::in_degree(op, graph) == 0) return false;
  std::uint64_t beside = 0;
  for (auto [e, end] = boost::in_edges(op, graph); e != end; ++e) {
    if (graph[*e].kind != EdgeKind::data) return false;
    beside = std::max(beside, out.ops[boost::source(*e, graph)].peak_lmem_bytes);
  }
  return beside + bytes <= chip.lmem_bytes_per_core;
}

void LoweringContext::emit_barrier_sends(OpId op) {
  if (message_[op] == kMessageToGive) message_[op] = ++out.program.message_count;
  for (std::uint32_t core = 0; core < chip.cores; ++core) {
    sim::Command send;
    send.kind = sim::CommandKind::send_msg;
    send.op = static_cast<std::uint32_t>(op);
    send.msg = message_[op];
    // The send is a tensor command, so it follows the op's tensor work in order; it names the
    // op's last command on every other engine.
    for (std::size_t x = 0; x < chip.engines.size(); ++x) {
      if (x != tensor()) add_wait(core, tensor(), send, static_cast<EngineId>(x), last_[op][core][x], op);
    }
    queue_command(core, tensor(), send);
  }
}

std::uint32_t LoweringContext::queue_command(std::uint32_t core, EngineId engine, const sim::Command& cmd) {
  // The kernel's rules, checked here once so that the kernel need not read the program again
  // (sim/program.hpp, ProgramCheck; lower() seals the count).
  sim::check_command(chip, core, engine, cmd, out.program.message_count);
  if (cmd.kind == sim::CommandKind::wait_msg) {
    auto& waits = out.program.checked.message_waits;
    if (waits.size() <= cmd.msg) waits.resize(std::size_t{cmd.msg} + 1, 0);
    ++waits[cmd.msg];
  }
  auto& q = out.program.cores[core].queue(engine);
  std::uint32_t& first = out.first_command[(std::size_t{cmd.op} * chip.cores + core) * chip.engines.size() + engine];
  if (first == Lowered::kNoCommand) first = static_cast<std::uint32_t>(q.size());
  if (cmd.kind == sim::CommandKind::send_msg) {
    std::uint32_t& lowest = out.lowest_send[cmd.op];
    lowest = lowest == 0 ? cmd.msg : std::min(lowest, cmd.msg);
  }
  q.push_back(cmd);
  return static_cast<std::uint32_t>(q.size());
}

CmdRef CoreEmitter::compute(std::uint64_t cycles, std::initializer_list<CmdRef> after) {
  sim::Command cmd;
  cmd.kind = sim::CommandKind::compute;
  cmd.amount = cycles;
  return ctx_.push(op_, core_, ctx_.tensor(), cmd, after);
}

CmdRef CoreEmitter::sort(std::uint64_t cycles, CmdRef after) {
  sim::Command cmd;
  cmd.kind = sim::CommandKind::compute;
  cmd.amount = cycles;
  return ctx_.push(op_, core_, ctx_.chip.sort_engine().value(), cmd, {after});
}

CmdRef CoreEmitter::transfer(OpId as, EngineId engine, std::uint64_t bytes, sim::Direction dir, CmdRef after,
                             std::uint64_t row_bytes) {
  if (bytes == 0) throw std::logic_error("lowering emitted an empty transfer");
  sim::Command cmd;
  cmd.kind = sim::CommandKind::transfer;
  cmd.amount = bytes;
  cmd.direction = dir;
  cmd.row_bytes = row_bytes < bytes ? static_cast<std::uint32_t>(row_bytes) : 0;  // one row is contiguous
  return ctx_.push(as, core_, engine, cmd, {after});
}

CmdRef CoreEmitter::load(std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes) {
  return transfer(op_, ctx_.tiles(), bytes, sim::Direction::ddr_to_lmem, after, row_bytes);
}

CmdRef CoreEmitter::prefetch(std::uint64_t bytes, std::uint64_t row_bytes) {
  if (bytes == 0) throw std::logic_error("lowering emitted an empty transfer");
  sim::Command cmd;
  cmd.kind = sim::CommandKind::transfer;
  cmd.amount = bytes;
  cmd.direction = sim::Direction::ddr_to_lmem;
  cmd.row_bytes = row_bytes < bytes ? static_cast<std::uint32_t>(row_bytes) : 0;
  return ctx_.push_ahead(op_, core_, ctx_.tiles(), cmd);
}

CmdRef CoreEmitter::load_on(EngineId engine, std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes) {
  return transfer(op_, engine, bytes, sim::Direction::ddr_to_lmem, after, row_bytes);
}

CmdRef CoreEmitter::load_as(OpId as, EngineId engine, std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes) {
  return transfer(as, engine, bytes, sim::Direction::ddr_to_lmem, after, row_bytes);
}

CmdRef CoreEmitter::stage_to_l2(OpId as, EngineId engine, std::uint64_t bytes, CmdRef after) {
  return transfer(as, engine, bytes, sim::Direction::ddr_to_l2, after, 0);
}

CmdRef CoreEmitter::load_from_l2_on(EngineId engine, std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes) {
  return transfer(op_, engine, bytes, sim::Direction::l2_to_lmem, after, row_bytes);
}

CmdRef CoreEmitter::load_from_l2(std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes) {
  return transfer(op_, ctx_.tiles(), bytes, sim::Direction::l2_to_lmem, after, row_bytes);
}

CmdRef CoreEmitter::store_to_l2(std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes) {
  return transfer(op_, ctx_.tiles(), bytes, sim::Direction::lmem_to_l2, after, row_bytes);
}

CmdRef CoreEmitter::fence(CmdRef after) {
  sim::Command cmd;
  cmd.kind = sim::CommandKind::fence;
  return ctx_.push(op_, core_, ctx_.tensor(), cmd, {after});
}

CmdRef CoreEmitter::delay(std::uint64_t picoseconds) {
  sim::Command cmd;
  cmd.kind = sim::CommandKind::delay;
  cmd.amount = picoseconds;
  return ctx_.push(op_, core_, ctx_.tensor(), cmd, {});
}

CmdRef CoreEmitter::store(std::uint64_t bytes, CmdRef after, std::uint64_t row_bytes) {
  return transfer(op_, ctx_.tiles(), bytes, sim::Direction::lmem_to_ddr, after, row_bytes);
}

CmdRef CoreEmitter::send_to_chip(std::uint64_t bytes, CmdRef after, bool other_node) {
  const auto engine = ctx_.chip.collective_engine();
  if (!engine) {
    throw hw::ConfigError(
        fmt::format("{}: engines: chip '{}' has no collective engine, but the deployment spans "
                    "several chips",
                    ctx_.chip.source, ctx_.chip.name));
  }
  return transfer(op_, *engine, bytes, other_node ? sim::Direction::chip_to_node : sim::Direction::chip_to_chip, after,
                  0);
}

}  // namespace detail

Lowered lower(const OpGraph& graph, const hw::Chip& chip, const LoweringOptions& options) {
  const double estimate = estimate_commands(graph, chip, options);
  if (!(estimate <= static_cast<double>(options.max_commands))) {
    throw hw::InputError(
        "max_commands",
        fmt::format("the run needs about {:.3g} commands (about {:.3g} GB of memory), above the limit of {}; "
                    "simulate fewer layers, a shorter context or a smaller batch, or raise max_commands",
                    estimate, estimate * kBytesPerCommand * 1e-9, options.max_commands));
  }
  Lowered out;
  out.program = sim::Program::with_queues(chip.cores, chip.engines.size());
  // The estimate (an overestimate as a rule) sizes the two busiest queues of each core: growing
  // by doubling would copy them and fault in about twice their memory. Reserved pages that are
  // never written are never resident.
  const auto per_core = static_cast<std::size_t>(estimate / static_cast<double>(chip.cores)) + 1;
  for (sim::CoreProgram& core : out.program.cores) {
    core.queue(chip.tensor_engine()).reserve(per_core);
    core.queue(chip.dma_for(hw::DmaRole::tiles)).reserve(per_core);
  }
  out.ops.resize(boost::num_vertices(graph));
  out.first_command.assign(boost::num_vertices(graph) * chip.cores * chip.engines.size(), Lowered::kNoCommand);
  out.lowest_send.assign(boost::num_vertices(graph), 0);
  detail::LoweringContext ctx(graph, chip, options, out);
  ctx.assign_messages();
  // An op's barrier sends (one per core, on the tensor queue, waiting for the op's last commands
  // there) are queued just before the first op that waits for them, not right after the op: ops
  // lowered in between that do not need it (the shared experts beside the MoE all-to-all) then
  // run without waiting for it.
  const auto order = topological_order(graph);
  std::vector<std::uint8_t> sent(boost::num_vertices(graph), 0);
  auto send = [&](OpId producer) {
    if (!ctx.has_message(producer) || sent[producer]) return;
    sent[producer] = 1;
    ctx.emit_barrier_sends(producer);
  };
  std::uint64_t lowered = 0;
  for (OpId op : order) {
    for (auto [e, end] = boost::in_edges(op, graph); e != end; ++e) {
      if (graph[*e].kind == EdgeKind::data) send(boost::source(*e, graph));
    }
    if (const auto producer = ctx.unit_barrier(op)) send(*producer);
    detail::lowering_of(graph[op].kind)(ctx, op);
    sim::poll_cancel();  // an op's commands at a time: a long lowering stops as promptly as a run
    sim::report_progress("lowering", ++lowered, order.size());
  }
  for (OpId op : order) send(op);
  // Every command was checked as it was queued (queue_command): the kernel may trust the waits it counted.
  out.program.checked.message_waits.resize(std::size_t{out.program.message_count} + 1, 0);
  out.program.checked.commands = out.program.command_count();
  return out;
}

}  // namespace ops
