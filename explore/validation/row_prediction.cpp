#include "explore/validation/row_prediction.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "api/op_run.hpp"
#include "api/result_state.hpp"
#include "g5sim/run_options.hpp"
#include "g5sim/serve.hpp"
#include "hw/config_error.hpp"
#include "hw/number_text.hpp"

namespace explore::validation {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::uint64_t option_count(const MeasuredRow& row, const std::string& key, std::uint64_t fallback) {
  const auto it = row.options.find(key);
  // Checked when the table was read (measured_rows.cpp): digits within the option's range.
  return it == row.options.end() ? fallback : hw::read_whole_number(it->second).value();
}

std::string option_text(const MeasuredRow& row, const std::string& key, const std::string& fallback) {
  const auto it = row.options.find(key);
  return it == row.options.end() ? fallback : it->second;
}

// The row's dtypes and sharding (its columns), as a step or a serve takes them.
void set_deployment(const MeasuredRow& row, g5sim::Request& r) {
  if (!row.kv_dtype.empty()) r.kv_dtype = row.kv_dtype;
  r.weight_dtype = row.weight_dtype;
  r.weight_group = row.weight_group;
  r.tp = row.tp;
  r.ep = row.ep;
  r.dp = row.dp;
}

g5sim::Request request_of(const MeasuredRow& row, std::uint64_t max_commands, const RowOverrides& overrides) {
  g5sim::Request r;
  r.scope = row.workload == WorkloadKind::step ? "step" : "block";
  r.phase = row.phase;
  r.batch = row.batch;
  r.ctx = row.ctx;
  r.q_len = row.q_len;
  set_deployment(row, r);
  if (!r.tp && !r.ep && !r.dp) r.tp = r.ep = r.dp = 1;  // a row states its sharding; none = one chip
  r.cores = row.cores;
  // The options column's run options (the table's kValidation rows), checked as the CLI checks them.
  for (const auto& [key, value] : row.options) {
    if (const g5sim::RunOption* o = g5sim::find_run_option(key); o && (o->takes & g5sim::kValidation)) {
      g5sim::set_option_text(r, *o, value);
    }
  }
  if (!overrides.runtime.empty()) r.runtime = overrides.runtime;
  r.max_commands = max_commands;
  return r;
}

double seconds(std::uint64_t ps) { return static_cast<double>(ps) * 1e-12; }

double metric_of_run(const MeasuredRow& row, const g5sim::Result& r) {
  const double t = seconds(r.step_ps);
  switch (row.metric) {
    case Metric::step_ms: return t * 1e3;
    case Metric::first_token_s: return t;
    case Metric::kernel_us: return t * 1e6;
    case Metric::tflops: return static_cast<double>(r.flops) / t / 1e12;
    case Metric::tokens_per_s:
      return static_cast<double>(r.batch) * static_cast<double>(r.q_len) / static_cast<double>(r.dp) / t;
    case Metric::op_us: {
      const std::string& name = row.options.at("op");
      double sum = 0;
      std::uint64_t count = 0;
      for (const g5sim::OpRecord& op : r.ops) {
        if (op.name != name) continue;
        sum += seconds(op.op_end_ps - op.op_start_ps);
        ++count;
      }
      if (count == 0) throw hw::ConfigError(fmt::format("the run has no op named '{}'", name));
      return sum / static_cast<double>(count) * 1e6;
    }
    default:  // a serving metric: the reader keeps them to serve rows
      throw hw::ConfigError(fmt::format("metric {} is a serve row's", name_of(row.metric)));
  }
}

double statistic(const MeasuredRow& row, const g5sim::Distribution& d) {
  const std::string stat = stat_of(row);
  return stat == "mean" ? d.mean : stat == "p90" ? d.p90 : stat == "p99" ? d.p99 : d.p50;
}

double metric_of_serve(const MeasuredRow& row, const g5sim::ServeSummary& s) {
  switch (row.metric) {
    case Metric::ttft_ms: return statistic(row, s.ttft_ms);
    case Metric::tpot_ms:
      if (s.tpot_ms.count == 0) throw hw::ConfigError("no request has a TPOT (each has one output token)");
      return statistic(row, s.tpot_ms);
    case Metric::itl_ms:
      if (s.itl_ms.count == 0) throw hw::ConfigError("no request has an inter-token gap (each has one output token)");
      return statistic(row, s.itl_ms);
    case Metric::e2e_ms: return statistic(row, s.e2e_s) * 1e3;
    case Metric::output_tokens_per_s: return s.output_tokens_per_s;
    case Metric::requests_per_s: return s.requests_per_s;
    default: throw hw::ConfigError(fmt::format("metric {} does not apply to a serve row", name_of(row.metric)));
  }
}

// A serve row: the step's run options from the row's columns and options, the load and the engine
// from the serve's knobs (g5sim/knobs.hpp), on one thread (validate runs rows in parallel).
g5sim::ServeReport serve_row(const MeasuredRow& row, const g5sim::Chip& chip, const g5sim::Model& model,
                             std::uint64_t max_commands, const RowOverrides& overrides) {
  g5sim::Request base;
  set_deployment(row, base);  // none given: serve's own choice of sharding, as `g5sim serve`'s
  g5sim::ServeSettings settings;
  for (const auto& [key, value] : row.options) {
    if (const g5sim::Knob* k = settings.find(key); k && k->takes_in(g5sim::kServeItem)) {
      settings.set_text(key, value);
    } else if (const g5sim::RunOption* o = g5sim::find_run_option(key); o && (o->takes & g5sim::kServe)) {
      g5sim::set_option_text(base, *o, value);
    }
  }
  if (!overrides.runtime.empty()) base.runtime = overrides.runtime;
  base.max_commands = max_commands;
  settings.set("jobs", std::uint64_t{1});
  g5sim::ServeControls controls;
  controls.shared_steps = overrides.shared_steps;
  return g5sim::serve(chip, model, base, settings, controls);
}

double metric_of_op(const MeasuredRow& row, const api::OpRunResult& r) {
  const double t = seconds(r.total_ps);
  switch (row.metric) {
    case Metric::kernel_us: return t * 1e6;
    case Metric::tflops: return static_cast<double>(r.flops) / t / 1e12;
    case Metric::step_ms: return t * 1e3;
    default: throw hw::ConfigError(fmt::format("metric {} does not apply to an op row", name_of(row.metric)));
  }
}

}  // namespace

