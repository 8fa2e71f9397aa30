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

Bad input raises g5sim.ConfigError (a ValueError) naming the source and the field; anything else
raised from the C++ core is a RuntimeError (a bug: please report it). simulate() releases the GIL.
"""

import inspect
import json
import math
import numbers
import os
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Union

from ._errors import ConfigError
from ._g5sim import Chip, Kind, Model, ModelSchema, Op, Request, Result
from ._g5sim import data_dir, shipped_chip_path, shipped_model_path, simulate_request
from ._g5sim import version as _version
from .grid import sweep
from .plot import plot_compare, plot_sweep, plot_timeline

__version__ = _version()

__all__ = [
    "Chip", "ConfigError", "Kind", "Model", "Op", "Result", "__version__", "data_dir", "load_chip",
    "load_model", "plot_compare", "plot_sweep", "plot_timeline", "shipped_chip_path", "shipped_model_path", "simulate", "sweep",
]

PathLike = Union[str, "os.PathLike[str]"]

# The argument ranges of simulate(), the command line's (README, "Input limits").
_COUNT_RANGES = {
    "batch": (1, 1 << 20),
    "ctx": (1, 1 << 24),
    "q_len": (1, 1 << 24),
    "layers": (1, 1024),
    "micro_batches": (1, 64),
    "cores": (1, 4096),
    "tp": (1, 65536),
    "ep": (1, 65536),
    "dp": (1, 65536),
    "max_commands": (1, 1 << 40),
    "weight_group": (0, 1 << 20),
}


def _argument_error(name: str, message: str) -> ConfigError:
    return ConfigError(f"{name}: {message}", field=name)


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
    """A chip from a dict (validated exactly like a file) or a YAML file path.

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
        return Chip.from_file(os.fspath(config))
    raise TypeError(f"load_chip: expected a dict or a path, got {type(config).__name__}")


def load_model(config: Union[Model, Mapping, PathLike], source: Optional[str] = None, *,
               schema: str = "g5sim") -> Model:
    """A model from a dict or a file path (.json: a Hugging Face config.json; else strict YAML).

    A dict is read with g5sim's strict schema (every key known, `name` required), or with
    schema="hugging_face" as a config.json (other keys ignored, named by `source`). A missing
    kv_lora_rank or qk_rope_head_dim raises ConfigError naming the field and the source.
    """
    if isinstance(config, Model):
        return config
    if isinstance(config, Mapping):
        name = source or "<model dict>"
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
        return Model.from_file(os.fspath(config))
    raise TypeError(f"load_model: expected a dict or a path, got {type(config).__name__}")


def _count(name: str, value: Any) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _argument_error(name, f"expected a whole number, got {value!r}")
    low, high = _COUNT_RANGES[name]
    if not low <= int(value) <= high:
        raise _argument_error(name, f"{value} is outside {low}..{high}")
    return int(value)


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _argument_error(name, f"expected a string, got {value!r}")
    return value


def simulate(chip: Union[Chip, Mapping, PathLike], model: Union[Model, Mapping, PathLike], *,
             phase: str = "decode", batch: Optional[int] = None, ctx: int = 4096, q_len: Optional[int] = None,
             kv_dtype: str = "bf16", mla_mode: str = "absorb", prefill_mla_mode: str = "expanded",
             weight_dtype: Optional[str] = None, weight_group: Optional[int] = None,
             kv_read_engine: Optional[str] = None, attn_split: str = "seq", scope: str = "step",
             layers: Optional[int] = None, micro_batches: int = 1, cores: Optional[int] = None,
             tp: Optional[int] = None,
             ep: Optional[int] = None,
             dp: Optional[int] = None, expert_load: Optional[PathLike] = None, strict_capacity: bool = False,
             max_commands: int = 1 << 27, prefetch: bool = True, replay: bool = True) -> Result:
    """Simulates one chip's share of a step, with `g5sim run`'s defaults and checks.

    phase            "decode" (q_len < ctx: the history comes from the KV cache) or "prefill"
    batch            sequences over all chips; None: one per data-parallel rank
    ctx              kv_len, the tokens each sequence attends
    q_len            new tokens per sequence; None: 1 in decode, ctx in prefill
    kv_dtype         "bf16", "fp8" or "fp8-flashmla"
    mla_mode         decode compute and cache: "absorb", "standard" or "expanded"
    prefill_mla_mode prefill compute (default "expanded": MHA after up-projection)
    weight_dtype     projections' weights: "bf16", "fp16", "fp8", "int8", "int4"; None: the
                     model config's quantization, else bf16
    weight_group     int8/int4: k elements per scale (0: one per column); None: the model
                     config's, else 128 (Sophgo's LLM demos use 64)
    kv_read_engine   the engine of the decode history read; None: the chip's first kv_stream
                     engine (SG2262: "gdma", which overlaps fa2; "sdma" loads it first)
    attn_split       decode attention over cores: "seq" (flash decoding) or "head"
    scope            "step" (the whole decoder) or "block" (one attention block)
    layers           step: only the first N decoder layers
    micro_batches    step: the chip's sequences in N groups; one group's attention overlaps
                     another's MoE all-to-alls (DeepSeek's two-micro-batch overlap)
    cores            run on the chip's first N cores; None: all
    tp, ep, dp       sharding; all None: the smallest that fits the chip's DDR
    expert_load      step: a measured routing CSV (layer,expert,tokens)
    strict_capacity  a step that does not fit DDR raises instead of warning (Result.warnings)
    max_commands     refuse runs estimated to need more commands
    prefetch         cross-op weight prefetch (the CLI's --no-prefetch turns it off)
    replay           exact replay of identical layers (the CLI's --no-replay turns it off:
                     every command simulated, the same results, slower)

    `chip` and `model` may be loaded objects, dicts or paths. Raises ConfigError on bad input.
    """
    keywords = dict(locals())
    del keywords["chip"], keywords["model"]
    return simulate_request(load_chip(chip), load_model(model), _request(**keywords))


