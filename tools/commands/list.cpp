// g5sim list: the shipped chip and model configs, one line each, by the names --chip and --model
// take (their stems under share/g5sim/configs).

#include <fmt/format.h>

#include <iostream>

#include "g5sim/runtime.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"

namespace tools {
namespace {

class ListCommand final : public Command {
 public:
  explicit ListCommand(CLI::App& parent)
      : Command(parent.add_subcommand(
            "list",
            "list the shipped chips, models, runtimes and hosts by the names --chip, --model, --runtime and serve's "
            "--kv-tiers take")) {}

  int run(const CliLimits&) override {
    // Every config is loaded: a line is what the file says, and a broken shipped file is an error.
    std::string out = fmt::format("chips ({}/configs/chips; --chip NAME):\n", g5sim::data_dir());
    for (const std::string& stem : g5sim::shipped_chips()) {
      const g5sim::Chip chip = chip_of(stem);
      out += fmt::format("  {:<20} {}\n", stem, chip.summary());
      if (const std::string fit = chip.calibration_summary(); !fit.empty())
        out += fmt::format("  {:<20} {}\n", "", fit);
    }
    out += fmt::format("models ({}/configs/models; --model NAME):\n", g5sim::data_dir());
    for (const std::string& stem : g5sim::shipped_models()) {
      out += fmt::format("  {:<20} {}\n", stem, model_of(stem).summary());
    }
    out += fmt::format("runtimes ({}/configs/runtimes; --runtime NAME):\n", g5sim::data_dir());
    for (const std::string& stem : g5sim::shipped_runtimes()) {
      out += fmt::format("  {:<20} {}\n", stem, g5sim::runtime_named(stem).summary());
    }
    out += fmt::format("hosts ({}/configs/hosts; serve --kv-tiers NAME):\n", g5sim::data_dir());
    for (const std::string& stem : g5sim::shipped_kv_tiers()) {
      const g5sim::KvTiers host = g5sim::load_kv_tiers(stem);
      std::string tiers;
      for (const g5sim::KvTier& t : host.tiers) {
        tiers += fmt::format("{}{} {:.0f} GB at {:g} GB/s after {:g} us", tiers.empty() ? "" : ", ", t.name,
                             static_cast<double>(t.capacity_bytes) / 1e9, t.bandwidth_gb_per_s,
                             static_cast<double>(t.latency_ps) / 1e6);
      }
      out += fmt::format("  {:<20} {}\n", stem, tiers);
    }
    std::cout << out;
    check_stdout();
    return 0;
  }
};

}  // namespace

CommandPtr make_list(CLI::App& app) { return std::make_unique<ListCommand>(app); }

}  // namespace tools
