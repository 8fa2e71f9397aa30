#include "tools/report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <vector>

namespace tools {
namespace {

std::string engine_name(sim::Engine e) { return e == sim::Engine::sdma ? "sdma" : "gdma"; }

std::string phase_name(const models::Workload& w) { return w.decode() ? "decode" : "prefill"; }

// JSON string with the escapes our names can need.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string format_ns(sim::Tick ps) { return fmt::format("{}.{:03}", ps / 1000, ps % 1000); }

void write_table(std::ostream& out, const RunDescription& run, const ops::Timeline& tl) {
  const models::Workload& w = run.workload;
  fmt::print(out, "g5sim: {} MLA attention block (absorb), {} B={} q_len={} kv_len={} kv={}, on {} ({} cores)\n",
             run.model.name, phase_name(w), w.batch, w.q_len, w.kv_len, hw::name_of(w.kv_dtype), run.chip.name,
             run.chip.cores);
  if (w.decode()) fmt::print(out, "kv_cache_read route: {}\n", engine_name(run.options.kv_read_engine));
  out << '\n';
  struct Row {
    std::vector<std::string> cells;
  };
  const std::vector<std::string> header{"op", "kind", "engines", "op_start_ns", "op_end_ns", "hbm_bytes",
                                        "flops", "roofline_ns", "regime"};
  std::vector<Row> rows;
  for (const ops::OpTiming& t : tl.ops) {
    rows.push_back(Row{{t.name, std::string(ops::kind_name(t.kind)), t.engines(), format_ns(t.start),
                        format_ns(t.end), fmt::format("{}", t.hbm_bytes), fmt::format("{}", t.flops),
                        fmt::format("{:.3f}", t.roofline_ns), std::string(ops::regime_name(t.regime))}});
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const Row& r : rows) {
    for (std::size_t i = 0; i < header.size(); ++i) width[i] = std::max(width[i], r.cells[i].size());
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const bool last = i + 1 == cells.size();
      const bool left = i < 3 || last;  // text columns left, numbers right
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
  for (const Row& r : rows) print_row(r.cells);
  out << '\n';
  fmt::print(out, "total_ns      {}\n", format_ns(tl.total));
  fmt::print(out, "hbm_bytes     {}\n", tl.hbm_bytes);
  fmt::print(out, "flops         {}\n", tl.flops);
  fmt::print(out, "roofline      compute {:.3f} ns, memory {:.3f} ns -> {}-bound\n", tl.compute_ns, tl.memory_ns,
             ops::regime_name(tl.regime));
  fmt::print(out, "commands      tiu {}  gdma {}  sdma {}\n", tl.commands[0], tl.commands[1], tl.commands[2]);
}

void write_json(std::ostream& out, const RunDescription& run, const ops::Timeline& tl) {
  const models::Workload& w = run.workload;
  out << "{\n";
  fmt::print(out, "  \"chip\": {},\n", quoted(run.chip.name));
  fmt::print(out, "  \"model\": {},\n", quoted(run.model.name));
  fmt::print(out,
             "  \"workload\": {{\"phase\": \"{}\", \"batch\": {}, \"q_len\": {}, \"kv_len\": {}, \"kv_dtype\": \"{}\", "
             "\"kv_read_engine\": \"{}\"}},\n",
             phase_name(w), w.batch, w.q_len, w.kv_len, hw::name_of(w.kv_dtype),
             engine_name(run.options.kv_read_engine));
  fmt::print(out, "  \"total_ns\": {},\n", format_ns(tl.total));
  fmt::print(out, "  \"regime\": \"{}\",\n", ops::regime_name(tl.regime));
  fmt::print(out, "  \"hbm_bytes\": {},\n", tl.hbm_bytes);
  fmt::print(out, "  \"flops\": {},\n", tl.flops);
  out << "  \"ops\": [\n";
  for (std::size_t i = 0; i < tl.ops.size(); ++i) {
    const ops::OpTiming& t = tl.ops[i];
    fmt::print(out,
               "    {{\"name\": {}, \"kind\": \"{}\", \"shape\": {}, \"engines\": \"{}\", \"op_start_ns\": {}, "
               "\"op_end_ns\": {}, \"hbm_bytes\": {}, \"flops\": {}, \"kv_bytes\": {}, \"peak_lmem_bytes\": {}, "
               "\"roofline_ns\": {:.3f}, \"regime\": \"{}\"}}{}\n",
               quoted(t.name), ops::kind_name(t.kind), quoted(t.shape), t.engines(), format_ns(t.start),
               format_ns(t.end), t.hbm_bytes, t.flops, t.kv_bytes, t.peak_lmem_bytes, t.roofline_ns,
               ops::regime_name(t.regime), i + 1 < tl.ops.size() ? "," : "");
  }
  out << "  ],\n";
  fmt::print(out, "  \"commands\": {{\"tiu\": {}, \"gdma\": {}, \"sdma\": {}}}\n", tl.commands[0], tl.commands[1],
             tl.commands[2]);
  out << "}\n";
}

void write_sweep_header(std::ostream& out) {
  out << "ctx,batch,total_ns,kv_cache_read_bytes,kv_cache_read_ns,fa2_ns,regime\n";
}

void write_sweep_row(std::ostream& out, const models::Workload& w, const ops::Timeline& tl) {
  const ops::OpTiming* read = tl.find(ops::OpKind::kv_cache_read);
  const ops::OpTiming& fa2 = tl.op(ops::OpKind::fa2);
  fmt::print(out, "{},{},{},{},{},{},{}\n", w.kv_len, w.batch, format_ns(tl.total), read ? read->hbm_bytes : 0,
             format_ns(read ? read->duration() : 0), format_ns(fa2.duration()), ops::regime_name(tl.regime));
}

}  // namespace tools
