"""The module as a host uses it: loading, arguments, errors, results, threads, the CLI."""

import ast
import json
import math
import os
import pickle
import subprocess
import sys
import threading

import g5sim
import pytest

from conftest import DEEPSEEK_V3_CONFIG, SG2262_CONFIG, block

PACKAGE_DIR = os.path.dirname(g5sim.__file__)


def run_module(args, check=True):
    """python3 -m g5sim ARGS with this very package first on the path."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(PACKAGE_DIR), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "g5sim", *args], capture_output=True, text=True, check=check,
                          env=env)


def test_version_is_the_cli_version():
    out = run_module(["--version"])
    assert out.stdout == f"g5sim {g5sim.__version__}\n"
    assert g5sim.__version__.count(".") == 2


def test_loaded_objects_describe_themselves(chip, v3):
    assert (chip.name, chip.source, chip.cores) == ("SG2262", "SG2262_CONFIG", 64)
    assert chip.engines == ["tiu", "gdma", "sdma", "cdma", "hau"]   # the dict's order
    assert chip.ddr_capacity_bytes == 137438953472
    assert (v3.name, v3.attention, v3.kv_lora_rank, v3.qk_rope_head_dim) == ("DeepSeek-V3", "mla", 512, 64)
    assert v3.latent_kv_elements == 576
    assert g5sim.load_chip(chip) is chip                              # loaded objects pass through


def test_a_dict_is_validated_like_a_file(chip_dict):
    chip_dict["ddr"]["bandwith_gb_per_s"] = chip_dict["ddr"].pop("bandwidth_gb_per_s")
    with pytest.raises(g5sim.ConfigError) as raised:
        g5sim.load_chip(chip_dict, source="SG2262_CONFIG")
    assert str(raised.value).startswith(
        "SG2262_CONFIG: ddr.bandwith_gb_per_s: unknown key (did you mean 'bandwidth_gb_per_s'?)")
    assert raised.value.field == "ddr.bandwith_gb_per_s"


@pytest.mark.parametrize("edit, message, field", [
    # A quoted number is a string, in a dict as in YAML.
    (lambda d: d.update(cores="64"), "SG2262_CONFIG: cores: expected an integer, got the string \"64\"", "cores"),
    (lambda d: d["ddr"].update(efficiency=math.nan), "SG2262_CONFIG: ddr.efficiency: must be a finite number, got nan",
     "ddr.efficiency"),
    (lambda d: d.update({7: 1}), "SG2262_CONFIG: (top level): a key must be a string, got 7", None),
    (lambda d: d.update(cores=object), "SG2262_CONFIG: cores: expected a number, a string, a list or a mapping, "
                                      "got type", "cores"),
    (lambda d: d.update(cores=0), "SG2262_CONFIG: cores: must be a positive integer, got 0", "cores"),
    (lambda d: d.pop("ddr"), "SG2262_CONFIG: missing required section 'ddr'", "ddr"),
])
def test_dict_errors_name_source_and_field(chip_dict, edit, message, field):
    edit(chip_dict)
    with pytest.raises(g5sim.ConfigError) as raised:
        g5sim.load_chip(chip_dict, source="SG2262_CONFIG")
    assert str(raised.value) == message
    assert raised.value.field == field
    assert raised.value.source == "SG2262_CONFIG"


def test_a_self_containing_dict_is_refused(chip_dict):
    chip_dict["ddr"]["self"] = chip_dict["ddr"]
    with pytest.raises(g5sim.ConfigError) as raised:
        g5sim.load_chip(chip_dict, source="S")
    assert "nested deeper than 32 levels (or contains itself)" in str(raised.value)
    assert raised.value.field.startswith("ddr.self.self.")


def test_a_dict_without_a_source_is_named_as_such(chip_dict):
    del chip_dict["cores"]
    with pytest.raises(g5sim.ConfigError, match=r"^<chip dict>: missing required field 'cores'$"):
        g5sim.load_chip(chip_dict)


def test_config_error_survives_pickling(chip_dict):
    del chip_dict["cores"]
    with pytest.raises(g5sim.ConfigError) as raised:
        g5sim.load_chip(chip_dict, source="S")
    copy = pickle.loads(pickle.dumps(raised.value))
    assert (str(copy), copy.source, copy.field) == (str(raised.value), "S", "cores")


@pytest.mark.parametrize("kwargs, field, message", [
    ({"batch": 0}, "batch", "batch: 0 is outside 1..1048576"),
    ({"batch": "4"}, "batch", "batch: expected a whole number, got '4'"),
    ({"batch": True}, "batch", "batch: expected a whole number, got True"),
    ({"ctx": 2 ** 70}, "ctx", "ctx: 1180591620717411303424 is outside 1..16777216"),
    ({"tp": 3}, "tp", "tp: tensor-parallel degree tp = 3 does not divide num_attention_heads (128)"),
    ({"kv_dtype": "int4"}, "kv_dtype", "kv_dtype: expected bf16, fp8, fp8-flashmla, mxfp8, mxfp6, mxfp4 or nvfp4, got 'int4'"),
    ({"ctx": 1}, "q_len", None),                      # decode needs q_len < ctx
    ({"scope": "layer"}, "scope", "scope: expected block or step, got 'layer'"),
    ({"attn_split": "rows"}, "attn_split", "attn_split: expected seq or head, got 'rows'"),
    ({"scope": "block", "layers": 2}, "layers", "layers: layers and expert_load need scope step"),
])
def test_bad_arguments_name_the_keyword(chip, v3, kwargs, field, message):
    with pytest.raises(g5sim.ConfigError) as raised:
        g5sim.simulate(chip, v3, **kwargs)
    assert raised.value.field == field
    assert raised.value.source is None
    if message is not None:
        assert str(raised.value) == message


def test_an_unknown_engine_is_refused(chip, v3):
    with pytest.raises(g5sim.ConfigError) as raised:
        block(chip, v3, kv_read_engine="xdma")
    assert raised.value.field == "kv_read_engine"


def test_result_matches_the_cli_json_byte_for_byte(tmp_path):
    # The CLI reads files: write the conftest dicts as JSON-shaped YAML and run both.
    import json
    chip_path, model_path = tmp_path / "chip.yaml", tmp_path / "model.yaml"
    chip_path.write_text(json.dumps(SG2262_CONFIG))
    model_path.write_text(json.dumps(DEEPSEEK_V3_CONFIG))
    r = g5sim.simulate(chip_path, model_path, scope="block", batch=2, ctx=4096, dp=1)
    args = ["run", "--chip", str(chip_path), "--model", str(model_path), "--scope", "block", "--batch", "2",
            "--ctx", "4096", "--dp", "1"]
    cli = run_module(args + ["--json", "-"])
    assert cli.stdout == r.json()
    table = run_module(args)
    assert table.stdout == r.table()


def test_result_fields_agree_with_to_dict(chip, v3):
    r = block(chip, v3, batch=2, ctx=4096)
    d = r.to_dict()
    assert d["total_ns"] == r.total_ns == r.total_ps / 1000
    assert d["hbm_bytes"] == r.hbm_bytes and d["flops"] == r.flops
    assert d["workload"] == {"phase": "decode", "batch": 2, "q_len": 1, "kv_len": 4096, "prefill_attention": "causal",
                             "kv_dtype": "bf16",
                             "mla_mode": "absorb", "prefill_mla_mode": "expanded", "weight_dtype": "bf16",
                             "weight_group_size": 128, "act_dtype": "auto", "kv_read_engine": "gdma",
                             "attn_split": "seq",
                             "kv_append": "in-place", "lm_head_weights": "bf16", "prefetch_weights": True}
    # The configs are named by source and digest; the chip's cores and tokens/s per chip are there.
    assert (d["chip_source"], d["chip_sha256"]) == (chip.source, chip.sha256) and len(chip.sha256) == 64
    assert (d["model_source"], d["model_sha256"]) == (v3.source, v3.sha256)
    assert d["cores"] == r.cores == 64
    assert r.tokens_per_s_per_chip == r.tokens_per_s / r.chips
    assert d["commands"] == r.commands
    assert sum(r.commands.values()) == r.command_count
    assert len(d["ops"]) == len(r.ops)
    for entry, op in zip(d["ops"], r.ops):
        # Every JSON key is an attribute with the same value, times in ns and exact ps.
        # (roofline_ns and bound_share: the JSON prints 3 decimals)
        assert entry == op.to_dict() | {"roofline_ns": entry["roofline_ns"], "bound_share": entry["bound_share"]}
        assert entry["bound_share"] == round(op.bound_share, 3)
        assert entry["op_start_ns"] == op.op_start_ps / 1000 and entry["op_end_ns"] == op.op_end_ps / 1000
    assert [k.kind for k in r.kinds] == [k["kind"] for k in d["kinds"]]


def test_weight_dtype(chip, v3, v3_dict):
    # The dict has no weight_dtype: bf16; the keyword or the dict's key choose another.
    assert block(chip, v3, batch=2, ctx=4096).weight_dtype == "bf16"
    fp8 = block(chip, v3, batch=2, ctx=4096, weight_dtype="fp8")
    assert fp8.weight_dtype == "fp8" and fp8.to_dict()["workload"]["weight_dtype"] == "fp8"
    # q_a_proj's weights: 7168 x 1536 values and 4 B per 128 x 128 block, charged per column:
    # (7168 + 2) x 1536 = 11,013,120 B of the op's traffic instead of 22,020,096.
    bf16_bytes = block(chip, v3, batch=2, ctx=4096).op("q_a_proj").hbm_bytes
    assert bf16_bytes - fp8.op("q_a_proj").hbm_bytes == 22_020_096 - 11_013_120
    assert g5sim.load_model(dict(v3_dict, weight_dtype="int4"), source="V3_INT4").model_type == "deepseek_v3"
    assert block(chip, g5sim.load_model(dict(v3_dict, weight_dtype="int4")), batch=2).weight_dtype == "int4"
    with pytest.raises(g5sim.ConfigError) as raised:
        block(chip, v3, weight_dtype="int3")
    assert raised.value.field == "weight_dtype"


def test_prefetch_can_be_turned_off(chip, v3):
    on = block(chip, v3, batch=2, ctx=4096)
    off = block(chip, v3, batch=2, ctx=4096, prefetch=False)
    assert on.to_dict()["workload"]["prefetch_weights"] is True
    assert off.to_dict()["workload"]["prefetch_weights"] is False
    # Prefetch hides boundary time: never slower, and the tensor engine idles less at boundaries.
    assert on.total_ps <= off.total_ps
    assert on.idle_gap_ps < off.idle_gap_ps
    assert on.idle_gap_ps == sum(op.idle_gap_ps for op in on.ops)
    with pytest.raises(g5sim.ConfigError) as raised:
        block(chip, v3, prefetch="no")
    assert raised.value.field == "prefetch"


def test_replay_gives_the_full_simulation(chip, v3):
    # Nine layers: three dense, six MoE; replay keeps four of the six and derives two.
    replayed = g5sim.simulate(chip, v3, layers=9, ctx=2048)
    full = g5sim.simulate(chip, v3, layers=9, ctx=2048, replay=False)
    assert replayed.replayed_commands > 0 and full.replayed_commands == 0
    assert replayed.simulated_commands + replayed.replayed_commands == replayed.command_count == full.command_count
    strip = lambda r: [line for line in r.json().splitlines() if '"replay":' not in line]  # noqa: E731
    assert strip(replayed) == strip(full)
    assert replayed.to_dict()["replay"] == {"simulated_commands": replayed.simulated_commands,
                                            "replayed_commands": replayed.replayed_commands, "not_replayed": None}
    assert full.to_dict()["replay"]["not_replayed"] == "off"
    with pytest.raises(g5sim.ConfigError) as raised:
        g5sim.simulate(chip, v3, layers=9, replay="yes")
    assert raised.value.field == "replay"


def test_op_lookup_by_layer(chip, v3):
    r = g5sim.simulate(chip, v3, batch=16, ctx=2048, layers=2, tp=1, ep=16, dp=16)
    assert r.layers == 2 and r.scope == "step"
    assert [op.layer for op in r.ops_named("fa2")] == [0, 1]
    assert r.op("fa2", layer=1).layer == 1
    with pytest.raises(KeyError, match="op 'fa2' is in 2 layers"):
        r.op("fa2")
    with pytest.raises(KeyError, match="no op named 'nothing'"):
        r.op("nothing")
    assert r.op("lm_head").layer is None
    # Each layer's ops follow the previous layer's.
    assert r.op("attn_norm", layer=1).op_start_ps >= r.op("fa2", layer=0).op_end_ps


def test_capacity_warning_and_strict_capacity(chip, v3):
    # DeepSeek-V3 on one chip: 671 B parameters in bf16 do not fit 128 GiB.
    r = g5sim.simulate(chip, v3, layers=1, tp=1, ep=1, dp=1)
    assert len(r.warnings) == 1 and "ddr.capacity_bytes" in r.warnings[0]
    with pytest.raises(g5sim.ConfigError) as raised:
        g5sim.simulate(chip, v3, layers=1, tp=1, ep=1, dp=1, strict_capacity=True)
    assert raised.value.field == "strict_capacity"


def test_to_dataframe(chip, v3):
    pandas = pytest.importorskip("pandas")
    r = g5sim.simulate(chip, v3, batch=16, ctx=2048, layers=2, tp=1, ep=16, dp=16)
    frame = r.to_dataframe()
    assert isinstance(frame, pandas.DataFrame)
    assert len(frame) == len(r.ops)
    assert list(frame["name"]) == [op.name for op in r.ops]
    assert list(frame["op_end_ps"]) == [op.op_end_ps for op in r.ops]
    assert frame["layer"].isna().sum() == sum(op.layer is None for op in r.ops)


def test_threads_give_the_serial_results(chip, v3):
    contexts = [1024, 2048, 4096, 8192, 16384, 32768]
    serial = {ctx: block(chip, v3, batch=2, ctx=ctx).json() for ctx in contexts}
    parallel = {}

    def work(ctx):
        parallel[ctx] = block(chip, v3, batch=2, ctx=ctx).json()

    threads = [threading.Thread(target=work, args=(ctx,)) for ctx in contexts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert parallel == serial


def test_python_m_g5sim_runs_the_cli():
    bad = run_module(["run", "--kv-dtype", "int4"], check=False)
    assert bad.returncode == 2
    assert bad.stderr == "g5sim: error: --kv-dtype: expected bf16, fp8, fp8-flashmla, mxfp8, mxfp6, mxfp4 or nvfp4, got 'int4'\n"
    ok = run_module(["check"], check=False)
    assert ok.returncode == 0 and ok.stdout.endswith("ok\n")


def test_shipped_configs_are_found(chip):
    assert os.path.isfile(g5sim.shipped_chip_path())
    assert g5sim.load_chip(g5sim.shipped_chip_path()).name == "SG2262"


def test_internal_errors_are_runtime_errors(chip, v3):
    # A refused run (too many commands) is input; an object of the wrong type is a TypeError;
    # neither is a RuntimeError. (No input reaches an internal error: that would be a bug.)
    with pytest.raises(g5sim.ConfigError) as raised:
        g5sim.simulate(chip, v3, max_commands=10)
    assert raised.value.field == "max_commands"
    with pytest.raises(TypeError):
        g5sim.load_chip(42)


def test_the_stub_covers_the_extension():
    with open(os.path.join(PACKAGE_DIR, "_g5sim.pyi")) as f:
        tree = ast.parse(f.read())
    stubbed = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    public = {name for name in dir(g5sim._g5sim) if not name.startswith("_")}
    assert public == stubbed
    assert os.path.isfile(os.path.join(PACKAGE_DIR, "py.typed"))


def test_docstrings():
    for f in (g5sim.simulate, g5sim.load_chip, g5sim.load_model, g5sim.Result.op, g5sim.Result.to_dataframe):
        assert f.__doc__ and len(f.__doc__) > 40


def test_cores_restricts_the_chip(chip, v3):
    # The same block on 8 of the 64 cores: every kv_cache_read byte is still read once.
    few = block(chip, v3, batch=2, ctx=4096, cores=8)
    assert few.op("kv_cache_read").hbm_bytes == 2 * 4096 * 576 * 2
    assert few.total_ps > block(chip, v3, batch=2, ctx=4096).total_ps
    assert chip.with_cores(8).cores == 8 and chip.cores == 64
    with pytest.raises(g5sim.ConfigError) as raised:
        block(chip, v3, cores=65)
    assert raised.value.field == "cores"
    assert str(raised.value) == "cores: SG2262 has 64 cores, asked for 65"


def test_weight_group_changes_the_int4_bytes(chip, v2_lite):
    """Group 64 carries twice the fp16 scales of group 128 (README: weight formats)."""
    g128 = block(chip, v2_lite, weight_dtype="int4")
    g64 = block(chip, v2_lite, weight_dtype="int4", weight_group=64)
    assert g128.weight_group == 128 and g64.weight_group == 64
    # kv_a_proj [2048, 576]: int4 (1024 + 2 x 16) x 576 at g128, (1024 + 2 x 32) x 576 at g64: the
    # weights' part of the op's bytes grows by 2 x 16 x 576 = 18,432 B.
    assert g64.op("kv_a_proj").hbm_bytes - g128.op("kv_a_proj").hbm_bytes == 18432
    with pytest.raises(g5sim.ConfigError) as error:
        block(chip, v2_lite, weight_group=-1)
    assert error.value.field == "weight_group"


def test_chrome_trace_is_the_clis_trace_byte_for_byte(run_cli, tmp_path):
    path = tmp_path / "t.json"
    assert run_cli(["run", "--layers", "4", "--ctx", "1024", "--trace", str(path),
                                 "--trace-layers", "3"]) == 0
    text = g5sim.chrome_trace(g5sim.shipped_chip_path(), g5sim.shipped_model_path(), trace_layers=(3, 3), layers=4,
                              ctx=1024)
    assert text == path.read_text()
    assert json.loads(text)["traceEvents"]


def test_one_op_alone_is_the_clis_op_byte_for_byte(run_cli, tmp_path, capfd):
    capfd.readouterr()
    path = tmp_path / "mm.json"
    assert run_cli(["op", "matmul", "--m", "64", "--n", "32", "--k", "128", "--json", str(path)]) == 0
    table = capfd.readouterr().out
    mm = g5sim.simulate_matmul(g5sim.shipped_chip_path(), 64, 32, 128)
    assert mm.json() == path.read_text() and mm.table() == table
    # (64 x 128 + 128 x 32) x 2 bytes read, 64 x 32 x 2 written.
    assert mm.unique_bytes == 28672
    fa = g5sim.simulate_attention(g5sim.shipped_chip_path(), kv_len=4096, heads=16, qk_dim=576, v_dim=512,
                                  shared_kv=True)
    assert fa.op == "fa2" and fa.total_ps > 0
    with pytest.raises(g5sim.ConfigError, match=r"^--kv-heads: must divide --heads$"):
        g5sim.simulate_attention(g5sim.shipped_chip_path(), kv_len=64, heads=3, kv_heads=2, qk_dim=64, v_dim=64)


def test_a_collective_alone_is_the_clis_op(run_cli, tmp_path, capfd, chip):
    capfd.readouterr()
    path = tmp_path / "ar.json"
    assert run_cli(["op", "all_reduce", "--bytes", "8388608", "--chips", "4", "--json", str(path)]) == 0
    table = capfd.readouterr().out
    ar = g5sim.simulate_collective(g5sim.shipped_chip_path(), "all_reduce", bytes=8388608, chips=4)
    assert ar.json() == path.read_text() and ar.table() == table
    # A ring over 4 chips: 2 x 3 steps of 8 MiB / 4 on the links.
    assert ar.c2c_bytes == 6 * 2097152
    a2a = g5sim.simulate_collective(chip, "all_to_all", bytes=3145728, chips=4)
    assert a2a.c2c_bytes == 3145728 and a2a.total_ps > 0
    with pytest.raises(g5sim.ConfigError, match=r"is not a collective; valid: all_reduce, all_to_all"):
        g5sim.simulate_collective(chip, "broadcast", bytes=1024, chips=4)
    with pytest.raises(g5sim.ConfigError, match=r"^--chips: a collective needs 2 chips or more, got 1$"):
        g5sim.simulate_collective(chip, "all_reduce", bytes=1024, chips=1)


def test_check_report_is_what_g5sim_check_prints(run_cli, capfd):
    capfd.readouterr()
    assert run_cli(["check"]) == 0
    printed = capfd.readouterr().out
    report = g5sim.check_report(g5sim.load_chip(g5sim.shipped_chip_path()),
                                       g5sim.load_model(g5sim.shipped_model_path()))
    assert printed == report + "ok\n"
    assert report.startswith("chip  ") and "parameters" in report


def test_ctrl_c_stops_a_long_simulate_promptly():
    # A run of ~3 s (V3 prefill 8k, every command simulated) and SIGINT after 0.3 s: the kernel asks
    # the interpreter's signal handlers every 65,536 events (and the lowering after each op), so
    # KeyboardInterrupt comes within a fraction of a second, and the next run is whole.
    import signal
    import time
    # A process started in the background by a non-interactive shell inherits SIGINT ignored, and
    # Python then leaves it so: install the interpreter's own handler for this test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        started = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            g5sim.simulate(g5sim.shipped_chip_path(), g5sim.shipped_model_path(), phase="prefill", ctx=8192, batch=1,
                           replay=False)
        assert time.monotonic() - started < 1.5
    finally:
        signal.signal(signal.SIGINT, previous)
    r = g5sim.simulate(g5sim.shipped_chip_path(), g5sim.shipped_model_path(), layers=2)
    assert r.total_ps > 0


def test_results_pickle_and_compare_equal_to_an_identical_run(chip, v3):
    a = block(chip, v3, batch=2, ctx=4096)
    b = block(chip, v3, batch=2, ctx=4096)
    assert a == b and not (a != b)                     # two identical runs
    assert a != block(chip, v3, batch=2, ctx=8192)
    c = pickle.loads(pickle.dumps(a))
    assert c == a and hash(c) == hash(a)
    # Every output and field comes back exactly: the JSON and table bytes, the picoseconds, doubles.
    assert (c.json(), c.table(), c.to_dict()) == (a.json(), a.table(), a.to_dict())
    assert c.op("kv_cache_read").op_end_ps == a.op("kv_cache_read").op_end_ps
    assert (c.tokens_per_s, c.identity()) == (a.tokens_per_s, a.identity())
    # A pickle that is not one is refused by name.
    with pytest.raises(g5sim.ConfigError, match="not a saved g5sim result"):
        pickle.loads(pickle.dumps(a).replace(b"g5sim_saved_result", b"g5sim_saved_resulx"))


def test_a_hugging_face_dict_is_read_as_one_without_naming_the_schema(v3_dict):
    # A config.json as a dict: no `name`, a `model_type` and `architectures`; the schema is detected.
    hf = {k: v for k, v in v3_dict.items() if k != "name"}
    hf["architectures"] = ["DeepseekV3ForCausalLM"]
    hf["torch_dtype"] = "bfloat16"                      # a key only config.json has
    model = g5sim.load_model(hf, source="config.json")
    assert model.parameter_count == g5sim.load_model(hf, source="config.json", schema="hugging_face").parameter_count
    assert model.name == "config.json" and model.kv_lora_rank == 512
    # A g5sim dict (with `name`) keeps the strict schema: an unknown key is an error.
    with pytest.raises(g5sim.ConfigError, match="torch_dtype: unknown key"):
        g5sim.load_model(dict(v3_dict, torch_dtype="bfloat16"))


def test_diff_and_per_layer_say_where_the_time_went(chip, v3, tmp_path):
    a = g5sim.simulate(chip, v3, layers=4, tp=1, ep=8, dp=8)
    b = g5sim.simulate(chip, v3, layers=4, tp=1, ep=8, dp=8, ctx=32768)
    d = g5sim.diff(a, b, top=3)
    assert d["schema_version"] == 1 and len(d["top_ops"]) == 3
    assert d["total_delta_ns"] == round((b.total_ps - a.total_ps) / 1000, 3)
    assert [l["layer"] for l in d["layers"]] == ["0", "1", "2", "3", "outside"]
    # The same document as the command line's, from files.
    (tmp_path / "a.json").write_text(a.json())
    (tmp_path / "b.json").write_text(b.json())
    cli = run_module(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--top", "3", "--json", "-"])
    files = g5sim.diff(tmp_path / "a.json", tmp_path / "b.json", top=3)
    assert json.loads(cli.stdout) == files and files["kinds"] == d["kinds"]
    with pytest.raises(g5sim.ConfigError, match="^top: "):
        g5sim.diff(a, b, top=-1)
    # Per layer: spans from each layer's ops, the ops outside the layers last.
    frame = a.per_layer()
    assert list(frame["layer"])[:4] == [0, 1, 2, 3] and frame["layer"].isna().iloc[-1]
    assert int(frame["ops"].sum()) == len(a.ops)
    layer3 = [op for op in a.ops if op.layer == 3]
    assert frame["span_ns"].iloc[3] == (max(o.op_end_ps for o in layer3) - min(o.op_start_ps for o in layer3)) / 1000
    # run --top N: the longest ops after the table, then the layers.
    out = run_module(["run", "--layers", "4", "--top", "2"]).stdout
    top = out[out.index("\ntop 2 ops by time"):].splitlines()
    assert top[3].split()[0] == "lm_head" and top[6].startswith("  0 ") and top[-1].startswith("  outside (busy)")


def test_simulate_tells_its_progress_and_stops_when_the_callback_raises():
    seen = []
    r = g5sim.simulate("sg2262", "deepseek-v3", scope="block", progress=lambda *report: seen.append(report))
    # Each op lowered (1..n of n), then the commands simulated, the last report when all are done.
    assert [d for s, d, _ in seen if s == "lowering"] == list(range(1, len(r.ops) + 1))
    assert seen[-1] == ("simulating", r.simulated_commands, r.simulated_commands)

    def stop(stage, done, total):
        raise RuntimeError("enough")
    with pytest.raises(RuntimeError, match="enough"):
        g5sim.simulate("sg2262", "deepseek-v3", scope="block", progress=stop)
    with pytest.raises(g5sim.ConfigError, match="progress: expected a callable"):
        g5sim.simulate("sg2262", "deepseek-v3", progress="yes")


def test_the_module_binds_only_the_public_api():
    # The extension is a front end over the installed headers (<g5sim/...>), as a consumer of
    # find_package(g5sim) is: no floor's internals, no tools/.
    import re
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "module.cpp")
    with open(source, encoding="utf-8") as f:
        quoted = re.findall(r'^#include "([^"]+)"', f.read(), re.M)
    assert quoted and all(path.startswith("g5sim/") for path in quoted), quoted


def test_act_dtype_is_a_keyword_with_its_refusal(chip, v3):
    # fp8 weights with fp8 activations on the test SG2262 (it has an fp8 cube): echoed as asked.
    r = g5sim.simulate(chip, v3, batch=8, ctx=1024, scope="block", tp=1, ep=1, dp=1, weight_dtype="fp8",
                       act_dtype="fp8")
    assert r.act_dtype == "fp8" and r.to_dict()["workload"]["act_dtype"] == "fp8"
    # No fp4 cube: MXFP4 activations are refused, naming the keyword and the first op.
    with pytest.raises(g5sim.ConfigError) as raised:
        g5sim.simulate(chip, v3, batch=8, ctx=1024, scope="block", tp=1, ep=1, dp=1, weight_dtype="mxfp4",
                       act_dtype="mxfp4")
    assert raised.value.field == "act_dtype" and "op 'q_a_proj' multiplies its activations in fp4" in str(raised.value)
    # bf16 weights take bf16 activations only.
    with pytest.raises(g5sim.ConfigError) as raised:
        g5sim.simulate(chip, v3, batch=8, ctx=1024, scope="block", tp=1, ep=1, dp=1, act_dtype="fp8")
    assert raised.value.field == "act_dtype" and "the weights are bf16" in str(raised.value)
