"""A step as groups of sequences from Python: seqs=[(count, q_len, history), ...], a --seqs file,
mix= text, the same results as the command line, and errors that name the keyword."""

import json
import os
import subprocess
import sys

import g5sim
import pytest

from conftest import block

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_groups_as_tuples_a_file_and_text_are_one_step(chip, v3, tmp_path):
    as_tuples = block(chip, v3, seqs=[(4, 1, 4096), (1, 512, 1024), (1, 256, 0)])
    path = tmp_path / "seqs.csv"
    path.write_text("count,q_len,history\n4,1,4096\n1,512,1024\n1,256,0\n")
    from_file = block(chip, v3, seqs=path)            # an os.PathLike
    from_text = block(chip, v3, mix="4x1@4096,1x512@1024,1x256@0")
    assert as_tuples.json() == from_file.json() == from_text.json()
    assert as_tuples.phase == "mixed" and as_tuples.batch == 6
    assert [(g.count, g.q_len, g.history, g.path) for g in as_tuples.sequences] == [
        (4, 1, 4096, "decode"), (1, 512, 1024, "prefill"), (1, 256, 0, "prefill")]
    # The history read: the decodes' 4 x 4096 and the chunk's 1024 latent rows of 1,152 B.
    reads = [op for op in as_tuples.ops if op.name == "kv_cache_read"]
    assert [op.kv_bytes for op in reads] == [4 * 4096 * 1152, 1024 * 1152]
    assert as_tuples.to_dict()["sequences"][1] == {"count": 1, "q_len": 512, "history": 1024, "path": "prefill"}


def test_python_and_the_command_line_agree_on_a_mix(tmp_path):
    r = g5sim.simulate("sg2262", "deepseek-v3", seqs=[(8, 1, 2048), (1, 1024, 0)], layers=2, tp=1, ep=8, dp=8)
    out = tmp_path / "run.json"
    subprocess.run([sys.executable, "-m", "g5sim", "run", "--mix", "8x1@2048,1x1024@0", "--layers", "2", "--tp", "1",
                    "--ep", "8", "--dp", "8", "--json", str(out)], check=True, capture_output=True, cwd=ROOT)
    assert json.loads(out.read_text()) == r.to_dict()
    # dp 8 deals the 8 decodes one per rank and the prompt to rank 0: rank 0 is simulated.
    assert [(g.count, g.q_len, g.history) for g in r.chip_sequences] == [(1, 1, 2048), (1, 1024, 0)]


@pytest.mark.parametrize("kwargs,field,message", [
    ({"seqs": []}, "seqs", "seqs: expected at least one (count, q_len, history) group"),
    ({"seqs": [(1, 2)]}, "seqs", "seqs: group 0: expected (count, q_len, history) of whole numbers, got (1, 2)"),
    ({"seqs": [(1, 1, -5)]}, "seqs", "seqs: group 0: expected (count, q_len, history) of whole numbers, got (1, 1, -5)"),
    ({"seqs": [(1, 1, 8)], "mix": "1x1@8"}, "mix", "mix: give the step's sequences once: mix or seqs, not both"),
    ({"seqs": [(0, 1, 8)]}, "mix", "group 0x1@8: count 0 is outside 1..1048576 sequences"),
    ({"mix": "64x1"}, "mix", "'64x1' is not COUNTxQ_LEN@HISTORY (as 64x1@4096 or 1x2048@0)"),
    ({"prefill_attention": "triangle", "phase": "prefill"}, "prefill_attention",
     "expected causal or full, got 'triangle'"),
])
def test_bad_groups_name_the_keyword(chip, v3, kwargs, field, message):
    with pytest.raises(g5sim.ConfigError) as raised:
        block(chip, v3, **kwargs)
    assert raised.value.field == field
    assert str(raised.value).endswith(message)


def test_a_seqs_file_error_names_its_line(chip, v3, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("count,q_len,history\n4,1,4096\n1,x,0\n")
    with pytest.raises(g5sim.ConfigError) as raised:
        block(chip, v3, seqs=str(path))
    assert str(raised.value) == f"{path}:3:3: q_len: 'x' is not a whole number"
    assert (raised.value.source, raised.value.line, raised.value.column) == (str(path), 3, 3)


def test_a_sweep_of_mixes_needs_no_context(chip, v3):
    grid = {"chip": [chip], "model": [v3], "mix": ["8x1@4096,1x256@0", "8x1@4096,1x512@0"]}
    rows = g5sim.sweep(grid, scope="block", tp=1, ep=1, dp=1)
    assert [row["mix"] for row in rows] == grid["mix"]
    assert [row["phase"] for row in rows] == ["mixed", "mixed"]
    # The same step as simulate() of each mix.
    assert rows[1]["total_ps"] == block(chip, v3, mix="8x1@4096,1x512@0").total_ps
    # seqs= for every point: no ctx either.
    rows = g5sim.sweep({"chip": [chip], "model": [v3], "tp": [1]}, seqs=[(8, 1, 4096)], scope="block", ep=1, dp=1)
    assert rows[0]["mix"] == "8x1@4096" and rows[0]["phase"] == "decode"
    with pytest.raises(ValueError, match="needs a 'ctx' list"):
        g5sim.sweep({"chip": [chip]})
