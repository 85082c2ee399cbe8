"""The answers of chapter 1's problems, as the built book shows them, recomputed by hand."""

import pytest

pytestmark = pytest.mark.site  # reads the built book's glued values

PAGE = "chapters/01-flops"

# H100 SXM: NVIDIA's dense BF16 989.4 TFLOP/s (whitepaper; rated at 1830 MHz, 4096 FLOP per
# clock per SM x 132 SMs x 1.83e9)
H100_BF16 = 989.4e12
# 16 special results per clock per SM x 132 SMs x 1.98e9 (the boost clock of the vendor's
# vector rates) = 4.18176e12 evaluations per second
H100_SPECIAL = 16 * 132 * 1.98e9


def test_chapter_1_answers(glued):
    g = glued(PAGE)
    assert g["ans_q1_flops_sci"] == "1.10 × 10¹²"  # 2 * 8192**3 = 1,099,511,627,776
    assert g["ans_q1_ratio"] == 8.0
    fwd = 2 * 2048 * 4096 * 11008  # 184,683,593,728
    assert g["ans_q2_fwd_sci"] == "1.85 × 10¹¹"
    assert g["ans_q2_total_sci"] == "5.54 × 10¹¹"  # 3 * fwd
    assert g["ans_q2_ratio"] == 3.0
    assert g["ans_q3_us"] == pytest.approx(3 * fwd / H100_BF16 * 1e6)  # about 560 us
    # the estimate: 2 x 16384 x 8192 x 8192 = 2^41 = 2,199,023,255,552 FLOPs, about 2.2 ms
    assert g["ans_q4_flops_sci"] == "2.20 × 10¹²"
    assert g["ans_q4_ms"] == pytest.approx(2**41 / H100_BF16 * 1e3)  # 2.2226 ms
    assert round(g["ans_q4_ms"], 2) == 2.22


def test_chapter_1_prose_numbers(glued):
    g = glued(PAGE)
    assert g["gemm4096_flops_sci"] == "1.37 × 10¹¹"
    assert round(g["gemm4096_gflops"]) == 137
    assert g["t_example_ms"] == pytest.approx(1.374, abs=1e-3)
    assert g["t_h100_ms"] == pytest.approx(2 * 4096**3 / H100_BF16 * 1e3)  # about 0.139 ms
    # the rule of thumb: 1e12 FLOP / 989.4e12 FLOP/s = 1.0107 ms per TFLOP
    assert g["ms_per_tflop"] == pytest.approx(1e3 / 989.4) and round(g["ms_per_tflop"], 2) == 1.01
    assert g["h100_matrix_mhz"] == 1830  # FlashAttention-3 appendix C.1: the 989 TFLOPS clock
    # the example device: one peak of 100 TFLOP/s and one bandwidth of 1 TB/s
    assert (g["example_tflops"], g["example_tbps"]) == (100.0, 1.0)
    # H100 whitepaper: BF16 1978.9 TFLOP/s with 2:4 sparsity, twice the dense 989.4
    assert (
        g["sparse_over_dense"] == pytest.approx(1978.9 / 989.4)
        and round(g["sparse_over_dense"]) == 2
    )


def test_chapter_1_units(glued):
    """Each unit's peak on H100 SXM, and the exp of FlashAttention against the matrix units."""
    g = glued(PAGE)
    assert g["h100_bf16_tflops"] == pytest.approx(H100_BF16 / 1e12)
    assert g["p_vector_tflops"] == 133.8  # BF16 data: packed pairs, the non-tensor BF16 peak
    assert g["p_special_tflops"] == pytest.approx(H100_SPECIAL / 1e12)  # 4.18
    assert g["matrix_over_vector"] == pytest.approx(H100_BF16 / 133.8e12)  # about 7.4
    # one instruction per lane per clock: 128 lanes x 132 SMs x 1.98e9 = 33.45e12 a second
    # (the whitepaper's 133.8 TFLOP/s / 2 FLOP per FMA / 2 results per packed BF16x2
    # instruction); element operations 2 x 33.45e12 = 66.9e12; against 4.18176e12
    # evaluations: 16.0 per element, 8.0 per instruction (16 SFU results to 128 lanes)
    assert g["p_vector_instr"] == pytest.approx(133.8 / 4)
    assert g["p_vector_instr"] == pytest.approx(128 * 132 * 1.98e9 / 1e12, rel=1e-3)
    assert g["p_vector_ops"] == pytest.approx(133.8 / 2)
    assert g["ops_over_special"] == pytest.approx(133.8e12 / 2 / H100_SPECIAL)
    assert g["instr_over_special"] == pytest.approx(133.8e12 / 4 / H100_SPECIAL)  # 8.0
    # FlashAttention, batch 4, 16 heads, 4096 x 4096 scores, head dim 64, BF16.
    scores = 4 * 16 * 4096 * 4096  # 1,073,741,824: one exp each
    matrix = 4 * scores * 64  # QK^T and PV: 2d + 2d FLOPs per score
    total = matrix + 4 * scores + scores  # plus 4 vector FLOPs per score (max, sub, sum, scale)
    assert g["fa_exp_share"] == pytest.approx(scores / total)  # about 0.38%
    assert g["fa_exp_us"] == pytest.approx(scores / H100_SPECIAL * 1e6)  # about 257 us
    exp_s = scores / H100_SPECIAL
    # the two units of one SM compared at one clock: per SM and clock 16 exps (CUDA guide, as
    # FlashAttention-3 cites it) and 4096 dense BF16 FLOP (989.4e12 / (132 x 1.83e9)), so
    # 1 / 16 clock per score each at d = 64, a ratio of 1 whatever the clock
    exp_clocks, matrix_clocks = scores / 16, matrix / (989.4e12 / (132 * 1.83e9))
    assert g["fa_exp_vs_matrix"] == pytest.approx(exp_clocks / matrix_clocks)
    assert g["fa_exp_vs_matrix"] == pytest.approx(1.0, rel=1e-4)
    hbm_bytes = 4 * (4 * 16 * 4096 * 64) * 2  # Q, K, V read once, O written once
    assert g["fa_exp_vs_hbm"] == pytest.approx(exp_s / (hbm_bytes / 3.35e12))  # 6.4


def test_index_opening_numbers(glued):
    """The preface's GEMM and residual add: the book's running 4096 examples on H100 SXM."""
    g = glued("index")
    assert round(g["idx_gemm_yi"]) == 1374  # 2 * 4096**3 = 137,438,953,472 FLOP, in 亿 (1e8)
    assert g["idx_gemm_ms"] == pytest.approx(2 * 4096**3 / H100_BF16 * 1e3)  # about 0.139 ms
    assert g["idx_h100_tflops"] == 989.4  # H100 whitepaper, dense BF16
    assert g["idx_add_wan"] == pytest.approx(4096 * 4096 / 1e4)  # 16,777,216 adds, in 万
    assert g["idx_add_us"] == pytest.approx(6 * 4096 * 4096 / 3.35e12 * 1e6)  # about 30 us
