"""Seed 003's acceptance list, as the Python host writes it: the chip and models are conftest
dicts, intervals are asserted on op_start_ns / op_end_ns (never on sums of durations), and every
number is exact: no tolerance. Numbered as the spec numbers its points."""

import g5sim
import pytest

from conftest import DEEPSEEK_V3_CONFIG, block

# 1. One decode step's latent KV read = B x s_ctx x (d_c + d_rope) x e, with no head count in it.


@pytest.mark.parametrize("batch, ctx, kv_dtype, expected", [
    (1, 4096, "bf16", 4_718_592),    # 1 x 4096 x (512 + 64) x 2
    (1, 4096, "fp8", 2_359_296),     # 1 x 4096 x 576 x 1 (the spec's use case 1)
    (3, 1000, "fp8", 1_728_000),     # 3 x 1000 x 576 x 1
    (32, 777, "bf16", 28_643_328),   # 32 x 777 x 576 x 2 (ragged chunks over 64 cores)
])
def test_1_latent_read_bytes(chip, v3, batch, ctx, kv_dtype, expected):
    r = block(chip, v3, batch=batch, ctx=ctx, kv_dtype=kv_dtype)
    read = r.op("kv_cache_read")
    assert read.kv_bytes == expected     # the graph's count
    assert read.hbm_bytes == expected    # what its DMA commands moved: every byte once
    assert r.kv_len == ctx and r.batch == batch


def test_1_latent_read_has_no_heads(chip, v3_dict):
    # Same latent (512 + 64), other heads: 16 heads, d_nope 64, d_v 96. 2 x 4096 x 576 x 2 = 9,437,184.
    other = dict(v3_dict, num_attention_heads=16, qk_nope_head_dim=64, v_head_dim=96)
    for model in (v3_dict, other):
        r = block(chip, g5sim.load_model(model), batch=2, ctx=4096)
        assert r.op("kv_cache_read").hbm_bytes == 9_437_184


# 2. MLA's decode KV read over the equivalent MHA's = (d_c + d_rope) / (2 n_h d_h), about 1/57.

def test_2_ratio_to_equivalent_mha(chip, v3):
    # DeepSeek-V3's 128 heads of d_h = 128 as a plain multi-head model, every head its own K and V:
    # 1 x 4096 x 2 x 128 x 128 x 2 = 268,435,456 bytes; MLA 1 x 4096 x 576 x 2 = 4,718,592.
    mha = g5sim.load_model({
        "name": "DeepSeek-V3-as-MHA", "model_type": "llama", "hidden_size": 7168, "num_hidden_layers": 61,
        "vocab_size": 129280, "intermediate_size": 18432, "num_attention_heads": 128,
        "num_key_value_heads": 128, "head_dim": 128,
    }, source="V3_AS_MHA")
    mla_bytes = block(chip, v3, batch=1, ctx=4096).op("kv_cache_read").hbm_bytes
    mha_bytes = block(chip, mha, batch=1, ctx=4096).op("kv_cache_read").hbm_bytes
    assert mla_bytes == 4_718_592
    assert mha_bytes == 268_435_456
    assert mla_bytes * (2 * 128 * 128) == mha_bytes * (512 + 64)   # the ratio, exact


def test_2_v2_lite_absorb_and_naive_cache(chip, v2_lite):
    # Seed 002's V2-Lite counts per token per layer: absorb caches the latent, 512 + 64 = 576
    # elements; the naive (expanded) cache holds 16 heads x (192 + 128) = 5,120. B = 2, 1000 tokens, bf16.
    absorb = block(chip, v2_lite, batch=2, ctx=1000, mla_mode="absorb").op("kv_cache_read")
    naive = block(chip, v2_lite, batch=2, ctx=1000, mla_mode="expanded").op("kv_cache_read")
    assert absorb.hbm_bytes == 2 * 1000 * 576 * 2 == 2_304_000
    assert naive.hbm_bytes == 2 * 1000 * 5120 * 2 == 20_480_000


# 3. The decode KV read grows strictly with the history length.

