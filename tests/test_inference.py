"""LLM inference: the catalog's shapes, KV cache, decode and prefill bounds, memory, MoE."""

import math

import pytest

from roofline_book import hardware
from roofline_book.inference import (
    Precisions,
    adhoc_model,
    decode_batch_to_ridge,
    expected_experts,
    kv_bytes_per_token,
    layer_ops,
    max_batch,
    model,
    models,
    speculative_tokens,
    step_ops,
    step_time,
    weight_bytes,
)

H100 = hardware("h100-sxm")


def test_catalog_names_and_sources():
    keys = set(models())
    assert {"llama-2-7b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "mistral-7b"} <= keys
    assert {"qwen2.5-7b", "mixtral-8x7b"} <= keys
    assert model("Llama-3-70B") is model(" llama 3 70b ")
    for m in models().values():
        assert m.source is not None and m.source.title and m.source.url.startswith("https://")
    with pytest.raises(ValueError, match="unknown model 'llama-9'; allowed: llama-2-7b"):
        model("llama-9")


def test_parameter_counts_match_the_names():
    # the published sizes, to the precision the names give them
    assert model("llama-2-7b").parameters() == 6_738_415_616
    assert model("llama-2-70b").parameters() / 1e9 == pytest.approx(69.0, abs=0.5)
    assert model("llama-3-8b").parameters() / 1e9 == pytest.approx(8.03, abs=0.01)
    mixtral = model("mixtral-8x7b")
    assert mixtral.parameters() / 1e9 == pytest.approx(46.7, abs=0.1)
    assert mixtral.parameters(active=True) / 1e9 == pytest.approx(12.9, abs=0.1)


def test_kv_bytes_per_token_by_hand():
    # 2 (K and V) x layers x KV heads x head dim x bytes
    assert kv_bytes_per_token(model("llama-2-7b")) == 2 * 32 * 32 * 128 * 2  # 512 KiB
    assert kv_bytes_per_token(model("llama-3-8b")) == 2 * 32 * 8 * 128 * 2  # GQA: 1/4
    assert kv_bytes_per_token(model("llama-3-8b"), Precisions(kv="fp8")) == 2 * 32 * 8 * 128
    assert kv_bytes_per_token(model("llama-2-70b")) == 2 * 80 * 8 * 128 * 2


def test_decode_at_batch_one_streams_weights_and_cache():
    m, ctx = model("llama-2-7b"), 4096
    t = step_time(step_ops(m, 1, 1, ctx), H100, Precisions())
    # every operator is HBM-bound at batch 1: (weights + KV cache) / B, plus a little
    # activation traffic; the embedding reads one row, not the whole table
    streamed = weight_bytes(m) - 32000 * 4096 * 2 + ctx * kv_bytes_per_token(m)
    assert t.memory == t.seconds
    assert t.seconds == pytest.approx(streamed / 3.35e12, rel=0.01)


def test_gqa_and_quantization_ratios():
    llama3 = model("llama-3-8b")
    one = dict(layer_ops(llama3, 1, 1, 4096))
    # GQA: the cache read per layer is 2 x 8 heads x 128 x 4096 x 2 bytes
    assert one["attention"].bytes_read == 2 * 8 * 128 * 4096 * 2 + 32 * 128 * 2
    # int4 weights: half a byte plus a 2-byte scale per 128 weights, 0.5156 bytes
    bf16, int4 = weight_bytes(llama3), weight_bytes(llama3, Precisions(weights="int4"))
    assert int4 / bf16 == pytest.approx((0.5 + 2 / 128) / 2, rel=1e-4)
    # so the weight-streaming batch to the ridge drops by about the same ratio
    b16 = decode_batch_to_ridge(llama3, H100)
    b4 = decode_batch_to_ridge(llama3, H100, Precisions(weights="int4"))
    assert b4 / b16 == pytest.approx((0.5 + 2 / 128) / 2, rel=0.05)


def test_decode_batch_to_ridge_by_hand():
    m = model("llama-2-7b")
    k, n, r = 4096, 2 * 11008, 989.5e12 / 3.35e12
    expected = r * 2 * k * n / (2 * k * n - r * 2 * (k + n))
    assert decode_batch_to_ridge(m, H100) == pytest.approx(expected)
    # Mixtral: each of 8 experts gets 2/8 of the rows, so 4 times the dense batch
    k, n = 4096, 2 * 14336
    dense = r * 2 * k * n / (2 * k * n - r * 2 * (k + n))
    assert decode_batch_to_ridge(model("mixtral-8x7b"), H100) == pytest.approx(8 / 2 * dense)


def test_max_batch_and_capacity():
    m = model("llama-2-7b")
    free = 0.9 * 80e9 - weight_bytes(m)
    assert max_batch(m, H100, 4096) == math.floor(free / (4096 * 2 * 32 * 32 * 128 * 2))
    assert max_batch(model("llama-2-70b"), H100, 4096) == 0  # 138 GB of weights: no fit


def test_moe_reads_the_experts_its_tokens_touch():
    assert expected_experts(8, 2, 1) == pytest.approx(2.0)
    assert expected_experts(8, 2, 2) == pytest.approx(8 * (1 - 0.75**2))
    mixtral = model("mixtral-8x7b")
    per_expert = 3 * 4096 * 14336 * 2
    one = dict(layer_ops(mixtral, 1, 1, 4096))
    two = dict(layer_ops(mixtral, 64, 1, 4096))
    weights_read = sum(c.bytes_read for n, c in one.items() if n.startswith("experts"))
    assert weights_read == pytest.approx(2 * per_expert, rel=0.01)  # top-2 of 8
    weights_64 = sum(c.bytes_read for n, c in two.items() if n.startswith("experts"))
    assert weights_64 == pytest.approx(expected_experts(8, 2, 64) * per_expert, rel=0.01)


def test_decode_attention_is_aligned_bottom_right():
    m = adhoc_model("tiny", hidden=256, layers=2, heads=4, kv_heads=2, ffn=512, vocab=1000)
    step = dict(layer_ops(m, 1, 1, 1024))["attention"]
    assert step.matrix_flops == 4 * 4 * 1024 * 64  # the new query sees all 1024 keys


def test_speculative_decoding():
    assert speculative_tokens(0.8, 4) == pytest.approx((1 - 0.8**5) / 0.2)
    with pytest.raises(ValueError, match="acceptance must be below 1"):
        speculative_tokens(1.0, 4)


def test_bad_input():
    m = model("llama-2-7b")
    with pytest.raises(ValueError, match="context window"):
        step_ops(m, 1, 1, m.max_context + 1)
    with pytest.raises(ValueError, match="new .* must be <= context"):
        layer_ops(m, 1, 8, 4)
    with pytest.raises(ValueError, match="not a known precision"):
        Precisions(weights="int3")
    with pytest.raises(ValueError, match="kv_heads"):
        adhoc_model("x", hidden=256, layers=1, heads=4, kv_heads=3, ffn=8, vocab=8)
