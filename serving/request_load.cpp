#include "serving/request_load.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "hw/config_error.hpp"
#include "hw/input_file.hpp"
#include "hw/number_text.hpp"
#include "models/run_limits.hpp"

namespace serving {
namespace {

constexpr const char* kColumns = "arrival_s,input_tokens,output_tokens and optionally id, session, shared_prefix";
constexpr std::size_t kMaxCells = 6;

[[noreturn]] void fail_at(const std::string& path, int line, int column, const std::string& field,
                          const std::string& message) {
  throw hw::ConfigError(fmt::format("{}:{}:{}: {}", path, line, column, message),
                        hw::ErrorSite{path, field, line, column});
}

// Seconds as text -> picoseconds, or a message saying why not.
std::optional<std::uint64_t> seconds_to_ps(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > kMaxArrivalSeconds) return std::nullopt;
  return static_cast<std::uint64_t>(std::llround(seconds * 1e12));
}

std::optional<double> parse_decimal(std::string_view text) { return hw::read_decimal_number(text); }
std::optional<std::uint64_t> parse_whole(std::string_view text) { return hw::read_whole_number(text); }

// A line's CSV cells (RFC 4180 quotes; a quoted cell may hold commas), with each cell's column.
struct Cell {
  std::string text;
  int column = 1;
};
std::vector<Cell> split_csv(std::string_view line, const std::string& path, int line_number) {
  std::vector<Cell> cells;
  std::size_t i = 0;
  while (true) {
    Cell cell;
    cell.column = static_cast<int>(i) + 1;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size()) fail_at(path, line_number, cell.column, "", "a quoted cell is not closed");
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cell.text += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        cell.text += line[i++];
      }
      if (i < line.size() && line[i] != ',') {
        fail_at(path, line_number, static_cast<int>(i) + 1, "", "expected a comma after a quoted cell");
      }
    } else {
      const std::size_t stop = std::min(line.find(',', i), line.size());
      cell.text = std::string(line.substr(i, stop - i));
      i = stop;
    }
    cells.push_back(std::move(cell));
    if (i >= line.size()) break;
    ++i;  // the comma
    if (cells.size() == kMaxCells) {
      fail_at(path, line_number, static_cast<int>(i) + 1, "", fmt::format("more than {} cells", kMaxCells));
    }
  }
  return cells;
}

struct Fields {
  std::optional<std::string> id, session;
  std::optional<double> arrival_s;
  std::optional<std::uint64_t> input_tokens, output_tokens, shared_prefix;
};

// The checks every row gets, whatever its format; `column_of` says where a field is.
template <class ColumnOf>
ServeRequest checked_request(const Fields& f, std::uint64_t row, const std::string& path, int line,
                             ColumnOf column_of) {
  ServeRequest r;
  r.id = f.id.value_or(std::to_string(row));
  if (r.id.empty()) fail_at(path, line, column_of("id"), "id", "id: empty (leave the column out for row numbers)");
  const std::optional<std::uint64_t> ps = seconds_to_ps(*f.arrival_s);
  if (!ps) {
    fail_at(path, line, column_of("arrival_s"), "arrival_s",
            fmt::format("arrival_s: {} is outside 0..{} seconds", *f.arrival_s, kMaxArrivalSeconds));
  }
  r.arrival_ps = *ps;
  for (const auto& [name, value, out] : {std::tuple{"input_tokens", f.input_tokens, &r.input_tokens},
                                         std::tuple{"output_tokens", f.output_tokens, &r.output_tokens}}) {
    if (*value < 1 || *value > models::kMaxContext) {
      fail_at(path, line, column_of(name), name,
              fmt::format("{}: {} is outside 1..{} tokens", name, *value, models::kMaxContext));
    }
    *out = *value;
  }
  r.session = f.session.value_or("");
  if (f.session && f.session->find_first_of("\n\r") != std::string::npos) {
    fail_at(path, line, column_of("session"), "session", "session: holds a line break");
  }
  r.shared_prefix = f.shared_prefix.value_or(0);
  if (r.shared_prefix > r.input_tokens) {
    fail_at(
        path, line, column_of("shared_prefix"), "shared_prefix",
        fmt::format("shared_prefix: {} is more than the request's {} input tokens", r.shared_prefix, r.input_tokens));
  }
  return r;
}

