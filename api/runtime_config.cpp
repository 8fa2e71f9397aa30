// Reading a runtime config (g5sim/runtime.hpp states the model; docs/runtimes.md every field and
// its range): strictly, as chips and models are read. Every field is required; unknown keys are
// errors with a did-you-mean; errors name the file, line and field.

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "api/public_errors.hpp"
#include "g5sim/runtime.hpp"
#include "hw/calibration_record.hpp"
#include "hw/strict_config.hpp"
#include "models/run_limits.hpp"
#include "ops/op_kinds.hpp"

namespace g5sim {
namespace {

constexpr std::uint64_t kMaxPerItemNs = 10'000'000;  ///< a cost per sequence, token or kernel: 10 ms

KernelCosts kernel_costs(hw::ConfigMap m) {
  m.expect_keys({"floor_ns", "gap_ns", "launch_ns", "expert_launch_ns"});
  KernelCosts k;
  k.floor_ns = m.int_in("floor_ns", 0, kMaxPerItemNs);
  k.gap_ns = m.int_in("gap_ns", 0, kMaxPerItemNs);
  k.launch_ns = m.int_in("launch_ns", 0, kMaxPerItemNs);
  k.expert_launch_ns = m.int_in("expert_launch_ns", 0, kMaxPerItemNs);
  m.finish();
  return k;
}

std::vector<std::string> op_kind_names() {
  std::vector<std::string> names;
  for (std::size_t k = 0; k < ops::kOpKindCount; ++k) {
    names.emplace_back(ops::kind_name(static_cast<ops::OpKind>(k)));
  }
  return names;
}

void read_kernels(hw::ConfigMap m, Runtime& r) {
  m.expect_keys({"graph_max_batch", "piecewise_max_tokens", "graph", "eager", "fused_kinds", "tensor_efficiency",
                 "expert_tensor_efficiency"});
  r.graph_max_batch = m.int_in("graph_max_batch", 0, kMaxRuntimeBatch);
  r.piecewise_max_tokens = m.int_in("piecewise_max_tokens", 0, kMaxRuntimeBatch);
  r.tensor_efficiency = m.number_in("tensor_efficiency", kMinTensorEfficiency, 1.0);
  r.expert_tensor_efficiency = m.number_in("expert_tensor_efficiency", kMinTensorEfficiency, 1.0);
  r.graph = kernel_costs(m.map("graph"));
  r.eager = kernel_costs(m.map("eager"));
  r.fused_kinds = m.string_list("fused_kinds");
  const std::vector<std::string> kinds = op_kind_names();
  for (const std::string& k : r.fused_kinds) {
    if (std::find(kinds.begin(), kinds.end(), k) != kinds.end() && k != "host_launch") continue;
    const std::string near = hw::closest_match(k, kinds);
    m.fail("fused_kinds", fmt::format("'{}' is not an op kind a runtime launches{}; kinds: {}", k,
                                      near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near),
                                      fmt::join(kinds.begin(), kinds.end() - 1, ", ")));
  }
  m.finish();
}

// A collective's table: ascending up_to_bytes, the last row unbounded (null), so every size has
// exactly one row.
std::vector<CollectiveLatency> latency_table(hw::ConfigMap& parent, std::string_view key) {
  std::vector<CollectiveLatency> rows;
  std::vector<hw::ConfigMap> maps = parent.map_list(key);
  for (std::size_t i = 0; i < maps.size(); ++i) {
    hw::ConfigMap& m = maps[i];
    m.expect_keys({"up_to_bytes", "algorithm", "latency_ns"});
    CollectiveLatency row;
    row.up_to_bytes = m.int_in_or_null("up_to_bytes", 1, std::uint64_t{1} << 50);
    row.algorithm = m.string("algorithm");
    row.latency_ns = m.int_in("latency_ns", 0, kMaxPerItemNs);
    m.finish();
    const bool last = i + 1 == maps.size();
    if (last != !row.up_to_bytes) {
      m.fail("up_to_bytes", last ? "the last row must be null (any larger message)" : "only the last row may be null");
    }
    if (!rows.empty() && row.up_to_bytes && *row.up_to_bytes <= *rows.back().up_to_bytes) {
      m.fail("up_to_bytes", fmt::format("rows must ascend: {} after {}", *row.up_to_bytes, *rows.back().up_to_bytes));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

void read_collectives(hw::ConfigMap m, Runtime& r) {
  m.expect_keys({"all_reduce", "all_to_all"});
  r.all_reduce = latency_table(m, "all_reduce");
  r.all_to_all = latency_table(m, "all_to_all");
  m.finish();
}

void read_step(hw::ConfigMap m, Runtime& r) {
  m.expect_keys({"cpu_ns", "cpu_ns_per_sequence", "cpu_ns_per_token", "overlap"});
  r.cpu_ns = m.int_in("cpu_ns", 0, kMaxRuntimeNs);
  r.cpu_ns_per_sequence = m.int_in("cpu_ns_per_sequence", 0, kMaxPerItemNs);
  r.cpu_ns_per_token = m.int_in("cpu_ns_per_token", 0, kMaxPerItemNs);
  r.overlap = m.boolean("overlap");
  m.finish();
}

void read_request(hw::ConfigMap m, Runtime& r) {
  m.expect_keys({"before_scheduler_ns", "per_input_token_ns", "serial_ns", "serial_ns_per_input_token",
                 "serial_ns_per_output_token", "tokens_behind_inputs", "after_token_ns"});
  r.before_scheduler_ns = m.int_in("before_scheduler_ns", 0, kMaxRuntimeNs);
  r.serial_ns = m.int_in("serial_ns", 0, kMaxPerItemNs * 100);
  r.serial_ns_per_input_token = m.int_in("serial_ns_per_input_token", 0, kMaxPerItemNs);
  r.serial_ns_per_output_token = m.int_in("serial_ns_per_output_token", 0, kMaxPerItemNs);
  r.tokens_behind_inputs = m.boolean("tokens_behind_inputs");
  r.per_input_token_ns = m.int_in("per_input_token_ns", 0, kMaxPerItemNs);
  r.after_token_ns = m.int_in("after_token_ns", 0, kMaxRuntimeNs);
  m.finish();
}

void read_graph(hw::ConfigMap m, Runtime& r) {
  m.expect_keys({"kv_append", "lm_head_weights", "prefill_attention"});
  r.kv_append = m.one_of("kv_append", {"in-place", "concat"});
  r.lm_head_weights = m.one_of("lm_head_weights", {"bf16", "projections"});
  r.prefill_attention = m.one_of("prefill_attention", {"causal", "full"});
  m.finish();
}

// Ranges as the serve knobs' (g5sim/serve.hpp's limits, repeated here below the serving floor).
void read_scheduler(hw::ConfigMap m, Runtime& r) {
  m.expect_keys({"schedule", "max_seqs", "max_batched_tokens", "per_dp_rank", "first_token"});
  r.schedule = m.one_of("schedule", {"mixed", "prefill-first"});
  r.max_seqs = m.int_in("max_seqs", 1, 4096);
  r.max_batched_tokens = m.int_in("max_batched_tokens", 1, std::uint64_t{1} << 24);
  r.scheduler_per_dp_rank = m.boolean("per_dp_rank");
  r.first_token = m.one_of("first_token", {"prefill", "after-transfer"});
  m.finish();
}

Runtime read_runtime(hw::ConfigMap doc) {
  doc.expect_keys({"name", "version", "adds", "kernels", "collectives", "layers", "step", "request", "graph",
                   "scheduler", "calibration"});
  Runtime r;
  r.name = doc.string("name");
  r.version = doc.string("version");
  r.adds = doc.string("adds");
  read_kernels(doc.map("kernels"), r);
  read_collectives(doc.map("collectives"), r);
  {
    hw::ConfigMap layers = doc.map("layers");
    layers.expect_keys({"host_launch_ns"});
    r.host_launch_ns = layers.int_in("host_launch_ns", 0, models::kMaxHostLaunchNs);
    layers.finish();
  }
  read_step(doc.map("step"), r);
  read_request(doc.map("request"), r);
  read_graph(doc.map("graph"), r);
  read_scheduler(doc.map("scheduler"), r);
  // What g5sim calibrate wrote: a record of its fit, of which only the bands are read (they
  // change no time, only the band a serve carries).
  if (doc.has("calibration")) {
    hw::HeldOutMape held_out;
    if (const std::optional<hw::ErrorBands> bands = hw::read_calibration_record(doc.map("calibration"), held_out)) {
      r.band_coverage = bands->coverage;
      r.band_basis = bands->basis;
      for (const hw::ErrorBand& b : bands->bands) {
        r.bands.push_back(Runtime::Band{std::string(hw::name_of(b.kind)), b.rows, b.low_ratio, b.high_ratio});
      }
    }
  }
  doc.finish();
  r.source = doc.source();
  r.sha256 = doc.sha256();
  return r;
}

}  // namespace

Runtime Runtime::from_file(const std::string& path) {
  return api::public_errors([&] { return read_runtime(hw::ConfigMap::from_file(path, hw::UnknownKeys::reject)); });
}

Runtime Runtime::from_yaml(const std::string& text, const std::string& source_name) {
  return api::public_errors(
      [&] { return read_runtime(hw::ConfigMap::from_string(text, source_name, hw::UnknownKeys::reject)); });
}

const Runtime::Band* Runtime::band_for(const std::string& kind) const {
  const Band* all = nullptr;
  for (const Band& b : bands) {
    if (b.kind == kind) return &b;
    if (b.kind == "all") all = &b;
  }
  return all;
}

const char* kernel_mode_name(KernelMode mode) {
  switch (mode) {
    case KernelMode::graph: return "graph";
    case KernelMode::piecewise: return "piecewise";
    case KernelMode::eager: break;
  }
  return "eager";
}

KernelMode Runtime::kernel_mode(bool decode_only, std::uint64_t chip_sequences, std::uint64_t chip_tokens) const {
  if (decode_only && chip_sequences <= graph_max_batch) return KernelMode::graph;
  if (chip_tokens <= piecewise_max_tokens) return KernelMode::piecewise;
  return KernelMode::eager;
}

const KernelCosts& Runtime::kernels_for(KernelMode mode, bool attention) const {
  if (mode == KernelMode::graph || (mode == KernelMode::piecewise && !attention)) return graph;
  return eager;
}

const CollectiveLatency& Runtime::collective(const std::string& kind, std::uint64_t bytes) const {
  const std::vector<CollectiveLatency>& table = kind == "all_reduce" ? all_reduce : all_to_all;
  for (const CollectiveLatency& row : table) {
    if (!row.up_to_bytes || bytes <= *row.up_to_bytes) return row;
  }
  throw std::logic_error("a runtime's collective table ends with an unbounded row");
}

std::uint64_t Runtime::step_cpu_ns(std::uint64_t sequences, std::uint64_t tokens) const {
  // Each term is at most 10 s (cpu) or 10 ms x 2^24 (per item x a step's tokens): no wrap.
  return cpu_ns + sequences * cpu_ns_per_sequence + tokens * cpu_ns_per_token;
}

std::uint64_t Runtime::serial_in_ns(std::uint64_t input_tokens) const {
  return serial_ns + input_tokens * serial_ns_per_input_token;
}

bool Runtime::has_serial_front_end() const {
  return serial_ns > 0 || serial_ns_per_input_token > 0 || serial_ns_per_output_token > 0;
}

std::uint64_t Runtime::request_in_ns(std::uint64_t input_tokens) const {
  return before_scheduler_ns + input_tokens * per_input_token_ns;
}

std::string Runtime::summary() const {
  const auto us = [](std::uint64_t ns) { return fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3); };
  const auto ms = [](std::uint64_t ns) { return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6); };
  // Without graphs every step takes the eager pair: that is the one to show.
  const KernelCosts& shown = graph_max_batch > 0 ? graph : eager;
  std::string text =
      fmt::format("{} {}: kernels floor {}, gap {}", name, version, us(shown.floor_ns), us(shown.gap_ns));
  text += graph_max_batch > 0 ? fmt::format(" (decode graphs to {}; eager gap {})", graph_max_batch, us(eager.gap_ns))
                              : std::string(" (eager, no graphs)");
  if (piecewise_max_tokens > 0) text += fmt::format(", piecewise graphs to {} tokens", piecewise_max_tokens);
  if (eager.launch_ns > 0 || eager.expert_launch_ns > 0) {
    text += fmt::format(", the host issuing an eager kernel in {}", us(eager.launch_ns));
    if (eager.expert_launch_ns != eager.launch_ns)
      text += fmt::format(", a routed-expert op in {}", us(eager.expert_launch_ns));
  }
  if (tensor_efficiency < 1) text += fmt::format(", matrix kernels at most {:.0f} % of peak", 100 * tensor_efficiency);
  if (expert_tensor_efficiency < 1 && expert_tensor_efficiency != tensor_efficiency) {
    text += fmt::format(", experts' at most {:.0f} %", 100 * expert_tensor_efficiency);
  }
  const auto [low, high] = std::minmax_element(
      all_reduce.begin(), all_reduce.end(),
      [](const CollectiveLatency& a, const CollectiveLatency& b) { return a.latency_ns < b.latency_ns; });
  text += fmt::format("; all-reduce {}..{}", us(low->latency_ns), us(high->latency_ns));
  if (host_launch_ns > 0) text += fmt::format("; layer launch {}", us(host_launch_ns));
  // The parts that grow with the step: a fit may put most of the CPU there (sglang-0.4.1.calibrated).
  std::string per_step;
  if (cpu_ns_per_sequence > 0) per_step += fmt::format(" + {} a sequence", us(cpu_ns_per_sequence));
  if (cpu_ns_per_token > 0) per_step += fmt::format(" + {} a token", us(cpu_ns_per_token));
  text += fmt::format("; step CPU {}{}{}; front end {}", ms(cpu_ns), per_step, overlap ? " overlapped" : "",
                      ms(before_scheduler_ns));
  // The part a burst queues for (one request at a time) is the one that shapes a burst's TTFT.
  if (serial_ns > 0) text += fmt::format(" + {} one request at a time", ms(serial_ns));
  if (serial_ns_per_output_token > 0) {
    text += fmt::format(", streaming {} a token{}", us(serial_ns_per_output_token),
                        tokens_behind_inputs ? " behind them" : " apart");
  }
  text += fmt::format("; {} scheduler, max {} seqs", schedule, max_seqs);
  // A calibrated runtime says how well it fits: its held-out band over all its rows.
  if (const Band* all = band_for("all")) {
    text += fmt::format("; calibrated: {:.0f} % of {} held-out rows within x{:.2f}..x{:.2f}", 100 * band_coverage,
                        all->rows, 1 / all->high_ratio, 1 / all->low_ratio);
  }
  return text;
}

const Runtime& runtime_named(const std::string& name_or_path) {
  static const Runtime chip_alone = [] {
    Runtime r;
    r.name = "none";
    r.version = "-";
    r.adds = "nothing: the chip alone";
    return r;
  }();
  if (name_or_path.empty()) return chip_alone;
  const std::string path = runtime_path(name_or_path);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  // Keyed by the path and the file's text: an edited file is read again, an unchanged one never.
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::unique_ptr<const Runtime>> read;
  const std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(path, text.str());
  auto found = read.find(key);
  if (found == read.end()) {
    found = read.emplace(std::move(key), std::make_unique<const Runtime>(Runtime::from_file(path))).first;
  }
  return *found->second;
}

}  // namespace g5sim
