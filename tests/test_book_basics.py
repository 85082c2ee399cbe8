"""roofline_book.book.basics: the unit rates, catalog sentences and FA3 bounds of chapters 1 and 4,
against the H100 whitepaper and FlashAttention-3's published figures worked out by hand."""

import math

import pytest

from roofline_book import hardware
from roofline_book.book import basics

H100 = hardware("h100-sxm")
H100_BF16 = 989.4e12  # dense Tensor Core BF16, whitepaper, rated at 1830 MHz
H100_VEC_BF16 = 133.8e12  # non-tensor BF16 as packed pairs, whitepaper, 1980 MHz
H100_VEC_FP32 = 66.9e12  # non-tensor FP32, whitepaper
H100_SPECIAL = 16 * 132 * 1.98e9  # 16 SFU results per clock per SM: 4.18e12 a second


def test_unit_rates_h100():
    r = basics.unit_rates(H100)
    assert r["p_vector_tflops"] == pytest.approx(133.8)
    assert r["p_special_tflops"] == pytest.approx(H100_SPECIAL / 1e12)  # 4.18176
    assert r["matrix_over_vector"] == pytest.approx(H100_BF16 / H100_VEC_BF16)  # 7.39
    # 128 lanes x 132 SMs x 1.98e9 = 33.45e12 instructions a second, two BF16 results each
    assert r["p_vector_instr"] == pytest.approx(128 * 132 * 1.98e9 / 1e12, rel=1e-3)
    assert r["p_vector_ops"] == pytest.approx(2 * r["p_vector_instr"])
    assert r["p_vector_fp32_tflops"] == pytest.approx(67.0)  # H100 SXM datasheet: FP32 67 TFLOPS
    assert r["instr_over_special"] == pytest.approx(128 / 16, rel=1e-3)  # 8 lanes per SFU result
    assert (r["sfu_per_clock"], r["lanes_per_sm"]) == (16, 128)
    assert isinstance(r["sfu_per_clock"], int)  # printed as "16", not "16.0"


def test_roof_sentences_h100():
    s = basics.roof_sentences(H100)
    # 989.4e12 / (132 x 1.83e9) = 4096 dense BF16 FLOPs per SM and clock, against 16 exps
    assert s["per_clock_sentence"] == (
        "H100 每个 SM 每个时钟能算 16 次 exp、4096 次稠密 BF16 矩阵 FLOP。"
    )
    assert f"{H100_VEC_BF16 / 1e12:.0f} TFLOP/s" in s["vec_bf16_sentence"]  # 134
    assert f"是 FP32 的 {H100_VEC_BF16 / H100_VEC_FP32:.0f} 倍" in s["vec_bf16_sentence"]  # 2
    l2 = H100.bandwidth("l2")
    assert (f"{l2 / 1e12:.2f} TB/s" in s["l2_sentence"]) if l2 else ("只有 HBM" in s["l2_sentence"])


def test_fa3_published_bounds_h100():
    b = basics.fa3_published_bounds(H100)
    # 16k tokens, head dim 128, 16 heads: the matrix units bind, so in the paper's 4 l^2 d h
    # convention the bound is the dense peak, above the 648 measured
    assert b["fa3_resource"] == "受矩阵单元限制"
    assert b["fa3_tflops"] == pytest.approx(H100_BF16 / 1e12) and b["fa3_tflops"] > 648
    assert b["fa3_tflops_256"] > 840 and b["fa3_tflops_256c"] > 642
    # every re-read from HBM, causal d = 256 (8 heads, FA3's 128 x 80 tile): HBM bytes are
    # 4 l d s per head plus the re-reads, against half of 4 l^2 d h FLOPs: about 417 TFLOP/s
    n, d, h = 16384, 256, 8
    kv = sum(min(n, math.ceil(128 * m / 80) * 80) for m in range(1, 129))
    hbm = h * 2 * d * (4 * n + 2 * (kv - n))
    all_hbm = 4 * n * n * d * h / 2 / (hbm / 3.35e12) / 1e12
    assert f"head dim 256（causal） 为 {all_hbm:.0f} TFLOP/s" in b["fa3_all_hbm_sentence"]
    assert "head dim 256（causal） 的实测值 642 TFLOP/s" in b["fa3_all_hbm_sentence"]
