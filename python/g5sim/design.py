"""Design-space answers from Python, byte for byte the command line's: g5sim.sensitivity(),
g5sim.solve().

    import g5sim
    rows = g5sim.sensitivity("sg2262", "deepseek-v3", ctx=[4096, 32768], batch=64)
    rows[rows.ctx == 4096].head(5)[["field", "elasticity", "bound_by"]]
    g5sim.plot_sensitivity(rows, "tornado.png")

A row per point and field (the CSV of `g5sim sensitivity --csv`), ranked by |elasticity| within a
point; frame.attrs["sensitivity"] holds the JSON (`--json`) as a dict.
"""

import io
import json
import os
from collections.abc import Mapping
from typing import Any, Dict, Optional, Sequence, Union

from ._errors import ConfigError
from ._g5sim import Chip, sensitivity_texts, solve_texts


def _chip_text(chip: Any):
    """The chip config's text and its name in errors: sensitivity rewrites the text's fields."""
    from . import _document_text, chip_path

    if chip is None:
        chip = "sg2262"
    if isinstance(chip, Chip):
        raise ConfigError("chip: sensitivity rewrites the config's fields: give its path, a shipped chip's name or "
                          "its dict, not a loaded g5sim.Chip", field="chip")
    if isinstance(chip, Mapping):
        return _document_text(chip, "<chip dict>"), "<chip dict>"
    if isinstance(chip, (str, os.PathLike)):
        path = chip_path(os.fspath(chip))
        try:
            with open(path, "rb") as f:
                data = f.read((1 << 20) + 1)
        except OSError as e:
            raise ConfigError(f"{path}: cannot read the chip config: {e.strerror}", field="chip") from None
        if len(data) > 1 << 20:
            raise ConfigError(f"{path}: above 1 MiB, not a chip config", field="chip")
        return data.decode("utf-8", errors="replace"), path
    raise ConfigError(f"chip: expected a path, a shipped chip's name or a dict, got {type(chip).__name__}",
                      field="chip")


def _contexts(ctx: Any) -> list:
    if ctx is None:
        return []
    values = [ctx] if isinstance(ctx, int) else list(ctx) if isinstance(ctx, Sequence) else None
    if values is None or not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
        raise ConfigError(f"ctx: expected a context length or a list of them (whole numbers >= 1), got {ctx!r}",
                          field="ctx")
    return values


def _serve_items(serve: Any) -> Optional[str]:
    """serve= as `--serve` text: a dict of g5sim.serve()'s keywords, or the text itself."""
    if serve is None:
        return None
    if isinstance(serve, str):
        return serve
    if isinstance(serve, Mapping):
        items = []
        for key, value in serve.items():
            if isinstance(value, (tuple, list)) and len(value) == 2 and key in ("input_len", "output_len"):
                value = f"{int(value[0])}:{int(value[1])}"
            elif isinstance(value, (tuple, list)):
                value = ",".join(str(v) for v in value)
            elif isinstance(value, os.PathLike):
                value = os.fspath(value)
            text = str(value)
            if " " in text or not text:
                raise ConfigError(f"serve: {key}: {text!r} holds a space or is empty", field="serve")
            items.append(f"{'requests' if key == 'num_requests' else key}={text}")
        return " ".join(items)
    raise ConfigError(f"serve: expected a dict of serve keywords or 'key=value ...' text, got {type(serve).__name__}",
                      field="serve")


