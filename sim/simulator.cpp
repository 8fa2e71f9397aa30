#include "sim/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "hw/config_error.hpp"
#include "hw/cost_model.hpp"
#include "hw/routes.hpp"
#include "sim/cancellation.hpp"
#include "sim/event_queue.hpp"
#include "sim/max_min_sharing.hpp"
#include "sim/precision.hpp"
#include "sim/progress.hpp"

namespace sim {
namespace {

static_assert(FlowPath::kMaxConstraints >= hw::kMaxPathResources, "a transfer path must fit a FlowPath");

// The last picosecond the kernel represents: 2^62 ps, about 53 days, leaving headroom below 2^64
// for every sum of a time and a duration.
constexpr Tick kMaxTick = Tick{1} << 62;

constexpr std::uint32_t kNoFlow = std::numeric_limits<std::uint32_t>::max();

/// How the kernel runs one engine of the chip, derived once from its hw::EngineSpec.
struct EngineModel {
  bool serial = false;
  std::uint32_t outstanding = 0;  // transfers in flight per core
  std::int64_t channel = -1;      // per-core channel slot among the DMA engines, -1 = none
  // Per route (hw/routes.hpp): before bytes move (start-up plus round trip), and the shared
  // resources crossed, as constraint ids.
  std::array<Tick, hw::kRouteKinds> startup{};
  std::array<FlowPath, hw::kRouteKinds> shared;
};

// Routes of a transfer: its engine's own path, DDR -> L2, L2 -> local memory, to another node.
constexpr auto kOwnPath = static_cast<std::uint8_t>(hw::RouteKind::own);
constexpr auto kToL2 = static_cast<std::uint8_t>(hw::RouteKind::to_l2);
constexpr auto kFromL2 = static_cast<std::uint8_t>(hw::RouteKind::from_l2);
constexpr auto kToNode = static_cast<std::uint8_t>(hw::RouteKind::to_node);

std::uint8_t route_of(Direction d) {
  switch (d) {
    case Direction::ddr_to_l2: return kToL2;
    case Direction::l2_to_lmem:
    case Direction::lmem_to_l2: return kFromL2;
    case Direction::chip_to_node: return kToNode;
    default: return kOwnPath;
  }
}

// One engine of one core: its queue and records (cached pointers: the hot paths touch them on
// every event) and where it stands.
struct EngineState {
  RecordQueue* records = nullptr;
  std::uint8_t* done = nullptr;  // transfers: finished flags, for in-order completion ids
  std::uint32_t size = 0;        // commands in the queue
  std::uint32_t head = 0;        // next command to issue
  std::uint32_t completed = 0;   // completed id: every command with id <= completed has finished
  std::uint32_t in_flight = 0;   // transfers issued and not finished
  bool busy = false;             // serial engines: an instruction is running
  // Transfer engines serve their descriptors in order: one flow moves bytes, the others that are
  // past their start-up wait behind it, in issue order (a linked list through Flow::next_waiting).
  std::uint32_t moving = kNoFlow;
  std::uint32_t waiting_first = kNoFlow, waiting_last = kNoFlow;
  std::uint32_t watch = kNoFlow;  // with an observer: the first index whose issue it hears of
  // The head's first unmet wait when it was last found not ready (id 0: none known): checked
  // before reading the command again, which is the kernel's costliest memory access.
  std::uint32_t blocked_id = 0;
  EngineId blocked_on = 0;
};

struct CoreState {
  std::array<EngineState, kMaxEngines> engines;
  bool queued_for_issue = false;
  std::uint32_t waiting_msg = 0;  // message the tensor engine's head is blocked on (0 = none)
};

struct Flow {
  double remaining = 0;  // bytes still to move
  double rate = 0;       // bytes per tick, from the last solve
  double bytes = 0;
  std::uint32_t core = 0;
  std::uint32_t command = 0;  // index in its queue
  EngineId engine = 0;
  std::uint32_t active_slot = 0;
  std::uint32_t next_waiting = kNoFlow;
  std::uint8_t route = kOwnPath;
};

class Run final : public KernelState {
 public:
  Run(const hw::Chip& chip, const Program& program, KernelObserver* observer);
  Trace execute();

