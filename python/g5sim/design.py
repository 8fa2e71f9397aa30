"""Design-space answers from Python, byte for byte the command line's: g5sim.sensitivity(),
g5sim.solve().

    import g5sim
    rows = g5sim.sensitivity("sg2262", "deepseek-v3", ctx=[4096, 32768], batch=64)
    rows[rows.ctx == 4096].head(5)[["field", "elasticity", "bound_by"]]
    g5sim.plot_sensitivity(rows, "tornado.png")

A row per point and field (the CSV of `g5sim sensitivity --csv`), ranked by |elasticity| within a
point; frame.attrs["sensitivity"] holds the JSON (`--json`) as a dict.
"""

import inspect
import io
import json
import os
from collections.abc import Mapping
from typing import Any, Callable, Dict, Optional, Sequence, Union

from . import _knobs
from ._errors import ConfigError
from ._g5sim import Chip, sensitivity_texts, solve_texts
from ._g5sim import run_options as _run_options

# The step options a design function passes on: a search's steps are a serve's, a sensitivity's
# or solve's run any run option.
_SERVE_OPTIONS = [o["name"] for o in _run_options() if o["serve"]]
_RUN_OPTIONS = [o["name"] for o in _run_options() if o["run"] or o["serve"]]


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


def _serve_items(serve: Any) -> Optional[str]:
    """serve= as `--serve` text: a dict of g5sim.serve()'s keywords, or the text itself."""
    if serve is None:
        return None
    if isinstance(serve, str):
        return serve
    if isinstance(serve, Mapping):
        knobs = _knobs.by_keyword("serve_item")
        items = []
        for key, value in serve.items():
            knob = knobs.get(key)
            if knob is None:
                raise ConfigError(f"serve: {key}: not a serve item (items: {', '.join(knobs)})", field="serve")
            text = _knobs.text_of(knob, value)
            if " " in text or not text:
                raise ConfigError(f"serve: {key}: {text!r} holds a space or is empty", field="serve")
            items.append(f"{knob['name']}={text}")
        return " ".join(items)
    raise ConfigError(f"serve: expected a dict of serve keywords or 'key=value ...' text, got {type(serve).__name__}",
                      field="serve")


def _design_items(use: str, keywords: Dict[str, Any]):
    """(the knob items of a design function's keywords, the step options left): serve= a dict of
    g5sim.serve()'s keywords or 'key=value ...' text."""
    keywords = dict(keywords)
    if keywords.get("serve") is not None:
        keywords["serve"] = _serve_items(keywords["serve"])
    return _knobs.items_of(use, keywords)


def sensitivity(chip: Union[Mapping, str, os.PathLike, None] = None, model: Any = None, **keywords: Any):
    import pandas as pd

    from . import _request, load_model

    items, options = _design_items("sensitivity", keywords)
    _knobs.refuse_unknown("sensitivity", "sensitivity", options, _RUN_OPTIONS)
    text, source = _chip_text(chip)
    _, csv_text, json_text = sensitivity_texts(text, source, load_model(model if model is not None else "deepseek-v3"),
                                               _request(**options), items)
    # float_precision: the library writes each number as its shortest exact text, and pandas' default
    # parser may land an ulp from it (a search point's TPOT an ulp off the serve's): read it exactly.
    frame = pd.read_csv(io.StringIO(csv_text), float_precision="round_trip", keep_default_na=False,
                        na_values={c: [""] for c in ("ctx", "low_value", "high_value", "metric_low", "metric_high",
                                                     "elasticity", "elasticity_down",
                                                     "elasticity_up", "rank")})
    frame.attrs["sensitivity"] = json.loads(json_text)
    return frame


sensitivity.__doc__ = """`g5sim sensitivity`: d ln(metric) / d ln(field) of every numeric chip field (or `fields`), by
central differences of real runs (each field x (1 +- delta_pct %)), ranked per point.

chip: a path, a shipped chip's name (default "sg2262") or a dict; model: as simulate() takes it
(default the shipped DeepSeek-V3). Keywords (the design table, g5sim.knobs()):
""" + _knobs.docs("sensitivity") + """
serve= may be a dict of g5sim.serve()'s keywords. Every other keyword is simulate()'s (batch, phase,
tp, kv_dtype, ...). Returns the CSV's rows as a DataFrame; .attrs["sensitivity"] is the JSON as a dict.
"""
_knobs.signature(sensitivity, "sensitivity",
                 [inspect.Parameter("chip", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
                  inspect.Parameter("model", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)],
                 [inspect.Parameter("options", inspect.Parameter.VAR_KEYWORD)])


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


def solve(chip: Union[Mapping, str, os.PathLike, None] = None, model: Any = None, **keywords: Any):
    import pandas as pd

    from . import _argument_error, _request, load_model

    keywords = dict(keywords)
    if keywords.get("vary") is not None:
        keywords["vary"] = _vary_items(keywords["vary"])
    cost = keywords.get("cost")
    if cost is not None:
        if not isinstance(cost, Mapping):
            raise _argument_error("cost", f"expected a dict field -> weight, got {type(cost).__name__}")
        parts = []
        for path, weight in cost.items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float)):
                raise _argument_error("cost", f"{path}: expected a number, got {weight!r}")
            parts.append(f"{path}={float(weight)!r}")
        keywords["cost"] = parts
    items, options = _design_items("solve", keywords)
    _knobs.refuse_unknown("solve", "solve", options, _RUN_OPTIONS)
    text, source = _chip_text(chip)
    _, csv_text, json_text = solve_texts(text, source, load_model(model if model is not None else "deepseek-v3"),
                                         _request(**options), items)
    frame = pd.read_csv(io.StringIO(csv_text), float_precision="round_trip", keep_default_na=False,
                        na_values={"shortfall": [""]})
    frame.attrs["solve"] = json.loads(json_text)
    return frame


