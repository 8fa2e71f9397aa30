"""g5sim.search(): the command line's bytes, the same on Dask, the fronts' rule, the plot."""
import json
import subprocess
import sys

import pytest

import g5sim

# Qwen2.5-1.5B (2 layers) on H100, shardings up to 2 chips, four batch caps: quick serves.
SMALL = dict(concurrency=16, num_requests=32, input_len=128, output_len=16, max_chips=2, max_seqs=[2, 4, 8, 16],
             slo_tpot_ms=2.0, layers=2)
FLAGS = ["--chip", "h100", "--model", "qwen2.5-1.5b", "--concurrency", "16", "--requests", "32", "--input-len",
         "128", "--output-len", "16", "--max-chips", "2", "--max-seqs", "2,4,8,16", "--slo-tpot-ms", "2.0",
         "--layers", "2"]


def g5sim_cli(*args):
    return subprocess.run([sys.executable, "-m", "g5sim", *args], capture_output=True, text=True)


def test_search_is_the_command_lines_and_the_same_on_dask(tmp_path):
    frame = g5sim.search("h100", "qwen2.5-1.5b", jobs=2, **SMALL)
    cli = g5sim_cli("search", *FLAGS, "--json", "-")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == frame.attrs["search"]
    csv = g5sim_cli("search", *FLAGS, "--csv", "-")
    assert csv.stdout.splitlines()[0].startswith("point,chip,tp,ep,dp,chips,max_seqs,")
    assert len(csv.stdout.splitlines()) == len(frame) + 1
    # Told after each point (total: the points of the passes so far), the same search.
    seen = []
    told = g5sim.search("h100", "qwen2.5-1.5b", jobs=2, progress=lambda done, total: seen.append((done, total)),
                        **SMALL)
    assert told.attrs["search"] == frame.attrs["search"]
    assert [done for done, _ in seen] == list(range(1, len(frame) + 1))
    assert seen[-1] == (len(frame), len(frame))
    assert all(done <= total for done, total in seen)
    distributed = pytest.importorskip("distributed")
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as client:
        on_dask = g5sim.search("h100", "qwen2.5-1.5b", client=client, **SMALL)
        on_dask_seen = []
        on_dask_told = g5sim.search("h100", "qwen2.5-1.5b", client=client,
                                    progress=lambda done, total: on_dask_seen.append((done, total)), **SMALL)
    assert on_dask.attrs["search"] == frame.attrs["search"]
    assert on_dask.attrs["table"] == frame.attrs["table"]
    assert on_dask_told.attrs["search"] == frame.attrs["search"]
    assert on_dask_seen == seen


def test_the_front_is_every_undominated_point_and_the_best_meets_the_slo():
    frame = g5sim.search("h100", "qwen2.5-1.5b", jobs=2, **SMALL)
    ok = frame[frame.status == "ok"]
    for _, q in ok.iterrows():
        dominators = ok[(ok.tokens_per_s_per_chip >= q.tokens_per_s_per_chip)
                        & (ok.tokens_per_s_per_user >= q.tokens_per_s_per_user)
                        & ((ok.tokens_per_s_per_chip > q.tokens_per_s_per_chip)
                           | (ok.tokens_per_s_per_user > q.tokens_per_s_per_user))]
        assert bool(q.on_front) == dominators.empty
        if not q.on_front:
            assert dominators.on_front.any()
    best = frame[frame.best]
    assert len(best) == 1
    assert best.tpot_p90_ms.iloc[0] <= 2.0
    # Served again by g5sim.serve() with the best point's knobs: the same TPOT.
    b = best.iloc[0]
    _, summary = g5sim.serve("h100", "qwen2.5-1.5b", concurrency=16, num_requests=32, input_len=128, output_len=16,
                             max_seqs=int(b.max_seqs), tp=int(b.tp), ep=int(b.ep), dp=int(b.dp), layers=2,
                             step_cache="bucket:10", slo_tpot_ms=2.0)
    assert summary["tpot_ms"]["p90"] == b.tpot_p90_ms


def test_search_plot_and_errors(tmp_path):
    frame = g5sim.search("h100", "qwen2.5-1.5b", jobs=2, **SMALL)
    g5sim.plot_search(frame, tmp_path / "fronts.png")
    assert (tmp_path / "fronts.png").stat().st_size > 10_000
    with pytest.raises(g5sim.ConfigError, match="max_seqs"):
        g5sim.search("h100", "qwen2.5-1.5b", **dict(SMALL, max_seqs="0"))
    with pytest.raises(g5sim.ConfigError, match="progress: expected a callable"):
        g5sim.search("h100", "qwen2.5-1.5b", progress=3, **SMALL)
    bad = g5sim_cli("search", *FLAGS, "--slo-stat", "p95")
    assert bad.returncode == 2
    assert bad.stderr == "g5sim: error: --slo-stat: expected p50, p90 or p99, got 'p95'\n"


def test_search_lists_run_options_as_dimensions():
    # micro_batches and the formats are run options a search varies: a list makes each a dimension
    # (2 weight formats x 1 sharding = 2 points), the same as the command line's --weight-dtype bf16,fp8.
    keywords = dict(concurrency=4, num_requests=8, input_len=128, output_len=16, tp=1, ep=1, dp=1, layers=2)
    frame = g5sim.search("h100", "qwen2.5-1.5b", weight_dtype=["bf16", "fp8"], micro_batches=1, **keywords)
    assert list(frame["weight_dtype"]) == ["bf16", "fp8"]
    assert list(frame["act_dtype"]) == ["auto", "auto"] and list(frame["micro_batches"]) == [1, 1]
    flags = ["--chip", "h100", "--model", "qwen2.5-1.5b", "--concurrency", "4", "--requests", "8", "--input-len",
             "128", "--output-len", "16", "--tp", "1", "--ep", "1", "--dp", "1", "--layers", "2", "--weight-dtype",
             "bf16,fp8", "--micro-batches", "1", "--csv", "-"]
    done = g5sim_cli("search", *flags)
    assert done.returncode == 0, done.stderr
    import io

    import pandas as pd
    cli = pd.read_csv(io.StringIO(done.stdout), float_precision="round_trip", keep_default_na=False)
    assert list(cli["weight_dtype"]) == ["bf16", "fp8"]
    assert list(cli["tokens_per_s_per_chip"]) == list(frame["tokens_per_s_per_chip"])
    assert all(frame["tokens_per_s_per_chip"] > 0)
