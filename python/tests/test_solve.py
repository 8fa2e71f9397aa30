"""g5sim.solve(): `g5sim solve` from Python, byte for byte, and its plot."""

import json
import subprocess
import sys

import pandas as pd
import pytest

import g5sim


def test_solve_matches_the_command_line(run_cli, tmp_path):
    csv_path, json_path = tmp_path / "s.csv", tmp_path / "s.json"
    assert run_cli(["solve", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2", "--batch",
                                 "64", "--ctx", "8192", "--target", "step_ms<=0.5", "--vary",
                                 "ddr.bandwidth_gb_per_s,engines.tensor.clock_mhz", "--cost",
                                 "engines.tensor.clock_mhz=2", "--jobs", "2", "--csv", str(csv_path), "--json",
                                 str(json_path)]) == 0
    rows = g5sim.solve("h100", "qwen2.5-1.5b", layers=2, batch=64, ctx=8192, targets="step_ms<=0.5",
                       vary=["ddr.bandwidth_gb_per_s", "engines.tensor.clock_mhz"],
                       cost={"engines.tensor.clock_mhz": 2}, jobs=1)
    theirs = pd.read_csv(csv_path, keep_default_na=False, na_values={"shortfall": [""]})
    pd.testing.assert_frame_equal(rows, theirs)
    report = rows.attrs["solve"]
    assert report == json.loads(json_path.read_text())
    assert report["schema_version"] == 1 and report["kind"] == "solve"
    assert report["outcome"] in ("met", "already", "cannot")
    if report["outcome"] == "met":
        # The answer is a run that met: its row says so, and its metric is within the bound.
        answer = rows.iloc[report["answer_trial"]]
        assert answer["meets"] and answer["step_ms"] <= 0.5


def test_a_run_slo_is_a_step_time_target():
    rows = g5sim.solve("h100", "qwen2.5-1.5b", layers=2, batch=64, slo_tpot_ms=0.4,
                       vary={"ddr.bandwidth_gb_per_s": (1000, 20000)})
    report = rows.attrs["solve"]
    assert report["targets"] == [{"metric": "step_ms", "op": "<=", "bound": 0.4}]
    assert report["fields"][0]["low"] == 1000 and report["fields"][0]["high"] == 20000
    assert list(rows.columns[:4]) == ["trial", "stage", "ddr.bandwidth_gb_per_s", "step_ms"]


def test_solve_refuses_bad_requests():
    with pytest.raises(g5sim.ConfigError, match="give a target"):
        g5sim.solve("h100", "qwen2.5-1.5b", vary="ddr.bandwidth_gb_per_s")
    with pytest.raises(g5sim.ConfigError, match="is not METRIC<=X or METRIC>=X"):
        g5sim.solve("h100", "qwen2.5-1.5b", targets="step_ms<30", vary="ddr.bandwidth_gb_per_s")
    with pytest.raises(g5sim.ConfigError, match="cost: cores is not a varied field"):
        g5sim.solve("h100", "qwen2.5-1.5b", targets="step_ms<=1", vary="ddr.bandwidth_gb_per_s", cost={"cores": 2})
    with pytest.raises(g5sim.ConfigError, match="did you mean ddr.bandwidth_gb_per_s"):
        g5sim.solve("h100", "qwen2.5-1.5b", targets="step_ms<=1", vary="ddr.bandwith_gb_per_s")
    with pytest.raises(g5sim.ConfigError, match="expected None or \\(LO, HI\\)"):
        g5sim.solve("h100", "qwen2.5-1.5b", targets="step_ms<=1", vary={"ddr.bandwidth_gb_per_s": 5})


def test_plot_solve_draws_the_runs(run_cli, tmp_path):
    json_path, out = tmp_path / "s.json", tmp_path / "solve.png"
    assert run_cli(["solve", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2", "--target",
                                 "step_ms<=0.2", "--vary", "ddr.bandwidth_gb_per_s", "--json", str(json_path)]) == 0
    completed = subprocess.run([sys.executable, "-m", "g5sim", "plot", str(json_path), "-o", str(out)],
                               capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_errors_name_the_python_keyword_once():
    # The knob is `requests` and the flag --requests; Python's keyword is num_requests. A message
    # that starts with its field is not prefixed twice ("target: target: ..." before).
    with pytest.raises(g5sim.ConfigError) as serve_error:
        g5sim.serve("h100", "qwen2.5-1.5b", rate=1, num_requests=0, input_len=8, output_len=2)
    assert str(serve_error.value) == "num_requests: expected a whole number 1..1000000, got '0'"
    assert serve_error.value.field == "num_requests"
    with pytest.raises(g5sim.ConfigError) as solve_error:
        g5sim.solve("h100", "qwen2.5-1.5b", targets="step_ms<30", vary=["ddr.bandwidth_gb_per_s"])
    assert str(solve_error.value) == "targets: 'step_ms<30' is not METRIC<=X or METRIC>=X"
    assert solve_error.value.field == "targets"
