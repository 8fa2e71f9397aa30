"""Grid sweeps from Python: every combination of the grid's lists, simulated on local threads or on
the workers of a dask.distributed.Client (Debian: python3-distributed), rows in point order.

    rows = g5sim.sweep({"chip": ["sg2262.yaml", "h100.yaml"], "batch": [8, 64],
                        "ctx": [1024, 4096, 16384]}, scope="block")
    rows = g5sim.sweep(grid, client=dask.distributed.Client(...))   # the same rows
    for row in g5sim.sweep_rows(grid, scope="block"): ...          # streamed, one point at a time

Axes (lists; a missing axis takes simulate()'s default): chip, model (names, paths, or dicts with
the load_* rules), phase, q_len, mix, kv_dtype, mla_mode, weight_dtype, cores, tp, ep, dp, batch,
ctx (required unless a mix axis or a seqs keyword gives the sequences), nested in that order with
the context fastest, numbered from 0, as `g5sim sweep` numbers its points. Every other
keyword goes to every simulate(). A row holds `g5sim sweep --json`'s keys for its point, with
times as exact integer picoseconds beside nanoseconds.
"""

from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence

from ._g5sim import grid_nesting as _grid_nesting
from ._g5sim import run_limits as _run_limits
from ._g5sim import run_options as _run_options

# The grid's nesting order: `g5sim sweep`'s own (explore/grid_sweep.hpp), chips and models outside,
# the context inside.
_AXES = ("chip", "model", *_grid_nesting(), "ctx")
# The options some workloads do not feel (the table's scope rules), with the value that means "not
# given": a switch's default, else None.
_SCOPED = {o["name"]: (o["default"] if o["type"] == "flag" else None) for o in _run_options() if o["scoped"]}


def _axes(grid: Mapping[str, Sequence[Any]], sequences_given: bool = False) -> List[tuple]:
    """The grid's axes in nesting order as (name, values), checked: known names, lists, a ctx list."""
    from . import _argument_error
    if not isinstance(grid, Mapping):
        raise _argument_error("grid", f"expected a dict of axis lists, got {type(grid).__name__}")
    unknown = set(grid) - set(_AXES)
    if unknown:
        raise ValueError(f"sweep: unknown grid axes {sorted(unknown)} (axes: {', '.join(_AXES)})")
    if "ctx" not in grid and "mix" not in grid and not sequences_given:
        raise ValueError("sweep: the grid needs a 'ctx' list (or a 'mix' list, or seqs=: the step's sequences)")
    axes = []
    for axis in _AXES:
        if axis not in grid:
            continue
        values = grid[axis]
        if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
            raise _argument_error(axis, f"a grid axis is a list of values, got {type(values).__name__}")
        if not values:
            raise ValueError(f"sweep: grid axis '{axis}' is empty")
        axes.append((axis, list(values)))
    limits = _run_limits()
    if len(grid.get("ctx", ())) > limits["max_context_list"]:
        raise _argument_error("ctx", f"more than {limits['max_context_list']} contexts")
    return axes


def grid_size(grid: Mapping[str, Sequence[Any]], sequences_given: bool = False) -> int:
    """The number of points (the product of the axes' lengths), refused past the command line's limit."""
    from . import _argument_error
    size = 1
    for _, values in _axes(grid, sequences_given):
        size *= len(values)
    limit = _run_limits()["max_grid_points"]
    if size > limit:
        raise _argument_error("grid", f"the grid has {size} points, more than {limit} (the product of its lists' "
                                      "lengths; g5sim sweep --shard splits a larger study)")
    return size


def grid_point(axes: List[tuple], index: int) -> Dict[str, Any]:
    """Point `index` of the grid, from its number alone (mixed radix, the context fastest)."""
    point: Dict[str, Any] = {}
    for axis, values in reversed(axes):
        index, digit = divmod(index, len(values))
        point[axis] = values[digit]
    return {axis: point[axis] for axis, _ in axes}


def grid_points(grid: Mapping[str, Sequence[Any]]) -> List[Dict[str, Any]]:
    """The points of `grid` in order: dicts of the axes that are given (for small grids: a list)."""
    axes = _axes(grid)
    return [grid_point(axes, i) for i in range(grid_size(grid))]


