#pragma once
// `g5sim diff A.json B.json`: what moved between two runs (two chip variants, two flags), from
// their `g5sim run --json` files.
//
//   total      total_ns, tokens/s and tokens/s per chip of each, B - A and (B - A) / A;
//   kinds      per op kind, its busy time (the union of its ops' intervals: the JSON's busy_ns);
//   layers     per decoder layer (and "outside": embedding, lm_head), its span from its first
//              op's start to its last op's end (g5sim::layers_of);
//   top ops    the N ops whose time (op_end - op_start) moved most, |B - A| largest first (ties:
//              A's order). Ops are matched by (name, layer, occurrence): the k-th op named N in
//              layer L of A is the k-th in B; an op of one run only counts 0 in the other.
// As a table or as JSON (schema_version 1). The reader is strict: a file that is not a run's JSON
// (a key missing, a wrong type) is an error naming the file and the key, a JSON syntax error its
// line and column.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"

namespace explore {

/// What a diff reads of a run's JSON.
struct RunFile {
  std::string source;  ///< the path, for messages and headers
  std::string chip, model, scope, phase;
  std::uint64_t batch = 0, kv_len = 0, chips = 1, total_ps = 0;
  double tokens_per_s = 0, tokens_per_s_per_chip = 0;
  std::vector<std::pair<std::string, double>> kind_busy_ns;  ///< the JSON's kinds, busiest first
  std::vector<g5sim::OpRecord> ops;                          ///< name, layer, kind, interval
};

/// Parses `text` (a `g5sim run --json` document) named `source`; throws hw::ConfigError.
RunFile read_run_file(const std::string& text, const std::string& source);

struct DiffLine {
  std::string name;  ///< a kind, a layer ("3", "outside"), an op ("fa2 @3")
  std::string kind;  ///< ops: their kind
  double a_ns = 0, b_ns = 0;
  double delta_ns() const { return b_ns - a_ns; }
};

struct RunDiff {
  const RunFile* a = nullptr;
  const RunFile* b = nullptr;
  std::vector<DiffLine> kinds, layers, ops;  ///< ops: every matched op, most moved first
};

RunDiff diff_runs(const RunFile& a, const RunFile& b);

/// `top`: the ops shown (the most moved first).
void write_diff_table(std::ostream& out, const RunDiff& diff, std::size_t top);
void write_diff_json(std::ostream& out, const RunDiff& diff, std::size_t top);

}  // namespace explore
