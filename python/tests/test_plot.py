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
    assert done.stderr == (f"g5sim: error: plot: {cut}: row 3 does not have the header's 43 cells (a cut file?)\n")
    assert run_module(["plot", str(whole), "-o", str(tmp_path / "ok.png")]).returncode == 0


@pytest.fixture
def drawn(monkeypatch):
    # The figures the plot functions draw, kept (after they are written) for the test to look into.
    figures = []
    save = g5sim.plot._save

    def keep(plt, fig, path):
        save(plt, fig, path)
        figures.append(fig)
    monkeypatch.setattr(g5sim.plot, "_save", keep)
    return figures


# Two chips on one deployment, decode at batch 64; H100 at 131,072 tokens does not fit (fits false).
SWEEP_WITH_FITS = """# g5sim 0.1.0 sweep grid 4 points
chip,model,phase,batch,ctx,mix,tp,ep,dp,chips,total_ns,kv_cache_read_ns,regime,fits,bytes_per_chip
SG2262,DeepSeek-V3,decode,64,4096,64x1@4096,1,16,16,16,19732000,1000000,memory,true,40000000000
SG2262,DeepSeek-V3,decode,64,131072,64x1@131072,1,16,16,16,37300000,15000000,compute,true,90000000000
H100,DeepSeek-V3,decode,64,4096,64x1@4096,1,16,16,16,21910000,2000000,memory,true,40000000000
H100,DeepSeek-V3,decode,64,131072,64x1@131072,1,16,16,16,28700000,8000000,memory,false,96804178272
"""


def test_the_sweep_title_names_what_was_simulated(tmp_path, drawn):
    # The model, phase, batch and deployment every row shares; the chips, which vary, are the legend's.
    csv_path = tmp_path / "fits.csv"
    csv_path.write_text(SWEEP_WITH_FITS)
    g5sim.plot_sweep(csv_path, tmp_path / "sweep.png", size=(900, 600))
    latency = drawn[0].axes[0]
    title = latency.get_title()
    assert title.startswith("DeepSeek-V3 decode, batch 64, tp 1 ep 16 dp 16 (16 chips)\n"), title
    assert "SG2262" not in title
    labels = [t.get_text() for t in latency.get_legend().get_texts()]
    assert labels[:2] == ["chip SG2262", "chip H100"]


def test_a_point_that_does_not_fit_is_hollow(tmp_path, drawn):
    csv_path = tmp_path / "fits.csv"
    csv_path.write_text(SWEEP_WITH_FITS)
    g5sim.plot_sweep(csv_path, tmp_path / "sweep.png", size=(900, 600))
    latency = drawn[0].axes[0]
    markers = {(float(m.get_xdata()[0]), m.get_markerfacecolor() == "none") for m in latency.get_lines()
               if m.get_linestyle() == "None" and len(m.get_xdata()) == 1}
    # Four point markers: only H100's at 131,072 tokens is hollow (both chips have a point there).
    assert sorted(markers) == [(4096.0, False), (131072.0, False), (131072.0, True)]
    hollow = [m for m in latency.get_lines() if m.get_markerfacecolor() == "none" and len(m.get_xdata()) == 1]
    assert len(hollow) == 1 and hollow[0].get_ydata()[0] == pytest.approx(28.7)
    labels = [t.get_text() for t in latency.get_legend().get_texts()]
    assert labels[-1] == "hollow: does not fit the chip's memory"
    # Without the column, every point is filled and the legend has no such note.
    drawn.clear()
    csv_path.write_text("\n".join(",".join(line.split(",")[:13]) for line in SWEEP_WITH_FITS.splitlines()[1:]))
    g5sim.plot_sweep(csv_path, tmp_path / "old.png", size=(900, 600))
    latency = drawn[0].axes[0]
    assert all(m.get_markerfacecolor() != "none" for m in latency.get_lines())
    assert [t.get_text() for t in latency.get_legend().get_texts()] == ["chip SG2262", "chip H100"]


