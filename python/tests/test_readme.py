"""The examples of the README and of docs/guide.md (where the README's other journeys went) are real:
every `$ command` line shown with its output is run again and must print exactly that output; every
Python example runs (its asserts hold, its test_ functions pass) and, where the document shows what
it prints, prints exactly that. So their numbers cannot go stale unnoticed. They run in a scratch folder holding a link to configs/, as the README's
relative paths assume the repository's root; `g5sim` and `python3` are this interpreter's module
and interpreter (Debian's /usr/bin/python3 under the README's test command).

The one command not rerun is `g5sim validate` (40 s): its figures are checked against
validation/recorded_mape.csv, which the MAPE ratchet test (ctest) checks against a fresh run.
"""

import csv
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
README = os.path.join(ROOT, "README.md")
DOCUMENTS = ("README.md", "docs/guide.md")
README_LIMIT = 350  # lines: a newcomer reads it to the end; the rest is in docs/


def fenced_blocks(document="README.md"):
    """(language, lines, line number) of each fenced block, lines without the fence's indent."""
    blocks, current = [], None
    with open(os.path.join(ROOT, document), encoding="utf-8") as f:
        for number, line in enumerate(f.read().splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith("```"):
                if current is None:
                    indent = len(line) - len(line.lstrip())
                    current = (stripped[3:], [], number + 1, indent)
                else:
                    blocks.append(current[:3])
                    current = None
                continue
            if current is not None:
                current[1].append(line[current[3]:])
    assert current is None, f"{document}: an unclosed fence"
    return blocks


def shell_examples(document="README.md"):
    """(command, expected output, line, block) for every `$ ` line; its output is the lines up to
    the next `$ ` or the block's end; `block` names the document and its block's first line."""
    examples = []
    for language, lines, first in fenced_blocks(document):
        if language:
            continue
        started = False
        for i, line in enumerate(lines):
            if line.startswith("$ "):
                examples.append([line[2:], [], f"{document}:{first + i}", f"{document}:{first}"])
                started = True
            elif started:
                examples[-1][1].append(line)
    return [(c, "\n".join(out), n, b) for c, out, n, b in examples]


def python_examples(document="README.md"):
    """(code, the printed output shown in the plain block right after it or None, line)."""
    blocks = fenced_blocks(document)
    examples = []
    for i, (language, lines, first) in enumerate(blocks):
        if language != "python":
            continue
        shown = None
        if i + 1 < len(blocks) and blocks[i + 1][0] == "" and blocks[i + 1][2] == first + len(lines) + 2:
            shown = "\n".join(blocks[i + 1][1])
        examples.append(("\n".join(lines), shown, f"{document}:{first}"))
    return examples


@pytest.fixture
def scratch(tmp_path):
    os.symlink(os.path.join(ROOT, "configs"), tmp_path / "configs")
    return tmp_path


def environment():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))


SHELL = [e for d in DOCUMENTS for e in shell_examples(d) if " validate" not in e[0]]
SHELL_IDS = [e[2] for e in SHELL]
PYTHON = [e for d in DOCUMENTS for e in python_examples(d)]


class BlockRuns:
    """Each block's commands run once, in order, in one scratch folder of the block's (a later
    command may read what an earlier one wrote: sweep.csv); each command's output is kept for its
    test. A block runs when the first of its commands is tested."""

    def __init__(self, factory):
        self.factory = factory
        self.outputs = {}

    def output(self, block, line):
        if line not in self.outputs:
            folder = self.factory.mktemp("readme-block")
            os.symlink(os.path.join(ROOT, "configs"), folder / "configs")
            for command, _, at, of in SHELL:
                if of == block:
                    self.outputs[at] = run_shell(command, folder)
        return self.outputs[line]


def run_shell(command, folder):
    script = (f'g5sim() {{ "{sys.executable}" -m g5sim "$@"; }}\n'
              f'python3() {{ "{sys.executable}" "$@"; }}\n' + command + " 2>&1\n")
    done = subprocess.run(["bash", "-c", script], cwd=folder, capture_output=True, text=True,
                          env=environment(), timeout=300)
    return done.stdout


@pytest.fixture(scope="module")
def block_runs(tmp_path_factory):
    return BlockRuns(tmp_path_factory)


def test_the_readme_has_its_journeys_and_is_short():
    # A step, a sweep, a serve, a search and Python, each with real output; at most 350 lines.
    commands = [e[0] for e in shell_examples("README.md")]
    for journey in ("g5sim run", "g5sim sweep", "g5sim serve", "g5sim search"):
        assert any(c.startswith(journey) for c in commands), journey
    assert len(python_examples("README.md")) >= 2
    with open(README, encoding="utf-8") as f:
        assert len(f.read().splitlines()) <= README_LIMIT
    # The guide keeps the other commands' examples.
    guide = [e[0] for e in shell_examples("docs/guide.md")]
    for command in ("g5sim compare", "g5sim diff", "g5sim sensitivity", "g5sim solve", "g5sim calibrate"):
        assert any(c.startswith(command) for c in guide), command


@pytest.mark.slow
@pytest.mark.parametrize("command,shown,line,block", SHELL, ids=SHELL_IDS)
def test_each_command_prints_what_the_readme_shows(block_runs, command, shown, line, block):
    assert block_runs.output(block, line).rstrip("\n") == shown.rstrip("\n"), f"{line}: {command}"


@pytest.mark.slow
@pytest.mark.parametrize("code,shown,line", PYTHON, ids=[n for _, _, n in PYTHON])
def test_each_python_example_runs(scratch, code, shown, line):
    # Test functions the example defines are called, as pytest would.
    calls = "".join(f"\n{name}()" for name in re.findall(r"^def (test_\w+)\(", code, re.M))
    done = subprocess.run([sys.executable, "-c", code + calls], cwd=scratch, capture_output=True, text=True,
                          env=environment(), timeout=300)
    assert done.returncode == 0, f"{line}:\n{done.stderr}"
    if shown is not None:
        assert done.stdout.rstrip("\n") == shown.rstrip("\n"), line


def test_the_validate_figures_are_the_recorded_ones():
    (command, shown, line, _), = [e for d in DOCUMENTS for e in shell_examples(d) if " validate" in e[0]]
    assert "--calibrated" in command
    with open(os.path.join(ROOT, "validation", "recorded_mape.csv"), newline="") as f:
        recorded = {r["chip"]: float(r["mape_pct"]) for r in csv.DictReader(f) if r["mode"] == "calibrated"}
    seen = {}
    for text in shown.splitlines():
        m = re.match(r"\s+(\w+)\s+([\d.]+) %", text)
        if m:
            seen[m.group(1)] = float(m.group(2))
        m = re.match(r"overall MAPE ([\d.]+) %", text)
        if m:
            seen["all"] = float(m.group(1))
    assert seen.keys() == recorded.keys(), line
    for chip, pct in seen.items():
        # The README prints a chip's figure with one decimal, the overall one with two.
        assert pct == round(recorded[chip], 2 if chip == "all" else 1), chip
