"""python3 -m g5sim ...: the g5sim command line (the program itself: same flags, output and exit
status), and python3 -m g5sim plot INPUT -o OUT.png (g5sim.plot)."""

import os
import sys

from ._program import program

if __name__ == "__main__":
    if sys.argv[1:2] == ["plot"]:
        from .plot import main
        sys.exit(main(sys.argv[2:]))
    path = program()
    os.execv(path, [path] + sys.argv[1:])
