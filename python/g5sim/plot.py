"""Pictures of g5sim results, drawn with matplotlib (Debian: python3-matplotlib), to PNG files.

    python3 -m g5sim plot sweep.csv -o sweep.png [--size 1200x800]   # a `g5sim sweep` CSV
    python3 -m g5sim plot compare.csv -o compare.png                  # a `g5sim compare --csv` file
    python3 -m g5sim plot run.json -o timeline.png                    # a `g5sim run --json` file
    python3 -m g5sim plot serve.json -o serve.png                     # a `g5sim serve --json` file
    python3 -m g5sim plot rates.csv -o rates.png                      # g5sim.serve_sweep(...).to_csv()
    python3 -m g5sim plot sens.json -o tornado.png                    # a `g5sim sensitivity --json` file
    python3 -m g5sim plot solve.json -o solve.png                     # a `g5sim solve --json` file

plot_sweep: latency against context, one line per series (the point's identity but its context:
chip, model, phase, batch, formats, modes, deployment), log axes where the values span a decade or
more, markers by regime (o memory, ^ compute, s comm), hollow where the point does not fit the
chip's memory (its `fits` column false); the title names what every row shares (model, phase,
chip, batch, deployment); below it each point's share of kv_cache_read in its latency.
plot_timeline: a Gantt chart of a run's ops, one lane per engine they use, coloured by kind.
plot_compare: each workload's latency on each chip, side by side, with the speedup over the first
chip above each bar. The size is in pixels (100 dpi).
"""

import csv
import json
import os
import sys
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple, Union

PathLike = Union[str, "os.PathLike[str]"]

_DPI = 100
_MARKERS = {"memory": "o", "compute": "^", "comm": "s"}
_IDENTITY = ("chip", "model", "phase", "batch", "q_len", "kv_dtype", "mla_mode", "prefill_mla_mode", "weight_dtype",
             "tp", "ep", "dp")


def _pyplot():
    try:
        import matplotlib
    except ImportError as error:
        # Say which interpreter: another python3 first on PATH may lack Debian's python3-matplotlib.
        raise ImportError(f"plotting needs matplotlib, which {sys.executable} cannot import: run /usr/bin/python3 "
                          "(Debian's, with python3-matplotlib), or install matplotlib for this "
                          "interpreter") from error
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt
    return plt


def _figure(size: Tuple[int, int], rows: int):
    width, height = size
    if width < 100 or height < 100 or width > 20000 or height > 20000:
        raise ValueError(f"size {width}x{height}: each side must be 100..20000 pixels")
    plt = _pyplot()
    fig, axes = plt.subplots(rows, 1, figsize=(width / _DPI, height / _DPI), dpi=_DPI, squeeze=False)
    return plt, fig, [row[0] for row in axes]


def _save(plt, fig, path: PathLike) -> None:
    fig.savefig(os.fspath(path), dpi=_DPI)  # no tight bbox: the image keeps the requested size
    plt.close(fig)


def _csv_rows(path: PathLike) -> List[Dict[str, str]]:
    """A g5sim CSV's rows as dicts of strings: its '# g5sim ...' grid line skipped, a cut row refused."""
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    reader = csv.DictReader(lines)
    rows = list(reader)
    for number, row in enumerate(rows, 2):
        if None in row or any(v is None for v in row.values()):
            raise ValueError(f"{os.fspath(path)}: row {number} does not have the header's {len(reader.fieldnames)} "
                             "cells (a cut file?)")
    return rows


def _first_columns(path: PathLike) -> str:
    """The column line of a g5sim CSV (the first line that is not a '#' comment)."""
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                return line
    return ""


def read_sweep_csv(path: PathLike) -> List[Dict[str, str]]:
    """The rows of a `g5sim sweep` CSV, as dicts of strings."""
    rows = _csv_rows(path)
    needed = {"ctx", "total_ns", "kv_cache_read_ns", "regime"}
    if not rows or not needed <= set(rows[0]):
        raise ValueError(f"{os.fspath(path)}: not a g5sim sweep CSV (needs the columns {', '.join(sorted(needed))})")
    return rows


def _spans_decades(values: Sequence[float]) -> bool:
    positive = [v for v in values if v > 0]
    return len(positive) > 1 and max(positive) / min(positive) >= 10


def _same(rows: Sequence[Mapping[str, Any]], keys: Iterable[str]) -> Dict[str, str]:
    """Of `keys`, the columns every row has with one value on every row: {column: that value}."""
    return {k: str(rows[0][k]) for k in keys
            if all(r.get(k) not in (None, "") for r in rows) and len({str(r[k]) for r in rows}) == 1}


def _deployment(same: Mapping[str, Any], names: Sequence[str] = ("tp", "ep", "dp", "chips")) -> str:
    """'tp 1 ep 16 dp 16 (16 chips)' from those of `names` (tp, ep, dp, chips) that `same` has."""
    shards = " ".join(f"{k} {same[n]}" for k, n in zip(("tp", "ep", "dp"), names) if n in same)
    count = f"{same[names[3]]} chip{'' if str(same[names[3]]) == '1' else 's'}" if names[3] in same else ""
    return f"{shards} ({count})" if shards and count else shards or count


