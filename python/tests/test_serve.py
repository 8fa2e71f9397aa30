"""g5sim.serve(): the command line's `g5sim serve`, byte for byte, from Python."""

import json
import math
import os

import pandas as pd
import pytest

import g5sim

SMALL = dict(layers=2)  # every step of Qwen2.5-1.5B on 2 layers: fast, and every time a real simulation's


def test_serve_matches_the_command_line(run_cli, tmp_path):
    csv_path, json_path = tmp_path / "r.csv", tmp_path / "s.json"
    rc = run_cli(["serve", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2", "--rate", "4",
                               "--requests", "12", "--input-len", "100:300", "--output-len", "8", "--seed", "1",
                               "--slo-ttft-ms", "1", "--csv", str(csv_path), "--json", str(json_path)])
    assert rc == 0
    frame, summary = g5sim.serve("h100", "qwen2.5-1.5b", rate=4, num_requests=12, input_len=(100, 300),
                                 output_len=8, seed=1, slo_ttft_ms=1, **SMALL)
    assert summary == json.loads(json_path.read_text())
    cli = pd.read_csv(csv_path, dtype={"id": str})
    pd.testing.assert_frame_equal(frame, cli)
    assert list(frame.columns) == ["id", "arrival_s", "first_token_s", "finish_s", "ttft_ms", "tpot_ms", "itl_p50_ms",
                                   "itl_max_ms", "e2e_s", "e2el_ms", "input_tokens", "output_tokens", "preemptions",
                                   "cached_tokens"]
    assert summary["schema_version"] == 1
    # Conservation: every request's output tokens were emitted, 12 x 8.
    assert summary["output_tokens"] == 96 == frame.output_tokens.sum()
    assert summary["goodput"]["requests_met"] == int((frame.ttft_ms <= 1).sum())


def test_a_dataframe_trace_is_the_same_trace_as_its_file(tmp_path):
    trace = pd.DataFrame({"id": ["a", "b", "c"], "arrival_s": [0.0, 0.0, 0.02],
                          "input_tokens": [256, 64, 32], "output_tokens": [3, 4, 1]})
    path = tmp_path / "trace.csv"
    trace.to_csv(path, index=False)
    from_frame = g5sim.serve("h100", "qwen2.5-1.5b", trace, **SMALL)
    from_file = g5sim.serve("h100", "qwen2.5-1.5b", str(path), **SMALL)
    pd.testing.assert_frame_equal(from_frame[0], from_file[0])
    assert from_frame[1]["ttft_ms"] == from_file[1]["ttft_ms"]
    # c has one output token: no TPOT (vLLM's definition leaves it out), an empty cell, NaN here.
    c = from_frame[0].set_index("id").loc["c"]
    assert math.isnan(c.tpot_ms)
    assert from_frame[1]["tpot_ms"]["count"] == 2


def test_one_request_alone_takes_its_prefill_then_its_decode_steps():
    frame, summary = g5sim.serve("h100", "qwen2.5-1.5b", pd.DataFrame(
        {"arrival_s": [0.0], "input_tokens": [256], "output_tokens": [2]}), **SMALL)
    prefill = g5sim.simulate("h100", "qwen2.5-1.5b", mix="1x256@0", tp=1, ep=1, dp=1, **SMALL)
    decode = g5sim.simulate("h100", "qwen2.5-1.5b", mix="1x1@256", tp=1, ep=1, dp=1, **SMALL)
    # The CSV's milliseconds are rounded to 3 decimals; the JSON keeps the double.
    assert summary["ttft_ms"]["mean"] == prefill.total_ps / 1e9
    assert summary["tpot_ms"]["mean"] == decode.total_ps / 1e9
    assert frame.ttft_ms[0] == round(prefill.total_ps / 1e9, 3)


