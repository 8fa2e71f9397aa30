#pragma once
// The knobs of serve, search, sensitivity and solve, declared once. A knob is a row of a table
// (serving/serve_knobs.cpp: the serve's load, engine and SLOs; explore/design_knobs.cpp: what
// search, sensitivity and solve add) with everything a front end needs to take, check, document
// and echo it: its flag, its Python keyword and validation key, its type and range, its default,
// its help, where it is taken and whether search may list it. Every front end reads the table:
// the command line builds each command's flags and help from it, the Python module its keywords,
// defaults and docstrings, a validation row and a design command's --serve its KEY=VALUE items,
// search its grid's dimensions, the serve's JSON its "engine" echo. Tests hold the front ends to it
// (tests/test_knobs.cpp, python/tests/test_knobs.py).
//
// A knob's value lives in a Settings of its table, read by name where it acts:
//
//   g5sim::ServeSettings s;                 // every serve knob at its default
//   s.set_text("block_tokens", "32");       // checked as the flag checks it: type, range, choices
//   s.count("block_tokens");                // 32; a name no row has is a logic_error (a bug)
//
// Adding a serve knob: its row, its use where it acts, its test (three files).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace g5sim {

/// What a knob's value is.
enum class KnobType : std::uint8_t {
  count,    ///< a whole number in [min, max]
  decimal,  ///< a number in [low, high] ((low, high] when low_open)
  text,     ///< a word or a spec its row's check accepts (choices lists fixed words)
  path,     ///< a file path (never empty)
  flag,     ///< on or off; the command line's flag sets it to !default
  list,     ///< text the command splits (fields, targets): several values, comma separated
};

/// Where a knob is taken (bits of Knob::takes).
enum KnobUse : unsigned {
  kServeKnob = 1u << 0,        ///< `g5sim serve`, g5sim.serve(), g5sim.serve_sweep()'s keywords
  kServeItem = 1u << 1,        ///< a serve workload's KEY=VALUE: --serve of sensitivity and solve, a validation row
  kSearchKnob = 1u << 2,       ///< `g5sim search` and g5sim.search(): one value for every point
  kSearchList = 1u << 3,       ///< search takes a list of values: a dimension of its grid
  kSweepAxis = 1u << 4,        ///< g5sim.serve_sweep() may make it an axis (a list)
  kSensitivityKnob = 1u << 5,  ///< `g5sim sensitivity` and g5sim.sensitivity()
  kSolveKnob = 1u << 6,        ///< `g5sim solve` and g5sim.solve()
};

/// A knob's value: nothing (an optional knob not given), a count, a decimal, a text, a flag.
using KnobValue = std::variant<std::monostate, std::uint64_t, double, std::string, bool>;

class Settings;

struct Knob {
  std::string name;     ///< Python's keyword, a validation row's options key, a --serve item's key
  std::string flag;     ///< the command line's spelling ("--block-tokens"), or "" (Python only)
  std::string keyword;  ///< Python's keyword where it is not `name` ("num_requests"), else ""
  KnobType type = KnobType::count;
  std::uint64_t min = 0, max = 0;  ///< count: the accepted range
  double low = 0, high = 0;        ///< decimal: the accepted range
  bool low_open = false;           ///< decimal: low itself refused
  bool optional = false;           ///< "not given" is a value of its own (Python None)
  std::string choices;             ///< text: the accepted words, comma separated ("" = its check's)
  std::string default_text;        ///< the default as its flag would write it ("" for nothing)
  std::string default_doc;         ///< what not giving it means, when that is not plainly its default
  std::string unit;                ///< of a number ("tokens", "ms"), or ""
  std::string doc;                 ///< one line: the help text and the docstring
  std::string group;               ///< its part: load, engine, slo, cache, disagg, mtp, run, search, ...
  unsigned takes = 0;              ///< KnobUse bits
  /// A search list of a step's run option (micro_batches): the value sets the Request's option of
  /// this name, not a serve setting.
  bool run_option = false;
  /// Python writes a (A, B) pair as "A:B" (a range LO:HI, a disaggregation P:D).
  bool pair = false;
  /// Checks a text's value beyond its type (throws naming the knob); nullptr: the type alone.
  void (*check)(const std::string& text) = nullptr;
  /// The value in effect when the given one defers to another knob (chunk 0: the budget); echoes
  /// show it. nullptr: the value as given.
  KnobValue (*resolved)(const Settings& settings) = nullptr;
  /// Its place in serve's JSON "engine" echo (1, 2, ...), 0 when not echoed there.
  int engine_echo = 0;
  /// Echoed on the serve table's "engine" line (after the schedule), in table order.
  bool engine_line = false;
  /// A searchable knob's column in the search table: its heading ("" = its name) and width.
  std::string label;
  int width = 0;
  /// The search table leaves its column out while every point has it at its default (a mode most
  /// searches do not use); the CSV and JSON keep it.
  bool quiet_at_default = false;

  /// Python's keyword: `keyword`, else `name`.
  const std::string& python() const { return keyword.empty() ? name : keyword; }
  bool takes_in(unsigned use) const { return (takes & use) != 0; }
};

/// Every knob of the serve table, in documentation order (help texts, docstrings, validation's
/// options keys).
const std::vector<Knob>& serve_knobs();

/// The value of `text` as `knob` takes it, checked (type, range, choices, its check); throws
/// g5sim::ConfigError whose field() is the knob's name.
KnobValue knob_value(const Knob& knob, const std::string& text);
/// A value as text, as its flag would take it back ("" for nothing; a decimal's shortest text).
std::string knob_text(const KnobValue& value);

/// The value in effect: `knob`'s resolved hook's, else its value in `settings`.
KnobValue effective_value(const Settings& settings, const Knob& knob);

/// The values of one table's knobs, each its default until set. Read by name where it acts: a
/// name the table does not have, or a read of the wrong type, is a std::logic_error (a bug).
class Settings {
 public:
  explicit Settings(const std::vector<Knob>& table);

  const std::vector<Knob>& table() const { return *table_; }
  /// The row called `name`, or nullptr.
  const Knob* find(std::string_view name) const;

  /// Sets a knob from text as a user typed it; throws ConfigError naming it (see knob_value).
  void set_text(std::string_view name, const std::string& text);
  /// Sets a knob's value, checked as set_text checks its text.
  void set(std::string_view name, const KnobValue& value);
  /// Back to its default, as if never given.
  void reset(std::string_view name);
  /// Whether the knob was set (by set or set_text).
  bool given(std::string_view name) const;

  const KnobValue& value(std::string_view name) const;
  std::uint64_t count(std::string_view name) const;  ///< a count (0 when optional and not given)
  std::optional<std::uint64_t> optional_count(std::string_view name) const;
  double decimal(std::string_view name) const;
  std::optional<double> optional_decimal(std::string_view name) const;
  const std::string& text(std::string_view name) const;  ///< a text, path or list ("" when not given)
  bool flag(std::string_view name) const;
  /// The value as text (knob_text).
  std::string text_of(std::string_view name) const;

  bool operator==(const Settings& other) const;

 private:
  std::size_t index(std::string_view name) const;
  const std::vector<Knob>* table_;
  std::vector<KnobValue> values_;
  std::vector<bool> given_;
};

/// A serve's settings: the values of serve_knobs(). Its trace may also be held as text (a
/// DataFrame from Python): `trace` then names it in errors.
struct ServeSettings : Settings {
  ServeSettings() : Settings(serve_knobs()) {}
  std::optional<std::string> trace_text;
};

}  // namespace g5sim
