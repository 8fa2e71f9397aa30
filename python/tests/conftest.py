"""The host's fixtures, as seed 003 asks: the chip and the models are dicts held here, never the
shipped YAML files, so that the numbers the tests assert cannot move under them."""

import copy
import os
import sys

import pytest

# The build tree's package (build/python) unless the caller points PYTHONPATH at another one.
_HERE = os.path.dirname(os.path.abspath(__file__))
_BUILD_PYTHON = os.path.join(_HERE, "..", "..", "build", "python")
if not any(os.path.isfile(os.path.join(p, "g5sim", "__init__.py")) for p in sys.path if p) \
        and os.path.isdir(_BUILD_PYTHON):
    sys.path.insert(0, os.path.abspath(_BUILD_PYTHON))

import g5sim  # noqa: E402

# No step cache folder unless a test names one (step_cache_dir=...): the counts of steps read from
# it, and the README's outputs, are then those of a first run.
os.environ["G5SIM_STEP_CACHE_DIR"] = "off"

# SG2262 as configs/chips/sg2262.yaml describes it (sources in README, "Chip config"): 64 cores of
# 2 MiB local memory, 16 lanes; DDR 8,601.6 GB/s x eta_m 0.9; per core TIU, GDMA, SDMA, CDMA, HAU.
# Without the shipped file's L2: the SDMA route reads the history into local memory, as the spec's
# appendix B describes it.
SG2262_CONFIG = {
    "name": "SG2262",
    "cores": 64,
    "lmem_bytes_per_core": 2097152,
    "weight_layout": "n_major",
    "matmul_split_k": True,
    "ddr": {"bandwidth_gb_per_s": 8601.6, "efficiency": 0.9, "capacity_bytes": 137438953472,
            "latency_ns": 150, "burst_bytes": 64, "access_overhead_bytes": 64},
    "c2c": {"bandwidth_gb_per_s": 56, "latency_ns": 250, "links": 8},
    "engines": {
        "tiu": {
            "kind": "tensor",
            "waits_on": ["gdma", "sdma", "cdma", "hau"],
            "clock_mhz": 1000,
            "lanes_per_core": 16,
            "cube_n": 8,
            "cube_macs_per_lane_per_cycle": {"fp8": 256, "bf16": 128},
            "vector_eu_per_lane": {"bf16": 32, "fp32": 16},
            "mm2_init_cycles": {"nn": 44, "nt": 44, "tt": 47},
            "bank_conflict_cycles": 0,
            "cube_efficiency": 1.0,
            "vector_init_cycles": 11,
            "sfu_init_cycles": 13,
            "sfu_elements_per_lane_per_cycle": 8,
        },
        "gdma": {"kind": "dma", "roles": ["tiles", "kv_stream"], "waits_on": ["tiu", "hau"], "crosses": ["ddr"],
                 "bandwidth_gb_per_s": 68.264, "efficiency": 0.9, "startup_ns": 100, "outstanding": 4, "bytes_in_flight": 32768},
        "sdma": {"kind": "dma", "roles": ["kv_resident", "cross_core", "gather"], "waits_on": ["tiu", "hau"],
                 "crosses": ["ddr"], "bandwidth_gb_per_s": 64, "efficiency": 0.85, "startup_ns": 120, "outstanding": 4,
                 "bytes_in_flight": 32768},
        "cdma": {"kind": "collective", "waits_on": ["tiu", "hau"], "crosses": ["c2c", "ddr"], "startup_ns": 0,
                 "outstanding": 1},
        "hau": {"kind": "sort", "waits_on": ["gdma", "tiu"], "sort_width": 16, "compare_cycles": 1,
                "init_cycles": 20},
    },
}

# DeepSeek-V3 (the official config_671B.json values): d_c = 512, d_rope = 64, 128 heads.
DEEPSEEK_V3_CONFIG = {
    "name": "DeepSeek-V3",
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "num_hidden_layers": 61,
    "vocab_size": 129280,
    "intermediate_size": 18432,
    "num_attention_heads": 128,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "moe_intermediate_size": 2048,
    "first_k_dense_replace": 3,
    "routed_scaling_factor": 2.5,
}

# DeepSeek-V2-Lite (the official config_16B.json values): no q LoRA, 16 heads.
DEEPSEEK_V2_LITE_CONFIG = {
    "name": "DeepSeek-V2-Lite",
    "model_type": "deepseek_v2",
    "hidden_size": 2048,
    "num_hidden_layers": 27,
    "vocab_size": 102400,
    "intermediate_size": 10944,
    "num_attention_heads": 16,
    "q_lora_rank": None,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "n_routed_experts": 64,
    "num_experts_per_tok": 6,
    "n_shared_experts": 2,
    "moe_intermediate_size": 1408,
    "first_k_dense_replace": 1,
    "routed_scaling_factor": 1.0,
}


@pytest.fixture(scope="session")
def chip():
    return g5sim.load_chip(SG2262_CONFIG, source="SG2262_CONFIG")


@pytest.fixture(scope="session")
def v3():
    return g5sim.load_model(DEEPSEEK_V3_CONFIG, source="DEEPSEEK_V3_CONFIG")


@pytest.fixture(scope="session")
def v2_lite():
    return g5sim.load_model(DEEPSEEK_V2_LITE_CONFIG, source="DEEPSEEK_V2_LITE_CONFIG")


@pytest.fixture
def v3_dict():
    """A private copy to edit."""
    return copy.deepcopy(DEEPSEEK_V3_CONFIG)


@pytest.fixture
def chip_dict():
    return copy.deepcopy(SG2262_CONFIG)


def block(chip, model, **kwargs):
    """One attention block on one chip, unsharded (tp = ep = dp = 1): the spec's unit."""
    kwargs.setdefault("scope", "block")
    for degree in ("tp", "ep", "dp"):
        kwargs.setdefault(degree, 1)
    return g5sim.simulate(chip, model, **kwargs)


def pytest_configure(config):
    # The tiers: `-m "not slow"` is the quick loop (tools/bootstrap.sh check); CI runs everything.
    config.addinivalue_line("markers", "slow: a test that reruns the README's journeys or whole serves (seconds each)")


@pytest.fixture
def run_cli():
    """The g5sim program with `args` (what `python3 -m g5sim` runs): its exit status; its output
    goes to this process's stdout and stderr (capfd sees it)."""
    import subprocess

    from g5sim._program import program

    def run(args):
        sys.stdout.flush()
        return subprocess.run([program(), *args]).returncode
    return run