def test_serve_errors_name_their_keyword():
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve("h100", "qwen2.5-1.5b", rate=0, input_len=10, output_len=10)
    assert error.value.field == "rate"
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve("h100", "qwen2.5-1.5b", pd.DataFrame({"arrival_s": [0.0], "input_tokens": [0],
                                                          "output_tokens": [1]}))
    assert "input_tokens: 0 is outside 1..16777216 tokens" in str(error.value)
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve("h100", "qwen2.5-1.5b", pd.DataFrame({"arrival_s": [0.0], "input_tokens": [1]}))
    assert "no column output_tokens" in str(error.value)
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve("h100", "qwen2.5-1.5b", rate=1, input_len=10, output_len=10, batch=4)
    assert error.value.field == "batch"
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve("h100", "qwen2.5-1.5b", rate=1, input_len=10, output_len=10, step_cache="bucket:0")
    assert error.value.field == "step_cache"
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve("h100", "qwen2.5-1.5b", pd.DataFrame({"arrival_s": [0.0], "input_tokens": [600],
                                                          "output_tokens": [10]}), kv_tokens=512, **SMALL)
    assert "it can never run" in str(error.value)


def test_plot_serve_draws_the_summary(tmp_path):
    _, summary = g5sim.serve("h100", "qwen2.5-1.5b", concurrency=2, num_requests=6, input_len=64, output_len=4,
                             slo_tpot_ms=5, **SMALL)
    out = tmp_path / "serve.png"
    g5sim.plot_serve(summary, out)
    assert out.stat().st_size > 10_000


def test_disaggregation_moves_each_prompt_cache_once():
    # Qwen2.5-1.5B keeps 28 layers x 2 KV heads x 2 x 128 x 2 B = 28,672 B per token; four prompts
    # of 256 tokens move 4 x 256 x 28,672 = 29,360,128 B from the prefill instance to the decode ones.
    frame, summary = g5sim.serve("h100", "qwen2.5-1.5b", concurrency=2, num_requests=4, input_len=256, output_len=3,
                                 disagg=(1, 2), **SMALL)
    d = summary["disaggregation"]
    assert (d["prefill_instances"], d["decode_instances"], d["chips"]) == (1, 2, 3)
    assert d["kv_transfer_bytes"] == 29_360_128
    assert summary["output_tokens"] == 12
    # TTFT includes the transfer: latency + 256 x 28,672 B over the chip's RDMA (50 GB/s, 5 us).
    # Both clients' prompts share the prefill step, each time (the second pair arrives together too).
    prefill = g5sim.simulate("h100", "qwen2.5-1.5b", mix="2x256@0", tp=1, ep=1, dp=1, **SMALL)
    transfer_ms = (5000 + 256 * 28_672 / 50) / 1e6
    assert summary["ttft_ms"]["p50"] == pytest.approx(prefill.total_ps / 1e9 + transfer_ms, rel=1e-9)


def test_mtp_with_every_draft_accepted_takes_a_third_of_the_verifies():
    # 2 drafts all accepted: 3 tokens a verify, so 1 + 3 x 5 = 16 output tokens take 5 verifies.
    _, summary = g5sim.serve("h100", "qwen2.5-1.5b", pd.DataFrame(
        {"arrival_s": [0.0], "input_tokens": [128], "output_tokens": [16]}), mtp=2, accept=1.0, **SMALL)
    assert summary["mtp"]["verifies"] == 5
    assert summary["mtp"]["tokens_per_verify"] == 3
    assert summary["steps_taken"] == 6
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve("h100", "qwen2.5-1.5b", rate=1, input_len=10, output_len=10, mtp=2)
    assert error.value.field == "mtp"


def test_the_perfetto_trace_is_the_command_line_one(run_cli, tmp_path):
    ours, theirs = tmp_path / "ours.json", tmp_path / "theirs.json"
    g5sim.serve("h100", "qwen2.5-1.5b", concurrency=2, num_requests=4, input_len=64, output_len=3, perfetto=ours,
                **SMALL)
    assert run_cli(["serve", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2",
                                 "--concurrency", "2", "--requests", "4", "--input-len", "64", "--output-len", "3",
                                 "--perfetto", str(theirs)]) == 0
    assert ours.read_text() == theirs.read_text()
    events = json.loads(ours.read_text())["traceEvents"]
    # Two clients: two request slots; each request queued 0 (it starts on arrival), prefill, decode.
    slots = {e["tid"] for e in events if e.get("pid") == 2 and e["ph"] == "X"}
    assert slots == {0, 1}
    assert sum(1 for e in events if e.get("name") == "prefill") == 4


