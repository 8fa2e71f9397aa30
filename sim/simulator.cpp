#include "sim/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "sim/event_queue.hpp"
#include "sim/max_min_sharing.hpp"

namespace sim {
namespace {

constexpr std::size_t idx(Engine e) { return static_cast<std::size_t>(e); }

struct EngineState {
  std::uint32_t head = 0;       // next command to issue
  std::uint32_t completed = 0;  // completed id: every command with id <= completed has finished
  std::uint32_t in_flight = 0;  // DMA transfers issued and not finished
  std::vector<std::uint8_t> done;  // DMA: finished flags, for in-order completion ids
};

struct CoreState {
  std::array<EngineState, kEngineCount> engines;
  bool tiu_busy = false;
  bool hau_busy = false;
  bool queued_for_issue = false;
  std::uint32_t waiting_msg = 0;  // message the TIU head is blocked on (0 = none)
};

struct Flow {
  double remaining = 0;  // bytes still to move
  double rate = 0;       // bytes per tick, from the last solve
  double bytes = 0;
  std::uint32_t core = 0;
  std::uint32_t command = 0;  // index in its queue
  Engine engine = Engine::gdma;
  std::uint32_t active_slot = 0;
};

class Run {
 public:
  Run(const hw::Chip& chip, const Program& program);
  Trace execute();

 private:
  void request_issue(std::uint32_t core);
  void drain_issue_worklist();
  void issue(std::uint32_t core);
  void issue_tiu(std::uint32_t core);
  void issue_hau(std::uint32_t core);
  void on_hau_done(std::uint32_t core);
  void issue_dma(std::uint32_t core, Engine engine);
  void on_tiu_done(std::uint32_t core);
  void on_startup_done(std::uint32_t flow);
  void on_completion();
  void complete(std::uint32_t flow);
  void advance_flows();
  void request_rate_update();
  void update_rates();
  Tick tiu_ticks(std::uint64_t cycles) const;
  /// Bytes a transfer moves on the bus: whole DDR bursts (per row when strided).
  std::uint64_t bus_bytes(const Command& cmd) const;
  [[noreturn]] void report_stuck() const;

  const hw::Chip& chip_;
  const Program& program_;
  Trace trace_;
  EventQueue events_;
  MaxMinSharing sharing_;
  std::vector<CoreState> cores_;
  std::vector<std::uint32_t> sent_;                  // per message id
  std::vector<std::vector<std::uint32_t>> waiters_;  // per message id: cores blocked on it
  std::vector<std::uint32_t> issue_worklist_;

  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_flows_;
  std::vector<std::uint32_t> active_;      // flows moving bytes
  std::vector<FlowPath> active_paths_;     // parallel to active_
  std::vector<double> rates_;
  std::vector<std::uint32_t> finished_;

