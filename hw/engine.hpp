#pragma once
// The engines of one core, as data. A chip config lists them (`engines:`); the event kernel and
// the lowering look them up here and hold no code per engine name.
//
// Two behaviours, by kind:
//   serial   (tensor, sort): one instruction at a time, in queue order; an instruction of c cycles
//            takes c cycles of the core clock (tensor.clock_mhz).
//   transfer (dma, collective): up to `outstanding` commands in flight, issued and served in
//            queue order. A transfer waits startup_ns plus the round trip of the farthest resource
//            it crosses (the largest latency_ns among `crosses`), overlapping the transfers ahead
//            of it; when they have all moved their bytes it moves its own (one moving transfer per
//            engine per core: bandwidth is delivered head first) at a rate shared max-min fairly
//            with the other engines' over the constraints it crosses:
//              dma        - its own channel on its core, capacity
//                           min(bandwidth x efficiency, bytes_in_flight / round trip) (the
//                           engine's sustained rate, and Little's law), then the shared resources
//                           in `crosses` order; it moves whole DDR bursts (each row of a strided
//                           transfer rounds up) and pays the DRAM's access overhead per row;
//              collective - the shared resources in `crosses` order only; it moves its payload.
// Dependencies are (engine, id) pairs: a command may name, for each engine listed in its own
// engine's `waits_on`, the id on that engine it must see completed first. The rule is part of the
// chip (SG2262: TIU waits on DMA and HAU ids, GDMA and SDMA on TIU and HAU ids, HAU on GDMA and
// TIU ids), and a command naming any other engine is rejected when it is built.
//
// DMA roles say what the lowering uses each DMA engine for; a role has exactly one engine unless
// noted:
//   tiles        loads and stores of matmul, vector and attention tiles;
//   kv_stream    (one or more) may stream the decode history chunk by chunk beside fa2;
//   kv_resident  (zero or more) may load each core's whole history share into local memory
//                before fa2 starts (the spec's SDMA route, with initial_sdma_dep);
//   cross_core   reads data other cores left in DDR (fa2's partial outputs, for the combine);
//   gather       DSA's gather of the selected history rows.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hw/dtype.hpp"

namespace hw {

enum class EngineKind : std::uint8_t { tensor, sort, dma, collective };
std::string_view name_of(EngineKind kind);

enum class DmaRole : std::uint8_t { tiles, kv_stream, kv_resident, cross_core, gather };
constexpr std::size_t kDmaRoleCount = 5;
std::string_view name_of(DmaRole role);

/// Index of an engine in Chip::engines (declaration order).
using EngineId = std::uint8_t;
/// At most this many engines per core: commands keep one wait slot per engine.
constexpr std::size_t kMaxEngines = 8;
/// At most this many constraints on a transfer's path: its channel and up to three resources.
constexpr std::size_t kMaxPathResources = 4;

/// The tensor engine's parameters (engines.<name> of kind tensor): its clock and what its cube,
/// vector unit and SFU do per cycle; the instruction costs are hw/cost_model.hpp's.
struct TensorUnit {
  double clock_mhz = 0;
  std::uint32_t lanes_per_core = 0;
  std::uint32_t cube_n = 0;  ///< output columns one lane's cube produces per pass
  std::array<std::uint32_t, kDTypeCount> cube_macs_per_lane_per_cycle{};  ///< indexed by DType; 0 = unsupported
  std::array<std::uint32_t, kDTypeCount> vector_eu_per_lane{};            ///< indexed by DType; 0 = unsupported
  std::array<std::uint32_t, 3> mm2_init_cycles{};                         ///< indexed by MatmulLayout
  std::uint32_t bank_conflict_cycles = 0;
  /// Fraction of the cube's stated rate its matrix instructions sustain, in (0, 1]: what the
  /// per-instruction costs do not see (issue gaps, operand staging, throttled clocks under load).
  /// 1 = the costs as stated; a calibration target (g5sim calibrate).
  double cube_efficiency = 1;
  std::uint32_t vector_init_cycles = 0;
  std::uint32_t sfu_init_cycles = 0;
  std::uint32_t sfu_elements_per_lane_per_cycle = 0;
};

struct EngineSpec {
  std::string name;
  EngineKind kind = EngineKind::tensor;
  std::vector<EngineId> waits_on;  ///< engines whose ids this engine's commands may wait on
  std::uint32_t wait_mask = 0;     ///< the same as a bit set (bit e: may wait on engine e)

  // The tensor engine: its instruction costs (the model at the top of hw/chip.hpp).
  TensorUnit tensor;

  // Transfer engines (dma, collective).
  double startup_ns = 0;               ///< fixed cost of a command before its round trip
  std::uint32_t outstanding = 0;       ///< commands in flight at once on one core
  std::vector<std::uint32_t> crosses;  ///< Chip::resources ids, in path order
  // DMA engines: the engine's own channel on each core.
  double bandwidth_gb_per_s = 0;      ///< channel bandwidth (1e9 B/s)
  double efficiency = 0;              ///< fraction of it the engine sustains, in (0, 1]
  std::uint64_t bytes_in_flight = 0;  ///< bus requests outstanding, in bytes (AXI outstanding x burst)
  std::uint32_t roles = 0;            ///< bit set of DmaRole

  // Sort engines (the HAU): selecting the top k of n scores of each of `rows` rows takes
  //   init_cycles + rows * ceil(n / sort_width) * max(1, ceil(log2 k)) * compare_cycles.
  std::uint32_t sort_width = 0;
  std::uint32_t compare_cycles = 0;
  std::uint32_t init_cycles = 0;

  /// The name in tables and traces: the config name in capitals ("GDMA").
  std::string display_name() const;
  bool serial() const { return kind == EngineKind::tensor || kind == EngineKind::sort; }
  bool serves(DmaRole role) const { return (roles >> static_cast<unsigned>(role)) & 1u; }
  bool may_wait_on(EngineId other) const { return (wait_mask >> other) & 1u; }
};

/// A bandwidth resource every core's transfers share when they cross it (the DDR, the
/// chip-to-chip links, an L2 SRAM).
struct SharedResource {
  std::string name;
  double capacity_gb_per_s = 0;  ///< what all transfers crossing it share (1e9 B/s)
  double latency_ns = 0;         ///< round trip of a request to it
};

}  // namespace hw