def sensitivity(chip: Union[Mapping, str, os.PathLike, None] = None, model: Any = None, *,
                fields: Optional[Sequence[str]] = None, metric: Optional[str] = None, delta_pct: float = 5,
                ctx: Union[int, Sequence[int], None] = None, serve: Union[Mapping, str, None] = None,
                slo_ttft_ms: Optional[float] = None, slo_tpot_ms: Optional[float] = None,
                jobs: Optional[int] = None, **options: Any):
    """`g5sim sensitivity`: d ln(metric) / d ln(field) of every numeric chip field (or `fields`), by
    central differences of real runs (each field x (1 +- delta_pct %)), ranked per point.

    chip: a path, a shipped chip's name (default "sg2262") or a dict; model: as simulate() takes it
    (default the shipped DeepSeek-V3). A run's points are ctx (one length or a list); every other
    keyword is simulate()'s (batch, phase, tp, kv_dtype, ...). serve= a dict of g5sim.serve()'s
    keywords (rate, num_requests, input_len, output_len, step_cache, ...) differentiates a serve
    instead, with slo_ttft_ms / slo_tpot_ms for goodput. metric: a run's step_ms (default) or
    tokens_per_s_per_chip; a serve's tpot_p50_ms (default), tpot_p99_ms, ttft_p50_ms, ttft_p99_ms,
    itl_p99_ms, e2e_p50_s, output_tokens_per_s_per_chip, goodput_requests_per_s.
    Returns the CSV's rows as a DataFrame; .attrs["sensitivity"] is the JSON as a dict.
    """
    import pandas as pd

    from . import _argument_error, _request, load_model
    from .grid import _check_jobs

    if fields is not None and (isinstance(fields, str) or not all(isinstance(f, str) for f in fields)):
        raise _argument_error("fields", f"expected a list of dotted field names, got {fields!r}")
    if isinstance(delta_pct, bool) or not isinstance(delta_pct, (int, float)) or not 0.1 <= delta_pct <= 50:
        raise _argument_error("delta_pct", f"expected a percent in 0.1..50, got {delta_pct!r}")
    if serve is None and (slo_ttft_ms is not None or slo_tpot_ms is not None):
        raise _argument_error("slo_ttft_ms", "an SLO is a serve's (serve=)")
    text, source = _chip_text(chip)
    _, csv_text, json_text = sensitivity_texts(
        text, source, load_model(model if model is not None else "deepseek-v3"), _request(**options),
        _contexts(ctx), _serve_items(serve), None if slo_ttft_ms is None else float(slo_ttft_ms),
        None if slo_tpot_ms is None else float(slo_tpot_ms), list(fields or []), metric or "",
        float(delta_pct) / 100.0, _check_jobs(jobs))
    frame = pd.read_csv(io.StringIO(csv_text), keep_default_na=False,
                        na_values={c: [""] for c in ("ctx", "low_value", "high_value", "metric_low", "metric_high",
                                                     "elasticity", "elasticity_down",
                                                     "elasticity_up", "rank")})
    frame.attrs["sensitivity"] = json.loads(json_text)
    return frame


def design_report(frame_or_json: Any, kind: str) -> Dict[str, Any]:
    """The JSON of a sensitivity or a solve (`kind`): from g5sim.sensitivity()'s or g5sim.solve()'s
    frame, a dict, or a `--json` file."""
    if isinstance(frame_or_json, Mapping):
        return dict(frame_or_json)
    attrs = getattr(frame_or_json, "attrs", None)
    if attrs is not None and kind in attrs:
        return attrs[kind]
    if isinstance(frame_or_json, (str, os.PathLike)):
        with open(frame_or_json, encoding="utf-8") as f:
            report = json.load(f)
        if not isinstance(report, dict) or report.get("kind") != kind:
            raise ConfigError(f"{os.fspath(frame_or_json)}: not a `g5sim {kind} --json` file", field="input")
        return report
    raise ConfigError(f"expected g5sim.{kind}()'s frame, its JSON dict or a --json path", field="input")


def _vary_items(vary: Any) -> list:
    """vary= as --vary items: a field name, a list of them, or a dict field -> None or (LO, HI)."""
    if isinstance(vary, str):
        return [vary]
    if isinstance(vary, Mapping):
        items = []
        for path, span in vary.items():
            if span is None:
                items.append(str(path))
            elif isinstance(span, (tuple, list)) and len(span) == 2:
                items.append(f"{path}={float(span[0])!r}:{float(span[1])!r}")
            else:
                raise ConfigError(f"vary: {path}: expected None or (LO, HI), got {span!r}", field="vary")
        return items
    if isinstance(vary, Sequence) and all(isinstance(v, str) for v in vary):
        return list(vary)
    raise ConfigError(f"vary: expected a field, a list of fields or a dict field -> (LO, HI), got {vary!r}",
                      field="vary")