_SWEEP_TITLE = ("chip", "model", "phase", "batch", "mix", "tp", "ep", "dp", "chips")


def _sweep_title(rows: Sequence[Mapping[str, Any]]) -> str:
    """What a sweep's rows simulated, from the columns that hold one value on every row: model,
    phase, chip, batch (a mixed step's mix) and deployment, e.g. 'DeepSeek-V3 decode on SG2262,
    batch 64, tp 1 ep 16 dp 16 (16 chips)'. The columns that vary are the legend's."""
    same = _same(rows, _SWEEP_TITLE)
    what = " ".join(same[k] for k in ("model", "phase") if k in same)
    if "chip" in same:
        what = f"{what} on {same['chip']}".strip()
    load = f"mix {same['mix']}" if same.get("phase") == "mixed" and "mix" in same else (
        f"batch {same['batch']}" if "batch" in same else "")
    return ", ".join(part for part in (what, load, _deployment(same)) if part)


def _fits(row: Mapping[str, Any]) -> bool:
    """False when the row's `fits` column says the point does not fit the chip's memory (no column: True)."""
    return str(row.get("fits", "true")).strip().lower() != "false"


def _draw_series(latency, share, points: Sequence[Mapping[str, Any]], label: str) -> Tuple[List[int], List[float]]:
    """One series' latency line, a marker per point by regime (hollow when it does not fit), and
    its kv_cache_read share below; returns its contexts and latencies (ms)."""
    points = sorted(points, key=lambda r: int(r["ctx"]))
    ctx = [int(r["ctx"]) for r in points]
    ms = [float(r["total_ns"]) / 1e6 for r in points]
    kv = [float(r["kv_cache_read_ns"]) / max(float(r["total_ns"]), 1e-9) for r in points]
    line, = latency.plot(ctx, ms, label=label)
    colour = line.get_color()
    share.plot(ctx, kv, color=colour)
    for x, y, r in zip(ctx, ms, points):
        latency.plot([x], [y], marker=_MARKERS.get(str(r["regime"]), "x"), color=colour, linestyle="",
                     markerfacecolor=colour if _fits(r) else "none")
    return ctx, ms


def _sweep_legend(latency, series: int, unfit: bool) -> None:
    """The series' legend (up to 12 of them), with a note on hollow markers when a point does not fit."""
    from matplotlib.lines import Line2D
    handles = latency.get_legend_handles_labels()[0] if series <= 12 else []
    if unfit:
        handles.append(Line2D([], [], marker="o", color="grey", markerfacecolor="none", linestyle="",
                              label="hollow: does not fit the chip's memory"))
    if handles:
        latency.legend(handles=handles, fontsize="small", loc="best")


def plot_sweep(rows: Union[PathLike, Iterable[Mapping[str, Any]]], path: PathLike,
               size: Tuple[int, int] = (1200, 800)) -> None:
    """Latency against context per series, and kv_cache_read's share of it, to a PNG at `path`; the
    title says what was simulated (_sweep_title), a point that does not fit (fits false) is hollow."""
    if isinstance(rows, (str, os.PathLike)):
        rows = read_sweep_csv(rows)
    rows = list(rows)
    if not rows:
        raise ValueError("plot_sweep: no rows")
    series: Dict[Tuple[str, ...], List[Mapping[str, Any]]] = {}
    for row in rows:
        series.setdefault(tuple(str(row.get(k, "")) for k in _IDENTITY), []).append(row)
    varying = [i for i, k in enumerate(_IDENTITY) if len({key[i] for key in series}) > 1]
    plt, fig, (latency, share) = _figure(size, 2)
    all_ctx, all_ms = [], []
    for key, points in series.items():
        label = ", ".join(f"{_IDENTITY[i]} {key[i]}" for i in varying) or f"{key[0]} {key[1]} {key[2]}"
        ctx, ms = _draw_series(latency, share, points, label)
        all_ctx += ctx
        all_ms += ms
    if _spans_decades(all_ctx):
        latency.set_xscale("log", base=2)
        share.set_xscale("log", base=2)
    if _spans_decades(all_ms):
        latency.set_yscale("log")
    latency.set_ylabel("step latency (ms)")
    heading = _sweep_title(rows)
    latency.set_title((heading + "\n" if heading else "") + "step latency vs context (markers: o memory-bound, "
                      "^ compute-bound, s comm-bound)", fontsize=11)
    latency.grid(True, which="both", alpha=0.3)
    _sweep_legend(latency, len(series), not all(_fits(r) for r in rows))
    share.set_xlabel("context (tokens)")
    share.set_ylabel("kv_cache_read share of latency")
    share.set_ylim(0, 1)
    share.grid(True, alpha=0.3)
    fig.tight_layout()
    _save(plt, fig, path)


