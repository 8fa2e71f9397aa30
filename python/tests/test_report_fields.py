"""The report tables (g5sim.reports(), g5sim/report_fields.hpp) against what the program writes: every
key of every JSON report is a row and every row is a key of some output (both ways, with the runs
below making each optional key appear), every CSV row has its header's cells, the DataFrames take
the tables' columns, and the generated reference (docs/reference.md, docs/schema/) is up to date."""

import csv
import importlib.util
import io
import json
import os
import subprocess

import pytest

import g5sim
from g5sim._program import program

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
REPORTS = {r["name"]: r for r in g5sim.reports()}

SERVE = ["--model", "qwen2.5-1.5b", "--layers", "1", "--requests", "6", "--rate", "50", "--input-len", "64:128",
         "--output-len", "1:6", "--seed", "1"]
SEARCH = ["--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "1", "--concurrency", "4", "--requests", "8",
          "--input-len", "128", "--output-len", "16", "--slo-tpot-ms", "50"]
# A validation table of each kind of row: a step, a kernel, a row whose chip is not shipped
# (skipped), serve rows (the serving section).
BANDS = """calibration:
  g5sim: "0"
  date: "2026-12-05"
  base: "vllm"
  measured: "test"
  rows: ["a"]
  fitted: []
  mape_before_pct: 30
  mape_after_pct: 10
  leave_one_out_mape_pct: 12
  bands:
    coverage: 0.8
    basis: "2 folds"
    ttft: {rows: 7, low: 0.8, high: 1.25}
    tpot: {rows: 6, low: 0.95, high: 1.1}
    all: {rows: 21, low: 0.9, high: 1.2}
"""
MEASURED = """id,hardware,chip,model,phase,batch,ctx,q_len,weight_dtype,weight_group,kv_dtype,tp,ep,dp,cores,workload,options,metric,measured,kind,source,note,exclude
S,"H100",h100,qwen2.5-1.5b,decode,4,512,,,,bf16,1,1,1,,step,,tokens_per_s,900,M,test,,
K,"H100",h100,,,128,4096,1,,,,,,,,fa2,heads=16 kv_heads=1 qk_dim=576 v_dim=512 shared_kv=1,kernel_us,215.0,M,test,,
X,"a made-up chip",nochip,qwen3-8b,decode,1,512,,,,,1,1,1,,step,,tokens_per_s,9.84,U,none,,
E,"H100",h100,qwen2.5-1.5b,decode,4,512,,,,bf16,1,1,1,,step,,tokens_per_s,900,M,test,,excluded for the test
V1,"H100",h100,qwen2.5-1.5b,,,,,bf16,,bf16,1,1,1,,serve,rate=1 requests=4 input_len=16:32 output_len=4:8 seed=0,ttft_ms,50,U,none,,
V2,"H100",h100,qwen2.5-1.5b,,,,,bf16,,bf16,1,1,1,,serve,rate=1 requests=4 input_len=16:32 output_len=4:8 seed=0,output_tokens_per_s,50,U,none,,
"""


