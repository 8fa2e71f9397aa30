// g5sim's command line (tools/cli.hpp): the dispatcher over the subcommands of tools/commands/.
// run_cli() is the only place where errors become exit codes: 0 success, 2 bad input (one line on
// stderr), 1 a failed write or an internal error (a bug: please report it with the command line).
// Each call builds its own parser and commands, so concurrent calls (Python threads) share nothing.

#include "tools/cli.hpp"

#include <fmt/format.h>

#include <iostream>

#include "hw/config_error.hpp"
#include "hw/strict_config.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"

namespace tools {
namespace {

// "; did you mean --ctx?" for the first --option on the command line that the chosen subcommand
// (or the top level) does not have, when one of its options is near it (hw::closest_match); else "".
std::string did_you_mean(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* scope = &app;
  for (int i = 1; i < argc; ++i) {
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == argv[i]) scope = sub;
    }
    if (scope != &app) break;
  }
  std::vector<std::string> known;
  for (const CLI::Option* o : scope->get_options({})) {
    for (const std::string& name : o->get_lnames()) known.push_back("--" + name);
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 3 || arg.rfind("--", 0) != 0) continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), arg) != known.end()) continue;
    const std::string best = hw::closest_match(arg, known);  // the config readers' suggestion rule
    return best.empty() ? std::string() : "; did you mean " + best + "?";
  }
  return {};
}

// ": op takes matmul or fa2 (g5sim help op)" when the command named on the line needs a
// subcommand and none (or an unknown word) was given; else "".
std::string subcommands_of(const CLI::App& app, int argc, const char* const* argv, const CLI::ParseError& e) {
  if (std::string(e.what()).find("subcommand is required") == std::string::npos) return {};
  const CLI::App* scope = &app;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    for (const CLI::App* sub : scope->get_subcommands({})) {
      if (sub->get_name() == argv[i]) {
        scope = sub;
        path += (path.empty() ? "" : " ") + sub->get_name();
        break;
      }
    }
  }
  std::vector<std::string> names;
  for (const CLI::App* sub : scope->get_subcommands({})) names.push_back(sub->get_name());
  if (names.empty()) return {};
  return fmt::format(": {} takes {} (g5sim help {})", path, fmt::join(names, " or "), path);
}

// "'serv' is not a subcommand; did you mean serve? ..." when the first word is no subcommand and
// no option (CLI11 would list it among arguments "not expected", value first); else "".
std::string unknown_subcommand(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2 || argv[1][0] == '-' || argv[1][0] == '\0') return {};
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == argv[1]) return {};
    names.push_back(sub->get_name());
  }
  const std::string best = hw::closest_match(argv[1], names);
  return fmt::format("'{}' is not a subcommand{} (subcommands: {}; g5sim help lists them)", printable(argv[1]),
                     best.empty() ? std::string() : "; did you mean " + best + "?", fmt::join(names, ", "));
}

// CLI11's "The following arguments were not expected: 3 --rtae" names them last first: in the
// order they were given, as one would read them on the command line.
std::string extras_text(const CLI::App& app) {
  std::vector<std::string> shown;
  for (const std::string& x : app.remaining(true)) shown.push_back(printable(x));
  return fmt::format("unexpected argument{} {}", shown.size() == 1 ? "" : "s", fmt::join(shown, " "));
}

// `g5sim help [SUBCOMMAND...]`: the help of the app or of a (nested) subcommand.
int print_help(CLI::App& app, const CLI::App* help, const std::vector<std::string>& topic_path) {
  CLI::App* topic = &app;
  std::string path;
  for (const std::string& name : topic_path) {
    CLI::App* sub = nullptr;
    for (CLI::App* candidate : topic->get_subcommands({})) {
      if (candidate->get_name() == name) sub = candidate;
    }
    if (sub == nullptr || sub == help) {
      std::cerr << "g5sim: error: help: no subcommand '" << printable(path.empty() ? name : path.substr(1) + " " + name)
                << "' (g5sim help lists them)\n";
      return 2;
    }
    topic = sub;
    path += " " + name;
  }
  // App::help() would describe the help subcommand itself (it follows the parsed subcommand).
  std::cout << app.get_formatter()->make_help(topic, "g5sim" + path, CLI::AppFormatMode::Normal);
  check_stdout();
  return 0;
}

// Runs `command`, turning what it throws into a message and an exit status.
int run_reporting_errors(Command& command, const CliLimits& limits) {
  try {
    return command.run(limits);
  } catch (const WriteError& e) {
    std::cerr << "g5sim: error: " << printable(e.what()) << '\n';
    return 1;
  } catch (const g5sim::ConfigError& e) {
    // A request parameter has no source: say which flag it came from.
    std::cerr << "g5sim: error: " << printable(cli_message(e)) << '\n';
    return 2;
  } catch (const hw::InputError& e) {
    std::cerr << "g5sim: error: " << g5sim::flag_of(e.field()) << ": " << printable(e.what()) << '\n';
    return 2;
  } catch (const hw::ConfigError& e) {
    std::cerr << "g5sim: error: " << printable(e.what()) << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "g5sim: internal error: " << printable(e.what()) << '\n';
    return 1;
  }
}

}  // namespace

int run_cli(int argc, const char* const* argv, const CliLimits& limits) {
  CLI::App app{
      "g5sim: instruction-level performance simulator of LLM inference steps (DeepSeek MLA first) on "
      "SG2262-class TPUs and other chips described in YAML"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("g5sim ") + g5sim::version());
  std::vector<CommandPtr> commands;
  for (auto make : {make_run, make_sweep, make_compare, make_serve, make_search, make_sensitivity, make_solve,
                    make_merge, make_op, make_check, make_list, make_diff, make_validate, make_calibrate}) {
    commands.push_back(make(app));
  }
  std::vector<std::string> help_topic;
  CLI::App* help = app.add_subcommand("help", "print this help, or a subcommand's: g5sim help run");
  help->add_option("subcommand", help_topic,
                   "a subcommand (run, sweep, compare, serve, sensitivity, solve, merge, op, check, list, diff, "
                   "validate, calibrate)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    // --help, --version: their text must reach standard output (a full disk is an error).
    const int status = app.exit(e);
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "g5sim: error: writing standard output failed\n";
      return 1;
    }
    return status;
  } catch (const CLI::ParseError& e) {
    // One line, like every other input error, with the nearest option when one was misspelt, or
    // the subcommands a command takes when it needs one (`g5sim op`).
    if (const std::string word = unknown_subcommand(app, argc, argv); !word.empty()) {
      std::cerr << "g5sim: error: " << word << '\n';
      return 2;
    }
    const std::string what = dynamic_cast<const CLI::ExtrasError*>(&e) ? extras_text(app) : std::string(e.what());
    std::cerr << "g5sim: error: " << printable(what) << did_you_mean(app, argc, argv)
              << subcommands_of(app, argc, argv, e) << '\n';
    return 2;
  }
  if (*help) {
    try {
      return print_help(app, help, help_topic);
    } catch (const WriteError& e) {
      std::cerr << "g5sim: error: " << printable(e.what()) << '\n';
      return 1;
    }
  }
  for (const CommandPtr& command : commands) {
    if (*command->app()) return run_reporting_errors(*command, limits);
  }
  // `g5sim` alone behaves as `g5sim run`: the default step on the shipped configs.
  return run_reporting_errors(*commands.front(), limits);
}

}  // namespace tools
