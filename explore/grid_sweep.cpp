#include "explore/grid_sweep.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "api/csv_cell.hpp"
#include "api/json_text.hpp"
#include "api/report.hpp"
#include "g5sim/reports.hpp"
#include "g5sim/run_options.hpp"
#include "g5sim/runtime.hpp"
#include "hw/config_error.hpp"
#include "hw/input_file.hpp"
#include "hw/number_text.hpp"
#include "hw/sha256.hpp"

namespace explore {

using api::csv_cell;
namespace {

using api::format_ns;

// Over all layers: the history read's bytes and time, fa2's time.
struct AttentionSums {
  std::uint64_t read_bytes = 0, read_ps = 0, fa2_ps = 0;
};

AttentionSums attention_sums(const g5sim::Result& r) {
  AttentionSums a;
  for (const g5sim::OpRecord& op : r.ops) {
    if (op.kind == "kv_cache_read") {
      a.read_bytes += op.hbm_bytes;
      a.read_ps += op.op_end_ps - op.op_start_ps;
    }
    if (op.kind == "fa2") a.fa2_ps += op.op_end_ps - op.op_start_ps;
  }
  return a;
}

// The columns after `point`, as (name, value, is_text) for both formats.
struct Field {
  std::string name;
  std::string value;
  bool text;
};

// With head-split columns, a point without a head-split run (prefill: nothing to split) has
// empty cells there (JSON null). A failed row has its known identity and empty figures.
std::vector<Field> fields(const SweepRow& row, const SweepColumns& columns) {
  static const g5sim::Result none;
  const g5sim::Result& r = row.result ? *row.result : none;
  const g5sim::Result* head_split = row.head_split;
  const AttentionSums a = attention_sums(r);
  std::vector<Field> f;
  for (g5sim::IdentityField& id : g5sim::run_identity(r)) {
    std::string value = id.name == "chip" ? row.chip_label : std::move(id.value);
    if (!row.result && id.name != "chip") {
      value.clear();
      for (const auto& [name, known] : row.identity) {
        if (name == id.name) value = known;
      }
    }
    f.push_back({std::move(id.name), std::move(value), id.text});
  }
  const std::size_t figures = f.size();
  f.insert(f.end(), {
                        {"total_ns", format_ns(r.total_ps), false},
                        {"band_low_ns", r.has_band ? format_ns(r.band_low_ps) : "", false},
                        {"band_high_ns", r.has_band ? format_ns(r.band_high_ps) : "", false},
                        {"tokens_per_s", fmt::format("{:.3f}", r.tokens_per_s), false},
                        {"tokens_per_s_per_chip", fmt::format("{:.3f}", r.tokens_per_s_per_chip), false},
                        {"kv_cache_read_bytes", std::to_string(a.read_bytes), false},
                        {"kv_cache_read_ns", format_ns(a.read_ps), false},
                        {"fa2_ns", format_ns(a.fa2_ps), false},
                        {"regime", r.regime, true},
                        {"bound_by", r.bound_by, true},
                        {"fits", r.weight_bytes + r.kv_cache_bytes <= r.capacity_bytes ? "true" : "false", false},
                        {"bytes_per_chip", std::to_string(r.weight_bytes + r.kv_cache_bytes), false},
                    });
  if (columns.head_split) {
    f.push_back({"head_split_total_ns", head_split ? format_ns(head_split->total_ps) : "", false});
    f.push_back({"head_split_kv_cache_read_bytes",
                 head_split ? std::to_string(attention_sums(*head_split).read_bytes) : "", false});
  }
  if (!row.result) {
    for (std::size_t i = figures; i < f.size(); ++i) f[i].value.clear();
  }
  if (columns.error) f.push_back({"error", row.error, true});
  return f;
}

[[noreturn]] void merge_error(const std::string& path, std::size_t line, const std::string& what) {
  throw hw::ConfigError(fmt::format("{}:{}: {}", path, line, what));
}

}  // namespace

namespace {

// A list's length as a grid axis: an empty list is one point (the request's value).
std::uint64_t axis(std::size_t n) { return std::max<std::uint64_t>(1, n); }

}  // namespace

const std::vector<std::string>& grid_nesting() {
  static const std::vector<std::string> nesting = [] {
    std::vector<std::string> out;
    for (const g5sim::RunOption& o : g5sim::run_options()) {
      if ((o.takes & g5sim::kGridAxis) != 0 && o.name != "batch" && o.name != "ctx") out.push_back(o.name);
    }
    out.push_back("batch");
    return out;
  }();
  return nesting;
}

const GridAxis* SweepGrid::axis(const std::string& option) const {
  for (const GridAxis& a : axes) {
    if (a.option == option) return &a;
  }
  return nullptr;
}

void SweepGrid::set_axis(const std::string& option, std::vector<std::string> values) {
  const std::vector<std::string>& nesting = grid_nesting();
  const auto rank = [&](const std::string& name) {
    return std::find(nesting.begin(), nesting.end(), name) - nesting.begin();
  };
  if (rank(option) == static_cast<std::ptrdiff_t>(nesting.size())) {
    throw std::logic_error("sweep grid: " + option + " is not a grid axis");
  }
  axes.erase(std::remove_if(axes.begin(), axes.end(), [&](const GridAxis& a) { return a.option == option; }),
             axes.end());
  if (values.empty()) return;
  const auto at =
      std::find_if(axes.begin(), axes.end(), [&](const GridAxis& a) { return rank(a.option) > rank(option); });
  axes.insert(at, GridAxis{option, std::move(values)});
}

std::string SweepPoint::value(const std::string& option) const {
  for (const auto& [name, v] : settings) {
    if (name == option) return v;
  }
  return {};
}

std::string SweepPoint::describe() const {
  std::string out;
  for (const auto& [name, v] : settings) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name, v);
  if (ctx == 0) return out;  // the sequences come from a mix
  return out + fmt::format("{}ctx {}", out.empty() ? "" : ", ", ctx);
}