def test_the_serve_title_names_the_deployment_and_the_load(tmp_path, drawn):
    steps = [{"start_s": 0.1 * i, "sequences": 1 + i % 3, "waiting": i % 2, "kv_blocks_used": 8 * i} for i in range(10)]
    summary = {"model": "Qwen2.5-1.5B", "chip": "H100", "requests": 20, "input_tokens": 2560, "output_tokens": 320,
               "deployment": {"tp": 2, "ep": 1, "dp": 1, "chips": 2, "automatic": False}, "disaggregation": None,
               "engine": {"concurrency": 4}, "kv_cache": {"blocks": 100}, "goodput": {"requests_per_s": 3.5},
               "throughput": {"output_tokens_per_s_per_chip": 58.2},
               "per_request": [{"ttft_ms": 3.0 + i, "tpot_ms": 1.5} for i in range(20)], "steps": steps}
    g5sim.plot_serve(summary, tmp_path / "serve.png", size=(1000, 700))
    title = drawn[0]._suptitle.get_text()
    assert title.startswith("Qwen2.5-1.5B on H100, tp 2 ep 1 dp 1 (2 chips): 20 requests (2560 input, 320 output "
                            "tokens), concurrency 4 (closed loop)\n"), title


def _front_point(point, chip, tp, ep, dp, user, per_chip):
    return {"point": point, "chip": chip, "tp": tp, "ep": ep, "dp": dp, "max_seqs": 4, "status": "ok",
            "tokens_per_s_per_user": user, "tokens_per_s_per_chip": per_chip, "meets_slo": True}


def test_search_labels_of_close_points_do_not_overlap(tmp_path, drawn):
    # Points 1 and 2 sit a pixel apart: at one offset their labels would cover each other.
    points = [_front_point(0, "SG2262", 1, 8, 8, 20.0, 90.0), _front_point(1, "SG2262", 4, 8, 2, 100.0, 50.0),
              _front_point(2, "SG2262", 8, 8, 1, 100.3, 50.1), _front_point(3, "SG2262", 8, 1, 1, 180.0, 10.0)]
    search = {"kind": "search", "model": "DeepSeek-V3", "load": "concurrency 16, 32 requests", "points": points,
              "fronts": [{"chip": "SG2262", "points": [0, 1, 2, 3], "best": 0}], "best": 0,
              "space": {"tp": None, "max_seqs": [4, 8]}, "slo": {"tpot_ms": None, "stat": "p90"}}
    g5sim.plot_search(search, tmp_path / "search.png", size=(800, 500))
    fig = drawn[0]
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    close = ax.transData.transform([(100.0, 50.0), (100.3, 50.1)])
    assert abs(close[0] - close[1]).max() < 4  # display pixels: the case is a collision
    from matplotlib.text import Text
    labels = {t.get_text(): Text.get_window_extent(t, renderer) for t in ax.texts}
    assert sorted(labels) == sorted(f"tp{p['tp']} ep{p['ep']} dp{p['dp']} max_seqs=4" for p in points)
    boxes = list(labels.values())
    for i, a in enumerate(boxes):
        assert ax.get_window_extent(renderer).contains(a.x0, a.y0)
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)
    assert not fig.texts  # every label found room: none listed at the foot


def test_an_uneven_field_does_not_set_the_tornado_axis(drawn, tmp_path):
    # A cliff (`cores` on a split that stops being even) moved the step by +50 % where the even
    # fields move it by a few per cent: the axis is the even fields' and the cut bar says so.
    from conftest import SG2262_CONFIG
    rows = g5sim.sensitivity(SG2262_CONFIG, "deepseek-v2-lite", layers=1, tp=1, ep=1, dp=1,
                             fields=["engines.gdma.bandwidth_gb_per_s", "engines.tiu.clock_mhz", "cores"])
    report = rows.attrs["sensitivity"]
    point = report["points"][0]
    cores = next(f for f in point["fields"] if f["field"] == "cores")
    cores.update(uneven=True, metric_low=1.5 * point["metric_base"])
    g5sim.plot_sensitivity(report, tmp_path / "t.png")
    ax = drawn[-1].axes[0]
    even = max(abs(100 * (f[side] / point["metric_base"] - 1)) for f in point["fields"] if not f["uneven"]
               for side in ("metric_low", "metric_high") if f[side] is not None)
    assert ax.get_xlim()[1] < 2 * even + 1
    assert any(t.get_text() == "+50.0 % (cut)" for t in ax.texts)
