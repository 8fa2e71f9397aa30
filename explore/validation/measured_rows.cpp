#include "explore/validation/measured_rows.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "g5sim/g5sim.hpp"
#include "g5sim/run_options.hpp"
#include "g5sim/serve.hpp"
#include "hw/config_error.hpp"
#include "hw/input_file.hpp"
#include "hw/number_text.hpp"
#include "models/weight_format.hpp"

namespace explore::validation {

namespace {

constexpr std::size_t kMaxRows = 100000;

const std::vector<std::string> kMetricNames{
    "step_ms", "first_token_s", "tokens_per_s", "kernel_us",           "tflops",        "op_us", "ttft_ms",
    "tpot_ms", "itl_ms",        "e2e_ms",       "output_tokens_per_s", "requests_per_s"};
const std::vector<std::string> kWorkloadNames{"step", "block", "matmul", "fa2", "serve"};
const std::vector<std::string> kStats{"p50", "mean", "p90", "p99"};

// Option keys each workload takes, and which of them are whole numbers (with their ranges).
struct OptionRule {
  std::string key;
  std::uint64_t lo = 0, hi = 0;  ///< hi == 0: a word, not a number
};
const std::vector<OptionRule>& rules_of(WorkloadKind k) {
  // A step or block row takes the run options the table marks for validation, and `op` (which
  // op's interval an op_us metric reads).
  static const std::vector<OptionRule> step = [] {
    std::vector<OptionRule> rules;
    for (const g5sim::RunOption& o : g5sim::run_options()) {
      if ((o.takes & g5sim::kValidation) == 0) continue;
      rules.push_back(o.type == g5sim::OptionType::count ? OptionRule{o.name, o.min, o.max} : OptionRule{o.name});
    }
    rules.push_back({"op"});
    return rules;
  }();
  static const std::vector<OptionRule> matmul{
      {"m", 1, std::uint64_t{1} << 24}, {"n", 1, std::uint64_t{1} << 24}, {"k", 1, std::uint64_t{1} << 24}, {"dtype"}};
  // A serve row takes the run options `g5sim serve` takes for every step and the table marks for
  // validation, the serve's knobs (g5sim/knobs.hpp: the kServeItem rows) and
  // `stat` (which statistic a latency metric reads).
  static const std::vector<OptionRule> serve = [] {
    std::vector<OptionRule> rules;
    for (const g5sim::RunOption& o : g5sim::run_options()) {
      if ((o.takes & g5sim::kValidation) == 0 || (o.takes & g5sim::kServe) == 0) continue;
      rules.push_back(o.type == g5sim::OptionType::count ? OptionRule{o.name, o.min, o.max} : OptionRule{o.name});
    }
    for (const g5sim::Knob& knob : g5sim::serve_knobs()) {
      if (knob.takes_in(g5sim::kServeItem)) rules.push_back({knob.name});
    }
    rules.push_back({"stat"});
    return rules;
  }();
  static const std::vector<OptionRule> fa2{{"heads", 1, 4096},  {"kv_heads", 1, 4096}, {"qk_dim", 1, 65536},
                                           {"v_dim", 1, 65536}, {"shared_kv", 0, 1},   {"causal", 0, 1}};
  switch (k) {
    case WorkloadKind::step:
    case WorkloadKind::block: return step;
    case WorkloadKind::matmul: return matmul;
    case WorkloadKind::fa2: return fa2;
    case WorkloadKind::serve: return serve;
  }
  return step;
}

// One record of RFC 4180 CSV starting at `pos` (quoted fields may hold commas, doubled quotes and
// line breaks); advances `pos` and `line` past it.
std::vector<std::string> read_record(const std::string& text, std::size_t& pos, int& line, const std::string& source) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  const int start_line = line;
  while (pos < text.size()) {
    const char c = text[pos++];
    if (quoted) {
      if (c == '"') {
        if (pos < text.size() && text[pos] == '"') {
          fields.back() += '"';
          ++pos;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        fields.back() += c;
      }
    } else if (c == '"' && fields.back().empty()) {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c == '\n') {
      ++line;
      break;
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  if (quoted) throw hw::ConfigError(fmt::format("{}:{}: a quoted field is not closed", source, start_line));
  return fields;
}

class RowReader {
 public:
  RowReader(const std::vector<std::string>& cells, const std::string& source, int line)
      : cells_(cells), source_(source), line_(line) {}

  const std::string& source() const { return source_; }
  [[noreturn]] void fail(const std::string& column, const std::string& message) const {
    throw hw::ConfigError(fmt::format("{}:{}: column '{}': {}", source_, line_, column, message),
                          hw::ErrorSite{source_, column, line_, 0});
  }
  const std::string& text(const std::string& column) const {
    const auto& names = measured_columns();
    return cells_[static_cast<std::size_t>(std::find(names.begin(), names.end(), column) - names.begin())];
  }
  std::string required(const std::string& column) const {
    if (text(column).empty()) fail(column, "required");
    return text(column);
  }
  std::optional<std::uint64_t> count(const std::string& column, std::uint64_t lo, std::uint64_t hi) const {
    const std::string& t = text(column);
    if (t.empty()) return std::nullopt;
    return parse_count(column, t, lo, hi);
  }
  std::uint64_t parse_count(const std::string& what, const std::string& t, std::uint64_t lo, std::uint64_t hi) const {
    const std::optional<std::uint64_t> v = hw::read_whole_number(t);
    if (!v || *v < lo || *v > hi) fail(what, hw::whole_number_expected(t, lo, hi));
    return *v;
  }
  std::string one_of(const std::string& column, const std::vector<std::string>& allowed, bool optional) const {
    const std::string& t = text(column);
    if (t.empty() && optional) return t;
    if (std::find(allowed.begin(), allowed.end(), t) == allowed.end()) {
      fail(column, fmt::format("expected one of {}, got '{}'", fmt::join(allowed, ", "), t));
    }
    return t;
  }

 private:
  const std::vector<std::string>& cells_;
  const std::string& source_;
  int line_;
};

std::map<std::string, std::string> read_options(const RowReader& r, WorkloadKind kind) {
  std::map<std::string, std::string> options;
  const std::string& text = r.text("options");
  const auto& rules = rules_of(kind);
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    const std::size_t end = std::min(text.find(' ', i), text.size());
    const std::string item = text.substr(i, end - i);
    i = end;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      r.fail("options", fmt::format("expected key=value items separated by spaces, got '{}'", item));
    }
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    const auto rule = std::find_if(rules.begin(), rules.end(), [&](const OptionRule& o) { return o.key == key; });
    if (rule == rules.end()) {
      std::vector<std::string> keys;
      for (const OptionRule& o : rules) keys.push_back(o.key);
      r.fail("options",
             fmt::format("'{}' is not an option of a {} row; valid: {}", key, name_of(kind), fmt::join(keys, ", ")));
    }
    if (rule->hi != 0) r.parse_count("options", value, rule->lo, rule->hi);
    if (!options.emplace(key, value).second) r.fail("options", fmt::format("'{}' given twice", key));
  }
  return options;
}

// A length that names a histogram file names it relative to the table's folder (as a chip or
// model path does); numbers and ranges are kept.
std::string length_path(const std::string& text, const std::string& table) {
  if (text.find_first_not_of("0123456789:") == std::string::npos) return text;
  const std::filesystem::path p(text);
  const std::filesystem::path dir = std::filesystem::path(table).parent_path();
  return p.is_absolute() || dir.empty() ? text : (dir / p).string();
}

// A serve row's load and engine, checked now as `g5sim serve` checks them (its keywords, one
// source of requests, both lengths, MTP's pair), so that a bad row is an error at its line.
void check_serve_options(const RowReader& r, std::map<std::string, std::string>& options) {
  g5sim::ServeSettings settings;
  for (auto& [key, value] : options) {
    if (key == "input_len" || key == "output_len") value = length_path(value, r.source());
    if (key == "stat") {
      if (std::find(kStats.begin(), kStats.end(), value) == kStats.end()) {
        r.fail("options", fmt::format("stat: expected one of {}, got '{}'", fmt::join(kStats, ", "), value));
      }
      continue;
    }
    const g5sim::Knob* knob = settings.find(key);
    if (knob == nullptr || !knob->takes_in(g5sim::kServeItem)) continue;  // a run option, checked at its run
    try {
      settings.set_text(key, value);
    } catch (const g5sim::ConfigError& e) {
      r.fail("options", fmt::format("{}: {}", key, e.what()));
    }
  }
  if (!settings.optional_decimal("rate") && settings.count("concurrency") == 0) {
    r.fail("options",
           "a serve row needs its load: rate=R (requests/s) or concurrency=N, with input_len= and output_len=");
  }
  try {
    g5sim::check_pairs(settings);
    // The load's shape checked on one request (its count is checked already): a table of many
    // large loads costs nothing to read.
    g5sim::ServeSettings one = settings;
    one.set("requests", std::uint64_t{1});
    g5sim::requests_of(one);
  } catch (const g5sim::ConfigError& e) {
    r.fail("options", e.source().empty() && !e.field().empty() ? fmt::format("{}: {}", e.field(), e.what())
                                                               : std::string(e.what()));
  }
}

MeasuredRow read_row(const RowReader& r, int line) {
  MeasuredRow row;
  row.line = line;
  row.id = r.required("id");
  row.hardware = r.required("hardware");
  row.chip = r.required("chip");
  row.workload = *workload_named(r.one_of("workload", kWorkloadNames, false));
  const bool model_run = row.workload == WorkloadKind::step || row.workload == WorkloadKind::block;
  const bool serve = row.workload == WorkloadKind::serve;
  row.model = r.text("model");
  row.phase = r.one_of("phase", {"decode", "prefill"}, !model_run);
  if ((model_run || serve) && row.model.empty()) r.fail("model", "required for a step, block or serve row");
  if (serve) {
    // The load makes a serve's sequences, their lengths and both phases.
    for (const char* column : {"phase", "batch", "ctx", "q_len", "cores"}) {
      if (!r.text(column).empty()) r.fail(column, "a serve row's load (options) makes its sequences: leave it empty");
    }
  } else if (!model_run && (!row.model.empty() || !row.phase.empty())) {
    r.fail(row.model.empty() ? "phase" : "model", "an op row takes its shape from options, not from a model");
  }
  row.batch = r.count("batch", 1, std::uint64_t{1} << 20).value_or(1);
  row.ctx = r.count("ctx", 1, std::uint64_t{1} << 24).value_or(0);
  if (row.workload != WorkloadKind::matmul && !serve && row.ctx == 0) r.fail("ctx", "required (kv_len)");
  row.q_len = r.count("q_len", 1, std::uint64_t{1} << 24);
  row.weight_dtype = r.one_of("weight_dtype", models::weight_dtype_names(), true);
  row.weight_group = r.count("weight_group", 0, std::uint64_t{1} << 20);
  row.kv_dtype = r.one_of("kv_dtype", {"bf16", "fp8", "fp8-flashmla"}, true);
  row.tp = r.count("tp", 1, 65536);
  row.ep = r.count("ep", 1, 65536);
  row.dp = r.count("dp", 1, 65536);
  row.cores = r.count("cores", 1, 4096);
  row.options = read_options(r, row.workload);
  if (serve) check_serve_options(r, row.options);
  const std::string metric = r.one_of("metric", kMetricNames, false);
  row.metric = static_cast<Metric>(std::find(kMetricNames.begin(), kMetricNames.end(), metric) - kMetricNames.begin());
  if (serve != is_serving(row.metric)) {
    r.fail("metric", serve ? "a serve row reads ttft_ms, tpot_ms, itl_ms, e2e_ms, output_tokens_per_s or "
                             "requests_per_s"
                           : fmt::format("{} is a serving metric (workload serve)", metric));
  }
  if (row.options.count("stat") && !takes_stat(row.metric)) {
    r.fail("options", fmt::format("stat= picks a latency's statistic; {} has none", metric));
  }
  if (row.metric == Metric::op_us && (!model_run || !row.options.count("op"))) {
    r.fail("metric", "op_us needs a step or block row with op=NAME in options");
  }
  if (row.metric == Metric::first_token_s && row.phase != "prefill") {
    r.fail("metric", "first_token_s is the time of a prefill row");
  }
  const std::string& value = r.required("measured");
  const std::optional<double> v = hw::read_decimal_number(value);
  if (!v || !(*v > 0) || hw::is_subnormal(*v)) {
    r.fail("measured", hw::decimal_number_expected(value, 0, std::numeric_limits<double>::infinity(), true));
  }
  row.measured = *v;
  row.kind = r.one_of("kind", {"M", "V", "S", "D", "U"}, false);
  row.source = r.required("source");
  row.note = r.text("note");
  row.exclude = r.text("exclude");
  return row;
}

}  // namespace

const std::vector<std::string>& measured_columns() {
  static const std::vector<std::string> columns{
      "id",           "hardware",     "chip",     "model", "phase",  "batch", "ctx",    "q_len",
      "weight_dtype", "weight_group", "kv_dtype", "tp",    "ep",     "dp",    "cores",  "workload",
      "options",      "metric",       "measured", "kind",  "source", "note",  "exclude"};
  return columns;
}

bool is_serving(Metric m) { return m >= Metric::ttft_ms; }
bool takes_stat(Metric m) { return m >= Metric::ttft_ms && m <= Metric::e2e_ms; }

std::string stat_of(const MeasuredRow& row) {
  const auto it = row.options.find("stat");
  return it == row.options.end() ? kStats.front() : it->second;
}

std::string name_of(Metric m) { return kMetricNames[static_cast<std::size_t>(m)]; }
std::string name_of(WorkloadKind k) { return kWorkloadNames[static_cast<std::size_t>(k)]; }
const std::vector<std::string>& workload_names() { return kWorkloadNames; }
std::optional<WorkloadKind> workload_named(const std::string& name) {
  const auto it = std::find(kWorkloadNames.begin(), kWorkloadNames.end(), name);
  if (it == kWorkloadNames.end()) return std::nullopt;
  return static_cast<WorkloadKind>(it - kWorkloadNames.begin());
}

MeasuredTable read_measured_file(const std::string& path) {
  return read_measured_text(hw::read_input_file(path), path);
}

MeasuredTable read_measured_text(const std::string& text, const std::string& source) {
  MeasuredTable table;
  table.path = source;
  std::size_t pos = 0;
  int line = 1;
  const auto& columns = measured_columns();
  const std::vector<std::string> header = read_record(text, pos, line, source);
  if (header != columns) {
    throw hw::ConfigError(fmt::format("{}:1: expected the header '{}'", source, fmt::join(columns, ",")),
                          hw::ErrorSite{source, "", 1, 0});
  }
  std::set<std::string> ids;
  while (pos < text.size()) {
    const int at = line;
    const std::vector<std::string> cells = read_record(text, pos, line, source);
    if (cells.size() == 1 && cells[0].empty()) continue;    // a blank line
    if (!cells[0].empty() && cells[0][0] == '#') continue;  // a comment line
    if (cells.size() != columns.size()) {
      throw hw::ConfigError(fmt::format("{}:{}: {} fields, expected {} ({})", source, at, cells.size(), columns.size(),
                                        fmt::join(columns, ",")),
                            hw::ErrorSite{source, "", at, 0});
    }
    if (table.rows.size() == kMaxRows) {
      throw hw::ConfigError(fmt::format("{}:{}: more than {} rows", source, at, kMaxRows));
    }
    MeasuredRow row = read_row(RowReader(cells, source, at), at);
    if (!ids.insert(row.id).second) {
      throw hw::ConfigError(fmt::format("{}:{}: column 'id': '{}' is used twice", source, at, row.id),
                            hw::ErrorSite{source, "id", at, 0});
    }
    table.rows.push_back(std::move(row));
  }
  if (table.rows.empty()) throw hw::ConfigError(fmt::format("{}: no rows", source));
  return table;
}

std::string measured_path_or_shipped(const std::string& path) {
  return path.empty() ? g5sim::data_dir() + "/validation/measured.csv" : path;
}

}  // namespace explore::validation