  Tick now_ = 0;
  Tick last_advance_ = 0;
  std::uint32_t generation_ = 0;  // of the pending completion event; older ones are stale
  bool rate_update_pending_ = false;
  std::array<Tick, kEngineCount> startup_{};
  std::array<std::uint32_t, kEngineCount> outstanding_{};
  std::uint64_t ps_per_cycle_ = 0;  // exact integer period when the clock divides 1 THz
  std::uint64_t burst_ = 1;
  std::uint32_t ddr_constraint_ = 0;
};

std::vector<double> capacities_of(const hw::Chip& chip) {
  // Constraint 2c is core c's GDMA channel, 2c+1 its SDMA channel, then the DDR, then the C2C links.
  std::vector<double> caps;
  caps.reserve(2 * chip.cores + 2);
  // An engine channel sustains min(bandwidth, bytes in flight / DDR latency) (Little's law).
  for (std::uint32_t c = 0; c < chip.cores; ++c) {
    caps.push_back(gb_per_s_to_bytes_per_tick(chip.gdma.sustained_gb_per_s(chip.ddr_latency_ns)));
    caps.push_back(gb_per_s_to_bytes_per_tick(chip.sdma.sustained_gb_per_s(chip.ddr_latency_ns)));
  }
  caps.push_back(gb_per_s_to_bytes_per_tick(chip.ddr_bandwidth_gb_per_s * chip.ddr_efficiency));
  caps.push_back(gb_per_s_to_bytes_per_tick(chip.c2c.bandwidth_gb_per_s * chip.c2c.links));
  return caps;
}

Run::Run(const hw::Chip& chip, const Program& program)
    : chip_(chip), program_(program), sharing_(capacities_of(chip)) {
  if (program.cores.size() > chip.cores) {
    throw std::logic_error(fmt::format("program uses {} cores but chip '{}' has {}",
                                       program.cores.size(), chip.name, chip.cores));
  }
  ddr_constraint_ = 2 * chip.cores;
  // A DDR transfer pays its engine's start-up and one DDR round trip before bytes stream.
  startup_[idx(Engine::gdma)] = nanos_to_ticks(chip.gdma.startup_ns + chip.ddr_latency_ns);
  startup_[idx(Engine::sdma)] = nanos_to_ticks(chip.sdma.startup_ns + chip.ddr_latency_ns);
  burst_ = chip.ddr_burst_bytes;
  startup_[idx(Engine::cdma)] = nanos_to_ticks(chip.c2c.latency_ns);
  outstanding_[idx(Engine::gdma)] = chip.gdma.outstanding;
  outstanding_[idx(Engine::sdma)] = chip.sdma.outstanding;
  // The steps of a collective depend on each other (a ring passes partial sums on): one at a time.
  outstanding_[idx(Engine::cdma)] = 1;
  const double period = 1e6 / chip.tiu_clock_mhz;
  if (period == std::floor(period)) ps_per_cycle_ = static_cast<std::uint64_t>(period);

  cores_.resize(program.cores.size());
  trace_.cores.resize(program.cores.size());
  for (std::size_t c = 0; c < program.cores.size(); ++c) {
    for (Engine e : kAllEngines) {
      const auto& q = program.cores[c].queue(e);
      trace_.cores[c][idx(e)].resize(q.size());
      for (const Command& cmd : q) {
        const bool is_transfer = cmd.kind == CommandKind::transfer;
        const bool computes = e == Engine::tiu || e == Engine::hau;
        if (computes == is_transfer || (e == Engine::hau && cmd.kind != CommandKind::compute)) {
          throw std::logic_error(fmt::format("core {}: engine {} queue holds a command of the wrong kind", c, idx(e)));
        }
        if ((cmd.kind == CommandKind::send_msg || cmd.kind == CommandKind::wait_msg) &&
            (cmd.msg == 0 || cmd.msg > program.message_count)) {
          throw std::logic_error(fmt::format("core {}: message id {} out of range", c, cmd.msg));
        }
      }
      if (e != Engine::tiu && e != Engine::hau) {
        cores_[c].engines[idx(e)].done.assign(q.size(), 0);
      }
    }
  }
  sent_.assign(program.message_count + 1, 0);
  waiters_.resize(program.message_count + 1);
  const std::size_t max_flows = program.cores.size() * (chip.gdma.outstanding + chip.sdma.outstanding + 1);
  // Reserved up front so that handling an event allocates nothing.
  flows_.reserve(max_flows);
  free_flows_.reserve(max_flows);
  finished_.reserve(max_flows);
  issue_worklist_.reserve(program.cores.size());
  for (auto& list : waiters_) list.reserve(program.cores.size());
  active_.reserve(max_flows);
  active_paths_.reserve(max_flows);
  rates_.reserve(max_flows);
  events_.reserve(program.cores.size() * 4 + max_flows + 16);
}

std::uint64_t Run::bus_bytes(const Command& cmd) const {
  auto round_up = [this](std::uint64_t b) { return (b + burst_ - 1) / burst_ * burst_; };
  if (cmd.row_bytes == 0) return round_up(cmd.amount);
  const std::uint64_t rows = (cmd.amount + cmd.row_bytes - 1) / cmd.row_bytes;
  return rows * round_up(cmd.row_bytes);
}

Tick Run::tiu_ticks(std::uint64_t cycles) const {
  return ps_per_cycle_ != 0 ? cycles * ps_per_cycle_ : cycles_to_ticks(cycles, chip_.tiu_clock_mhz);
}

void Run::request_issue(std::uint32_t core) {
  if (cores_[core].queued_for_issue) return;
  cores_[core].queued_for_issue = true;
  issue_worklist_.push_back(core);
}

void Run::drain_issue_worklist() {
  // Index loop: issuing on one core may append others (message wake-ups).
  for (std::size_t i = 0; i < issue_worklist_.size(); ++i) {
    const std::uint32_t core = issue_worklist_[i];
    cores_[core].queued_for_issue = false;
    issue(core);
  }
  issue_worklist_.clear();
}

void Run::issue(std::uint32_t core) {
  // TIU first: a message command it passes can release GDMA / SDMA waits at the same tick.
  issue_tiu(core);
  issue_hau(core);
  issue_dma(core, Engine::gdma);
  issue_dma(core, Engine::sdma);
  issue_dma(core, Engine::cdma);
}

void Run::issue_tiu(std::uint32_t core) {
  CoreState& cs = cores_[core];
  EngineState& tiu = cs.engines[idx(Engine::tiu)];
  const auto& queue = program_.cores[core].queue(Engine::tiu);
  auto& records = trace_.cores[core][idx(Engine::tiu)];
  while (!cs.tiu_busy && tiu.head < queue.size()) {
    const Command& cmd = queue[tiu.head];
    if (cmd.wait_gdma > cs.engines[idx(Engine::gdma)].completed ||
        cmd.wait_sdma > cs.engines[idx(Engine::sdma)].completed ||
        cmd.wait_cdma > cs.engines[idx(Engine::cdma)].completed ||
        cmd.wait_hau > cs.engines[idx(Engine::hau)].completed) {
      return;
    }
    switch (cmd.kind) {
      case CommandKind::compute:
        records[tiu.head].start = now_;
        ++tiu.head;
        cs.tiu_busy = true;
        events_.push(now_ + tiu_ticks(cmd.amount), EventPriority::kState, EventType::tiu_done, core);
        return;
      case CommandKind::send_msg: {
        records[tiu.head] = {now_, now_};
        ++tiu.head;
        ++tiu.completed;
        ++sent_[cmd.msg];
        auto& waiting = waiters_[cmd.msg];
        for (std::uint32_t other : waiting) {
          cores_[other].waiting_msg = 0;  // re-registers if the count is still short
          request_issue(other);
        }
        waiting.clear();
        break;
      }
      case CommandKind::wait_msg:
        if (sent_[cmd.msg] < cmd.msg_count) {
          if (cs.waiting_msg != cmd.msg) {
            cs.waiting_msg = cmd.msg;
            waiters_[cmd.msg].push_back(core);
          }
          return;
        }
        cs.waiting_msg = 0;
        records[tiu.head] = {now_, now_};
        ++tiu.head;
        ++tiu.completed;
        break;
      case CommandKind::transfer:
        break;  // rejected at construction
    }
  }
}

void Run::issue_dma(std::uint32_t core, Engine engine) {
  CoreState& cs = cores_[core];
  EngineState& es = cs.engines[idx(engine)];
  const auto& queue = program_.cores[core].queue(engine);
  auto& records = trace_.cores[core][idx(engine)];
  while (es.in_flight < outstanding_[idx(engine)] && es.head < queue.size()) {
    const Command& cmd = queue[es.head];
    if (cmd.wait_tiu > cs.engines[idx(Engine::tiu)].completed ||
        cmd.wait_hau > cs.engines[idx(Engine::hau)].completed) {
      return;
    }
    records[es.head].start = now_;
    std::uint32_t f;
    if (!free_flows_.empty()) {
      f = free_flows_.back();
      free_flows_.pop_back();
    } else {
      f = static_cast<std::uint32_t>(flows_.size());
      flows_.emplace_back();
    }
    const auto moved = static_cast<double>(engine == Engine::cdma ? cmd.amount : bus_bytes(cmd));
    flows_[f] = Flow{moved, 0.0, moved, core,
                     es.head, engine, 0};
    ++es.head;
    ++es.in_flight;
    events_.push(now_ + startup_[idx(engine)], EventPriority::kState, EventType::transfer_startup_done, f);
  }
}

void Run::issue_hau(std::uint32_t core) {
  CoreState& cs = cores_[core];
  EngineState& hau = cs.engines[idx(Engine::hau)];
  const auto& queue = program_.cores[core].queue(Engine::hau);
  if (cs.hau_busy || hau.head >= queue.size()) return;
  const Command& cmd = queue[hau.head];
  if (cmd.wait_gdma > cs.engines[idx(Engine::gdma)].completed ||
      cmd.wait_tiu > cs.engines[idx(Engine::tiu)].completed) {
    return;
  }
  trace_.cores[core][idx(Engine::hau)][hau.head].start = now_;
  ++hau.head;
  cs.hau_busy = true;
  events_.push(now_ + tiu_ticks(cmd.amount), EventPriority::kState, EventType::hau_done, core);
}

void Run::on_hau_done(std::uint32_t core) {
  CoreState& cs = cores_[core];
  EngineState& hau = cs.engines[idx(Engine::hau)];
  trace_.cores[core][idx(Engine::hau)][hau.completed].end = now_;
  ++hau.completed;
  cs.hau_busy = false;
  request_issue(core);
}

void Run::on_tiu_done(std::uint32_t core) {
  CoreState& cs = cores_[core];
  EngineState& tiu = cs.engines[idx(Engine::tiu)];
  trace_.cores[core][idx(Engine::tiu)][tiu.completed].end = now_;
  ++tiu.completed;
  cs.tiu_busy = false;
  request_issue(core);
}

void Run::advance_flows() {
  if (now_ == last_advance_) return;
  const double dt = static_cast<double>(now_ - last_advance_);
  for (std::uint32_t f : active_) flows_[f].remaining -= flows_[f].rate * dt;
  last_advance_ = now_;
}

void Run::on_startup_done(std::uint32_t f) {
  advance_flows();
  Flow& flow = flows_[f];
  if (flow.remaining <= 0) {
    complete(f);
    return;
  }
  flow.active_slot = static_cast<std::uint32_t>(active_.size());
  active_.push_back(f);
  FlowPath path;
  path.constraints[0] = flow.engine == Engine::cdma ? ddr_constraint_ + 1
                                                    : 2 * flow.core + (flow.engine == Engine::gdma ? 0u : 1u);
  path.constraints[1] = ddr_constraint_;
  path.count = 2;
  active_paths_.push_back(path);
  request_rate_update();
}

void Run::complete(std::uint32_t f) {
  Flow& flow = flows_[f];
  CoreState& cs = cores_[flow.core];
  EngineState& es = cs.engines[idx(flow.engine)];
  trace_.cores[flow.core][idx(flow.engine)][flow.command].end = now_;
  es.done[flow.command] = 1;
  while (es.completed < es.done.size() && es.done[es.completed]) ++es.completed;
  --es.in_flight;
  free_flows_.push_back(f);
  request_issue(flow.core);
}

void Run::on_completion() {
  advance_flows();
  finished_.clear();
  for (std::uint32_t f : active_) {
    const Flow& flow = flows_[f];
    if (flow.remaining <= flow.bytes * 1e-9 + 1e-6) finished_.push_back(f);
  }
  if (finished_.empty()) {
    // Numerical guard: the event was scheduled for the earliest finisher; finish it.
    std::uint32_t best = active_.front();
    for (std::uint32_t f : active_) {
      if (flows_[f].remaining / flows_[f].rate < flows_[best].remaining / flows_[best].rate) best = f;
    }
    finished_.push_back(best);
  }
  for (std::uint32_t f : finished_) {
    // Swap-remove from the active set, keeping active_paths_ parallel.
    const std::uint32_t slot = flows_[f].active_slot;
    const std::uint32_t last = active_.back();
    active_[slot] = last;
    active_paths_[slot] = active_paths_.back();
    flows_[last].active_slot = slot;
    active_.pop_back();
    active_paths_.pop_back();
    complete(f);
  }
  request_rate_update();
}

void Run::request_rate_update() {
  if (rate_update_pending_) return;
  rate_update_pending_ = true;
  events_.push(now_, EventPriority::kRateUpdate, EventType::rate_update, 0);
}

void Run::update_rates() {
  rate_update_pending_ = false;
  advance_flows();
  ++generation_;  // any completion event scheduled before is now stale
  if (active_.empty()) return;
  rates_.resize(active_.size());
  sharing_.solve(active_paths_, rates_);
  double earliest = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < active_.size(); ++i) {
    Flow& flow = flows_[active_[i]];
    flow.rate = rates_[i];
    earliest = std::min(earliest, std::max(0.0, flow.remaining) / flow.rate);
  }
  // Round up (time never runs short of the bytes), forgiving representation error of 1e-12.
  const Tick dt = static_cast<Tick>(std::ceil(earliest * (1 - 1e-12) - 1e-9));
  events_.push(now_ + dt, EventPriority::kState, EventType::transfer_completion, generation_);
}

void Run::report_stuck() const {
  std::string detail;
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    for (Engine e : kAllEngines) {
      const EngineState& es = cores_[c].engines[idx(e)];
      const auto& q = program_.cores[c].queue(e);
      if (es.head >= q.size()) continue;
      const Command& cmd = q[es.head];
      static constexpr const char* kNames[] = {"TIU", "GDMA", "SDMA", "CDMA", "HAU"};
      detail += fmt::format("\n  core {} {} head id {} (op {}): waits gdma {} sdma {} cdma {} hau {} tiu {} msg {}x{}",
                            c, kNames[idx(e)], es.head + 1, cmd.op, cmd.wait_gdma, cmd.wait_sdma, cmd.wait_cdma,
                            cmd.wait_hau, cmd.wait_tiu, cmd.msg, cmd.msg_count);
      if (detail.size() > 2000) break;
    }
  }
  throw std::logic_error("program deadlocked: queues cannot make progress" + detail);
}