def _row(r: Any) -> Dict[str, Any]:
    read_bytes = read_ps = fa2_ps = 0
    for op in r.ops:
        if op.kind == "kv_cache_read":
            read_bytes += op.hbm_bytes
            read_ps += op.op_end_ps - op.op_start_ps
        elif op.kind == "fa2":
            fa2_ps += op.op_end_ps - op.op_start_ps
    return {**r.identity(), "total_ns": r.total_ps / 1000, "total_ps": r.total_ps,
            "band_low_ns": r.band_low_ns, "band_high_ns": r.band_high_ns,
            "tokens_per_s": round(r.tokens_per_s, 3), "tokens_per_s_per_chip": round(r.tokens_per_s_per_chip, 3),
            "kv_cache_read_bytes": read_bytes,
            "kv_cache_read_ns": read_ps / 1000, "kv_cache_read_ps": read_ps, "fa2_ns": fa2_ps / 1000,
            "fa2_ps": fa2_ps, "regime": r.regime, "bound_by": r.bound_by,
            "fits": r.weight_bytes + r.kv_cache_bytes <= r.capacity_bytes,
            "bytes_per_chip": r.weight_bytes + r.kv_cache_bytes}


def run_point(point: Mapping[str, Any], options: Mapping[str, Any]) -> Dict[str, Any]:
    """One point's row (what a worker runs: only plain values cross to it; it loads the configs)."""
    from . import load_chip, load_model, shipped_chip_path, shipped_model_path, simulate
    chip = load_chip(point.get("chip", shipped_chip_path()))
    model = load_model(point.get("model", shipped_model_path()))
    keywords = dict(options)
    keywords.update({k: v for k, v in point.items() if k not in ("chip", "model")})
    return _row(simulate(chip, model, **keywords))


def refuse_options_without_effect(grid: Mapping[str, Sequence[Any]], options: Mapping[str, Any],
                                  models: Optional[Dict[int, Any]] = None) -> None:
    """Raises ConfigError for a keyword (or an mla_mode axis) that no point of the grid feels, as
    `g5sim sweep` refuses such a flag: --prefill-mla-mode on decode points only, say. The rules
    never look at the batch or the context, so one of each stands for all (a large grid is
    checked at once)."""
    from . import _argument_error, _request, _simulate_defaults, load_model, shipped_model_path
    from ._g5sim import why_option_does_not_apply
    given = [f for f, unset in _SCOPED.items()
             if (f in options and options[f] is not unset and options[f] is not None) or (f in grid and f != "replay")]
    if not given:
        return
    rules_grid = {k: (list(v)[:1] if k in ("batch", "ctx") else v) for k, v in grid.items()}
    points = grid_points(rules_grid)
    if models is None:
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


def _check_jobs(jobs: Optional[int]) -> int:
    import os
    from . import _argument_error
    if jobs is None:
        return os.cpu_count() or 1
    limit = _run_limits()["max_jobs"]
    if isinstance(jobs, bool) or not isinstance(jobs, int) and not hasattr(jobs, "__index__"):
        raise _argument_error("jobs", f"expected a whole number 1..{limit}, got {type(jobs).__name__}")
    jobs = int(jobs)
    if not 1 <= jobs <= limit:
        raise _argument_error("jobs", f"{jobs} is outside 1..{limit}")
    return jobs


def _check_runner(client: Optional[Any], jobs: Optional[int], progress: Optional[Any]) -> int:
    """Where a grid's points run and who hears of them, checked: a Dask client (its map and gather)
    or local threads (jobs, defaulting to the machine's cores), a callable progress(done, total).
    Returns the threads."""
    from . import _argument_error, _check_progress
    jobs = _check_jobs(jobs)
    if client is not None and not (callable(getattr(client, "map", None)) and callable(getattr(client, "gather", None))):
        raise _argument_error("client", f"expected a dask.distributed.Client (map and gather), got "
                                        f"{type(client).__name__}")
    _check_progress(progress)
    return jobs


