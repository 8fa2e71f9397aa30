#include "hw/chip.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "hw/calibration_record.hpp"
#include "hw/config_error.hpp"
#include "hw/routes.hpp"
#include "hw/strict_config.hpp"

namespace hw {
namespace {

// Plausible ranges of the chip's fields (README, "Config ranges"): wide enough for any real chip,
// narrow enough that no product of them overflows and no run leaves the picosecond clock.
constexpr std::uint64_t kMaxCount = 65536;     // lanes, cube_n, MACs and EUs per lane, widths
constexpr std::uint64_t kMaxCycles = 1000000;  // start-up and per-block cycles of an instruction
constexpr double kMinBandwidth = 1e-3;         // GB/s (1 MB/s)
constexpr double kMaxBandwidth = 1e6;          // GB/s (1 PB/s)
constexpr double kMaxLatencyNs = 1e6;          // 1 ms
constexpr std::uint64_t kMaxInFlight = 4096;   // commands in flight per engine

std::uint32_t u32_in(ConfigMap& m, std::string_view key, std::uint64_t lo, std::uint64_t hi) {
  return static_cast<std::uint32_t>(m.int_in(key, lo, hi));
}

std::uint32_t u32(ConfigMap& m, std::string_view key) { return u32_in(m, key, 1, kMaxCount); }

// Per-dtype tables list the dtypes the unit supports; each listed value must be positive.
std::array<std::uint32_t, kDTypeCount> read_dtype_table(ConfigMap m, std::initializer_list<DType> required,
                                                        std::initializer_list<DType> allowed) {
  std::vector<std::string_view> names;
  for (DType t : allowed) names.push_back(name_of(t));
  m.expect_keys(names);
  std::array<std::uint32_t, kDTypeCount> table{};
  for (DType t : allowed) {
    const bool needed = std::find(required.begin(), required.end(), t) != required.end();
    if (needed || m.has(name_of(t))) table[static_cast<int>(t)] = u32(m, name_of(t));
  }
  m.finish();
  return table;
}

std::uint32_t cycles(ConfigMap& m, std::string_view key) { return u32_in(m, key, 0, kMaxCycles); }

// The tensor engine's instruction costs (the model at the top of hw/chip.hpp).
void read_tensor(ConfigMap& tiu, TensorUnit& unit) {
  // 1 MHz .. 1 THz: one cycle per picosecond, the resolution of the clock.
  unit.clock_mhz = tiu.number_in("clock_mhz", 1, 1e6);
  unit.lanes_per_core = u32(tiu, "lanes_per_core");
  unit.cube_n = u32(tiu, "cube_n");
  // The simulator computes matrices in bf16 and runs norms and softmax in fp32 on the vector
  // unit, so those entries are required. fp8 is listed where the tensor engine has it (Hopper,
  // SG2262; not Ampere): a step that asks a chip without it for an fp8 matrix is refused by name
  // (api::require_cube_dtypes).
  // fp4 and fp6 where the cube multiplies microscaled operands natively (Blackwell, MI355X).
  unit.cube_macs_per_lane_per_cycle = read_dtype_table(tiu.map("cube_macs_per_lane_per_cycle"), {DType::bf16},
                                                       {DType::fp8, DType::bf16, DType::fp32, DType::fp4, DType::fp6});
  unit.vector_eu_per_lane = read_dtype_table(tiu.map("vector_eu_per_lane"), {DType::bf16, DType::fp32},
                                             {DType::fp8, DType::bf16, DType::fp32});
  {
    ConfigMap init = tiu.map("mm2_init_cycles");
    init.expect_keys({"nn", "nt", "tt"});
    unit.mm2_init_cycles[static_cast<int>(MatmulLayout::nn)] = cycles(init, "nn");
    unit.mm2_init_cycles[static_cast<int>(MatmulLayout::nt)] = cycles(init, "nt");
    unit.mm2_init_cycles[static_cast<int>(MatmulLayout::tt)] = cycles(init, "tt");
    init.finish();
  }
  unit.bank_conflict_cycles = cycles(tiu, "bank_conflict_cycles");
  unit.cube_efficiency = tiu.fraction("cube_efficiency");
  unit.vector_init_cycles = cycles(tiu, "vector_init_cycles");
  unit.sfu_init_cycles = cycles(tiu, "sfu_init_cycles");
  unit.sfu_elements_per_lane_per_cycle = u32(tiu, "sfu_elements_per_lane_per_cycle");
  // Cross-field check: a lane's cube must reduce at least one k element per output column.
  for (DType t : kDTypes) {
    const std::uint32_t macs = unit.cube_macs_per_lane_per_cycle[static_cast<int>(t)];
    if (macs != 0 && macs % unit.cube_n != 0) {
      ErrorSite site = tiu.site("cube_macs_per_lane_per_cycle");
      site.field += fmt::format(".{}", name_of(t));
      throw ConfigError(
          fmt::format("{}: {}: {} is not a multiple of {} ({})", tiu.where("cube_macs_per_lane_per_cycle"), site.field,
                      macs, tiu.path_of("cube_n"), unit.cube_n),
          site);
    }
  }
}

// Names in `names` -> indexes into `known`; an unknown name is an error with a did-you-mean.
std::vector<std::uint32_t> ids_of(ConfigMap& m, std::string_view key, const std::vector<std::string>& names,
                                  const std::vector<std::string>& known, std::string_view what) {
  std::vector<std::uint32_t> ids;
  for (const std::string& n : names) {
    const auto it = std::find(known.begin(), known.end(), n);
    if (it == known.end()) {
      const std::string near = closest_match(n, known);
      m.fail(key, fmt::format("'{}' is not {}{}; known: {}", n, what,
                              near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near), fmt::join(known, ", ")));
    }
    ids.push_back(static_cast<std::uint32_t>(it - known.begin()));
  }
  return ids;
}

const std::vector<std::string> kKindNames{"tensor", "sort", "dma", "collective"};
const std::vector<std::string> kRoleNames{"tiles", "kv_stream", "kv_resident", "cross_core", "gather"};

EngineSpec read_engine(ConfigMap e, const std::string& name, const std::vector<std::string>& engine_names,
                       const std::vector<std::string>& resource_names, Chip& chip) {
  EngineSpec spec;
  spec.name = name;
  const std::string kind = e.one_of("kind", kKindNames);
  spec.kind = static_cast<EngineKind>(std::find(kKindNames.begin(), kKindNames.end(), kind) - kKindNames.begin());
  std::vector<std::string_view> keys{"kind", "waits_on"};
  switch (spec.kind) {
    case EngineKind::tensor:
      keys.insert(keys.end(), {"clock_mhz", "lanes_per_core", "cube_n", "cube_macs_per_lane_per_cycle",
                               "vector_eu_per_lane", "mm2_init_cycles", "bank_conflict_cycles", "cube_efficiency",
                               "vector_init_cycles", "sfu_init_cycles", "sfu_elements_per_lane_per_cycle"});
      break;
    case EngineKind::sort: keys.insert(keys.end(), {"sort_width", "compare_cycles", "init_cycles"}); break;
    case EngineKind::dma:
      keys.insert(keys.end(), {"roles", "crosses", "bandwidth_gb_per_s", "efficiency", "startup_ns", "outstanding",
                               "bytes_in_flight"});
      break;
    case EngineKind::collective: keys.insert(keys.end(), {"crosses", "startup_ns", "outstanding"}); break;
  }
  e.expect_keys(keys);
  for (std::uint32_t id : ids_of(e, "waits_on", e.string_list("waits_on"), engine_names, "an engine of this chip")) {
    if (engine_names[id] == name) e.fail("waits_on", "an engine cannot wait on itself: its queue is in order");
    spec.waits_on.push_back(static_cast<EngineId>(id));
    spec.wait_mask |= 1u << id;
  }
  switch (spec.kind) {
    case EngineKind::tensor: read_tensor(e, spec.tensor); break;
    case EngineKind::sort:
      spec.sort_width = u32(e, "sort_width");
      spec.compare_cycles = u32_in(e, "compare_cycles", 1, kMaxCycles);
      spec.init_cycles = cycles(e, "init_cycles");
      break;
    case EngineKind::dma:
    case EngineKind::collective: {
      spec.crosses = ids_of(e, "crosses", e.string_list("crosses"), resource_names, "a shared resource of this chip");
      const std::string_view needed = spec.kind == EngineKind::dma ? "ddr" : "c2c";
      const bool crosses_needed = std::any_of(spec.crosses.begin(), spec.crosses.end(),
                                              [&](std::uint32_t r) { return resource_names[r] == needed; });
      if (!crosses_needed) {
        e.fail("crosses", fmt::format("a {} engine must cross '{}'", kind, needed));
      }
      if (spec.crosses.size() + 1 > kMaxPathResources) {
        e.fail("crosses", fmt::format("at most {} resources", kMaxPathResources - 1));
      }
      spec.startup_ns = e.number_in("startup_ns", 0, kMaxLatencyNs);
      spec.outstanding = u32_in(e, "outstanding", 1, kMaxInFlight);
      if (spec.kind == EngineKind::dma) {
        spec.bandwidth_gb_per_s = e.number_in("bandwidth_gb_per_s", kMinBandwidth, kMaxBandwidth);
        spec.efficiency = e.fraction("efficiency");
        spec.bytes_in_flight = e.int_in("bytes_in_flight", 1, std::uint64_t{1} << 30);
        // Fewer bytes in flight than one DDR burst could never move a burst.
        if (spec.bytes_in_flight < chip.ddr_burst_bytes) {
          e.fail("bytes_in_flight", fmt::format("{} B is less than one DDR burst ({} B, ddr.burst_bytes)",
                                                spec.bytes_in_flight, chip.ddr_burst_bytes));
        }
        for (std::uint32_t r : ids_of(e, "roles", e.string_list("roles"), kRoleNames, "a DMA role")) {
          spec.roles |= 1u << r;
        }
      }
      break;
    }
  }
  e.finish();
  return spec;
}

// The waits the lowering makes (ops/lowering.cpp), so that a chip the lowering cannot use is
// refused where its rule is written, not by the first run that needs the missing wait: every
// engine the lowering hands work to (a DMA engine with a role, the sort and collective engines)
// and the tensor engine wait on each other's ids (the tensor engine consumes its transfers and
// results; they start after the tensor work that produced their inputs), and the sort engine
// waits on the tiles engine (its scores arrive by it).
void check_wait_rule(ConfigMap& engines, const Chip& chip) {
  const EngineId tensor = chip.tensor_engine();
  const EngineSpec& tensor_spec = chip.engine(tensor);
  auto need = [&](EngineId waiter, EngineId on, const std::string& why) {
    if (chip.engine(waiter).may_wait_on(on)) return;
    engines.map(chip.engine(waiter).name)
        .fail("waits_on", fmt::format("{} must be able to wait on {} ({}); add {} to this list",
                                      chip.engine(waiter).name, chip.engine(on).name, why, chip.engine(on).name));
  };
  for (std::size_t i = 0; i < chip.engines.size(); ++i) {
    const auto id = static_cast<EngineId>(i);
    const EngineSpec& e = chip.engines[i];
    if (id == tensor || (e.kind == EngineKind::dma && e.roles == 0)) continue;
    std::string what = fmt::format("the {} engine: the lowering gives it work", name_of(e.kind));
    if (e.kind == EngineKind::dma) {
      std::vector<std::string_view> roles;
      for (std::size_t r = 0; r < kDmaRoleCount; ++r) {
        if (e.serves(static_cast<DmaRole>(r))) roles.push_back(name_of(static_cast<DmaRole>(r)));
      }
      what = fmt::format("a DMA engine with roles {}", fmt::join(roles, ", "));
    }
    need(tensor, id, fmt::format("{}, and {} consumes what it moves", what, tensor_spec.name));
    need(id, tensor, fmt::format("its commands start after the {} work that produced their inputs", tensor_spec.name));
    if (e.kind == EngineKind::sort) {
      need(id, chip.dma_for(DmaRole::tiles), "the scores it sorts arrive by the tiles engine");
    }
  }
}

Chip read_chip(ConfigMap root) {
  root.expect_keys({"name", "cores", "lmem_bytes_per_core", "weight_layout", "matmul_split_k", "engines", "ddr", "c2c",
                    "l2", "nodes", "energy", "calibration"});
  std::optional<ErrorBands> bands;
  HeldOutMape held_out;
  if (root.has("calibration")) bands = read_calibration_record(root.map("calibration"), held_out);
  Chip chip;
  chip.error_bands = std::move(bands);
  chip.held_out_mape = held_out;
  chip.calibrated = root.has("calibration");
  chip.source = root.source();
  chip.source_sha256 = root.sha256();
  chip.name = root.string("name");
  chip.cores = u32_in(root, "cores", 1, 4096);
  chip.lmem_bytes_per_core = root.int_in("lmem_bytes_per_core", 1024, std::uint64_t{1} << 30);
  chip.weight_layout =
      root.one_of("weight_layout", {"n_major", "k_major"}) == "k_major" ? WeightLayout::k_major : WeightLayout::n_major;
  chip.matmul_split_k = root.boolean("matmul_split_k");
  {
    ConfigMap ddr = root.map("ddr");
    ddr.expect_keys(
        {"bandwidth_gb_per_s", "efficiency", "capacity_bytes", "latency_ns", "burst_bytes", "access_overhead_bytes"});
    chip.ddr_bandwidth_gb_per_s = ddr.number_in("bandwidth_gb_per_s", kMinBandwidth, kMaxBandwidth);
    chip.ddr_efficiency = ddr.fraction("efficiency");
    chip.ddr_capacity_bytes = ddr.int_in("capacity_bytes", std::uint64_t{1} << 20, std::uint64_t{1} << 50);
    chip.ddr_latency_ns = ddr.number_in("latency_ns", 0, kMaxLatencyNs);
    chip.ddr_burst_bytes = ddr.int_in("burst_bytes", 1, 4096);
    chip.ddr_access_overhead_bytes = ddr.int_in("access_overhead_bytes", 0, 65536);
    ddr.finish();
  }
  {
    ConfigMap c2c = root.map("c2c");
    c2c.expect_keys({"bandwidth_gb_per_s", "latency_ns", "links"});
    chip.c2c.bandwidth_gb_per_s = c2c.number_in("bandwidth_gb_per_s", kMinBandwidth, kMaxBandwidth);
    chip.c2c.latency_ns = c2c.number_in("latency_ns", 0, kMaxLatencyNs);
    chip.c2c.links = u32_in(c2c, "links", 1, 1024);
    c2c.finish();
  }
  chip.resources.push_back({"ddr", chip.ddr_bandwidth_gb_per_s * chip.ddr_efficiency, chip.ddr_latency_ns});
  chip.resources.push_back({"c2c", chip.c2c.bandwidth_gb_per_s * chip.c2c.links, chip.c2c.latency_ns});
  if (root.has("l2")) {
    ConfigMap l2 = root.map("l2");
    l2.expect_keys({"capacity_bytes", "bandwidth_gb_per_s", "latency_ns", "caches_reads"});
    Chip::L2 spec;
    spec.capacity_bytes = l2.int_in("capacity_bytes", 1, std::uint64_t{1} << 40);
    spec.bandwidth_gb_per_s = l2.number_in("bandwidth_gb_per_s", kMinBandwidth, kMaxBandwidth);
    spec.latency_ns = l2.number_in("latency_ns", 0, kMaxLatencyNs);
    spec.caches_reads = l2.boolean("caches_reads");
    l2.finish();
    chip.l2 = spec;
    chip.l2_resource = static_cast<std::uint32_t>(chip.resources.size());
    chip.resources.push_back({"l2", spec.bandwidth_gb_per_s, spec.latency_ns});
  }
  if (root.has("nodes")) {
    ConfigMap nodes = root.map("nodes");
    nodes.expect_keys({"chips_per_node", "rdma_bandwidth_gb_per_s", "rdma_latency_ns"});
    Chip::Nodes spec;
    spec.chips_per_node = u32_in(nodes, "chips_per_node", 1, 65536);
    spec.rdma_bandwidth_gb_per_s = nodes.number_in("rdma_bandwidth_gb_per_s", kMinBandwidth, kMaxBandwidth);
    spec.rdma_latency_ns = nodes.number_in("rdma_latency_ns", 0, kMaxLatencyNs);
    nodes.finish();
    chip.nodes = spec;
    chip.rdma_resource = static_cast<std::uint32_t>(chip.resources.size());
    chip.resources.push_back({"rdma", spec.rdma_bandwidth_gb_per_s, spec.rdma_latency_ns});
  }
  std::vector<std::string> resource_names;
  for (const SharedResource& r : chip.resources) resource_names.push_back(r.name);
  {
    ConfigMap engines = root.map("engines");
    const std::vector<std::string> names = engines.keys();
    if (names.empty() || names.size() > kMaxEngines) {
      root.fail("engines", fmt::format("a core has 1 to {} engines, got {}", kMaxEngines, names.size()));
    }
    engines.expect_keys(std::vector<std::string_view>(names.begin(), names.end()));
    for (const std::string& name : names) {
      chip.engines.push_back(read_engine(engines.map(name), name, names, resource_names, chip));
    }
    engines.finish();
    chip.index_engines(root.where("engines"), root.site("engines"));
    check_wait_rule(engines, chip);
  }
  // After the resources: the section prices each of them.
  if (root.has("energy")) chip.energy = read_energy(root.map("energy"), chip);
  root.finish();
  route_table(chip);  // every route fits a transfer's path (hw/routes.hpp): refused here, not mid-run
  return chip;
}

}  // namespace