// A CSV table: a header naming columns of `known` (any order, each once, every one of `required`),
// then rows of as many cells; '#' lines and blank lines skipped. `row` gets each row's cells in
// the header's order and its line; `expected` words the columns for errors.
struct CsvTable {
  std::vector<std::string> header;
  int column_of(const std::vector<Cell>& cells, const std::string& name) const {
    for (std::size_t c = 0; c < header.size(); ++c) {
      if (header[c] == name) return cells[c].column;
    }
    return 1;
  }
};
template <class Row>
CsvTable for_each_csv_row(const std::string& text, const std::string& path, const std::vector<std::string>& known,
                          const std::vector<std::string>& required, const std::string& expected, Row row) {
  CsvTable table;
  hw::for_each_line(text, [&](std::string_view line, int line_number) {
    if (line.empty() || line.front() == '#') return;
    const std::vector<Cell> cells = split_csv(line, path, line_number);
    if (table.header.empty()) {
      std::set<std::string> seen;
      for (const Cell& c : cells) {
        if (std::find(known.begin(), known.end(), c.text) == known.end()) {
          fail_at(path, line_number, c.column, "",
                  fmt::format("unknown column '{}' in the header: expected {}", c.text, expected));
        }
        if (!seen.insert(c.text).second) {
          fail_at(path, line_number, c.column, "", fmt::format("column '{}' named twice", c.text));
        }
        table.header.push_back(c.text);
      }
      for (const std::string& name : required) {
        if (seen.count(name) == 0) {
          fail_at(path, line_number, 1, "", fmt::format("the header has no column {}: expected {}", name, expected));
        }
      }
      return;
    }
    if (cells.size() != table.header.size()) {
      fail_at(path, line_number, 1, "",
              fmt::format("{} cells, but the header names {} columns", cells.size(), table.header.size()));
    }
    row(table, cells, line_number);
  });
  return table;
}

std::vector<ServeRequest> parse_csv(const std::string& text, const std::string& path) {
  std::vector<ServeRequest> out;
  const CsvTable table = for_each_csv_row(
      text, path, {"arrival_s", "input_tokens", "output_tokens", "id", "session", "shared_prefix"},
      {"arrival_s", "input_tokens", "output_tokens"}, kColumns,
      [&](const CsvTable& t, const std::vector<Cell>& cells, int line_number) {
        if (out.size() == kMaxServeRequests) {
          fail_at(path, line_number, 1, "", fmt::format("more than {} requests", kMaxServeRequests));
        }
        Fields f;
        for (std::size_t c = 0; c < t.header.size(); ++c) {
          const std::string& name = t.header[c];
          const std::string& cell = cells[c].text;
          if (name == "id") {
            f.id = cell;
          } else if (name == "session") {
            f.session = cell;
          } else if (name == "arrival_s") {
            f.arrival_s = parse_decimal(cell);
            if (!f.arrival_s) {
              fail_at(path, line_number, cells[c].column, name,
                      fmt::format("arrival_s: '{}' is not a decimal number", cell));
            }
          } else {
            const std::optional<std::uint64_t> v = parse_whole(cell);
            if (!v) {
              fail_at(path, line_number, cells[c].column, name,
                      fmt::format("{}: '{}' is not a whole number", name, cell));
            }
            (name == "input_tokens" ? f.input_tokens : name == "output_tokens" ? f.output_tokens : f.shared_prefix) = v;
          }
        }
        out.push_back(checked_request(f, out.size(), path, line_number,
                                      [&](const std::string& name) { return t.column_of(cells, name); }));
      });
  if (table.header.empty()) {
    throw hw::ConfigError(fmt::format("{}: empty: expected a header ({}) and a row per request", path, kColumns),
                          hw::ErrorSite{path, "", 0, 0});
  }
  return out;
}

