// Reading a KV tier file (g5sim/serve.hpp, KvTiers):
//
//   name: NAME
//   tiers:                      # nearest the chip first, 1..kMaxKvTiers of them
//     - name: host_dram         # unique among the tiers
//       capacity_gb: 256        # (0, 2^20] GB of it that one serving instance's cache may use
//       bandwidth_gb_per_s: 50  # (0, 10^6] GB/s of the path between it and the chip's memory
//       latency_us: 5           # [0, 10^6] us before a transfer's first byte
//
// Strict like every config: every field required, unknown keys are errors naming the file and line.

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "api/public_errors.hpp"
#include "g5sim/serve.hpp"
#include "hw/config_error.hpp"
#include "hw/strict_config.hpp"

namespace g5sim {
namespace {

constexpr std::size_t kMaxKvTiers = 8;

constexpr double kMaxCapacityGb = double(std::uint64_t{1} << 20);
constexpr double kMaxBandwidthGbPerS = 1e6;
constexpr double kMaxLatencyUs = 1e6;

KvTiers read_tiers(hw::ConfigMap m) {
  m.expect_keys({"name", "tiers"});
  KvTiers t;
  t.name = m.string("name");
  t.source = m.source();
  std::vector<hw::ConfigMap> rows = m.map_list("tiers");
  if (rows.size() > kMaxKvTiers) m.fail("tiers", fmt::format("{} tiers, at most {}", rows.size(), kMaxKvTiers));
  std::set<std::string> names;
  for (hw::ConfigMap& row : rows) {
    row.expect_keys({"name", "capacity_gb", "bandwidth_gb_per_s", "latency_us"});
    KvTier tier;
    tier.name = row.string("name");
    if (!names.insert(tier.name).second) row.fail("name", fmt::format("'{}' names two tiers", tier.name));
    tier.capacity_bytes =
        static_cast<std::uint64_t>(std::llround(row.number_in("capacity_gb", 0, kMaxCapacityGb, true) * 1e9));
    tier.bandwidth_gb_per_s = row.number_in("bandwidth_gb_per_s", 0, kMaxBandwidthGbPerS, true);
    tier.latency_ps = static_cast<std::uint64_t>(std::llround(row.number_in("latency_us", 0, kMaxLatencyUs) * 1e6));
    row.finish();
    t.tiers.push_back(std::move(tier));
  }
  m.finish();
  return t;
}

}  // namespace

std::uint64_t KvTier::transfer_ps(std::uint64_t bytes) const {
  // bytes / (GB/s) = ns; at most 2^64 B / 1e-? GB/s stays finite in a double; ps rounded.
  const double ps = static_cast<double>(latency_ps) + static_cast<double>(bytes) / bandwidth_gb_per_s * 1000.0;
  if (!(ps < 1.8e19)) {
    throw hw::ConfigError(fmt::format("a transfer from tier '{}' passes 2^64 picoseconds", name));
  }
  return static_cast<std::uint64_t>(std::llround(ps));
}

KvTiers load_kv_tiers(const std::string& name_or_path) {
  return api::public_errors(
      [&] { return read_tiers(hw::ConfigMap::from_file(kv_tiers_path(name_or_path), hw::UnknownKeys::reject)); });
}

KvTiers kv_tiers_from_yaml(const std::string& text, const std::string& source_name) {
  return api::public_errors(
      [&] { return read_tiers(hw::ConfigMap::from_string(text, source_name, hw::UnknownKeys::reject)); });
}

}  // namespace g5sim
