// The fields of the explore floor's reports (g5sim/report_fields.hpp): `g5sim sweep --csv` (and its
// --json lines), `g5sim compare --csv`, `g5sim diff --json`, `g5sim validate --json` and
// `g5sim validate --csv`, one row per key or column in the order the writers emit them
// (explore/grid_sweep.cpp, explore/chip_comparison.cpp, explore/run_diff.cpp,
// explore/validation/validation_report.cpp).

#include <string>
#include <vector>

#include "g5sim/report_fields.hpp"
#include "g5sim/run_options.hpp"

namespace g5sim {

const std::vector<Report>& explore_reports();

// Each row names only the fields it sets (designated initializers); the rest keep ReportField's
// defaults, which GCC's -Wextra would report as missing.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace {

using T = FieldType;

// ---- sweep -------------------------------------------------------------------------------------

// The run-option columns of a sweep row, from the run-option table (g5sim/run_options.hpp: the
// rows marked `column`, in its order), so that a new column option brings its column with its row.
// A point that failed (--keep-going) has an empty cell where an optional option was not given and
// no run resolved it.
std::vector<ReportField> sweep_option_columns() {
  std::vector<ReportField> rows;
  for (const RunOption& o : run_options()) {
    if (!o.column) continue;
    ReportField f{.path = o.name, .unit = o.unit, .description = o.doc, .choices = o.choices, .nullable = o.optional};
    switch (o.type) {
      case OptionType::count:
        f.type = T::integer;
        f.minimum = static_cast<double>(o.min);
        break;
      case OptionType::flag: f.type = T::flag; break;
      case OptionType::text:
      case OptionType::path: f.type = T::text; break;
    }
    // A run resolves its phase from its groups: both paths at once is a phase no flag asks for.
    if (o.name == "phase") f.choices += ",mixed";
    if (o.optional) f.description += " (empty on a failed point when not given)";
    rows.push_back(std::move(f));
  }
  return rows;
}

// The point's number, its chip and its model.
std::vector<ReportField> sweep_identity_columns() {
  return {
      {.path = "point",
       .type = T::integer,
       .description = "the point's index in the whole grid (mixed radix, the context fastest); a shard holds every "
                      "Nth",
       .minimum = 0},
      {.path = "chip",
       .type = T::text,
       .description = "the chip's label: its config name, with the file's stem or path in parentheses when two chips "
                      "of the grid share a name"},
      {.path = "model", .type = T::text, .description = "the model config's name"},
  };
}

// The deployment's chips and the config files the point ran on; `failed` ends an empty cell's note.
std::vector<ReportField> sweep_deployment_columns(const std::string& failed) {
  return {
      {.path = "chips",
       .type = T::integer,
       .description = "chips of the deployment (tp x dp)" + failed,
       .minimum = 1,
       .nullable = true},
      {.path = "chip_source",
       .type = T::text,
       .description = "the chip config the point ran on: shipped:NAME, or its path (relative to the working folder "
                      "when under it)"},
      {.path = "chip_sha256", .type = T::text, .description = "SHA-256 of the chip config file's text, in hex"},
      {.path = "model_source",
       .type = T::text,
       .description = "the model config the point ran on: shipped:NAME, or its path (relative to the working folder "
                      "when under it)"},
      {.path = "model_sha256", .type = T::text, .description = "SHA-256 of the model config file's text, in hex"},
  };
}

// The point's results: its time and error band, throughput, KV cache reads, attention time and limits.
std::vector<ReportField> sweep_result_columns(const std::string& failed) {
  return {
      {.path = "total_ns",
       .type = T::number,
       .unit = "ns",
       .description = "the simulated time of the step (or block): the last op's end" + failed,
       .minimum = 0,
       .nullable = true},
      {.path = "band_low_ns",
       .type = T::number,
       .unit = "ns",
       .description = "lower bound of total_ns's error band from the chip config's calibration record; empty when the "
                      "chip has none or the point failed",
       .minimum = 0,
       .nullable = true},
      {.path = "band_high_ns",
       .type = T::number,
       .unit = "ns",
       .description = "upper bound of total_ns's error band from the chip config's calibration record; empty when the "
                      "chip has none or the point failed",
       .minimum = 0,
       .nullable = true},
      {.path = "tokens_per_s",
       .type = T::number,
       .unit = "tokens/s",
       .description = "new tokens per second over the whole deployment" + failed,
       .minimum = 0,
       .nullable = true},
      {.path = "tokens_per_s_per_chip",
       .type = T::number,
       .unit = "tokens/s",
       .description = "tokens_per_s divided by the deployment's chips" + failed,
       .minimum = 0,
       .nullable = true},
      {.path = "kv_cache_read_bytes",
       .type = T::integer,
       .unit = "bytes",
       .description = "DDR bytes of the kv_cache_read ops summed over all layers of the simulated chip (0 in "
                      "prefill)" +
                      failed,
       .minimum = 0,
       .nullable = true},
      {.path = "kv_cache_read_ns",
       .type = T::number,
       .unit = "ns",
       .description = "durations of the kv_cache_read ops summed over all layers (not their union)" + failed,
       .minimum = 0,
       .nullable = true},
      {.path = "fa2_ns",
       .type = T::number,
       .unit = "ns",
       .description = "durations of the fa2 attention ops summed over all layers (not their union)" + failed,
       .minimum = 0,
       .nullable = true},
      {.path = "regime",
       .type = T::text,
       .description =
           "the whole run's roofline verdict: which of compute, memory or communication time is largest" + failed,
       .choices = "compute,memory,comm",
       .nullable = true},
      {.path = "bound_by",
       .type = T::text,
       .description = "the resource that limited the whole run as the simulation found it (TIU, a DMA engine, DDR, "
                      "C2C, L2, latency, ...)" +
                      failed,
       .nullable = true},
      {.path = "fits",
       .type = T::flag,
       .description =
           "the deployment's weights and KV cache fit one chip's DDR (bytes_per_chip <= ddr.capacity_bytes); "
           "a point that does not is still simulated, and plotted hollow" +
           failed,
       .nullable = true},
      {.path = "bytes_per_chip",
       .type = T::integer,
       .unit = "bytes",
       .description = "the weights and KV cache one chip holds under the point's tp, ep and dp" + failed,
       .minimum = 0,
       .nullable = true},
  };
}

// The columns of --head-split and --keep-going.
std::vector<ReportField> sweep_flag_columns() {
  return {
      {.path = "head_split_total_ns",
       .type = T::number,
       .unit = "ns",
       .description = "total_ns of the same point rerun with --attn-split head; empty for a point with nothing to "
                      "split (prefill) or that failed",
       .minimum = 0,
       .nullable = true,
       .when = "--head-split"},
      {.path = "head_split_kv_cache_read_bytes",
       .type = T::integer,
       .unit = "bytes",
       .description = "kv_cache_read_bytes of the same point rerun with --attn-split head; empty for a point with "
                      "nothing to split (prefill) or that failed",
       .minimum = 0,
       .nullable = true,
       .when = "--head-split"},
      {.path = "error",
       .type = T::text,
       .description = "why the point failed, the run's error message; empty when it ran",
       .nullable = true,
       .when = "--keep-going"},
  };
}

// The columns of a sweep row (`g5sim sweep --csv`, one --json line's keys), in the order grid_sweep writes them.
std::vector<ReportField> sweep_fields() {
  std::vector<ReportField> f = sweep_identity_columns();
  for (ReportField& row : sweep_option_columns()) f.push_back(std::move(row));
  const std::string failed = "; empty on a point that failed (--keep-going)";
  for (ReportField& row : sweep_deployment_columns(failed)) f.push_back(std::move(row));
  for (ReportField& row : sweep_result_columns(failed)) f.push_back(std::move(row));
  for (ReportField& row : sweep_flag_columns()) f.push_back(std::move(row));
  return f;
}

// ---- compare -----------------------------------------------------------------------------------

// The workload's columns: the model and the step as the first chip's run resolved it.
std::vector<ReportField> compare_workload_columns() {
  return {
      {.path = "model", .type = T::text, .description = "the model config's name"},
      {.path = "phase",
       .type = T::text,
       .description = "the workload's step kind as the first chip's run classified it",
       .choices = "decode,prefill,mixed"},
      {.path = "batch",
       .type = T::integer,
       .description = "sequences in the step over all chips (the global batch)",
       .minimum = 1},
      {.path = "ctx",
       .type = T::integer,
       .unit = "tokens",
       .description = "the run's kv_len: tokens each sequence attends (the largest of any group of a mix)",
       .minimum = 1},
      {.path = "q_len",
       .type = T::integer,
       .unit = "tokens",
       .description = "query tokens per sequence (the largest of any group of a mix)",
       .minimum = 1},
      {.path = "mix",
       .type = T::text,
       .description = "the step's sequences as groups COUNTxQ_LEN@HISTORY joined by commas (a uniform batch is one "
                      "group)"},
      {.path = "kv_dtype",
       .type = T::text,
       .description = "the KV cache format",
       .choices = "bf16,fp8,fp8-flashmla,mxfp8,mxfp6,mxfp4,nvfp4"},
      {.path = "mla_mode",
       .type = T::text,
       .description = "the MLA decode mode (its default on a model without MLA)",
       .choices = "absorb,standard,expanded"},
      {.path = "weight_dtype",
       .type = T::text,
       .description = "the projection weights' format the first chip's run used",
       .choices = "bf16,fp16,fp8,int8,int4,mxfp8,mxfp6,mxfp4,nvfp4"},
  };
}

// The columns each chip adds: its time and error band, throughput, sharding, limit and speedups.
std::vector<ReportField> compare_chip_columns() {
  // One group of columns per chip of --chip, in its order; <chip> is the chip's label (its name,
  // with its file's stem or path when two chips share a name).
  const std::string each = "; one column per chip, <chip> its label";
  return {
      {.path = "<chip>_total_ns",
       .type = T::number,
       .unit = "ns",
       .description = "the workload's simulated step time on this chip" + each,
       .minimum = 0},
      {.path = "<chip>_band_low_ns",
       .type = T::number,
       .unit = "ns",
       .description = "lower bound of the error band of <chip>_total_ns; empty when the chip config has no "
                      "calibration record" +
                      each,
       .minimum = 0,
       .nullable = true},
      {.path = "<chip>_band_high_ns",
       .type = T::number,
       .unit = "ns",
       .description = "upper bound of the error band of <chip>_total_ns; empty when the chip config has no "
                      "calibration record" +
                      each,
       .minimum = 0,
       .nullable = true},
      {.path = "<chip>_tokens_per_s",
       .type = T::number,
       .unit = "tokens/s",
       .description = "new tokens per second over this chip's whole deployment" + each,
       .minimum = 0},
      {.path = "<chip>_tokens_per_s_per_chip",
       .type = T::number,
       .unit = "tokens/s",
       .description = "<chip>_tokens_per_s divided by the deployment's chips" + each,
       .minimum = 0},
      {.path = "<chip>_tp",
       .type = T::integer,
       .description = "tensor-parallel degree this chip ran the workload on" + each,
       .minimum = 1},
      {.path = "<chip>_ep",
       .type = T::integer,
       .description = "expert-parallel degree this chip ran the workload on" + each,
       .minimum = 1},
      {.path = "<chip>_dp",
       .type = T::integer,
       .description = "data-parallel degree this chip ran the workload on" + each,
       .minimum = 1},
      {.path = "<chip>_chips",
       .type = T::integer,
       .description = "chips of this chip's deployment (tp x dp)" + each,
       .minimum = 1},
      {.path = "<chip>_bound_by",
       .type = T::text,
       .description = "the resource that limited the run on this chip (TIU, a DMA engine, DDR, C2C, L2, latency, "
                      "...)" +
                      each},
      {.path = "<chip>_fits",
       .type = T::flag,
       .description =
           "the weights and KV cache a chip holds fit this chip's DDR (the table marks an unfit time *)" + each},
      {.path = "<chip>_bytes_per_chip",
       .type = T::integer,
       .unit = "bytes",
       .description = "the weights and KV cache one chip holds under this chip's tp, ep and dp" + each,
       .minimum = 0},
      {.path = "<chip>_speedup",
       .type = T::number,
       .unit = "ratio",
       .description = "the first chip's total_ns over this chip's (2 = twice as fast; 0 when this chip's time is 0); "
                      "for every chip after the first, <chip> its label",
       .minimum = 0,
       .when = "each chip after the first"},
      {.path = "<chip>_speedup_per_chip",
       .type = T::number,
       .unit = "ratio",
       .description = "this chip's tokens_per_s_per_chip over the first chip's (0 when the first's is 0); for every "
                      "chip after the first, <chip> its label",
       .minimum = 0,
       .when = "each chip after the first"},
  };
}

// The columns of `g5sim compare --csv`: the workload's, then a group per chip.
std::vector<ReportField> compare_fields() {
  std::vector<ReportField> f = compare_workload_columns();
  for (ReportField& row : compare_chip_columns()) f.push_back(std::move(row));
  return f;
}

// ---- diff --------------------------------------------------------------------------------------

// The identity and totals diff read of one run file (the object "a" or "b").
std::vector<ReportField> diff_run(const std::string& key, const std::string& which) {
  const std::string p = key + ".";
  return {
      {.path = key, .type = T::object, .description = "what diff read of the " + which + " run's JSON file"},
      {.path = p + "source", .type = T::text, .description = "the " + which + " run file's path as given"},
      {.path = p + "chip", .type = T::text, .description = "the chip config's name in the " + which + " run"},
      {.path = p + "model", .type = T::text, .description = "the model config's name in the " + which + " run"},
      {.path = p + "scope",
       .type = T::text,
       .description = "what the " + which + " run simulated: a whole step or one attention block",
       .choices = "step,block"},
      {.path = p + "phase",
       .type = T::text,
       .description = "the step kind of the " + which + " run (its workload.phase)",
       .choices = "decode,prefill,mixed"},
      {.path = p + "batch",
       .type = T::integer,
       .description = "sequences over all chips in the " + which + " run",
       .minimum = 1},
      {.path = p + "kv_len",
       .type = T::integer,
       .unit = "tokens",
       .description = "context length of the " + which + " run (its workload.kv_len)",
       .minimum = 1},
      {.path = p + "chips",
       .type = T::integer,
       .description = "chips of the " + which + " run's deployment",
       .minimum = 1},
      {.path = p + "total_ps",
       .type = T::integer,
       .unit = "ps",
       .description = "the " + which + " run's simulated time, exact",
       .minimum = 0},
      {.path = p + "tokens_per_s",
       .type = T::number,
       .unit = "tokens/s",
       .description = "new tokens per second over the " + which + " run's whole deployment",
       .minimum = 0},
      {.path = p + "tokens_per_s_per_chip",
       .type = T::number,
       .unit = "tokens/s",
       .description = "the " + which + " run's tokens_per_s divided by its chips",
       .minimum = 0},
  };
}

// One list of compared lines: its name key (and kind for ops), A's and B's time and their difference.
std::vector<ReportField> diff_lines(const std::string& key, const std::string& what, const std::string& name_key,
                                    const std::string& name_description, const std::string& time, bool kinds) {
  const std::string p = key + "[].";
  std::vector<ReportField> f{
      {.path = key, .type = T::records, .description = what},
      {.path = p + name_key, .type = T::text, .description = name_description},
  };
  if (kinds) f.push_back({.path = p + "kind", .type = T::text, .description = "the op's kind"});
  f.push_back({.path = p + "a_ns",
               .type = T::number,
               .unit = "ns",
               .description = time + " in run A (0 when A has none)",
               .minimum = 0});
  f.push_back({.path = p + "b_ns",
               .type = T::number,
               .unit = "ns",
               .description = time + " in run B (0 when B has none)",
               .minimum = 0});
  f.push_back({.path = p + "delta_ns", .type = T::number, .unit = "ns", .description = "b_ns minus a_ns"});
  return f;
}

std::vector<ReportField> diff_fields() {
  std::vector<ReportField> f{
      {.path = "schema_version",
       .type = T::integer,
       .description = "version of this document's layout (1)",
       .minimum = 1},
  };
  const auto add = [&f](std::vector<ReportField> rows) {
    for (ReportField& row : rows) f.push_back(std::move(row));
  };
  add(diff_run("a", "first"));
  add(diff_run("b", "second"));
  f.push_back({.path = "total_delta_ns",
               .type = T::number,
               .unit = "ns",
               .description = "B's total time minus A's (negative: B is faster)"});
  add(diff_lines("kinds", "per op kind, its busy time in each run: A's kinds busiest first, then kinds only B has",
                 "kind", "the op kind", "the union of the kind's op intervals", false));
  add(diff_lines(
      "layers", "per decoder layer in layer order, then the ops outside the layers (embedding, lm_head) last", "layer",
      "the layer's number as text, or outside for the ops outside the layers",
      "the layer's span from its first op's start to its last op's end (outside: its ops' busy time summed)", false));
  add(diff_lines("top_ops",
                 "the --top ops whose duration moved most, largest |delta_ns| first; ops matched by name, layer and "
                 "occurrence",
                 "op", "the op's name, with \" @LAYER\" appended for an op inside a decoder layer",
                 "the op's duration (end minus start)", true));
  return f;
}

// ---- validate ----------------------------------------------------------------------------------

const char* const kWorkloads = "step,block,matmul,fa2,serve";
const char* const kMetrics =
    "step_ms,first_token_s,tokens_per_s,kernel_us,tflops,op_us,ttft_ms,tpot_ms,itl_ms,e2e_ms,output_tokens_per_s,"
    "requests_per_s";

// The cells of one validated measurement row, shared by the JSON rows and the CSV. `p`: the JSON
// path's prefix ("rows[]." or ""); `csv`: the CSV has the hardware column. A text the row leaves
// empty is an empty cell in the CSV, null in the JSON.
std::vector<ReportField> validation_row_fields(const std::string& p, bool csv) {
  const bool empty_text = true;
  std::vector<ReportField> f{
      {.path = p + "id", .type = T::text, .description = "the measurement's id, unique in the table"},
  };
  if (csv) {
    f.push_back({.path = p + "hardware",
                 .type = T::text,
                 .description = "what the measurement ran on, in words, as the table says"});
  }
  std::vector<ReportField> rest{
      {.path = p + "chip",
       .type = T::text,
       .description = "the table's chip cell: a shipped chip config's stem or a path"},
      {.path = p + "chip_config",
       .type = T::text,
       .description = "the chip config file the row ran on (the calibrated one under --calibrated where shipped); "
                      "empty when the row was excluded or its config was not found",
       .nullable = empty_text},
      {.path = p + "model",
       .type = T::text,
       .description = "the table's model cell: a shipped model config's stem or a path; empty for op rows (matmul, "
                      "fa2)",
       .nullable = empty_text},
      {.path = p + "phase",
       .type = T::text,
       .description = "the row's step kind; empty for op and serve rows",
       .choices = "decode,prefill",
       .nullable = empty_text},
      {.path = p + "workload",
       .type = T::text,
       .description = "what is simulated: a whole step, one attention block, one op alone, or a serve of requests",
       .choices = kWorkloads},
      {.path = p + "metric",
       .type = T::text,
       .description = "what was measured; its name ends in the unit of measured and predicted",
       .choices = kMetrics},
      {.path = p + "measured",
       .type = T::number,
       .description = "the published value, in the metric's own unit (six significant digits)",
       .minimum = 0},
      {.path = p + "predicted",
       .type = T::number,
       .description = "g5sim's prediction in the metric's unit (six significant digits); empty unless status is ok",
       .minimum = 0,
       .nullable = true},
      {.path = p + "error_pct",
       .type = T::number,
       .unit = "%",
       .description = std::string("(predicted - measured) / measured x 100, signed; empty unless status is ok (") +
                      (csv ? "2" : "4") + " decimals)",
       .nullable = true},
      {.path = p + "status",
       .type = T::text,
       .description = "ok (predicted), skipped (the simulator could not run it) or excluded (listed, not run)",
       .choices = "ok,skipped,excluded"},
      {.path = p + "reason",
       .type = T::text,
       .description = "why the row was skipped or excluded, on one line; empty when ok",
       .nullable = empty_text},
      {.path = p + "kind",
       .type = T::text,
       .description = "the table's mark of how the value was obtained (as validation_public.md defines the letters)",
       .choices = "M,V,S,D,U"},
      {.path = p + "source",
       .type = T::text,
       .description = "where the measurement comes from: a URL or owner/repo:path"},
      {.path = p + "stat",
       .type = T::text,
       .description = "the statistic a serving latency row reads (p50 unless the row says); empty for other metrics",
       .choices = "p50,mean,p90,p99",
       .nullable = true},
  };
  for (ReportField& row : rest) f.push_back(std::move(row));
  return f;
}

std::vector<ReportField> validate_fields() {
  std::vector<ReportField> f{
      {.path = "schema_version", .type = T::integer, .description = "the layout's version of this JSON", .minimum = 1},
      {.path = "table", .type = T::text, .description = "the measurement table's path as given (or the shipped one)"},
      {.path = "calibrated",
       .type = T::flag,
       .description = "whether rows ran on CHIP.calibrated.yaml where one is shipped (--calibrated)"},
      {.path = "rows",
       .type = T::records,
       .description = "one per table row the filters kept (--chip, --workload), in table order"},
  };
  for (ReportField& row : validation_row_fields("rows[].", false)) f.push_back(std::move(row));
  const std::string held_out = "; null without a calibrated config or when the fit's record has no such figure";
  std::vector<ReportField> rest{
      {.path = "chips",
       .type = T::records,
       .description = "per chip cell of the step, block and op rows (serve rows aside), in order of first appearance"},
      {.path = "chips[].chip", .type = T::text, .description = "the rows' chip cell"},
      {.path = "chips[].rows",
       .type = T::integer,
       .description = "rows of this chip that ran (status ok)",
       .minimum = 0},
      {.path = "chips[].skipped", .type = T::integer, .description = "rows of this chip skipped", .minimum = 0},
      {.path = "chips[].excluded", .type = T::integer, .description = "rows of this chip excluded", .minimum = 0},
      {.path = "chips[].mape_pct",
       .type = T::number,
       .unit = "%",
       .description = "mean of |error_pct| over this chip's rows that ran; null when none ran",
       .minimum = 0,
       .nullable = true},
      {.path = "chips[].leave_one_out_mape_pct",
       .type = T::number,
       .unit = "%",
       .description = "from the calibrated config's record: held-out MAPE over row folds (over every row when the "
                      "fit was transferred from another chip; 0 when the fit ran no cross-validation)" +
                      held_out,
       .minimum = 0,
       .nullable = true},
      {.path = "chips[].leave_one_model_out_mape_pct",
       .type = T::number,
       .unit = "%",
       .description = "from the calibrated config's record: MAPE with each model's rows held out in turn" + held_out,
       .minimum = 0,
       .nullable = true},
      {.path = "chips[].leave_one_setup_out_mape_pct",
       .type = T::number,
       .unit = "%",
       .description = "from the calibrated config's record: MAPE with each set-up's rows held out in turn" + held_out,
       .minimum = 0,
       .nullable = true},
      {.path = "rows_ran",
       .type = T::integer,
       .description = "step, block and op rows that ran (serve rows aside)",
       .minimum = 0},
      {.path = "mape_pct",
       .type = T::number,
       .unit = "%",
       .description = "mean of |error_pct| over every step, block and op row that ran; null when none ran",
       .minimum = 0,
       .nullable = true},
      {.path = "serving", .type = T::object, .description = "the serve rows, summarized apart from the chips' MAPE"},
      {.path = "serving.rows", .type = T::integer, .description = "serve rows that ran (status ok)", .minimum = 0},
      {.path = "serving.skipped", .type = T::integer, .description = "serve rows skipped", .minimum = 0},
      {.path = "serving.excluded", .type = T::integer, .description = "serve rows excluded", .minimum = 0},
      {.path = "serving.mape_pct",
       .type = T::number,
       .unit = "%",
       .description = "mean of |error_pct| over the serve rows that ran; null when none ran",
       .minimum = 0,
       .nullable = true},
      {.path = "serving.metrics",
       .type = T::records,
       .description = "per serving metric of the serve rows that ran, in order of first appearance"},
      {.path = "serving.metrics[].metric",
       .type = T::text,
       .description = "the serving metric",
       .choices = "ttft_ms,tpot_ms,itl_ms,e2e_ms,output_tokens_per_s,requests_per_s"},
      {.path = "serving.metrics[].rows",
       .type = T::integer,
       .description = "serve rows of this metric that ran",
       .minimum = 1},
      {.path = "serving.metrics[].mape_pct",
       .type = T::number,
       .unit = "%",
       .description = "mean of |error_pct| over this metric's serve rows that ran",
       .minimum = 0},
  };
  for (ReportField& row : rest) f.push_back(std::move(row));
  return f;
}

}  // namespace

