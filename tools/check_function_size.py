#!/usr/bin/env python3
"""Fails when a function outside the tests is over LIMIT lines (signature line to closing brace, as
Universal Ctags' `line` and `end` fields give them): a function that long mixes steps that deserve
names of their own. C++ and Python files tracked by git, tests/ and python/tests/ excepted.

    python3 tools/check_function_size.py            # the check (CI)
    python3 tools/check_function_size.py --list 60  # every function over 60 lines, longest first
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

LIMIT = 100
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
EXCLUDED = ("tests/", "python/tests/")


def sources():
    listed = subprocess.run(["git", "ls-files", "*.cpp", "*.hpp", "*.py"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    return [f for f in listed if not f.startswith(EXCLUDED)]


def functions(files):
    """(lines, name, file, first line) of every function and method ctags finds."""
    ctags = shutil.which("ctags")
    if ctags is None:
        sys.exit("check_function_size: ctags is not installed (apt-get install universal-ctags)")
    done = subprocess.run([ctags, "--output-format=json", "--c++-kinds=f", "--python-kinds=fm", "--fields=+ne",
                           "-o", "-", *files], cwd=ROOT, capture_output=True, text=True, check=True)
    out = []
    for text in done.stdout.splitlines():
        tag = json.loads(text)
        if tag.get("_type") != "tag" or "end" not in tag:
            continue
        out.append((tag["end"] - tag["line"] + 1, tag["name"], tag["path"], tag["line"]))
    return sorted(out, key=lambda t: (-t[0], t[2], t[3]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", type=int, metavar="N", help="list every function over N lines and exit 0")
    args = parser.parse_args()
    found = functions(sources())
    if args.list is not None:
        for lines, name, path, line in found:
            if lines > args.list:
                print(f"{lines:5} {path}:{line} {name}")
        return 0
    long = [f for f in found if f[0] > LIMIT]
    for lines, name, path, line in long:
        print(f"check_function_size: {path}:{line}: {name} is {lines} lines (at most {LIMIT})", file=sys.stderr)
    if long:
        return 1
    print(f"check_function_size: {len(found)} functions, none over {LIMIT} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
