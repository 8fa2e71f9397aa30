#include "api/report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "api/json_text.hpp"
#include "g5sim/report_fields.hpp"
#include "models/kv_cache.hpp"
#include "models/weight_format.hpp"

namespace api {
namespace {

constexpr int kJsonSchemaVersion = 3;

std::string kv_engine_name(const RunDescription& run) { return kv_read_engine_name(run.chip, run.options); }

// "tiu 12  gdma 40 ..." and {"tiu": 12, "gdma": 40, ...}: every engine of the chip, in order.
std::string command_counts(const hw::Chip& chip, const ops::Timeline& tl, bool json) {
  std::string out;
  for (std::size_t e = 0; e < chip.engines.size(); ++e) {
    if (json) {
      out += fmt::format("{}{}: {}", e ? ", " : "", json_string(chip.engines[e].name), tl.commands[e]);
    } else {
      out += fmt::format("{}{} {}", e ? "  " : "", chip.engines[e].name, tl.commands[e]);
    }
  }
  return out;
}

// "int4 g64" for grouped integer weights, else the dtype's name; fp8 or microscaled weights on a
// chip whose cube lacks their element type say that they ran weight-only, dequantised ("mxfp4 (as
// bf16: no fp4 tensor rate)"); activations fixed by --act-dtype follow (" acts=fp8").
std::string weights_label(const models::Workload& w, const hw::Chip& chip) {
  const bool grouped = w.weight_dtype == models::WeightDtype::int8 || w.weight_dtype == models::WeightDtype::int4;
  const std::string acts =
      w.act_dtype == models::ActDtype::auto_ ? "" : fmt::format(" acts={}", models::name_of(w.act_dtype));
  const hw::DType element = models::weight_element(w.weight_dtype);
  if (element != hw::DType::bf16 && w.act_dtype == models::ActDtype::auto_ && chip.cube_macs(element) == 0) {
    return fmt::format("{} (as bf16: no {} tensor rate)", models::name_of(w.weight_dtype), hw::name_of(element));
  }
  if (!grouped) return std::string(models::name_of(w.weight_dtype)) + acts;
  return (w.weight_group == 0 ? fmt::format("{} per-column", models::name_of(w.weight_dtype))
                              : fmt::format("{} g{}", models::name_of(w.weight_dtype), w.weight_group)) +
         acts;
}

}  // namespace

std::string kv_read_engine_name(const hw::Chip& chip, const ops::LoweringOptions& options) {
  return options.kv_read_engine.empty() ? chip.engine(chip.default_kv_engine()).name : options.kv_read_engine;
}

std::string format_ns(sim::Tick ps) { return fmt::format("{}.{:03}", ps / 1000, ps % 1000); }

std::vector<KindSummary> summarize_by_kind(const ops::Timeline& tl) {
  std::vector<KindSummary> out;
  std::vector<std::vector<std::pair<sim::Tick, sim::Tick>>> intervals;
  std::vector<std::vector<std::pair<std::string, sim::Tick>>> bound_time;  // per kind: class -> op time
  for (const ops::OpTiming& t : tl.ops) {
    auto it = std::find_if(out.begin(), out.end(), [&](const KindSummary& k) { return k.kind == t.kind; });
    if (it == out.end()) {
      it = out.insert(out.end(), KindSummary{t.kind});
      intervals.emplace_back();
      bound_time.emplace_back();
    }
    auto& classes = bound_time[static_cast<std::size_t>(it - out.begin())];
    auto cls = std::find_if(classes.begin(), classes.end(), [&](const auto& p) { return p.first == t.bound_by; });
    if (cls == classes.end()) cls = classes.insert(classes.end(), {t.bound_by, 0});
    cls->second += t.duration();
    ++it->ops;
    it->hbm_bytes += t.hbm_bytes;
    it->c2c_bytes += t.c2c_bytes;
    it->flops += t.flops;
    it->compute_ns += t.compute_ns;
    it->memory_ns += t.memory_ns;
    it->comm_ns += t.comm_ns;
    it->energy_pj += t.energy_pj;
    if (t.end > t.start) intervals[static_cast<std::size_t>(it - out.begin())].emplace_back(t.start, t.end);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    // Busy time: the union of the kind's op intervals.
    auto& list = intervals[i];
    std::sort(list.begin(), list.end());
    sim::Tick covered_to = 0;
    for (const auto& [start, end] : list) {
      if (end <= covered_to) continue;
      out[i].busy += end - std::max(start, covered_to);
      covered_to = end;
    }
    KindSummary& k = out[i];
    const std::pair<std::string, sim::Tick>* most = nullptr;  // first of the largest
    for (const auto& entry : bound_time[i]) {
      if (most == nullptr || entry.second > most->second) most = &entry;
    }
    if (most != nullptr) k.bound_by = most->first;
    k.regime =
        k.kind == ops::OpKind::host_launch ? ops::Regime::host : ops::classify(k.compute_ns, k.memory_ns, k.comm_ns);
  }
  std::vector<std::size_t> order(out.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return out[a].busy > out[b].busy; });
  std::vector<KindSummary> sorted;
  for (std::size_t i : order) sorted.push_back(out[i]);
  return sorted;
}

