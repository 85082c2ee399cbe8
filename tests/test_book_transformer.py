"""The decoder block's figures (roofline_book.book.transformer), checked against hand arithmetic.

Outside references: Llama-2-7B's config.json (hidden 4096, 32 heads of 128, ffn 11008) at the
book's shape (batch 1, 4096 tokens, BF16, 2 bytes); H100 SXM datasheet dense BF16 989.4 TFLOP/s,
HBM3 3.35 TB/s, 50 MiB of L2 and 228 KiB of shared memory per SM; the catalog's measured L2
bandwidth 8.4286 TB/s; FlashAttention-3's hopper/tile_size.h tiles for d = 128 (128 x 176 with a
two-block cluster without a mask, 128 x 128 without a cluster under a causal mask).
"""

import matplotlib
import pytest

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

from roofline_book import (  # noqa: E402
    LLAMA2_7B,
    adhoc,
    attention,
    attention_backward,
    block_table,
    fa3_tile,
    hardware,
    optimizer_table,
)
from roofline_book.book import transformer as tr  # noqa: E402
from roofline_book.present import plotting  # noqa: E402

H100 = hardware("h100-sxm")
BF16, HBM, L2_BW = 989.4e12, 3.35e12, 8.4286e12
L, D, H, S = 4096, 128, 32, 2  # sequence, head dim, heads, bytes per BF16 element
QKVO = 4 * L * D * S * H  # Q, K, V read once and O written once: 134,217,728 B
PAIRS = L * (L + 1) // 2  # (query, key) pairs a causal mask keeps


@pytest.fixture(scope="module")
def blocks():
    return {i: block_table(LLAMA2_7B, H100, attention_impl=i) for i in tr.IMPLS}


def test_block_summary_reads_the_flash_block(blocks):
    s = tr.block_summary(blocks["flash"], gemm="projection", small=tr.SMALL_OPS)
    # the square 4096 x 4096 output projection is the least intense GEMM: 2n^3 / (3 n^2 s) = n / 3
    assert s["min_gemm_I"] == pytest.approx(4096 / 3)
    # one head's K and V: 2 x 4096 x 128 x 2 B = 2 MiB
    assert s["fa_kv_mib"] == 2.0
    # RoPE reads and writes Q and K (4 x 4096^2 x 2 B) and reads the cos and sin tables
    assert s["rope_mb"] == pytest.approx((4 * L * 4096 * S + 2 * L * D * S) / 1e6)
    # causal FlashAttention: 4 d FLOPs a kept pair on the matrix units, Q, K, V, O once on HBM
    assert s["fa_matrix_us"] == pytest.approx(4 * D * PAIRS * H / BF16 * 1e6)
    assert s["fa_hbm_us"] == pytest.approx(QKVO / HBM * 1e6)
    assert s["fa_bound"] == "受矩阵单元限制"
    assert 0 < s["small_share"] < s["gemm_share"] < 1 and s["min_mem_ratio"] > 1


def test_block_summary_names_what_it_misses():
    with pytest.raises(ValueError, match="attention"):
        tr.block_summary([])


def test_unmasked_attention_against_the_formulas():
    a = tr.unmasked_attention(H100, H, L, D, tile=fa3_tile(D))
    # materialized: s (4 l d + 4 l^2) a head; flash: 4 l d s; the ratio is 1 + l / d = 33
    assert a["attn_mat_gb"] == pytest.approx(S * (4 * L * D + 4 * L**2) * H / 1e9)
    assert a["attn_bytes_ratio"] == 1 + L / D == 33
    # S written and read, S~ written and read: 4 x 2 B a score; (4 d + 5) / (4 s) = 517 / 8
    assert a["mat_bps"] == 8 and a["mat_I_limit"] == 517 / 8
    # eager, six kernels: QK^T writes 2 B, the scale reads and writes 2 + 2, the cast to FP32
    # reads 2 and writes 4, the FP32 softmax 4 + 4, the cast back 4 + 2, PV reads 2: 28 B
    assert a["eager_nomask_bps"] == 28 and a["eager_nomask_kernels"] == 6
    # FA3's 128-row query blocks in two-block clusters: K, V read ceil(l / 128) / 2 = 16 times
    assert a["attn_reread_gb"] == pytest.approx(2 * L * D * S * (16 - 1) * H / 1e9)
    assert a["attn_flash_matrix_us"] == pytest.approx(4 * L**2 * D * H / BF16 * 1e6)
    assert a["attn_flash_l2_us"] == pytest.approx((QKVO + a["attn_reread_gb"] * 1e9) / L2_BW * 1e6)
    assert a["l2_tb"] == pytest.approx(8.4286)
    # ceil(4096 / 176) K/V blocks; 228 KiB / (4 x 128 x 2 B) = 228 rows by the on-chip rule
    assert (a["fa3_bm"], a["fa3_bn"], a["fa3_c"], a["fa3_nk"]) == (128, 176, 2, 24)
    assert (a["sram_kib"], a["flash_sram_rows"]) == (228, 228)


