"""g5sim: instruction-level performance simulator of LLM inference (MLA first) on TPU-class chips.

    import g5sim
    chip = g5sim.load_chip(SG2262_CONFIG, source="SG2262_CONFIG")   # a dict, or a YAML path
    model = g5sim.load_model("configs/models/deepseek-v3.yaml")
    r = g5sim.simulate(chip, model, phase="decode", batch=4, ctx=32768, scope="block",
                       tp=1, ep=1, dp=1)
    read, fa2 = r.op("kv_cache_read"), r.op("fa2")
    assert read.op_start_ns < fa2.op_end_ns and fa2.op_start_ns < read.op_end_ns  # overlap
    r.to_dict()         # `g5sim run --json`, as a dict
    r.to_dataframe()    # one row per op (pandas)
    g5sim.plot_timeline(r, "timeline.png")       # ops by engine (matplotlib)
    g5sim.plot_sweep("sweep.csv", "sweep.png")  # a `g5sim sweep` CSV: latency vs context
    rows = g5sim.sweep({"batch": [8, 64], "ctx": [1024, 4096]})   # a grid, threads or dask
    per_request, summary = g5sim.serve("h100", "qwen2.5-7b", rate=4, num_requests=100,
                                       input_len=512, output_len=128)  # requests in, TTFT/TPOT out

Bad input raises g5sim.ConfigError (a ValueError) naming the source and the field; anything else
raised from the C++ core is a RuntimeError (a bug: please report it). simulate() releases the GIL.
"""

import difflib
import inspect
import json
import math
import numbers
import os
from collections.abc import Mapping
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _reports
from ._errors import ConfigError
from ._g5sim import Chip, Kind, Model, ModelSchema, Op, Request, Result, SequenceGroup
from ._g5sim import OpResult, check_report, chrome_trace_request, data_dir, shipped_chip_path, shipped_model_path, simulate_request
from ._g5sim import chip_path, model_path, shipped_chips, shipped_models
from ._g5sim import RuntimeParts, runtime, runtime_path, shipped_runtimes
from ._g5sim import kv_tiers, kv_tiers_path, shipped_kv_tiers
from ._g5sim import simulate_attention as _simulate_attention, simulate_matmul as _simulate_matmul
from ._g5sim import simulate_collective as _simulate_collective
from ._g5sim import reports
from ._g5sim import run_options as _run_options
from ._g5sim import version as _version
from .grid import sweep, sweep_rows
from .design import search, sensitivity, solve
from .plot import plot_compare, plot_search, plot_sensitivity, plot_serve, plot_solve, plot_serve_sweep, plot_sweep, plot_timeline
from .serving import serve, serve_sweep

__version__ = _version()

__all__ = [
    "Chip", "ConfigError", "Kind", "Model", "Op", "OpResult", "Result", "RuntimeParts", "SequenceGroup", "__version__", "check_report", "chip_path", "chrome_trace", "data_dir", "diff", "reports",
    "load_chip", "load_model", "model_path", "plot_compare", "plot_search", "plot_sensitivity", "plot_serve", "plot_serve_sweep", "plot_solve", "plot_sweep", "plot_timeline", "runtime", "runtime_path", "shipped_chip_path", "shipped_chips",
    "search", "sensitivity", "serve", "serve_sweep", "shipped_model_path", "shipped_models", "shipped_runtimes", "shipped_kv_tiers", "kv_tiers", "kv_tiers_path", "simulate", "simulate_attention", "simulate_collective", "simulate_matmul", "solve", "sweep", "sweep_rows",
]

PathLike = Union[str, "os.PathLike[str]"]

def _argument_error(name: str, message: str) -> ConfigError:
    return ConfigError(f"{name}: {message}", field=name)


def _check_progress(progress: Any, call: str = "progress(done, total)") -> None:
    """A progress keyword is None or a callable (called as `call` says)."""
    if progress is not None and not callable(progress):
        raise _argument_error("progress", f"expected a callable {call}, got {type(progress).__name__}")