def test_a_length_histogram_file_draws_lengths_from_its_bins(run_cli, tmp_path):
    histogram = tmp_path / "prompts.csv"
    histogram.write_text("# two bins, the second three times as likely\nlow,high,weight\n100,100,1\n300,320,3\n")
    frame, summary = g5sim.serve("h100", "qwen2.5-1.5b", rate=4, num_requests=20, input_len=histogram,
                                 output_len=4, seed=2, **SMALL)
    assert set(frame.input_tokens) <= {100} | set(range(300, 321))
    json_path = tmp_path / "s.json"
    rc = run_cli(["serve", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2", "--rate", "4",
                               "--requests", "20", "--input-len", str(histogram), "--output-len", "4", "--seed", "2",
                               "--json", str(json_path)])
    assert rc == 0 and summary == json.loads(json_path.read_text())
    histogram.write_text("low,high,weight\n5,2,1\n")
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve("h100", "qwen2.5-1.5b", rate=4, num_requests=2, input_len=histogram, output_len=4)
    assert str(error.value).endswith("prompts.csv:2:3: high 2 is below low 5")


def test_bucketed_steps_are_the_same_on_any_number_of_threads():
    runs = [g5sim.serve("h100", "qwen2.5-1.5b", rate=8, num_requests=24, input_len=(50, 900), output_len=(2, 30),
                        seed=5, step_cache="bucket:10", jobs=jobs, **SMALL) for jobs in (1, 2)]
    pd.testing.assert_frame_equal(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1]
    assert runs[0][1]["step_cache"]["mode"] == "bucket" and runs[0][1]["step_cache"]["error_samples"] > 0


def test_a_serve_sweep_is_a_row_per_point_the_same_on_threads_and_on_dask(tmp_path):
    grid = {"chip": ["h100", "sg2262"], "rate": [2, 16]}
    common = dict(model="qwen2.5-1.5b", num_requests=12, input_len=(100, 400), output_len=(2, 12), seed=3,
                  slo_tpot_ms=20)
    # model is an axis or a keyword: here a one-value axis.
    grid["model"] = [common.pop("model")]
    rows = g5sim.serve_sweep(grid, jobs=2, **common, **SMALL)
    # Points nested chip, model, rate (the last fastest): h100 at 2 and 16, then sg2262.
    assert list(rows.point) == [0, 1, 2, 3]
    assert list(rows.chip) == ["h100", "h100", "sg2262", "sg2262"] and list(rows.rate) == [2, 16, 2, 16]
    # Each row is that point's own serve(): its summary's figures.
    _, alone = g5sim.serve("sg2262", "qwen2.5-1.5b", rate=16, **common, **SMALL)
    row = rows.iloc[3]
    assert row.output_tokens_per_s_per_chip == alone["throughput"]["output_tokens_per_s_per_chip"]
    assert row.tpot_p50_ms == alone["tpot_ms"]["p50"] and row.requests_met == alone["goodput"]["requests_met"]
    assert row.chip_name == "SG2262" and row.output_tokens == alone["output_tokens"]
    # On Dask: the same rows.
    distributed = pytest.importorskip("distributed")
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as client:
        on_dask = g5sim.serve_sweep(grid, client=client, **common, **SMALL)
    pd.testing.assert_frame_equal(rows, on_dask)
    # Its CSV plots as throughput against latency.
    rows.to_csv(tmp_path / "rates.csv", index=False)
    from g5sim.plot import main
    assert main([str(tmp_path / "rates.csv"), "-o", str(tmp_path / "rates.png")]) == 0
    assert (tmp_path / "rates.png").stat().st_size > 10_000