def test_unmasked_attention_needs_the_on_chip_sizes():
    bare = adhoc("bare", 100e12, 1e12)
    with pytest.raises(ValueError, match="shared memory"):
        tr.unmasked_attention(bare, H, L, D, tile=fa3_tile(D))


def test_causal_attention_counts_only_the_kept_pairs():
    costs = {i: attention(1, H, L, L, D, impl=i, causal=True) for i in tr.IMPLS}
    c = tr.causal_attention(costs, H100)
    assert c["attn_c_ratio"] == 33
    # (4 d + 5) FLOPs for each kept pair over Q, K, V, O once
    assert c["attn_c_flash_I"] == pytest.approx((4 * D + 5) * PAIRS * H / QKVO)
    assert c["attn_c_bound"] == "受矩阵单元限制"


def test_fa3_schedule_rereads_up_to_the_diagonal():
    f = tr.fa3_schedule(H100, H, L, D, causal=True)
    # 32 query blocks of 128 rows; block i streams i key blocks of 128 rows (2 x 128 x 128 x 2 B
    # of K and V each): 1 + 2 + ... + 32 = 528 block reads, less the first full read of K, V
    per_head = 528 * 2 * 128 * D * S - 2 * L * D * S
    assert f["fa3_own_reread_gb"] == pytest.approx(per_head * H / 1e9)
    assert f["fa3_own_l2_us"] == pytest.approx((QKVO + per_head * H) / L2_BW * 1e6)
    assert (f["fa3_own_c"], f["fa3_own_bound"]) == (1, "受 L2 限制")


