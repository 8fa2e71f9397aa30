"""g5sim.serve(): `g5sim serve` from Python, with the same checks and byte for byte the same results.

    import g5sim
    per_request, summary = g5sim.serve("h100", "qwen2.5-7b", rate=4, num_requests=200,
                                       input_len="128:2048", output_len=256,
                                       slo_ttft_ms=500, slo_tpot_ms=30, step_cache="bucket:5")
    per_request.ttft_ms.quantile(0.99), summary["goodput"]["requests_per_s"]

`requests` is a trace: a pandas DataFrame or a path (CSV or .jsonl) with the columns
arrival_s, input_tokens, output_tokens and optionally id; or leave it out and give a synthetic
load: rate= (Poisson, requests/s) or concurrency= (closed loop), num_requests= (the CLI's
--requests), input_len= and output_len= (N, "LO:HI", a (LO, HI) pair, or a histogram file's path: CSV
low,high,weight), seed=. The engine's
keywords are the CLI's flags (schedule="mixed" or "prefill-first", max_seqs, max_batched_tokens, chunk, block_tokens,
memory_utilization, kv_tokens, step_cache, slo_ttft_ms, slo_tpot_ms; disagg="P:D" or (P, D); mtp=K with
accept=P or [P1, ...], accept_draw=SEED to draw acceptances; perfetto=PATH writes the Chrome trace;
jobs=N threads for a bucketed step's new anchors, default the machine's cores, the same results);
every step option of the
run-option table that `g5sim serve` takes is a keyword too (tp, ep, dp, kv_dtype, layers, ...).
Returns (the per-request DataFrame, the summary dict of `g5sim serve --json`).
"""

import io
import json
import os
from typing import Any, Dict, Optional, Tuple, Union

from ._errors import ConfigError
from ._g5sim import Request, serve_texts
from ._g5sim import run_options as _run_options

_SERVE_OPTIONS = {o["name"] for o in _run_options() if o["serve"]}


def _length(name: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return f"{int(value[0])}:{int(value[1])}"
    if isinstance(value, bool):
        raise ConfigError(f"{name}: expected N, 'LO:HI', (LO, HI) or a histogram file, got {value!r}", field=name)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise ConfigError(f"{name}: expected N, 'LO:HI', (LO, HI) or a histogram file, got {value!r}", field=name)


def _disagg(value: Any) -> str:
    """--disagg's text from "P:D" or (P, D); "" for none."""
    if value is None:
        return ""
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return f"{int(value[0])}:{int(value[1])}"
    if isinstance(value, str):
        return value
    raise ConfigError(f"disagg: expected 'P:D' or (P, D), got {value!r}", field="disagg")


def _rates(value: Any) -> str:
    """--accept's text from a rate or a list of rates; "" for none."""
    if value is None:
        return ""
    if isinstance(value, (tuple, list)):
        return ",".join(repr(float(v)) for v in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(float(value))
    if isinstance(value, str):
        return value
    raise ConfigError(f"accept: expected a rate or a list of rates, got {value!r}", field="accept")


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


def serve(chip: Any, model: Any, requests: Any = None, *, rate: Optional[float] = None,
          concurrency: Optional[int] = None, num_requests: Optional[int] = None, input_len: Any = None,
          output_len: Any = None, seed: Optional[int] = None, max_seqs: int = 256, max_batched_tokens: int = 8192,
          chunk: Optional[int] = None, block_tokens: int = 16, memory_utilization: float = 0.9,
          kv_tokens: Optional[int] = None, step_cache: str = "exact", slo_ttft_ms: Optional[float] = None,
          slo_tpot_ms: Optional[float] = None, disagg: Any = None, mtp: Optional[int] = None,
          accept: Any = None, accept_draw: Optional[int] = None, perfetto: Any = None, jobs: Optional[int] = None,
          schedule: str = "mixed", **options: Any) -> Tuple[Any, Dict[str, Any]]:
    import pandas as pd

    from . import _request, load_chip, load_model
    from .grid import _check_jobs

    for name in options:
        if name not in _SERVE_OPTIONS:
            raise ConfigError(f"{name}: serve() takes the step options {sorted(_SERVE_OPTIONS)}; the engine makes "
                              "each step's sequences", field=name)
    request: Request = _request(**options)
    path, text = _trace(requests)
    for name, value in (("concurrency", concurrency), ("kv_tokens", kv_tokens), ("chunk", chunk)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"{name}: expected a whole number >= 1, got {value!r}", field=name)
    csv_text, json_text = serve_texts(
        load_chip(chip), load_model(model), request, path, text,
        None if rate is None else float(rate), concurrency or 0, num_requests, _length("input_len", input_len),
        _length("output_len", output_len), seed, max_seqs, max_batched_tokens, chunk or 0, block_tokens,
        float(memory_utilization), kv_tokens or 0, step_cache,
        None if slo_ttft_ms is None else float(slo_ttft_ms), None if slo_tpot_ms is None else float(slo_tpot_ms),
        _disagg(disagg), mtp or 0, _rates(accept), accept_draw, "" if perfetto is None else os.fspath(perfetto),
        _check_jobs(jobs), schedule)
    frame = pd.read_csv(io.StringIO(csv_text), dtype={"id": str}, keep_default_na=False,
                        na_values={c: [""] for c in ("tpot_ms", "itl_p50_ms", "itl_max_ms")})
    return frame, json.loads(json_text)


# A serve sweep's axes in nesting order (the last the fastest): the deployment, then the engine's
# limits, then the load.
_SWEEP_AXES = ("chip", "model", "tp", "ep", "dp", "max_seqs", "max_batched_tokens", "chunk", "concurrency", "rate")
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
    axis or a keyword, default the shipped SG2262 and DeepSeek-V3), tp, ep, dp, max_seqs, max_batched_tokens, chunk,
    concurrency, rate. Every other keyword goes to every serve() (the load's lengths, seed,
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
