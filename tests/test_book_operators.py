"""The low-FLOP operators chapter's helpers (roofline_book.book.operators), checked against
hand counts of bytes and FLOPs on the H100 SXM's published figures: HBM3 3.35 TB/s, BF16
Tensor Core 989.4 TFLOP/s, packed BF16 FMA 133.8 and FP32 FMA 67 TFLOP/s on the CUDA cores,
132 SMs x 16 SFU results a clock x 1.98 GHz = 4.18176e12 special evaluations a second, 50 MiB
L2 (H100 whitepaper); PyTorch's multi_tensor_apply (65536-element chunks, 320 blocks a launch
on CUDA 12, 2240 on CUDA 13) and a 7B decoder block (d = 4096, ffn 11008: 4 d^2 + 3 d x 11008
+ 2 d = 202_383_360 parameters in 7 tensors)."""

from __future__ import annotations

import pytest

from roofline_book import LLAMA2_7B, adamw, gelu, gemm, hardware, relu, residual_add, softmax
from roofline_book.book import operators as bo
from roofline_book.measure.bench.suites import suite_spec
from roofline_book.roofline.roofs import time_bound

H100 = hardware("h100-sxm")
BW, SPECIAL = 3.35e12, 132 * 16 * 1.98e9  # byte/s; special evaluations/s
N = 4096 * 4096  # a 4096-token x 4096-wide activation
BLOCK = 4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096  # 202_383_360 parameters


def test_unit_figures_are_the_published_ceilings():
    f = bo.unit_figures(H100, "bf16")
    assert f["matrix_tflops"] == pytest.approx(989.4)
    assert f["vector_tflops"] == pytest.approx(133.8)
    assert f["vector_op_tflops"] == pytest.approx(133.8 / 2)  # one FLOP a lane slot, not an FMA
    assert f["vector_fp32_tflops"] == pytest.approx(67.0)
    assert f["special_tflops"] == pytest.approx(SPECIAL / 1e12)  # 4.18
    assert f["bw_tbs"] == pytest.approx(3.35)
    assert f["ridge_bf16"] == pytest.approx(989.4 / 3.35)  # 295.3 FLOP/byte
    assert f["ridge_vector"] == pytest.approx(133.8 / 3.35)  # 39.9
    assert f["ridge_vector_fp32"] == pytest.approx(20.0)  # 67 / 3.35


def test_gelu_figures_count_nine_flops_and_one_tanh_per_four_bytes():
    f = bo.gelu_figures(H100, N, "bf16")
    # tanh form: x^3 (2), x 0.044715, + x, x sqrt(2/pi), tanh, + 1, x x, x 0.5 = 9 FLOP
    assert f["gelu_fpe"] == 9
    assert f["gelu_I"] == 9 / 4  # read 2 bytes, write 2
    assert f["gelu_gap"] == pytest.approx(989.4 / 3.35 / 2.25)  # 131
    assert f["gelu_gap_vector"] == pytest.approx(133.8 / 3.35 / 2.25)  # 17.8
    assert f["gelu_hbm_us"] == pytest.approx(4 * N / BW * 1e6)  # 20.0 us
    assert f["gelu_special_us"] == pytest.approx(N / SPECIAL * 1e6)  # 4.01 us
    assert f["gelu_mem_over_special"] == pytest.approx(4 * SPECIAL / BW)  # 4.99


def test_add_versus_gemm_figures():
    f = bo.add_versus_gemm_figures(residual_add(N), gemm(4096, 4096, 4096), H100)
    assert f["add_us"] == pytest.approx(3 * 2 * N / BW * 1e6)  # 100.7 MB over HBM: 30.0 us
    assert f["gemm_us"] == pytest.approx(2 * 4096**3 / 989.4e12 * 1e6)  # 138.9 us
    # 138.9 us / 30.0 us: (2 x 4096^3 / 989.4e12) / (6 x 4096^2 / 3.35e12) = 4.623
    assert f["time_ratio"] == pytest.approx(4096 * 3.35 / (3 * 989.4), rel=1e-3)
    assert f["flops_ratio"] == 2 * 4096**3 / N  # 8192
    assert f["ms_per_gb"] == pytest.approx(1 / 3.35)  # 1e9 B / 3.35e12 B/s = 0.2985 ms