std::optional<EngineId> Chip::find_engine(std::string_view engine_name) const {
  for (std::size_t i = 0; i < engines.size(); ++i) {
    if (engines[i].name == engine_name) return static_cast<EngineId>(i);
  }
  return std::nullopt;
}

std::string Chip::engine_names(EngineKind kind) const {
  std::vector<std::string> out;
  for (const EngineSpec& e : engines) {
    if (e.kind == kind) out.push_back(e.name);
  }
  return out.empty() ? std::string("none") : fmt::format("{}", fmt::join(out, ", "));
}

EngineId Chip::dma_for(DmaRole role) const { return role_engine_[static_cast<std::size_t>(role)].value(); }

EngineId Chip::default_kv_engine() const { return role_engine_[static_cast<std::size_t>(DmaRole::kv_stream)].value(); }

double Chip::round_trip_ns(EngineId engine) const {
  double latency = 0;
  for (std::uint32_t r : engines[engine].crosses) latency = std::max(latency, resources[r].latency_ns);
  return latency;
}

void Chip::index_engines(const std::string& where, const ErrorSite& site) {
  auto fail = [&](const std::string& message) {
    throw ConfigError(fmt::format("{}: engines: {}", where, message), site);
  };
  std::optional<EngineId> tensor;
  std::array<std::vector<EngineId>, kDmaRoleCount> by_role;
  for (std::size_t i = 0; i < engines.size(); ++i) {
    const EngineSpec& e = engines[i];
    const auto id = static_cast<EngineId>(i);
    auto only_one = [&](std::optional<EngineId>& slot) {
      if (slot)
        fail(fmt::format("'{}' and '{}' are both {} engines; a core has at most one", engines[*slot].name, e.name,
                         name_of(e.kind)));
      slot = id;
    };
    switch (e.kind) {
      case EngineKind::tensor: only_one(tensor); break;
      case EngineKind::sort: only_one(sort_engine_); break;
      case EngineKind::collective: only_one(collective_engine_); break;
      case EngineKind::dma:
        for (std::size_t r = 0; r < kDmaRoleCount; ++r) {
          if (e.serves(static_cast<DmaRole>(r))) by_role[r].push_back(id);
        }
        if (e.serves(DmaRole::kv_stream) && e.serves(DmaRole::kv_resident)) {
          fail(fmt::format("'{}' cannot both stream (kv_stream) and hold (kv_resident) the history", e.name));
        }
        break;
    }
  }
  if (!tensor) fail("no tensor engine (kind: tensor): nothing could compute");
  tensor_engine_ = *tensor;
  for (DmaRole role : {DmaRole::tiles, DmaRole::cross_core, DmaRole::gather, DmaRole::kv_stream}) {
    const auto& list = by_role[static_cast<std::size_t>(role)];
    if (list.empty()) fail(fmt::format("no DMA engine has the role '{}'", name_of(role)));
    if (list.size() > 1 && role != DmaRole::kv_stream) {
      fail(fmt::format("'{}' and '{}' both have the role '{}'; it needs exactly one engine", engines[list[0]].name,
                       engines[list[1]].name, name_of(role)));
    }
    role_engine_[static_cast<std::size_t>(role)] = list.front();
  }
}

Chip load_chip(const std::string& path) { return read_chip(ConfigMap::from_file(path, UnknownKeys::reject)); }

Chip chip_from_yaml(const std::string& text, const std::string& source_name) {
  return read_chip(ConfigMap::from_string(text, source_name, UnknownKeys::reject));
}

Chip chip_from_document(const std::string& json_text, const std::string& source_name) {
  return read_chip(ConfigMap::from_document(json_text, source_name, UnknownKeys::reject));
}

}  // namespace hw
