"""Shipped configs by name: --chip h100 / load_chip("h100") are the shipped files, g5sim list shows them."""

import os
import subprocess
import sys

import g5sim
import pytest

from test_module import run_module


def stems(folder):
    names = os.listdir(os.path.join(g5sim.data_dir(), "configs", folder))
    return sorted(n[:-len(".yaml")] for n in names if n.endswith(".yaml"))


def test_the_shipped_names_are_the_files_stems():
    assert g5sim.shipped_chips() == stems("chips")
    assert g5sim.shipped_models() == stems("models")
    assert "h100" in g5sim.shipped_chips() and "deepseek-v3" in g5sim.shipped_models()
    assert g5sim.chip_path("h100") == os.path.join(g5sim.data_dir(), "configs", "chips", "h100.yaml")


def test_a_name_runs_exactly_what_its_path_runs():
    path = os.path.join(g5sim.data_dir(), "configs", "chips", "h100.yaml")
    model = os.path.join(g5sim.data_dir(), "configs", "models", "llama-3-70b.yaml")
    by_name = run_module(["run", "--chip", "h100", "--model", "llama-3-70b", "--layers", "2", "--json", "-"])
    by_path = run_module(["run", "--chip", path, "--model", model, "--layers", "2", "--json", "-"])
    assert by_name.stdout == by_path.stdout and by_name.stdout.startswith("{")
    assert g5sim.simulate("h100", "llama-3-70b", layers=2).json() == g5sim.simulate(path, model, layers=2).json()


def test_an_unknown_name_lists_the_shipped_ones():
    out = run_module(["run", "--chip", "h1000"], check=False)
    assert out.returncode == 2
    assert out.stderr == ("g5sim: error: h1000: no such file, and no shipped chip has that name (did you mean "
                          f"'h100'?); shipped: {', '.join(stems('chips'))} (g5sim list)\n")
    with pytest.raises(g5sim.ConfigError, match="no shipped model has that name .did you mean 'deepseek-v3'"):
        g5sim.load_model("deepseek-v33")


def test_a_file_of_that_name_is_a_path(tmp_path, monkeypatch):
    # An existing file wins over a shipped name: the user named it.
    (tmp_path / "h100").write_text("name: x\n")
    monkeypatch.chdir(tmp_path)
    assert g5sim.chip_path("h100") == "h100"
    with pytest.raises(g5sim.ConfigError, match="^h100:"):
        g5sim.load_chip("h100")


def test_list_shows_every_shipped_config_in_one_line():
    out = run_module(["list"]).stdout.splitlines()
    chips, models, runtimes = stems("chips"), stems("models"), stems("runtimes")
    # A line a config, and under each calibrated chip a line of its fit.
    expected = []
    for stem in chips:
        chip = g5sim.load_chip(stem)
        expected.append(f"  {stem:<20} {chip.summary}")
        if chip.calibration_summary:
            expected.append(f"  {'':<20} {chip.calibration_summary}")
    fitted = len(expected) - len(chips)
    assert fitted == sum(stem.endswith(".calibrated") for stem in chips)
    hosts = stems("hosts")
    assert len(out) == 4 + len(expected) + len(models) + len(runtimes) + len(hosts)
    assert out[0].startswith("chips (") and out[1 + len(expected)].startswith("models (")
    assert out[2 + len(expected) + len(models)].startswith("runtimes (")
    first_runtime = 3 + len(expected) + len(models)
    assert [line.split()[0] for line in out[first_runtime:first_runtime + len(runtimes)]] == runtimes == \
        g5sim.shipped_runtimes()
    assert out[first_runtime + len(runtimes)].startswith("hosts (")
    assert [line.split()[0] for line in out[first_runtime + len(runtimes) + 1:]] == hosts == g5sim.shipped_kv_tiers()
    assert out[1:1 + len(expected)] == expected
    for line, stem in zip(out[2 + len(expected):], models):
        assert line == f"  {stem:<20} {g5sim.load_model(stem).summary}"
    assert "  sg2262               SG2262: 64 cores, cube bf16 peak 262.1 TFLOPS, DDR 8601.6 GB/s, 128 GiB" in out
    assert ("  deepseek-v3          DeepSeek-V3: deepseek_v3, 61 layers, MLA, 256 experts top 8, 671.0 B parameters"
            in out)


def test_a_calibrated_chip_says_what_its_fit_changed():
    # The line g5sim list prints under h100.calibrated; '' for a chip no calibration wrote.
    summary = g5sim.load_chip("h100.calibrated").calibration_summary
    assert summary.startswith("calibrated: MAPE 10.4 % on its rows, 11.0 % held out (leave one out)")
    assert "engines.tma.startup_ns 477.184 -> 477.184" in summary
    assert g5sim.load_chip("h100").calibration_summary == ""