# No config nests deeper than a few levels; a deeper (or self-containing) dict is refused before
# Python's recursion limit would be.
_MAX_DEPTH = 32


def _plain(value: Any, path: str, source: str, depth: int = 0) -> Any:
    """A JSON-ready copy of a config document, checked: string keys, finite numbers, no objects."""
    where = path or "(top level)"
    if depth > _MAX_DEPTH:
        raise ConfigError(f"{source}: {where}: nested deeper than {_MAX_DEPTH} levels (or contains itself)",
                          source=source, field=path or None)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ConfigError(f"{source}: {where}: a key must be a string, got {key!r}", source=source,
                                  field=path or None)
            out[key] = _plain(item, f"{path}.{key}" if path else key, source, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{path}[{i}]", source, depth + 1) for i, item in enumerate(value)]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            raise ConfigError(f"{source}: {where}: must be a finite number, got {number}", source=source,
                              field=path or None)
        return number
    raise ConfigError(f"{source}: {where}: expected a number, a string, a list or a mapping, got "
                      f"{type(value).__name__}", source=source, field=path or None)


def _document_text(document: Mapping, source: str) -> str:
    return json.dumps(_plain(document, "", source))


def load_chip(config: Union[Chip, Mapping, PathLike], source: Optional[str] = None) -> Chip:
    """A chip from a dict (validated exactly like a file), a YAML file path, or a shipped chip's stem ("h100").

    A dict's errors name `source` (default "<chip dict>") and the dotted field, without line or
    column; a file's name its path, line and column. Raises ConfigError.
    """
    if isinstance(config, Chip):
        return config
    if isinstance(config, Mapping):
        return Chip.from_document(_document_text(config, source or "<chip dict>"), source or "<chip dict>")
    if isinstance(config, (str, os.PathLike)):
        if source is not None:
            raise TypeError("load_chip: `source` names a dict document; a file is named by its path")
        return Chip.from_file(chip_path(os.fspath(config)))
    raise TypeError(f"load_chip: expected a dict or a path, got {type(config).__name__}")


def load_model(config: Union[Model, Mapping, PathLike], source: Optional[str] = None, *,
               schema: Optional[str] = None) -> Model:
    """A model from a dict, a file path (.json: a Hugging Face config.json; else strict YAML), or a shipped model's stem.

    A dict is read with g5sim's strict schema (every key known, `name` required), or with
    schema="hugging_face" as a config.json (other keys ignored, named by `source`). Without a
    schema, a dict with no `name` but a `model_type` or `architectures` key (what every Hugging
    Face config.json has) is read as one, any other with g5sim's. A missing
    kv_lora_rank or qk_rope_head_dim raises ConfigError naming the field and the source.
    """
    if isinstance(config, Model):
        return config
    if isinstance(config, Mapping):
        name = source or "<model dict>"
        if schema is None:
            hugging_face = "name" not in config and ("model_type" in config or "architectures" in config)
            schema = "hugging_face" if hugging_face else "g5sim"
        if schema == "g5sim":
            kind = ModelSchema.g5sim
        elif schema == "hugging_face":
            kind = ModelSchema.hugging_face
        else:
            raise _argument_error("schema", f"expected g5sim or hugging_face, got {schema!r}")
        return Model.from_document(_document_text(config, name), name, kind)
    if isinstance(config, (str, os.PathLike)):
        if source is not None:
            raise TypeError("load_model: `source` names a dict document; a file is named by its path")
        return Model.from_file(model_path(os.fspath(config)))
    raise TypeError(f"load_model: expected a dict or a path, got {type(config).__name__}")


# simulate()'s keywords are the run-option table's rows (g5sim/run_options.hpp): their names,
# defaults, ranges and docs come from the C++ core, so Python and the command line cannot drift.
_OPTIONS = _run_options()
_OPTION_NAMES = [option["name"] for option in _OPTIONS]