def test_attention_traffic_figure_draws_the_curves_and_the_ridge():
    seqs = [1024, 4096]
    _ = plotting.use_cjk_font()
    with matplotlib.rc_context({"font.family": plotting.CJK_FONTS}):
        fig = tr.attention_traffic_figure(H100, seqs, H, D, tile=fa3_tile(D))
    left, right = fig.axes
    ys = [list(line.get_ydata()) for line in left.lines]
    # materialized: s (4 n d + 4 n^2) per head
    assert [S * (4 * n * D + 4 * n**2) * H for n in seqs] in ys
    # the dotted curve: Q, K, V, O once plus the rereads, ceil(n / 128) / 2 - 1 extra reads
    extra = [2 * n * D * S * (-(-n // 128) // 2 - 1) * H for n in seqs]
    dotted = [line for line in left.lines if line.get_linestyle() == ":"]
    assert [list(d.get_ydata()) for d in dotted] == [
        [4 * n * D * S * H + e for n, e in zip(seqs, extra, strict=True)]
    ]
    ridge = BF16 / HBM  # 295.3 FLOP/byte
    assert any(list(line.get_ydata()) == pytest.approx([ridge, ridge]) for line in right.lines)
    assert [t.get_text() for t in right.texts] == ["H100 SXM BF16 的 ridge point"]
    assert fig.get_suptitle() == "attention 前向：32 个 head，d = 128，BF16，无 mask"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:2] == ["eager", "物化写法"]
    assert labels[2:] == ["FlashAttention（必需流量）", "FlashAttention 含重读（L2）"]
    plt.close(fig)


def test_implementation_comparison_moves_only_the_attention_row(blocks):
    c = tr.implementation_comparison(blocks, H, L, materialized_bps=8.0)
    # the blocks differ only in the attention row: materialized is HBM-bound at
    # s (4 l d + 4 l^2) h / B, flash matrix-bound at 4 d x kept pairs x h / P
    mat_us = S * (4 * L * D + 4 * L**2) * H / HBM * 1e6
    flash_us = 4 * D * PAIRS * H / BF16 * 1e6
    assert c["materialized_total_us"] - c["flash_total_us"] == pytest.approx(mat_us - flash_us)
    # causal eager adds a kernel: the mask (one l x l BF16 mask for all 32 heads) is added to
    # the scores, 2 + 2 B a score and 2 / 32 B to read the mask: 28 + 4 + 0.0625 B
    assert (c["eager_kernels"], c["eager_bps"]) == (7, 32.0625)
    assert c["eager_vs_mat"] == 4.0078125  # 32.0625 B a score against the 8 given
    # the rest of the block is alike in both: the GEMMs' 2 x 4096 x (4 x 4096^2 + 3 x 4096 x
    # 11008) FLOPs at the peak, 1675.6 us, and on HBM the two norms (x and y, and a 4096
    # weight), RoPE (Q and K in and out, the cos and sin tables), the two residual adds and
    # SwiGLU (gate and up in, one out): 742,408,192 B, 221.6 us. Materialized 1322.1 us, flash
    # 138.9 us: 3219.4 us against 2036.2 us
    gemm_us = 2 * L * (4 * 4096**2 + 3 * 4096 * 11008) / BF16 * 1e6
    small = 2 * (2 * L * 4096 * S + 4096 * S) + 4 * L * 4096 * S + 2 * L * D * S
    small += 2 * 3 * L * 4096 * S + 3 * L * 11008 * S
    rest_us = gemm_us + small / HBM * 1e6
    assert c["materialized_total_us"] == pytest.approx(rest_us + mat_us, rel=1e-3)
    assert c["flash_total_us"] == pytest.approx(rest_us + flash_us, rel=1e-3)
    assert c["block_ratio"] == pytest.approx((rest_us + mat_us) / (rest_us + flash_us), rel=1e-3)


def test_published_flop_formulas():
    # Kaplan et al. 2020, Table 1: 2N a token forward; 2 n_ctx d_attn a token and layer
    assert tr.kaplan_forward_flops(202_383_360, 4096) == 1_657_924_485_120
    assert tr.kaplan_attention_flops(4096, 4096, 4096) == 2 * 4096**3
    # Hoffmann et al. 2022, App. F: QK^T and PV, 2 l^2 d_attn each
    assert tr.chinchilla_attention_flops(4096, 4096, batch=2) == 2 * 4 * 4096**3


def test_flops_estimates_match_the_block(blocks):
    pair = [next(r for r in blocks[i] if r.name.startswith("attention (")) for i in tr.IMPLS]
    f = tr.flops_estimates(LLAMA2_7B, blocks["flash"], materialized=pair[1], flash=pair[2])
    # projections: 2 T (4 h^2 + 3 h ffn); the block adds two norm weights of h each
    proj = 2 * 4096 * (4 * 4096**2 + 3 * 4096 * 11008)
    assert f["proj_tflop"] == pytest.approx(proj / 1e12)
    assert f["params_m"] == (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) / 1e6
    # the causal mask keeps l (l + 1) / 2 pairs, not l^2 / 2: the ratio is (l + 1) / l
    assert f["flash_vs_kaplan"] == pytest.approx(4097 / 4096)
    # softmax's 5 FLOPs a score of the materialized 4 d + 5
    assert f["mat_softmax_part"] == pytest.approx(5 / (4 * D + 5))


def test_optimizer_comparison_counts_bytes_per_parameter():
    rows = optimizer_table(
        LLAMA2_7B, H100, param_dtype="fp32", grad_dtype="bf16", model_dtype="bf16"
    )
    params = LLAMA2_7B.parameters
    o = tr.optimizer_comparison(LLAMA2_7B, rows, 2e-3, step_forwards=3)
    # fused: FP32 master read + written (8), BF16 grad read (2), two FP32 moments read + written
    # (16), BF16 copy written (2) = 28 B; FP32 grads (4) and a separate copy kernel that reads the
    # master and writes BF16 (4 + 2): 8 + 4 + 16 + 6 = 34 B
    assert (o["opt_fused_bpp"], o["opt_megatron_bpp"]) == (28, 34)
    assert o["opt_fused_ms"] == pytest.approx(28 * params / HBM * 1e3)
    assert o["opt_vs_step"] == pytest.approx(o["opt_fused_ms"] * 1e-3 / (3 * 2e-3))


def test_backward_comparison_trades_a_matmul_for_traffic():
    stored, recompute = (
        attention_backward(1, H, L, L, D, impl=i, sram_bytes=228 * 1024)
        for i in ("stored", "flash")
    )
    b = tr.backward_comparison(stored, recompute, H100)
    # four l x l x d matmuls become five (S = QK^T again): about 5 / 4 the FLOPs
    assert b["bwd_flops_ratio"] == pytest.approx(5 / 4, rel=2e-3)
    assert b["bwd_stored_ms"] == pytest.approx(stored.bytes / HBM * 1e3)
    assert b["bwd_recompute_ms"] == pytest.approx(recompute.matrix_flops / BF16 * 1e3)
    assert (b["bwd_stored_res"], b["bwd_recompute_res"]) == ("hbm", "matrix")


def test_score_traffic_at_8192():
    q = tr.score_traffic(H100, H, 8192, D, prefix="q1_")
    scores = 4 * S * H * 8192**2  # S and S~, each written and read once
    assert q["q1_scores_gb"] == scores / 1e9 == 17.179869184
    assert q["q1_scores_ms"] == pytest.approx(scores / HBM * 1e3)
    assert q["q1_scores_fraction"] == pytest.approx(8192 / (D + 8192))  # 4 l^2 / (4 l d + 4 l^2)


def test_sram_rule_halves_the_rereads():
    q = tr.sram_rule(H100, H, L, D, z=228 * 1024)
    # r_q = 228 KiB / (4 x 128 x 2 B) = 228 rows: ceil(4096 / 228) = 18 blocks, 17 extra reads;
    # twice Z: 456 rows, 9 blocks, 8 extra reads
    kv = 2 * L * D * S * H
    assert q["rows"] == 228
    assert q["reread_before_gb"] == pytest.approx(17 * kv / 1e9)
    assert q["reread_after_gb"] == pytest.approx(8 * kv / 1e9)
    assert q["bytes_gb"] == QKVO / 1e9
    assert q["us_before"] == q["us_after"] == pytest.approx(4 * L**2 * D * H / BF16 * 1e6)
    assert q["res"] == "受矩阵单元限制"  # one bound, written once
    assert q["n_spill"] == 50 * 2**20 // (2 * D * S) == 102400
    with pytest.raises(ValueError, match="L2"):
        tr.sram_rule(adhoc("bare", 100e12, 1e12), H, L, D)


def test_flash_vs_materialized_on_the_quick_suite_shape():
    q = tr.flash_vs_materialized(H100, (4, 16, 4096, 128), prefix="q5_")
    heads = 4 * 16
    mat_bytes = S * (4 * L * D + 4 * L**2) * heads
    assert q["q5_mat_gb"] == mat_bytes / 1e9
    assert q["q5_mat_ms"] == pytest.approx(mat_bytes / HBM * 1e3)
    assert q["q5_gflop"] == pytest.approx((4 * D + 5) * L**2 * heads / 1e9)
    assert q["q5_flash_us"] == pytest.approx(4 * D * L**2 * heads / BF16 * 1e6)
    assert q["q5_ratio"] == pytest.approx(q["q5_mat_ms"] * 1e3 / q["q5_flash_us"])
    assert (q["q5_batch"], q["q5_heads"], q["q5_seq"], q["q5_d"]) == (4, 16, 4096, 128)
    assert (q["q5_mat_bound"], q["q5_flash_bound"]) == ("受 HBM 限制", "受矩阵单元限制")