  // What an observer reads (sim/kernel_observer.hpp).
  std::vector<std::uint64_t> canonical(const StateFrame& frame, bool& complete) const override;
  std::uint32_t completed(std::size_t queue) const override {
    return cores_[queue / models_.size()].engines[queue % models_.size()].completed;
  }
  std::uint32_t head(std::size_t queue) const override {
    return cores_[queue / models_.size()].engines[queue % models_.size()].head;
  }
  std::size_t queues() const override { return cores_.size() * models_.size(); }
  Tick now() const override { return now_; }

 private:
  std::uint64_t commands_completed() const;  ///< over every queue (a progress report's count)
  /// Refuses a malformed program; counts each message's waits on the way (its liveness).
  void validate(const Program& program);
  void request_issue(std::uint32_t core);
  void drain_issue_worklist();
  void issue(std::uint32_t core);
  /// Moves past the issued head: the reader decodes the next command (and prefetches its bytes:
  /// with hundreds of queues in turn, each head's first read would otherwise miss).
  static void advance_head(EngineState& es, CommandQueue::Reader& reader) {
    ++es.head;
    reader.next();
  }
  /// The reader at engine's head on core (kept apart from EngineState, which other engines'
  /// readiness checks touch: small states stay in cache).
  CommandQueue::Reader& head_reader(std::uint32_t core, EngineId engine) { return heads_[core * kMaxEngines + engine]; }
  /// Whether engine `es`'s head `cmd` has its waits met; if not, remembers the one unmet.
  static bool ready(const CoreState& cs, EngineState& es, const Command& cmd);
  /// Whether the wait remembered by ready() is still unmet (the head cannot issue yet).
  static bool still_blocked(const CoreState& cs, const EngineState& es) {
    return es.blocked_id != 0 && cs.engines[es.blocked_on].completed < es.blocked_id;
  }
  void issue_serial(std::uint32_t core, EngineId engine);
  void issue_transfers(std::uint32_t core, EngineId engine);
  void on_serial_done(std::uint32_t subject);
  void on_startup_done(std::uint32_t flow);
  void start_moving(std::uint32_t flow);
  void on_completion();
  void complete(std::uint32_t flow);
  void advance_flows();
  void request_rate_update();
  void update_rates();
  /// Takes the next event to run (the heap's or the pending completion), false when none.
  bool next_event(Event& ev);
  /// Whether an event is pending at the current time.
  bool more_now() const {
    return (!events_.empty() && events_.top().time == now_) || (completion_pending_ && completion_at_ == now_);
  }
  Tick cycle_ticks(std::uint64_t cycles) const;
  /// now + dt, refusing a time past the clock's range.
  Tick later(Tick dt) const;
  [[noreturn]] void clock_overflow() const;
  [[noreturn]] void report_stuck() const;
  // The observer (sim/kernel_observer.hpp): a watched command issues; re-read what it watches;
  // tell it the time has settled.
  void observed_issue(std::uint32_t core, EngineId engine, std::uint32_t index);
  void read_watched();
  void settle() {
    if (settle_pending_ && !more_now()) {
      settle_pending_ = false;
      observer_->settled(*this);
    }
  }
  void refresh_live(std::uint32_t msg);

  const hw::Chip& chip_;
  const hw::CostModel cost_;
  const Program& program_;
  std::vector<EngineModel> models_;
  std::vector<EngineId> issue_order_;
  std::uint32_t channels_per_core_ = 0;
  Trace trace_;
  EventQueue events_;
  MaxMinSharing sharing_;
  std::vector<CoreState> cores_;
  std::vector<std::uint32_t> sent_;                  // per message id
  std::vector<std::vector<std::uint32_t>> waiters_;  // per message id: cores blocked on it
  std::vector<std::uint32_t> issue_worklist_;

  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_flows_;
  std::vector<std::uint32_t> active_;   // flows moving bytes
  std::vector<FlowPath> active_paths_;  // parallel to active_
  std::vector<double> rates_;
  std::vector<std::uint32_t> finished_;
  std::vector<std::uint8_t> done_flags_;  // backing store of every EngineState::done