def test_a_serve_sweep_refuses_what_it_cannot_sweep():
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve_sweep({"batch": [1, 2]}, rate=1, input_len=10, output_len=10)
    assert error.value.field == "batch"
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve_sweep({"rate": 4}, input_len=10, output_len=10)
    assert error.value.field == "rate"
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve_sweep({"rate": [1, 2]}, rate=3, input_len=10, output_len=10)
    assert error.value.field == "rate"
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve_sweep({"max_seqs": [8]}, input_len=10, output_len=10)
    assert "needs a load" in str(error.value)


def test_prefill_first_steps_match_the_command_line_and_shorten_ttft(run_cli, tmp_path):
    json_path = tmp_path / "s.json"
    rc = run_cli(["serve", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2", "--rate", "20",
                               "--requests", "16", "--input-len", "200:600", "--output-len", "16", "--seed", "2",
                               "--schedule", "prefill-first", "--json", str(json_path)])
    assert rc == 0
    keywords = dict(rate=20, num_requests=16, input_len=(200, 600), output_len=16, seed=2, **SMALL)
    _, first = g5sim.serve("h100", "qwen2.5-1.5b", schedule="prefill-first", **keywords)
    assert first == json.loads(json_path.read_text())
    assert first["engine"]["schedule"] == "prefill-first"
    _, mixed = g5sim.serve("h100", "qwen2.5-1.5b", **keywords)
    assert mixed["engine"]["schedule"] == "mixed"
    # Prompts never wait behind decodes: the mean TTFT is shorter, the tokens the same.
    assert first["ttft_ms"]["mean"] < mixed["ttft_ms"]["mean"]
    assert first["output_tokens"] == mixed["output_tokens"] == 16 * 16
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve("h100", "qwen2.5-1.5b", schedule="fifo", **keywords)
    assert error.value.field == "schedule"


