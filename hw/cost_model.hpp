#pragma once
// The one cost model: how long an instruction takes and how fast a transfer runs alone on a chip.
// The tiler, the work split, the lowering, the roofline and the event kernel all ask it; no
// bandwidth, clock or dtype rate is read from the chip anywhere else.
//
// Instructions (cycles of the core clock, tensor.clock_mhz):
//   matrix (MM2) m x k x n in dtype t, layout L (NN: A B, NT: A B^T, TT: A^T B^T):
//       mm2_init[L] + ceil(min(ceil(m / lanes) * ceil(n / cube_n), ceil(n / lanes) * ceil(m / cube_n))
//                          * (ceil(k / k_step[t]) + bank_conflict) / cube_efficiency)
//     with k_step[t] = cube_macs_per_lane[t] / cube_n reduction steps per cycle (rows spread over
//     lanes; each lane's cube does cube_n output columns; partial shapes waste the rest; an
//     operand sharing a local-memory bank with the result costs bank_conflict cycles per block;
//     cube_efficiency, in (0, 1], is the fraction of that rate sustained: a calibrated factor; the
//     second term of the min is the product computed transposed, C^T = B^T A^T, with the columns
//     over the lanes, which a compiler picks when it is cheaper: few rows, as a decode GEMV, where
//     rows over the lanes would leave all but one lane idle (Hopper's "swap AB" likewise));
//   vector (AR) over e element-operations in dtype t: init_vec + ceil(e / (lanes * eu[t]));
//   special function (SFU: exp, rsqrt) over e elements: init_sfu + ceil(e / (lanes * sfu_rate));
//   top-k on the sort engine: init + rows * ceil(n / sort_width) * max(1, ceil(log2 k)) * compare.
// Transfers on engine E (hw/engine.hpp):
//   bus bytes    - a DMA transfer of rows of r bytes (one row if contiguous) occupies the bus and
//                  the DRAM for rows * (ceil(r / burst) * burst + access_overhead) byte-times: whole
//                  bursts, plus per access the DRAM time an access costs beyond its data (row
//                  activation and command overhead not hidden by bank parallelism), so a short
//                  row runs at r / (r + overhead) of the rate and a long one at nearly all of it;
//                  a collective transfer moves its payload. (Reported bytes stay the data bytes.)
//   start-up     - startup_ns(E) = E.startup_ns + the largest latency_ns among E's resources;
//   alone rate   - the least of E's channel (min(bandwidth x efficiency, bytes_in_flight /
//                  round trip): the engine's sustained rate, Little's law) and the capacity of
//                  every resource E crosses;
//   alone time   - startup_ns(E) + bus bytes / alone rate. With other transfers in flight the event
//                  kernel shares the same capacities max-min fairly.
// Peaks (for rooflines): cube FLOP/s = cores * lanes * cube_macs[t] * 2 * clock; vector op/s =
// cores * lanes * eu[t] * clock; memory = ddr bandwidth * eta_m.

#include <cstdint>

#include "hw/chip.hpp"
#include "hw/dtype.hpp"

namespace hw {

class CostModel {
 public:
  explicit CostModel(const Chip& chip) : chip_(chip) {}
  const Chip& chip() const { return chip_; }

  // Instructions, in cycles.
  std::uint64_t matmul_cycles(std::uint64_t m, std::uint64_t k, std::uint64_t n, DType t,
                              MatmulLayout layout = MatmulLayout::nn) const;
  std::uint64_t vector_cycles(std::uint64_t element_ops, DType t) const;
  std::uint64_t sfu_cycles(std::uint64_t elements) const;
  std::uint64_t topk_cycles(std::uint64_t rows, std::uint64_t n, std::uint64_t k) const;
  /// Reduction steps (k elements) one cube pass does per cycle in dtype t.
  std::uint64_t k_step(DType t) const;
  /// Nanoseconds of `cycles` core cycles.
  double cycles_ns(std::uint64_t cycles) const;

  // Transfers.
  /// Byte-times a transfer of `bytes` (rows of `row_bytes`, 0 = contiguous) occupies engine e's
  /// bus and the DRAM: whole bursts per row plus the access overhead per row.
  std::uint64_t bus_bytes(EngineId e, std::uint64_t bytes, std::uint64_t row_bytes = 0) const {
    if (chip_.engines[e].kind != EngineKind::dma) return bytes;
    return bus_bytes_dma(bytes, row_bytes);
  }
  /// bus_bytes of a DMA engine's transfer.
  std::uint64_t bus_bytes_dma(std::uint64_t bytes, std::uint64_t row_bytes = 0) const {
    const std::uint64_t burst = chip_.ddr_burst_bytes;
    const std::uint64_t overhead = chip_.ddr_access_overhead_bytes;
    auto access = [burst, overhead](std::uint64_t b) { return (b + burst - 1) / burst * burst + overhead; };
    if (row_bytes == 0 || row_bytes >= bytes) return access(bytes);
    return (bytes + row_bytes - 1) / row_bytes * access(row_bytes);
  }
  /// Fixed cost of a transfer on e before its bytes move: start-up plus round trip.
  double startup_ns(EngineId e) const;
  /// Capacity of e's own channel on one core (Little's law); 0 for engines without one.
  double channel_gb_per_s(EngineId e) const;
  /// Rate of a transfer on e when nothing else moves: its channel and every resource it crosses.
  double alone_gb_per_s(EngineId e) const;
  /// Time of `bus` bus bytes at the alone rate, without the start-up.
  double stream_ns(EngineId e, double bus) const { return bus / alone_gb_per_s(e); }
  /// Time of a transfer alone: start-up plus its bus bytes at the alone rate.
  double transfer_alone_ns(EngineId e, double bus) const { return stream_ns(e, bus) + startup_ns(e); }

  // Peaks, for rooflines and split estimates.
  double cube_peak_flops(DType t) const;       ///< whole chip, FLOP/s (0 if the cube lacks t)
  double core_cube_peak_flops(DType t) const;  ///< one core
  double vector_peak_ops(DType t) const;       ///< whole chip, element-operations/s
  double roofline_bytes_per_s() const;         ///< DDR bandwidth * eta_m
  double c2c_bytes_per_ns() const;             ///< all chip-to-chip links together

 private:
  const Chip& chip_;
};

}  // namespace hw
