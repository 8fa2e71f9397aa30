// g5sim check: a chip and a model config validated, and what their numbers add up to (peaks per
// dtype, DMA channels against DDR, parameters, KV bytes per token).

#include <iostream>

#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"

namespace tools {
namespace {

class CheckCommand final : public Command {
 public:
  explicit CheckCommand(CLI::App& parent)
      : Command(parent.add_subcommand("check", "validate a chip and a model config")) {
    add_config_flags(app(), chip_, model_);
  }

  int run(const CliLimits&) override {
    const g5sim::Chip chip_config = chip_of(chip_);
    const g5sim::Model model_config = model_of(model_);
    std::cout << g5sim::check_report(chip_config, model_config);
    std::cout << "ok\n";
    check_stdout();
    return 0;
  }

 private:
  std::string chip_, model_;
};

}  // namespace

CommandPtr make_check(CLI::App& app) { return std::make_unique<CheckCommand>(app); }

}  // namespace tools
