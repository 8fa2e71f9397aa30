// Reading the report tables (g5sim/report_fields.hpp): a report's columns and CSV header.

#include "g5sim/report_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace g5sim {

const ReportField* Report::find(std::string_view path) const {
  const auto it = std::find_if(fields.begin(), fields.end(), [&](const ReportField& f) { return f.path == path; });
  return it == fields.end() ? nullptr : &*it;
}

std::vector<std::string> Report::column_names(const std::vector<std::string>& present) const {
  std::vector<std::string> names;
  for (const ReportField& f : fields) {
    if (f.path.find_first_of(".[") != std::string::npos) continue;  // a nested key
    if (!f.when.empty() && std::find(present.begin(), present.end(), f.when) == present.end()) continue;
    names.push_back(f.path);
  }
  return names;
}

std::string_view name_of(FieldType type) {
  switch (type) {
    case FieldType::integer: return "integer";
    case FieldType::number: return "number";
    case FieldType::text: return "text";
    case FieldType::flag: return "flag";
    case FieldType::object: return "object";
    case FieldType::records: return "records";
    case FieldType::values: return "values";
    case FieldType::texts: return "texts";
    case FieldType::map: return "map";
  }
  return "?";
}

std::string_view name_of(ReportFormat format) {
  switch (format) {
    case ReportFormat::json: return "json";
    case ReportFormat::json_lines: return "json_lines";
    case ReportFormat::csv: return "csv";
    case ReportFormat::table: return "table";
    case ReportFormat::frame: return "frame";
  }
  return "?";
}

std::string csv_header(const Report& report, const std::vector<std::string>& present) {
  return fmt::format("{}", fmt::join(report.column_names(present), ","));
}

void check_columns(const Report& report, const std::vector<std::string>& written,
                   const std::vector<std::string>& present) {
  const std::vector<std::string> declared = report.column_names(present);
  for (std::size_t i = 0; i < std::max(declared.size(), written.size()); ++i) {
    const std::string a = i < declared.size() ? declared[i] : "(nothing)";
    const std::string b = i < written.size() ? written[i] : "(nothing)";
    if (a != b) {
      throw std::logic_error(
          fmt::format("report {}: column {} is '{}' in its table but '{}' in its writer", report.name, i + 1, a, b));
    }
  }
}

const Report& report_named(const std::vector<Report>& reports, std::string_view name) {
  const auto it = std::find_if(reports.begin(), reports.end(), [&](const Report& r) { return r.name == name; });
  if (it == reports.end()) throw std::logic_error(fmt::format("no report is named '{}'", name));
  return *it;
}

}  // namespace g5sim