def solve(chip: Union[Mapping, str, os.PathLike, None] = None, model: Any = None, *,
          targets: Union[str, Sequence[str], None] = None, vary: Any = None,
          cost: Optional[Mapping[str, float]] = None, serve: Union[Mapping, str, None] = None,
          slo_ttft_ms: Optional[float] = None, slo_tpot_ms: Optional[float] = None, tolerance_pct: float = 0.1,
          max_runs: int = 400, jobs: Optional[int] = None, **options: Any):
    """`g5sim solve`: the least change of the `vary` fields that meets every target (one field by
    bisection, several by weighted least change in log space), or why none in range does.

    targets: "step_ms<=30" or a list ("tokens_per_s_per_chip>=1000", ...); a run's SLOs
    (slo_tpot_ms, slo_ttft_ms) are step_ms targets, a serve's (serve={...} as in sensitivity())
    define its goodput. vary: a field, a list, or {field: (LO, HI) or None} (default range a tenth
    to ten times the value); cost: {field: weight}. Every other keyword is simulate()'s.
    Returns a DataFrame of the runs tried (the CSV of `g5sim solve --csv`); .attrs["solve"] is
    the JSON: outcome ("met", "already", "cannot"), the answer per field, the reason.
    """
    import pandas as pd

    from . import _argument_error, _request, load_model
    from .grid import _check_jobs

    if targets is None and slo_tpot_ms is None and slo_ttft_ms is None:
        raise _argument_error("targets", "give a target (step_ms<=30, ...) or, for a run, slo_tpot_ms / slo_ttft_ms")
    target_list = [] if targets is None else [targets] if isinstance(targets, str) else list(targets)
    if not all(isinstance(t, str) for t in target_list):
        raise _argument_error("targets", f"expected 'METRIC<=X' texts, got {targets!r}")
    if vary is None:
        raise _argument_error("vary", "give the chip fields to vary")
    costs = []
    for path, weight in (cost or {}).items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise _argument_error("cost", f"{path}: expected a number, got {weight!r}")
        costs.append((str(path), float(weight)))
    if isinstance(tolerance_pct, bool) or not isinstance(tolerance_pct, (int, float)) or \
            not 0.0001 <= tolerance_pct <= 10:
        raise _argument_error("tolerance_pct", f"expected a percent in 0.0001..10, got {tolerance_pct!r}")
    if isinstance(max_runs, bool) or not isinstance(max_runs, int) or not 3 <= max_runs <= 100000:
        raise _argument_error("max_runs", f"expected a whole number in 3..100000, got {max_runs!r}")
    text, source = _chip_text(chip)
    _, csv_text, json_text = solve_texts(
        text, source, load_model(model if model is not None else "deepseek-v3"), _request(**options),
        _serve_items(serve), None if slo_ttft_ms is None else float(slo_ttft_ms),
        None if slo_tpot_ms is None else float(slo_tpot_ms), target_list, _vary_items(vary), costs,
        float(tolerance_pct) / 100.0, max_runs, _check_jobs(jobs))
    frame = pd.read_csv(io.StringIO(csv_text), keep_default_na=False, na_values={"shortfall": [""]})
    frame.attrs["solve"] = json.loads(json_text)
    return frame


# g5sim.search()'s own keywords (the command line's flags with '_'), beside the run options.
_SEARCH_KEYS = ("tp", "ep", "dp", "max_chips", "max_seqs", "max_batched_tokens", "chunk", "micro_batches", "disagg",
                "mtp", "accept", "slo_ttft_ms", "slo_tpot_ms", "slo_stat", "objective", "exhaustive", "trace", "rate",
                "concurrency", "num_requests", "input_len", "output_len", "seed", "schedule", "block_tokens",
                "memory_utilization", "step_cache")