def stack_ops_by_engine(ops: Sequence[Mapping[str, Any]]) -> Dict[str, List[Tuple[float, float, str, int]]]:
    """Per engine, its ops as (start_us, end_us, kind, sub-row): ops that overlap on one engine (fa2
    beside the history read on GDMA) go to sub-rows of its lane, each op on the first sub-row free
    at its start, so that none paints over another."""
    placed: Dict[str, List[Tuple[float, float, str, int]]] = {}
    free: Dict[str, List[float]] = {}   # engine -> end of each sub-row's last op
    for op in sorted(ops, key=lambda o: (float(o["op_start_ns"]), float(o["op_end_ns"]))):
        start, end = float(op["op_start_ns"]) / 1e3, float(op["op_end_ns"]) / 1e3
        for engine in str(op["engines"]).split("+"):
            if engine == "-":
                continue
            rows = free.setdefault(engine, [])
            row = next((r for r, until in enumerate(rows) if until <= start), len(rows))
            if row == len(rows):
                rows.append(end)
            rows[row] = end
            placed.setdefault(engine, []).append((start, end, str(op["kind"]), row))
    return placed


def plot_timeline(run: Union[PathLike, Mapping[str, Any], Any], path: PathLike,
                  size: Tuple[int, int] = (1400, 700)) -> None:
    """A Gantt chart of a run's ops by engine (from a `g5sim run --json` file or dict, or a
    g5sim.Result), to a PNG at `path`."""
    if isinstance(run, (str, os.PathLike)):
        with open(run) as f:
            run = json.load(f)
    elif hasattr(run, "to_dict"):
        run = run.to_dict()
    ops = run.get("ops") if isinstance(run, Mapping) else None
    if not ops:
        raise ValueError("plot_timeline: not a g5sim run (no 'ops')")
    lanes: List[str] = []
    for op in ops:
        for engine in str(op["engines"]).split("+"):
            if engine != "-" and engine not in lanes:
                lanes.append(engine)
    kinds = sorted({str(op["kind"]) for op in ops})
    plt, fig, (ax,) = _figure(size, 1)
    colours = plt.get_cmap("tab20")
    colour = {k: colours(i % 20) for i, k in enumerate(kinds)}
    placed = stack_ops_by_engine(ops)
    for lane, engine in enumerate(lanes):
        rows = 1 + max((row for *_, row in placed[engine]), default=0)
        height = 0.8 / rows
        for start, end, kind, row in placed[engine]:
            ax.broken_barh([(start, max(end - start, 1e-6))], (lane - 0.4 + row * height, height * 0.95),
                           facecolors=colour[kind])
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(lanes)
    ax.invert_yaxis()
    ax.set_xlabel("time (us)")
    ax.set_title(f"{run.get('model', '')} on {run.get('chip', '')}: ops by engine "
                 f"({run.get('total_ns', 0) / 1e6:.3f} ms)")
    from matplotlib.patches import Patch
    fig.subplots_adjust(left=0.08, right=0.82)  # the legend beside the bars, not over them
    ax.legend(handles=[Patch(color=colour[k], label=k) for k in kinds], fontsize="small", ncol=1,
              loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(plt, fig, path)


def plot_compare(path_in: PathLike, path: PathLike, size: Tuple[int, int] = (1200, 700)) -> None:
    """Latency per workload and chip from a `g5sim compare --csv` file, to a PNG at `path`."""
    rows = _csv_rows(path_in)
    if not rows or not any(k.endswith("_speedup") for k in rows[0]):
        raise ValueError(f"{os.fspath(path_in)}: not a g5sim compare CSV (no <chip>_speedup column)")
    chips = [k[: -len("_total_ns")] for k in rows[0] if k.endswith("_total_ns")]
    plt, fig, (ax,) = _figure(size, 1)
    width = 0.8 / len(chips)
    for c, chip in enumerate(chips):
        xs = [i + (c - (len(chips) - 1) / 2) * width for i in range(len(rows))]
        ms = [float(r[f"{chip}_total_ns"]) / 1e6 for r in rows]
        bars = ax.bar(xs, ms, width, label=chip)
        if c > 0:
            for bar, r in zip(bars, rows):
                ax.annotate(f"x{float(r[chip + '_speedup']):.2f}", (bar.get_x() + bar.get_width() / 2,
                            bar.get_height()), ha="center", va="bottom", fontsize="x-small")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([f"{r['model']} {r['phase']}\nB={r['batch']} ctx={r['ctx']}" for r in rows],
                       fontsize="small")
    ax.set_ylabel("step latency (ms)")
    ax.set_title(f"the same workloads on {', '.join(chips)} (x: speedup over {chips[0]})")
    ax.legend()
    ax.grid(True, axis="y", alpha=0.3)
    _save(plt, fig, path)


def _cdf(ax, values: Sequence[float], label: str) -> None:
    xs = sorted(values)
    if xs:
        ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post")
    ax.set_xlabel(label)
    ax.set_ylabel("share of requests")
    ax.grid(True, alpha=0.3)


def _serve_setup(summary: Mapping[str, Any]) -> str:
    """What a serve simulated: 'Qwen2.5-1.5B on H100, tp 1 ep 1 dp 1 (1 chip): 20 requests (2560
    input, 320 output tokens), concurrency 4 (closed loop)'; the rate when the summary has one
    ("rate", or "load": {"rate": ...}), else 'open loop'."""
    deployment = _deployment(summary.get("deployment") or {})
    disagg = summary.get("disaggregation")
    if disagg:
        deployment = (f"instances ({disagg['prefill_instances']} prefill, {disagg['decode_instances']} decode) "
                      f"of {deployment}, {disagg['chips']} chips in all")
    load = summary.get("load")
    clients = (summary.get("engine") or {}).get("concurrency") or 0
    rate = load.get("rate") if isinstance(load, Mapping) else summary.get("rate")
    how = (f"concurrency {clients} (closed loop)" if clients else f"rate {float(rate):g} requests/s" if rate else
           "open loop")
    what = ", ".join(p for p in (f"{summary.get('model', '')} on {summary.get('chip', '')}", deployment) if p)
    return (f"{what}: {summary['requests']} requests ({summary.get('input_tokens', 0)} input, "
            f"{summary.get('output_tokens', 0)} output tokens), {how}")


def plot_serve(summary: Union[PathLike, Mapping[str, Any]], path: PathLike, size: Tuple[int, int] = (1400, 900)) -> None:
    """A `g5sim serve --json` summary (file or dict, as g5sim.serve() returns it): the TTFT and TPOT
    CDFs with their SLOs, the batch and the waiting requests over time, and the KV cache's use."""
    if isinstance(summary, (str, os.PathLike)):
        with open(summary) as f:
            summary = json.load(f)
    if not isinstance(summary, Mapping) or "per_request" not in summary or "steps" not in summary:
        raise ValueError("plot_serve: not a g5sim serve summary (no 'per_request' and 'steps')")
    plt = _pyplot()
    width, height = size
    if width < 100 or height < 100 or width > 20000 or height > 20000:
        raise ValueError(f"size {width}x{height}: each side must be 100..20000 pixels")
    fig, axes = plt.subplots(2, 2, figsize=(width / _DPI, height / _DPI), dpi=_DPI)
    requests = summary["per_request"]
    (ttft_ax, tpot_ax), (batch_ax, kv_ax) = axes
    _cdf(ttft_ax, [r["ttft_ms"] for r in requests], "TTFT (ms)")
    _cdf(tpot_ax, [r["tpot_ms"] for r in requests if r["tpot_ms"] is not None], "TPOT (ms)")
    goodput = summary.get("goodput", {})
    for ax, key in ((ttft_ax, "slo_ttft_ms"), (tpot_ax, "slo_tpot_ms")):
        if goodput.get(key) is not None:
            ax.axvline(goodput[key], color="tab:red", linestyle="--", label=f"SLO {goodput[key]:g} ms")
            ax.legend(loc="best")
    steps = summary["steps"]
    starts = [s["start_s"] for s in steps]
    batch_ax.step(starts, [s["sequences"] for s in steps], where="post", label="running (a step's sequences)")
    batch_ax.step(starts, [s["waiting"] for s in steps], where="post", label="waiting")
    batch_ax.set_xlabel("time (s)")
    batch_ax.set_ylabel("requests")
    # Above the panel, in a row: a legend inside covered the peak.
    batch_ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, fontsize="small", frameon=False)
    batch_ax.grid(True, alpha=0.3)
    blocks = max(1, summary["kv_cache"]["blocks"])
    kv_ax.step(starts, [100.0 * s["kv_blocks_used"] / blocks for s in steps], where="post")
    kv_ax.set_xlabel("time (s)")
    kv_ax.set_ylabel("KV cache used (%)")
    kv_ax.grid(True, alpha=0.3)
    throughput = summary["throughput"]
    fig.suptitle(f"{_serve_setup(summary)}\n{throughput['output_tokens_per_s_per_chip']:.1f} output tokens/s per "
                 f"chip, goodput {goodput.get('requests_per_s', 0):.3f} requests/s")
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    _save(plt, fig, path)


