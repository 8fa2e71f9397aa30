"""g5sim.sweep: a grid in Python, the same rows as `g5sim sweep --json`, locally or on a client."""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import g5sim
import pytest


class PoolClient:
    """A stand-in for dask.distributed.Client: map() returns futures, gather() their results."""

    def __init__(self):
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.mapped = 0

    def map(self, fn, *iterables, pure=True):
        futures = [self.pool.submit(fn, *args) for args in zip(*iterables)]
        self.mapped += len(futures)
        return futures

    def gather(self, futures):
        return [f.result() for f in futures]


GRID = {"phase": ["decode"], "batch": [1, 4], "ctx": [1024, 8192, 65536]}
OPTIONS = {"scope": "block", "dp": 1}


def test_points_nest_like_the_command_line():
    points = g5sim.grid.grid_points({"chip": ["a", "b"], "batch": [8, 64], "ctx": [1, 2, 3]})
    # chip outermost, then batch, the context fastest: 2 x 2 x 3 = 12 points.
    assert len(points) == 12
    assert points[0] == {"chip": "a", "batch": 8, "ctx": 1} and points[3] == {"chip": "a", "batch": 64, "ctx": 1}
    assert points[6] == {"chip": "b", "batch": 8, "ctx": 1}
    with pytest.raises(ValueError, match="unknown grid axes"):
        g5sim.sweep({"ctx": [1024], "bacth": [1]})
    with pytest.raises(ValueError, match="needs a 'ctx' list"):
        g5sim.sweep({"batch": [1]})


def test_rows_equal_the_command_line_json_lines():
    rows = g5sim.sweep(GRID, **OPTIONS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-m", "g5sim", "sweep", "--scope", "block", "--dp", "1", "--batch", "1,4",
                           "--ctx", "1024,8192,65536", "--csv", "none", "--json", "-"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == len(lines) == 6
    for row, line in zip(rows, lines):
        # Every key of the CLI's line, with the same value (the rows add exact picoseconds).
        assert {k: row[k] for k in line} == line


def test_a_client_gives_the_local_rows():
    local = g5sim.sweep(GRID, **OPTIONS)
    client = PoolClient()
    remote = g5sim.sweep(GRID, client=client, **OPTIONS)
    assert client.mapped == 6
    assert remote == local
    assert [r["point"] for r in remote] == list(range(6))


def test_a_dask_local_cluster_gives_the_local_rows(monkeypatch):
    # Two worker processes (Debian's python3-distributed, which tools/bootstrap.sh installs: no skip):
    # each imports g5sim afresh, so points and rows cross a process boundary as plain values. The
    # worker processes inherit PYTHONPATH.
    import distributed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
    grid = {"chip": [g5sim.shipped_chip_path()], "batch": [1, 4], "ctx": [1024, 8192, 65536]}
    local = g5sim.sweep(grid, **OPTIONS)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        remote = g5sim.sweep(grid, client=client, **OPTIONS)
        workers = client.run(lambda: os.getpid())
    assert len(workers) == 2 and os.getpid() not in workers.values()
    assert remote == local
    assert [r["point"] for r in remote] == list(range(6))


def test_a_keyword_no_point_feels_is_refused_before_anything_runs():
    # prefill_mla_mode on decode points only: the command line's rule (tools/option_scope.hpp).
    with pytest.raises(g5sim.ConfigError, match="changes no point of the grid: it sets MLA prefill compute") as e:
        g5sim.sweep({"phase": ["decode"], "ctx": [1024]}, prefill_mla_mode="absorb", **OPTIONS)
    assert e.value.field == "prefill_mla_mode"
    # Felt by the prefill point of a mixed grid: both points run.
    rows = g5sim.sweep({"phase": ["decode", "prefill"], "ctx": [1024]}, prefill_mla_mode="absorb", **OPTIONS)
    assert [r["prefill_mla_mode"] for r in rows] == ["absorb", "absorb"]
    # replay=True is the default, not a request; replay=False on blocks changes nothing.
    assert len(g5sim.sweep({"ctx": [1024]}, replay=True, **OPTIONS)) == 1
    with pytest.raises(g5sim.ConfigError, match="no layers to replay"):
        g5sim.sweep({"ctx": [1024]}, replay=False, **OPTIONS)


def test_a_grid_past_the_command_lines_limit_is_refused_at_once():
    # 10^5 x 10^5 x 10^2 contexts... = 10^10 points: refused before anything is built or run.
    import time
    started = time.monotonic()
    with pytest.raises(g5sim.ConfigError, match="more than 4294967296"):
        g5sim.sweep({"batch": list(range(1, 100001)), "q_len": list(range(1, 100001)), "ctx": list(range(1, 4097))})
    assert time.monotonic() - started < 5
    with pytest.raises(g5sim.ConfigError, match="^ctx: a grid axis is a list"):
        g5sim.sweep({"ctx": 4096})


@pytest.mark.parametrize("jobs, message", [(0, "0 is outside 1..1024"), (-1, "-1 is outside 1..1024"),
                                           ("2", "expected a whole number 1..1024, got str"),
                                           (True, "expected a whole number 1..1024, got bool")])
def test_jobs_and_client_are_checked(jobs, message):
    with pytest.raises(g5sim.ConfigError, match=f"^jobs: {message}"):
        g5sim.sweep(GRID, jobs=jobs, **OPTIONS)
    with pytest.raises(g5sim.ConfigError, match="^client: expected a dask.distributed.Client"):
        g5sim.sweep(GRID, client="x", **OPTIONS)


def test_rows_stream_in_order_with_progress_and_configs_loaded_once(monkeypatch):
    loads = []
    real = g5sim.load_chip
    def counting(config, *args, **keywords):
        if not isinstance(config, g5sim.Chip):           # a loaded Chip passes through as it is
            loads.append(config)
        return real(config, *args, **keywords)
    monkeypatch.setattr(g5sim, "load_chip", counting)
    seen = []
    grid = {"chip": [g5sim.shipped_chip_path()], "batch": [1, 4], "ctx": [1024, 8192, 65536]}
    rows = g5sim.sweep_rows(grid, jobs=1, progress=lambda done, total: seen.append((done, total)), **OPTIONS)
    first = next(rows)                                   # a generator: points run as rows are taken
    assert first["point"] == 0 and first["batch"] == 1 and first["ctx"] == 1024
    rest = list(rows)
    assert [r["point"] for r in rest] == [1, 2, 3, 4, 5]
    assert seen[-1] == (6, 6) and all(total == 6 for _, total in seen)
    assert loads == [g5sim.shipped_chip_path()]          # one chip, loaded once for six points
    assert [first] + rest == g5sim.sweep(grid, **OPTIONS)


def test_every_points_deployment_is_checked_before_the_first_runs():
    # Point 2 is dp 8 with ep 16: 16 expert ranks over 8 chips. It fails before point 0 runs (as
    # `g5sim sweep` does), naming the point.
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.sweep_rows({"dp": [8, 16], "ep": [8, 16], "ctx": [4096]}, tp=1, batch=64)
    assert str(error.value) == ("sweep point 2: ep: expert-parallel degree ep = 16 does not divide the chips (tp x dp) "
                                "(8) (checked before any point ran)")
    assert error.value.field == "ep"
