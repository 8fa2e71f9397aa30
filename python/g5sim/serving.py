"""g5sim.serve(): `g5sim serve` from Python, with the same checks and byte for byte the same results.

    import g5sim
    per_request, summary = g5sim.serve("h100", "qwen2.5-7b", rate=4, num_requests=200,
                                       input_len="128:2048", output_len=256,
                                       slo_ttft_ms=500, slo_tpot_ms=30, step_cache="bucket:5")
    per_request.ttft_ms.quantile(0.99), summary["goodput"]["requests_per_s"]

`requests` is a trace: a pandas DataFrame or a path (CSV or .jsonl) with the columns
arrival_s, input_tokens, output_tokens and optionally id; or leave it out and give a synthetic
load. The keywords are the serve table's knobs (g5sim.knobs(): their flags with '_', a (LO, HI) or
(P, D) pair as LO:HI, a list of rates as 'P1,P2'), listed with their defaults in help(g5sim.serve);
every step option of the run-option table that `g5sim serve` takes is a keyword too (tp, ep, dp,
kv_dtype, layers, ...). Returns (the per-request DataFrame, the summary dict of `g5sim serve --json`).
"""

import difflib
import inspect
import io
import json
import os
import tempfile
from typing import Any, Callable, Dict, Optional, Tuple

from . import _knobs
from ._errors import ConfigError
from ._g5sim import Request, serve_texts
from ._g5sim import run_options as _run_options

_SERVE_OPTIONS = {o["name"] for o in _run_options() if o["serve"]}
_SERVE_KNOBS = _knobs.by_keyword("serve")


def _trace(requests: Any) -> Tuple[str, Optional[str]]:
    """(path, text): a path as it is; a DataFrame as CSV text the strict reader checks."""
    if requests is None:
        return "", None
    if isinstance(requests, (str, os.PathLike)):
        path = os.fspath(requests)
        if not path:
            raise ConfigError("requests: an empty path names no file", field="requests")
        return path, None
    to_csv = getattr(requests, "to_csv", None)
    if to_csv is None:
        raise ConfigError(f"requests: expected a DataFrame or a trace path, got {type(requests).__name__}",
                          field="requests")
    return "<DataFrame>", to_csv(index=False, float_format="%.12g", lineterminator="\n")