std::optional<RunEnergy> run_energy(const RunDescription& run, const ops::Timeline& tl) {
  if (!run.chip.energy) return std::nullopt;
  const hw::ChipEnergy& price = *run.chip.energy;
  RunEnergy e;
  e.dynamic_pj = tl.dynamic_energy_pj;
  // W x ps = 1 pJ.
  e.static_pj = price.static_w(run.chip.cores) * static_cast<double>(tl.total);
  e.total_pj = e.dynamic_pj + e.static_pj;
  e.average_w = tl.total > 0 ? e.total_pj / static_cast<double>(tl.total) : 0.0;
  e.tdp_w = price.tdp_w;
  if (run.scope == Scope::step) {
    // The chip's share of the step's tokens: its tokens per second over the step's time.
    const double tokens =
        tokens_per_s_per_chip(run.workload, tl.total, run.parallelism) * static_cast<double>(tl.total) * 1e-12;
    if (tokens > 0) e.joules_per_token = e.total_pj * 1e-12 / tokens;
  }
  return e;
}

namespace {

// ", \"energy_j\": X" for an op or a kind on a chip with energy, else nothing: the simulator counts
// picojoules, every output joules.
std::string energy_field(const hw::Chip& chip, double pj) {
  return chip.energy ? fmt::format(", \"energy_j\": {}", pj * 1e-12) : std::string();
}

}  // namespace

// Tokens per second of the whole deployment: a decode step processes B * q_len new tokens (B over
// all DP ranks), a prefill B * q_len prompt tokens.
std::string phase_name(const models::Workload& w) {
  return w.has_decode() && w.has_prefill() ? "mixed" : w.decode() ? "decode" : "prefill";
}

sim::Tick step_time(const RunDescription& run, const ops::Timeline& timeline) {
  if (!run.runtime) return timeline.total;
  return timeline.total + run.runtime->parts.total_ps() - run.runtime->parts.layer_launch_ps;
}

double tokens_per_s(const models::Workload& w, sim::Tick total) {
  const double tokens = static_cast<double>(w.tokens());
  return total == 0 ? 0.0 : tokens / (static_cast<double>(total) * 1e-12);
}

RunBand run_band(const RunDescription& run, sim::Tick total) {
  RunBand out;
  if (!run.chip.error_bands) {
    out.basis = run.chip.calibrated
                    ? fmt::format(
                          "none: {}'s calibration record has no bands (an older g5sim calibrate wrote it; "
                          "calibrate again to record held-out errors)",
                          run.chip.name)
                    : fmt::format(
                          "none: {} is not calibrated against measurements (no calibration.bands of "
                          "held-out errors; g5sim calibrate writes them)",
                          run.chip.name);
    return out;
  }
  const hw::ErrorBands& bands = *run.chip.error_bands;
  std::vector<hw::BandKind> kinds;
  if (run.scope == Scope::block) {
    kinds = {hw::BandKind::block};
  } else {
    const std::string phase = phase_name(run.workload);
    if (phase != "prefill") kinds.push_back(hw::BandKind::decode);
    if (phase != "decode") kinds.push_back(hw::BandKind::prefill);
  }
  double low = 0, high = 0;
  std::uint64_t rows = 0;
  std::vector<std::string_view> names;  // the bands used, each once (two kinds may fall back to `all`)
  for (const hw::BandKind k : kinds) {
    const hw::ErrorBand* b = bands.band_for(k);
    if (b == nullptr || std::find(names.begin(), names.end(), hw::name_of(b->kind)) != names.end()) continue;
    low = names.empty() ? b->low_ratio : std::min(low, b->low_ratio);
    high = names.empty() ? b->high_ratio : std::max(high, b->high_ratio);
    rows += b->rows;
    names.push_back(hw::name_of(b->kind));
  }
  if (names.empty()) {
    out.basis = fmt::format("none: {}'s calibration.bands records no {} rows and no 'all' band", run.chip.name,
                            hw::name_of(kinds.front()));
    return out;
  }
  // measured = predicted / ratio: the largest ratio gives the lowest bound.
  const auto bound = [total](double ratio) {
    return static_cast<sim::Tick>(std::llround(static_cast<double>(total) / ratio));
  };
  out.low = bound(high);
  out.high = bound(low);
  out.coverage = bands.coverage;
  out.basis = fmt::format("{:.0f} % of {} held-out rows ({}) of {}: calibration.bands.{}", 100 * bands.coverage, rows,
                          bands.basis, run.chip.name, fmt::join(names, " + "));
  return out;
}

