// g5sim merge: sweep CSV shards (--shard I/N) back into the unsharded file's bytes.

#include "tools/cli_error.hpp"
#include "tools/commands/commands.hpp"
#include "tools/output_file.hpp"

namespace tools {

using explore::merge_sweeps;
namespace {

class MergeCommand final : public Command {
 public:
  explicit MergeCommand(CLI::App& parent)
      : Command(parent.add_subcommand("merge", "join sweep CSV shards (--shard I/N) into the unsharded file")) {
    app()->add_option("files", paths_, "the shards' CSV files")->check(non_empty_path());
    app()->add_option("--out", out_, "destination ('-' = stdout)")->capture_default_str()->check(non_empty_path());
  }

  int run(const CliLimits&) override {
    if (paths_.empty()) throw CliError("merge: name the shards' CSV files (g5sim merge part0.csv part1.csv ...)");
    const std::string merged = merge_sweeps(paths_);
    OutputSet outputs({{"--out", out_}});
    outputs.get("--out")->stream() << merged;
    outputs.close();
    return 0;
  }

 private:
  std::vector<std::string> paths_;
  std::string out_ = "-";
};

}  // namespace

CommandPtr make_merge(CLI::App& app) { return std::make_unique<MergeCommand>(app); }

}  // namespace tools
