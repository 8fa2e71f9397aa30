#!/usr/bin/python3
"""Writes g5sim's reference from its tables: docs/reference.md (every command's flags as its --help
prints them, simulate()'s and the serve/design functions' keywords, every report's fields with
their units) and docs/schema/NAME.schema.json (a JSON Schema per JSON report). Nothing in them is
written by hand: the run-option table (g5sim/run_options.hpp), the knob tables (g5sim/knobs.hpp)
and the report tables (g5sim/report_fields.hpp) are the source; python/tests/test_report_fields.py
fails when a committed file differs from what this writes.

    /usr/bin/python3 tools/write_reference.py            # rewrite the files
    /usr/bin/python3 tools/write_reference.py --check    # exit 1 naming each stale file

Needs the built module (build/python, or PYTHONPATH) and the program beside it."""

import argparse
import json
import os
import subprocess
import sys
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_BUILD_PYTHON = os.path.join(ROOT, "build", "python")
if not any(os.path.isfile(os.path.join(p, "g5sim", "__init__.py")) for p in sys.path if p) \
        and os.path.isdir(_BUILD_PYTHON):
    sys.path.insert(0, _BUILD_PYTHON)

import g5sim  # noqa: E402
from g5sim import _g5sim  # noqa: E402
from g5sim._program import program  # noqa: E402

# The commands in the order `g5sim --help` lists them; op's kinds are commands of their own.
COMMANDS = ["run", "sweep", "compare", "serve", "search", "sensitivity", "solve", "merge", "op", "op matmul", "op fa2",
            "op all_reduce", "op all_to_all", "check", "list", "diff", "validate", "calibrate"]

_JSON_TYPES = {"integer": "integer", "number": "number", "text": "string", "flag": "boolean"}


def _help(command: str) -> str:
    text = subprocess.run([program(), *command.split(), "--help"], check=True, capture_output=True,
                          text=True).stdout
    # The program's path as it was called is no part of the reference.
    return text.replace(program(), "g5sim")


def _leaf_schema(field: Dict[str, Any], schema_version: int) -> Dict[str, Any]:
    kind = field["type"]
    if kind in ("values", "texts"):
        node: Dict[str, Any] = {"type": "array", "items": {"type": "number" if kind == "values" else "string"}}
    else:
        node = {"type": _JSON_TYPES[kind]}
    if field["choices"]:
        node["enum"] = field["choices"].split(",")
    if field["minimum"] is not None:
        node["minimum"] = int(field["minimum"]) if float(field["minimum"]).is_integer() else field["minimum"]
    if field["path"] == "schema_version" and schema_version:
        node["enum"] = [schema_version]
    return node


def _described(node: Dict[str, Any], field: Dict[str, Any]) -> Dict[str, Any]:
    text = field["description"]
    if field["unit"]:
        text += f" [{field['unit']}]"
    if field["when"]:
        text += f" (present when {field['when']})"
    node["description"] = text
    if field["nullable"]:
        node["type"] = [node["type"], "null"]
        if "enum" in node:
            node["enum"] = node["enum"] + [None]
    return node


def _container(kind: str) -> Dict[str, Any]:
    obj: Dict[str, Any] = {"type": "object", "additionalProperties": False, "required": [], "properties": {}}
    if kind == "records":
        return {"type": "array", "items": obj}
    if kind == "map":
        return {"type": "object"}
    return obj


def _object_of(node: Dict[str, Any]) -> Dict[str, Any]:
    """The object whose properties a child joins: the node itself, or its array's items."""
    if node.get("type") == "array" or node.get("type") == ["array", "null"]:
        return node["items"]
    return node