double tokens_per_s_per_chip(const models::Workload& w, sim::Tick total, const models::Parallelism& p) {
  return tokens_per_s(w, total) / static_cast<double>(p.chips());
}

namespace {

std::string layer_text(int layer) { return layer < 0 ? std::string("null") : std::to_string(layer); }

}  // namespace

namespace {

void write_aligned(std::ostream& out, const std::vector<std::string>& header,
                   const std::vector<std::vector<std::string>>& rows, std::size_t text_columns) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < header.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const bool last = i + 1 == cells.size();
      const bool left = i < text_columns || last;  // text columns left, numbers right
      if (i) out << "  ";
      if (last) {
        out << cells[i];  // no trailing padding
      } else {
        out << (left ? fmt::format("{:<{}}", cells[i], width[i]) : fmt::format("{:>{}}", cells[i], width[i]));
      }
    }
    out << '\n';
  };
  print_row(header);
  for (const auto& r : rows) print_row(r);
}

// The table's first line: model, what ran (a step or a block), workload, weights, chip.
void write_table_title(std::ostream& out, const RunDescription& run) {
  const models::Workload& w = run.workload;
  const bool step = run.scope == Scope::step;
  const std::string batch_text =
      w.uniform() ? fmt::format("B={} q_len={} kv_len={}", w.sequences(), w.max_q_len(), w.max_kv_len())
                  : fmt::format("{} sequences {}", w.sequences(), models::mix_text(w.groups));
  fmt::print(
      out, "g5sim: {} {}, {} {} kv={} weights={}, on {} ({} cores)\n", run.model.name,
      step ? fmt::format(
                 "decoder step ({} of {} layers{}{})", run.layers, run.model.num_hidden_layers,
                 run.micro_batches > 1 ? fmt::format(", {} micro-batches", run.micro_batches) : "",
                 run.host_launch_ns > 0 ? fmt::format(", each launched by the host in {} ns", run.host_launch_ns) : "")
      : run.model.attention == models::AttentionKind::mla
          ? (w.has_decode() && w.has_prefill()
                 ? fmt::format("MLA attention block ({} decode, {} prefill)", models::name_of(w.mla_mode),
                               models::name_of(w.prefill_mla_mode))
                 : fmt::format("MLA attention block ({})", models::name_of(w.compute_mode())))
          : std::string("attention block"),
      phase_name(w), batch_text, models::name_of(w.kv_format), weights_label(w, run.chip), run.chip.name,
      run.chip.cores);
}

// The table's settings lines: MLA modes, prefill attention, KV routes, sharding, memory per chip.
void write_table_settings(std::ostream& out, const RunDescription& run) {
  const models::Workload& w = run.workload;
  const bool step = run.scope == Scope::step;
  if (run.model.attention == models::AttentionKind::mla) {
    fmt::print(out, "mla mode: {} (cache and decode), prefill compute {}\n", models::name_of(w.mla_mode),
               models::name_of(w.prefill_mla_mode));
  }
  if (w.has_prefill()) {
    // Only where the default was not asked for: uniform decode and prefill tables stay as they were.
    if (w.prefill_attention != models::PrefillAttention::causal || !w.uniform()) {
      fmt::print(out, "prefill attention: {}\n", models::name_of(w.prefill_attention));
    }
  }
  if (w.history_tokens() > 0) fmt::print(out, "kv_cache_read route: {}\n", kv_engine_name(run));
  if (w.kv_append != models::KvAppend::in_place) fmt::print(out, "kv append: {}\n", models::name_of(w.kv_append));
  if (w.lm_head_weights != models::LmHeadWeights::bf16) {
    fmt::print(out, "lm_head weights: {}\n", models::name_of(w.lm_head_weights));
  }
  const models::Parallelism& p = run.parallelism;
  fmt::print(out, "sharding: tp {} ep {} dp {} ({} chip{}{}); this chip runs {} of the {} sequence{}\n", p.tp, p.ep,
             p.dp, p.chips(), p.chips() == 1 ? "" : "s",
             run.automatic_sharding ? ", chosen as the smallest that fits DDR" : "",
             models::chip_workload(w, p).sequences(), w.sequences(), w.sequences() == 1 ? "" : "s");
  if (step) {
    fmt::print(out, "memory per chip: weights {:.2f} GiB + KV cache {:.2f} GiB = {:.2f} GiB of {:.2f} GiB\n",
               run.footprint.weight_bytes / 1073741824.0, run.footprint.kv_cache_bytes / 1073741824.0,
               run.footprint.total() / 1073741824.0, run.chip.ddr_capacity_bytes / 1073741824.0);
  }
}

