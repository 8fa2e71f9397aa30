"""Every Python front end agrees with the run-option table (g5sim/run_options.hpp): simulate()'s
keywords and defaults, the extension's Request properties and their stub, the grid's axes, the
guide's keyword list (docs/guide.md), the JSON "workload" echo and its schema. A new option that one of them
misses fails here."""

import ast
import inspect
import json
import os
import re
import subprocess
import sys

import pytest

import g5sim
from g5sim import grid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPTIONS = g5sim._g5sim.run_options()
NAMES = [o["name"] for o in OPTIONS]


def test_simulate_takes_the_table_as_keywords():
    params = list(inspect.signature(g5sim.simulate).parameters.values())
    # The table's keywords, then the one that is not a run option: a progress callback.
    assert [p.name for p in params] == ["chip", "model"] + NAMES + ["progress"]
    assert params[-1].default is None and params[-1].kind is inspect.Parameter.KEYWORD_ONLY
    for p, o in zip(params[2:], OPTIONS):
        assert p.kind is inspect.Parameter.KEYWORD_ONLY
        assert p.default == o["default"]
        assert o["doc"] in g5sim.simulate.__doc__


def test_an_unknown_keyword_is_a_type_error_naming_the_nearest():
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'batches'; did you mean 'batch'\?"):
        g5sim.simulate(g5sim.shipped_chip_path(), g5sim.shipped_model_path(), batches=4)


def test_request_properties_follow_the_table_and_its_stub():
    r = g5sim._g5sim.Request()
    for o in OPTIONS:
        assert getattr(r, o["name"]) == o["default"]
    with open(os.path.join(ROOT, "python", "g5sim", "_g5sim.pyi")) as f:
        tree = ast.parse(f.read())
    stub = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Request")
    annotated = [(n.target.id, ast.unparse(n.annotation)) for n in stub.body if isinstance(n, ast.AnnAssign)]
    kinds = {"count": "int", "text": "str", "path": "str", "flag": "bool"}
    expected = [(o["name"], f"Optional[{kinds[o['type']]}]" if o["optional"] else kinds[o["type"]]) for o in OPTIONS]
    assert annotated == expected


def test_a_property_checks_what_it_is_given():
    r = g5sim._g5sim.Request()
    r.batch = 8
    assert r.batch == 8
    with pytest.raises(g5sim.ConfigError, match=r"^batch: 0 is outside 1\.\.1048576$"):
        r.batch = 0
    with pytest.raises(g5sim.ConfigError, match=r"^ctx: expected a whole number, got True$"):
        r.ctx = True
    with pytest.raises(g5sim.ConfigError, match=r"^expert_load: an empty path names no file$"):
        r.expert_load = ""
    with pytest.raises(g5sim.ConfigError, match=r"^ctx: required"):
        r.ctx = None


def test_the_grid_axes_are_the_tables():
    assert set(grid._AXES) - {"chip", "model"} == {o["name"] for o in OPTIONS if o["grid_axis"]}
    assert set(grid._SCOPED) == {o["name"] for o in OPTIONS if o["scoped"]}


def test_the_guide_lists_the_keywords_of_simulate():
    with open(os.path.join(ROOT, "docs", "guide.md")) as f:
        text = f.read()
    listed = re.search(r"`simulate\(chip, model, \*, ([^`]*)\)`", text).group(1)
    assert [k.strip() for k in listed.split(",")] == NAMES


def test_the_json_workload_echo_and_its_schema_follow_the_table(chip, v3):
    keys = [o["json_key"] for o in OPTIONS if o["json_key"]]
    echoed = g5sim.simulate(chip, v3, batch=4, ctx=2048, scope="block", tp=1, ep=1, dp=1).to_dict()["workload"]
    assert sorted(echoed) == sorted(keys)
    assert echoed["kv_len"] == 2048 and echoed["batch"] == 4
    with open(os.path.join(ROOT, "docs", "schema", "run.schema.json")) as f:
        schema = json.load(f)["properties"]["workload"]
    assert sorted(schema["required"]) == sorted(keys) and sorted(schema["properties"]) == sorted(keys)


def test_a_runs_identity_is_the_tables_column_rows(chip, v3):
    # chip, model, every row marked column (as the run resolved it), chips, the configs' sources and
    # digests: g5sim sweep's first columns.
    r = g5sim.simulate(chip, v3, batch=4, ctx=2048, scope="block", tp=1, ep=1, dp=1)
    identity = r.identity()
    assert list(identity) == (["chip", "model"] + [o["name"] for o in OPTIONS if o["column"]] +
                              ["chips", "chip_source", "chip_sha256", "model_source", "model_sha256"])
    assert (identity["scope"], identity["layers"], identity["cores"], identity["attn_split"]) == ("block", 1, 64, "seq")
    assert (identity["prefetch"], identity["replay"], identity["micro_batches"]) == (True, True, 1)
    assert identity["chip_sha256"] == chip.sha256 and identity["model_source"] == v3.source
    assert identity["ctx"] == r.kv_len == 2048 and identity["q_len"] == r.q_len == 1
    assert identity["phase"] == "decode" and identity["chips"] == 1


def test_a_host_launch_per_layer_matches_the_command_line(chip, v3, tmp_path):
    # Two layers of a V3 decode step, each launched by the host in 0.25 ms: one host_launch op per
    # layer, 250,000 ns = 250,000,000 ps long, that no other op of its layer starts before.
    r = g5sim.simulate(chip, v3, batch=4, ctx=1024, layers=2, host_launch_ns=250_000, tp=1, ep=1, dp=1)
    assert r.host_launch_ns == 250_000
    launches = r.ops_named("host_launch")
    assert [op.layer for op in launches] == [0, 1]
    for launch in launches:
        assert launch.op_end_ps - launch.op_start_ps == 250_000_000
        assert (launch.regime, launch.bound_by, launch.hbm_bytes) == ("host", "host", 0)
        assert all(op.op_start_ps >= launch.op_end_ps for op in r.ops
                   if op.layer == launch.layer and op.kind != "host_launch")
    assert json.loads(r.json())["host_launch_ns"] == 250_000
    # A block is one layer: the option does not apply and is refused, naming it.
    with pytest.raises(g5sim.ConfigError) as e:
        g5sim.simulate(chip, v3, batch=4, ctx=1024, scope="block", host_launch_ns=1)
    assert e.value.field == "host_launch_ns"