def test_3_monotone_in_ctx(chip, v3):
    previous_bytes, previous_span = 0, 0
    for ctx in (1024, 2048, 4096, 8192, 16384, 32768):
        read = block(chip, v3, batch=1, ctx=ctx).op("kv_cache_read")
        assert read.hbm_bytes == ctx * 576 * 2
        span = read.op_end_ps - read.op_start_ps
        assert read.hbm_bytes > previous_bytes
        assert span > previous_span
        previous_bytes, previous_span = read.hbm_bytes, span


# 4. Prefill (q_len == kv_len): no history read, and bytes and FLOPs as before the feature.

def test_4_prefill_reads_no_history_and_does_not_drift(chip, v3):
    # The baseline is the full-square attention the spec's prefill had; the default, causal, is
    # checked after it.
    gdma = block(chip, v3, phase="prefill", batch=1, ctx=1024, prefill_mla_mode="absorb", prefill_attention="full")
    sdma = block(chip, v3, phase="prefill", batch=1, ctx=1024, prefill_mla_mode="absorb", prefill_attention="full",
                 kv_read_engine="sdma")
    assert gdma.q_len == gdma.kv_len == 1024
    names = [op.name for op in gdma.ops]
    assert "kv_cache_read" not in names and "fa2_combine" not in names
    with pytest.raises(KeyError):
        gdma.op("kv_cache_read")
    fa2 = gdma.op("fa2")
    # 2 x B x q x n_h x kv x (576 + 512) = 2 x 1 x 1024 x 128 x 1024 x 1088
    assert fa2.flops == 292_057_776_128
    # It attends the 1024 latent rows written this step: 1024 x 576 x 2.
    assert fa2.kv_bytes == 1_179_648
    # The block's matmuls, T = 1024: q_a 2 x 1024 x 7168 x 1536 = 22,548,578,304;
    # q_b 2 x 1024 x 1536 x 24,576 = 77,309,411,328; kv_a 2 x 1024 x 7168 x 576 = 8,455,716,864;
    # q_absorb 128 x 2 x 1024 x 128 x 512 = 17,179,869,184; v_up the same; o_proj
    # 2 x 1024 x 16,384 x 7168 = 240,518,168,576. Sum 383,191,613,440.
    assert sum(op.flops for op in gdma.ops if op.kind == "matmul") == 383_191_613_440
    assert gdma.flops == 675_313_093_632          # with fa2 and the row ops (the C++ golden's)
    assert gdma.hbm_bytes == 3_269_066_752
    # The read route concerns decode only: every op identical, intervals included.
    assert [op.to_dict() for op in gdma.ops] == [op.to_dict() for op in sdma.ops]
    # Causal (the default): query t sees t + 1 keys, 1024 x 1025 / 2 = 524,800 pairs, so fa2 does
    # 2 x 128 x 524,800 x 1088 = 146,171,494,400 FLOPs, still with no history read.
    causal = block(chip, v3, phase="prefill", batch=1, ctx=1024, prefill_mla_mode="absorb")
    assert causal.op("fa2").flops == 146_171_494_400
    assert "kv_cache_read" not in [op.name for op in causal.ops]


# 5. A missing kv_lora_rank or qk_rope_head_dim raises ValueError naming the field and the source.

@pytest.mark.parametrize("field", ["kv_lora_rank", "qk_rope_head_dim"])
def test_5_missing_latent_field_raises(v3_dict, field):
    del v3_dict[field]
    with pytest.raises(ValueError) as raised:
        g5sim.load_model(v3_dict, source="DEEPSEEK_V3_CONFIG")
    assert str(raised.value) == f"DEEPSEEK_V3_CONFIG: missing required field '{field}'"
    assert isinstance(raised.value, g5sim.ConfigError)
    assert raised.value.field == field
    assert raised.value.source == "DEEPSEEK_V3_CONFIG"
    assert raised.value.line is None and raised.value.column is None