// A step's table body: one row per op kind, busiest first.
void write_kind_rows(std::ostream& out, const ops::Timeline& tl) {
  std::vector<std::vector<std::string>> rows;
  for (const KindSummary& k : summarize_by_kind(tl)) {
    rows.push_back(
        {std::string(ops::kind_name(k.kind)), fmt::format("{}", k.ops), format_ns(k.busy),
         fmt::format("{:.1f}", tl.total ? 100.0 * static_cast<double>(k.busy) / static_cast<double>(tl.total) : 0.0),
         fmt::format("{}", k.hbm_bytes), fmt::format("{}", k.c2c_bytes), fmt::format("{}", k.flops),
         std::string(ops::regime_name(k.regime)), k.bound_by});
  }
  write_aligned(out, g5sim::report_named(g5sim::run_reports(), "run_kinds").column_names(), rows, 1);
  out << "(busy_ns: the union of the kind's op intervals; kinds overlap, so shares can add past 100; bound_by "
         "latency: no resource busy half the kind's time, which start-ups, barriers and round trips fill)\n";
}

// A block's table body: one row per op, in emission order.
void write_op_rows(std::ostream& out, const ops::Timeline& tl) {
  std::vector<std::vector<std::string>> rows;
  for (const ops::OpTiming& t : tl.ops) {
    rows.push_back({t.name, std::string(ops::kind_name(t.kind)), t.engines, format_ns(t.start), format_ns(t.end),
                    fmt::format("{}", t.hbm_bytes), fmt::format("{}", t.flops), fmt::format("{:.3f}", t.roofline_ns),
                    std::string(ops::regime_name(t.regime)), t.bound_by});
  }
  write_aligned(out, g5sim::report_named(g5sim::run_reports(), "run_ops").column_names(), rows, 3);
}

// The table's runtime lines: what the runtime added, by part, the step it makes and what no
// runtime models.
void write_table_runtime(std::ostream& out, const RuntimeReport& rt, const ops::Timeline& tl) {
  const g5sim::RuntimeParts& p = rt.parts;
  const sim::Tick chip = tl.total - p.layer_launch_ps;
  fmt::print(out, "runtime       {} {}: {}\n", rt.name, rt.version, rt.adds);
  // The compute floor's part only where the runtime has one (a runtime at the chip's own kernels
  // prints the line it always printed).
  const std::string compute =
      rt.tensor_efficiency < 1 ? fmt::format(" + kernel compute {}", format_ns(p.kernel_compute_ps)) : "";
  // Likewise the launch waits only where the host issues kernels at a cost.
  const std::string launch = rt.host_launches ? fmt::format(" + launch waits {}", format_ns(p.kernel_launch_ps)) : "";
  fmt::print(out,
             "runtime_ns    {} = kernel floors {}{} + gaps {}{} ({} kernels, {}) + collectives {} ({}) + layer "
             "launches {} ({}) + step CPU {}\n",
             format_ns(p.total_ps()), format_ns(p.kernel_floor_ps), compute, format_ns(p.kernel_gap_ps), launch,
             p.kernels, p.kernel_mode, format_ns(p.collective_ps), p.collectives, format_ns(p.layer_launch_ps),
             p.layer_launches, format_ns(p.step_cpu_ps));
  fmt::print(out, "step_ns       {} = chip {} + runtime {}\n", format_ns(chip + p.total_ps()), format_ns(chip),
             format_ns(p.total_ps()));
  fmt::print(out, "not modelled  activation memory, the network stack, kernels on concurrent streams\n");
}

// The table's totals: time and its band, tokens per second (a step), bytes and FLOPs.
void write_table_totals(std::ostream& out, const RunDescription& run, const ops::Timeline& tl) {
  const models::Workload& w = run.workload;
  const bool step = run.scope == Scope::step;
  fmt::print(out, "total_ns      {}\n", format_ns(tl.total));
  {
    const RunBand band = run_band(run, tl.total);
    if (band.low) {
      fmt::print(out, "band_ns       {} - {} ({})\n", format_ns(*band.low), format_ns(*band.high), band.basis);
    } else {
      fmt::print(out, "band_ns       {}\n", band.basis);
    }
  }
  if (run.runtime) write_table_runtime(out, *run.runtime, tl);
  if (step) {
    const sim::Tick t = step_time(run, tl);
    fmt::print(out, "tokens_per_s  {:.1f} over {} chip{}: {:.1f} per chip\n", tokens_per_s(w, t),
               run.parallelism.chips(), run.parallelism.chips() == 1 ? "" : "s",
               tokens_per_s_per_chip(w, t, run.parallelism));
  }
  fmt::print(out, "hbm_bytes     {}\n", tl.hbm_bytes);
  fmt::print(out, "flops         {}\n", tl.flops);
}

