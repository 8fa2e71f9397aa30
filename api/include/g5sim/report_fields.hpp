#pragma once
// The fields of every report g5sim writes, declared once. A report is one output of one command
// (`g5sim run --json`, `g5sim serve --csv`, ...); its fields are rows of a table kept in the floor
// that writes it (api/run_reports.cpp, serving/serve_reports.cpp, explore/design_reports.cpp)
// with what a reader needs: the name (a JSON path or a CSV column), what it holds, its unit, when
// it is there. From the tables:
//   - every CSV header and every table's column line is written (csv_header, column_names), so a
//     column cannot be added without its row;
//   - the JSON Schemas in docs/schema/ and the reference docs/reference.md are generated
//     (tools/write_reference.py) and a test holds the committed files to the tables;
//   - a test writes every JSON report and compares the keys it finds with the rows
//     (python/tests/test_report_fields.py), both ways;
//   - the Python module's DataFrames take their columns from them (g5sim._g5sim.reports()).
//
// A JSON path names a nested key with dots and the objects of an array with []:
//   "energy.total_j"           the key total_j of the object energy
//   "ops[].op_start_ns"        the key op_start_ns of every object of the array ops
//   "commands.*"               every key of a map (the chip's engines by name)
// Every parent is a row of its own (object, records or map), so that a schema can be written from
// the rows alone.
//
// One unit per quantity across reports: time in ns (with its exact integer ps beside where the
// simulator's own clock is meant), ms for a request's latencies (TTFT, TPOT, ITL, E2EL, as vLLM's
// benchmarks), s for a serve's clock; bytes; FLOPs; energy in J; power in W.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace g5sim {

/// What a field holds (JSON's type; a CSV cell of a number or text).
enum class FieldType {
  integer,  ///< a whole number
  number,   ///< a decimal number
  text,     ///< a string (its choices when it takes a fixed few)
  flag,     ///< true or false
  object,   ///< a JSON object whose keys are rows of their own
  records,  ///< a JSON array of objects whose keys are rows of their own ("x[].key")
  values,   ///< a JSON array of numbers
  texts,    ///< a JSON array of strings
  map,      ///< a JSON object keyed by names (engines); its values are the row "x.*"
};

/// How a report is written.
enum class ReportFormat {
  json,        ///< one JSON document
  json_lines,  ///< one JSON object per line
  csv,         ///< a CSV file, one header line (after any comment line the report states)
  table,       ///< a column table of the text output
  frame,       ///< a Python DataFrame
};

struct ReportField {
  std::string path;  ///< the JSON path or the column's name
  FieldType type = FieldType::number;
  std::string unit;               ///< "ns", "ms", "s", "bytes", "FLOPs", "J", "W", "tokens/s", ...; "" for none
  std::string description;        ///< one line: what it holds
  std::string choices;            ///< text: the values it takes, comma separated ("" for any)
  std::optional<double> minimum;  ///< a number's least value, where there is one
  bool nullable = false;          ///< JSON null (an empty CSV cell) where it does not apply
  /// "" when always there; else when it is (a flag of the command, "the chip has an energy
  /// section"). A CSV column with a `when` is written only under that flag (csv_header).
  std::string when;
};

struct Report {
  std::string name;  ///< unique: "run", "serve", "serve_requests", ...
  ReportFormat format = ReportFormat::json;
  std::string command;      ///< what writes it: "g5sim run --json PATH", "g5sim.serve_sweep()"
  int schema_version = 0;   ///< a JSON report's "schema_version"; 0 for the others
  std::string description;  ///< one paragraph: what a row or the document is
  std::vector<ReportField> fields;

  /// The row of `path`, or nullptr.
  const ReportField* find(std::string_view path) const;
  /// The top-level names (a table's or CSV's columns; a JSON document's keys) in order, those
  /// with a `when` only when it is one of `present`.
  std::vector<std::string> column_names(const std::vector<std::string>& present = {}) const;
};

std::string_view name_of(FieldType type);
std::string_view name_of(ReportFormat format);

/// column_names joined with commas: a CSV's header line (without its newline).
std::string csv_header(const Report& report, const std::vector<std::string>& present = {});

/// Throws std::logic_error naming the first difference when `written` (the columns a writer
/// makes) is not `report`'s column_names(present): a writer and its table out of step is a bug.
void check_columns(const Report& report, const std::vector<std::string>& written,
                   const std::vector<std::string>& present = {});

/// The reports of the run floor: `run --json`, run's two tables, `op --json`.
const std::vector<Report>& run_reports();

/// The report named `name` of `reports`; std::logic_error when there is none (a bug).
const Report& report_named(const std::vector<Report>& reports, std::string_view name);

}  // namespace g5sim
