#include "api/op_run.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <sstream>

#include "api/json_text.hpp"
#include "api/report.hpp"
#include "hw/config_error.hpp"
#include "hw/cost_model.hpp"
#include "models/graph_helpers.hpp"
#include "models/weight_format.hpp"
#include "ops/lowering.hpp"
#include "ops/op_graph.hpp"
#include "ops/timeline.hpp"
#include "sim/simulator.hpp"

namespace api {
namespace {

hw::Chip with_cores(const hw::Chip& chip, std::uint32_t cores) {
  if (cores > chip.cores) {
    throw hw::ConfigError(fmt::format("--cores: {} has {} cores, asked for {}", chip.name, chip.cores, cores));
  }
  hw::Chip c = chip;
  if (cores != 0) c.cores = cores;
  return c;
}

OpRunResult simulate_alone(const hw::Chip& chip, const ops::OpGraph& graph, hw::DType dtype) {
  const ops::Lowered lowered = ops::lower(graph, chip, {});
  const sim::Trace trace = sim::Simulator(chip).run(lowered.program);
  const ops::Timeline tl = ops::build_timeline(graph, chip, lowered, trace);
  OpRunResult r;
  r.cores = chip.cores;
  r.total_ps = tl.total;
  r.ddr_bytes = tl.hbm_bytes;
  r.c2c_bytes = tl.c2c_bytes;
  r.flops = tl.flops;
  r.commands = lowered.program.command_count();
  for (const auto& op : lowered.ops) r.peak_lmem_bytes = std::max(r.peak_lmem_bytes, op.peak_lmem_bytes);
  const double peak = hw::CostModel(chip).cube_peak_flops(dtype);  // this chip (cores already restricted)
  r.tiu_utilization =
      tl.total == 0 ? 0.0 : static_cast<double>(r.flops) / (static_cast<double>(tl.total) * 1e-12 * peak);
  if (chip.energy) {
    r.has_energy = true;
    // W x ps = pJ; the simulator counts pJ, its outputs joules.
    const double dynamic_pj = tl.dynamic_energy_pj;
    const double static_pj = chip.energy->static_w(chip.cores) * static_cast<double>(tl.total);
    r.dynamic_energy_j = dynamic_pj * 1e-12;
    r.static_energy_j = static_pj * 1e-12;
    r.energy_j = (dynamic_pj + static_pj) * 1e-12;
  }
  return r;
}

void require(std::uint64_t v, const char* flag) {
  if (v == 0) throw hw::ConfigError(fmt::format("{}: must be a positive integer", flag));
}

}  // namespace

MatmulRequest matmul_request(std::uint64_t m, std::uint64_t n, std::uint64_t k, std::string_view dtype,
                             std::string_view flag) {
  MatmulRequest q{m, n, k, hw::DType::bf16, std::nullopt};
  for (const std::string_view mx : {"mxfp8", "mxfp6", "mxfp4", "nvfp4"}) {
    if (dtype != mx) continue;
    q.microscaled = models::parse_weight_dtype(dtype);
    q.dtype = models::microscaling_of(*q.microscaled)->element;
    return q;
  }
  if (dtype != "bf16" && dtype != "fp8" && dtype != "fp32") {
    throw hw::ConfigError(
        fmt::format("{}: unknown dtype '{}' (expected one of: bf16, fp8, fp32, mxfp8, mxfp6, "
                    "mxfp4, nvfp4)",
                    flag, dtype));
  }
  q.dtype = hw::parse_dtype(dtype, flag);
  return q;
}

OpRunResult run_matmul(const hw::Chip& full, const MatmulRequest& q, std::uint32_t cores) {
  require(q.m, "--m");
  require(q.n, "--n");
  require(q.k, "--k");
  if (full.cube_macs(q.dtype) == 0) {
    throw hw::ConfigError(fmt::format("--dtype: {} has no {} cube", full.name, hw::name_of(q.dtype)));
  }
  const hw::Chip chip = with_cores(full, cores);
  ops::OpGraph g;
  ops::OpNode node = models::detail::matmul_op("matmul", 1, q.m, q.k, q.n);
  node.dtype = q.dtype;
  if (q.microscaled) {
    // Both operands packed with their block scales, as a block-scaled GEMM benchmark feeds them
    // (already quantised: no quantisation work); the output in bf16.
    models::apply_weight_format(
        node, {*q.microscaled, models::kDefaultWeightGroup, models::parse_act_dtype(models::name_of(*q.microscaled))});
    node.mm().a_quant_ops = 0;
  }
  const ops::OpId id = ops::add_op(g, node);
  OpRunResult r = simulate_alone(chip, g, q.dtype);
  r.op = "matmul";
  r.shape = fmt::format("[{}, {}] x [{}, {}] {}", q.m, q.k, q.k, q.n,
                        q.microscaled ? models::name_of(*q.microscaled) : hw::name_of(q.dtype));
  r.unique_bytes = ops::unique_bytes(g, id);
  return r;
}

OpRunResult run_fa2(const hw::Chip& full, const Fa2Request& q, std::uint32_t cores) {
  require(q.batch, "--batch");
  require(q.q_len, "--q-len");
  require(q.kv_len, "--kv-len");
  require(q.heads, "--heads");
  require(q.kv_heads, "--kv-heads");
  require(q.qk_dim, "--qk-dim");
  require(q.v_dim, "--v-dim");
  if (q.heads % q.kv_heads != 0) throw hw::ConfigError("--kv-heads: must divide --heads");
  if (q.q_len > q.kv_len) throw hw::ConfigError("--q-len: must not exceed --kv-len");
  if (q.shared_kv && q.v_dim > q.qk_dim) throw hw::ConfigError("--shared-kv: needs --v-dim <= --qk-dim");
  const hw::Chip chip = with_cores(full, cores);
  ops::AttentionShape a;
  a.groups = {ops::QueryGroup{q.batch, q.q_len, q.kv_len}};
  a.heads = q.heads;
  a.kv_heads = q.kv_heads;
  a.qk_dim = q.qk_dim;
  a.v_dim = q.v_dim;
  a.kv_elements = q.shared_kv ? q.qk_dim : q.qk_dim + q.v_dim;
  a.kv_token_bytes = 2 * a.kv_elements;
  a.decode = q.q_len < q.kv_len;
  if (q.causal && a.decode) throw hw::ConfigError("--causal: applies to prefill (--q-len equal to --kv-len)");
  a.causal = q.causal;
  ops::OpGraph g;
  const ops::OpId fa2 = ops::add_op(g, models::detail::fa2_op(a, a.keys() * a.kv_heads * a.kv_token_bytes));
  if (a.decode) {  // split over the history: the partial outputs are merged too
    ops::add_dependency(g, fa2, ops::add_op(g, models::detail::combine_op(a)));
  }
  OpRunResult r = simulate_alone(chip, g, hw::DType::bf16);
  r.op = "fa2";
  r.shape = fmt::format("B{} q{} kv{} h{}/{} d{}/{}{}{}", q.batch, q.q_len, q.kv_len, a.heads, a.kv_heads, a.qk_dim,
                        a.v_dim, q.shared_kv ? " shared-kv" : "", a.causal ? " causal" : "");
  r.unique_bytes = ops::unique_bytes(g, fa2);
  return r;
}

OpRunResult run_collective(const hw::Chip& chip, const g5sim::CollectiveOp& q) {
  if (q.kind != "all_reduce" && q.kind != "all_to_all") {
    throw hw::ConfigError(fmt::format("op: '{}' is not a collective; valid: all_reduce, all_to_all", q.kind));
  }
  require(q.bytes, "--bytes");
  if (q.chips < 2) throw hw::ConfigError(fmt::format("--chips: a collective needs 2 chips or more, got {}", q.chips));
  const bool reduce = q.kind == "all_reduce";
  ops::OpGraph g;
  ops::OpNode node;
  node.name = q.kind;
  node.kind = reduce ? ops::OpKind::all_reduce : ops::OpKind::all_to_all;
  node.payload = ops::CollectiveShape{q.bytes, q.chips};
  ops::add_op(g, node);
  OpRunResult r = simulate_alone(chip, g, hw::DType::bf16);
  r.op = q.kind;
  r.shape = fmt::format("{} B per chip over {} chips{}", q.bytes, q.chips,
                        chip.nodes && q.chips > chip.nodes->chips_per_node
                            ? fmt::format(" ({} per node)", chip.nodes->chips_per_node)
                            : "");
  r.unique_bytes = q.bytes;  // the buffer each chip reduces or sends
  return r;
}

void write_op_json(std::ostream& out, const OpRunResult& r) {
  fmt::print(out,
             "{{\"schema_version\": 2, \"op\": {}, \"shape\": {}, \"cores\": {}, \"total_ns\": {}, \"ddr_bytes\": {}, "
             "\"c2c_bytes\": {}, "
             "\"unique_bytes\": {}, \"tiu_utilization\": {:.6f}, \"peak_lmem_bytes\": {}, \"flops\": {}, "
             "\"commands\": {}{}}}\n",
             json_string(r.op), json_string(r.shape), r.cores, format_ns(r.total_ps), r.ddr_bytes, r.c2c_bytes,
             r.unique_bytes, r.tiu_utilization, r.peak_lmem_bytes, r.flops, r.commands,
             r.has_energy ? fmt::format(", \"energy_j\": {}, \"dynamic_energy_j\": {}, \"static_energy_j\": {}",
                                        r.energy_j, r.dynamic_energy_j, r.static_energy_j)
                          : std::string());
}

void write_op_table(std::ostream& out, const OpRunResult& r) {
  fmt::print(out, "{} {} on {} cores\n", r.op, r.shape, r.cores);
  fmt::print(out, "total_ns         {}\n", format_ns(r.total_ps));
  fmt::print(out, "ddr_bytes        {} ({:.3f} x unique)\n", r.ddr_bytes,
             static_cast<double>(r.ddr_bytes) / static_cast<double>(r.unique_bytes));
  if (r.c2c_bytes > 0) fmt::print(out, "c2c_bytes        {}\n", r.c2c_bytes);
  fmt::print(out, "unique_bytes     {}\n", r.unique_bytes);
  fmt::print(out, "tiu_utilization  {:.4f}\n", r.tiu_utilization);
  fmt::print(out, "peak_lmem_bytes  {}\n", r.peak_lmem_bytes);
  fmt::print(out, "flops            {}\n", r.flops);
  fmt::print(out, "commands         {}\n", r.commands);
  if (r.has_energy) {
    fmt::print(out, "energy_j         {} (dynamic {}, static {})\n", r.energy_j, r.dynamic_energy_j, r.static_energy_j);
  }
}

}  // namespace api

namespace g5sim {

std::string OpResult::json() const {
  std::ostringstream out;
  api::write_op_json(out, *this);
  return out.str();
}

std::string OpResult::table() const {
  std::ostringstream out;
  api::write_op_table(out, *this);
  return out.str();
}

}  // namespace g5sim
