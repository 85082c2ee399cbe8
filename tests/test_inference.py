"""LLM inference: the catalog's shapes, KV cache, decode and prefill bounds, memory, MoE."""

import math
from pathlib import Path

import pytest

from roofline_book import InvalidArgument, adhoc, hardware
from roofline_book.llm.block import Block, block_ops
from roofline_book.llm.config import parse_catalog
from roofline_book.llm.inference import (
    Precisions,
    adhoc_model,
    decode_batch_to_ridge,
    expected_experts,
    kv_bytes_per_token,
    kv_cache_bytes,
    layer_ops,
    model,
    models,
    step_floor,
    step_ops,
    step_time,
    weight_bytes,
)
from roofline_book.llm.serving import (
    MEMORY_RESERVE,
    activation_peak,
    max_batch,
    speculative_speedup,
    speculative_tokens,
)
from roofline_book.ops import FlashTile, attention
from roofline_book.present.tables import block_table

H100 = hardware("h100-sxm")
# the catalog's figures are the inputs here; their datasheets are checked in test_hardware
PEAK, BW, CAP = H100.peak_flops("bf16"), H100.memory_bandwidth, H100.memory_capacity


def test_catalog_names_and_sources():
    keys = set(models())
    assert {"llama-2-7b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "mistral-7b"} <= keys
    assert {"qwen2.5-7b", "mixtral-8x7b"} <= keys
    assert model("Llama-3-70B") is model(" llama 3 70b ")
    for m in models().values():
        assert m.source is not None and m.source.title and m.source.url.startswith("https://")
    with pytest.raises(ValueError, match="model 'llama-9' is not in the catalog; allowed: llama"):
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
    assert t.seconds == pytest.approx(streamed / BW, rel=0.01)


def test_gqa_and_quantization_ratios():
    llama3 = model("llama-3-8b")
    one = dict(layer_ops(llama3, 1, 1, 4096))
    # GQA: the cache read per layer is 2 x 8 heads x 128 x 4096 x 2 bytes
    assert one["attention"].bytes_read == 2 * 8 * 128 * 4096 * 2 + 32 * 128 * 2
    # int4 weights (symmetric, GPTQ): half a byte plus a 2-byte FP16 scale per 128 weights in
    # the linear layers; the embedding, the LM head and the norms stay BF16
    matrices = 32 * (4096 * (4096 + 2 * 1024) + 4096**2 + 3 * 4096 * 14336)  # 6,979,321,856
    tables = 2 * 128256 * 4096 + 32 * 2 * 4096 + 4096  # embedding, head, norms
    assert matrices % 128 == 0
    int4 = weight_bytes(llama3, Precisions(weights="int4"))
    assert int4 == matrices * (0.5 + 2 / 128) + 2 * tables  # 5.70 GB, not 4.14
    everything = weight_bytes(llama3, Precisions(weights="int4", quantize_embeddings=True))
    assert everything == (matrices + tables) * (0.5 + 2 / 128)
    # AWQ stores a 4-bit zero point beside each group's scale: 0.5 + 2.5 / 128 = 0.5195 B
    awq = Precisions(weights="int4", zero_point=True)
    assert awq.per_weight() == 0.5 + 2.5 / 128
    assert weight_bytes(llama3, awq) == matrices * (0.5 + 2.5 / 128) + 2 * tables
    # so the weight-streaming batch to the ridge drops by about the same ratio
    b16 = decode_batch_to_ridge(llama3, H100)
    b4 = decode_batch_to_ridge(llama3, H100, Precisions(weights="int4"))
    assert b4 / b16 == pytest.approx((0.5 + 2 / 128) / 2, rel=0.05)


def test_fp8_weight_only_and_w8a8():
    llama3, k, n = model("llama-3-8b"), 4096, 2 * 14336
    # FP8 checkpoints scale per tensor (vLLM) or per channel: no group scales, 1 byte a weight
    w8a16, w8a8 = Precisions(weights="fp8"), Precisions(weights="fp8", activations="fp8")
    assert w8a16.per_weight() == w8a8.per_weight() == 1.0
    assert (w8a16.scheme, w8a8.scheme) == ("W8A16", "W8A8")
    # weight-only: the BF16 ridge, 1-byte weights, b* = R kn / (2kn - 2R (k + n)), about R / 2
    r16 = PEAK / BW
    expected16 = r16 * 1 * k * n / (2 * k * n - r16 * 2 * (k + n))
    assert decode_batch_to_ridge(llama3, H100, w8a16) == pytest.approx(expected16)
    # W8A8: the FP8 Tensor Cores' ridge (twice BF16's), 1-byte weights and activations:
    # b* stays where BF16 had it
    r8 = H100.peak_flops("fp8") / BW
    assert r8 == pytest.approx(2 * r16, rel=1e-4)  # the whitepaper's 1978.9 and 989.4, rounded
    expected8 = r8 * 1 * k * n / (2 * k * n - r8 * 1 * (k + n))
    assert decode_batch_to_ridge(llama3, H100, w8a8) == pytest.approx(expected8)
    assert decode_batch_to_ridge(llama3, H100, w8a8) == pytest.approx(
        decode_batch_to_ridge(llama3, H100),
        rel=1e-4,  # FP8's 1978.9 is 2 x 989.4, rounded
    )
    # lm_head and the embedding stay BF16 (vLLM's FP8 excludes lm_head)
    assert w8a8.table_precision == "bf16"


def test_sliding_window_kv_cache_by_hand():
    mistral, gemma = model("mistral-7b"), model("gemma-2-9b")
    # Mistral 7B: a rolling buffer of W = 4096 tokens in each of its 32 layers (Jiang et al.
    # 2023, section 2): 32 x 4096 x 2 (K, V) x 8 KV heads x 128 x 2 bytes = 0.537 GB
    assert kv_cache_bytes(mistral, 8192) == 32 * 4096 * 2 * 8 * 128 * 2 == 536_870_912
    assert kv_cache_bytes(mistral, 2048) == 32 * 2048 * 2 * 8 * 128 * 2
    # Gemma 2 9B: 21 local layers keep 4096 tokens, 21 global layers all 8192; 8 KV heads of
    # 256: (21 x 8192 + 21 x 4096) x 2 x 8 x 256 x 2 = 2.114 GB
    assert kv_cache_bytes(gemma, 8192) == (21 * 8192 + 21 * 4096) * 2 * 8 * 256 * 2
    assert kv_cache_bytes(gemma, 8192) == 2_113_929_216
    assert [gemma.layer_kind(i) for i in range(4)] == ["local", "global", "local", "global"]
    # full-attention models keep every token
    llama = model("llama-3-8b")
    assert kv_cache_bytes(llama, 8192) == 8192 * kv_bytes_per_token(llama)


def test_window_pairs_written_out():
    # A causal sliding window of w = 3 over n = 6 tokens: query t (1-based) sees
    # min(t, 3) keys, so 1 + 2 + 3 + 3 + 3 + 3 = 15 (query, key) pairs; without the window
    # 1 + 2 + ... + 6 = 21. Each pair costs 4 d FLOPs (QK^T and PV) and 5 of softmax.
    d, per_pair = 8, 4 * 8 + 5
    assert attention(1, 1, 6, 6, d, causal=True, window=3).flops == 15 * per_pair
    assert attention(1, 1, 6, 6, d, causal=True).flops == 21 * per_pair
    # three new queries at the end of 5 tokens (t = 3, 4, 5), w = 4: 3 + 4 + 4 = 11 pairs;
    # the first sees keys 1..3 and the last 2..5, so all 5 keys are read
    chunk = attention(1, 1, 3, 5, d, "fp32", causal=True, window=4)
    assert chunk.flops == 11 * per_pair
    assert chunk.bytes_read == 4 * d * (3 + 2 * 5)  # Q, and K and V of 5 keys
    # one decode query over 10 cached keys, w = 4: 4 pairs, and only 4 keys read
    step = attention(1, 1, 1, 10, d, "fp32", causal=True, window=4)
    assert step.flops == 4 * per_pair and step.bytes_read == 4 * d * (1 + 2 * 4)
    # 4 queries, 2 keys, lower-right: t = -1, 0, 1, 2; w = 1 leaves 0 + 0 + 1 + 1 = 2 pairs
    assert attention(1, 1, 4, 2, d, causal=True, window=1).flops == 2 * per_pair
    # a window at least as long as the context changes nothing
    assert attention(1, 1, 6, 6, d, causal=True, window=6) == attention(1, 1, 6, 6, d, causal=True)


def test_window_rereads_by_tiles():
    # n = 6, w = 3, query blocks of 2 rows, keys counted one by one (block_n = 1). Block 0
    # (t = 1, 2) reads keys 1..2; block 1 (t = 3, 4) keys 1..4; block 2 (t = 5, 6) keys 3..6:
    # 2 + 4 + 4 = 10 rows of K (and V) against the 6 some query sees, 4 read again.
    cost = attention(1, 1, 6, 6, 8, "fp32", causal=True, window=3, tile=FlashTile(2))
    assert cost.reread_bytes == 4 * 2 * 8 * 4  # 4 rows, K and V, d = 8, 4 bytes


def test_window_and_cache_precision_are_checked():
    with pytest.raises(InvalidArgument, match="window needs causal=True"):
        attention(1, 1, 6, 6, 8, window=3)
    with pytest.raises(InvalidArgument, match="window must be"):
        attention(1, 1, 6, 6, 8, causal=True, window=0)
    with pytest.raises(InvalidArgument, match="kv_dtype must equal dtype"):
        attention(1, 1, 6, 6, 8, impl="materialized", kv_dtype="fp8")
    # an FP8 cache: 32 query heads of 128 in BF16, 8 KV heads over 4096 keys in one byte
    fp8 = attention(1, 32, 1, 4096, 128, causal=True, kv_heads=8, kv_dtype="fp8")
    assert fp8.bytes_read == 32 * 128 * 2 + 2 * 8 * 4096 * 128 * 1


def test_layer_ops_carry_stable_ids():
    llama = model("llama-2-7b")
    serving = layer_ops(llama, 1, 1, 4096)
    assert [op.id for op in serving] == [
        "attention_norm",
        "qkv_projection",
        "kv_cache_write",
        "attention",
        "output_projection",
        "residual_add",
        "mlp_norm",
        "mlp_up",
        "activation",
        "mlp_down",
        "mlp_residual_add",
    ]
    eager = layer_ops(llama, 1, 16, 16, kernels="eager", attention_impl="eager")
    assert [op.id for op in eager] == [
        "attention_norm",
        "qkv_projection",
        "rope",
        "attention",
        "output_projection",
        "residual_add",
        "mlp_norm",
        "mlp_gate_projection",
        "mlp_up_projection",
        "activation",
        "mlp_down_projection",
        "mlp_residual_add",
    ]
    assert eager[3].name == "attention (eager)"
    moe = [op.id for op in layer_ops(model("mixtral-8x7b"), 1, 1, 4096)]
    assert moe[7:11] == ["router", "experts_up", "activation", "experts_down"]
    with pytest.raises(InvalidArgument, match="kernels must be one of"):
        layer_ops(llama, 1, 1, 8, kernels="fused")


@pytest.mark.parametrize("key", list(models()))
def test_a_block_for_every_catalog_model(key):
    # Kaplan et al. (2020), Table 1: a forward pass costs 2 N FLOPs per token in its weight
    # matrices; for a mixture of experts N counts the experts a token uses (and the router).
    # A Block is layer 0: DeepSeek-V3's first three layers are dense.
    m = model(key)
    rows = block_table(Block(m, seq=1024), H100)
    matrices = [r for r in rows if "projection" in r.name or r.name == "router"]
    n = m.layer_matrix_parameters(active=True, layer=0)
    assert sum(r.cost.flops for r in matrices) == 2 * 1024 * n
    assert sum(r.share for r in rows) == pytest.approx(1.0)


def test_block_of_gqa_and_window_models_by_hand():
    # Llama-3-8B (config.json: hidden 4096, 32 heads, num_key_value_heads 8, head_dim 128):
    # Q is 4096 wide and K, V 1024 each, so the QKV GEMM is 4096 x 6144
    llama3 = {op.id: op.cost for op in block_ops(Block(model("llama-3-8b"), seq=4096))}
    assert llama3["qkv_projection"].flops == 2 * 4096 * 4096 * (4096 + 2 * 1024)
    # Mistral-7B (sliding_window 4096) over 8192 tokens: query t sees min(t, 4096) keys
    mistral = {op.id: op.cost for op in block_ops(Block(model("mistral-7b"), seq=8192))}
    pairs = 4096 * 4097 // 2 + 4096 * 4096
    assert mistral["attention"].flops == 32 * pairs * (4 * 128 + 5)


def test_max_batch_needs_a_memory_capacity():
    # an ad-hoc device from a peak and a bandwidth publishes no memory to fill
    with pytest.raises(InvalidArgument, match="device must have a memory capacity; x has none"):
        max_batch(model("llama-2-7b"), adhoc("x", 1e15, 1e12), 4096)


def test_sliding_window_attention_by_hand():
    mistral = model("mistral-7b")
    d, s = 128, 4 * 128 + 5  # FLOPs per (query, key) pair and head: QK^T, PV, softmax
    # decode at 8192: the new query sees the last 4096 keys; 4096 x 1024 K and V read
    attn = dict(layer_ops(mistral, 1, 1, 8192))["attention"]
    assert attn.flops == 32 * 4096 * s
    assert attn.bytes_read == 2 * 4096 * 4096 * 2 // 4 + 32 * d * 2
    # prefill of 8192: query t sees min(t, 4096) keys
    pairs = 4096 * 4097 // 2 + 4096 * 4096
    assert dict(layer_ops(mistral, 1, 8192, 8192))["attention"].flops == 32 * pairs * s
    # a chunk of 100 queries at the end of 5000 tokens: each sees 4096 keys, the chunk needs
    # keys 5000 - 100 - 4096 + 2 .. 5000, 4195 of them
    chunk = dict(layer_ops(mistral, 1, 100, 5000))["attention"]
    assert chunk.flops == 32 * 100 * 4096 * s
    assert chunk.bytes_read == 100 * 32 * d * 2 + 2 * 4195 * 8 * d * 2
    # Gemma 2: the global layers see all 8192, the local ones 4096
    gemma = dict(step_ops(model("gemma-2-9b"), 1, 1, 8192))
    s256 = 4 * 256 + 5
    assert gemma["attention, global (x 21)"].flops == 21 * 16 * 8192 * s256
    assert gemma["attention, sliding window (x 21)"].flops == 21 * 16 * 4096 * s256
    assert "activation (GeGLU) (x 42)" in gemma  # gelu_pytorch_tanh, not SwiGLU


def test_sliding_window_max_batch_by_hand():
    # Gemma-2-9B: 42 layers of hidden 3584, 16 query heads and 8 KV heads of 256, MLP 14336,
    # vocabulary 256000 tied; weights and norms in BF16
    h, q, kv, f = 3584, 16 * 256, 8 * 256, 14336
    params = 42 * (2 * h * q + 2 * h * kv + 3 * h * f + 2 * h) + 256000 * h + h
    assert params / 1e9 == pytest.approx(9.24, abs=0.01)
    act = 2 * 8192 * (h + 3 * f) + 4 * 256 * 256000  # MLP of 8192 tokens, 256 FP32 logit rows
    free = 0.9 * CAP - 2 * params - act
    assert max_batch(model("gemma-2-9b"), H100, 8192) == int(free // 2_113_929_216)
    mistral = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096)
    mistral += 2 * 32000 * 4096 + 4096
    act = 2 * 8192 * (4096 + 3 * 14336) + 4 * 256 * 32000
    free = 0.9 * CAP - 2 * mistral - act
    assert max_batch(model("mistral-7b"), H100, 8192) == int(free // 536_870_912)


def test_catalog_rejects_unknown_keys():
    text = (Path(__file__).parents[1] / "roofline_book/llm/data/models.toml").read_text()
    misspelt = text.replace("sliding_window = 4096\nsource", "sliding_widow = 4096\nsource", 1)
    assert misspelt != text
    with pytest.raises(ValueError, match=r"models\.toml: model 'mistral-7b' has an unknown key "
                       r"'sliding_widow'; allowed: name, source, hidden"):  # fmt: skip
        parse_catalog(misspelt)
    with pytest.raises(ValueError, match=r"mine\.toml: model 'mistral-7b'"):
        parse_catalog(misspelt, "mine.toml")
    source = '[sources.s]\ntitle = "t"\nurll = "https://example.org"\n'
    with pytest.raises(ValueError, match=r"x\.toml: source 's' has an unknown key 'urll'"):
        parse_catalog(source, "x.toml")
    with pytest.raises(ValueError, match="layer_pattern kinds"):
        parse_catalog(text.replace('["local", "global"]', '["local", "glboal"]'))


def test_decode_batch_to_ridge_by_hand():
    m = model("llama-2-7b")
    k, n, r = 4096, 2 * 11008, PEAK / BW
    expected = r * 2 * k * n / (2 * k * n - r * 2 * (k + n))
    assert decode_batch_to_ridge(m, H100) == pytest.approx(expected)
    # Mixtral: each of 8 experts gets 2/8 of the rows, so 4 times the dense batch
    k, n = 4096, 2 * 14336
    dense = r * 2 * k * n / (2 * k * n - r * 2 * (k + n))
    assert decode_batch_to_ridge(model("mixtral-8x7b"), H100) == pytest.approx(8 / 2 * dense)


def test_max_batch_is_vllms_rule():
    # vLLM: num_gpu_blocks = (total x gpu_memory_utilization - peak) // block size, where
    # peak = weights + activation peak (+ non-torch memory, not modelled here)
    m = model("llama-2-7b")
    act = 2 * 8192 * (4096 + 3 * 11008) + 4 * 256 * 32000  # 0.64 GB
    assert activation_peak(m) == act
    assert MEMORY_RESERVE == pytest.approx(1 - 0.9)
    free = 0.9 * CAP - 2 * 6_738_415_616 - act
    assert max_batch(m, H100, 4096) == math.floor(free / (4096 * 2 * 32 * 32 * 128 * 2))
    assert max_batch(m, H100, 4096, activations=0) == math.floor(
        (0.9 * CAP - 2 * 6_738_415_616) / (4096 * 524_288)
    )
    assert max_batch(model("llama-2-70b"), H100, 4096) == 0  # 138 GB of weights: no fit


def test_step_floor_is_below_the_sum_and_is_max_of_flops_and_bytes():
    m, T = model("llama-2-7b"), 4096
    # prefill: every FLOP on the matrix units except softmax's; the weight GEMMs'
    # 2 T (4 h^2 + 3 h F) per layer, QK^T and PV over causal pairs, one LM-head row
    matrix = 32 * (2 * T * (4 * 4096**2 + 3 * 4096 * 11008) + 4 * 128 * 32 * T * (T + 1) // 2)
    matrix += 2 * 4096 * 32000
    floor = step_floor(m, 1, T, T, H100)
    assert floor.resource == "matrix"
    assert floor.seconds == pytest.approx(matrix / PEAK)  # 58.1 ms at 989.4 TFLOP/s
    no_overlap = step_time(step_ops(m, 1, T, T), H100, Precisions()).seconds
    assert floor.seconds < no_overlap < 1.2 * floor.seconds
    # decode at batch 1: the weights (one embedding row), the cache, the new K and V
    weights = 2 * 6_738_415_616 - 2 * 32000 * 4096 + 2 * 4096
    cache = 32 * 2 * 4096 * 4096 * 2  # 4095 cached tokens read and the new one written
    logits = 2 * 32000
    decode = step_floor(m, 1, 1, T, H100)
    assert decode.resource == "hbm"
    assert decode.seconds == pytest.approx((weights + cache + logits) / BW)


def test_step_floor_counts_a_fused_multiply_add_as_one_lane_slot():
    # a fused step does the kernels' lane work, no more: each RMSNorm's acc + x * x is
    # one FMA per element, 65 norms (2 per layer x 32 layers, and the final one) over
    # 4096 x 4096 elements; counting the pair as two slots would put the bound too high
    m, T = model("llama-2-7b"), 4096
    ops = step_ops(m, 1, T, T)
    slots = sum(cost.vector_flops for _, cost in ops) - 65 * T * 4096
    floor = step_floor(m, 1, T, T, H100)
    assert floor.by_resource["vector"] == pytest.approx(slots / H100.vector_op_rate("bf16"))


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


def test_moe_rows_each_carry_their_own_weights():
    # Mixtral-8x7B (config.json: hidden_size 4096, intermediate_size 14336, num_local_experts 8,
    # num_experts_per_tok 2), decode batch 64 in BF16. The step's 64 tokens touch
    # 8 (1 - (6/8)^64) experts (uniform routing), each row reading those experts' own matrices:
    # experts up: gate and up, 4096 x 2 x 14336 x 2 B = 234_881_024 B per expert;
    # experts down: 14336 x 4096 x 2 B = 117_440_512 B per expert.
    touched = 8 * (1 - 0.75**64)
    ops = dict(layer_ops(model("mixtral-8x7b"), 64, 1, 4096))
    up, down = ops["experts up"], ops["experts down"]
    # 64 tokens x 2 experts = 128 rows in: 128 x 4096 x 2 B up, 128 x 14336 x 2 B down
    assert up.bytes_read == pytest.approx(128 * 4096 * 2 + touched * 234_881_024, abs=1)
    assert down.bytes_read == pytest.approx(128 * 14336 * 2 + touched * 117_440_512, abs=1)
    assert down.bytes_read > 0.94e9  # all 8 experts' down matrices, not one (117 MB)
    # the rows' total is what the step reads: both matrices of every touched expert
    assert up.bytes_read + down.bytes_read == 128 * 4096 * 2 + 128 * 14336 * 2 + round(
        touched * (234_881_024 + 117_440_512)
    )
    # each row's intensity is its own GEMM's: 2 x 128 x 14336 x 4096 FLOPs over its bytes
    assert down.intensity == pytest.approx(2 * 128 * 14336 * 4096 / down.bytes)


def test_decode_attention_is_aligned_bottom_right():
    m = adhoc_model("tiny", hidden=256, layers=2, heads=4, kv_heads=2, ffn=512, vocab=1000)
    step = dict(layer_ops(m, 1, 1, 1024))["attention"]
    assert step.matrix_flops == 4 * 4 * 1024 * 64  # the new query sees all 1024 keys


def test_speculative_decoding():
    assert speculative_tokens(0.8, 4) == pytest.approx((1 - 0.8**5) / 0.2)
    # Leviathan et al. 2023, Theorem 3.8: (1 - a^(g+1)) / ((1 - a)(g c + 1))
    assert speculative_speedup(0.8, 4, 0.05) == pytest.approx(0.67232 / (0.2 * 1.2))  # 2.80
    assert round(speculative_speedup(0.8, 4, 0.05), 2) == 2.80
    assert speculative_speedup(0.8, 4, 0.1) == pytest.approx(0.67232 / (0.2 * 1.4))  # 2.40
    assert speculative_speedup(0.8, 4, 0.0) == speculative_tokens(0.8, 4)
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