def sweep_rows(grid: Mapping[str, Sequence[Any]], *, client: Optional[Any] = None, jobs: Optional[int] = None,
               progress: Optional[Callable[[int, int], None]] = None, **options: Any) -> Iterator[Dict[str, Any]]:
    """The rows of sweep() one at a time, in point order, as they are done (a generator): memory
    stays that of a few points however large the grid. The checks run before the first row."""
    from . import _argument_error, load_chip, load_model, shipped_chip_path, shipped_model_path, simulate
    sequences_given = options.get("seqs") is not None
    total = grid_size(grid, sequences_given)
    axes = _axes(grid, sequences_given)
    jobs = _check_runner(client, jobs, progress)
    # Each distinct chip and model loaded once (for local threads; a client's workers load their own).
    chips = {id(c): load_chip(c) for c in grid.get("chip", [])}
    models = {id(m): load_model(m) for m in grid.get("model", [])}
    refuse_options_without_effect(grid, options, models)
    _check_every_point(axes, total, chips, models, options)
    return _rows(axes, total, client, jobs, progress, chips, models, options)


def _check_every_point(axes, total, chips, models, options) -> None:
    """Every point's deployment before the first runs, as `g5sim sweep` checks it: a combination
    of values that cannot run (ep 16 over 8 chips) fails at once, naming the point, not after the
    points before it. No simulation: microseconds a point."""
    from . import ConfigError, _request, load_chip, load_model, shipped_chip_path, shipped_model_path
    from ._g5sim import check_deployment_request
    default_chip = None if chips else load_chip(shipped_chip_path())
    default_model = None if models else load_model(shipped_model_path())
    for i in range(total):
        point = grid_point(axes, i)
        chip = chips[id(point["chip"])] if "chip" in point else default_chip
        model = models[id(point["model"])] if "model" in point else default_model
        keywords = dict(options)
        keywords.update({k: v for k, v in point.items() if k not in ("chip", "model")})
        try:
            check_deployment_request(chip, model, _request(**keywords))
        except ConfigError as error:
            raise ConfigError(f"sweep point {i}: {error} (checked before any point ran)", source=error.source,
                              field=error.field, line=error.line, column=error.column) from None


def _rows(axes, total, client, jobs, progress, chips, models, options) -> Iterator[Dict[str, Any]]:
    from . import load_chip, load_model, shipped_chip_path, shipped_model_path, simulate
    default_chip = None if chips else load_chip(shipped_chip_path())
    default_model = None if models else load_model(shipped_model_path())

    def local(point: Dict[str, Any]) -> Dict[str, Any]:
        chip = chips[id(point["chip"])] if "chip" in point else default_chip
        model = models[id(point["model"])] if "model" in point else default_model
        keywords = dict(options)
        keywords.update({k: v for k, v in point.items() if k not in ("chip", "model")})
        return _row(simulate(chip, model, **keywords))

    # Points go out a chunk at a time (a few per worker), rows come back in point order.
    chunk = max(1, jobs) * 4
    done = 0
    pool = None
    if client is None:
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        for first in range(0, total, chunk):
            points = [grid_point(axes, i) for i in range(first, min(total, first + chunk))]
            if pool is not None:
                rows = list(pool.map(local, points))
            else:
                rows = client.gather(client.map(run_point, points, [options] * len(points), pure=False))
            for i, row in enumerate(rows):
                yield dict({"point": first + i}, **row)
            done += len(points)
            if progress is not None:
                progress(done, total)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def sweep(grid: Mapping[str, Sequence[Any]], *, client: Optional[Any] = None, jobs: Optional[int] = None,
          progress: Optional[Callable[[int, int], None]] = None, **options: Any) -> List[Dict[str, Any]]:
    """Simulates every point of `grid` (see the module's doc) and returns their rows in point order.

    client: None runs on `jobs` local threads (default: the machine's cores; 1..the command line's
    limit; simulate releases the GIL), each distinct chip and model loaded once; a
    dask.distributed.Client (or anything with its map(fn, *iterables) and gather(futures)) runs the
    points on its workers. The rows are the same either way. progress(done, total) is called
    after each chunk of points. A grid past the command line's 2^32 points is refused at once;
    sweep_rows() yields the rows one at a time instead of holding them.

    A keyword (or mla_mode axis) that no point feels is a ConfigError before anything runs, as
    `g5sim sweep` refuses such a flag (the run-option table's rules): prefill_mla_mode with decode
    points only, kv_read_engine or attn_split with prefill only, mla_mode on GQA models,
    weight_group without int8/int4 weights, replay=False with scope="block".
    """
    return list(sweep_rows(grid, client=client, jobs=jobs, progress=progress, **options))
