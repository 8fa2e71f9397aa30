#include "explore/run_diff.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "api/json_text.hpp"
#include "api/public_errors.hpp"
#include "explore/grid_sweep.hpp"
#include "g5sim/runs.hpp"
#include "hw/config_error.hpp"

namespace explore {
namespace {

using nlohmann::json;

// line:column of byte `offset` of `text` (1-based), for a syntax error.
std::pair<std::size_t, std::size_t> position(const std::string& text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// A strict reader: the key must be there with the type asked.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  const json& at(const json& object, const std::string& key, const std::string& path) const {
    if (!object.is_object() || !object.contains(key)) fail(path + key, "missing");
    return object.at(key);
  }
  std::string text(const json& object, const std::string& key, const std::string& path = "") const {
    const json& v = at(object, key, path);
    if (!v.is_string()) fail(path + key, "expected a string");
    return v.get<std::string>();
  }
  std::uint64_t count(const json& object, const std::string& key, const std::string& path = "") const {
    const json& v = at(object, key, path);
    if (!v.is_number_unsigned()) fail(path + key, "expected a whole number");
    return v.get<std::uint64_t>();
  }
  double number(const json& object, const std::string& key, const std::string& path = "") const {
    const json& v = at(object, key, path);
    if (!v.is_number() || !std::isfinite(v.get<double>())) fail(path + key, "expected a number");
    return v.get<double>();
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw hw::ConfigError(fmt::format("{}: {}: {} (not a g5sim run --json file?)", source_, key, what));
  }

 private:
  std::string source_;
};

double ns(std::uint64_t ps) { return static_cast<double>(ps) / 1000.0; }

std::string percent(double a, double b) {
  return a == 0 ? std::string("-") : fmt::format("{:+.2f} %", (b - a) / a * 100.0);
}

std::string label(const RunFile& r) {
  return fmt::format("{} {} {} B={} ctx={} on {} ({} chip{})", r.model, r.phase, r.scope, r.batch, r.kv_len, r.chip,
                     r.chips, r.chips == 1 ? "" : "s");
}

}  // namespace

RunFile read_run_file(const std::string& text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    const auto [line, column] = position(text, e.byte == 0 ? 0 : e.byte - 1);
    throw hw::ConfigError(fmt::format("{}:{}:{}: not JSON (a g5sim run --json file is)", source, line, column));
  } catch (const json::exception&) {
    // A number past a double's range (1e400) and the like: found by tests/fuzz/fuzz_run_json.
    throw hw::ConfigError(fmt::format("{}: not JSON a g5sim run writes (a number out of range)", source));
  }
  const Reader r(source);
  RunFile f;
  f.source = source;
  if (!doc.is_object()) r.fail("(top level)", "expected an object");
  // Version 2 added the step's sequences and prefill_attention, version 3 put energy in joules: diff
  // compares neither.
  const std::uint64_t version = r.count(doc, "schema_version");
  if (version < 1 || version > 3) r.fail("schema_version", "this g5sim reads versions 1 to 3");
  f.chip = r.text(doc, "chip");
  f.model = r.text(doc, "model");
  f.scope = r.text(doc, "scope");
  const json& w = r.at(doc, "workload", "");
  f.phase = r.text(w, "phase", "workload.");
  f.batch = r.count(w, "batch", "workload.");
  f.kv_len = r.count(w, "kv_len", "workload.");
  f.chips = r.count(r.at(doc, "parallelism", ""), "chips", "parallelism.");
  f.total_ps = r.count(doc, "total_ps");
  f.tokens_per_s = r.number(doc, "tokens_per_s");
  f.tokens_per_s_per_chip = r.number(doc, "tokens_per_s_per_chip");
  const json& kinds = r.at(doc, "kinds", "");
  if (!kinds.is_array()) r.fail("kinds", "expected a list");
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const std::string at = fmt::format("kinds[{}].", i);
    f.kind_busy_ns.emplace_back(r.text(kinds[i], "kind", at), r.number(kinds[i], "busy_ns", at));
  }
  const json& ops = r.at(doc, "ops", "");
  if (!ops.is_array()) r.fail("ops", "expected a list");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::string at = fmt::format("ops[{}].", i);
    g5sim::OpRecord& o = f.ops.emplace_back();
    o.name = r.text(ops[i], "name", at);
    o.kind = r.text(ops[i], "kind", at);
    const json& layer = r.at(ops[i], "layer", at);
    if (!layer.is_null() && !(layer.is_number_unsigned() && layer.get<std::uint64_t>() < (1u << 20))) {
      r.fail(at + "layer", "expected a layer number or null");
    }
    o.layer = layer.is_null() ? -1 : layer.get<int>();
    o.op_start_ps = r.count(ops[i], "op_start_ps", at);
    o.op_end_ps = r.count(ops[i], "op_end_ps", at);
    if (o.op_end_ps < o.op_start_ps) r.fail(at + "op_end_ps", "before op_start_ps");
    o.hbm_bytes = r.count(ops[i], "hbm_bytes", at);
    o.flops = r.count(ops[i], "flops", at);
  }
  return f;
}

