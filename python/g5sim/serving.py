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
keywords are the CLI's flags (max_seqs, max_batched_tokens, chunk, block_tokens,
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
          **options: Any) -> Tuple[Any, Dict[str, Any]]:
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
        _check_jobs(jobs))
    frame = pd.read_csv(io.StringIO(csv_text), dtype={"id": str}, keep_default_na=False,
                        na_values={c: [""] for c in ("tpot_ms", "itl_p50_ms", "itl_max_ms")})
    return frame, json.loads(json_text)
