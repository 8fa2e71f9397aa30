#include "tools/commands/command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <limits>

#include "api/parallel_for.hpp"
#include "hw/config_error.hpp"
#include "hw/number_text.hpp"
#include "tools/cli_error.hpp"
#include "tools/context_list.hpp"

namespace tools {

using explore::check_grid_values;
using explore::chip_text_of;
using explore::DesignWorkload;
using explore::number_text;
using explore::point_request;
using explore::SweepGrid;
using explore::SweepPoint;

using api::default_jobs;

std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return hw::bounded_message(out);
}

std::string cli_message(const g5sim::ConfigError& error) {
  const bool parameter = error.source().empty() && !error.field().empty();
  return (parameter ? g5sim::flag_of(error.field()) + ": " : std::string()) + error.what();
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::cerr << "g5sim: warning: " << printable(w) << '\n';
}

CLI::Validator count_in(std::uint64_t lo, std::uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        const std::optional<std::uint64_t> v = hw::read_whole_number(text);
        return v && *v >= lo && *v <= hi ? std::string() : hw::whole_number_expected(text, lo, hi);
      },
      fmt::format("{}..{}", lo, hi));
}

const CLI::Validator& non_empty_path() {
  static const CLI::Validator check(
      [](std::string& text) -> std::string { return text.empty() ? "an empty path names no file" : ""; }, "PATH");
  return check;
}

void add_config_flags(CLI::App* cmd, std::string& chip, std::string& model) {
  cmd->add_option("--chip", chip, "chip config YAML, or a shipped chip's name (g5sim list) [default: sg2262]")
      ->check(non_empty_path());
  cmd->add_option("--model", model,
                  "model config (YAML or a Hugging Face config.json), or a shipped model's name (g5sim list) "
                  "[default: deepseek-v3]")
      ->check(non_empty_path());
}

g5sim::Chip chip_of(const std::string& name) {
  return g5sim::Chip::from_file(name.empty() ? g5sim::shipped_chip_path() : g5sim::chip_path(name));
}

g5sim::Model model_of(const std::string& name) {
  return g5sim::Model::from_file(name.empty() ? g5sim::shipped_model_path() : g5sim::model_path(name));
}

std::vector<g5sim::Model> models_of(const SweepGrid& grid) {
  std::vector<g5sim::Model> models;
  for (const std::string& path : grid.models.empty() ? std::vector<std::string>{""} : grid.models) {
    models.push_back(model_of(path));
  }
  return models;
}

namespace {

// The help line of a table row: its doc, the words it takes, and what not giving it means.
std::string help_of(const g5sim::RunOption& o, bool list) {
  std::string help = o.doc;
  if (!o.choices.empty()) {
    std::string words = o.choices;
    std::replace(words.begin(), words.end(), ',', '|');
    help += fmt::format(" ({})", words);
  }
  if (list) help += o.name == "ctx" ? "; a comma list, or START:STOP:xFACTOR or START:STOP:+STEP" : "; a comma list";
  if (o.type != g5sim::OptionType::flag) help += fmt::format(" [default: {}]", o.default_doc);
  return help;
}

}  // namespace

RunOptionFlags::RunOptionFlags(CLI::App* cmd, unsigned uses, const std::vector<std::string>& except) {
  for (const g5sim::RunOption& o : g5sim::run_options()) {
    if ((o.takes & uses) == 0 || std::find(except.begin(), except.end(), o.name) != except.end()) continue;
    Entry& e = entries_.emplace_back();
    e.option = &o;
    switch (o.type) {
      case g5sim::OptionType::flag: e.cli = cmd->add_flag(o.flag, e.on, help_of(o, false)); break;
      case g5sim::OptionType::count:
        e.cli = cmd->add_option(o.flag, e.text, help_of(o, false));
        // `run` takes one context length: its own message for a list (tools/context_list.hpp).
        if (o.name != "ctx") e.cli->check(count_in(o.min, o.max));
        break;
      case g5sim::OptionType::path:
        e.cli = cmd->add_option(o.flag, e.text, help_of(o, false))->check(non_empty_path());
        break;
      case g5sim::OptionType::text: e.cli = cmd->add_option(o.flag, e.text, help_of(o, false)); break;
    }
  }
}