RunDiff diff_runs(const RunFile& a, const RunFile& b) {
  RunDiff d;
  d.a = &a;
  d.b = &b;
  // Kinds: A's order (busiest first), then B's kinds A lacks.
  for (const auto& [kind, busy] : a.kind_busy_ns) d.kinds.push_back({kind, "", busy, 0});
  for (const auto& entry : b.kind_busy_ns) {
    const std::string& kind = entry.first;
    auto it = std::find_if(d.kinds.begin(), d.kinds.end(), [&](const DiffLine& l) { return l.name == kind; });
    if (it == d.kinds.end()) it = d.kinds.insert(d.kinds.end(), DiffLine{kind, "", 0, 0});
    it->b_ns = entry.second;
  }
  // Layers: spans, matched by number.
  std::map<int, DiffLine> layers;
  auto layer_name = [](int l) { return l < 0 ? std::string("outside") : std::to_string(l); };
  // The ops outside the layers run at both ends of a step: their busy time, not a span.
  auto time = [](const g5sim::LayerRecord& l) { return ns(l.layer < 0 ? l.busy_ps : l.span_ps()); };
  for (const g5sim::LayerRecord& l : g5sim::layers_of(a.ops)) layers[l.layer] = {layer_name(l.layer), "", time(l), 0};
  for (const g5sim::LayerRecord& l : g5sim::layers_of(b.ops)) {
    DiffLine& line = layers.try_emplace(l.layer, DiffLine{layer_name(l.layer), "", 0, 0}).first->second;
    line.b_ns = time(l);
  }
  for (const auto& [layer, line] : layers) {
    if (layer >= 0) d.layers.push_back(line);
  }
  if (layers.count(-1) != 0) d.layers.push_back(layers.at(-1));
  // Ops by (name, layer, occurrence).
  std::map<std::tuple<std::string, int, std::size_t>, std::size_t> index;
  std::map<std::pair<std::string, int>, std::size_t> seen;
  auto key = [&](const g5sim::OpRecord& o) { return std::make_tuple(o.name, o.layer, seen[{o.name, o.layer}]++); };
  auto op_name = [](const g5sim::OpRecord& o) { return o.layer < 0 ? o.name : fmt::format("{} @{}", o.name, o.layer); };
  for (const g5sim::OpRecord& o : a.ops) {
    index[key(o)] = d.ops.size();
    d.ops.push_back({op_name(o), o.kind, ns(o.op_end_ps - o.op_start_ps), 0});
  }
  seen.clear();
  for (const g5sim::OpRecord& o : b.ops) {
    const auto k = key(o);
    const auto it = index.find(k);
    if (it == index.end()) {
      d.ops.push_back({op_name(o), o.kind, 0, ns(o.op_end_ps - o.op_start_ps)});
    } else {
      d.ops[it->second].b_ns = ns(o.op_end_ps - o.op_start_ps);
    }
  }
  std::stable_sort(d.ops.begin(), d.ops.end(), [](const DiffLine& x, const DiffLine& y) {
    return std::abs(x.delta_ns()) > std::abs(y.delta_ns());
  });
  return d;
}