Trace Run::execute() {
  for (std::uint32_t c = 0; c < cores_.size(); ++c) request_issue(c);
  drain_issue_worklist();
  std::uint64_t events = 0;
  while (!events_.empty()) {
    const Event ev = events_.pop();
    now_ = ev.time;
    ++events;
    switch (ev.type) {
      case EventType::tiu_done: on_tiu_done(ev.a); break;
      case EventType::hau_done: on_hau_done(ev.a); break;
      case EventType::transfer_startup_done: on_startup_done(ev.a); break;
      case EventType::transfer_completion:
        if (ev.a == generation_) on_completion();
        break;
      case EventType::rate_update: update_rates(); break;
    }
    drain_issue_worklist();
  }
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    for (Engine e : kAllEngines) {
      if (cores_[c].engines[idx(e)].completed < program_.cores[c].queue(e).size()) report_stuck();
    }
  }
  // The last event may be a stale completion; the run ends with its last command.
  for (const auto& core : trace_.cores) {
    for (const auto& records : core) {
      for (const CommandRecord& r : records) trace_.end = std::max(trace_.end, r.end);
    }
  }
  trace_.events = events;
  return std::move(trace_);
}

}  // namespace

Simulator::Simulator(const hw::Chip& chip) : chip_(chip) {}

Trace Simulator::run(const Program& program) const { return Run(chip_, program).execute(); }

}  // namespace sim