def test_rmsnorm_figures_count_the_eager_module_kernel_by_kernel():
    r = d = 4096
    f = bo.rmsnorm_figures(r, d, H100, "bf16")
    one = 2 * 2 * r * d + 2 * d  # read x, write y, read the weight once
    assert f["rms_I"] == pytest.approx(4 * r * d / one, rel=1e-3)  # about 4 R d FLOPs
    assert f["rms_us"] == pytest.approx(one / BW * 1e6)  # 20.0 us
    assert f["rms_weight_share"] == pytest.approx(2 * d / one)  # 0.0122 %
    # upcast: to fp32 (2 + 4), pow (4 + 4), mean (4 + 4/d), + eps and rsqrt (8/d each),
    # x * r (4 + 4/d + 4), to bf16 (4 + 2), weight * y (2 + 2): 36 N + 24 R + 2 d bytes
    assert f["rms_eager_kernels"] == 8
    assert f["rms_eager_ratio"] == pytest.approx((36 * r * d + 24 * r + 2 * d) / one)  # 9.0
    # all BF16: pow (2 + 2), mean (2 + 2/d), eps and rsqrt (4/d each), x * r (2 + 2/d + 2),
    # weight * y (2 + 2): 14 N + 12 R + 2 d bytes
    assert f["rms_bf16_kernels"] == 6
    assert f["rms_bf16_ratio"] == pytest.approx((14 * r * d + 12 * r + 2 * d) / one)  # 3.5
    assert f["inter_mib"] == 64.0  # 4 bytes x 4096^2 = 64 MiB
    assert f["l2_mib"] == 50.0


def test_softmax_figures_on_the_score_matrix():
    e = 32 * N  # 32 heads x 4096^2 scores
    gemm_t = time_bound(gemm(4096, 4096, 4096), H100)
    f = bo.softmax_figures(32 * 4096, 4096, H100, "bf16", versus=gemm_t)
    assert (f["softmax_fpe"], f["softmax_bpe"]) == (5, 4)  # max, sub, exp, sum, x 1/sum
    assert (f["softmax_special_pe"], f["softmax_vector_pe"]) == (1, 4)
    assert f["softmax_I"] == 5 / 4
    assert f["softmax_gb"] == 2 * 2 * e / 1e9  # 2.15 GB
    assert f["softmax_us"] == pytest.approx(4 * e / BW * 1e6)  # 641 us
    assert f["softmax_special_us"] == pytest.approx(e / SPECIAL * 1e6)  # 128 us
    assert f["softmax_vector_us"] == pytest.approx(4 * e / (133.8e12 / 2) * 1e6)  # 32.1 us
    assert f["softmax_mem_over_special"] == pytest.approx(4 * SPECIAL / BW)
    assert f["softmax_special_aten"] == 3  # exp twice and a reciprocal
    assert f["softmax_aten_special_us"] == pytest.approx(3 * e / SPECIAL * 1e6)  # 385 us
    assert f["softmax_vs_gemm"] == pytest.approx(4 * e / BW / (2 * 4096**3 / 989.4e12))  # 4.61


def test_adamw_figures_on_a_7b_block():
    assert LLAMA2_7B.parameters == BLOCK
    fp32 = {i: adamw(BLOCK, i, tensors=7) for i in bo.IMPLS}
    mixed = {i: adamw(BLOCK, i, tensors=7, grad_dtype="bf16", model_dtype="bf16") for i in bo.IMPLS}
    f = bo.adamw_figures(fp32, mixed, BLOCK, H100, tensors=7)
    assert f["block_params_m"] == BLOCK / 1e6
    # fused: read param, grad, 2 moments, write param, 2 moments, 4 bytes each = 28
    assert (f["adamw_fused_bpp"], f["adamw_loop_bpp"]) == (28, 80)
    assert f["adamw_ratio"] == pytest.approx(80 / 28)
    assert (f["adamw_fused_I"], f["adamw_loop_I"]) == (14 / 28, 14 / 80)
    assert f["adamw_flops_per_param"] == 14
    assert f["adamw_fused_ms"] == pytest.approx(28 * BLOCK / BW * 1e3)  # 1.69 ms
    assert f["adamw_loop_ms"] == pytest.approx(80 * BLOCK / BW * 1e3)  # 4.83 ms
    # BF16 grad: fused reads 2 bytes less and writes a 2-byte weight; loop reads the grad
    # twice at 2 bytes (-4) and adds a pass reading FP32 and writing BF16 (+6)
    assert (f["adamw_mixed_fused_bpp"], f["adamw_mixed_loop_bpp"]) == (28, 82)
    # ceil(202_383_360 / 65536) = 3089 chunks; ceil(3089 / 320) = 10, ceil(3089 / 2240) = 2
    assert (f["mt_chunk"], f["mt_blocks"], f["mt_blocks_cuda13"]) == (65536, 320, 2240)
    assert f["adamw_loop_passes"] == 8
    assert f["adamw_loop_kernels"] == 8 * 7
    assert (f["adamw_fused_kernels"], f["adamw_foreach_kernels"]) == (10, 8 * 10)
    assert (f["adamw_fused_kernels_cuda13"], f["adamw_foreach_kernels_cuda13"]) == (2, 8 * 2)