// The table's energy lines, on a chip with an energy section: the run's joules and per engine.
void write_table_energy(std::ostream& out, const RunDescription& run, const ops::Timeline& tl) {
  if (const std::optional<RunEnergy> e = run_energy(run, tl)) {
    const std::string per_token =
        e->joules_per_token
            ? fmt::format(", {:.3f} mJ/token, {:.2f} tokens/J", *e->joules_per_token * 1e3, 1.0 / *e->joules_per_token)
            : std::string();
    const std::string tdp = e->tdp_w ? fmt::format(" of {:.0f} W TDP", *e->tdp_w) : std::string(" (no TDP stated)");
    const std::uint64_t chips = run.parallelism.chips();
    fmt::print(out,
               "energy        {:.6f} J a chip (dynamic {:.6f}, static {:.6f}){}; {:.1f} W a chip{}; {:.6f} J over the "
               "{} chip{}\n",
               e->total_pj * 1e-12, e->dynamic_pj * 1e-12, e->static_pj * 1e-12, per_token, e->average_w, tdp,
               e->total_pj * 1e-12 * static_cast<double>(chips), chips, chips == 1 ? "" : "s");
    std::string engines;
    for (std::size_t i = 0; i < run.chip.engines.size(); ++i) {
      engines +=
          fmt::format("{}{} {:.6f}", i ? ", " : "", run.chip.engines[i].display_name(), tl.engine_energy_pj[i] * 1e-12);
    }
    fmt::print(out, "energy_by     {} J (dynamic, by engine)\n", engines);
  }
}

// Why the roofline's verdict and the simulated limit differ, when they do (one line): the roofline
// prices each op alone at the chip's peaks; the run meets the channels' real rates, the overlaps
// and the waits the roofline leaves out.
std::string verdict_note(const RunDescription& run, const ops::Timeline& tl) {
  const std::string regime(ops::regime_name(tl.regime));
  const std::string pointer = "docs/decode_step_gap.md walks through where the time goes";
  if (tl.bound_by == "latency") {
    return fmt::format(
        "the roofline says {}-bound, but no resource is busy half the run (the busiest {:.0f} %): "
        "start-ups, barriers and round trips set the time; {}",
        regime, 100.0 * tl.bound_share, pointer);
  }
  const bool compute_limit = tl.bound_by == run.chip.engines[run.chip.tensor_engine()].display_name();
  if (tl.regime == ops::Regime::compute && !compute_limit) {
    return fmt::format(
        "the roofline says compute-bound (every byte at the DDR's roofline bandwidth), but the "
        "simulated limit is {}: its bytes move slower there than the roofline assumes; {}",
        tl.bound_by, pointer);
  }
  if (tl.regime == ops::Regime::memory && compute_limit) {
    return fmt::format(
        "the roofline says memory-bound, but the simulated limit is {}: tiles and pipeline fills "
        "keep the tensor engine below its peak; {}",
        tl.bound_by, pointer);
  }
  return {};
}

// The table's last lines: roofline, the limiting resource, idle gaps, commands and replay.
void write_table_resources(std::ostream& out, const RunDescription& run, const ops::Timeline& tl) {
  fmt::print(out, "roofline      compute {:.3f} ns, memory {:.3f} ns -> {}-bound (ideal: each op alone at peak)\n",
             tl.compute_ns, tl.memory_ns, ops::regime_name(tl.regime));
  fmt::print(out, "bound_by      {} (the busiest resource is busy {:.1f} % of the run)\n", tl.bound_by,
             100.0 * tl.bound_share);
  if (const std::string why = verdict_note(run, tl); !why.empty()) fmt::print(out, "verdict       {}\n", why);
  fmt::print(out, "idle_ns       {} a core, {:.1f} % of the run (the tensor engine waiting at op boundaries)\n",
             format_ns(tl.idle_per_core),
             tl.total == 0 ? 0.0 : 100.0 * static_cast<double>(tl.idle_per_core) / static_cast<double>(tl.total));
  fmt::print(out, "commands      {}\n", command_counts(run.chip, tl, false));
  {
    const std::uint64_t represented = std::accumulate(tl.commands.begin(), tl.commands.end(), std::uint64_t{0});
    if (represented > tl.simulated_commands) {
      fmt::print(out, "replayed      {} of {} commands ({}; --no-replay simulates all)\n",
                 represented - tl.simulated_commands, represented, tl.replayed_what);
    }
  }
}

// run JSON's first keys: versions, chip and model with their sources, scope and layers.
void write_json_identity(std::ostream& out, const RunDescription& run) {
  // docs/schema/run.schema.json describes this document; its version moves with any change of
  // a key's meaning or type (added keys keep it).
  fmt::print(out, "  \"schema_version\": {},\n", kJsonSchemaVersion);
  fmt::print(out, "  \"g5sim_version\": \"{}\",\n", G5SIM_VERSION);
  fmt::print(out, "  \"chip\": {},\n", json_string(run.chip.name));
  fmt::print(out, "  \"model\": {},\n", json_string(run.model.name));
  fmt::print(out, "  \"chip_source\": {},\n", json_string(g5sim::source_label(run.chip.source)));
  fmt::print(out, "  \"chip_sha256\": \"{}\",\n", run.chip.source_sha256);
  fmt::print(out, "  \"model_source\": {},\n", json_string(g5sim::source_label(run.model.source)));
  fmt::print(out, "  \"model_sha256\": \"{}\",\n", run.model.source_sha256);
  fmt::print(out, "  \"cores\": {},\n", run.chip.cores);
  fmt::print(out, "  \"scope\": \"{}\",\n", run.scope == Scope::step ? "step" : "block");
  fmt::print(out, "  \"layers\": {},\n", run.layers);
  fmt::print(out, "  \"micro_batches\": {},\n", run.micro_batches);
  fmt::print(out, "  \"host_launch_ns\": {},\n", run.host_launch_ns);
}

