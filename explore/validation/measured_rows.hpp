#pragma once
// The measurement table of `g5sim validate` and `g5sim calibrate` (validation/measured.csv; the
// format is documented in docs/validation.md). One row per published measurement: what ran (chip
// config, model config, phase, batch, context, dtypes, sharding, the workload and its options),
// what was measured (metric and value) and where it comes from. The reader is strict: the header
// must list exactly the columns below in this order, every cell is checked, and an error names
// the file, the line and the column.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace explore::validation {

/// What a row measures, and how a prediction is read off a run (docs/validation.md, "Metrics").
enum class Metric : std::uint8_t {
  step_ms,        ///< the run's total time, ms
  first_token_s,  ///< the run's total time, s (a prefill of the prompt)
  tokens_per_s,   ///< tokens the simulated chip processes per second (batch x q_len / dp / time)
  kernel_us,      ///< the run's total time, us (op rows: the op alone)
  tflops,         ///< the run's FLOPs / time, in 10^12 per second
  op_us,          ///< the mean duration of the ops named `op=` in a step, us
  // Serving rows (workload serve): read off `g5sim serve`'s summary; `stat=` picks the statistic
  // of a latency (p50 by default: the median bench_serving tables print).
  ttft_ms,              ///< time to first token, ms
  tpot_ms,              ///< time per output token after the first, ms
  itl_ms,               ///< inter-token latency, ms (every gap of every request)
  e2e_ms,               ///< a request's arrival to its last token, ms
  output_tokens_per_s,  ///< the deployment's output tokens per second (all its chips)
  requests_per_s,       ///< requests finished per second
};

/// A serving metric (a serve row's), as opposed to one read off a single run.
bool is_serving(Metric m);
/// A latency metric takes `stat=`.
bool takes_stat(Metric m);

/// What is simulated: a whole step, one attention block, one op alone (g5sim op), or a serve of
/// requests (g5sim serve: the load and the engine in options).
enum class WorkloadKind : std::uint8_t { step, block, matmul, fa2, serve };

struct MeasuredRow {
  std::string id;        ///< unique in the file (S1, G4, ...)
  std::string hardware;  ///< what it ran on, in words
  std::string chip;      ///< a shipped chip config's stem (bm1684x) or a path (relative to the file)
  std::string model;     ///< a shipped model config's stem or a path; empty for op rows
  std::string phase;     ///< decode or prefill; empty for op and serve rows
  std::uint64_t batch = 1, ctx = 0;
  std::optional<std::uint64_t> q_len, weight_group, tp, ep, dp, cores;
  std::string weight_dtype, kv_dtype;  ///< empty: the defaults
  WorkloadKind workload = WorkloadKind::step;
  std::map<std::string, std::string> options;  ///< key=value pairs of the options column
  Metric metric = Metric::step_ms;
  double measured = 0;
  std::string kind;    ///< M, V, S, D or U (validation_public.md's marks)
  std::string source;  ///< URL or owner/repo:path
  std::string note;
  std::string exclude;  ///< non-empty: listed but not run, with this reason
  int line = 0;         ///< in the file, for messages
};

struct MeasuredTable {
  std::string path;  ///< as given, for messages and for resolving relative config paths
  std::vector<MeasuredRow> rows;
};

/// The column names, in file order.
const std::vector<std::string>& measured_columns();

MeasuredTable read_measured_file(const std::string& path);
/// `path`, or the shipped validation/measured.csv when it is "" (the option not given).
std::string measured_path_or_shipped(const std::string& path);
MeasuredTable read_measured_text(const std::string& text, const std::string& source);

std::string name_of(Metric m);
/// The statistic a latency row reads: its `stat=` (p50, mean, p90, p99), p50 when not given.
std::string stat_of(const MeasuredRow& row);
std::string name_of(WorkloadKind k);
/// The workloads' names (step, block, matmul, fa2, serve), and the one a name is.
const std::vector<std::string>& workload_names();
std::optional<WorkloadKind> workload_named(const std::string& name);

}  // namespace explore::validation