std::uint64_t grid_size(const SweepGrid& g) {
  std::uint64_t n = axis(g.contexts.size());  // no contexts (a mix): one
  std::vector<std::size_t> lengths{g.chips.size(), g.models.size()};
  for (const GridAxis& a : g.axes) lengths.push_back(a.values.size());
  for (const std::size_t len : lengths) {
    // n * axis <= kMaxGridPoints, checked by division so that it cannot wrap.
    if (axis(len) > kMaxGridPoints / std::max<std::uint64_t>(n, 1)) {
      throw hw::ConfigError(
          fmt::format("sweep: the grid has more than {} points (the product of its lists' lengths)", kMaxGridPoints));
    }
    n *= axis(len);
  }
  return n;
}

SweepPoint grid_point(const SweepGrid& g, std::uint64_t index) {
  // Mixed radix, the context fastest: index = ((chip M + model) A1 + axis 1) ... An + axis n) C + ctx.
  SweepPoint p;
  p.index = index;
  std::uint64_t rest = index;
  auto digit = [&rest](std::size_t len) {
    const std::uint64_t d = rest % axis(len);
    rest /= axis(len);
    return static_cast<std::size_t>(d);
  };
  const std::size_t c = digit(g.contexts.size());
  p.ctx = g.contexts.empty() ? 0 : g.contexts.at(c);  // 0: the sequences come from a mix
  p.settings.resize(g.axes.size());
  for (std::size_t a = g.axes.size(); a-- > 0;) {
    p.settings[a] = {g.axes[a].option, g.axes[a].values[digit(g.axes[a].values.size())]};
  }
  p.model = digit(g.models.size());
  p.chip = digit(g.chips.size());
  return p;
}

std::vector<SweepPoint> grid_points(const SweepGrid& g, std::uint64_t shard, std::uint64_t shards) {
  if (shards == 0 || shard >= shards)
    throw hw::ConfigError(fmt::format("--shard {}/{}: need 0 <= I < N", shard, shards));
  std::vector<SweepPoint> points;
  for (std::uint64_t i = shard, n = grid_size(g); i < n; i += shards) points.push_back(grid_point(g, i));
  return points;
}

g5sim::Request point_request(const g5sim::Request& base, const SweepPoint& p) {
  g5sim::Request r = base;
  for (const auto& [option, value] : p.settings) g5sim::set_option_text(r, *g5sim::find_run_option(option), value);
  if (p.ctx != 0) r.ctx = p.ctx;
  return r;
}

void check_grid_values(const SweepGrid& g) {
  for (const GridAxis& a : g.axes) {
    const g5sim::RunOption& option = *g5sim::find_run_option(a.option);
    for (const std::string& v : a.values) {
      g5sim::Request r;
      g5sim::set_option_text(r, option, v);
      // A word the library checks only when it runs (a format, a mode): the run's own check.
      if (option.type == g5sim::OptionType::text && !option.choices.empty()) {
        const std::string list = "," + option.choices + ",";
        if (list.find("," + v + ",") == std::string::npos) {
          throw g5sim::ConfigError(fmt::format("expected one of {}, got '{}'", option.choices, v), "", option.name, 0,
                                   0);
        }
      }
    }
  }
}

std::string GridHeader::line() const {
  return fmt::format("# g5sim {} sweep grid {} points sha256 {} shard {}/{}", version, points, sha256, shard, shards);
}