// A workload's sequence groups as JSON objects, comma separated.
std::string sequence_groups_json(const models::Workload& of) {
  std::string text;
  for (const models::SequenceGroup& g : of.groups) {
    text += fmt::format("{}{{\"count\": {}, \"q_len\": {}, \"history\": {}, \"path\": \"{}\"}}",
                        text.empty() ? "" : ", ", g.count, g.q_len, g.history, g.decode ? "decode" : "prefill");
  }
  return text;
}

// run JSON's "workload", sequences, "parallelism" and "memory".
void write_json_workload(std::ostream& out, const RunDescription& run) {
  const models::Workload& w = run.workload;
  fmt::print(out,
             "  \"workload\": {{\"phase\": \"{}\", \"batch\": {}, \"q_len\": {}, \"kv_len\": {}, "
             "\"prefill_attention\": \"{}\", \"kv_dtype\": \"{}\", "
             "\"mla_mode\": \"{}\", \"prefill_mla_mode\": \"{}\", \"weight_dtype\": \"{}\", \"weight_group_size\": {}, "
             "\"act_dtype\": \"{}\", \"kv_read_engine\": "
             "\"{}\", \"attn_split\": \"{}\", \"kv_append\": \"{}\", \"lm_head_weights\": \"{}\", "
             "\"prefetch_weights\": {}}},\n",
             phase_name(w), w.sequences(), w.max_q_len(), w.max_kv_len(), models::name_of(w.prefill_attention),
             models::name_of(w.kv_format), models::name_of(w.mla_mode), models::name_of(w.prefill_mla_mode),
             models::name_of(w.weight_dtype), w.weight_group, models::name_of(w.act_dtype), kv_engine_name(run),
             run.options.attn_split == ops::AttentionSplit::seq ? "seq" : "head", models::name_of(w.kv_append),
             models::name_of(w.lm_head_weights), run.options.prefetch_weights ? "true" : "false");
  // The step's sequences over all chips, and the simulated chip's share (its DP rank's).
  fmt::print(out, "  \"sequences\": [{}],\n", sequence_groups_json(w));
  fmt::print(out, "  \"chip_sequences\": [{}],\n", sequence_groups_json(models::chip_workload(w, run.parallelism)));
  fmt::print(out, "  \"parallelism\": {{\"tp\": {}, \"ep\": {}, \"dp\": {}, \"chips\": {}, \"automatic\": {}}},\n",
             run.parallelism.tp, run.parallelism.ep, run.parallelism.dp, run.parallelism.chips(),
             run.automatic_sharding ? "true" : "false");
  fmt::print(out,
             "  \"memory\": {{\"weight_bytes\": {}, \"kv_cache_bytes\": {}, \"capacity_bytes\": {}, \"fits\": {}}},\n",
             run.footprint.weight_bytes, run.footprint.kv_cache_bytes, run.chip.ddr_capacity_bytes,
             run.footprint.total() <= run.chip.ddr_capacity_bytes ? "true" : "false");
}

// run JSON's "runtime": the runtime, its charge by part, the chip's time and the step's.
void write_json_runtime(std::ostream& out, const RuntimeReport& rt, const ops::Timeline& tl) {
  const g5sim::RuntimeParts& p = rt.parts;
  const sim::Tick chip = tl.total - p.layer_launch_ps;
  fmt::print(out,
             "  \"runtime\": {{\"name\": {}, \"version\": {}, \"source\": {}, \"sha256\": \"{}\", \"adds\": {}, "
             "\"chip_ns\": {}, \"runtime_ns\": {}, \"step_ns\": {}, \"kernel_mode\": \"{}\", \"kernels\": {}, "
             "\"collectives\": {}, \"layer_launches\": {}, \"parts\": {{\"kernel_floor_ns\": {}, "
             "\"kernel_compute_ns\": {}, \"kernel_gap_ns\": {}, \"kernel_launch_ns\": {}, \"collective_ns\": {}, "
             "\"layer_launch_ns\": {}, \"step_cpu_ns\": {}}}, "
             "\"not_modelled\": \"activation memory, the network stack, kernels on concurrent streams\"}},\n",
             json_string(rt.name), json_string(rt.version), json_string(rt.source), rt.sha256, json_string(rt.adds),
             format_ns(chip), format_ns(p.total_ps()), format_ns(chip + p.total_ps()), p.kernel_mode, p.kernels,
             p.collectives, p.layer_launches, format_ns(p.kernel_floor_ps), format_ns(p.kernel_compute_ps),
             format_ns(p.kernel_gap_ps), format_ns(p.kernel_launch_ps), format_ns(p.collective_ps),
             format_ns(p.layer_launch_ps), format_ns(p.step_cpu_ps));
}