_SERVE_SWEEP_COLUMNS = ("output_tokens_per_s_per_chip", "output_tokens_per_s_per_user", "tpot_p50_ms",
                        "goodput_requests_per_s", "requests_per_s")
_SERVE_SWEEP_DEPLOYMENT = ("deployment_tp", "deployment_ep", "deployment_dp", "chips")


def _serve_sweep_title(records: Sequence[Mapping[str, Any]]) -> str:
    """What every point of a serve sweep shares: model, chip, deployment (all of it, else none),
    requests."""
    same = _same(records, ("model_name", "chip_name", "requests", *_SERVE_SWEEP_DEPLOYMENT))
    if not set(_SERVE_SWEEP_DEPLOYMENT) <= set(same):
        same = {k: v for k, v in same.items() if k not in _SERVE_SWEEP_DEPLOYMENT}
    what = same.get("model_name", "")
    if "chip_name" in same:
        what = f"{what} on {same['chip_name']}".strip()
    requests = f"{same['requests']} requests a point" if "requests" in same else ""
    return ", ".join(p for p in (what, _deployment(same, _SERVE_SWEEP_DEPLOYMENT), requests) if p)


def _serve_sweep_label(keys: Sequence[str], key: Sequence[Any], part, titled: bool) -> str:
    """A series' legend label: its values of the sweep's axes, and its deployment when the title
    does not name one for every point (each chip sharded to its own smallest deployment)."""
    label = " ".join(f"{k}={v}" if k not in ("chip", "model") else str(v) for k, v in zip(keys, key)) or "serve"
    mine = "" if titled else _deployment(_same(part.to_dict("records"), _SERVE_SWEEP_DEPLOYMENT),
                                         _SERVE_SWEEP_DEPLOYMENT)
    return f"{label}, {mine}" if mine else label