GridHeader GridHeader::parse(const std::string& line, const std::string& path) {
  std::istringstream in(line);
  std::string hash, g5sim, sweep, grid, points_word, sha_word, shard_word, shard_text, extra;
  GridHeader h;
  const bool read = static_cast<bool>(in >> hash >> g5sim >> h.version >> sweep >> grid >> h.points >> points_word >>
                                      sha_word >> h.sha256 >> shard_word >> shard_text);
  const auto slash = shard_text.find('/');
  bool shard_ok = slash != std::string::npos;
  if (shard_ok) {
    const std::optional<std::uint64_t> shard = hw::read_whole_number(std::string_view(shard_text).substr(0, slash));
    const std::optional<std::uint64_t> shards = hw::read_whole_number(std::string_view(shard_text).substr(slash + 1));
    shard_ok = shard && shards && *shards > 0 && *shard < *shards;
    if (shard_ok) h.shard = *shard, h.shards = *shards;
  }
  if (!read || hash != "#" || g5sim != "g5sim" || sweep != "sweep" || grid != "grid" || points_word != "points" ||
      sha_word != "sha256" || h.sha256.size() != 64 || shard_word != "shard" || !shard_ok || (in >> extra)) {
    merge_error(path, 1,
                "not a g5sim sweep CSV: its first line is not '# g5sim VERSION sweep grid POINTS points sha256 HEX "
                "shard I/N' (a file of g5sim sweep --csv)");
  }
  return h;
}

std::string grid_fingerprint(const SweepGrid& grid, const std::vector<g5sim::Chip>& chips,
                             const std::vector<g5sim::Model>& models, const g5sim::Request& base, bool head_split) {
  std::string text;
  for (const g5sim::Chip& c : chips) text += "chip " + c.sha256() + "\n";
  for (const g5sim::Model& m : models) text += "model " + m.sha256() + "\n";
  for (const GridAxis& a : grid.axes) text += fmt::format("axis {} {}\n", a.option, fmt::join(a.values, ","));
  text += fmt::format("ctx {}\n", fmt::join(grid.contexts, ","));
  for (const g5sim::RunOption& o : g5sim::run_options()) {
    if (grid.axis(o.name) != nullptr || o.name == "ctx") continue;
    std::string value = g5sim::option_text(g5sim::get_option(base, o));
    if (o.name == "runtime") {
      // The runtime's text, as a chip's: the same name may hold other numbers.
      if (!value.empty() && value != "none") text += "runtime " + g5sim::runtime_named(value).sha256 + "\n";
      continue;
    }
    // Not given: the value a run without a runtime takes (grids of before the runtime keep their hash).
    if (value.empty() && !o.fallback.empty()) value = o.fallback;
    text += fmt::format("option {} {}\n", o.name, value);
  }
  text += fmt::format("head_split {}\n", head_split);
  return hw::sha256_hex(text);
}

std::vector<std::string> chip_labels(const std::vector<g5sim::Chip>& chips) {
  std::vector<std::string> labels;
  for (const g5sim::Chip& c : chips) {
    bool shared = false, same_stem = false;
    const std::string stem = std::filesystem::path(c.source()).stem().string();
    for (const g5sim::Chip& other : chips) {
      if (&other == &c || other.name() != c.name()) continue;
      shared = true;
      same_stem = same_stem || std::filesystem::path(other.source()).stem().string() == stem;
    }
    labels.push_back(!shared ? c.name() : fmt::format("{} ({})", c.name(), same_stem ? c.source() : stem));
  }
  return labels;
}

std::vector<std::pair<std::string, std::string>> failed_point_identity(const SweepPoint& point,
                                                                       const g5sim::Request& base,
                                                                       const g5sim::Chip& chip,
                                                                       const g5sim::Model& model) {
  g5sim::Request request = base;
  try {
    request = point_request(base, point);
  } catch (const g5sim::ConfigError&) {
    // the point's own value is what failed: the columns say what the grid gave
  }
  std::vector<std::pair<std::string, std::string>> out{{"model", model.name()}};
  for (const g5sim::RunOption& o : g5sim::run_options()) {
    if (!o.column) continue;
    const std::string given = point.value(o.name);
    out.emplace_back(o.name, !given.empty() ? given : g5sim::option_text(g5sim::get_option(request, o)));
  }
  out.insert(out.end(), {{"chip_source", g5sim::source_label(chip.source())},
                         {"chip_sha256", chip.sha256()},
                         {"model_source", g5sim::source_label(model.source())},
                         {"model_sha256", model.sha256()}});
  return out;
}

// The columns: the report table's (explore/explore_reports.cpp), which the row writer's fields must
// match name for name: a field without its row is a bug, caught by the first sweep that writes.
void write_sweep_csv_header(std::ostream& out, const GridHeader& grid, const SweepColumns& columns) {
  std::vector<std::string> present;
  if (columns.head_split) present.emplace_back("--head-split");
  if (columns.error) present.emplace_back("--keep-going");
  const g5sim::Report& report = g5sim::report_named(g5sim::explore_reports(), "sweep");
  std::vector<std::string> written{"point"};
  const SweepRow none;
  for (const Field& f : fields(none, columns)) written.push_back(f.name);
  g5sim::check_columns(report, written, present);
  out << grid.line() << '\n' << g5sim::csv_header(report, present) << '\n';
}