def json_schema(report: Dict[str, Any]) -> Dict[str, Any]:
    """A JSON Schema (draft 2020-12) of a JSON report, from its rows alone."""
    root: Dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://g5sim.invalid/schema/{report['name']}.schema.json",
        "title": f"{report['command']}" + (f" (schema_version {report['schema_version']})"
                                           if report["schema_version"] else ""),
        "description": report["description"] + " Generated from the report table by tools/write_reference.py.",
        "type": "object", "additionalProperties": False, "required": [], "properties": {},
    }
    nodes: Dict[str, Dict[str, Any]] = {"": root}
    for field in report["fields"]:
        path = field["path"]
        parent_path, _, key = path.rpartition(".")
        parent_path = parent_path[:-2] if parent_path.endswith("[]") else parent_path
        if parent_path not in nodes:
            raise ValueError(f"{report['name']}: {path} comes before its parent {parent_path}")
        parent = nodes[parent_path]
        kind = field["type"]
        node = _container(kind) if kind in ("object", "records", "map") else _leaf_schema(field, report["schema_version"])
        _described(node, field)
        key_path = path[:-2] if path.endswith("[]") else path
        nodes[key_path] = node
        if key == "*":
            parent["additionalProperties"] = node
            continue
        holder = _object_of(parent)
        holder["properties"][key] = node
        if not field["when"]:
            holder["required"].append(key)
    return root


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _report_section(report: Dict[str, Any]) -> List[str]:
    lines = [f"### {report['name']}", "", f"`{report['command']}` ({report['format'].replace('_', ' ')}"
             + (f", schema_version {report['schema_version']}" if report["schema_version"] else "") + ")", "",
             report["description"], ""]
    if report["format"] in ("json", "json_lines"):
        lines += [f"JSON Schema: [schema/{report['name']}.schema.json](schema/{report['name']}.schema.json).", ""]
    lines += ["| field | type | unit | description |", "|---|---|---|---|"]
    for f in report["fields"]:
        notes = []
        if f["choices"]:
            notes.append("one of " + ", ".join(f"`{c}`" for c in f["choices"].split(",")))
        if f["nullable"]:
            notes.append("may be null (empty)")
        if f["when"]:
            notes.append(f"only when {f['when']}")
        text = f["description"] + ("" if not notes else " (" + "; ".join(notes) + ")")
        lines.append(f"| `{_cell(f['path'])}` | {f['type']} | {_cell(f['unit'])} | {_cell(text)} |")
    return lines + [""]


def _keyword_rows(rows: List[Dict[str, Any]], default_key: str) -> List[str]:
    lines = ["| keyword | flag | type | default | unit | what |", "|---|---|---|---|---|---|"]
    for r in rows:
        default = r.get("default_doc") or r.get(default_key) or ""
        lines.append(f"| `{r['keyword'] if 'keyword' in r else r['name']}` | {('`' + r['flag'] + '`') if r['flag'] else ''} "
                     f"| {r['type']} | {_cell(str(default))} | {_cell(r['unit'])} | {_cell(r['doc'])} |")
    return lines


def reference_markdown() -> str:
    lines = ["# g5sim reference", "",
             "Generated by `/usr/bin/python3 tools/write_reference.py` from the program and its tables (run options, "
             "serve and design knobs, report fields); `python/tests/test_report_fields.py` fails when this file is stale. "
             "The README walks through the commands; this page lists everything they take and write.", "",
             "## Commands", ""]
    for command in [""] + COMMANDS:
        lines += [f"### g5sim {command}".rstrip(), "", "```", _help(command).rstrip("\n"), "```", ""]
    lines += ["## Python keywords", "",
              "`g5sim.simulate()` and every function that runs a step take the run options:", ""]
    lines += _keyword_rows([o for o in _g5sim.run_options()], "default")
    lines += ["", "`g5sim.serve()`, `serve_sweep()`, `search()`, `sensitivity()` and `solve()` add the knobs "
              "(a row's `uses` say which):", "",
              "| keyword | flag | type | default | unit | uses | what |", "|---|---|---|---|---|---|---|"]
    uses = ("serve", "serve_item", "search", "search_list", "sweep_axis", "sensitivity", "solve")
    for k in _g5sim.knobs():
        default = k["default_doc"] or k["default"]
        taken = ", ".join(u for u in uses if k[u])
        lines.append(f"| `{k['keyword']}` | {('`' + k['flag'] + '`') if k['flag'] else ''} | {k['type']} "
                     f"| {_cell(default)} | {_cell(k['unit'])} | {taken} | {_cell(k['doc'])} |")
    lines += ["", "## Reports", "",
              "Units: time in ns (with exact integer ps beside it where the simulator's clock is meant), a "
              "request's latencies in ms, a serve's clock in s, bytes, FLOPs, energy in J, power in W. A JSON path "
              "names nested keys with dots and an array's objects with `[]`; `*` is every key of a map.", ""]
    for report in _g5sim.reports():
        lines += _report_section(report)
    return "\n".join(lines).rstrip("\n") + "\n"


def generated_files() -> Dict[str, str]:
    """Every file this tool writes, by its path under the repository, and its text."""
    files = {"docs/reference.md": reference_markdown()}
    for report in _g5sim.reports():
        if report["format"] in ("json", "json_lines"):
            text = json.dumps(json_schema(report), indent=2, ensure_ascii=False) + "\n"
            files[f"docs/schema/{report['name']}.schema.json"] = text
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale file")
    options = parser.parse_args()
    stale = []
    for path, text in generated_files().items():
        full = os.path.join(ROOT, path)
        old = open(full, encoding="utf-8").read() if os.path.exists(full) else None
        if old == text:
            continue
        stale.append(path)
        if not options.check:
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
    for path in stale:
        print(f"{'stale' if options.check else 'wrote'} {path}")
    return 1 if options.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
