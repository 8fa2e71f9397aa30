"""python3 -m g5sim ...: the g5sim command line (same flags, output and exit status)."""

import sys

from ._g5sim import run_cli

if __name__ == "__main__":
    sys.exit(run_cli(sys.argv[1:]))