void write_sweep_csv_row(std::ostream& out, const SweepRow& row, const SweepColumns& columns) {
  out << row.point->index;
  for (const Field& f : fields(row, columns)) out << ',' << csv_cell(f.value);
  out << '\n';
}

void write_sweep_json_line(std::ostream& out, const SweepRow& row, const SweepColumns& columns) {
  out << "{\"point\": " << row.point->index;
  for (const Field& f : fields(row, columns)) {
    const bool null = f.value.empty() && (!f.text || f.name == "error" || !row.result);
    out << ", \"" << f.name << "\": " << (null ? "null" : f.text ? api::json_string(f.value) : f.value);
  }
  out << "}\n";
}

// Cells of a CSV line (RFC 4180 quotes: a comma inside quotes is text).
std::size_t csv_cell_count(const std::string& line) {
  std::size_t cells = 1;
  bool quoted = false;
  for (const char c : line) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) ++cells;
  }
  return cells;
}

std::string merge_sweeps(const std::vector<std::string>& paths) {
  if (paths.empty()) throw hw::ConfigError("merge: give the shard CSV files");
  std::optional<GridHeader> grid;
  std::string columns;
  std::size_t cells = 0;
  std::map<std::uint64_t, std::string> shard_files;  // shard -> its file
  std::map<std::uint64_t, std::string> rows;
  for (const std::string& path : paths) {
    std::istringstream in(hw::read_input_file(path));
    std::string line;
    if (!std::getline(in, line)) merge_error(path, 1, "empty file");
    const GridHeader header = GridHeader::parse(line, path);
    if (!grid) grid = header;
    if (header.version != grid->version || header.points != grid->points || header.sha256 != grid->sha256 ||
        header.shards != grid->shards) {
      merge_error(path, 1,
                  fmt::format("a shard of another grid: '{}' against {}'s '{}'", line, paths.front(), grid->line()));
    }
    if (const auto [at, fresh] = shard_files.emplace(header.shard, path); !fresh) {
      merge_error(path, 1,
                  fmt::format("shard {}/{} again ({} is that shard too)", header.shard, header.shards, at->second));
    }
    if (!std::getline(in, line) || line.rfind("point,", 0) != 0) {
      merge_error(path, 2, "expected the column line ('point,chip,...') after the grid line");
    }
    if (columns.empty()) {
      columns = line;
      cells = csv_cell_count(line);
    }
    if (line != columns) merge_error(path, 2, fmt::format("the columns differ from {}'s", paths.front()));
    for (std::size_t number = 3; std::getline(in, line); ++number) {
      const auto comma = line.find(',');
      const std::optional<std::uint64_t> first = hw::read_whole_number(std::string_view(line).substr(0, comma));
      if (!first || comma == std::string::npos) merge_error(path, number, "expected a point number first");
      const std::uint64_t point = *first;
      if (csv_cell_count(line) != cells) {
        merge_error(path, number, fmt::format("{} cells, the header has {} (a cut row?)", csv_cell_count(line), cells));
      }
      if (point >= grid->points || point % grid->shards != header.shard) {
        merge_error(path, number,
                    fmt::format("point {} is not of shard {}/{} of a {}-point grid", point, header.shard, header.shards,
                                grid->points));
      }
      if (!rows.emplace(point, line).second) merge_error(path, number, fmt::format("point {} appears twice", point));
    }
  }
  if (rows.size() != grid->points) {
    std::vector<std::uint64_t> missing;
    for (std::uint64_t p = 0; p < grid->points && missing.size() < 5; ++p) {
      if (rows.count(p) == 0) missing.push_back(p);
    }
    std::vector<std::uint64_t> absent;
    for (std::uint64_t s = 0; s < grid->shards && absent.size() < 5; ++s) {
      if (shard_files.count(s) == 0) absent.push_back(s);
    }
    throw hw::ConfigError(fmt::format(
        "merge: {} of the grid's {} points are in no file (first: {}){}", grid->points - rows.size(), grid->points,
        fmt::join(missing, ", "),
        absent.empty() ? std::string(" (a shard was cut short)")
                       : fmt::format(" (shards missing: {} of {})", fmt::join(absent, ", "), grid->shards)));
  }
  GridHeader whole = *grid;
  whole.shard = 0;
  whole.shards = 1;
  std::string out = whole.line() + "\n" + columns + "\n";
  for (const auto& [point, line] : rows) out += line + "\n";
  return out;
}

}  // namespace explore