std::string config_stem(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (const char* tail : {".calibrated.yaml", ".yaml", ".yml", ".json"}) {
    if (ends_with(name, tail)) return name.substr(0, name.size() - std::string(tail).size());
  }
  return name;
}

ConfigResolver::ConfigResolver(std::string table_path, bool calibrated) : calibrated_(calibrated) {
  table_dir_ = std::filesystem::path(table_path).parent_path().string();
}

std::string ConfigResolver::resolve(const std::string& cell, const std::string& folder,
                                    const std::string& extension) const {
  const bool path = cell.find('/') != std::string::npos || ends_with(cell, ".yaml") || ends_with(cell, ".json");
  if (path) {
    const std::filesystem::path p(cell);
    return p.is_absolute() || table_dir_.empty() ? cell : (std::filesystem::path(table_dir_) / p).string();
  }
  const std::filesystem::path dir = std::filesystem::path(g5sim::data_dir()) / "configs" / folder;
  if (calibrated_) {
    const std::filesystem::path tuned = dir / (cell + ".calibrated" + extension);
    if (std::filesystem::exists(tuned)) return tuned.string();
  }
  const std::filesystem::path plain = dir / (cell + extension);
  if (!std::filesystem::exists(plain)) {
    throw hw::ConfigError(fmt::format("no {} config '{}' ({} does not exist)", folder == "chips" ? "chip" : "model",
                                      cell, plain.string()));
  }
  return plain.string();
}

std::string ConfigResolver::chip_path(const std::string& cell) const { return resolve(cell, "chips", ".yaml"); }
std::string ConfigResolver::model_path(const std::string& cell) const { return resolve(cell, "models", ".yaml"); }

g5sim::Chip ConfigResolver::chip(const std::string& cell) {
  for (const auto& [name, chip] : chips_) {
    if (name == cell) return chip;
  }
  chips_.emplace_back(cell, g5sim::Chip::from_file(chip_path(cell)));
  return chips_.back().second;
}

g5sim::Model ConfigResolver::model(const std::string& cell) {
  for (const auto& [name, model] : models_) {
    if (name == cell) return model;
  }
  models_.emplace_back(cell, g5sim::Model::from_file(model_path(cell)));
  return models_.back().second;
}

std::string run_key(const MeasuredRow& row) {
  std::string key = fmt::format(
      "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", row.chip, row.model, row.phase, row.batch, row.ctx,
      row.q_len.value_or(0), row.weight_dtype, row.weight_group.value_or(~0ull), row.kv_dtype, row.tp.value_or(0),
      row.ep.value_or(0), row.dp.value_or(0), row.cores.value_or(0), name_of(row.workload), row.q_len.has_value());
  for (const auto& [k, v] : row.options) {
    // Which op or statistic a metric reads does not change the run.
    if (k != "op" && k != "stat") key += "|" + k + "=" + v;
  }
  return key;
}