def _keyword_text(name: str, value: Any) -> str:
    """A keyword's value as its flag takes it: a list comma separated, a bool true/false, a number
    exactly (repr)."""
    from . import _argument_error

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_keyword_text(name, v) for v in value)
    if isinstance(value, (int, float, str)):
        return value if isinstance(value, str) else repr(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise _argument_error(name, f"expected a value or a list of values, got {type(value).__name__}")


def _search_inputs(arguments):
    """The chips, model, step options and keyword items of a search (where it runs: here or on a
    Dask worker)."""
    from . import _request, load_chip, load_model

    chips, model, options, items = arguments
    return ([load_chip(c) for c in chips], load_model(model if model is not None else "deepseek-v3"),
            _request(**options), items)


def _search_point(arguments, index: int) -> str:
    """One point of a search served where it runs (a Dask worker): its outcome's text."""
    from ._g5sim import search_point_text

    return search_point_text(*_search_inputs(arguments), index)


def search(chip: Any = "sg2262", model: Any = None, *, client: Optional[Any] = None, jobs: Optional[int] = None,
           **keywords: Any):
    """`g5sim search`: every deployment of a model on one or more chips serving the same requests,
    the Pareto front of output tokens/s per chip against per user on each chip, and the best point
    meeting the SLO.

    chip: a name, path or dict, or a list of them (default "sg2262"); model as simulate() takes it
    (default DeepSeek-V3). The load: a trace= file (CSV or JSON lines, as g5sim serve's), or rate=
    or concurrency= with num_requests=, input_len=, output_len=, seed=. The SLO: slo_ttft_ms=, slo_tpot_ms=, slo_stat= ("p90"). The space (a value, a list, or
    "LO:HI" doubling): tp=, ep=, dp= (default every sharding that fits, up to max_chips=),
    max_seqs=, max_batched_tokens=, chunk=, micro_batches=, disagg= ("none", "1:1"), mtp= with
    accept=. objective= ("tokens_per_s_per_chip" or "tokens_per_joule"), exhaustive=, step_cache=
    ("bucket:10"), schedule=, block_tokens=, memory_utilization=; any other keyword is a run
    option of every step (kv_dtype=, layers=, ...).
    Points run on `jobs` threads, or on the workers of a dask.distributed.Client (client=): the
    same bytes either way. Returns a row per point run (the CSV of `g5sim search --csv`);
    .attrs["search"] is the JSON as a dict, .attrs["table"] the table.
    """
    import pandas as pd

    from ._g5sim import search_texts
    from .grid import _check_jobs

    chips = list(chip) if isinstance(chip, (list, tuple)) else [chip]
    items, options = [], {}
    for name, value in keywords.items():
        if name in _SEARCH_KEYS:
            if value is not None:
                items.append(("requests" if name == "num_requests" else name, _keyword_text(name, value)))
        else:
            options[name] = value
    arguments = (chips, model, options, items)
    run_pass = None
    if client is not None:
        def run_pass(indices):
            return client.gather(client.map(_search_point, [arguments] * len(indices), list(indices), pure=False))
    table, csv_text, json_text = search_texts(*_search_inputs(arguments), run_pass,
                                              _check_jobs(jobs) if client is None else 1)
    numeric = ("chips", "tokens_per_s_per_chip", "tokens_per_s_per_user", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms",
               "tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms", "goodput_requests_per_s", "joules_per_token",
               "meets_slo")
    frame = pd.read_csv(io.StringIO(csv_text), keep_default_na=False, dtype={"disagg": str, "status": str},
                        na_values={c: [""] for c in numeric})
    frame.attrs["search"] = json.loads(json_text)
    frame.attrs["table"] = table
    return frame
