// Fuzzes the runtime config reader (g5sim/runtime.hpp) and what a read runtime answers: its
// kernel pair, its collectives' latency at any size, its step CPU and request front end at the
// largest counts a serve allows (a verify streams at most 8 tokens: --mtp 0..7).
#include <limits>

#include "fuzz_common.hpp"
#include "g5sim/runtime.hpp"
#include "g5sim/serve.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const g5sim::Runtime r = g5sim::Runtime::from_yaml(fuzz::text_of(data, size), "fuzz-runtime");
    volatile std::uint64_t sink = r.kernels_for(r.kernel_mode(true, 1, 1), false).gap_ns +
                                  r.kernels_for(r.kernel_mode(false, 1 << 20, 1 << 20), true).floor_ns;
    // A step's charge with its launch waits: three kernels of the longest a step of the
    // simulator's command limit could hold, and a long eager step of short ones.
    g5sim::StepOps step;
    step.decode_only = false;
    step.ops.assign(3, {0, std::uint64_t{1} << 50, 0, std::uint64_t{1} << 50, true});
    sink = sink + g5sim::device_charge(r, step).total_ps();
    step.ops.assign(100000, {0, 1, 0, 1, false});
    sink = sink + g5sim::device_charge(r, step).total_ps();
    for (std::uint64_t bytes : {std::uint64_t{0}, std::uint64_t{1}, std::numeric_limits<std::uint64_t>::max()}) {
      sink = sink + r.collective("all_reduce", bytes).latency_ns + r.collective("all_to_all", bytes).latency_ns;
    }
    sink = sink + r.step_cpu_ns(g5sim::kMaxServeSeqs, g5sim::kMaxBatchedTokens) +
           r.request_in_ns(g5sim::kMaxBatchedTokens) + r.serial_in_ns(g5sim::kMaxBatchedTokens) +
           r.serial_ns_per_output_token * 8 * 1000 + r.has_serial_front_end();
    (void)sink;
    (void)r.summary();
  } catch (const g5sim::ConfigError&) {
  }
  return 0;
}