def test_serve_tells_its_progress_and_stops_when_the_callback_raises():
    seen = []
    frame, summary = g5sim.serve("h100", "qwen2.5-1.5b", rate=4, num_requests=12, input_len=(100, 300),
                                 output_len=8, seed=1, progress=lambda done, total: seen.append((done, total)),
                                 **SMALL)
    # One call per finished request, in order: 1..12 of 12; the outputs are the serve's without it.
    assert seen == [(k, 12) for k in range(1, 13)]
    _, quiet = g5sim.serve("h100", "qwen2.5-1.5b", rate=4, num_requests=12, input_len=(100, 300), output_len=8,
                           seed=1, **SMALL)
    assert quiet == summary

    def stop(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        g5sim.serve("h100", "qwen2.5-1.5b", rate=4, num_requests=12, input_len=100, output_len=8, progress=stop,
                    **SMALL)
    with pytest.raises(g5sim.ConfigError, match="progress: expected a callable") as error:
        g5sim.serve("h100", "qwen2.5-1.5b", rate=4, num_requests=12, input_len=100, output_len=8, progress="yes")
    assert error.value.field == "progress"


def test_two_processes_filling_one_step_cache_folder_give_the_results_of_one(tmp_path):
    # Two `g5sim serve` processes at once on an empty folder (each writes every step it simulates,
    # under a temporary name renamed over the entry), then a third reading it warm: the same JSON
    # as a serve with no folder, but for the steps read. (A seed whose serve stays on auto's grid,
    # so that the processes write anchors and samples, not only exact steps.)
    import subprocess

    from g5sim._program import program

    folder = tmp_path / "steps"
    args = ["serve", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2", "--rate", "8", "--requests", "40",
            "--input-len", "50:900", "--output-len", "2:30", "--seed", "6"]
    env = dict(os.environ, G5SIM_STEP_CACHE_DIR=str(folder))
    both = [subprocess.Popen([program(), *args, "--json", str(tmp_path / f"p{i}.json")], env=env,
                             stdout=subprocess.DEVNULL) for i in (0, 1)]
    assert [p.wait() for p in both] == [0, 0]
    warm = subprocess.run([program(), *args, "--json", str(tmp_path / "warm.json")], env=env,
                          stdout=subprocess.DEVNULL)
    alone = subprocess.run([program(), *args, "--step-cache-dir", "off", "--json", str(tmp_path / "alone.json")],
                           stdout=subprocess.DEVNULL)
    assert warm.returncode == 0 and alone.returncode == 0
    runs = {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in ("p0", "p1", "warm", "alone")}
    simulated = runs["alone"]["steps_simulated"]
    assert runs["alone"]["step_cache"]["mode"] == "auto" and not runs["alone"]["step_cache"]["exact"]
    assert runs["warm"]["steps_read"] == simulated  # every step from the folder
    assert len(list(folder.glob("*/*.step"))) == simulated  # one entry a step, no temporary left
    assert not list(folder.glob("*/*.tmp"))
    for run in runs.values():
        run.pop("steps_read")
    assert runs["p0"] == runs["p1"] == runs["warm"] == runs["alone"]


def test_a_step_cache_folder_from_python_is_the_command_lines(tmp_path):
    frame, summary = g5sim.serve("h100", "qwen2.5-1.5b", rate=4, num_requests=6, input_len=(100, 300), output_len=4,
                                 seed=1, step_cache_dir=str(tmp_path / "steps"), **SMALL)
    again, warm = g5sim.serve("h100", "qwen2.5-1.5b", rate=4, num_requests=6, input_len=(100, 300), output_len=4,
                              seed=1, step_cache_dir=str(tmp_path / "steps"), **SMALL)
    assert summary["steps_read"] == 0 and warm["steps_read"] == warm["steps_simulated"] > 0
    pd.testing.assert_frame_equal(frame, again)
    with pytest.raises(g5sim.ConfigError) as error:
        g5sim.serve("h100", "qwen2.5-1.5b", rate=4, num_requests=6, input_len=10, output_len=4,
                    step_cache="auto:0", **SMALL)
    assert error.value.field == "step_cache"


def test_a_multi_turn_serve_with_prefix_caching_and_tiers_matches_the_command_line(run_cli, tmp_path):
    """Conversations (turns, think time, a system prompt), prefix caching and a host tier: the same
    serve from Python and from the command line, and the tier's reloads in both."""
    csv_path, json_path = tmp_path / "r.csv", tmp_path / "s.json"
    rc = run_cli(["serve", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2", "--concurrency", "4",
                  "--requests", "24", "--turns", "6", "--think-s", "0.5", "--system-prompt", "512",
                  "--input-len", "64:128", "--output-len", "16", "--kv-tokens", "4000", "--kv-tiers",
                  "host-dram-ssd", "--csv", str(csv_path), "--json", str(json_path)])
    assert rc == 0
    frame, summary = g5sim.serve("h100", "qwen2.5-1.5b", concurrency=4, num_requests=24, turns=6, think_s=0.5,
                                 system_prompt=512, input_len=(64, 128), output_len=16, kv_tokens=4000,
                                 kv_tiers="host-dram-ssd", **SMALL)
    assert summary == json.loads(json_path.read_text())
    pd.testing.assert_frame_equal(frame, pd.read_csv(csv_path, dtype={"id": str}))
    cache = summary["prefix_cache"]
    assert cache["enabled"] and cache["hit_tokens"] == int(frame.cached_tokens.sum()) > 0
    assert cache["hit_rate"] == pytest.approx(cache["hit_tokens"] / (cache["hit_tokens"] + cache["computed_tokens"]))
    assert [t["name"] for t in summary["kv_tiers"]] == ["host_dram", "ssd"]
    host = summary["kv_tiers"][0]
    assert host["read_bytes"] == host["read_blocks"] * host["block_bytes"]
    # Every conversation's later turns reuse at least the system prompt: 4 of 6 turns a session hit more.
    assert (frame.cached_tokens > 0).sum() >= 20
    # A strict knob: an unknown tier file is named.
    with pytest.raises(g5sim.ConfigError, match="kv_tiers"):
        g5sim.serve("h100", "qwen2.5-1.5b", concurrency=4, num_requests=4, input_len=64, output_len=4,
                    kv_tiers="no-such-host", **SMALL)