const std::vector<Report>& explore_reports() {
  static const std::vector<Report> reports{
      {.name = "sweep",
       .format = ReportFormat::csv,
       .command = "g5sim sweep --csv PATH (and --json PATH: the same fields as JSON lines)",
       .description =
           "one row per point of the grid (chips x models x option lists x contexts): the run's resolved "
           "identity, then its figures. The CSV's first line is a comment, '# g5sim VERSION sweep grid POINTS "
           "points sha256 HEX shard I/N', and the column line follows; --json writes one object per point with "
           "the same keys in the same order, null where the CSV cell is empty (and for an unresolved text of a "
           "failed point). The columns from phase to replay are the run-option table's rows that resolve a value "
           "(api/run_options.cpp, `.column`), listed here as they are today. A point that failed under "
           "--keep-going keeps its chip, model, the options it was given or defaulted and its config files, and "
           "has empty figures",
       .fields = sweep_fields()},
      {.name = "compare",
       .format = ReportFormat::csv,
       .command = "g5sim compare --csv PATH",
       .description =
           "one row per workload, run on every chip of --chip. The first line is a comment, '# g5sim VERSION "
           "compare grid POINTS points sha256 HEX sharding fixed|auto', then the column line (absent when there is "
           "no workload). The workload columns are fixed; then each chip, in --chip order, has a group of columns "
           "named <chip>_NAME, <chip> being its label (quoted as a CSV cell when needed), and every chip after the "
           "first also <chip>_speedup and <chip>_speedup_per_chip. The rows here are the fixed columns and one "
           "pattern row per per-chip column, its path with the placeholder <chip>",
       .fields = compare_fields()},
      {.name = "diff",
       .format = ReportFormat::json,
       .command = "g5sim diff A.json B.json --json PATH",
       .schema_version = 1,
       .description = "what moved between two `g5sim run --json` files A and B: each run's identity and totals, "
                      "the difference of their times, and per op kind, per layer and per op (the most moved) A's "
                      "time, B's time and B minus A",
       .fields = diff_fields()},
      {.name = "validate",
       .format = ReportFormat::json,
       .command = "g5sim validate --json PATH",
       .schema_version = 1,
       .description = "every row of a measurement table with g5sim's prediction and its error, then the MAPE per "
                      "chip cell and overall over the step, block and op rows, and the serve rows' MAPE apart, per "
                      "metric and together",
       .fields = validate_fields()},
      {.name = "validate_rows",
       .format = ReportFormat::csv,
       .command = "g5sim validate --csv PATH",
       .description = "one line per measurement-table row the filters kept (--chip, --workload), in table order: "
                      "what was measured, g5sim's prediction and its signed error, or why the row did not run; no "
                      "comment line, the column line first",
       .fields = validation_row_fields("", true)},
  };
  return reports;
}

#pragma GCC diagnostic pop

}  // namespace g5sim
