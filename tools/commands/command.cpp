#include "tools/commands/command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <limits>

#include "api/parallel_for.hpp"
#include "explore/context_list.hpp"
#include "hw/config_error.hpp"
#include "hw/number_text.hpp"
#include "tools/cli_error.hpp"

namespace tools {

using explore::parse_context_list;

using explore::check_grid_values;
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

namespace {

// A knob's help line: its doc, the words it takes, a search list's syntax, and its default.
std::string help_of(const g5sim::Knob& k, bool list) {
  std::string help = k.doc;
  if (!k.choices.empty() && k.doc.find(k.choices.substr(0, k.choices.find(','))) == std::string::npos) {
    std::string words = k.choices;
    std::replace(words.begin(), words.end(), ',', '|');
    help += fmt::format(" ({})", words);
  }
  // A count's list may be a doubling range; a word's list is its values, comma separated.
  if (list)
    help += k.type == g5sim::KnobType::count ? ": a list (64,128,256 or LO:HI, doubling)" : ": a list, comma separated";
  if (k.type == g5sim::KnobType::flag) return help;
  const std::string& default_doc = !k.default_doc.empty() ? k.default_doc : k.default_text;
  if (!default_doc.empty()) help += fmt::format(" [default: {}]", default_doc);
  return help;
}

}  // namespace

KnobFlags::KnobFlags(CLI::App* cmd, unsigned use, const std::vector<std::string>& except) {
  for (const g5sim::Knob* k : g5sim::knobs_taking(use)) {
    if (k->flag.empty() || std::find(except.begin(), except.end(), k->name) != except.end()) continue;
    const bool list = (use & g5sim::kSearchList) != 0 && k->takes_in(g5sim::kSearchList);
    Entry& e = entries_.emplace_back();
    e.knob = k;
    if (k->type == g5sim::KnobType::flag) {
      e.cli = cmd->add_flag(k->flag, e.on, help_of(*k, false));
    } else if (k->type == g5sim::KnobType::list) {
      e.cli = cmd->add_option(k->flag, e.texts, help_of(*k, false))->delimiter(',');
    } else {
      e.cli = cmd->add_option(k->flag, e.text, help_of(*k, list));
      if (k->type == g5sim::KnobType::count && !list) e.cli->check(count_in(k->min, k->max));
      if (k->type == g5sim::KnobType::path) e.cli->check(non_empty_path());
    }
  }
}

g5sim::KnobItems KnobFlags::items() const {
  g5sim::KnobItems out;
  for (const Entry& e : entries_) {
    if (e.cli->count() == 0) continue;
    std::string text = e.text;
    if (e.knob->type == g5sim::KnobType::flag) {
      text = e.on ? "true" : "false";
    } else if (e.knob->type == g5sim::KnobType::list) {
      text = fmt::format("{}", fmt::join(e.texts, ","));
    }
    out.emplace_back(e.knob->name, text);
  }
  return out;
}

bool KnobFlags::given(const std::string& name) const {
  for (const Entry& e : entries_) {
    if (e.knob->name == name) return e.cli->count() > 0;
  }
  return false;
}

void throw_as_command_line(const std::string& command, unsigned use, const g5sim::ConfigError& e) {
  const std::string& field = e.field();
  if (!e.source().empty() || field.empty()) throw e;
  const std::string message = e.what();
  const std::string rest = message.rfind(field + ": ", 0) == 0 ? message.substr(field.size() + 2) : message;
  if (field == "requests" || field == "trace" || field == "sharding") throw CliError(command + ": " + rest);
  for (const g5sim::Knob* k : g5sim::knobs_taking(use)) {
    if (k->name == field && !k->flag.empty()) throw CliError(k->flag + ": " + rest);
  }
  if (g5sim::find_run_option(field) != nullptr) throw CliError(g5sim::flag_of(field) + ": " + rest);
  const g5sim::ServeSettings serve;
  if ((use & (g5sim::kSensitivityKnob | g5sim::kSolveKnob)) != 0 && serve.find(field) != nullptr) {
    throw CliError("--serve: " + field + ": " + rest);
  }
  throw CliError(fmt::format("{}: {}: {}", command, field, rest));
}

void write_outputs(OutputSet& outputs, const std::function<void(std::ostream&)>& table,
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