void write_diff_table(std::ostream& out, const RunDiff& d, std::size_t top) {
  const RunFile& a = *d.a;
  const RunFile& b = *d.b;
  fmt::print(out, "A  {}: {}\nB  {}: {}\n\n", a.source, label(a), b.source, label(b));
  fmt::print(out, "{:<22} {:>16} {:>16} {:>16} {:>10}\n", "total", "A", "B", "B - A", "change");
  fmt::print(out, "{:<22} {:>16.3f} {:>16.3f} {:>+16.3f} {:>10}\n", "total_ns", ns(a.total_ps), ns(b.total_ps),
             ns(b.total_ps) - ns(a.total_ps), percent(ns(a.total_ps), ns(b.total_ps)));
  fmt::print(out, "{:<22} {:>16.3f} {:>16.3f} {:>+16.3f} {:>10}\n", "tokens_per_s", a.tokens_per_s, b.tokens_per_s,
             b.tokens_per_s - a.tokens_per_s, percent(a.tokens_per_s, b.tokens_per_s));
  fmt::print(out, "{:<22} {:>16.3f} {:>16.3f} {:>+16.3f} {:>10}\n", "tokens_per_s_per_chip", a.tokens_per_s_per_chip,
             b.tokens_per_s_per_chip, b.tokens_per_s_per_chip - a.tokens_per_s_per_chip,
             percent(a.tokens_per_s_per_chip, b.tokens_per_s_per_chip));
  auto row = [&](const std::string& name, const DiffLine& l, const std::string& tail) {
    fmt::print(out, "{:<22} {:>16.3f} {:>16.3f} {:>+16.3f} {:>10}{}\n", name, l.a_ns, l.b_ns, l.delta_ns(),
               percent(l.a_ns, l.b_ns), tail);
  };
  auto section = [&](const std::string& title, const std::vector<DiffLine>& lines, std::size_t n, bool kinds) {
    fmt::print(out, "\n{:<22} {:>16} {:>16} {:>16} {:>10}{}\n", title, "A_ns", "B_ns", "B - A", "change",
               kinds ? "  kind" : "");
    for (std::size_t i = 0; i < std::min(n, lines.size()); ++i)
      row(lines[i].name, lines[i], kinds ? "  " + lines[i].kind : "");
  };
  section("kind (busy)", d.kinds, d.kinds.size(), false);
  // Layers: a run of layers with the same two times is one line ("4..60", each).
  fmt::print(out, "\n{:<22} {:>16} {:>16} {:>16} {:>10}\n", "layer (span)", "A_ns", "B_ns", "B - A", "change");
  for (std::size_t i = 0; i < d.layers.size();) {
    std::size_t j = i + 1;
    while (j < d.layers.size() && d.layers[j].name != "outside" && d.layers[i].name != "outside" &&
           d.layers[j].a_ns == d.layers[i].a_ns && d.layers[j].b_ns == d.layers[i].b_ns) {
      ++j;
    }
    const std::string name = j - i == 1
                                 ? (d.layers[i].name == "outside" ? std::string("outside (busy)") : d.layers[i].name)
                                 : fmt::format("{}..{} (each)", d.layers[i].name, d.layers[j - 1].name);
    row(name, d.layers[i], "");
    i = j;
  }
  section(fmt::format("top {} ops (time)", std::min(top, d.ops.size())), d.ops, top, true);
}

void write_diff_json(std::ostream& out, const RunDiff& d, std::size_t top) {
  auto run = [](const RunFile& r) {
    return fmt::format(
        "{{\"source\": {}, \"chip\": {}, \"model\": {}, \"scope\": {}, \"phase\": {}, \"batch\": {}, \"kv_len\": {}, "
        "\"chips\": {}, \"total_ps\": {}, \"tokens_per_s\": {:.3f}, \"tokens_per_s_per_chip\": {:.3f}}}",
        api::json_string(r.source), api::json_string(r.chip), api::json_string(r.model), api::json_string(r.scope),
        api::json_string(r.phase), r.batch, r.kv_len, r.chips, r.total_ps, r.tokens_per_s, r.tokens_per_s_per_chip);
  };
  auto lines = [](const std::vector<DiffLine>& list, std::size_t n, const char* key, bool kinds) {
    std::string text;
    for (std::size_t i = 0; i < std::min(n, list.size()); ++i) {
      const DiffLine& l = list[i];
      text += fmt::format("{}\n    {{\"{}\": {}, {}\"a_ns\": {:.3f}, \"b_ns\": {:.3f}, \"delta_ns\": {:.3f}}}",
                          i == 0 ? "" : ",", key, api::json_string(l.name),
                          kinds ? fmt::format("\"kind\": {}, ", api::json_string(l.kind)) : std::string(), l.a_ns,
                          l.b_ns, l.delta_ns());
    }
    return "[" + text + (list.empty() || n == 0 ? "]" : "\n  ]");
  };
  fmt::print(out, "{{\n  \"schema_version\": 1,\n  \"a\": {},\n  \"b\": {},\n", run(*d.a), run(*d.b));
  fmt::print(out, "  \"total_delta_ns\": {:.3f},\n", ns(d.b->total_ps) - ns(d.a->total_ps));
  fmt::print(out, "  \"kinds\": {},\n", lines(d.kinds, d.kinds.size(), "kind", false));
  fmt::print(out, "  \"layers\": {},\n", lines(d.layers, d.layers.size(), "layer", false));
  fmt::print(out, "  \"top_ops\": {}\n}}\n", lines(d.ops, top, "op", true));
}

}  // namespace explore

namespace g5sim {

std::vector<std::string> sweep_nesting() { return explore::grid_nesting(); }

std::string diff_json(const std::string& a, const std::string& a_name, const std::string& b, const std::string& b_name,
                      std::size_t top) {
  return api::public_errors([&] {
    std::ostringstream out;
    explore::write_diff_json(
        out, explore::diff_runs(explore::read_run_file(a, a_name), explore::read_run_file(b, b_name)), top);
    return out.str();
  });
}

}  // namespace g5sim