def _simulate_defaults() -> Dict[str, Any]:
    """simulate()'s keywords and their defaults."""
    return {name: p.default for name, p in inspect.signature(simulate).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def _request(*, phase, batch, ctx, q_len, kv_dtype, mla_mode, prefill_mla_mode, weight_dtype, weight_group,
             kv_read_engine, attn_split, scope, layers, micro_batches, cores, tp, ep, dp, expert_load,
             strict_capacity, max_commands, prefetch, replay) -> Request:
    """simulate()'s keywords (every one given) as a checked Request."""
    request = Request()
    request.phase = _text("phase", phase)
    request.batch = _count("batch", batch)
    if ctx is None:
        raise _argument_error("ctx", "a context length is required")
    request.ctx = _count("ctx", ctx)
    request.q_len = _count("q_len", q_len)
    request.kv_dtype = _text("kv_dtype", kv_dtype)
    request.mla_mode = _text("mla_mode", mla_mode)
    request.prefill_mla_mode = _text("prefill_mla_mode", prefill_mla_mode)
    request.weight_dtype = "" if weight_dtype is None else _text("weight_dtype", weight_dtype)
    request.weight_group = _count("weight_group", weight_group)
    request.kv_read_engine = "" if kv_read_engine is None else _text("kv_read_engine", kv_read_engine)
    request.attn_split = _text("attn_split", attn_split)
    request.scope = _text("scope", scope)
    request.layers = _count("layers", layers)
    request.micro_batches = _count("micro_batches", micro_batches)
    request.cores = 0 if cores is None else _count("cores", cores)
    request.tp = _count("tp", tp)
    request.ep = _count("ep", ep)
    request.dp = _count("dp", dp)
    if expert_load is not None:
        if not isinstance(expert_load, (str, os.PathLike)):
            raise _argument_error("expert_load", f"expected a path, got {expert_load!r}")
        request.expert_load = os.fspath(expert_load)
    if not isinstance(strict_capacity, bool):
        raise _argument_error("strict_capacity", f"expected True or False, got {strict_capacity!r}")
    request.strict_capacity = strict_capacity
    request.max_commands = _count("max_commands", max_commands)
    if not isinstance(prefetch, bool):
        raise _argument_error("prefetch", f"expected True or False, got {prefetch!r}")
    request.prefetch_weights = prefetch
    if not isinstance(replay, bool):
        raise _argument_error("replay", f"expected True or False, got {replay!r}")
    request.replay = replay
    return request


def _to_dict(self: Result) -> Dict[str, Any]:
    """`g5sim run --json` as a dict: the CLI's JSON schema, the same values."""
    return json.loads(self.json())


def _to_dataframe(self: Result):
    """One row per op (Op.to_dict's columns), in emission order. Needs pandas (python3-pandas)."""
    try:
        import pandas
    except ImportError as error:
        raise ImportError("Result.to_dataframe needs pandas (Debian: apt-get install python3-pandas)") from error
    columns = ["id", "name", "layer", "kind", "shape", "engines", "op_start_ns", "op_end_ns", "op_start_ps",
               "op_end_ps", "hbm_bytes", "unique_bytes", "c2c_bytes", "flops", "kv_bytes", "peak_lmem_bytes",
               "roofline_ns", "regime", "bound_by", "bound_share", "idle_gap_ns", "idle_gap_ps"]
    frame = pandas.DataFrame.from_records([op.to_dict() for op in self.ops], columns=columns)
    # Layers outside the decoder (embedding, lm_head) are None: keep the column integral.
    frame["layer"] = frame["layer"].astype("Int64")
    return frame


Result.to_dict = _to_dict
Result.to_dataframe = _to_dataframe


def _ops_named(self: Result, name: str) -> List[Op]:
    """Every op named `name`, one per layer that has it, in emission order."""
    return [op for op in self.ops if op.name == name]


Result.ops_named = _ops_named