std::vector<ServeRequest> parse_json_lines(const std::string& text, const std::string& path) {
  std::vector<ServeRequest> out;
  hw::for_each_line(text, [&](std::string_view line, int line_number) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      fail_at(path, line_number, 1, "", "expected a JSON object on the line ({\"arrival_s\": ..., ...})");
    }
    if (out.size() == kMaxServeRequests) {
      fail_at(path, line_number, 1, "", fmt::format("more than {} requests", kMaxServeRequests));
    }
    Fields f;
    for (const auto& [key, value] : j.items()) {
      if (key == "id") {
        if (value.is_string()) {
          f.id = value.get<std::string>();
        } else if (value.is_number_unsigned()) {
          f.id = std::to_string(value.get<std::uint64_t>());
        } else {
          fail_at(path, line_number, 1, key, "id: expected a string or a whole number");
        }
        if (f.id->find_first_of("\n\r") != std::string::npos)
          fail_at(path, line_number, 1, key, "id: holds a line break");
      } else if (key == "arrival_s") {
        if (!value.is_number()) fail_at(path, line_number, 1, key, "arrival_s: expected a number of seconds");
        f.arrival_s = value.get<double>();
      } else if (key == "input_tokens" || key == "output_tokens" || key == "shared_prefix") {
        if (!value.is_number_unsigned()) fail_at(path, line_number, 1, key, key + ": expected a whole number");
        (key == "input_tokens"    ? f.input_tokens
         : key == "output_tokens" ? f.output_tokens
                                  : f.shared_prefix) = value.get<std::uint64_t>();
      } else if (key == "session") {
        if (!value.is_string()) fail_at(path, line_number, 1, key, "session: expected a string");
        f.session = value.get<std::string>();
      } else {
        fail_at(path, line_number, 1, key, fmt::format("unknown key '{}': expected {}", key, kColumns));
      }
    }
    for (const auto& [name, missing] : {std::pair{"arrival_s", !f.arrival_s},
                                        {"input_tokens", !f.input_tokens},
                                        {"output_tokens", !f.output_tokens}}) {
      if (missing) fail_at(path, line_number, 1, name, fmt::format("no key {}: expected {}", name, kColumns));
    }
    out.push_back(checked_request(f, out.size(), path, line_number, [](const std::string&) { return 1; }));
  });
  return out;
}

// A later turn shares at most the conversation so far: its previous turn's prompt and output.
void check_conversations(const std::vector<ServeRequest>& requests, const std::string& path) {
  std::map<std::string, const ServeRequest*> last;
  for (const ServeRequest& r : requests) {
    if (r.session.empty()) continue;
    const auto found = last.find(r.session);
    if (found != last.end()) {
      const ServeRequest& p = *found->second;
      const std::uint64_t so_far = p.input_tokens + p.output_tokens;
      if (r.shared_prefix > so_far) {
        throw hw::ConfigError(
            fmt::format("{}: request '{}': shared_prefix {} is more than session '{}' holds before "
                        "it ({} tokens: request '{}''s {} input and {} output)",
                        path, r.id, r.shared_prefix, r.session, so_far, p.id, p.input_tokens, p.output_tokens),
            hw::ErrorSite{path, "shared_prefix", 0, 0});
      }
    }
    last[r.session] = &r;
  }
}