def _groups_text(seqs: Any) -> str:
    """seqs=[(count, q_len, history), ...] as --mix text ("64x1@4096,1x2048@0")."""
    groups = list(seqs)
    if not groups:
        raise _argument_error("seqs", "expected at least one (count, q_len, history) group")
    parts = []
    for i, group in enumerate(groups):
        if isinstance(group, (str, bytes)) or not isinstance(group, Sequence) or len(group) != 3 or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in group):
            raise _argument_error("seqs", f"group {i}: expected (count, q_len, history) of whole numbers, got {group!r}")
        parts.append(f"{group[0]}x{group[1]}@{group[2]}")
    return ",".join(parts)


def _request(**keywords: Any) -> Request:
    """simulate()'s keywords as a checked Request (each assignment checks type and range).
    seqs= takes a CSV path (--seqs) or the groups themselves, [(count, q_len, history), ...]."""
    request = Request()
    for name, value in keywords.items():
        if name == "seqs" and value is not None and not isinstance(value, (str, os.PathLike)):
            if "mix" in keywords and keywords["mix"] is not None:
                raise _argument_error("mix", "give the step's sequences once: mix or seqs, not both")
            request.mix = _groups_text(value)
            continue
        if name == "seqs" and isinstance(value, os.PathLike):
            value = os.fspath(value)
        if name not in _OPTION_NAMES:
            near = difflib.get_close_matches(name, _OPTION_NAMES, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise TypeError(f"simulate() got an unexpected keyword argument {name!r}{hint}")
        setattr(request, name, value)
    return request


def simulate(chip: Union[Chip, Mapping, PathLike], model: Union[Model, Mapping, PathLike], *,
             progress: Optional[Callable[[str, int, int], None]] = None, **options: Any) -> Result:
    _check_progress(progress, "progress(stage, done, total)")
    return simulate_request(load_chip(chip), load_model(model), _request(**options), progress)


def chrome_trace(chip: Union[Chip, Mapping, PathLike], model: Union[Model, Mapping, PathLike], *,
                 trace_layers: Optional[Tuple[int, int]] = None, **options: Any) -> str:
    """`g5sim run --trace`: the Chrome trace-event JSON (Perfetto) of simulate()'s run with these
    keywords, every command simulated; only decoder layers first..last (inclusive) when
    `trace_layers` is given (--trace-layers)."""
    return chrome_trace_request(load_chip(chip), load_model(model), _request(**options), trace_layers)


def simulate_matmul(chip: Union[Chip, Mapping, PathLike], m: int, n: int, k: int, dtype: str = "bf16",
                    cores: int = 0) -> OpResult:
    """`g5sim op matmul`: [m, k] x [k, n] alone on `cores` cores of the chip (0: all of them)."""
    return _simulate_matmul(load_chip(chip), m, n, k, dtype, cores)


def simulate_attention(chip: Union[Chip, Mapping, PathLike], **shape: Any) -> OpResult:
    """`g5sim op fa2`: flash attention alone; keywords kv_len, heads, qk_dim, v_dim (required),
    batch, q_len, kv_heads, shared_kv, causal, cores (decode when q_len < kv_len)."""
    return _simulate_attention(load_chip(chip), **shape)


def simulate_collective(chip: Union[Chip, Mapping, PathLike], kind: str, *, bytes: int, chips: int) -> OpResult:
    """`g5sim op all_reduce | all_to_all`: a ring all-reduce of `bytes` per chip, or an all-to-all
    in which each chip sends `bytes`, among `chips` chips (with the chip's `nodes`, peers in other
    nodes through its network interface)."""
    return _simulate_collective(load_chip(chip), kind, bytes=bytes, chips=chips)


def _option_line(option: Dict[str, Any]) -> str:
    words = f" ({', '.join(option['choices'])})" if option["choices"] else ""
    default = "" if option["type"] == "flag" else f"; default: {option['default_doc']}"
    return f"    {option['name']:<16} {option['doc']}{words}{default}"


simulate.__signature__ = inspect.Signature(
    [inspect.Parameter("chip", inspect.Parameter.POSITIONAL_OR_KEYWORD),
     inspect.Parameter("model", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    + [inspect.Parameter(o["name"], inspect.Parameter.KEYWORD_ONLY, default=o["default"]) for o in _OPTIONS]
    + [inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=None)],
    return_annotation=Result)
simulate.__doc__ = "\n".join(
    ["Simulates one chip's share of a step, with `g5sim run`'s defaults and checks.", "",
     "Keywords (the command line's flags, from the run-option table; None: not given):"]
    + [_option_line(o) for o in _OPTIONS]
    + ["", "progress(stage, done, total), when given, is told how far the run is: stage 'lowering' (ops) or",
       "'simulating' (commands of the simulated program), every few milliseconds; an exception it raises",
       "stops the run and is raised again.",
       "", "`chip` and `model` may be loaded objects, dicts or paths. Raises ConfigError on bad input."])


def _simulate_defaults() -> Dict[str, Any]:
    """simulate()'s keywords and their defaults."""
    return {o["name"]: o["default"] for o in _OPTIONS}


def _to_dict(self: Result) -> Dict[str, Any]:
    """`g5sim run --json` as a dict: the CLI's JSON schema, the same values."""
    return json.loads(self.json())


def _to_dataframe(self: Result):
    """One row per op (Op.to_dict's columns), in emission order. Needs pandas (python3-pandas)."""
    try:
        import pandas
    except ImportError as error:
        raise ImportError("Result.to_dataframe needs pandas (Debian: apt-get install python3-pandas)") from error
    frame = pandas.DataFrame.from_records([op.to_dict() for op in self.ops], columns=_reports.columns("ops"))
    # Layers outside the decoder (embedding, lm_head) are None: keep the column integral.
    frame["layer"] = frame["layer"].astype("Int64")
    return frame


def _per_layer(self: Result):
    """Where the time goes by layer: one row per decoder layer (its span from its first op's start to
    its last op's end, its ops' busy time, bytes and FLOPs), the ops outside the layers (layer None:
    embedding, lm_head) last. A pandas DataFrame (python3-pandas)."""
    try:
        import pandas
    except ImportError as error:
        raise ImportError("Result.per_layer needs pandas (Debian: apt-get install python3-pandas)") from error
    frame = pandas.DataFrame.from_records(self.per_layer_records(), columns=_reports.columns("layers"))
    frame["layer"] = frame["layer"].astype("Int64")
    return frame


def diff(a: Union[Result, PathLike], b: Union[Result, PathLike], *, top: int = 10) -> Dict[str, Any]:
    """`g5sim diff A.json B.json --json -` as a dict: the totals, per kind, per layer and the `top` ops
    that moved most between two runs (Results, or paths of `g5sim run --json` files)."""
    from ._g5sim import diff_json

    def text(run, label):
        if isinstance(run, Result):
            return run.json(), label
        if isinstance(run, (str, os.PathLike)):
            with open(run) as f:
                return f.read(), os.fspath(run)
        raise TypeError(f"diff: expected a Result or a path, got {type(run).__name__}")
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise _argument_error("top", f"expected a whole number >= 0, got {top!r}")
    (ta, na), (tb, nb) = text(a, "A"), text(b, "B")
    return json.loads(diff_json(ta, na, tb, nb, top))


Result.to_dict = _to_dict
Result.to_dataframe = _to_dataframe
Result.per_layer = _per_layer


def _ops_named(self: Result, name: str) -> List[Op]:
    """Every op named `name`, one per layer that has it, in emission order."""
    return [op for op in self.ops if op.name == name]


Result.ops_named = _ops_named