g5sim::Request RunOptionFlags::request(const CliLimits& limits) const {
  g5sim::Request r;
  for (const Entry& e : entries_) {
    if (e.cli->count() == 0) continue;
    const g5sim::RunOption& o = *e.option;
    if (o.type == g5sim::OptionType::flag) {
      // The flag turns the option away from its default (--strict-capacity on, --no-replay off).
      g5sim::set_option(r, o, !std::get<bool>(g5sim::get_option(g5sim::Request{}, o)));
    } else if (o.name == "ctx") {
      const std::vector<std::uint64_t> list = parse_context_list(e.text);
      if (list.size() != 1) throw CliError("--ctx: `run` takes one context length (use `sweep` for a list)");
      r.ctx = list.front();
    } else {
      g5sim::set_option_text(r, o, e.text);
    }
  }
  r.max_commands = std::min(r.max_commands, limits.max_commands);
  return r;
}

std::vector<std::string> RunOptionFlags::given() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) {
    if (e.cli->count() > 0) out.push_back(e.option->name);
  }
  return out;
}

void GridFlags::add_to(CLI::App* cmd) {
  cmd->add_option("--chip", chips,
                  "chip config YAMLs or shipped chips' names (g5sim list), a comma list [default: sg2262]")
      ->delimiter(',')
      ->check(non_empty_path());
  cmd->add_option("--model", models,
                  "model configs or shipped models' names (g5sim list), a comma list [default: deepseek-v3]")
      ->delimiter(',')
      ->check(non_empty_path());
  for (const g5sim::RunOption& o : g5sim::run_options()) {
    if ((o.takes & g5sim::kGridAxis) == 0) continue;
    const std::string help = help_of(o, true);
    if (o.name == "ctx") {
      cmd->add_option(o.flag, ctx, help + " (required unless --mix or --seqs gives the sequences)");
      continue;
    }
    if (o.type != g5sim::OptionType::count && o.type != g5sim::OptionType::text) {
      throw std::logic_error("run option " + o.name + ": a grid axis is a count or a word");
    }
    Axis& axis = axes_.emplace_back();
    axis.option = o.name;
    axis.cli = cmd->add_option(o.flag, axis.values, help)->delimiter(o.list_delimiter);
    if (o.type == g5sim::OptionType::count) axis.cli->check(count_in(o.min, o.max));
  }
}

std::vector<std::string> GridFlags::given(const RunOptionFlags& fixed) const {
  std::vector<std::string> out = fixed.given();
  for (const Axis& a : axes_) {
    if (a.cli->count() > 0) out.push_back(a.option);
  }
  return out;
}

const std::vector<std::string>& GridFlags::values(const std::string& option) const {
  for (const Axis& a : axes_) {
    if (a.option == option) return a.values;
  }
  throw std::logic_error("no grid axis " + option);
}

SweepGrid GridFlags::grid(const g5sim::Request& base) const {
  SweepGrid g;
  g.chips = chips;
  g.models = models;
  for (const Axis& a : axes_) g.set_axis(a.option, a.values);
  check_grid_values(g);
  const bool sequences_given = g.axis("mix") != nullptr || !base.seqs.empty();
  if (ctx.empty()) {
    if (!sequences_given) throw CliError("--ctx is required (or --mix / --seqs: the step's sequences)");
    return g;
  }
  g.contexts = parse_context_list(ctx);
  return g;
}

std::string why_no_point_feels(const std::string& option, const std::vector<g5sim::Model>& models,
                               const std::vector<SweepPoint>& points, const g5sim::Request& base) {
  std::string why;
  for (const SweepPoint& p : points) {
    const std::string reason = g5sim::why_option_does_not_apply(option, models[p.model], point_request(base, p));
    if (reason.empty()) return {};
    if (why.empty()) why = reason;
  }
  return why;
}

void refuse_options_without_effect(const std::vector<std::string>& given, const std::vector<g5sim::Model>& models,
                                   const std::vector<SweepPoint>& points, const g5sim::Request& base, bool grid) {
  for (const std::string& option : given) {
    const std::string why = why_no_point_feels(option, models, points, base);
    if (!why.empty()) {
      throw CliError(fmt::format("{}: changes {}: {}", g5sim::flag_of(option),
                                 grid ? "no point of the grid" : "nothing in this run", why));
    }
  }
}

