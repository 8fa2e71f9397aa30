"""g5sim.sensitivity(): `g5sim sensitivity` from Python, byte for byte, and its tornado plot."""

import json
import subprocess
import sys

import pandas as pd
import pytest

import g5sim

_FIELDS = ["ddr.bandwidth_gb_per_s", "engines.tma.bandwidth_gb_per_s", "engines.tensor.clock_mhz",
           "engines.tensor.cube_efficiency", "engines.nvlink.startup_ns"]


def test_sensitivity_matches_the_command_line(run_cli, tmp_path):
    csv_path, json_path = tmp_path / "s.csv", tmp_path / "s.json"
    rc = run_cli(["sensitivity", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2",
                               "--batch", "16", "--ctx", "1024,8192", "--fields", ",".join(_FIELDS), "--jobs", "2",
                               "--csv", str(csv_path), "--json", str(json_path)])
    assert rc == 0
    rows = g5sim.sensitivity("h100", "qwen2.5-1.5b", layers=2, batch=16, ctx=[1024, 8192], fields=_FIELDS, jobs=1)
    theirs = pd.read_csv(csv_path, keep_default_na=False,
                         na_values={c: [""] for c in ("ctx", "low_value", "high_value", "metric_low", "metric_high",
                                                      "elasticity", "elasticity_down",
                                                     "elasticity_up", "rank")})
    pd.testing.assert_frame_equal(rows, theirs)
    assert rows.attrs["sensitivity"] == json.loads(json_path.read_text())
    # A row per context and field: 2 x 5; the JSON says what ran: 2 base runs + 2 x 5 x 2 variants.
    assert len(rows) == 10
    assert rows.attrs["sensitivity"]["runs"] == 22
    assert rows.attrs["sensitivity"]["schema_version"] == 1
    # nvlink.startup_ns is 0: no relative change, ranked last without a rank.
    assert list(rows[rows.field == "engines.nvlink.startup_ns"]["method"]) == ["none", "none"]
    for _, point in rows.groupby("ctx"):
        ranked = point.dropna(subset=["elasticity"])
        assert list(ranked["rank"]) == list(range(1, len(ranked) + 1))
        # The even fields first, then the uneven ones ranked apart, each by |e|.
        assert list(ranked["uneven"]) == sorted(ranked["uneven"])
        for _, group in ranked.groupby("uneven"):
            assert list(group["elasticity"].abs()) == sorted(group["elasticity"].abs(), reverse=True)


def test_a_chip_dict_is_differentiated_as_its_json_text():
    from conftest import SG2262_CONFIG
    rows = g5sim.sensitivity(SG2262_CONFIG, "deepseek-v2-lite", layers=1, fields=["ddr.bandwidth_gb_per_s", "cores"],
                             tp=1, ep=1, dp=1)
    assert rows.attrs["sensitivity"]["chip_source"] == "<chip dict>"
    assert list(rows["method"]) == ["central", "central"]
    # 64 cores x (1 -+ 5 %) = 60.8 and 67.2: a count, so 61 and 67.
    cores = rows[rows.field == "cores"].iloc[0]
    assert (cores.low_value, cores.high_value) == (61, 67)


def test_sensitivity_refuses_what_it_cannot_differentiate():
    with pytest.raises(g5sim.ConfigError, match="not a loaded g5sim.Chip"):
        g5sim.sensitivity(g5sim.load_chip("h100"), "qwen2.5-1.5b")
    with pytest.raises(g5sim.ConfigError, match="did you mean ddr.bandwidth_gb_per_s"):
        g5sim.sensitivity("h100", "qwen2.5-1.5b", fields=["ddr.bandwith_gb_per_s"])
    with pytest.raises(g5sim.ConfigError, match="with a serve workload the load makes"):
        g5sim.sensitivity("h100", "qwen2.5-1.5b", batch=4, serve={"rate": 1, "num_requests": 2, "input_len": 16,
                                                                  "output_len": 4})
    with pytest.raises(g5sim.ConfigError, match="ctx: '0' in '0' is not a positive integer"):
        g5sim.sensitivity("h100", "qwen2.5-1.5b", ctx=[0])
    with pytest.raises(g5sim.ConfigError, match="delta_pct"):
        g5sim.sensitivity("h100", "qwen2.5-1.5b", delta_pct=60)


def test_a_serve_is_differentiated_through_its_summary():
    serve = {"rate": 4, "num_requests": 6, "input_len": 64, "output_len": 8}
    rows = g5sim.sensitivity("h100", "qwen2.5-1.5b", layers=2, serve=serve, metric="output_tokens_per_s_per_chip",
                             fields=["engines.tensor.clock_mhz"], jobs=1)
    assert rows.attrs["sensitivity"]["workload"] == "serve rate=4 requests=6 input_len=64 output_len=8"
    assert pd.isna(rows.loc[0, "ctx"])
    assert rows.loc[0, "metric"] == "output_tokens_per_s_per_chip"


def test_plot_sensitivity_draws_a_tornado_per_point(run_cli, tmp_path):
    json_path, out = tmp_path / "s.json", tmp_path / "tornado.png"
    assert run_cli(["sensitivity", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2",
                                 "--ctx", "1024,8192", "--fields", ",".join(_FIELDS), "--json", str(json_path)]) == 0
    completed = subprocess.run([sys.executable, "-m", "g5sim", "plot", str(json_path), "-o", str(out)],
                               capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="top must be"):
        g5sim.plot_sensitivity(str(json_path), tmp_path / "x.png", top=0)


def test_a_runtimes_fields_rank_beside_the_chips(run_cli, tmp_path):
    # runtime= names the software; its fields are "runtime." and their path, varied like the chip's.
    fields = ["ddr.bandwidth_gb_per_s", "runtime.step.cpu_ns", "runtime.kernels.graph.gap_ns"]
    json_path = tmp_path / "s.json"
    rc = run_cli(["sensitivity", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2", "--batch", "1",
                  "--ctx", "1024", "--runtime", "vllm", "--fields", ",".join(fields), "--json", str(json_path)])
    assert rc == 0
    rows = g5sim.sensitivity("h100", "qwen2.5-1.5b", layers=2, batch=1, ctx=1024, runtime="vllm", fields=fields)
    assert rows.attrs["sensitivity"] == json.loads(json_path.read_text())
    assert rows.attrs["sensitivity"]["runtime"].startswith("vLLM")
    cpu = rows[rows.field == "runtime.step.cpu_ns"].iloc[0]
    # vllm.yaml's 1 ms scheduler step x (1 -+ 5 %), not overlapped: it adds to every step.
    assert (cpu.value, cpu.low_value, cpu.high_value) == (1000000, 950000, 1050000)
    assert cpu.elasticity > 0
    with pytest.raises(g5sim.ConfigError, match="the run names no runtime"):
        g5sim.sensitivity("h100", "qwen2.5-1.5b", layers=2, fields=["runtime.step.cpu_ns"])