  Tick now_ = 0;
  Tick last_advance_ = 0;
  std::uint32_t generation_ = 0;  // bandwidth solves so far
  // The next transfer completion: one at a time, kept beside the heap (each solve replaces it, so
  // the heap never fills with completions a later solve made stale).
  bool completion_pending_ = false;
  Tick completion_at_ = 0;
  bool rate_update_pending_ = false;
  std::uint64_t ps_per_cycle_ = 0;  // exact integer period when the clock divides 1 THz
  std::uint64_t events_done_ = 0;
  Tick last_end_ = 0;                        // the latest end written: the run ends with its last command
  std::vector<CommandQueue::Reader> heads_;  // [core * kMaxEngines + engine]
  EngineId tensor_ = 0;

  KernelObserver* observer_ = nullptr;
  bool settle_pending_ = false;            // the observer heard of an issue at the current time
  std::vector<std::uint32_t> waits_left_;  // per message: wait_msg commands still to pass
  std::vector<std::uint8_t> live_;         // per message: in the state (sim/kernel_observer.hpp)
  std::uint64_t live_count_ = 0;
};

// Constraints: per core, one channel per DMA engine (declaration order), core after core; then
// the chip's shared resources in hw::Chip::resources order.
std::vector<double> capacities_of(const hw::Chip& chip) {
  const hw::CostModel cost(chip);
  std::vector<double> caps;
  for (std::uint32_t c = 0; c < chip.cores; ++c) {
    for (std::size_t e = 0; e < chip.engines.size(); ++e) {
      if (chip.engines[e].kind == hw::EngineKind::dma) {
        caps.push_back(gb_per_s_to_bytes_per_tick(cost.channel_gb_per_s(static_cast<EngineId>(e))));
      }
    }
  }
  for (const hw::SharedResource& r : chip.resources) caps.push_back(gb_per_s_to_bytes_per_tick(r.capacity_gb_per_s));
  return caps;
}

Run::Run(const hw::Chip& chip, const Program& program, KernelObserver* observer)
    : chip_(chip), cost_(chip), program_(program), sharing_(capacities_of(chip)), observer_(observer) {
  if (program.cores.size() > chip.cores) {
    throw std::logic_error(
        fmt::format("program uses {} cores but chip '{}' has {}", program.cores.size(), chip.name, chip.cores));
  }
  for (const hw::EngineSpec& spec : chip.engines) {
    if (spec.kind == hw::EngineKind::dma) ++channels_per_core_;
  }
  const std::uint32_t first_shared = channels_per_core_ * chip.cores;
  const std::vector<hw::EngineRoutes> routes = hw::route_table(chip);
  std::uint32_t next_channel = 0;
  models_.resize(chip.engines.size());
  for (std::size_t e = 0; e < chip.engines.size(); ++e) {
    const hw::EngineSpec& spec = chip.engines[e];
    EngineModel& m = models_[e];
    m.serial = spec.serial();
    if (m.serial) continue;
    m.outstanding = spec.outstanding;
    if (spec.kind == hw::EngineKind::dma) m.channel = next_channel++;
    // The routes are chip data (hw/routes.hpp): resource indices become the solver's constraints
    // after the per-core channels.
    for (std::size_t k = 0; k < hw::kRouteKinds; ++k) {
      const hw::Route& route = routes[e][k];
      m.startup[k] = nanos_to_ticks(route.startup_ns);
      m.shared[k].count = route.count;
      for (std::uint8_t i = 0; i < route.count; ++i) m.shared[k].constraints[i] = first_shared + route.resources[i];
    }
  }
  for (bool serial : {true, false}) {
    for (std::size_t e = 0; e < models_.size(); ++e) {
      if (models_[e].serial == serial) issue_order_.push_back(static_cast<EngineId>(e));
    }
  }
  tensor_ = chip.tensor_engine();
  const double period = 1e6 / chip.tensor_unit().clock_mhz;
  if (period == std::floor(period)) ps_per_cycle_ = static_cast<std::uint64_t>(period);
  validate(program);

  cores_.resize(program.cores.size());
  heads_.resize(program.cores.size() * kMaxEngines);
  trace_.cores.resize(program.cores.size());
  std::size_t max_flows = 16, transfers = 0;
  for (std::size_t c = 0; c < program.cores.size(); ++c) {
    for (std::size_t e = 0; e < models_.size(); ++e) {
      if (!models_[e].serial) transfers += program.cores[c].queues[e].size();
    }
  }
  done_flags_.assign(transfers, 0);
  std::uint8_t* next_done = done_flags_.data();
  for (std::size_t c = 0; c < program.cores.size(); ++c) {
    trace_.cores[c].resize(models_.size());
    for (std::size_t e = 0; e < models_.size(); ++e) {
      const auto& q = program.cores[c].queues[e];
      EngineState& es = cores_[c].engines[e];
      heads_[c * kMaxEngines + e] = CommandQueue::Reader(q, 0);
      es.records = &trace_.cores[c][e];
      es.records->reserve(q.size());
      es.size = static_cast<std::uint32_t>(q.size());
      if (!models_[e].serial) {
        es.done = next_done;
        next_done += q.size();
        max_flows += models_[e].outstanding;
      }
    }
  }
  sent_.assign(program.message_count + 1, 0);
  waiters_.resize(program.message_count + 1);
  // Reserved up front so that handling an event allocates nothing.
  flows_.reserve(max_flows);
  free_flows_.reserve(max_flows);
  finished_.reserve(max_flows);
  issue_worklist_.reserve(program.cores.size());
  for (auto& list : waiters_) list.reserve(program.cores.size());
  active_.reserve(max_flows);
  active_paths_.reserve(max_flows);
  rates_.reserve(max_flows);
  events_.reserve(program.cores.size() * models_.size() + max_flows + 16);
  if (observer_) read_watched();
}

void Run::read_watched() {
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    for (std::size_t e = 0; e < models_.size(); ++e) {
      cores_[c].engines[e].watch = observer_->watched_from(c * models_.size() + e);
    }
  }
}

void Run::observed_issue(std::uint32_t core, EngineId engine, std::uint32_t index) {
  observer_->issued(core * models_.size() + engine, index, now_);
  settle_pending_ = true;
  read_watched();
}

void Run::refresh_live(std::uint32_t msg) {
  const bool live = (sent_[msg] > 0 && waits_left_[msg] > 0) || !waiters_[msg].empty();
  if (live == static_cast<bool>(live_[msg])) return;
  live_[msg] = live;
  if (live) {
    ++live_count_;
  } else {
    --live_count_;
  }
}

std::vector<std::uint64_t> Run::canonical(const StateFrame& frame, bool& complete) const {
  // Encodes everything the kernel's future depends on, relative to the frame (see the header).
  const std::vector<std::uint32_t>& start = *frame.starts;
  const std::size_t engines = models_.size();
  std::vector<std::uint64_t> out;
  auto rel = [](std::uint64_t x, std::uint64_t base) { return x - base; };  // wraps: an encoding
  auto key = [&](std::uint32_t f) -> std::uint64_t {
    const Flow& fl = flows_[f];
    const std::uint64_t r = static_cast<std::uint32_t>(fl.command - start[fl.core * engines + fl.engine]);
    return (std::uint64_t{fl.core} << 40) | (std::uint64_t{fl.engine} << 32) | r;
  };
  auto bits = [](double x) {
    std::uint64_t b = 0;
    std::memcpy(&b, &x, sizeof b);
    return b;
  };
  const std::int64_t base = frame.message_base, lower = frame.message_lo, upper = frame.message_hi;
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    const CoreState& cs = cores_[c];
    out.push_back(cs.queued_for_issue);
    out.push_back(cs.waiting_msg == 0 ? ~std::uint64_t{0} : rel(cs.waiting_msg, static_cast<std::uint64_t>(base)));
    for (std::size_t e = 0; e < engines; ++e) {
      const EngineState& es = cs.engines[e];
      const std::uint64_t s = start[c * engines + e];
      out.push_back(rel(es.head, s));
      out.push_back(rel(es.completed, s));
      out.push_back(es.in_flight);
      out.push_back(es.busy);
      out.push_back(es.moving == kNoFlow ? ~std::uint64_t{0} : key(es.moving));
      for (std::uint32_t f = es.waiting_first; f != kNoFlow; f = flows_[f].next_waiting) out.push_back(key(f));
      out.push_back(~std::uint64_t{1});
      if (es.done) {
        for (std::uint32_t i = es.completed; i < es.head; ++i) out.push_back(es.done[i]);
      }
    }
  }
  // Flows in flight, by their names (ids are labels), then the moving ones in solve order.
  std::vector<std::uint8_t> free(flows_.size(), 0);
  for (std::uint32_t f : free_flows_) free[f] = 1;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> live_flows;
  for (std::uint32_t f = 0; f < flows_.size(); ++f) {
    if (!free[f]) live_flows.emplace_back(key(f), f);
  }
  std::sort(live_flows.begin(), live_flows.end());
  for (const auto& [k, f] : live_flows) {
    const Flow& fl = flows_[f];
    out.insert(out.end(), {k, bits(fl.remaining), bits(fl.rate), bits(fl.bytes), fl.route});
  }
  out.push_back(active_.size());
  for (std::uint32_t f : active_) out.push_back(key(f));
  // Pending events in the order they will run.
  std::vector<Event> pending = events_.pending();
  std::sort(pending.begin(), pending.end(), EventQueue::before);
  for (const Event& ev : pending) {
    std::uint64_t subject = ev.subject;
    if (ev.type == EventType::transfer_startup_done) subject = key(ev.subject);
    out.insert(out.end(),
               {ev.time - now_, static_cast<std::uint64_t>(ev.priority), static_cast<std::uint64_t>(ev.type), subject});
  }
  out.push_back(completion_pending_ ? completion_at_ - now_ : ~std::uint64_t{0});
  out.push_back(now_ - last_advance_);
  out.push_back(rate_update_pending_);
  // Live messages: all inside the window, or the state is incomplete.
  std::uint64_t inside = 0;
  for (std::int64_t m = std::max<std::int64_t>(lower, 1); m <= upper && m < static_cast<std::int64_t>(sent_.size());
       ++m) {
    const auto id = static_cast<std::size_t>(m);
    if (!live_[id]) continue;
    ++inside;
    out.insert(out.end(), {static_cast<std::uint64_t>(m - base), sent_[id], waits_left_[id]});
    for (std::uint32_t core : waiters_[id]) out.push_back(core);
    out.push_back(~std::uint64_t{2});
  }
  complete = inside == live_count_;
  return out;
}