def test_closest_figures_name_the_special_units():
    named = [("relu", relu(N)), ("GELU", gelu(N)), ("softmax（得分）", softmax(4096, 4096))]
    f = bo.closest_figures(named, "h100-sxm", per_bytes=4)
    assert f["near_names"] == "GELU 和 softmax"
    # one special evaluation per 4 bytes: T_mem / T_special = 4 x 4.18e12 / 3.35e12 = 4.99
    assert f["near_ratio"] == f["min_mem_over_compute"] == pytest.approx(4 * SPECIAL / BW)
    assert f["near_special"] == 1.0
    with pytest.raises(ValueError, match="'vector', not 'special'"):
        bo.closest_figures([("relu", relu(N))], "h100-sxm", per_bytes=4)


def test_headroom_figures_for_gelu():
    f = bo.headroom_figures(gelu(N), N, H100, "q_")
    assert f["q_I"] == 2.25
    assert f["q_ops_needed"] == pytest.approx(66.9 / 3.35 * 4)  # 79.9 one-FLOP ops in 4 bytes
    assert f["q_flops_needed"] == pytest.approx(133.8 / 3.35 * 4)  # 159.8 FLOP
    assert f["q_special_needed"] == pytest.approx(4 * SPECIAL / BW)  # 4.99 evaluations


def test_loop_over_fused_figures_with_bf16_grads():
    mixed = {i: adamw(BLOCK, i, tensors=7, grad_dtype="bf16", model_dtype="bf16") for i in bo.IMPLS}
    f = bo.loop_over_fused_figures(mixed, H100, "q_")
    assert f["q_loop_ms"] == pytest.approx(82 * BLOCK / BW * 1e3)  # 4.95 ms
    assert f["q_fused_ms"] == pytest.approx(28 * BLOCK / BW * 1e3)  # 1.69 ms
    assert f["q_ratio"] == pytest.approx(82 / 28)


def test_adamw_launch_figures_for_32_blocks():
    f = bo.adamw_launch_figures(32 * BLOCK, 32 * 7, H100, "q_")
    # 6_476_267_520 / 65536 = 98_820 chunks; ceil(98_820 / 320) = 309, ceil(98_820 / 2240) = 45
    assert f["q_chunks"] == 98_820
    assert (f["q_fused_kernels"], f["q_foreach_kernels"]) == (309, 8 * 309)
    assert (f["q_fused_kernels_cuda13"], f["q_foreach_kernels_cuda13"]) == (45, 8 * 45)
    assert f["q_loop_kernels"] == 8 * 224
    assert f["q_params_b"] == pytest.approx(6.476, abs=1e-3)
    assert f["q_gb"] == pytest.approx(28 * 32 * BLOCK / 1e9)  # 181 GB
    assert f["q_fused_ms"] == pytest.approx(28 * 32 * BLOCK / BW * 1e3)  # 54.1 ms


def test_masked_softmax_figures():
    e = 32 * N
    f = bo.masked_softmax_figures(32, 4096, 128, H100, "q_")
    assert f["q_ratio"] == 3.0  # 6 passes of 2 bytes over 2
    assert f["q_three_ms"] == pytest.approx(3 * 4 * e / BW * 1e3)  # 1.92 ms
    assert f["q_fused_ms"] == pytest.approx(4 * e / BW * 1e3)  # 0.641 ms
    assert f["q_mat_bps"] == 8.0  # write S 2, softmax 2 + 2, read it back 2
    # write S 2, scale 2 + 2, mask 2 + 2, to fp32 2 + 4, softmax 4 + 4, to bf16 4 + 2,
    # read back 2 = 32, and the mask shared by 32 heads: 2 / 32
    assert f["q_hf_bps"] == 32 + 2 / 32
    assert f["q_hf_kernels"] == 7


def test_adamw_bench_figures_follow_the_suite():
    params, tensors = suite_spec("cuda", "quick").adamw
    f = bo.adamw_bench_figures(H100, "q_", suite="quick")
    assert (f["q_params_m"], f["q_tensors"]) == (params / 2**20, tensors)
    assert f["q_loop_kernels"] == 8 * tensors
    assert f["q_fused_ms"] == pytest.approx(28 * params / BW * 1e3)
    assert f["q_loop_ms"] == f["q_foreach_ms"] == pytest.approx(80 * params / BW * 1e3)
