#pragma once
// The run options, declared once. Every front end reads this table instead of spelling an option
// itself: the command line builds its flags, help and checks from it (tools/cli/), the Python
// module its simulate() keywords, their defaults and the Request properties (python/), the
// validation table its `options` column (explore/validation/), the JSON writer its "workload" echo
// keys, and the option-scope rule (an option given to a run it cannot change is an error) lives
// in each row. A test fails when any front end disagrees with it (tests/test_run_options.cpp,
// python/tests/test_run_options.py).
//
// Adding an option: a Request member, a row in api/run_options.cpp, its use in the library.
//
//   for (const g5sim::RunOption& o : g5sim::run_options()) std::cout << o.flag << ": " << o.doc;
//   g5sim::Request r;
//   g5sim::set_option_text(r, *g5sim::find_run_option("batch"), "8");   // checked: range, type
//
// The limits of a run (batch, context, degrees, grid size) are the options' ranges here and
// run_limits() below; the library's layers use the same numbers (models/run_limits.hpp).

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "g5sim/g5sim.hpp"

namespace g5sim {

/// What an option's value is.
enum class OptionType {
  count,  ///< a whole number in [min, max]
  text,   ///< a word the library checks (choices lists the accepted ones, when fixed)
  path,   ///< a file path (never empty)
  flag,   ///< on or off; the command line's flag sets it to !default
};

/// Where an option is taken (bits of RunOption::takes).
enum OptionUse : unsigned {
  kRun = 1u << 0,         ///< `g5sim run` and g5sim.simulate()
  kGridAxis = 1u << 1,    ///< `g5sim sweep` / `compare` take a list (an axis of the grid; list_delimiter)
  kGridFixed = 1u << 2,   ///< `g5sim sweep` / `compare` take one value for every point
  kValidation = 1u << 3,  ///< validation rows take it in their `options` column (key=value)
  kServe = 1u << 4,       ///< `g5sim serve` and g5sim.serve() take one value for every step
};

struct RunOption {
  std::string name;  ///< the Request member, simulate()'s keyword, the validation key
  std::string flag;  ///< the command line's spelling ("--ctx"; "--no-replay" for a default-on flag)
  OptionType type = OptionType::count;
  std::uint64_t min = 0, max = 0;  ///< count: the accepted range
  bool optional = false;           ///< "not given" is a value of its own (Python None, "" on the C++ side)
  std::string choices;             ///< text: the accepted words, comma separated ("" = the chip's or model's names)
  std::string default_doc;         ///< what not giving it means (a row without one: its default value)
  /// An option a runtime may set (g5sim/runtime.hpp): the value a run takes when neither the
  /// request nor its runtime gives one ("" for the others).
  std::string fallback;
  std::string unit;           ///< of a count ("tokens", "sequences", "chips"), or ""
  std::string doc;            ///< one line, the command line's help and Python's docstring
  unsigned takes = 0;         ///< OptionUse bits
  char list_delimiter = ',';  ///< between a grid axis's values on the command line (a mix holds commas)
  std::string json_key;       ///< the key of the resolved value in the JSON "workload" echo, or ""
  /// The names the layers below give it in their errors (a workload's "kv_len" is the option ctx).
  std::vector<std::string> library_names;
  /// Some runs do not feel it (why_option_does_not_apply says which): given to one, it is refused.
  bool scoped = false;
  /// Its resolved value is a column of a run's identity (run_identity: sweep rows, Python's grid).
  bool column = false;
  /// It bounds or speeds the simulation and changes no result (the command limit, replay): a
  /// cache of results (a serve's shared step store) leaves it out of its key.
  bool same_results = false;
};

/// An option's value: nothing (an optional option not given), a count, a text or path, a flag.
using OptionValue = std::variant<std::monostate, std::uint64_t, std::string, bool>;

/// Every option, in the order help texts and docstrings list them.
const std::vector<RunOption>& run_options();
/// The option called `name`, or whose library name `name` is; nullptr when there is none.
const RunOption* find_run_option(const std::string& name);

/// The option's value in `request` (std::monostate for an optional option not given).
OptionValue get_option(const Request& request, const RunOption& option);
/// Sets it, checked: the value's type, a count's range, a path not empty, std::monostate only for
/// an optional option. Throws ConfigError whose field() is option.name.
void set_option(Request& request, const RunOption& option, const OptionValue& value);
/// Sets it from text as a user typed it (a count in digits, a flag as true/false), checked alike.
void set_option_text(Request& request, const RunOption& option, const std::string& text);
/// The value as text: a count's digits, a flag's true/false, "" for nothing.
std::string option_text(const OptionValue& value);

/// Why giving `option` changes nothing in the run `request` describes on `model` ("" when it
/// applies): --prefill-mla-mode in a decode step, --mla-mode on a GQA model, ... A front end
/// refuses such an option when the user gave it; a grid refuses it only when no point feels it.
std::string why_option_does_not_apply(const std::string& option, const Model& model, const Request& request);

/// The command line's spelling of an error's field: an option's flag, "--tp/--ep/--dp" for the
/// sharding as a whole, else the field itself.
std::string flag_of(const std::string& field);

/// The limits that are not one option's range.
struct RunLimits {
  std::uint64_t max_grid_points;         ///< points of one sweep grid
  std::uint64_t max_context_list;        ///< entries of one --ctx list
  std::uint64_t max_compared_workloads;  ///< workloads of one `compare`
  std::uint64_t max_jobs;                ///< threads of one sweep, compare, validate
  std::uint64_t max_chips;               ///< tp x dp of one deployment
  std::uint64_t max_batch;               ///< sequences of one step (an op's batch)
  std::uint64_t max_context;             ///< tokens (kv_len, q_len; an op's m, n, k)
  std::uint64_t max_heads;               ///< attention heads (a model's, an op's)
  std::uint64_t max_head_dim;            ///< a head's dimension
  std::uint64_t max_cores;               ///< cores of a chip (--cores)
  std::uint64_t max_commands;            ///< the largest --max-commands
};
const RunLimits& run_limits();

/// One column of what identifies a run in a table of runs: its name, its resolved value as text,
/// and whether that is a word (a JSON string) or a number.
struct IdentityField {
  std::string name, value;
  bool text = false;
};
/// The columns that identify a run, in order: chip, model, each option row marked `column` (its
/// value as the run resolved it: ctx is the run's kv_len, batch the global batch, ...), chips.
std::vector<IdentityField> run_identity(const Result& result);

}  // namespace g5sim