void Run::validate(const Program& program) {
  waits_left_.assign(program.message_count + 1, 0);
  live_.assign(program.message_count + 1, 0);
  for (std::size_t c = 0; c < program.cores.size(); ++c) {
    if (program.cores[c].queues.size() != models_.size()) {
      throw std::logic_error(fmt::format("core {}: {} queues, but chip '{}' has {} engines", c,
                                         program.cores[c].queues.size(), chip_.name, models_.size()));
    }
  }
  // Checked as it was made (sim/program.hpp, ProgramCheck): its wait counts are the ones read below.
  const ProgramCheck& checked = program.checked;
  if (checked.message_waits.size() == program.message_count + std::size_t{1} &&
      checked.commands == program.command_count()) {
    waits_left_ = checked.message_waits;
    return;
  }
  for (std::size_t c = 0; c < program.cores.size(); ++c) {
    for (std::size_t e = 0; e < models_.size(); ++e) {
      for (const Command& cmd : program.cores[c].queues[e]) {
        check_command(chip_, c, static_cast<EngineId>(e), cmd, program.message_count);
        if (cmd.kind == CommandKind::wait_msg) ++waits_left_[cmd.msg];
      }
    }
  }
}

Tick Run::cycle_ticks(std::uint64_t cycles) const {
  if (ps_per_cycle_ != 0) {
    if (cycles > kMaxTick / ps_per_cycle_) clock_overflow();
    return cycles * ps_per_cycle_;
  }
  const long double ps =
      static_cast<long double>(cycles) * 1e6L / static_cast<long double>(chip_.tensor_unit().clock_mhz);
  if (ps >= static_cast<long double>(kMaxTick)) clock_overflow();
  return cycles_to_ticks(cycles, chip_.tensor_unit().clock_mhz);
}

