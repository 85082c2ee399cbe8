"""The roofline model itself."""

import math

import numpy as np  # intensity grids for attainable()
import pytest

from roofline_book import (
    achieved,
    attainable,
    gemm,
    gemm_tokens_to_ridge,
    ridge_point,
    roof_kind,
    square_gemm_size_to_ridge,
    time_bound,
    time_lower_bound,
)
from roofline_book.roofline.roofs import TimeBound, fraction_of_roof

P, B = 100e12, 1e12  # the reference chapter's example device


def test_ridge_point_example():
    assert ridge_point(P, B) == 100.0


def test_attainable_scalar_and_array():
    assert attainable(50, P, B) == 50e12
    assert attainable(500, P, B) == P
    assert isinstance(attainable(1, P, B), float)
    grid = np.logspace(-2, 4, 7)
    out = attainable(grid, P, B)
    assert out.shape == grid.shape
    np.testing.assert_allclose(out, np.minimum(P, B * grid))
    assert attainable([[1, 2], [3, 4]], P, B).shape == (2, 2)


def test_attainable_is_monotone_and_capped():
    grid = np.logspace(-3, 5, 200)
    out = attainable(grid, P, B)
    assert np.all(np.diff(out) >= 0) and out.max() == P


def test_bounds_of_reference_operators():
    assert roof_kind(1 / 6, P, B) == "memory"
    assert roof_kind(gemm(4096, 4096, 4096).intensity, P, B) == "compute"
    assert roof_kind(100, P, B) == "compute"  # at the ridge, both roofs agree
    assert roof_kind(99.999, P, B) == "memory"


def test_time_lower_bound():
    c = gemm(4096, 4096, 4096)
    t = time_lower_bound(c, P, B)
    assert t.compute == pytest.approx(137_438_953_472 / 100e12)
    assert t.memory == pytest.approx(3 * 2 * 4096**2 / 1e12)
    assert t.seconds == t.compute and t.bound == "compute"
    with pytest.raises(TypeError, match="Cost"):
        time_lower_bound(5, P, B)


def test_achieved_forty_of_a_hundred():
    assert achieved(40e12, 1.0) == 40e12
    assert fraction_of_roof(40e12, 1.0, 1365, P, B) == pytest.approx(0.4)
    # memory-bound case: the roof at I = 1/6 is 1/6 TFLOP/s
    assert fraction_of_roof(1e11, 1.0, 1 / 6, P, B) == pytest.approx(0.6)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_bad_intensity(bad):
    with pytest.raises(ValueError, match="intensity"):
        attainable(bad, P, B)
    with pytest.raises(ValueError, match="intensity"):
        attainable([1.0, bad], P, B)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"peak_flops": 0}, "peak_flops"),
        ({"bandwidth": -1}, "bandwidth"),
        ({"peak_flops": float("nan")}, "peak_flops"),
    ],
)
def test_bad_device_figures(kwargs, match):
    args = {"intensity": 1.0, "peak_flops": P, "bandwidth": B} | kwargs
    with pytest.raises(ValueError, match=match):
        attainable(**args)


def test_type_errors():
    with pytest.raises(TypeError, match="intensity"):
        attainable("10", P, B)
    with pytest.raises(TypeError, match="intensity"):
        attainable(True, P, B)
    with pytest.raises(TypeError, match="peak_flops"):
        ridge_point(True, B)
    with pytest.raises(TypeError, match="intensity"):
        attainable(np.array([True, False]), P, B)


# --------------------------------------------------------------------------
# Where a GEMM reaches a ridge point

# a fixed ridge for the solvers: 989.5 TFLOP/s over 3.35 TB/s, about 295.4 FLOP/byte (H100 SXM
# datasheet: 1,979 TFLOP/s BF16 with sparsity, halved)
H100_RIDGE = 989.5e12 / 3.35e12


def test_gemm_tokens_to_ridge_example_device():
    # K = N = 4096, s = 2, ridge 100: 100 * 2 * 4096^2 / (2 * 4096^2 - 100 * 2 * 8192)
    m_star = gemm_tokens_to_ridge(100.0, 4096, 4096, "bf16")
    assert m_star == pytest.approx(409_600 / 3_896)  # about 105.13
    assert gemm(105, 4096, 4096).intensity < 100 <= gemm(106, 4096, 4096).intensity


