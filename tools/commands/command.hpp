#pragma once
// What the g5sim subcommands share, below them and below the dispatcher (tools/cli.cpp): the
// Command interface each subcommand implements, the run options registered from the one table
// (g5sim/run_options.hpp), the checks every count and path gets, loading configs, the
// option-scope refusal and how warnings and input text are printed.
//
// A subcommand is one file under tools/commands/: a make_X(CLI::App&) that registers its flags
// and returns its Command. Nothing here is global: a call of run_cli owns its commands, so
// several calls (Python threads) may run at once.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "explore/grid_sweep.hpp"
#include "g5sim/design.hpp"
#include "g5sim/g5sim.hpp"
#include "g5sim/knobs.hpp"
#include "g5sim/run_options.hpp"
#include "tools/cli.hpp"
#include "tools/cli_error.hpp"
#include "tools/output_file.hpp"

namespace tools {

/// One subcommand: its parser (registered by its make_ function) and what it does once parsed.
class Command {
 public:
  explicit Command(CLI::App* app) : app_(app) {}
  virtual ~Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  CLI::App* app() const { return app_; }
  /// Runs the parsed command; throws the library's errors (the dispatcher maps them to exit codes).
  virtual int run(const CliLimits& limits) = 0;

 private:
  CLI::App* app_;
};

using CommandPtr = std::unique_ptr<Command>;

/// Input quoted back with control bytes as \xNN (they would garble the terminal), at most
/// hw::kMaxErrorMessageBytes of it.
std::string printable(std::string_view text);
/// An error as the command line says it: a Request parameter's (no source) behind its flag.
std::string cli_message(const g5sim::ConfigError& error);
/// "g5sim: warning: W" on stderr for each.
void print_warnings(const std::vector<std::string>& warnings);

/// A whole number in lo..hi: no sign (CLI11 would wrap "-1" to 2^64 - 1), no overflow.
CLI::Validator count_in(std::uint64_t lo, std::uint64_t hi);
/// A path that is not empty (`--model ''` is a mistake, not "the default").
const CLI::Validator& non_empty_path();

/// --chip and --model of a one-run command: a config file or a shipped config's name each.
void add_config_flags(CLI::App* cmd, std::string& chip, std::string& model);
/// A chip or model config: a file, or a shipped config's stem (g5sim::chip_path); "" (the option
/// not given) is the shipped default.
g5sim::Chip chip_of(const std::string& name);
g5sim::Model model_of(const std::string& name);
/// A grid's models (the shipped one when it lists none).
std::vector<g5sim::Model> models_of(const explore::SweepGrid& grid);

/// The run options a subcommand takes, registered from the table: `uses` picks the rows
/// (kRun for `run`; kGridFixed for `sweep` and `compare`, whose grid axes are SweepFlags').
class RunOptionFlags {
 public:
  /// `except`: options the command registers itself (sensitivity's --ctx list).
  RunOptionFlags(CLI::App* cmd, unsigned uses, const std::vector<std::string>& except = {});
  /// The table's defaults with what was given (checked), capped by the embedding's limits. `run`'s
  /// --ctx is one length; a grid's contexts come from its own list.
  g5sim::Request request(const CliLimits& limits) const;
  /// The options given on the command line (table names).
  std::vector<std::string> given() const;

 private:
  struct Entry {
    const g5sim::RunOption* option = nullptr;
    CLI::Option* cli = nullptr;
    std::string text;
    bool on = false;
  };
  std::deque<Entry> entries_;  // stable addresses: CLI11 writes into them
};

/// The grid a sweep or a comparison walks: comma lists of chips, models and the table's grid
/// axes (kGridAxis), and --ctx as a list or a range (tools/context_list.hpp).
struct GridFlags {
  std::vector<std::string> chips, models;
  std::string ctx;

  void add_to(CLI::App* cmd);
  /// The grid; throws a ConfigError on a bad --ctx list or a value an axis does not take, and a
  /// CliError without --ctx unless the sequences come from --mix or `base`'s --seqs (then the
  /// grid has no context axis).
  explore::SweepGrid grid(const g5sim::Request& base) const;
  /// The grid axes given on the command line (table names), after those of `fixed`.
  std::vector<std::string> given(const RunOptionFlags& fixed) const;
  /// The values given for `option`'s axis (empty when not given).
  const std::vector<std::string>& values(const std::string& option) const;

 private:
  struct Axis {
    std::string option;
    std::vector<std::string> values;
    CLI::Option* cli = nullptr;
  };
  std::deque<Axis> axes_;  // stable addresses: CLI11 writes into them
};

/// A given option that no point of `points` feels is an error naming its flag and why; one that
/// some points feel is fine (a sweep over both phases, say). `grid`: the points stand for a
/// grid, not one run.
void refuse_options_without_effect(const std::vector<std::string>& given, const std::vector<g5sim::Model>& models,
                                   const std::vector<explore::SweepPoint>& points, const g5sim::Request& base,
                                   bool grid);
/// Why no point of `points` feels the option (the first point's reason), or "" when one does.
std::string why_no_point_feels(const std::string& option, const std::vector<g5sim::Model>& models,
                               const std::vector<explore::SweepPoint>& points, const g5sim::Request& base);

/// The knobs a subcommand takes, registered from the knob tables (g5sim/knobs.hpp: the serve's;
/// g5sim/design.hpp: search's, sensitivity's and solve's): each row taking `use` is a flag with
/// the row's help and default. In search (kSearchList) a searchable knob takes a list. What was
/// given goes to the library as (knob, text) items, as Python's keywords do.
class KnobFlags {
 public:
  /// `except`: knobs the command registers itself.
  KnobFlags(CLI::App* cmd, unsigned use, const std::vector<std::string>& except = {});
  /// The knobs given, in table order; a repeated or list flag's values joined by commas.
  g5sim::KnobItems items() const;
  bool given(const std::string& name) const;

 private:
  struct Entry {
    const g5sim::Knob* knob = nullptr;
    CLI::Option* cli = nullptr;
    std::string text;
    std::vector<std::string> texts;  // a list knob's values (repeatable, comma separated)
    bool on = false;                 // a flag knob
  };
  std::deque<Entry> entries_;  // stable addresses: CLI11 writes into them
};

/// A library error as the command line says it, behind the flag it came from: a knob `command`
/// takes (`use`), a run option, a serve item inside --serve; the load as a whole ("requests",
/// "trace") and the sharding as a whole behind the command's name. Always throws.
[[noreturn]] void throw_as_command_line(const std::string& command, unsigned use, const g5sim::ConfigError& error);

/// A command's table, CSV and JSON: the table on standard output unless an output is there.
void write_outputs(OutputSet& outputs, const std::function<void(std::ostream&)>& table,
                   const std::function<void(std::ostream&)>& csv, const std::function<void(std::ostream&)>& json);

/// The design commands (sensitivity, solve) with --serve: a run's shape options given beside it
/// (the ones `g5sim serve` does not take: --batch, --ctx, ...) are refused, naming the flag.
void refuse_step_shape_beside_serve(const std::vector<std::string>& given);
/// The machine's cores when `jobs` is 0.
unsigned jobs_or_default(unsigned jobs);

/// Parses "I:J" or "I" (--trace-layers); throws CliError.
std::pair<int, int> parse_layer_range(const std::string& text);

}  // namespace tools
