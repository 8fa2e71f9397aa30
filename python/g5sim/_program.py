"""Where the g5sim program is, for `python3 -m g5sim`: $G5SIM_PROGRAM when set, else the first
bin/g5sim (an install tree: PREFIX/bin beside PREFIX/lib/python3/dist-packages) or tools/g5sim (a
build tree: build/tools beside build/python) in the package's folder or one of its parents, else
g5sim on PATH. The module binds the library, not the command line: the program is the one CLI."""

import os
import shutil

from ._errors import ConfigError


def program() -> str:
    given = os.environ.get("G5SIM_PROGRAM")
    if given:
        return given
    folder = os.path.dirname(os.path.abspath(__file__))
    for _ in range(6):
        folder = os.path.dirname(folder)
        for candidate in (os.path.join(folder, "bin", "g5sim"), os.path.join(folder, "tools", "g5sim")):
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    found = shutil.which("g5sim")
    if found:
        return found
    raise ConfigError("the g5sim program was not found beside the package, nor on PATH (set G5SIM_PROGRAM)")
