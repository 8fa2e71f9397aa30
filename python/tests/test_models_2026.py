"""gpt-oss and Qwen3-Next from Python: the same families, layouts and byte counts as the C++ tests
(tests/test_models_2026.cpp), read from the shipped YAML and from a config.json held in a dict."""

import g5sim
import pytest


def _by_layer(result, kind):
    return {op.layer: op for op in result.ops if op.kind == kind}


def test_a_sliding_window_layer_reads_the_window_and_a_full_one_the_history():
    # gpt-oss-20b, 2 decodes at 4,096: a token of a layer is 8 KV heads x 2 x 64 x 2 B = 2,048 B;
    # the sliding layer 0 reads 2 x 128 of them, the full layer 1 2 x 4,096.
    r = g5sim.simulate("sg2262", "gpt-oss-20b", batch=2, ctx=4096, layers=2)
    reads = _by_layer(r, "kv_cache_read")
    assert reads[0].kv_bytes == 524_288 == reads[0].hbm_bytes
    assert reads[1].kv_bytes == 16_777_216


def test_a_gated_deltanet_layer_moves_its_state_whatever_the_context():
    # Qwen3-Next, 4 decodes, tp 1: 4 x (read 1,114,240 + written 1,105,920) B in layer 0's delta_rule.
    for ctx in (1000, 60000):
        r = g5sim.simulate("sg2262", "qwen3-next-80b-a3b", batch=4, ctx=ctx, layers=4, tp=1, ep=1, dp=1)
        assert _by_layer(r, "delta_rule")[0].hbm_bytes == 8_880_640
        assert 0 not in _by_layer(r, "kv_cache_read")  # no history in a linear layer
        assert _by_layer(r, "kv_cache_read")[3].kv_bytes == 4 * ctx * 2048


def test_a_config_dict_reads_as_the_shipped_yaml():
    config = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
              "num_hidden_layers": 24, "vocab_size": 201088, "num_attention_heads": 64, "num_key_value_heads": 8,
              "head_dim": 64, "sliding_window": 128, "num_local_experts": 32, "num_experts_per_tok": 4,
              "intermediate_size": 2880, "layer_types": ["sliding_attention", "full_attention"] * 12,
              "quantization_config": {"quant_method": "mxfp4",
                                      "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]}}
    model = g5sim.load_model(config, "gpt-oss-20b-dict")
    assert model.parameter_count == g5sim.load_model("gpt-oss-20b").parameter_count == 20_908_051_776
    bad = dict(config, layer_types=["sliding_attention"] * 23 + ["linear_attention"])
    with pytest.raises(g5sim.ConfigError, match="layer_types"):
        g5sim.load_model(bad)