solve.__doc__ = """`g5sim solve`: the least change of the `vary` fields that meets every target (one field by
bisection, several by weighted least change in log space), or why none in range does.

Keywords (the design table, g5sim.knobs()):
""" + _knobs.docs("solve") + """
targets: a text or a list; vary: a field, a list, or {field: (LO, HI) or None}; cost: {field: weight};
serve= as in sensitivity(). Every other keyword is simulate()'s. Returns a DataFrame of the runs
tried (the CSV of `g5sim solve --csv`); .attrs["solve"] is the JSON: outcome ("met", "already",
"cannot"), the answer per field, the reason.
"""
_knobs.signature(solve, "solve",
                 [inspect.Parameter("chip", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
                  inspect.Parameter("model", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)],
                 [inspect.Parameter("options", inspect.Parameter.VAR_KEYWORD)])


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


def search(chip: Any = "sg2262", model: Any = None, *, client: Optional[Any] = None,
           progress: Optional[Callable[[int, int], None]] = None, **keywords: Any):
    import pandas as pd

    from ._g5sim import search_texts
    from .grid import _check_runner

    chips = list(chip) if isinstance(chip, (list, tuple)) else [chip]
    _check_runner(client, None, progress)
    items, options = _knobs.items_of("search", keywords, lists=True)
    _knobs.refuse_unknown("search", "search", options, _SERVE_OPTIONS)
    arguments = (chips, model, options, items)
    run_pass = None
    if client is not None:
        counted = {"done": 0, "total": 0}

        def run_pass(indices):
            futures = client.map(_search_point, [arguments] * len(indices), list(indices), pure=False)
            counted["total"] += len(indices)
            if progress is not None:
                # Each point as its worker finishes it (the outcomes are gathered in order after).
                from dask.distributed import as_completed
                for _ in as_completed(futures):
                    counted["done"] += 1
                    progress(counted["done"], counted["total"])
            return client.gather(futures)
    table, csv_text, json_text = search_texts(*_search_inputs(arguments), run_pass, progress)
    numeric = ("chips", "tokens_per_s_per_chip", "tokens_per_s_per_user", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms",
               "tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms", "goodput_requests_per_s", "joules_per_token",
               "meets_slo")
    text_columns = {k["name"]: str for k in _knobs.taking("search_list") if k["type"] == "text"}
    frame = pd.read_csv(io.StringIO(csv_text), float_precision="round_trip", keep_default_na=False,
                        dtype={**text_columns, "status": str},
                        na_values={c: [""] for c in numeric})
    frame.attrs["search"] = json.loads(json_text)
    frame.attrs["table"] = table
    return frame


search.__doc__ = """`g5sim search`: every deployment of a model on one or more chips serving the same requests,
the Pareto front of output tokens/s per chip against per user on each chip, and the best point
meeting the SLO.

chip: a name, path or dict, or a list of them (default "sg2262"); model as simulate() takes it
(default DeepSeek-V3). Keywords (the knob tables, g5sim.knobs(); a searchable knob takes a value,
a list, or "LO:HI" doubling):
""" + _knobs.docs("search", search_lists=True) + """
Any other keyword is a run option of every step (kv_dtype=, layers=, ...). Points run on the jobs
threads, or on the workers of a dask.distributed.Client (client=): the same bytes either way.
progress(done, total), a callable, is called as each point finishes (total: the points of the
passes so far; a refining pass adds points).
Returns a row per point run (the CSV of `g5sim search --csv`); .attrs["search"] is the JSON as a
dict, .attrs["table"] the table.
"""
_knobs.signature(search, "search",
                 [inspect.Parameter("chip", inspect.Parameter.POSITIONAL_OR_KEYWORD, default="sg2262"),
                  inspect.Parameter("model", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
                  _knobs.optional_keyword("client"), _knobs.optional_keyword("progress")],
                 [inspect.Parameter("options", inspect.Parameter.VAR_KEYWORD)])