def plot_serve_sweep(rows: Any, path: PathLike, size: Tuple[int, int] = (1400, 600)) -> None:
    """A serve sweep (g5sim.serve_sweep()'s DataFrame, or its CSV): throughput against latency, the
    output tokens/s per chip against the tokens/s each user sees, a line per series (the point but
    its rate or concurrency: chip, model, deployment, engine limits), each point labelled with its
    offered load; beside it the goodput and the served requests/s against the offered load."""
    import pandas as pd
    frame = pd.read_csv(rows) if isinstance(rows, (str, os.PathLike)) else pd.DataFrame(rows)
    missing = [c for c in _SERVE_SWEEP_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"plot_serve_sweep: not a serve sweep (no column {missing[0]})")
    load = "rate" if "rate" in frame.columns else "concurrency" if "concurrency" in frame.columns else None
    if load is None:
        raise ValueError("plot_serve_sweep: the sweep has no rate or concurrency column")
    plt = _pyplot()
    width, height = size
    if width < 100 or height < 100 or width > 20000 or height > 20000:
        raise ValueError(f"size {width}x{height}: each side must be 100..20000 pixels")
    fig, (front_ax, good_ax) = plt.subplots(1, 2, figsize=(width / _DPI, height / _DPI), dpi=_DPI)
    from .serving import _SWEEP_AXES
    from . import _knobs
    loads = {k["keyword"] for k in _knobs.taking("sweep_axis") if k["group"] == "load"}
    keys = [c for c in _SWEEP_AXES if c in frame.columns and c != load and c not in loads]
    if not keys:
        series = [((), frame)]
    elif len(keys) == 1:  # a single grouper: pandas' keys are the values themselves
        series = [((k,), part) for k, part in frame.groupby(keys[0], sort=False, dropna=False)]
    else:
        series = list(frame.groupby(keys, sort=False, dropna=False))
    unit = "requests/s" if load == "rate" else "clients"
    records = frame.to_dict("records")
    titled = len(_same(records, _SERVE_SWEEP_DEPLOYMENT)) == len(_SERVE_SWEEP_DEPLOYMENT)
    labels = []
    for key, part in series:
        label = _serve_sweep_label(keys, key, part, titled)
        part = part.sort_values(load)
        line = front_ax.plot(part["output_tokens_per_s_per_user"], part["output_tokens_per_s_per_chip"], marker="o",
                             label=label)[0]
        labels += [(f"{row[load]:g}", (row["output_tokens_per_s_per_user"], row["output_tokens_per_s_per_chip"]))
                   for _, row in part.iterrows()]
        good_ax.plot(part[load], part["requests_per_s"], marker="o", color=line.get_color(), label=f"{label}: served")
        good_ax.plot(part[load], part["goodput_requests_per_s"], marker="s", linestyle="--", color=line.get_color(),
                     label=f"{label}: goodput")
    front_ax.set_xlabel("output tokens/s per user (1 / TPOT)")
    front_ax.set_ylabel("output tokens/s per chip")
    front_ax.set_title(f"throughput against latency (points: offered {unit})")
    good_ax.set_xlabel(f"offered load ({unit})")
    good_ax.set_ylabel("requests/s")
    good_ax.set_title("served requests and goodput (requests within every SLO)")
    for ax in (front_ax, good_ax):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    shared = _serve_sweep_title(records)
    if shared:
        fig.suptitle(shared)
    fig.tight_layout()
    _place_labels(fig, front_ax, labels, fontsize=8)
    _save(plt, fig, path)


def _even_limits(fields, low, high):
    """The x range the even fields' bars need (with a margin), or None when no uneven field's bar
    reaches past it: an uneven field (a cliff such as `cores` on an uneven split) must not set
    the axis and shrink the real drivers to a few pixels."""
    even = [v for f, a, b in zip(fields, low, high) if not f.get("uneven") for v in (a, b)]
    every = low + high
    if not even or not any(even):
        return None
    lo, hi = min(0.0, min(even)), max(0.0, max(even))
    span = max(hi - lo, 1e-9)
    lo, hi = lo - 0.25 * span * (lo < 0), hi + 0.25 * span * (hi > 0) + 0.05 * span
    if min(every) >= lo and max(every) <= hi:
        return None
    return lo, hi


