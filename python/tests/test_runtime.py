"""Runtimes from Python (g5sim/runtime.hpp): runtime= on simulate() and serve(), the command line's
outputs byte for byte, the charge reported apart, the shipped configs as dicts."""

import json

import pytest

import g5sim


def test_the_shipped_runtimes_read_as_dicts():
    assert {"none", "vllm", "vllm-v0", "sglang", "sglang-0.4.1", "trtllm", "sophgo-demo-cpp", "sophgo-demo-python"} <= set(g5sim.shipped_runtimes())
    sglang = g5sim.runtime("sglang")
    assert sglang["name"] == "SGLang" and sglang["step"]["overlap"] is True
    assert sglang["collectives"]["all_reduce"][-1]["up_to_bytes"] is None
    # Its eager steps are issued op by op from Python; graphs are replayed, nothing to issue.
    assert sglang["kernels"]["eager"]["launch_ns"] > 0 and sglang["kernels"]["eager"]["expert_launch_ns"] > 0
    assert sglang["kernels"]["graph"]["launch_ns"] == sglang["kernels"]["graph"]["expert_launch_ns"] == 0
    # vLLM 0.11 replays piecewise graphs for steps of up to 512 tokens; SGLang 0.5 runs them eager.
    assert g5sim.runtime("vllm")["kernels"]["piecewise_max_tokens"] == 512
    assert sglang["kernels"]["piecewise_max_tokens"] == 0
    assert g5sim.runtime_path("vllm").endswith("configs/runtimes/vllm.yaml")
    with pytest.raises(g5sim.ConfigError, match="did you mean 'sglang'"):
        g5sim.runtime("sglan")


def test_a_run_with_a_runtime_is_the_command_lines_and_adds_its_charge_apart(run_cli, tmp_path):
    args = dict(layers=2, batch=4, ctx=1024, tp=1, ep=1, dp=1)
    path = tmp_path / "r.json"
    assert run_cli(["run", "--chip", "h100", "--model", "qwen3-8b", "--layers", "2", "--batch", "4", "--ctx", "1024",
                    "--tp", "1", "--ep", "1", "--dp", "1", "--runtime", "vllm", "--json", str(path)]) == 0
    r = g5sim.simulate("h100", "qwen3-8b", runtime="vllm", **args)
    assert json.loads(path.read_text()) == json.loads(r.json())
    alone = g5sim.simulate("h100", "qwen3-8b", **args)
    # The chip's timeline is the chip's; the runtime adds its parts beside it, exactly.
    assert r.total_ps == alone.total_ps == r.chip_ps
    parts = r.runtime_parts
    assert r.runtime_ps == (parts.kernel_floor_ps + parts.kernel_compute_ps + parts.kernel_gap_ps
                            + parts.kernel_launch_ps + parts.collective_ps + parts.step_cpu_ps)
    assert r.step_ps == r.chip_ps + r.runtime_ps
    assert r.runtime == "vLLM" and alone.runtime == "" and "runtime" not in json.loads(alone.json())
    section = json.loads(r.json())["runtime"]
    assert section["step_ns"] == r.step_ps / 1000 and section["kernels"] == parts.kernels
    # tokens/s is over the step as the software runs it.
    assert r.tokens_per_s < alone.tokens_per_s


def test_none_is_the_chip_alone_byte_for_byte():
    args = dict(layers=2, batch=2, ctx=512)
    assert g5sim.simulate("h100", "qwen3-8b", runtime="none", **args).json() == \
        g5sim.simulate("h100", "qwen3-8b", **args).json()


def test_a_serve_with_a_runtime_splits_ttft_and_tpot(run_cli, tmp_path):
    path = tmp_path / "s.json"
    assert run_cli(["serve", "--chip", "h100", "--model", "qwen2.5-1.5b", "--layers", "2", "--concurrency", "2",
                    "--requests", "6", "--input-len", "128", "--output-len", "8", "--runtime", "sglang",
                    "--json", str(path)]) == 0
    _, summary = g5sim.serve("h100", "qwen2.5-1.5b", concurrency=2, num_requests=6, input_len=128, output_len=8,
                             layers=2, runtime="sglang")
    assert summary == json.loads(path.read_text())
    split = summary["runtime"]
    assert split["name"] == "SGLang"
    assert split["ttft_ms"]["chip"] + split["ttft_ms"]["runtime"] == pytest.approx(summary["ttft_ms"]["mean"], rel=1e-9)
    assert split["tpot_ms"]["runtime"] > 0
    # The runtime's scheduler: SGLang's prefill-first steps.
    assert summary["engine"]["schedule"] == "prefill-first"
