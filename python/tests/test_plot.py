"""The plots: each renders a PNG of the requested size from real results (python3-matplotlib)."""

import os
import struct
import subprocess
import sys

import g5sim
import pytest

from conftest import block

pytest.importorskip("matplotlib")


def png_size(path):
    # A PNG starts with its 8-byte signature, then the IHDR chunk: length, "IHDR", width, height.
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def run_module(args, **kwargs):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-m", "g5sim", *args], capture_output=True, text=True, env=env, **kwargs)


def test_sweep_plot_from_a_sweep_csv(tmp_path, chip, v3):
    # A grid of two batches x four contexts on one block: the CSV the command line writes.
    csv_path = tmp_path / "sweep.csv"
    done = run_module(["sweep", "--scope", "block", "--dp", "1", "--batch", "1,4", "--ctx", "1024:131072:x4",
                       "--csv", str(csv_path), "--jobs", "2"])
    assert done.returncode == 0, done.stderr
    rows = g5sim.plot.read_sweep_csv(csv_path)
    assert len(rows) == 8 and {r["batch"] for r in rows} == {"1", "4"}
    png = tmp_path / "sweep.png"
    g5sim.plot_sweep(csv_path, png, size=(900, 600))
    assert png_size(png) == (900, 600) and os.path.getsize(png) > 10_000
    # The same through `python3 -m g5sim plot`, at its default size.
    out = tmp_path / "cli.png"
    done = run_module(["plot", str(csv_path), "-o", str(out)])
    assert done.returncode == 0, done.stderr
    assert png_size(out) == (1200, 800)


def test_timeline_plot_from_a_result_and_its_json(tmp_path, chip, v3):
    r = block(chip, v3, batch=2, ctx=4096)
    png = tmp_path / "timeline.png"
    g5sim.plot_timeline(r, png, size=(1000, 500))
    assert png_size(png) == (1000, 500) and os.path.getsize(png) > 10_000
    json_path = tmp_path / "run.json"
    json_path.write_text(r.json())
    out = tmp_path / "cli.png"
    done = run_module(["plot", str(json_path), "-o", str(out), "--size", "800x400"])
    assert done.returncode == 0, done.stderr
    assert png_size(out) == (800, 400)


def test_plot_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    done = run_module(["plot", str(bad), "-o", str(tmp_path / "x.png")])
    assert done.returncode == 2
    assert done.stderr.startswith("g5sim: error: plot: ") and done.stderr.count("\n") == 1
    with pytest.raises(ValueError, match="each side must be 100..20000 pixels"):
        g5sim.plot_sweep([{"ctx": "1", "total_ns": "1", "kv_cache_read_ns": "0", "regime": "memory"}],
                         tmp_path / "y.png", size=(10, 10))


def test_compare_plot_from_a_compare_csv(tmp_path):
    csv_path = tmp_path / "compare.csv"
    h100 = os.path.join(g5sim.data_dir(), "configs", "chips", "h100.yaml")
    done = run_module(["compare", "--chip", g5sim.shipped_chip_path() + "," + h100, "--scope", "block",
                       "--tp", "1", "--ep", "1", "--dp", "1", "--batch", "1,8", "--ctx", "4096",
                       "--csv", str(csv_path)])
    assert done.returncode == 0, done.stderr
    out = tmp_path / "compare.png"
    done = run_module(["plot", str(csv_path), "-o", str(out), "--size", "1000x600"])
    assert done.returncode == 0, done.stderr
    assert png_size(out) == (1000, 600) and os.path.getsize(out) > 10_000


def test_the_timeline_stacks_overlapping_ops_in_sub_rows(chip, v3):
    # The history read streams on GDMA while fa2 runs (its tiles also on GDMA): two sub-rows, so
    # the read is drawn beside fa2, not under it.
    from g5sim.plot import stack_ops_by_engine
    r = g5sim.simulate(chip, v3, batch=4, ctx=32768, scope="block", tp=1, ep=1, dp=1)
    gdma = stack_ops_by_engine(r.to_dict()["ops"])["GDMA"]
    read = next(p for p in gdma if p[2] == "kv_cache_read")
    fa2 = next(p for p in gdma if p[2] == "fa2")
    assert read[0] < fa2[1] and fa2[0] < read[1]      # they overlap in time
    assert read[3] != fa2[3]                           # and sit on different sub-rows
    for engine, placed in stack_ops_by_engine(r.to_dict()["ops"]).items():
        rows = {}
        for start, end, _, row in sorted(placed):
            assert start >= rows.get(row, 0.0)         # within a sub-row, ops never overlap
            rows[row] = end


def test_a_cut_sweep_csv_is_one_error_line_not_a_traceback(tmp_path):
    # The grid line is skipped; a row cut mid-line is refused by name (it used to raise TypeError).
    whole = tmp_path / "s.csv"
    done = run_module(["sweep", "--scope", "block", "--dp", "1", "--ctx", "1024,4096", "--csv", str(whole)])
    assert done.returncode == 0, done.stderr
    text = whole.read_text()
    assert text.startswith("# g5sim ")
    cut = tmp_path / "cut.csv"
    cut.write_text(text[: text.rindex(",memory")])
    done = run_module(["plot", str(cut), "-o", str(tmp_path / "x.png")])
    assert done.returncode == 2
    assert done.stderr == (f"g5sim: error: plot: {cut}: row 3 does not have the header's 40 cells (a cut file?)\n")
    assert run_module(["plot", str(whole), "-o", str(tmp_path / "ok.png")]).returncode == 0
