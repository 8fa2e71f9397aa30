"""python3 -m g5sim ...: the g5sim command line (same flags, output and exit status), and
python3 -m g5sim plot INPUT -o OUT.png (g5sim.plot)."""

import sys

from ._g5sim import run_cli

if __name__ == "__main__":
    if sys.argv[1:2] == ["plot"]:
        from .plot import main
        sys.exit(main(sys.argv[2:]))
    sys.exit(run_cli(sys.argv[1:]))
