"""The answers of chapter 1's problems, as the built book shows them, recomputed by hand."""

import pytest

PAGE = "chapters/01-flops"


def test_chapter_1_answers(glued):
    g = glued(PAGE)
    assert g["ans_q1_flops_sci"] == "1.10 × 10¹²"  # 2 * 8192**3 = 1,099,511,627,776
    assert g["ans_q1_ratio"] == 8.0
    fwd = 2 * 2048 * 4096 * 11008  # 184,683,593,728
    assert g["ans_q2_fwd_sci"] == "1.85 × 10¹¹"
    assert g["ans_q2_total_sci"] == "5.54 × 10¹¹"  # 3 * fwd
    assert g["ans_q2_ratio"] == 3.0
    assert g["ans_q3_us"] == pytest.approx(3 * fwd / 989.5e12 * 1e6)  # about 560 us


def test_chapter_1_prose_numbers(glued):
    g = glued(PAGE)
    assert g["gemm4096_flops_sci"] == "1.37 × 10¹¹"
    assert round(g["gemm4096_gflops"]) == 137
    assert g["t_example_ms"] == pytest.approx(1.374, abs=1e-3)