@pytest.mark.parametrize(
    "ridge,k,n,dtype,s",
    [
        (H100_RIDGE, 4096, 4096, "bf16", 2),  # about 345.2 tokens
        (H100_RIDGE, 4096, 11008, "bf16", 2),  # about 327.8
        (H100_RIDGE, 4096, 4096, "fp32", 4),
        (50.0, 1024, 256, "fp8", 1),
    ],
)
def test_gemm_tokens_to_ridge_solves_the_intensity(ridge, k, n, dtype, s):
    m_star = gemm_tokens_to_ridge(ridge, k, n, dtype)
    assert m_star == pytest.approx(ridge * s * k * n / (2 * k * n - ridge * s * (k + n)))
    first = math.ceil(m_star)
    assert gemm(first, k, n, dtype).intensity >= ridge
    assert gemm(first - 1, k, n, dtype).intensity < ridge


def test_gemm_tokens_to_ridge_h100_values():
    # 4096 R / (4096 - 2R) with R about 295.4: 345.15 tokens, so 346 whole tokens
    assert gemm_tokens_to_ridge(H100_RIDGE, 4096, 4096) == pytest.approx(345.1529, rel=1e-6)
    assert math.ceil(gemm_tokens_to_ridge(H100_RIDGE, 4096, 4096)) == 346


def test_gemm_tokens_to_ridge_unreachable_is_inf():
    # the limit 2KN / (s (K + N)) is 2 * 4096^2 / (2 * 8192) = 2048 FLOP/byte in BF16
    assert gemm_tokens_to_ridge(2047.0, 4096, 4096) > 1e6
    assert gemm_tokens_to_ridge(2048.0, 4096, 4096) == math.inf
    assert gemm_tokens_to_ridge(5000.0, 4096, 4096) == math.inf
    # a narrow FP32 layer, limit 2 * 64 * 64 / (4 * 128) = 16 FLOP/byte
    assert gemm_tokens_to_ridge(16.0, 64, 64, "fp32") == math.inf
    # half the limit: 8 * 4 * 64^2 / (2 * 64^2 - 8 * 4 * 128) = 131_072 / 4_096
    assert gemm_tokens_to_ridge(8.0, 64, 64, "fp32") == pytest.approx(32.0)


@pytest.mark.parametrize(
    "dtype,s,first",
    [("fp8", 1, 444), ("bf16", 2, 887), ("fp32", 4, 1773)],
)
def test_square_gemm_size_to_ridge(dtype, s, first):
    n_star = square_gemm_size_to_ridge(H100_RIDGE, dtype)
    assert n_star == pytest.approx(3 * s * H100_RIDGE / 2)  # 443.1, 886.1, 1772.2
    assert math.ceil(n_star) == first
    assert gemm(first, first, first, dtype).intensity >= H100_RIDGE
    assert gemm(first - 1, first - 1, first - 1, dtype).intensity < H100_RIDGE