def _write_atomically(path: Any, text: str) -> None:
    """`text` at `path` whole or not at all (a temporary beside it, renamed)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _split_serve_keywords(keywords: Dict[str, Any]) -> Tuple[list, Dict[str, Any]]:
    """(the serve knobs' items, the step options): any other keyword is an error naming it."""
    items, rest = _knobs.items_of("serve", keywords)
    for name in rest:
        if name not in _SERVE_OPTIONS:
            near = difflib.get_close_matches(name, list(_SERVE_KNOBS) + sorted(_SERVE_OPTIONS), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ConfigError(f"{name}: not a serve() keyword{hint}: the serve's knobs are {sorted(_SERVE_KNOBS)}, its "
                              f"step options {sorted(_SERVE_OPTIONS)}; the engine makes each step's sequences",
                              field=name)
    return items, rest


def serve(chip: Any, model: Any, requests: Any = None, *, perfetto: Any = None,
          progress: Optional[Callable[[int, int], None]] = None, **keywords: Any) -> Tuple[Any, Dict[str, Any]]:
    import pandas as pd

    from . import _check_progress, _request, load_chip, load_model

    _check_progress(progress)
    items, options = _split_serve_keywords(keywords)
    path, text = _trace(requests)
    if path:
        if "trace" in keywords:
            raise ConfigError("trace: give the trace once: requests= or trace=", field="trace")
        items.insert(0, ("trace", path))
    request: Request = _request(**options)
    csv_text, json_text, trace_text = serve_texts(load_chip(chip), load_model(model), request, items, text,
                                                  perfetto is not None, progress)
    if perfetto is not None:
        _write_atomically(perfetto, trace_text)
    frame = pd.read_csv(io.StringIO(csv_text), float_precision="round_trip", dtype={"id": str},
                        keep_default_na=False,
                        na_values={c: [""] for c in ("tpot_ms", "itl_p50_ms", "itl_max_ms")})
    return frame, json.loads(json_text)


serve.__doc__ = __doc__.split("\n\n", 1)[0] + """

Keywords (the serve table, g5sim.knobs(); the command line's flags with '_'):
""" + _knobs.docs("serve") + """

    perfetto: a path: also write the Chrome trace-event JSON (Perfetto) there
    progress: a callable progress(done, total), called after each finished request (what it raises
              ends the serve with that error); under step_cache auto, whose passes over the
              requests repeat, only as the furthest pass gets further (done never goes back)
Every step option of the run-option table that `g5sim serve` takes is a keyword too (tp, ep, dp,
kv_dtype, layers, ...). Returns (the per-request DataFrame, the summary dict of `g5sim serve --json`).
"""
_knobs.signature(serve, "serve", [inspect.Parameter("chip", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                                  inspect.Parameter("model", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                                  inspect.Parameter("requests", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                    default=None)],
                 [_knobs.optional_keyword("perfetto"), _knobs.optional_keyword("progress"),
                  inspect.Parameter("options", inspect.Parameter.VAR_KEYWORD)])


# A serve sweep's axes in nesting order (the last the fastest): the chip and model, the sharding,
# then the knobs a sweep may list (the table's sweep_axis rows), the engine's before the load's.
_SWEEP_KNOBS = [k["keyword"] for k in _knobs.taking("sweep_axis") if k["group"] != "load"] + \
    [k["keyword"] for k in _knobs.taking("sweep_axis") if k["group"] == "load"]
_SWEEP_AXES = ("chip", "model", "tp", "ep", "dp", *_SWEEP_KNOBS)
# The summary figures a sweep row keeps, as (column, path in `g5sim serve --json`).
_SWEEP_FIGURES = (
    ("chips", ("deployment", "chips")), ("deployment_tp", ("deployment", "tp")), ("deployment_ep", ("deployment", "ep")),
    ("deployment_dp", ("deployment", "dp")), ("requests", ("requests",)), ("output_tokens", ("output_tokens",)),
    ("duration_s", ("duration_s",)), ("requests_per_s", ("throughput", "requests_per_s")),
    ("output_tokens_per_s", ("throughput", "output_tokens_per_s")),
    ("output_tokens_per_s_per_chip", ("throughput", "output_tokens_per_s_per_chip")),
    ("output_tokens_per_s_per_user", ("throughput", "output_tokens_per_s_per_user")),
    ("ttft_p50_ms", ("ttft_ms", "p50")), ("ttft_p99_ms", ("ttft_ms", "p99")), ("tpot_p50_ms", ("tpot_ms", "p50")),
    ("tpot_p99_ms", ("tpot_ms", "p99")), ("itl_p99_ms", ("itl_ms", "p99")), ("e2e_p50_s", ("e2e_s", "p50")),
    ("e2el_p50_ms", ("e2el_ms", "p50")),
    ("goodput_requests_per_s", ("goodput", "requests_per_s")), ("requests_met", ("goodput", "requests_met")),
    ("batch_mean", ("batch", "mean")), ("kv_peak", ("kv_utilisation", "peak")), ("preemptions", ("preemptions",)),
    ("steps_taken", ("steps_taken",)), ("steps_simulated", ("steps_simulated",)),
    ("joules_per_token", ("energy", "joules_per_token")), ("tokens_per_joule", ("energy", "tokens_per_joule")),
)


def _sweep_row(point: Dict[str, Any], summary: Dict[str, Any]) -> Dict[str, Any]:
    row: Dict[str, Any] = {}
    for axis, value in point.items():
        row[axis] = value if isinstance(value, (str, int, float)) else str(value)
    row["chip_name"], row["model_name"] = summary["chip"], summary["model"]
    for column, path in _SWEEP_FIGURES:
        value: Any = summary
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        row[column] = value
    return row


def _serve_point(point: Dict[str, Any], keywords: Dict[str, Any]) -> Dict[str, Any]:
    """One point of a serve sweep, where it runs (a local thread or a Dask worker): serve() on one
    thread (the points are the parallelism), the row of its summary."""
    arguments = dict(keywords)
    arguments.update(point)
    chip, model = arguments.pop("chip", "sg2262"), arguments.pop("model", "deepseek-v3")
    _, summary = serve(chip, model, jobs=1, **arguments)
    return _sweep_row(point, summary)


def serve_sweep(grid: Dict[str, Any], *, client: Optional[Any] = None, jobs: Optional[int] = None,
                progress: Optional[Any] = None, **keywords: Any) -> Any:
    """`g5sim.serve()` over every combination of the grid's lists, a row per point in point order
    (a pandas DataFrame), on local threads or on the workers of a dask.distributed.Client: the same
    rows either way (each point is its own deterministic serve).

        rows = g5sim.serve_sweep({"chip": ["sg2262", "h100"], "rate": [1, 2, 4, 8]}, num_requests=200,
                                 input_len="128:2048", output_len="16:512", slo_tpot_ms=50,
                                 step_cache="bucket:25", client=client)
        g5sim.plot_serve_sweep(rows, "rates.png")   # throughput per chip against TPOT, per chip

    Axes (lists), nested in this order with the last the fastest: chip, model (names or paths; an
    axis or a keyword, default the shipped SG2262 and DeepSeek-V3), tp, ep, dp, then the serve knobs
    a sweep may list (g5sim.knobs() with sweep_axis: the engine's, then the load's; their order is
    serve_sweep.axes). Every other keyword goes to every serve() (the load's lengths, seed,
    requests, SLOs, step_cache, ...). A row: the point's values, the chip and model names, and the
    summary's figures (deployment, throughput per chip and per user, TTFT/TPOT p50 and p99,
    goodput, batch, KV peak, steps). progress(done, total) is called as points finish, in order.
    """
    import itertools

    import pandas as pd

    from . import _argument_error
    from .grid import _check_runner

    if not isinstance(grid, dict):
        raise _argument_error("grid", f"expected a dict of axis lists, got {type(grid).__name__}")
    unknown = sorted(set(grid) - set(_SWEEP_AXES))
    if unknown:
        raise _argument_error(unknown[0], f"not a serve sweep axis (axes: {', '.join(_SWEEP_AXES)})")
    axes = []
    for axis in _SWEEP_AXES:
        if axis in grid:
            values = grid[axis]
            if isinstance(values, (str, bytes, dict)) or not isinstance(values, (list, tuple)) or not values:
                raise _argument_error(axis, "a serve sweep axis is a non-empty list of values")
            axes.append((axis, list(values)))
    if not any(a in grid for a in ("rate", "concurrency")) and not any(
            keywords.get(k) is not None for k in ("rate", "concurrency", "requests")):
        raise _argument_error("rate", "a serve sweep needs a load: a rate or concurrency axis, or keyword")
    overlap = sorted(set(grid) & set(keywords))
    if overlap:
        raise _argument_error(overlap[0], "given both as a grid axis and as a keyword")
    if "jobs" in keywords:
        raise _argument_error("jobs", "a serve sweep's jobs= is its points' threads; each point runs on one")
    jobs = _check_runner(client, jobs, progress)
    points = [dict(zip([a for a, _ in axes], values)) for values in itertools.product(*[v for _, v in axes])]
    rows = []
    chunk = max(1, jobs) * 2
    pool = None
    if client is None:
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        for first in range(0, len(points), chunk):
            part = points[first:first + chunk]
            if pool is not None:
                rows.extend(pool.map(_serve_point, part, [keywords] * len(part)))
            else:
                rows.extend(client.gather(client.map(_serve_point, part, [keywords] * len(part), pure=False)))
            if progress is not None:
                progress(len(rows), len(points))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    frame = pd.DataFrame(rows)
    frame.insert(0, "point", range(len(frame)))
    return frame


serve_sweep.axes = _SWEEP_AXES