def _clip_uneven(ax, limits, low, high) -> None:
    """Sets the axis to `limits` and marks each bar cut at its edge with its full change."""
    lo, hi = limits
    ax.set_xlim(lo, hi)
    for i, (a, b) in enumerate(zip(low, high)):
        for value, offset in ((a, 0.2), (b, -0.2)):
            if value > hi or value < lo:
                edge = hi if value > hi else lo
                ax.annotate(f"{value:+.1f} % (cut)", (edge, i + offset), textcoords="offset points",
                            xytext=(-4 if value > hi else 4, -3), ha="right" if value > hi else "left",
                            fontsize=7, color="#8b0000")


def plot_sensitivity(report: Any, path: PathLike, top: int = 10, size: Tuple[int, int] = (1200, 0)) -> None:
    """A tornado per point of a sensitivity (g5sim.sensitivity()'s frame, its JSON dict or a
    `g5sim sensitivity --json` file): its `top` fields by |elasticity|, each a bar of the metric's
    change in % when the field moves down (left colour) and up, the elasticity at the bar's end;
    the point's base and limiting resource in its title. Height 0: 60 px a field."""
    from .design import design_report
    document = design_report(report, "sensitivity")
    points = document.get("points") or []
    if not points:
        raise ValueError("plot_sensitivity: the sensitivity has no points")
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"plot_sensitivity: top must be a whole number >= 1, got {top!r}")
    width, height = size
    rows = [[f for f in p["fields"] if f["elasticity"] is not None][:top] for p in points]
    if height == 0:
        height = max(300, sum(120 + 40 * max(1, len(r)) for r in rows))
    plt, fig, axes = _figure((width, height), len(points))
    metric, delta = document["metric"], 100 * float(document["delta"])
    for ax, point, fields in zip(axes, points, rows):
        base = float(point["metric_base"])
        names = [f["field"] + (" (uneven)" if f.get("uneven") else "") for f in fields][::-1]
        def change(f, side):
            value = f[f"metric_{side}"]
            return 0.0 if value is None else 100.0 * (float(value) / base - 1.0)
        low = [change(f, "low") for f in fields][::-1]
        high = [change(f, "high") for f in fields][::-1]
        y = list(range(len(names)))
        # Two half bars a field (down above, up below): the two sides may change the metric alike.
        ax.barh([v + 0.2 for v in y], low, height=0.4, color="#4c72b0", label=f"field -{delta:g} %")
        ax.barh([v - 0.2 for v in y], high, height=0.4, color="#dd8452", label=f"field +{delta:g} %")
        limits = _even_limits(fields[::-1], low, high)
        for i, f in enumerate(fields[::-1]):
            reach = max(0.0, low[i], high[i])
            if limits is not None and reach > limits[1]:
                reach = limits[1]
            ax.annotate(f"e = {f['elasticity']:+.3f}", (reach, i), textcoords="offset points", xytext=(6, -4),
                        fontsize=8)
        if limits is not None:
            _clip_uneven(ax, limits, low, high)
        ax.set_yticks(y)
        ax.set_yticklabels(names, fontsize=8)
        ax.axvline(0, color="black", linewidth=0.8)
        where = f"ctx {point['ctx']}" if point.get("ctx") is not None else "serve"
        bound = f", bound by {point['bound_by']} ({100 * float(point['bound_share']):.0f} %)" if point.get(
            "bound_by") else ""
        ax.set_title(f"{document['chip']}, {document['model']}, {where}: {metric} {base:.6g}{bound}", fontsize=10)
        ax.set_xlabel(f"change of {metric} (%)")
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    _save(plt, fig, path)


