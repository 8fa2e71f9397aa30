// g5sim: the command-line binary (tools/cli.hpp does the work). Ctrl-C or a TERM removes the
// outputs being written and exits at once (130, 143); a Python host keeps its own handlers.
#include "tools/cli.hpp"
#include "tools/output_file.hpp"

int main(int argc, char** argv) {
  tools::remove_outputs_on_interrupt();
  return tools::run_cli(argc, argv);
}
