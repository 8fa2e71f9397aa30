"""Error bands (hw/error_band.hpp) from Python: a chip whose calibration record holds bands gives
each result a band, total / high .. total / low of the kind's held-out ratios, as the CLI's JSON
does; a chip without one gives None and says why."""

import json
import math
import pickle

import g5sim
from conftest import block

RECORD = {
    "g5sim": "0.1.0", "date": "2026-12-02T00:00:00Z", "base": "sg2262", "measured": "m.csv",
    "rows": ["a", "b"], "fitted": ["ddr.efficiency 0.9 -> 0.9 in [0.05, 1]"],
    "mape_before_pct": 10.0, "mape_after_pct": 5.0, "leave_one_out_mape_pct": 6.0,
    "bands": {"coverage": 0.8, "basis": "leave-one-out",
              "block": {"rows": 5, "low": 0.8, "high": 1.25}, "all": {"rows": 9, "low": 0.9, "high": 1.1}},
}


def test_a_calibrated_chip_gives_a_band(chip_dict, v3):
    chip_dict["calibration"] = RECORD
    chip = g5sim.load_chip(chip_dict, source="CALIBRATED")
    r = block(chip, v3, batch=2, ctx=4096)
    assert r.has_band
    # measured = predicted / ratio: the block band's 1.25 gives the low bound, 0.8 the high one.
    assert r.band_low_ps == round(r.total_ps / 1.25)
    assert r.band_high_ps == round(r.total_ps / 0.8)
    assert r.band_low_ns == r.band_low_ps / 1000 and r.band_high_ns == r.band_high_ps / 1000
    assert r.band_coverage == 0.8
    assert r.band_basis == "80 % of 5 held-out rows (leave-one-out) of SG2262: calibration.bands.block"
    d = r.to_dict()
    assert d["band_low_ns"] == r.band_low_ns and d["band_high_ns"] == r.band_high_ns
    assert d["band_basis"] == r.band_basis
    # A restored (pickled) result keeps it.
    assert pickle.loads(pickle.dumps(r)).band_high_ps == r.band_high_ps


def test_an_uncalibrated_chip_says_there_is_none(chip, v3):
    r = block(chip, v3, batch=2, ctx=4096)
    assert not r.has_band
    assert r.band_low_ns is None and r.band_high_ns is None
    assert r.band_basis.startswith("none: SG2262 is not calibrated")
    assert r.to_dict()["band_low_ns"] is None


def test_sweep_rows_carry_the_band(chip_dict, tmp_path):
    chip_dict["calibration"] = RECORD
    # The sweep takes chips by path: the calibrated chip as JSON, which is YAML too.
    path = tmp_path / "calibrated.yaml"
    path.write_text(json.dumps(chip_dict))
    rows = g5sim.sweep({"chip": [str(path)], "ctx": [1024, 4096]}, scope="block", dp=1)
    for row in rows:
        assert math.isclose(row["band_low_ns"], round(row["total_ps"] / 1.25) / 1000)
        assert math.isclose(row["band_high_ns"], round(row["total_ps"] / 0.8) / 1000)