def plot_solve(report: Any, path: PathLike, size: Tuple[int, int] = (1200, 0)) -> None:
    """The runs of a solve (g5sim.solve()'s frame, its JSON dict or a `g5sim solve --json` file), a
    panel per target: with one field, its metric against the field's value (log axes); with
    several, against the run's number, and below them each field's value (x its value in the
    chip) run by run. Runs that meet in green, the others red, the bound dashed, the answer
    circled. Height 0: 380 px a panel."""
    from .design import design_report
    document = design_report(report, "solve")
    trials, targets, fields = document["trials"], document["targets"], document["fields"]
    if not trials or not targets:
        raise ValueError("plot_solve: the solve has no runs")
    one = len(fields) == 1
    panels = len(targets) + (0 if one else 1)
    width, height = size
    plt, fig, axes = _figure((width, height or 380 * panels), panels)
    from matplotlib.ticker import FuncFormatter
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    answer = document.get("answer_trial")
    runs = [k for k, t in enumerate(trials) if t["metrics"]]
    xs = [trials[k]["values"][0] for k in runs] if one else runs
    colours = ["#2ca02c" if trials[k]["meets"] else "#d62728" for k in runs]
    for j, target in enumerate(targets):
        ax = axes[j]
        ax.scatter(xs, [trials[k]["metrics"][j] for k in runs], c=colours, s=28)
        if answer is not None:
            a = trials[answer]
            ax.scatter([a["values"][0] if one else answer], [a["metrics"][j]], s=170, facecolors="none",
                       edgecolors="black", linewidths=1.5, label="answer")
        ax.axhline(float(target["bound"]), color="black", linestyle="--", linewidth=1,
                   label=f"{target['metric']} {target['op']} {target['bound']:g}")
        if one:
            ax.set_xscale("log")
            ax.set_xlabel(fields[0]["field"])
        else:
            ax.set_xlabel("run")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis) if one else (ax.yaxis,):
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(plain)
        ax.set_ylabel(target["metric"])
        ax.set_title(f"{document['chip']}, {document['model']}, {document['workload']}: {document['outcome']}",
                     fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    if not one:
        ax = axes[-1]
        for i, field in enumerate(fields):
            ax.plot(runs, [trials[k]["values"][i] / field["value"] for k in runs], marker="o", markersize=3,
                    linewidth=1, label=field["field"])
        ax.set_xlabel("run")
        ax.set_ylabel("value / its value in the chip")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    _save(plt, fig, path)


# Where a point's label may go, in points from it (x, y), nearest first: its four corners, then
# further up and down (joined to its point by a thin line).
_LABEL_OFFSETS = ((4, 4), (4, -4), (-4, 4), (-4, -4), (4, 14), (4, -14), (-4, 14), (-4, -14), (10, 26), (10, -26),
                  (-10, 26), (-10, -26))


def _label_at(ax, text: str, xy: Tuple[float, float], offset: Tuple[int, int], fontsize: float):
    """`text` at `offset` points from `xy`, aligned away from it (a thin line back when far)."""
    dx, dy = offset
    far = abs(dy) > 4
    return ax.annotate(text, xy, textcoords="offset points", xytext=offset, fontsize=fontsize,
                       ha="left" if dx > 0 else "right", va="bottom" if dy > 0 else "top",
                       arrowprops=dict(arrowstyle="-", linewidth=0.5, color="grey", shrinkA=0, shrinkB=2)
                       if far else None)


def _place_labels(fig, ax, labels: Sequence[Tuple[str, Tuple[float, float]]], fontsize: float = 7,
                  avoid: Sequence[Any] = ()) -> List[str]:
    """Annotates each (text, (x, y)) of `labels` at the first of _LABEL_OFFSETS where its text stays
    inside the axes and overlaps no label placed before it, no labelled point and no box of `avoid`
    (display boxes: a legend's); call it once the layout is final. A label no offset can take is
    left out, listed with its point at the foot of the figure; returns those left out."""
    if not labels:
        return []
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox
    fig.canvas.draw()  # the final limits and layout: display positions hold from here on
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    points = [Bbox.from_bounds(x - 3, y - 3, 6, 6) for x, y in ax.transData.transform([xy for _, xy in labels])]
    taken, left = list(avoid), []
    for i, (text, xy) in enumerate(labels):
        for offset in _LABEL_OFFSETS:
            note = _label_at(ax, text, xy, offset, fontsize)
            note.update_positions(renderer)
            box = Text.get_window_extent(note, renderer)  # the text alone, not its line
            if frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1) and not any(
                    box.overlaps(b) for b in taken + points[:i] + points[i + 1:]):
                taken.append(box)
                break
            note.remove()
        else:
            left.append(f"{text} at ({xy[0]:.4g}, {xy[1]:.4g})")
    if left:
        more = f"; and {len(left) - 4} more" if len(left) > 4 else ""
        fig.text(0.005, 0.005, f"not labelled (no room): {'; '.join(left[:4])}{more}", fontsize=fontsize, va="bottom")
    return left