bool ends_with(const std::string& text, std::string_view tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

double unit_draw(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::vector<ServeRequest> parse_request_trace(const std::string& text, const std::string& path) {
  std::vector<ServeRequest> out =
      ends_with(path, ".jsonl") || ends_with(path, ".ndjson") ? parse_json_lines(text, path) : parse_csv(text, path);
  if (out.empty()) {
    throw hw::ConfigError(fmt::format("{}: no requests", path), hw::ErrorSite{path, "", 0, 0});
  }
  std::set<std::string> ids;
  for (const ServeRequest& r : out) {
    if (!ids.insert(r.id).second) {
      throw hw::ConfigError(fmt::format("{}: id '{}' names two requests", path, r.id), hw::ErrorSite{path, "id", 0, 0});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ServeRequest& a, const ServeRequest& b) { return a.arrival_ps < b.arrival_ps; });
  check_conversations(out, path);
  return out;
}

std::vector<ServeRequest> read_request_trace(const std::string& path) {
  return parse_request_trace(hw::read_input_file(path), path);
}

LengthDistribution LengthDistribution::parse(const std::string& text, const std::string& field) {
  if (text.empty() || text.find_first_not_of("0123456789:") != std::string::npos) {
    if (text.empty()) throw hw::InputError(field, "'' is not a length N, a range LO:HI or a histogram file");
    // Not a number: a histogram's path. One that names nothing is more likely a mistyped length
    // ("12O") than a missing file: say both.
    std::error_code ec;
    if (!std::filesystem::exists(text, ec)) {
      throw hw::InputError(field, fmt::format("'{}' is not a length N, a range LO:HI, or a histogram file that "
                                              "exists",
                                              text));
    }
    return parse_histogram(hw::read_input_file(text), text);
  }
  const std::size_t colon = text.find(':');
  const std::optional<std::uint64_t> low = parse_whole(std::string_view(text).substr(0, colon));
  const std::optional<std::uint64_t> high =
      colon == std::string::npos ? low : parse_whole(std::string_view(text).substr(colon + 1));
  if (!low || !high) {
    throw hw::InputError(field, fmt::format("'{}' is not a length N, a range LO:HI or a histogram file", text));
  }
  if (*low < 1 || *high > models::kMaxContext || *low > *high) {
    throw hw::InputError(field, fmt::format("'{}' is outside 1..{} tokens (or LO > HI)", text, models::kMaxContext));
  }
  return range(*low, *high);
}

LengthDistribution LengthDistribution::range(std::uint64_t low, std::uint64_t high) {
  LengthDistribution d;
  d.low = low, d.high = high;
  return d;
}

LengthDistribution LengthDistribution::parse_histogram(const std::string& text, const std::string& path) {
  constexpr const char* kBinColumns = "low,high,weight";
  LengthDistribution d;
  double total = 0;
  const CsvTable table = for_each_csv_row(
      text, path, {"low", "high", "weight"}, {"low", "high", "weight"}, kBinColumns,
      [&](const CsvTable& t, const std::vector<Cell>& cells, int line) {
        if (d.bins.size() == kMaxLengthBins)
          fail_at(path, line, 1, "", fmt::format("more than {} bins", kMaxLengthBins));
        LengthBin bin;
        for (std::size_t c = 0; c < t.header.size(); ++c) {
          const std::string& name = t.header[c];
          const std::string& cell = cells[c].text;
          if (name == "weight") {
            const std::optional<double> w = parse_decimal(cell);
            if (!w || !std::isfinite(*w) || *w < 0 || *w > kMaxLengthWeight) {
              fail_at(path, line, cells[c].column, name,
                      fmt::format("weight: '{}' is not a decimal number 0..{:g}", cell, kMaxLengthWeight));
            }
            bin.weight = *w;
          } else {
            const std::optional<std::uint64_t> v = parse_whole(cell);
            if (!v || *v < 1 || *v > models::kMaxContext) {
              fail_at(path, line, cells[c].column, name,
                      fmt::format("{}: '{}' is not a whole number of tokens 1..{}", name, cell, models::kMaxContext));
            }
            (name == "low" ? bin.low : bin.high) = *v;
          }
        }
        if (bin.low > bin.high) {
          fail_at(path, line, t.column_of(cells, "high"), "high",
                  fmt::format("high {} is below low {}", bin.high, bin.low));
        }
        total += bin.weight;
        d.bins.push_back(bin);
        d.running.push_back(total);
      });
  if (table.header.empty() || d.bins.empty()) {
    throw hw::ConfigError(fmt::format("{}: no bins: expected a header ({}) and a row per bin", path, kBinColumns),
                          hw::ErrorSite{path, "", 0, 0});
  }
  if (!(total > 0) || !std::isfinite(total)) {
    throw hw::ConfigError(
        fmt::format("{}: the weights sum to {}: at least one bin needs a positive weight", path, total),
        hw::ErrorSite{path, "weight", 0, 0});
  }
  d.source = path;
  d.low = d.bins.front().low, d.high = d.bins.front().high;
  for (const LengthBin& b : d.bins) d.low = std::min(d.low, b.low), d.high = std::max(d.high, b.high);
  return d;
}

std::uint64_t LengthDistribution::draw(std::mt19937_64& rng) const {
  std::uint64_t lo = low, hi = high;
  if (!bins.empty()) {
    const double u = unit_draw(rng) * running.back();
    std::size_t i = std::upper_bound(running.begin(), running.end(), u) - running.begin();
    // u * total can round up to the total itself: then the last bin with weight.
    if (i == bins.size()) {
      do --i;
      while (bins[i].weight == 0);
    }
    lo = bins[i].low, hi = bins[i].high;
  }
  if (lo == hi) return lo;
  // Uniform over hi - lo + 1 values without modulo bias: reject the incomplete last block.
  const std::uint64_t span = hi - lo + 1;
  const std::uint64_t limit =
      std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % span;
  std::uint64_t x = rng();
  while (x >= limit) x = rng();
  return lo + x % span;
}

double LengthDistribution::mean() const {
  if (bins.empty()) return (static_cast<double>(low) + static_cast<double>(high)) / 2;
  double sum = 0;
  for (const LengthBin& b : bins) sum += b.weight * (static_cast<double>(b.low) + static_cast<double>(b.high)) / 2;
  return sum / running.back();
}

std::vector<ServeRequest> synthetic_requests(const SyntheticLoad& load) {
  if (load.requests < 1 || load.requests > kMaxServeRequests) {
    throw hw::InputError("requests", fmt::format("{} is outside 1..{}", load.requests, kMaxServeRequests));
  }
  const bool open = load.concurrency == 0;
  if (open && !(std::isfinite(load.rate) && load.rate > 0 && load.rate <= kMaxRate)) {
    throw hw::InputError("rate", fmt::format("{} is not a rate in (0, {}] requests per second", load.rate, kMaxRate));
  }
  if (!open && load.concurrency > kMaxConcurrency) {
    throw hw::InputError("concurrency", fmt::format("{} is outside 1..{}", load.concurrency, kMaxConcurrency));
  }
  if (load.turns < 1 || load.turns > kMaxServeRequests) {
    throw hw::InputError("turns", fmt::format("{} is outside 1..{}", load.turns, kMaxServeRequests));
  }
  if (!(std::isfinite(load.think_s) && load.think_s >= 0 && load.think_s <= kMaxArrivalSeconds)) {
    throw hw::InputError("think_s", fmt::format("{} is outside 0..{} seconds", load.think_s, kMaxArrivalSeconds));
  }
  if (load.system_prompt > models::kMaxContext) {
    throw hw::InputError("system_prompt",
                         fmt::format("{} is outside 0..{} tokens", load.system_prompt, models::kMaxContext));
  }
  std::mt19937_64 rng(load.seed);
  std::vector<ServeRequest> out;
  out.reserve(load.requests);
  double t = 0;
  const bool sessions = load.turns > 1;
  const std::uint64_t think_ps = static_cast<std::uint64_t>(std::llround(load.think_s * 1e12));
  for (std::uint64_t i = 0; i < load.requests; ++i) {
    ServeRequest r;
    r.id = std::to_string(i);
    const std::uint64_t turn = i % load.turns;
    if (sessions) r.session = fmt::format("s{}", i / load.turns);
    if (turn > 0) {
      r.after = out.size() - 1;
      r.think_ps = think_ps;
    } else if (open) {
      t += -std::log1p(-unit_draw(rng)) / load.rate;
      if (t > kMaxArrivalSeconds) {
        throw hw::InputError("rate", fmt::format("{} requests per second puts request {} past {} seconds", load.rate, i,
                                                 kMaxArrivalSeconds));
      }
      r.arrival_ps = static_cast<std::uint64_t>(std::llround(t * 1e12));
    }
    r.input_tokens = load.input.draw(rng);
    r.output_tokens = load.output.draw(rng);
    // The conversation so far comes first: the system prompt, or the previous turn's prompt and reply.
    r.shared_prefix = turn > 0 ? out.back().input_tokens + out.back().output_tokens : load.system_prompt;
    if (r.shared_prefix > models::kMaxContext - r.input_tokens) {
      throw hw::InputError(turn > 0 ? "turns" : "system_prompt",
                           fmt::format("request {}'s prompt, {} tokens of conversation and {} new, passes {} tokens", i,
                                       r.shared_prefix, r.input_tokens, models::kMaxContext));
    }
    r.input_tokens += r.shared_prefix;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace serving
