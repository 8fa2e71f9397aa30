"""Energy from Python: a chip's `energy` section priced through Result, Op, Kind and OpResult."""

import copy
import json

import pytest

import g5sim
from conftest import SG2262_CONFIG

# Prices that are whole or binary fractions: the sums below are exact in a double.
PRICES = {"pj_per_mac": {"fp8": 0.25, "bf16": 0.5}, "pj_per_vector_element": 1.5,
          "pj_per_byte": {"ddr": 40, "c2c": 44}, "static_w_per_core": 0.25, "static_w_per_chip": 10, "tdp_w": None}


def priced():
    chip = copy.deepcopy(SG2262_CONFIG)
    chip["energy"] = copy.deepcopy(PRICES)
    return chip


def test_a_matmul_energy_is_its_macs_bytes_and_static_power():
    r = g5sim.simulate_matmul(priced(), 256, 512, 1024, cores=1)
    assert r.has_energy
    # pJ as the simulator counts them, x 1e-12: joules, as every output has them (the same product).
    assert r.dynamic_energy_j == (r.flops / 2 * 0.5 + r.ddr_bytes * 40) * 1e-12
    assert r.static_energy_j == 10.25 * r.total_ps * 1e-12
    assert json.loads(r.json())["energy_j"] == r.energy_j


def test_a_step_reports_energy_per_op_kind_engine_and_token(v3):
    r = g5sim.simulate(priced(), v3, layers=2)
    assert r.has_energy and r.tdp_w == 0  # null: not stated
    # The run converts its sum of pJ, each op its own pJ: equal to rounding.
    assert r.dynamic_energy_j == pytest.approx(sum(op.energy_j for op in r.ops), rel=1e-12)
    assert r.static_energy_j == 26.0 * r.total_ps * 1e-12  # 64 x 0.25 W + 10 W
    assert sum(r.energy_by_engine.values()) == pytest.approx(r.dynamic_energy_j, rel=1e-12)
    assert sum(k.energy_j for k in r.kinds) == pytest.approx(r.dynamic_energy_j, rel=1e-12)
    energy = r.to_dict()["energy"]
    assert energy["tdp_w"] is None and energy["total_j"] == r.energy_j
    assert r.tokens_per_joule == pytest.approx(1 / r.joules_per_token)


def test_no_section_no_energy(chip, v3):
    r = g5sim.simulate(chip, v3, layers=1)
    assert not r.has_energy and r.energy_j == 0 and "energy" not in r.to_dict()


def test_a_missing_price_names_its_field():
    chip = priced()
    del chip["energy"]["pj_per_byte"]["c2c"]
    with pytest.raises(g5sim.ConfigError, match="energy.pj_per_byte.c2c"):
        g5sim.load_chip(chip)