def plot_search(report: Any, path: PathLike, size: Tuple[int, int] = (1200, 700)) -> None:
    """The points of a search (g5sim.search()'s frame, its JSON dict or a `g5sim search --json`
    file): output tokens/s per chip against tokens/s per user, every point faint, each chip's
    Pareto front a line, the points meeting the SLO filled, the best one circled; a TPOT SLO as
    the per-user speed it implies (1000 / TPOT ms). Each front point's label goes where it covers
    no other label, point or the legend (_place_labels)."""
    from .design import design_report
    document = design_report(report, "search")
    points = [p for p in document["points"] if p["status"] == "ok"]
    if not points:
        raise ValueError("plot_search: the search has no point that ran")
    plt, fig, axes = _figure(size, 1)
    ax = axes[0]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    # The searched knobs with more than one value label the front's points.
    listed = [name for name, values in document["space"].items()
              if name not in ("tp", "ep", "dp", "max_chips") and isinstance(values, list) and len(values) > 1]
    labels = []
    for c, front in enumerate(document["fronts"]):
        colour = colours[c % len(colours)]
        mine = [p for p in points if p["chip"] == front["chip"]]
        ax.scatter([p["tokens_per_s_per_user"] for p in mine], [p["tokens_per_s_per_chip"] for p in mine],
                   s=22, facecolors=[colour if p["meets_slo"] else "none" for p in mine], edgecolors=colour,
                   alpha=0.45, linewidths=1)
        on = [document["points"][i] for i in front["points"]]
        ax.plot([p["tokens_per_s_per_user"] for p in on], [p["tokens_per_s_per_chip"] for p in on], marker="o",
                color=colour, linewidth=1.6, label=f"{front['chip']} front ({len(on)} of {len(mine)} points)")
        labels += [(f"tp{p['tp']} ep{p['ep']} dp{p['dp']}" + "".join(f" {name}={p[name]}" for name in listed),
                    (p["tokens_per_s_per_user"], p["tokens_per_s_per_chip"])) for p in on]
    best = document.get("best")
    if best is not None:
        b = document["points"][best]
        ax.scatter([b["tokens_per_s_per_user"]], [b["tokens_per_s_per_chip"]], s=220, facecolors="none",
                   edgecolors="black", linewidths=1.6, label=f"best meeting the SLO ({b['chip']})")
    slo = document["slo"]
    if slo.get("tpot_ms"):
        ax.axvline(1000.0 / slo["tpot_ms"], color="black", linestyle="--", linewidth=1,
                   label=f"TPOT {slo['stat']} <= {slo['tpot_ms']:g} ms (1000 / TPOT)")
    ax.set_xlabel("output tokens/s per user")
    ax.set_ylabel("output tokens/s per chip")
    ax.set_title(f"{document['model']}: {document['load']}", fontsize=10)
    ax.grid(True, alpha=0.3)
    legend = ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.canvas.draw()  # the legend's place ("best" avoids the points), which the labels then avoid
    _place_labels(fig, ax, labels, avoid=[legend.get_window_extent(fig.canvas.get_renderer())])
    _save(plt, fig, path)


def _parse_size(text: str) -> Tuple[int, int]:
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--size: '{text}' is not WIDTHxHEIGHT in pixels (e.g. 1200x800)") from None
    return width, height


def _is_serve_summary(path: PathLike) -> bool:
    with open(path) as f:
        try:
            document = json.load(f)
        except ValueError:
            return False
    return isinstance(document, dict) and "per_request" in document


def _json_kind(path: PathLike) -> str:
    """The "kind" of a g5sim JSON file (sensitivity, solve), or ""."""
    with open(path) as f:
        try:
            document = json.load(f)
        except ValueError:
            return ""
    return document.get("kind", "") if isinstance(document, dict) else ""


def main(args: List[str]) -> int:
    """python3 -m g5sim plot INPUT -o OUT.png [--size WxH]: a sweep or compare CSV, a run's JSON, a
    serve summary's JSON (g5sim serve --json), a serve sweep's CSV (g5sim.serve_sweep), or a
    sensitivity's JSON (g5sim sensitivity --json: a tornado per point), a solve's (g5sim solve
    --json: its runs against the bound), or a search's (g5sim search --json: the fronts)."""
    import argparse
    parser = argparse.ArgumentParser(prog="g5sim plot", description=main.__doc__)
    parser.add_argument("input", help="a `g5sim sweep` or `g5sim compare --csv` CSV, a `g5sim run --json` or a "
                        "`g5sim serve --json` file, a `g5sim sensitivity --json`, `g5sim solve --json` or "
                        "`g5sim search --json` file")
    parser.add_argument("-o", "--out", required=True, help="the PNG to write")
    parser.add_argument("--size", default=None, help="WIDTHxHEIGHT in pixels")
    options = parser.parse_args(args)
    try:
        with open(options.input) as f:
            first = f.read(1)
        header = "" if first == "{" else _first_columns(options.input)
        kind = _json_kind(options.input) if first == "{" else ""
        if kind == "search":
            plot_search(options.input, options.out, size=_parse_size(options.size) if options.size else (1200, 700))
        elif kind == "sensitivity":
            plot_sensitivity(options.input, options.out, size=_parse_size(options.size) if options.size else (1200, 0))
        elif kind == "solve":
            plot_solve(options.input, options.out, size=_parse_size(options.size) if options.size else (1200, 0))
        elif first == "{" and _is_serve_summary(options.input):
            plot_serve(options.input, options.out, _parse_size(options.size) if options.size else (1400, 900))
        elif first == "{":
            plot_timeline(options.input, options.out, _parse_size(options.size) if options.size else (1400, 700))
        elif "output_tokens_per_s_per_chip" in header and "tpot_p50_ms" in header:
            plot_serve_sweep(options.input, options.out, _parse_size(options.size) if options.size else (1400, 600))
        elif header.startswith("model,") and "_speedup" in header:
            plot_compare(options.input, options.out, _parse_size(options.size) if options.size else (1200, 700))
        else:
            plot_sweep(options.input, options.out, _parse_size(options.size) if options.size else (1200, 800))
    except (OSError, ValueError, ImportError) as error:
        print(f"g5sim: error: plot: {error}", file=sys.stderr)
        return 2
    return 0

