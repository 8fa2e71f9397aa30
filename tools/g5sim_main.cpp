// g5sim: the command-line binary (tools/cli.hpp does the work).
#include "tools/cli.hpp"

int main(int argc, char** argv) { return tools::run_cli(argc, argv); }
