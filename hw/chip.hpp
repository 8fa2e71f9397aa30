#pragma once
// The chip as data: what one SG2262-class accelerator can compute and move, per core and shared.
//
// Throughput model used by the rest of the simulator:
//   TIU matrix (MM2) instruction of shape m x k x n in dtype t and layout L (NN: A B, NT: A B^T,
//   TT: A^T B^T), in cycles:
//       mm2_init[L] + ceil(m / lanes) * ceil(n / cube_n) * (ceil(k / (macs_per_lane[t] / cube_n))
//                                                            + bank_conflict)
//     (rows spread over lanes; each lane's cube does cube_n output columns times
//      macs_per_lane[t] / cube_n reduction steps per cycle; partial shapes waste the rest; an
//      operand sharing a local-memory bank with the result costs bank_conflict cycles per block).
//   TIU vector (AR) instruction over e element-operations in dtype t:
//       init_vec + ceil(e / (lanes * vector_eu_per_lane[t])).
//   TIU special-function (SFU: exp, rsqrt) instruction over e elements:
//       init_sfu + ceil(e / (lanes * sfu_elements_per_lane_per_cycle)).
//   Cycles become time at tiu_clock_mhz.
//   DMA command of b bytes on engine E: startup_E + ddr_latency, then its bus bytes (b rounded up
//   to whole ddr bursts, per row for a strided transfer) flow at a rate shared max-min fairly
//   between the active transfers over (a) E's own channel on that core, capacity
//   min(bandwidth_E, bytes_in_flight_E / ddr_latency) (Little's law), and (b) the chip's DDR,
//   capacity ddr_bandwidth * ddr_efficiency (eta_m).
//   At most outstanding_E commands of one engine of one core are in flight.
//   CDMA command of b bytes (collectives, core 0 only, one at a time): c2c.latency, then the
//   bytes at up to c2c.links x c2c.bandwidth, shared with nothing but the DDR.
// Peak figures (for rooflines) follow from the same numbers:
//   cube peak FLOP/s = cores * lanes * macs_per_lane[t] * 2 * clock.
//
// Nothing has a default: load_chip() requires every field (hw/strict_config.hpp). The `hau`
// section is the one optional section: a chip without it has no HAU, and top-k runs on the
// vector unit.

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "hw/dtype.hpp"

namespace hw {

/// Operand layouts of a matrix instruction: NN computes A B, NT A B^T, TT A^T B^T.
enum class MatmulLayout : std::uint8_t { nn = 0, nt = 1, tt = 2 };

struct DmaEngineSpec {
  double bandwidth_gb_per_s = 0;  ///< channel bandwidth of one engine of one core (1e9 B/s)
  double startup_ns = 0;          ///< fixed latency before the first byte moves
  std::uint32_t outstanding = 0;  ///< commands in flight at once on one engine of one core
  std::uint64_t bytes_in_flight = 0;  ///< bus requests outstanding, in bytes (AXI outstanding x burst)

  /// Little's law: with bytes_in_flight outstanding over a memory round trip of latency_ns, an
  /// engine sustains at most bytes_in_flight / latency; the channel caps it too.
  double sustained_gb_per_s(double latency_ns) const;
};

struct Chip {
  std::string name;
  std::string source;  ///< file path or "<memory:NAME>", for messages

  std::uint32_t cores = 0;
  double tiu_clock_mhz = 0;
  std::uint32_t lanes_per_core = 0;
  std::uint32_t cube_n = 0;                      ///< output columns one lane's cube produces per pass
  std::array<std::uint32_t, 3> cube_macs_per_lane_per_cycle{};  ///< indexed by DType; 0 = unsupported
  std::array<std::uint32_t, 3> vector_eu_per_lane{};            ///< indexed by DType; 0 = unsupported
  std::array<std::uint32_t, 3> mm2_init_cycles{};  ///< indexed by MatmulLayout
  std::uint32_t bank_conflict_cycles = 0;
  std::uint32_t vector_init_cycles = 0;
  std::uint32_t sfu_init_cycles = 0;
  std::uint32_t sfu_elements_per_lane_per_cycle = 0;
  std::uint64_t lmem_bytes_per_core = 0;

  DmaEngineSpec gdma;
  DmaEngineSpec sdma;

  double ddr_bandwidth_gb_per_s = 0;
  double ddr_efficiency = 0;  ///< eta_m: achievable fraction of ddr bandwidth (uncalibrated)
  std::uint64_t ddr_capacity_bytes = 0;
  double ddr_latency_ns = 0;        ///< round trip of a DDR request, paid by every transfer
  std::uint64_t ddr_burst_bytes = 0;  ///< transfers move whole bursts (each row of a strided one)

  /// The hardware sort / top-k unit (HAU), when the chip has one: selecting the top k of n
  /// scores of each of `rows` rows takes
  ///   init_cycles + rows * ceil(n / sort_width) * max(1, ceil(log2 k)) * compare_cycles.
  struct Hau {
    std::uint32_t sort_width = 0;
    std::uint32_t compare_cycles = 0;
    std::uint32_t init_cycles = 0;
  };
  std::optional<Hau> hau;
  std::uint64_t hau_topk_cycles(std::uint64_t rows, std::uint64_t n, std::uint64_t k) const;

  /// Chip-to-chip links used by collectives (CDMA): `links` links of bandwidth_gb_per_s each,
  /// used together; every transfer pays latency_ns first.
  struct C2cLink {
    double bandwidth_gb_per_s = 0;
    double latency_ns = 0;
    std::uint32_t links = 0;
  } c2c;

  std::uint32_t cube_macs(DType t) const { return cube_macs_per_lane_per_cycle[static_cast<int>(t)]; }
  std::uint32_t vector_eu(DType t) const { return vector_eu_per_lane[static_cast<int>(t)]; }

  /// Cube peak of the whole chip in FLOP/s for dtype t (0 if the cube lacks t).
  double cube_peak_flops(DType t) const;
  /// Vector peak of the whole chip in element-operations/s for dtype t.
  double vector_peak_ops(DType t) const;
  /// DDR bandwidth the roofline uses: ddr_bandwidth * eta_m, in bytes/s.
  double roofline_bytes_per_s() const;
  /// TIU cycles of one matrix instruction (see the model above).
  std::uint64_t matmul_cycles(std::uint64_t m, std::uint64_t k, std::uint64_t n, DType t,
                              MatmulLayout layout = MatmulLayout::nn) const;
  /// TIU cycles of one vector instruction doing `element_ops` operations.
  std::uint64_t vector_cycles(std::uint64_t element_ops, DType t) const;
  /// TIU cycles of one special-function instruction over `elements` elements.
  std::uint64_t sfu_cycles(std::uint64_t elements) const;
};

/// Reads a chip YAML file strictly. Throws ConfigError naming field, file and line.
Chip load_chip(const std::string& path);
/// Same, from YAML text held in memory; errors name "<memory:source_name>".
Chip chip_from_yaml(const std::string& text, const std::string& source_name);

}  // namespace hw