Tick Run::later(Tick dt) const {
  if (dt > kMaxTick - now_) clock_overflow();
  return now_ + dt;
}

void Run::clock_overflow() const {
  throw hw::ConfigError(
      fmt::format("the simulated time would pass {} ps (about {} days), the range of "
                  "the picosecond clock; simulate fewer layers, a shorter context or a "
                  "smaller batch",
                  kMaxTick, kMaxTick / 86'400'000'000'000'000ull));
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
  for (EngineId e : issue_order_) {
    if (models_[e].serial) {
      issue_serial(core, e);
    } else {
      issue_transfers(core, e);
    }
  }
}

bool Run::ready(const CoreState& cs, EngineState& es, const Command& cmd) {
  for (std::uint8_t i = 0; i < cmd.wait_count; ++i) {
    if (cmd.wait_id[i] > cs.engines[cmd.wait_engine[i]].completed) {
      es.blocked_on = cmd.wait_engine[i];
      es.blocked_id = cmd.wait_id[i];
      return false;
    }
  }
  es.blocked_id = 0;
  return true;
}

void Run::issue_serial(std::uint32_t core, EngineId engine) {
  CoreState& cs = cores_[core];
  EngineState& es = cs.engines[engine];
  RecordQueue& records = *es.records;
  // A core whose tensor head waits for a message stays blocked until a send wakes it.
  if (cs.waiting_msg != 0 && engine == tensor_) return;
  while (!es.busy && es.head < es.size) {
    if (still_blocked(cs, es)) return;
    CommandQueue::Reader& reader = head_reader(core, engine);
    if (!ready(cs, es, *reader)) return;
    const Command cmd = *reader;  // a copy: advance_head moves the reader on
    switch (cmd.kind) {
      case CommandKind::compute:
        if (es.head >= es.watch) observed_issue(core, engine, es.head);
        records.start(es.head, now_);
        advance_head(es, reader);
        es.busy = true;
        events_.push(later(cycle_ticks(cmd.amount)), EventPriority::kState, EventType::serial_done,
                     core * static_cast<std::uint32_t>(kMaxEngines) + engine,
                     std::uint64_t{core} * kMaxEngines + engine);
        return;
      case CommandKind::delay:
        if (es.head >= es.watch) observed_issue(core, engine, es.head);
        records.start(es.head, now_);
        advance_head(es, reader);
        es.busy = true;
        events_.push(later(cmd.amount), EventPriority::kState, EventType::serial_done,
                     core * static_cast<std::uint32_t>(kMaxEngines) + engine,
                     std::uint64_t{core} * kMaxEngines + engine);
        return;
      case CommandKind::send_msg: {
        if (es.head >= es.watch) observed_issue(core, engine, es.head);
        records.instant(es.head, now_);
        advance_head(es, reader);
        ++es.completed;
        ++sent_[cmd.msg];
        auto& waiting = waiters_[cmd.msg];
        for (std::uint32_t other : waiting) {
          cores_[other].waiting_msg = 0;  // re-registers if the count is still short
          request_issue(other);
        }
        waiting.clear();
        refresh_live(cmd.msg);
        break;
      }
      case CommandKind::fence:
        if (es.head >= es.watch) observed_issue(core, engine, es.head);
        records.instant(es.head, now_);
        advance_head(es, reader);
        ++es.completed;
        break;
      case CommandKind::wait_msg:
        if (sent_[cmd.msg] < cmd.msg_count) {
          if (cs.waiting_msg != cmd.msg) {
            cs.waiting_msg = cmd.msg;
            waiters_[cmd.msg].push_back(core);
            refresh_live(cmd.msg);
          }
          return;
        }
        if (es.head >= es.watch) observed_issue(core, engine, es.head);
        cs.waiting_msg = 0;
        --waits_left_[cmd.msg];
        refresh_live(cmd.msg);
        records.instant(es.head, now_);
        advance_head(es, reader);
        ++es.completed;
        break;
      case CommandKind::transfer: return;  // rejected by validate()
    }
  }
}

void Run::issue_transfers(std::uint32_t core, EngineId engine) {
  CoreState& cs = cores_[core];
  EngineState& es = cs.engines[engine];
  const EngineModel& model = models_[engine];
  while (es.in_flight < model.outstanding && es.head < es.size) {
    if (still_blocked(cs, es)) return;
    CommandQueue::Reader& reader = head_reader(core, engine);
    const Command& cmd = *reader;  // read before advance_head moves the reader on
    if (!ready(cs, es, cmd)) return;
    if (es.head >= es.watch) observed_issue(core, engine, es.head);
    es.records->start(es.head, now_);
    std::uint32_t f;
    if (!free_flows_.empty()) {
      f = free_flows_.back();
      free_flows_.pop_back();
    } else {
      f = static_cast<std::uint32_t>(flows_.size());
      flows_.emplace_back();
    }
    const std::uint8_t route = route_of(cmd.direction);
    // From the L2 the bytes move as they are; through DDR as whole bursts plus access overheads.
    const auto moved =
        static_cast<double>(route == kFromL2 ? cmd.amount : cost_.bus_bytes(engine, cmd.amount, cmd.row_bytes));
    flows_[f] = Flow{moved, 0.0, moved, core, es.head, engine, 0, kNoFlow, route};
    advance_head(es, reader);
    ++es.in_flight;
    events_.push(later(model.startup[route]), EventPriority::kState, EventType::transfer_startup_done, f,
                 (std::uint64_t{core} << 40) | (std::uint64_t{engine} << 32) | (es.head - 1));
  }
}

void Run::on_serial_done(std::uint32_t subject) {
  const std::uint32_t core = subject / static_cast<std::uint32_t>(kMaxEngines);
  const auto engine = static_cast<EngineId>(subject % kMaxEngines);
  EngineState& es = cores_[core].engines[engine];
  es.records->finish(es.completed, now_);
  last_end_ = now_;
  ++es.completed;
  es.busy = false;
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
  EngineState& es = cores_[flow.core].engines[flow.engine];
  if (es.moving != kNoFlow) {
    // The engine is moving an earlier descriptor's bytes: this one's request is out (its start-up
    // and round trip overlap the head's transfer), its data follows when the head is done.
    if (es.waiting_last == kNoFlow) {
      es.waiting_first = f;
    } else {
      flows_[es.waiting_last].next_waiting = f;
    }
    es.waiting_last = f;
    return;
  }
  start_moving(f);
}

void Run::start_moving(std::uint32_t f) {
  Flow& flow = flows_[f];
  cores_[flow.core].engines[flow.engine].moving = f;
  flow.active_slot = static_cast<std::uint32_t>(active_.size());
  active_.push_back(f);
  const EngineModel& model = models_[flow.engine];
  FlowPath path;
  if (model.channel >= 0) {
    path.constraints[path.count++] = flow.core * channels_per_core_ + static_cast<std::uint32_t>(model.channel);
  }
  const FlowPath& shared = model.shared[flow.route];
  for (std::uint8_t i = 0; i < shared.count; ++i) path.constraints[path.count++] = shared.constraints[i];
  active_paths_.push_back(path);
  request_rate_update();
}

void Run::complete(std::uint32_t f) {
  Flow& flow = flows_[f];
  EngineState& es = cores_[flow.core].engines[flow.engine];
  es.records->finish(flow.command, now_);
  last_end_ = now_;
  es.done[flow.command] = 1;
  while (es.completed < es.size && es.done[es.completed]) ++es.completed;
  --es.in_flight;
  free_flows_.push_back(f);
  request_issue(flow.core);
}

void Run::on_completion() {
  advance_flows();
  finished_.clear();
  for (std::uint32_t f : active_) {
    const Flow& flow = flows_[f];
    if (flow.remaining <= flow.bytes * kFinishedFraction + kFinishedBytes) finished_.push_back(f);
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
    const Flow& flow = flows_[f];
    EngineState& es = cores_[flow.core].engines[flow.engine];
    es.moving = kNoFlow;
    complete(f);
    if (es.waiting_first != kNoFlow) {
      const std::uint32_t next = es.waiting_first;
      es.waiting_first = flows_[next].next_waiting;
      if (es.waiting_first == kNoFlow) es.waiting_last = kNoFlow;
      flows_[next].next_waiting = kNoFlow;
      start_moving(next);
    }
  }
  request_rate_update();
}

void Run::request_rate_update() {
  if (rate_update_pending_) return;
  rate_update_pending_ = true;
  events_.push(now_, EventPriority::kRateUpdate, EventType::rate_update, 0, 0);
}

void Run::update_rates() {
  rate_update_pending_ = false;
  advance_flows();
  ++generation_;
  completion_pending_ = false;  // replaced below, or none when nothing moves
  if (active_.empty()) return;
  rates_.resize(active_.size());
  sharing_.solve(active_paths_, rates_);
  double earliest = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < active_.size(); ++i) {
    Flow& flow = flows_[active_[i]];
    flow.rate = rates_[i];
    earliest = std::min(earliest, std::max(0.0, flow.remaining) / flow.rate);
  }
  // Round up (time never runs short of the bytes), forgiving representation error.
  const double ticks = std::ceil(earliest * (1 - kCompletionFraction) - kCompletionTicks);
  if (!(ticks < static_cast<double>(kMaxTick))) clock_overflow();
  completion_at_ = later(static_cast<Tick>(ticks));
  completion_pending_ = true;
}

bool Run::next_event(Event& ev) {
  const Event completion{completion_at_,
                         Event::order_of(EventPriority::kState, EventType::transfer_completion, generation_),
                         generation_, EventPriority::kState, EventType::transfer_completion};
  if (completion_pending_ && (events_.empty() || EventQueue::before(completion, events_.top()))) {
    completion_pending_ = false;
    ev = completion;
    return true;
  }
  if (events_.empty()) return false;
  ev = events_.pop();
  return true;
}

void Run::report_stuck() const {
  std::string detail;
  for (std::size_t c = 0; c < cores_.size() && detail.size() <= 2000; ++c) {
    for (std::size_t e = 0; e < models_.size(); ++e) {
      const EngineState& es = cores_[c].engines[e];
      const auto& q = program_.cores[c].queues[e];
      if (es.head >= q.size()) continue;
      const Command cmd = q[es.head];
      std::string waits;
      for (std::uint8_t i = 0; i < cmd.wait_count; ++i) {
        waits += fmt::format(" {} {}", chip_.engines[cmd.wait_engine[i]].name, cmd.wait_id[i]);
      }
      detail += fmt::format("\n  core {} {} head id {} (op {}): waits{} msg {}x{}", c, chip_.engines[e].name,
                            es.head + 1, cmd.op, waits, cmd.msg, cmd.msg_count);
    }
  }
  throw std::logic_error("program deadlocked: queues cannot make progress" + detail);
}

std::uint64_t Run::commands_completed() const {
  std::uint64_t n = 0;
  for (const auto& core : cores_) {
    for (const auto& engine : core.engines) n += engine.completed;
  }
  return n;
}

Trace Run::execute() {
  for (std::uint32_t c = 0; c < cores_.size(); ++c) request_issue(c);
  drain_issue_worklist();
  settle();
  Event ev;
  while (next_event(ev)) {
    if (ev.time < now_) throw std::logic_error("event kernel: time went backwards");
    now_ = ev.time;
    if (++events_done_ % kCancelPollEvents == 0) {
      poll_cancel();
      if (progress_wanted()) report_progress("simulating", commands_completed(), program_.command_count());
    }
    switch (ev.type) {
      case EventType::serial_done: on_serial_done(ev.subject); break;
      case EventType::transfer_startup_done: on_startup_done(ev.subject); break;
      case EventType::transfer_completion: on_completion(); break;
      case EventType::rate_update: update_rates(); break;
    }
    drain_issue_worklist();
    settle();
  }
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    for (std::size_t e = 0; e < models_.size(); ++e) {
      if (cores_[c].engines[e].completed < program_.cores[c].queues[e].size()) report_stuck();
    }
  }
  // The last event may be a stale completion; the run ends with its last command.
  trace_.end = last_end_;
  trace_.events = events_done_;
  if (progress_wanted()) report_progress("simulating", commands_completed(), program_.command_count());
  return std::move(trace_);
}

}  // namespace

void refuse_command(const hw::Chip& chip, std::size_t core, EngineId engine, const Command& cmd, CommandFault fault,
                    std::uint8_t wait) {
  const hw::EngineSpec& spec = chip.engines[engine];
  switch (fault) {
    case CommandFault::kind:
      throw std::logic_error(
          fmt::format("core {}: engine {} queue holds a command of the wrong kind", core, spec.name));
    case CommandFault::message:
      throw std::logic_error(fmt::format("core {}: message id {} out of range", core, cmd.msg));
    case CommandFault::wait: {
      const EngineId w = cmd.wait_engine[wait];
      throw std::logic_error(
          fmt::format("core {}: a {} command waits on engine {}, which chip '{}' does not allow (waits_on)", core,
                      spec.name, w < chip.engines.size() ? chip.engines[w].name : "?", chip.name));
    }
    case CommandFault::none: break;
  }
  throw std::logic_error("refuse_command: a command that breaks no rule");
}

Simulator::Simulator(const hw::Chip& chip) : chip_(chip) {}

Trace Simulator::run(const Program& program, KernelObserver* observer) const {
  return Run(chip_, program, observer).execute();
}

}  // namespace sim
