#include "ops/loop_replay.hpp"

#include <fmt/format.h>

namespace ops {
namespace {

bool is_message(const sim::Command& c) {
  return c.kind == sim::CommandKind::send_msg || c.kind == sim::CommandKind::wait_msg;
}

// One loop's run: its kept units as blocks of every queue, each a shifted copy of the one before
// it (unit 0 too, unless it differs: first_repeating = 1). False, with the refusal, when not.
bool plan_loop(RunPlan& run, std::string& refusal, const LoweredLoop& loop, const Lowered& lowered,
               const hw::Chip& chip) {
  const std::size_t engines = chip.engines.size();
  const std::size_t K = loop.starts.size() - 1;
  const std::size_t queues = lowered.program.cores.size() * engines;
  run.starts.assign(loop.starts.begin(), loop.starts.begin() + static_cast<std::ptrdiff_t>(K));
  run.run_end = loop.starts[K];
  run.per_layer.assign(queues, 0);
  run.message_base.assign(K, 0);
  auto where = [&](std::size_t q) { return fmt::format("core {} {}", q / engines, chip.engines[q % engines].name); };
  for (std::size_t q = 0; q < queues; ++q) {
    run.per_layer[q] = loop.starts[K][q] - loop.starts[K - 1][q];
    for (std::size_t k = 1; k < K; ++k) {
      if (loop.starts[k + 1][q] - loop.starts[k][q] != run.per_layer[q]) {
        refusal = fmt::format("{}: the chunk iterations of op {} lower to different command counts", where(q), loop.op);
        return false;
      }
    }
  }
  auto unit_repeats = [&](std::size_t q, std::size_t k) {
    const std::uint32_t P = run.per_layer[q];
    const auto& queue = lowered.program.cores[q / engines].queues[q % engines];
    for (std::uint32_t i = run.starts[k][q]; i < run.starts[k][q] + P; ++i) {
      if (is_message(queue[i]) || !repeats_shifted(run, lowered, engines, 0, q, i, P)) return false;
    }
    return true;
  };
  run.first_repeating = 0;
  for (std::size_t q = 0; q < queues && run.first_repeating == 0; ++q) {
    if (run.starts[1][q] - run.starts[0][q] != run.per_layer[q] || !unit_repeats(q, 1)) run.first_repeating = 1;
  }
  for (std::size_t q = 0; q < queues; ++q) {
    for (std::size_t k = 2; k < K; ++k) {
      if (!unit_repeats(q, k)) {
        refusal =
            fmt::format("{}: chunk iteration {} of op {} does not repeat the one before it", where(q), k, loop.op);
        return false;
      }
    }
  }
  return true;
}

}  // namespace

ReplayPlan plan_loop_replay(const Lowered& lowered, const hw::Chip& chip) {
  ReplayPlan plan;
  for (std::size_t l = 0; l < lowered.loops.size(); ++l) {
    const LoweredLoop& loop = lowered.loops[l];
    if (loop.starts.size() < 5) throw std::logic_error("plan_loop_replay: keep at least four iterations");
    RunPlan run;
    if (!plan_loop(run, plan.refusal, loop, lowered, chip)) {
      plan.refused = l;
      return plan;
    }
    if (!plan.runs.empty()) {
      for (std::size_t q = 0; q < run.run_end.size(); ++q) {
        if (run.starts[0][q] < plan.runs.back().run_end[q]) {
          plan.refusal = "two cut chunk loops interleave";
          plan.refused = l;
          return plan;
        }
      }
    }
    for (std::size_t k = 0; k < run.starts.size(); ++k) {
      plan.watch.starts.push_back(run.starts[k]);
      plan.watch.message_base.push_back(0);
      plan.watch.message_lo.push_back(0);
      plan.watch.message_hi.push_back(0);
      plan.watch.follows.push_back(k > 0);
    }
    plan.runs.push_back(std::move(run));
  }
  return plan;
}

}  // namespace ops