// run JSON's totals: time and its band, tokens per second, the limiting resource, bytes, FLOPs.
void write_json_totals(std::ostream& out, const RunDescription& run, const ops::Timeline& tl) {
  const models::Workload& w = run.workload;
  fmt::print(out, "  \"total_ns\": {},\n", format_ns(tl.total));
  fmt::print(out, "  \"total_ps\": {},\n", tl.total);
  {
    const RunBand band = run_band(run, tl.total);
    fmt::print(out, "  \"band_low_ns\": {},\n", band.low ? format_ns(*band.low) : "null");
    fmt::print(out, "  \"band_high_ns\": {},\n", band.high ? format_ns(*band.high) : "null");
    fmt::print(out, "  \"band_coverage\": {},\n", band.low ? fmt::format("{}", band.coverage) : "null");
    fmt::print(out, "  \"band_basis\": {},\n", json_string(band.basis));
  }
  if (run.runtime) write_json_runtime(out, *run.runtime, tl);
  fmt::print(out, "  \"tokens_per_s\": {:.3f},\n", tokens_per_s(w, step_time(run, tl)));
  fmt::print(out, "  \"tokens_per_s_per_chip\": {:.3f},\n",
             tokens_per_s_per_chip(w, step_time(run, tl), run.parallelism));
  fmt::print(out, "  \"regime\": \"{}\",\n", ops::regime_name(tl.regime));
  fmt::print(out, "  \"bound_by\": {},\n", json_string(tl.bound_by));
  fmt::print(out, "  \"bound_share\": {:.3f},\n", tl.bound_share);
  fmt::print(out, "  \"idle_gap_ns\": {},\n", format_ns(tl.idle_gap));
  fmt::print(out, "  \"idle_gap_ps\": {},\n", tl.idle_gap);
  fmt::print(out, "  \"idle_per_core_ns\": {},\n", format_ns(tl.idle_per_core));
  fmt::print(out, "  \"idle_per_core_ps\": {},\n", tl.idle_per_core);
  fmt::print(out, "  \"idle_share\": {:.3f},\n",
             tl.total == 0 ? 0.0 : static_cast<double>(tl.idle_per_core) / static_cast<double>(tl.total));
  fmt::print(out, "  \"hbm_bytes\": {},\n", tl.hbm_bytes);
  fmt::print(out, "  \"flops\": {},\n", tl.flops);
}

// run JSON's "energy" object, on a chip with an energy section.
void write_json_energy(std::ostream& out, const RunDescription& run, const ops::Timeline& tl) {
  if (const std::optional<RunEnergy> e = run_energy(run, tl)) {
    std::string engines;
    for (std::size_t i = 0; i < run.chip.engines.size(); ++i) {
      engines +=
          fmt::format("{}{}: {}", i ? ", " : "", json_string(run.chip.engines[i].name), tl.engine_energy_pj[i] * 1e-12);
    }
    fmt::print(out,
               "  \"energy\": {{\"total_j\": {}, \"deployment_j\": {}, \"dynamic_j\": {}, \"static_j\": {}, "
               "\"average_w\": {}, \"tdp_w\": {}, \"joules_per_token\": {}, \"tokens_per_joule\": {}, \"by_engine_j\": "
               "{{{}}}}},\n",
               e->total_pj * 1e-12, e->total_pj * 1e-12 * static_cast<double>(run.parallelism.chips()),
               e->dynamic_pj * 1e-12, e->static_pj * 1e-12, e->average_w,
               e->tdp_w ? fmt::format("{}", *e->tdp_w) : "null",
               e->joules_per_token ? fmt::format("{}", *e->joules_per_token) : "null",
               e->joules_per_token ? fmt::format("{}", 1.0 / *e->joules_per_token) : "null", engines);
  }
}

// run JSON's "kv_cache" object: the cache one chip keeps: bytes per token per layer in the mode
// and format (attention's cache plus DSA's indexer keys), and in all for its sequences, the
// context and every layer of the model: total = batch x kv_len x layers x bytes_per_token_per_layer.
void write_json_kv_cache(std::ostream& out, const RunDescription& run) {
  const models::Workload& w = run.workload;
  const std::uint64_t attention = models::kv_bytes_per_token_per_layer(run.model, w, run.parallelism.tp);
  const std::uint64_t indexer = models::indexer_bytes_per_token_per_layer(run.model);
  fmt::print(out,
             "  \"kv_cache\": {{\"bytes_per_token_per_layer\": {}, \"attention_bytes_per_token_per_layer\": {}, "
             "\"indexer_bytes_per_token_per_layer\": {}, \"total_bytes\": {}}},\n",
             attention + indexer, attention, indexer, run.footprint.kv_cache_bytes);
}