def test_square_gemm_size_to_ridge_fp8_with_bf16_output():
    # FP8 A and B (1 byte), BF16 C (2 bytes): I = 2n^3 / (n^2 (1 + 1 + 2)) = n / 2, so the FP8
    # ridge 1979 / 3.35 = 590.7 FLOP/byte needs n* = 2 * 590.7 = 1181.5, not 3 * 590.7 / 2 = 886.
    ridge = 1979e12 / 3.35e12
    n_star = square_gemm_size_to_ridge(ridge, "fp8", out_dtype="bf16")
    assert n_star == pytest.approx(2 * ridge) == pytest.approx(1181.5, abs=0.1)
    assert gemm(1181, 1181, 1181, "fp8", out_dtype="bf16").intensity < ridge
    assert gemm(1182, 1182, 1182, "fp8", out_dtype="bf16").intensity >= ridge
    assert square_gemm_size_to_ridge(ridge, "fp8", out_dtype="fp8") == pytest.approx(1.5 * ridge)


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda: gemm_tokens_to_ridge(0, 64, 64), ValueError, "^ridge must be"),
        (lambda: gemm_tokens_to_ridge(float("inf"), 64, 64), ValueError, "^ridge must be"),
        (lambda: gemm_tokens_to_ridge("100", 64, 64), TypeError, "^ridge must be"),  # type: ignore[arg-type]  # bad input on purpose
        (lambda: gemm_tokens_to_ridge(100, 0, 64), ValueError, "^k must be an integer >= 1"),
        (lambda: gemm_tokens_to_ridge(100, 64, 6.4), TypeError, "^n must be an integer >= 1"),  # type: ignore[arg-type]  # bad input on purpose
        (lambda: gemm_tokens_to_ridge(100, 64, 64, "bf17"), ValueError, "dtype 'bf17'"),
        (lambda: square_gemm_size_to_ridge(-1.0), ValueError, "^ridge must be"),
        (lambda: square_gemm_size_to_ridge(True), TypeError, "^ridge must be"),
        (lambda: square_gemm_size_to_ridge(100, "bf17"), ValueError, "dtype 'bf17'"),
        (lambda: square_gemm_size_to_ridge(100, out_dtype="bf17"), ValueError, "dtype 'bf17'"),
    ],
)
def test_ridge_solvers_reject(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --------------------------------------------------------------------------
# Several ceilings: each operator held to the units and levels it uses


def test_units_of_each_operator():
    from roofline_book import ops

    g = ops.gemm(64, 64, 64)
    assert g.flops_by_unit == {"matrix": g.flops, "vector": 0, "special": 0}
    for c in (ops.add(100), ops.relu(100), ops.layernorm(4, 8), ops.adamw(100)):
        assert c.matrix_flops == 0 and c.vector_flops > 0
    # special function units: GELU's tanh one per element; SiLU's exp and its division's
    # reciprocal (IEEE a / b compiles to MUFU.RCP and FMAs), two; softmax's exp, one (a minimal
    # kernel multiplies by the row sum's reciprocal); RMSNorm's rsqrt one per row; AdamW's sqrt
    # and addcdiv's division, two per parameter
    assert ops.gelu(100).special_flops == 100
    assert ops.swiglu(100).special_flops == 2 * 100
    assert ops.softmax(4, 8).special_flops == 4 * 8
    assert ops.rmsnorm(4, 8).special_flops == 4
    assert ops.adamw(100, "loop").special_flops == ops.adamw(100, "fused").special_flops == 200
    # FMAs only where the formula is a multiply then an add: GELU's 0.044715 x^3 + x (2 of
    # its 8 vector FLOPs), RMSNorm's sum of squares (2 of 4 per element), LayerNorm's
    # variance sum and scale-and-shift (4 of 7), AdamW's lerp, addcmul, addcdiv (6 of 12)
    assert ops.gelu(100).vector_fma_flops == 200 and ops.gelu(100).vector_slots == 700
    assert ops.rmsnorm(4, 8).vector_fma_flops == 2 * 4 * 8
    assert ops.layernorm(4, 8).vector_fma_flops == 4 * 4 * 8
    assert ops.adamw(100).vector_fma_flops == 600 and ops.adamw(100).vector_slots == 900
    assert ops.add(100).vector_fma_flops == ops.swiglu(100).vector_fma_flops == 0
    # attention: the two products on the matrix units, 4 N d; the softmax elsewhere
    a = ops.attention(1, 2, 128, 256, 64)
    assert a.matrix_flops == 2 * 4 * 128 * 256 * 64
    assert (a.vector_flops, a.special_flops) == (2 * 4 * 128 * 256, 2 * 128 * 256)


def test_time_bound_is_the_largest_resource_time():
    from roofline_book import add, hardware, softmax

    h100 = hardware("h100-sxm")
    t = time_bound(add(2**20), h100)
    # 2^20 adds, one lane slot each, at half the packed BF16x2 peak (133.8 / 2 = 66.9 T/s);
    # 6 * 2^20 bytes at 3.35 TB/s through HBM, and through the L2 at 8.4286 TB/s
    assert dict(t.by_resource) == {
        "vector": 2**20 / 66.9e12,
        "hbm": 6 * 2**20 / 3.35e12,
        "l2": 6 * 2**20 / 8.4286e12,
    }
    assert t.seconds == 6 * 2**20 / 3.35e12 and t.resource == "hbm"
    assert t.memory / t.compute == pytest.approx(6 * 66.9 / 3.35)  # 120, not 1917
    # FP32: 12 bytes, and 1 add at 67 / 2 = 33.5 T/s (the FP32 FMA peak counts 2 FLOP)
    t32 = time_bound(add(2**20, "fp32"), h100, "fp32")
    assert t32.by_resource["vector"] == 2**20 / 33.5e12
    # the score softmax: the exp pipe (one exp per element at 16 x 132 x 1.98e9 = 4.18e12/s)
    # is the compute that comes closest to memory (4 bytes per element at 3.35e12 B/s):
    # (4 / 3.35e12) / (1 / 4.18176e12) = 4.99
    s = time_bound(softmax(32 * 4096, 4096), h100)
    computes = {"matrix", "vector", "special"}
    assert max(s.by_resource, key=lambda r: s.by_resource[r] if r in computes else 0) == "special"
    assert s.memory / s.compute == pytest.approx((4 / 3.35e12) / (1 / 4.18176e12))


def test_vector_time_counts_lane_slots():
    from roofline_book import Cost, adhoc, hardware

    # 4 multiply-adds (8 FLOP, 4 slots) and 2 adds (2 FLOP, 2 slots) per element: 6 slots
    # at 67 / 2 = 33.5e12 slots/s on H100's FP32 lanes, not 10 FLOP at 67e12
    h100 = hardware("h100-sxm")
    c = Cost(10, 4, 4, vector_flops=10, vector_fma_flops=8)
    assert c.vector_slots == 6
    assert time_bound(c, h100, "fp32").by_resource["vector"] == pytest.approx(6 / 33.5e12)
    # unmarked, the same FLOPs take 10 slots: a longer time, so still a bound
    plain = Cost(10, 4, 4, vector_flops=10)
    assert time_bound(plain, h100, "fp32").by_resource["vector"] == pytest.approx(10 / 33.5e12)
    # an ad-hoc vector figure is an FMA-counted peak too
    dev = adhoc("mine", 100e12, 1e12, vector=20e12)
    assert time_bound(plain, dev).by_resource["vector"] == pytest.approx(10 / 10e12)
    with pytest.raises(ValueError, match="vector_fma_flops must be an even number"):
        Cost(10, 4, 4, vector_flops=10, vector_fma_flops=3)
    with pytest.raises(ValueError, match="vector_fma_flops must be an even number"):
        Cost(10, 4, 4, vector_flops=2, vector_fma_flops=4)
    assert (c + c).vector_fma_flops == 2 * c.vector_fma_flops == (2 * c).vector_fma_flops


def test_flash_rereads_go_to_l2_only_when_the_l2_holds_a_head_within_the_margin():
    from roofline_book import adhoc, attention, hardware

    h100 = hardware("h100-sxm")
    fits = attention(1, 1, 4096, 4096, 128)  # K and V of one head: 2 MiB
    assert fits.reread_footprint <= h100.l2_cache
    assert time_bound(fits, h100).by_resource["hbm"] == fits.bytes / h100.memory_bandwidth
    # a device whose L2 holds less than a quarter of K and V (2 MiB) pays the re-reads at HBM;
    # one that holds half of them may still serve them, so the bound lets it (CACHE_MARGIN = 4)
    small = adhoc("small L2", {"bf16": 989.5e12}, 3.35e12, vector=67e12, l2_cache=2**18)
    t = time_bound(fits, small)
    assert t.by_resource["hbm"] == (fits.bytes + fits.reread_bytes) / 3.35e12
    half = adhoc("half L2", {"bf16": 989.5e12}, 3.35e12, vector=67e12, l2_cache=2**20)
    assert time_bound(fits, half).by_resource["hbm"] == fits.bytes / 3.35e12
    # an L2 bandwidth, where given, is charged for every byte that passes it
    with_l2 = adhoc("l2", {"bf16": 989.5e12}, 3.35e12, vector=67e12, l2_bandwidth=10e12)
    l2 = time_bound(fits, with_l2).by_resource["l2"]
    assert l2 == (fits.bytes + fits.reread_bytes) / 10e12


# FlashAttention-3 forward, BF16/FP16, on H100 80GB SXM5 (Shah et al. 2024, arXiv:2407.08608
# v1, Figure 5 and the abstract; NeurIPS 2024 version: up to 840 TFLOP/s, and its ablation,
# 661 TFLOP/s at batch 4, seqlen 8448, 16 heads, head dim 128). Their setup: batch x seqlen =
# 16k tokens, hidden 2048 (heads = 2048 / head_dim), FLOPs 4 x seqlen^2 x head_dim x heads per
# sequence, halved with a causal mask. (head_dim, seqlen, causal, TFLOP/s, batch, heads)
FA3_H100 = [
    (128, 4096, False, 638, None, None),
    (128, 16384, False, 648, None, None),
    (256, 16384, False, 740, None, None),  # the abstract of the arXiv version (FP16)
    (256, 16384, False, 840, None, None),  # the abstract of the NeurIPS version (BF16)
    (256, 16384, True, 642, None, None),
    (256, 8192, True, 628, None, None),
    (64, 16384, False, 497, None, None),
    (64, 16384, True, 473, None, None),
    (128, 8448, False, 661, 4, 16),  # the NeurIPS ablation
]


@pytest.mark.parametrize(("head_dim", "seq", "causal", "tflops", "batch", "heads"), FA3_H100)
def test_flash_bound_is_never_beaten_by_flashattention3(
    head_dim, seq, causal, tflops, batch, heads
):
    from roofline_book import attention, hardware
    from roofline_book.devices.kernels import device_flash_tile

    h100 = hardware("h100-sxm")
    heads, batch = heads or 2048 // head_dim, batch or 16384 // seq
    tile = device_flash_tile(h100, head_dim, "bf16", causal)  # FA3's own tile
    assert tile is not None
    cost = attention(batch, heads, seq, seq, head_dim, causal=causal, tile=tile)
    flops = 4 * batch * seq * seq * head_dim * heads / (2 if causal else 1)
    achieved_seconds = flops / (tflops * 1e12)
    bound = time_bound(cost, h100).seconds
    assert bound <= achieved_seconds, (bound, achieved_seconds)


def test_fa3_at_head_dim_64_needs_the_sfu_as_long_as_the_tensor_cores_at_one_clock():
    # At one SM clock f, H100 SXM has 132 SMs x 4096 dense BF16 FLOP/clock on the Tensor Cores
    # and 132 x 16 exp/clock on the SFUs (FA3 section 3.1: 256x lower throughput for exp).
    # A score at d = 64 costs 4 x 64 = 256 matrix FLOP, 256 / 4096 = 1/16 clock, and one exp,
    # 1/16 clock: the ratio is exactly 1, whatever f is.
    from roofline_book import adhoc, attention

    for f in (1.83e9, 1.98e9):
        one_clock = adhoc("h100 at one clock", {"bf16": 132 * 4096 * f}, 3.35e12,
                          vector=132 * 256 * f, special=132 * 16 * f)  # fmt: skip
        t = time_bound(attention(1, 32, 4096, 4096, 64, causal=True), one_clock)
        assert t.by_resource["special"] / t.by_resource["matrix"] == pytest.approx(1.0)


def test_gemm_bound_is_never_beaten_by_published_kernels():
    from roofline_book import gemm, hardware

    # DeepGEMM (deepseek-ai/DeepGEMM README, 2025-04): up to 1550 TFLOP/s FP8 on H800
    h800 = hardware("h800-sxm")
    cost = gemm(8192, 8192, 8192, "fp8", out_dtype="bf16")
    assert time_bound(cost, h800, "fp8").seconds <= cost.flops / 1550e12
    # FlashAttention-4 is reported at about 1605 TFLOP/s BF16 on B200; the dense BF16
    # matrix ceiling (2.25 PFLOP/s) stays above it
    assert hardware("b200").peak_flops("bf16") >= 1605e12


def test_time_bound_rejects_bad_input():
    from roofline_book import add, hardware

    with pytest.raises(TypeError, match="device must be a roofline_book.Hardware"):
        time_bound(add(8), "h100-sxm")
    with pytest.raises(TypeError, match="cost must be a roofline_book.Cost"):
        time_bound(8, hardware("h100-sxm"))
    with pytest.raises(ValueError, match="resource must be one of"):
        TimeBound({"tensor": 1.0})


def test_the_package_bound_is_the_one_bound_rule():
    # roofline_book.bound is the rule every caller uses (roofline/bounds.py); the two-roof
    # classifier is roof_kind. The H100 SXM add of 2^20 BF16 elements moves 6 MiB: at
    # 3.35 TB/s that is 6 x 2^20 / 3.35e12 = 1.878 us, held by HBM
    import roofline_book
    from roofline_book import add, hardware
    from roofline_book.roofline.bounds import Ceilings

    t = roofline_book.bound(add(2**20), Ceilings.of(hardware("h100-sxm")), "bf16")
    assert t.resource == "hbm" and t.seconds == pytest.approx(6 * 2**20 / 3.35e12)
    assert roofline_book.roof_kind(1 / 6, P, B) == "memory"


def test_no_attribute_of_the_package_hides_a_submodule():
    # `import roofline_book.x as m` must give the module x, not a function of that name
    import pkgutil

    import roofline_book as rb

    shadowed = [
        m.name
        for m in pkgutil.iter_modules(rb.__path__)
        if hasattr(rb, m.name) and not isinstance(getattr(rb, m.name), type(rb))
    ]
    assert shadowed == []