std::vector<Prediction> predict_all(const std::vector<const MeasuredRow*>& rows, const g5sim::Chip& chip,
                                    const g5sim::Model* model, std::uint64_t max_commands,
                                    const RowOverrides& overrides) {
  std::vector<Prediction> out(rows.size());
  if (rows.empty()) return out;
  const MeasuredRow& row = *rows.front();
  // One run; each row reads its metric off it. A metric that does not apply skips that row only.
  auto each = [&](auto&& metric, std::uint64_t commands) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      out[i].commands = commands;
      try {
        out[i].value = metric(*rows[i]);
      } catch (const hw::ConfigError& e) {
        out[i].skipped = e.what();
      }
    }
  };
  try {
    const std::uint32_t cores = static_cast<std::uint32_t>(row.cores.value_or(0));
    switch (row.workload) {
      case WorkloadKind::step:
      case WorkloadKind::block: {
        const g5sim::Result r = g5sim::simulate(chip, *model, request_of(row, max_commands, overrides));
        each([&](const MeasuredRow& x) { return metric_of_run(x, r); }, r.command_count);
        break;
      }
      case WorkloadKind::matmul: {
        const api::MatmulRequest m =
            api::matmul_request(option_count(row, "m", 0), option_count(row, "n", 0), option_count(row, "k", 0),
                                option_text(row, "dtype", "bf16"), "dtype");
        if (m.m == 0 || m.n == 0 || m.k == 0) throw hw::ConfigError("a matmul row needs m=, n= and k= in options");
        const api::OpRunResult r = api::run_matmul(chip.data().chip, m, cores);
        each([&](const MeasuredRow& x) { return metric_of_op(x, r); }, r.commands);
        break;
      }
      case WorkloadKind::serve: {
        const g5sim::ServeReport r = serve_row(row, chip, *model, max_commands, overrides);
        each([&](const MeasuredRow& x) { return metric_of_serve(x, r.summary); }, r.simulated_commands);
        break;
      }
      case WorkloadKind::fa2: {
        api::Fa2Request f;
        f.batch = row.batch;
        f.kv_len = row.ctx;
        f.q_len = row.q_len.value_or(1);
        f.heads = option_count(row, "heads", 0);
        f.kv_heads = option_count(row, "kv_heads", 1);
        f.qk_dim = option_count(row, "qk_dim", 0);
        f.v_dim = option_count(row, "v_dim", 0);
        f.shared_kv = option_count(row, "shared_kv", 0) == 1;
        f.causal = option_count(row, "causal", 0) == 1;
        if (f.heads == 0 || f.qk_dim == 0 || f.v_dim == 0) {
          throw hw::ConfigError("an fa2 row needs heads=, qk_dim= and v_dim= in options");
        }
        const api::OpRunResult r = api::run_fa2(chip.data().chip, f, cores);
        each([&](const MeasuredRow& x) { return metric_of_op(x, r); }, r.commands);
        break;
      }
    }
  } catch (const hw::ConfigError& e) {
    for (Prediction& p : out) p = Prediction{std::nullopt, e.what(), 0};
  } catch (const g5sim::ConfigError& e) {
    for (Prediction& p : out) p = Prediction{std::nullopt, e.what(), 0};
  }
  return out;
}

Prediction predict(const MeasuredRow& row, const g5sim::Chip& chip, const g5sim::Model* model,
                   std::uint64_t max_commands, const RowOverrides& overrides) {
  return predict_all({&row}, chip, model, max_commands, overrides).front();
}

hw::BandKind band_kind_of(const MeasuredRow& row) {
  if (row.workload == WorkloadKind::matmul || row.workload == WorkloadKind::fa2 || row.metric == Metric::op_us) {
    return hw::BandKind::kernel;
  }
  if (row.workload == WorkloadKind::block) return hw::BandKind::block;
  if (row.workload == WorkloadKind::serve) {
    // A serve's metrics: the first token, the tokens after it (their mean gap, every gap, a whole
    // request's span), the rates.
    switch (row.metric) {
      case Metric::ttft_ms: return hw::BandKind::ttft;
      case Metric::tpot_ms:
      case Metric::itl_ms:
      case Metric::e2e_ms: return hw::BandKind::tpot;
      default: return hw::BandKind::throughput;
    }
  }
  return row.phase == "prefill" ? hw::BandKind::prefill : hw::BandKind::decode;
}

double time_ratio(const MeasuredRow& row, double predicted) {
  const bool rate = row.metric == Metric::tokens_per_s || row.metric == Metric::tflops ||
                    row.metric == Metric::output_tokens_per_s || row.metric == Metric::requests_per_s;
  return rate ? row.measured / predicted : predicted / row.measured;
}

}  // namespace explore::validation
