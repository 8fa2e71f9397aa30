#pragma once
// The chip as data: what one SG2262-class accelerator can compute and move, per core and shared.
//
// The instruction and transfer costs these numbers imply are stated (and computed) in one place,
// hw/cost_model.hpp. The engines that run instructions and move data, their dependency rule and
// the bandwidth resources they share are data too: hw/engine.hpp states that model. The shared
// resources are the DDR (capacity ddr_bandwidth * ddr_efficiency, eta_m), the chip-to-chip links
// (c2c.links x c2c.bandwidth) and, when present, an L2 SRAM of its own bandwidth.
//
// Nothing has a default: load_chip() requires every field (hw/strict_config.hpp). Optional
// sections (`l2`) and optional engines (a sort unit, a collective engine) are absent by design
// when not written; a chip without a sort engine runs top-k on the vector unit.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/config_error.hpp"
#include "hw/dtype.hpp"
#include "hw/energy.hpp"
#include "hw/engine.hpp"
#include "hw/error_band.hpp"

namespace hw {

/// Operand layouts of a matrix instruction: NN computes A B, NT A B^T, TT A^T B^T.
enum class MatmulLayout : std::uint8_t { nn = 0, nt = 1, tt = 2 };

/// How a matmul's weights (its B operand, [k, n] in the maths) lie in DDR, a choice of the
/// software stack the chip runs: `k_major` stores each output column's k values contiguously
/// ([n, k], as PyTorch's nn.Linear keeps them and GPU GEMM kernels such as DeepGEMM's NT GEMM
/// read them), `n_major` stores each k row's n values contiguously ([k, n]). A core's tile of a
/// few columns is then a few long rows (k_major) or many short ones (n_major), which cost whole
/// DDR bursts each (hw/cost_model.hpp, bus bytes).
enum class WeightLayout : std::uint8_t { n_major = 0, k_major = 1 };

struct Chip {
  std::string name;
  std::string source;         ///< file path or "<memory:NAME>", for messages
  std::string source_sha256;  ///< SHA-256 of the text it was read from (tells same-named files apart)

  std::uint32_t cores = 0;
  std::uint64_t lmem_bytes_per_core = 0;
  WeightLayout weight_layout = WeightLayout::n_major;
  /// Whether a matmul may cut its reduction over cores (split-K: fp32 partial sums, a barrier and
  /// a reduction, ops/work_split.hpp) when that is faster. A stack choice too: DeepGEMM's and
  /// CUTLASS's persistent GEMMs keep a tile's whole k on one SM, so the GPU configs say false.
  bool matmul_split_k = true;

  double ddr_bandwidth_gb_per_s = 0;
  double ddr_efficiency = 0;  ///< eta_m: achievable fraction of ddr bandwidth (uncalibrated)
  std::uint64_t ddr_capacity_bytes = 0;
  double ddr_latency_ns = 0;          ///< round trip of a DDR request, paid by every transfer
  std::uint64_t ddr_burst_bytes = 0;  ///< transfers move whole bursts (each row of a strided one)
  /// DRAM time lost per access (each contiguous run: a whole transfer, or each row of a strided
  /// one), as the bytes the DRAM could have moved meanwhile (hw/cost_model.hpp, bus bytes).
  std::uint64_t ddr_access_overhead_bytes = 0;

  /// Chip-to-chip links used by collectives (CDMA): `links` links of bandwidth_gb_per_s each,
  /// used together; every transfer pays latency_ns first.
  struct C2cLink {
    double bandwidth_gb_per_s = 0;
    double latency_ns = 0;
    std::uint32_t links = 0;
  } c2c;

  /// An on-chip L2 SRAM shared by all cores, when the chip has one: transfers of engines that
  /// list `l2` in `crosses` share its bandwidth and pay its latency.
  struct L2 {
    std::uint64_t capacity_bytes = 0;
    double bandwidth_gb_per_s = 0;
    double latency_ns = 0;
    /// A hardware cache of DDR reads (a GPU's L2): a matmul operand block another core, or an
    /// earlier tile, of the same op has read comes from the L2 when the op's operands fit in it
    /// (ops/matmul_lowering.cpp). false: a scratchpad that only explicit staging fills (SG2262).
    bool caches_reads = false;
  };
  std::optional<L2> l2;

