"""Grid sweeps from Python: every combination of the grid's lists, simulated on local threads or on
the workers of a dask.distributed.Client (Debian: python3-distributed), rows in point order.

    rows = g5sim.sweep({"chip": ["sg2262.yaml", "h100.yaml"], "batch": [8, 64],
                        "ctx": [1024, 4096, 16384]}, scope="block")
    rows = g5sim.sweep(grid, client=dask.distributed.Client(...))   # the same rows

Axes (lists; a missing axis takes simulate()'s default): chip, model (names, paths, or dicts with
the load_* rules), phase, q_len, kv_dtype, mla_mode, weight_dtype, cores, tp, ep, dp, batch, ctx
(required), nested in that order with the context fastest, numbered from 0, as `g5sim sweep`
numbers its points. Every other
keyword goes to every simulate(). A row holds `g5sim sweep --json`'s keys for its point, with
times as exact integer picoseconds beside nanoseconds.
"""

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ._g5sim import grid_nesting as _grid_nesting
from ._g5sim import run_options as _run_options

# The grid's nesting order: `g5sim sweep`'s own (tools/grid_sweep.hpp), chips and models outside,
# the context inside.
_AXES = ("chip", "model", *_grid_nesting(), "ctx")
# The options some workloads do not feel (the table's scope rules), with the value that means "not
# given": a switch's default, else None.
_SCOPED = {o["name"]: (o["default"] if o["type"] == "flag" else None) for o in _run_options() if o["scoped"]}


def grid_points(grid: Mapping[str, Sequence[Any]]) -> List[Dict[str, Any]]:
    """The points of `grid` in order: dicts of the axes that are given."""
    unknown = set(grid) - set(_AXES)
    if unknown:
        raise ValueError(f"sweep: unknown grid axes {sorted(unknown)} (axes: {', '.join(_AXES)})")
    if "ctx" not in grid:
        raise ValueError("sweep: the grid needs a 'ctx' list")
    points: List[Dict[str, Any]] = [{}]
    for axis in _AXES:
        if axis not in grid:
            continue
        values = list(grid[axis])
        if not values:
            raise ValueError(f"sweep: grid axis '{axis}' is empty")
        points = [dict(p, **{axis: v}) for p in points for v in values]
    return points


def run_point(point: Mapping[str, Any], options: Mapping[str, Any]) -> Dict[str, Any]:
    """One point's row (what a worker runs: only plain values cross to it)."""
    from . import load_chip, load_model, shipped_chip_path, shipped_model_path, simulate
    chip = load_chip(point.get("chip", shipped_chip_path()))
    model = load_model(point.get("model", shipped_model_path()))
    keywords = dict(options)
    keywords.update({k: v for k, v in point.items() if k not in ("chip", "model")})
    r = simulate(chip, model, **keywords)
    read_bytes = read_ps = fa2_ps = 0
    for op in r.ops:
        if op.kind == "kv_cache_read":
            read_bytes += op.hbm_bytes
            read_ps += op.op_end_ps - op.op_start_ps
        elif op.kind == "fa2":
            fa2_ps += op.op_end_ps - op.op_start_ps
    return {**r.identity(), "total_ns": r.total_ps / 1000, "total_ps": r.total_ps,
            "tokens_per_s": round(r.tokens_per_s, 3), "tokens_per_s_per_chip": round(r.tokens_per_s_per_chip, 3),
            "kv_cache_read_bytes": read_bytes,
            "kv_cache_read_ns": read_ps / 1000, "kv_cache_read_ps": read_ps, "fa2_ns": fa2_ps / 1000,
            "fa2_ps": fa2_ps, "regime": r.regime, "bound_by": r.bound_by}


def refuse_options_without_effect(grid: Mapping[str, Sequence[Any]], points: List[Dict[str, Any]],
                                  options: Mapping[str, Any]) -> None:
    """Raises ConfigError for a keyword (or an mla_mode axis) that no point of the grid feels, as
    `g5sim sweep` refuses such a flag: --prefill-mla-mode on decode points only, say."""
    from . import _argument_error, _request, _simulate_defaults, load_model, shipped_model_path
    from ._g5sim import why_option_does_not_apply
    given = [f for f, unset in _SCOPED.items()
             if (f in options and options[f] is not unset and options[f] is not None) or (f in grid and f != "replay")]
    if not given:
        return
    models = {id(m): load_model(m) for m in grid.get("model", [])}
    default_model = None if "model" in grid else load_model(shipped_model_path())
    defaults = _simulate_defaults()
    for field in given:
        why = ""
        for point in points:
            model = models[id(point["model"])] if "model" in point else default_model
            keywords = dict(defaults)
            keywords.update(options)
            keywords.update({k: v for k, v in point.items() if k not in ("chip", "model")})
            reason = why_option_does_not_apply(field, model, _request(**keywords))
            if not reason:
                why = ""
                break
            why = why or reason
        if why:
            raise _argument_error(field, f"changes no point of the grid: {why}")


def sweep(grid: Mapping[str, Sequence[Any]], *, client: Optional[Any] = None, jobs: Optional[int] = None,
          **options: Any) -> List[Dict[str, Any]]:
    """Simulates every point of `grid` (see the module's doc) and returns their rows in point order.

    client: None runs on `jobs` local threads (default: the machine's cores; simulate releases the
    GIL); a dask.distributed.Client (or anything with its map(fn, *iterables) and gather(futures))
    runs the points on its workers. The rows are the same either way.

    A keyword (or mla_mode axis) that no point feels is a ConfigError before anything runs, as
    `g5sim sweep` refuses such a flag (the run-option table's rules): prefill_mla_mode with decode
    points only, kv_read_engine or attn_split with prefill only, mla_mode on GQA models,
    weight_group without int8/int4 weights, replay=False with scope="block".
    """
    points = grid_points(grid)
    refuse_options_without_effect(grid, points, options)
    if client is None:
        import os
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
            rows = list(pool.map(run_point, points, [options] * len(points)))
    else:
        futures = client.map(run_point, points, [options] * len(points), pure=False)
        rows = client.gather(futures)
    return [dict({"point": i}, **row) for i, row in enumerate(rows)]