def _run(args, cwd):
    done = subprocess.run([program(), *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def _paths(value, prefix, report):
    """The JSON paths of `value` as the tables spell them: a.b, a[].b, a map's keys as a.*."""
    out = set()
    if isinstance(value, dict):
        parent = report_row(report, prefix)
        for key, item in value.items():
            path = f"{prefix}.*" if parent and parent["type"] == "map" else f"{prefix}.{key}" if prefix else key
            out.add(path)
            out |= _paths(item, path, report)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                out |= _paths(item, prefix + "[]", report)
    return out


def report_row(report, path):
    path = path[:-2] if path.endswith("[]") else path
    return next((f for f in report["fields"] if f["path"] == path), None)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Every JSON report, written in the ways that make each of its optional keys appear."""
    d = tmp_path_factory.mktemp("reports")
    (d / "measured.csv").write_text(MEASURED)
    # A calibrated runtime's bands (ttft and tpot of their own, throughput from all's), for the
    # serve's and the search's runtime_bands.
    vllm = open(os.path.join(g5sim.data_dir(), "configs", "runtimes", "vllm.yaml")).read()
    (d / "banded.yaml").write_text(vllm + BANDS)
    runs = {
        "run": [["run", "--chip", "sg2262", "--model", "qwen3-8b", "--layers", "2", "--json", "a.json"],
                ["run", "--chip", "h100.calibrated", "--model", "qwen3-8b", "--scope", "block", "--json", "b.json"],
                ["run", "--chip", "h100", "--model", "qwen3-8b", "--layers", "2", "--runtime", "vllm", "--json",
                 "r.json"]],
        "op": [["op", "matmul", "--chip", "sg2262", "--m", "64", "--n", "64", "--k", "64", "--json", "op.json"]],
        "serve": [["serve", "--chip", "sg2262", *SERVE, "--json", "s1.json"],
                  ["serve", "--chip", "h100.calibrated", *SERVE, "--tp", "1", "--dp", "2", "--disagg", "1:1",
                   "--json", "s2.json"],
                  ["serve", "--chip", "h100", *SERVE, "--mtp", "1", "--accept", "0.8", "--step-cache", "bucket:20",
                   "--runtime", "sglang", "--json", "s3.json"],
                  ["serve", "--chip", "h100", *SERVE, "--runtime", str(d / "banded.yaml"), "--json", "s4.json"],
                  # more distinct steps than step_cache auto simulates at once: its rounds and checks; a
                  # host's KV tiers below the chip
                  ["serve", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2", "--rate", "8", "--requests",
                   "40", "--input-len", "50:900", "--output-len", "2:30", "--seed", "5", "--kv-tiers", "host-dram-ssd",
                   "--json", "s5.json"],
                  # attention-FFN disaggregation: its own object
                  ["serve", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2", "--rate", "8", "--requests",
                   "4", "--input-len", "64", "--output-len", "4", "--afd", "1:1", "--micro-batches", "2", "--json",
                   "s6.json"]],
        "search": [["search", *SEARCH, "--tp", "1,8", "--ep", "1", "--dp", "1", "--max-seqs", "2,4",
                    "--json", "search.json"],
                   ["search", *SEARCH, "--tp", "1", "--ep", "1", "--dp", "1", "--runtime", str(d / "banded.yaml"),
                    "--json", "search2.json"]],
        "sensitivity": [["sensitivity", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "1", "--batch", "4",
                         "--ctx", "1024", "--fields", "ddr.bandwidth_gb_per_s", "--json", "sens.json"],
                        ["sensitivity", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "1", "--batch", "4",
                         "--ctx", "1024", "--runtime", "vllm", "--fields", "runtime.step.cpu_ns", "--json",
                         "sens2.json"]],
        "solve": [["solve", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "1", "--batch", "4",
                   "--target", "step_ms<=0.15", "--vary", "ddr.bandwidth_gb_per_s", "--json", "solve.json"]],
        "diff": [["diff", "a.json", "c.json", "--top", "3", "--json", "diff.json"]],
        "validate": [["validate", "--measured", "measured.csv", "--calibrated", "--json", "v.json"]],
    }
    _run(["run", "--chip", "sg2262", "--model", "qwen3-8b", "--layers", "2", "--kv-dtype", "fp8", "--json", "c.json"],
         d)
    docs = {}
    for name, commands in runs.items():
        docs[name] = []
        for args in commands:
            _run(args, d)
            docs[name].append(json.loads((d / args[-1]).read_text()))
    return docs


@pytest.mark.parametrize("name", ["run", "op", "serve", "search", "sensitivity", "solve", "diff", "validate"])
def test_every_json_key_is_a_row_and_every_row_a_key(outputs, name):
    report = REPORTS[name]
    declared = [f["path"] for f in report["fields"]]
    assert len(declared) == len(set(declared)), "a path declared twice"
    found = set()
    for doc in outputs[name]:
        found |= _paths(doc, "", report)
    assert sorted(found - set(declared)) == [], "keys written but not declared"
    assert sorted(set(declared) - found) == [], "rows no output wrote"


_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _type_ok(value, kind):
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def _violations(schema, value, where="$"):
    """What `value` breaks of the JSON Schema keywords the generated schemas use."""
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if not any(_type_ok(value, k) for k in kinds):
            return [f"{where}: {json.dumps(value)[:40]} is not {kinds}"]
    errors = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} not in {schema['enum']}")
    if "minimum" in schema and isinstance(value, (int, float)) and value < schema["minimum"]:
        errors.append(f"{where}: {value} below {schema['minimum']}")
    if isinstance(value, dict):
        errors += [f"{where}: missing {k}" for k in schema.get("required", []) if k not in value]
        for key, item in value.items():
            if key in schema.get("properties", {}):
                errors += _violations(schema["properties"][key], item, f"{where}.{key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                errors += _violations(schema["additionalProperties"], item, f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unexpected {key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += _violations(schema["items"], item, f"{where}[{i}]")
    return errors


@pytest.mark.parametrize("name", ["run", "op", "serve", "search", "sensitivity", "solve", "diff", "validate"])
def test_every_json_report_follows_its_generated_schema(outputs, name):
    # Types, choices, minimums, nulls and required keys as the rows declare them.
    with open(os.path.join(ROOT, "docs", "schema", f"{name}.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    for doc in outputs[name]:
        assert _violations(schema, doc) == []


def test_the_validator_is_not_vacuous(outputs):
    with open(os.path.join(ROOT, "docs", "schema", "serve.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    doc = json.loads(json.dumps(outputs["serve"][0]))
    doc["ttft_ms"]["p50"] = "fast"
    doc["engine"]["surprise"] = 1
    del doc["requests"]
    assert sorted(_violations(schema, doc)) == sorted(["$: missing requests", "$.engine: unexpected surprise",
                                                       '$.ttft_ms.p50: "fast" is not [\'number\']'])


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_every_row_has_its_parent_before_it(name):
    seen = set()
    for f in REPORTS[name]["fields"]:
        parent = f["path"].rpartition(".")[0]
        parent = parent[:-2] if parent.endswith("[]") else parent
        assert parent == "" or parent in seen, f["path"]
        seen.add(f["path"])


def _csv_lines(text):
    return list(csv.reader(io.StringIO("\n".join(line for line in text.splitlines() if not line.startswith("#")))))


@pytest.mark.parametrize("name,args", [
    ("serve_requests", ["serve", "--chip", "h100", *SERVE, "--csv", "-"]),
    ("sweep", ["sweep", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "1", "--batch", "1,4", "--ctx", "512",
               "--head-split", "--keep-going", "--csv", "-"]),
    ("search_points", ["search", *SEARCH, "--max-seqs", "2,4", "--csv", "-"]),
    ("sensitivity_points", ["sensitivity", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "1", "--batch",
                            "4", "--ctx", "1024", "--fields", "ddr.bandwidth_gb_per_s", "--csv", "-"]),
])
def test_a_csv_has_the_tables_columns_and_each_row_its_cells(tmp_path, name, args):
    rows = _csv_lines(_run(args, tmp_path))
    present = ["--head-split", "--keep-going"] if name == "sweep" else []
    columns = [f["path"] for f in REPORTS[name]["fields"] if not f["when"] or f["when"] in present]
    assert rows[0] == columns
    assert len(rows) > 1 and all(len(r) == len(columns) for r in rows[1:])


def test_the_dataframes_take_the_tables_columns(v3, chip):
    r = g5sim.simulate(chip, v3, layers=1)
    assert list(r.to_dataframe().columns) == [f["path"] for f in REPORTS["ops"]["fields"]]
    assert list(r.per_layer().columns) == [f["path"] for f in REPORTS["layers"]["fields"]]
    frame = g5sim.serve_sweep({"chip": ["h100"], "rate": [10, 50]}, model="qwen2.5-1.5b", num_requests=4,
                              input_len=64, output_len=4, layers=1)
    # The table's columns, an axis where the grid has it: chip; the knob axis (rate) after dp.
    declared = [f["path"] for f in REPORTS["serve_sweep"]["fields"] if not f["when"] or f["path"] == "chip"]
    assert list(frame.columns) == declared[:2] + ["rate"] + declared[2:]


# A name's suffix says its unit, the same in every report: one unit per quantity.
SUFFIX_UNITS = {"_ns": "ns", "_ps": "ps", "_ms": "ms", "_s": "s", "_j": "J", "_w": "W", "_bytes": "bytes",
                "_gb_per_s": "GB/s", "_tokens_per_s": "tokens/s"}


def test_one_unit_per_quantity():
    # Energy in joules (never picojoules) and every suffixed name in its suffix's unit, in every
    # report; a distribution's keys (e2el_ms.p50) in their parent's.
    wrong = []
    for report in REPORTS.values():
        for f in report["fields"]:
            if f["type"] in ("object", "records", "map"):
                continue
            name = f["path"].split(".")[-1]
            if name in ("count", "mean", "p50", "p90", "p99", "max") and "." in f["path"]:
                name = f["path"].split(".")[-2].replace("[]", "")
            assert not name.endswith("_pj"), (report["name"], f["path"])
            for suffix, unit in SUFFIX_UNITS.items():
                if name.endswith(suffix) and not name.endswith("_per" + suffix) and f["unit"] != unit:
                    if not (name == "count" or f["path"].endswith(".count")):
                        wrong.append((report["name"], f["path"], f["unit"], unit))
    assert wrong == []
    serve = REPORTS["serve"]
    assert report_row(serve, "e2el_ms.p50")["unit"] == "ms" and report_row(serve, "e2e_s.p50")["unit"] == "s"


def test_the_reference_is_generated_from_the_tables():
    spec = importlib.util.spec_from_file_location("write_reference", os.path.join(ROOT, "tools", "write_reference.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    for path, text in tool.generated_files().items():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            assert f.read() == text, f"{path} is stale: run /usr/bin/python3 tools/write_reference.py"