  /// Chips grouped in nodes (a GPU cluster): the c2c links join the chips of one node; traffic to
  /// chips of other nodes leaves through this chip's network interface, the shared resource
  /// `rdma` (its bandwidth, its latency), instead. Absent: every chip of a deployment is reached
  /// over c2c (one tier).
  struct Nodes {
    std::uint32_t chips_per_node = 0;
    double rdma_bandwidth_gb_per_s = 0;
    double rdma_latency_ns = 0;
  };
  std::optional<Nodes> nodes;
  /// Indexes into `resources` of the L2 and of the network interface, when present.
  std::optional<std::uint32_t> l2_resource, rdma_resource;

  /// A calibrated config's record of its cross-validated errors (`calibration.bands`): the band a
  /// result carries. Absent for a chip not calibrated against measurements.
  std::optional<ErrorBands> error_bands;
  /// What its work costs in energy (`energy`, hw/energy.hpp); absent: no energy reported.
  std::optional<ChipEnergy> energy;
  /// The config holds a `calibration` record (g5sim calibrate wrote it), with or without bands;
  /// then also its held-out MAPEs.
  bool calibrated = false;
  HeldOutMape held_out_mape;

  /// Every core's engines, in declaration order (the order queues and reports list them).
  std::vector<EngineSpec> engines;
  /// Shared bandwidth resources: the DDR, the C2C links, then the L2 and the network interface
  /// (`rdma`) when present.
  std::vector<SharedResource> resources;

  const EngineSpec& engine(EngineId id) const { return engines[id]; }
  std::optional<EngineId> find_engine(std::string_view name) const;
  /// Names of the engines of a kind, for messages ("gdma, sdma").
  std::string engine_names(EngineKind kind) const;
  EngineId tensor_engine() const { return tensor_engine_; }
  std::optional<EngineId> sort_engine() const { return sort_engine_; }
  std::optional<EngineId> collective_engine() const { return collective_engine_; }
  /// The DMA engine of a single-engine role (tiles, cross_core, gather).
  EngineId dma_for(DmaRole role) const;
  /// The first DMA engine that may stream the decode history (the default history route).
  EngineId default_kv_engine() const;

  /// Round trip of a transfer on `engine`: the largest latency among the resources it crosses.
  double round_trip_ns(EngineId engine) const;

  /// Finds the engine roles and indexes once engines are filled in; throws ConfigError naming
  /// `where` when a rule of hw/engine.hpp is broken.
  void index_engines(const std::string& where, const ErrorSite& site);

  /// The tensor engine's parameters (its EngineSpec::tensor).
  const TensorUnit& tensor_unit() const { return engines[tensor_engine()].tensor; }
  TensorUnit& tensor_unit() { return engines[tensor_engine()].tensor; }
  std::uint32_t cube_macs(DType t) const { return tensor_unit().cube_macs_per_lane_per_cycle[static_cast<int>(t)]; }
  std::uint32_t vector_eu(DType t) const { return tensor_unit().vector_eu_per_lane[static_cast<int>(t)]; }

 private:
  EngineId tensor_engine_ = 0;
  std::optional<EngineId> sort_engine_, collective_engine_;
  std::array<std::optional<EngineId>, kDmaRoleCount> role_engine_{};
};

/// Reads a chip YAML file strictly. Throws ConfigError naming field, file and line.
Chip load_chip(const std::string& path);
/// Same, from YAML text held in memory; errors name "<memory:source_name>".
Chip chip_from_yaml(const std::string& text, const std::string& source_name);
/// A document built in memory (a Python dict) handed over as JSON text: errors name
/// `source_name` as given and the dotted field, without positions.
Chip chip_from_document(const std::string& json_text, const std::string& source_name);

}  // namespace hw