@pytest.mark.parametrize("field", ["kv_lora_rank", "qk_rope_head_dim"])
def test_5_missing_latent_field_in_a_hugging_face_config(v3_dict, field):
    hf = {k: v for k, v in v3_dict.items() if k not in ("name", field)}
    hf["architectures"] = ["DeepseekV3ForCausalLM"]   # one of the many keys g5sim does not read
    with pytest.raises(g5sim.ConfigError) as raised:
        g5sim.load_model(hf, source="config.json", schema="hugging_face")
    assert str(raised.value) == f"config.json: missing required field '{field}'"
    assert (raised.value.field, raised.value.source) == (field, "config.json")


def test_5_missing_field_in_a_file_names_path_and_line(tmp_path):
    text = "".join(f"{k}: {v}\n" for k, v in DEEPSEEK_V3_CONFIG.items() if k != "kv_lora_rank")
    path = tmp_path / "v3-missing.yaml"
    path.write_text(text)
    with pytest.raises(g5sim.ConfigError) as raised:
        g5sim.load_model(path)
    # The mapping starts at line 1, column 1 of the file.
    assert str(raised.value) == f"{path}:1:1: missing required field 'kv_lora_rank'"
    assert (raised.value.source, raised.value.field, raised.value.line, raised.value.column) == \
        (str(path), "kv_lora_rank", 1, 1)


# 6. Overlap and order, asserted on intervals: the GDMA route reads beside fa2, the SDMA route
#    strictly before it.

def test_6_gdma_read_overlaps_fa2(chip, v3):
    r = block(chip, v3, batch=4, ctx=32768, kv_read_engine="gdma")
    read, fa2 = r.op("kv_cache_read"), r.op("fa2")
    assert read.op_end_ns > read.op_start_ns and fa2.op_end_ns > fa2.op_start_ns   # not folded away
    assert read.op_start_ns < fa2.op_end_ns and fa2.op_start_ns < read.op_end_ns   # they intersect
    # The read starts before fa2 (its first chunks follow the absorption) and ends before it (fa2
    # still computes on the last chunk).
    assert read.op_start_ps < fa2.op_start_ps and read.op_end_ps < fa2.op_end_ps


def test_6_sdma_read_strictly_before_fa2(chip, v3):
    r = block(chip, v3, batch=4, ctx=8192, kv_read_engine="sdma")
    read, fa2 = r.op("kv_cache_read"), r.op("fa2")
    assert r.kv_read_engine == "sdma"
    assert read.op_end_ns > read.op_start_ns
    # The barrier passes the tick the last core's read ends; fa2's first command issues then.
    assert fa2.op_start_ns >= read.op_end_ns
    assert fa2.op_start_ps == read.op_end_ps
    assert "SDMA" in read.engines and "GDMA" not in read.engines
    assert read.hbm_bytes == 4 * 8192 * 576 * 2 == 37_748_736   # the same bytes on either route


# 7. fa2's KV bytes are the real latent read, not a tiling buffer's size.

def test_7_fa2_kv_bytes_are_the_latent_read(chip_dict, v3):
    half = dict(chip_dict, name="SG2262-half-lmem", lmem_bytes_per_core=1048576)
    big = block(g5sim.load_chip(chip_dict, source="SG2262_CONFIG"), v3, batch=2, ctx=8192)
    small = block(g5sim.load_chip(half, source="SG2262_HALF_LMEM"), v3, batch=2, ctx=8192)
    for r in (big, small):
        fa2 = r.op("fa2")
        assert fa2.kv_bytes == 2 * 8192 * 576 * 2 == 18_874_368
        assert fa2.kv_bytes == r.op("kv_cache_read").hbm_bytes
    # The tiles did change with the local memory; the bytes did not.
    assert big.op("fa2").peak_lmem_bytes != small.op("fa2").peak_lmem_bytes
    assert small.op("fa2").peak_lmem_bytes <= 1048576


# 8. Strict and in memory: the same call twice gives the same bytes, to the last character.

def test_8_deterministic(chip, v3):
    a = block(chip, v3, batch=3, ctx=5000, kv_dtype="fp8")
    b = block(chip, v3, batch=3, ctx=5000, kv_dtype="fp8")
    assert a.json() == b.json()
    assert a.to_dict()["ops"] == b.to_dict()["ops"]