void DesignFlags::add_to(CLI::App* cmd, const std::string& slo_ttft_help, const std::string& slo_tpot_help,
                         const std::string& csv_help) {
  cmd->add_option("--serve", serve,
                  "a serve workload instead of a run: g5sim serve's settings as key=value items, space separated "
                  "('rate=2 requests=100 input_len=4096 output_len=1024'; keys as g5sim.serve()'s)");
  cmd->add_option("--slo-ttft-ms", slo_ttft_ms, slo_ttft_help);
  cmd->add_option("--slo-tpot-ms", slo_tpot_ms, slo_tpot_help);
  cmd->add_option("--jobs", jobs, "runs at once, on as many threads (default: the machine's cores; same results)")
      ->check(count_in(1, g5sim::run_limits().max_jobs));
  cmd->add_option("--json", json, "also write the JSON to PATH ('-' for stdout only)")->check(non_empty_path());
  cmd->add_option("--csv", csv, csv_help)->check(non_empty_path());
}

DesignWorkload DesignFlags::workload(const std::string& chip, const std::string& model, const g5sim::Request& base,
                                     const std::vector<std::string>& given) const {
  DesignWorkload w;
  w.base = base;
  if (!serve.empty()) {
    refuse_step_shape_beside_serve(given);
    w.serve = serve;
  }
  w.chip = chip_text_of(chip.empty() ? g5sim::shipped_chip_path() : chip);
  w.model = model_of(model);
  w.slo_ttft_ms = slo_ttft_ms;
  w.slo_tpot_ms = slo_tpot_ms;
  return w;
}

std::unique_ptr<OutputSet> DesignFlags::open() const {
  return std::make_unique<OutputSet>(
      std::vector<std::pair<std::string, std::string>>{{"--csv", csv}, {"--json", json}});
}

void DesignFlags::write(OutputSet& outputs, const std::function<void(std::ostream&)>& table,
                        const std::function<void(std::ostream&)>& csv, const std::function<void(std::ostream&)>& json) {
  if (!outputs.on_stdout()) table(std::cout);
  if (OutputFile* file = outputs.get("--csv")) csv(file->stream());
  if (OutputFile* file = outputs.get("--json")) json(file->stream());
  outputs.close();
}

void refuse_step_shape_beside_serve(const std::vector<std::string>& given) {
  for (const std::string& name : given) {
    const g5sim::RunOption* o = g5sim::find_run_option(name);
    if (o && (o->takes & g5sim::kServe) == 0) {
      throw CliError(
          fmt::format("{}: with --serve the load makes the steps' sequences (give the serve's lengths in "
                      "--serve)",
                      o->flag));
    }
  }
}

void throw_design_input_error(const std::string& field, const std::string& message,
                              const std::vector<std::pair<std::string, std::string>>& flags) {
  for (const auto& [name, flag] : flags) {
    if (name != field) continue;
    const std::string rest = message.rfind(field + ": ", 0) == 0 ? message.substr(field.size() + 2) : message;
    throw CliError(fmt::format("{}: {}", flag, rest));
  }
  throw CliError(fmt::format("--serve: {}", message));
}

unsigned jobs_or_default(unsigned jobs) { return jobs == 0 ? default_jobs() : jobs; }

std::pair<int, int> parse_layer_range(const std::string& text) {
  auto number = [&](std::string_view s) {
    const std::optional<std::uint64_t> v = hw::read_whole_number(s);
    if (!v || *v > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
      throw CliError(fmt::format("--trace-layers: '{}' is not I or I:J with layers I <= J", text));
    }
    return static_cast<int>(*v);
  };
  const auto colon = text.find(':');
  const int first = number(std::string_view(text).substr(0, colon));
  const int last = colon == std::string::npos ? first : number(std::string_view(text).substr(colon + 1));
  if (last < first) throw CliError(fmt::format("--trace-layers: '{}' has J < I", text));
  return {first, last};
}

}  // namespace tools
