#pragma once
// The limits of a run, in one place (README, "Input limits"): far above any deployment, low
// enough that every byte, FLOP and command count of a step stays inside 64 bits and a grid's
// bookkeeping inside memory. The library checks them here; the front ends read them through the
// run-option table (g5sim/run_options.hpp: each option's range, and run_limits()).

#include <cstddef>
#include <cstdint>

namespace models {

constexpr std::uint64_t kMaxBatch = std::uint64_t{1} << 20;    ///< sequences of one step
constexpr std::uint64_t kMaxContext = std::uint64_t{1} << 24;  ///< tokens (kv_len, q_len)
constexpr std::uint64_t kMaxDegree = 65536;                    ///< each of tp, ep, dp
constexpr std::uint64_t kMaxChips = std::uint64_t{1} << 20;    ///< tp x dp
constexpr std::uint64_t kMaxLayers = 1024;                     ///< decoder layers (a model's, --layers)
constexpr std::uint64_t kMaxMicroBatches = 64;
constexpr std::uint64_t kMaxHostLaunchNs = 10'000'000'000;             ///< --host-launch-ns: 10 s
constexpr std::uint64_t kMaxCores = 4096;                              ///< --cores (and a chip's cores)
constexpr std::uint64_t kMaxHeads = 4096;                              ///< attention heads (a model's, an op's)
constexpr std::uint64_t kMaxHeadDim = 65536;                           ///< a head's dimension
constexpr std::uint64_t kMaxWeightGroup = std::uint64_t{1} << 20;      ///< int8/int4 scale group; 0 = per column
constexpr std::uint64_t kMaxCommandsCeiling = std::uint64_t{1} << 40;  ///< the largest --max-commands
constexpr std::uint64_t kMaxGridPoints = std::uint64_t{1} << 32;       ///< points of one sweep grid
constexpr std::size_t kMaxContextList = 4096;                          ///< entries of one --ctx list
constexpr std::uint64_t kMaxComparedWorkloads = 4096;                  ///< workloads of one compare
constexpr std::uint64_t kMaxJobs = 1024;                               ///< threads of a sweep, compare, validate

}  // namespace models