// run JSON's "kinds" array: one entry per op kind, busiest first.
void write_json_kinds(std::ostream& out, const RunDescription& run, const ops::Timeline& tl) {
  out << "  \"kinds\": [\n";
  const auto kinds = summarize_by_kind(tl);
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const KindSummary& k = kinds[i];
    fmt::print(
        out,
        "    {{\"kind\": \"{}\", \"ops\": {}, \"busy_ns\": {}, \"hbm_bytes\": {}, \"c2c_bytes\": {}, \"flops\": {}, "
        "\"regime\": \"{}\", \"bound_by\": {}{}}}{}\n",
        ops::kind_name(k.kind), k.ops, format_ns(k.busy), k.hbm_bytes, k.c2c_bytes, k.flops, ops::regime_name(k.regime),
        json_string(k.bound_by), energy_field(run.chip, k.energy_pj), i + 1 < kinds.size() ? "," : "");
  }
  out << "  ],\n";
}

// run JSON's "ops" array: one entry per op, in emission order.
void write_json_ops(std::ostream& out, const RunDescription& run, const ops::Timeline& tl) {
  out << "  \"ops\": [\n";
  for (std::size_t i = 0; i < tl.ops.size(); ++i) {
    const ops::OpTiming& t = tl.ops[i];
    fmt::print(
        out,
        "    {{\"id\": {}, \"name\": {}, \"layer\": {}, \"kind\": \"{}\", \"shape\": {}, \"engines\": {}, "
        "\"op_start_ns\": {}, \"op_end_ns\": {}, \"op_start_ps\": {}, \"op_end_ps\": {}, \"hbm_bytes\": {}, "
        "\"unique_bytes\": {}, \"c2c_bytes\": {}, \"flops\": {}, \"kv_bytes\": {}, \"peak_lmem_bytes\": {}, "
        "\"roofline_ns\": {:.3f}, \"regime\": \"{}\", \"bound_by\": {}, \"bound_share\": {:.3f}, \"idle_gap_ns\": "
        "{}, \"idle_gap_ps\": {}{}}}{}\n",
        t.id, json_string(t.name), layer_text(t.layer), ops::kind_name(t.kind), json_string(t.shape),
        json_string(t.engines), format_ns(t.start), format_ns(t.end), t.start, t.end, t.hbm_bytes, t.unique_bytes,
        t.c2c_bytes, t.flops, t.kv_bytes, t.peak_lmem_bytes, t.roofline_ns, ops::regime_name(t.regime),
        json_string(t.bound_by), t.bound_share, format_ns(t.idle_gap), t.idle_gap, energy_field(run.chip, t.energy_pj),
        i + 1 < tl.ops.size() ? "," : "");
  }
  out << "  ],\n";
}

// run JSON's last keys: "commands" per engine and "replay".
void write_json_commands(std::ostream& out, const RunDescription& run, const ops::Timeline& tl) {
  fmt::print(out, "  \"commands\": {{{}}},\n", command_counts(run.chip, tl, true));
  // Layer replay (api/simulation.hpp): the commands the kernel ran and those derived; the one
  // line that differs between a replayed run and --no-replay.
  const std::uint64_t represented = std::accumulate(tl.commands.begin(), tl.commands.end(), std::uint64_t{0});
  fmt::print(out, "  \"replay\": {{\"simulated_commands\": {}, \"replayed_commands\": {}, \"not_replayed\": {}}}\n",
             tl.simulated_commands, represented - tl.simulated_commands,
             tl.replay_note.empty() ? std::string("null") : json_string(tl.replay_note));
}

}  // namespace

void write_table(std::ostream& out, const RunDescription& run, const ops::Timeline& tl) {
  write_table_title(out, run);
  write_table_settings(out, run);
  out << '\n';
  if (run.scope == Scope::step) {
    write_kind_rows(out, tl);
  } else {
    write_op_rows(out, tl);
  }
  out << '\n';
  write_table_totals(out, run, tl);
  write_table_energy(out, run, tl);
  write_table_resources(out, run, tl);
}

void write_json(std::ostream& out, const RunDescription& run, const ops::Timeline& tl) {
  out << "{\n";
  write_json_identity(out, run);
  write_json_workload(out, run);
  write_json_totals(out, run, tl);
  write_json_energy(out, run, tl);
  write_json_kv_cache(out, run);
  write_json_kinds(out, run, tl);
  write_json_ops(out, run, tl);
  write_json_commands(out, run, tl);
  out << "}\n";
}

}  // namespace api
