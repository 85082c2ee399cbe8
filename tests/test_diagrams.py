"""The schematic diagrams draw the package's numbers, legibly.

Each diagram is drawn in the book's Chinese font; the test reads the words it wrote and
checks the numbers in them against hand arithmetic (written out beside each), then checks
that no two labels overlap (``layout.overlaps``), that every label lies inside the figure,
that no glyph is missing, and that every Latin word is one the book's figures may use.
"""

from __future__ import annotations

import logging
import re

import matplotlib
import pytest

matplotlib.use("Agg")

pytest.importorskip("noto_cjk_sans_otc", reason="the [zh] extra (noto-cjk-sans-otc)")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from test_figure_language import ALLOWED, _names, english_words  # noqa: E402

from roofline_book.present import plotting  # noqa: E402
from roofline_book.present.diagrams import flash, inference, kernels  # noqa: E402
from roofline_book.present.plotting.layout import overlaps  # noqa: E402


def words(fig) -> str:
    """Every text the figure shows, one per line."""
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


def legible(fig) -> None:
    """No overlapping labels, every label inside the figure, only allowed Latin words."""
    assert overlaps(fig) == []
    renderer = FigureCanvasAgg(fig).get_renderer()
    frame = fig.bbox
    for ax in fig.axes:
        for t in ax.texts:
            box = t.get_window_extent(renderer)
            inside = (
                box.x0 >= frame.x0 - 1
                and box.x1 <= frame.x1 + 1
                and box.y0 >= frame.y0 - 1
                and box.y1 <= frame.y1 + 1
            )
            assert inside, (t.get_text(), box, frame)
    # mathtext reaches the SVG one glyph a <tspan>: its letters are symbols, not words
    plain = [re.sub(r"\$[^$]*\$", " ", t.get_text()) for ax in fig.axes for t in ax.texts]
    svg = "".join(f"<text>{t}</text>" for t in plain)
    assert english_words(svg, ALLOWED | _names()) == []


def test_gemm_tiles_counts_tiles_and_strip_bytes(zh):
    fig = kernels.gemm_tiles()
    text = words(fig)
    # 4096 / 128 = 32 tiles a side: 32 x 32 = 1024 output tiles
    assert "32 × 32 = 1024" in text
    # a strip is 128 x 4096 BF16 elements: 128 * 4096 * 2 B = 1048576 B = 1 MiB
    assert "A 的行条：128 × 4096，1 MiB" in text
    assert "W 的列条：4096 × 128，1 MiB" in text
    # one tile reads both strips (2 MiB) and writes 128 * 128 * 2 B = 32 KiB
    assert "每个分块读 2 MiB、写 32 KiB" in text
    # I = 2 * 128 * 128 * 4096 / (2 * 1048576 + 32768) = 134217728 / 2129920 = 63.015
    assert "$I$ = 63.0 FLOP/byte" in text
    # the whole GEMM over its compulsory traffic: 2 n^3 / (3 * 2 n^2) = n / 3 = 1365.33
    assert "$I$ = 1365.3 FLOP/byte" in text and "整个 GEMM 按必需流量：" in text
    # 8 grid lines a side: 32 / 8 = 4 tiles a cell
    assert "每格 4 × 4 个分块" in text
    # each of the 32 tile columns reads all of A; each of the 32 tile rows all of W
    assert "A 读 32 遍，W 读 32 遍" in text
    legible(fig)


def test_gemm_tiles_follows_the_tile(zh):
    fig = kernels.gemm_tiles(tile=256)
    text = words(fig)
    # 4096 / 256 = 16 a side, 256 tiles; strips 256 * 4096 * 2 B = 2 MiB
    assert "16 × 16 = 256" in text and "A 的行条：256 × 4096，2 MiB" in text
    # I = 2 * 256^2 * 4096 / (2 * 2 MiB + 256^2 * 2 B) = 536870912 / 4325376 = 124.12
    assert "$I$ = 124.1 FLOP/byte" in text
    legible(fig)


def test_gemm_tiles_of_a_thin_gemm(zh):
    # a prefill-like GEMM: 512 x 4096 times 4096 x 11008; ceil(11008 / 128) = 86
    fig = kernels.gemm_tiles(m=512, n=11008, k=4096)
    # A is read by each of the 86 tile columns, W by each of the 512 / 128 = 4 tile rows
    assert "4 × 86 = 344" in words(fig) and "A 读 86 遍，W 读 4 遍" in words(fig)
    # whole GEMM: 512 * 4096 * 11008 / (512 * 4096 + 4096 * 11008 + 512 * 11008) = 437.04
    assert "$I$ = 437.0 FLOP/byte" in words(fig)
    legible(fig)


def test_gemm_tiles_few_tokens_lower_the_whole_gemm_not_the_tile(zh):
    # M = 256 tokens through a 4096 x 4096 BF16 weight: the whole GEMM's ideal intensity is
    # 256 * 4096 / (2 * 256 + 4096) = 227.56, below H100's BF16 ridge 989.4 / 3.35 = 295.3;
    # one 128 x 128 tile alone is still 63.0, the same as at M = 4096 (it depends on t and K only)
    text = words(kernels.gemm_tiles(m=256, n=4096, k=4096, tile=128))
    assert "$I$ = 227.6 FLOP/byte" in text and "$I$ = 63.0 FLOP/byte" in text
    assert "2 × 32 = 64" in text and "A 读 32 遍，W 读 2 遍" in text


def test_gemm_tiles_draws_a_thin_operand_taller(zh):
    # M = 256: two tile rows; to scale (4096 -> 2 inches) a row would be 128 / 2048 = 0.0625 in,
    # so A and C are stretched along M and say so; a square GEMM is drawn to scale
    assert "（M 方向放大画）" in words(kernels.gemm_tiles(m=256, n=4096, k=4096, tile=128))
    assert "放大" not in words(kernels.gemm_tiles())


def test_factory_labels_the_device_figures(zh):
    fig = kernels.factory()
    text = words(fig)
    # H100 SXM datasheet: 989.4 TFLOP/s dense BF16, 3.35 TB/s HBM3, 132 SMs
    assert "989.4 TFLOP/s" in text and "3.35 TB/s" in text and "132 个 SM" in text
    # nvidia-smi reports 81559 MiB = 81559 / 1024 GiB = 79.65 GiB
    assert "79.65 GiB" in text
    # ridge: 989.4e12 / 3.35e12 = 295.3 FLOP/byte
    assert "= 295 FLOP/byte" in text
    assert "T_0" in text and "µs" not in text  # no overhead given: no number for it
    legible(fig)


def test_factory_follows_the_device(zh):
    fig = kernels.factory(device="a100-sxm", overhead=5e-6)
    text = words(fig)
    # A100 SXM datasheet: 312 TFLOP/s BF16, 2039 GB/s; 312e12 / 2.039e12 = 153.0
    assert "312 TFLOP/s" in text and "2.039 TB/s" in text and "= 153 FLOP/byte" in text
    assert "约 5 µs" in text
    legible(fig)


def test_fusion_bytes_of_three_kernels_and_one(zh):
    fig = kernels.fusion()
    text = words(fig)
    # one tensor: 4096 * 4096 BF16 elements * 2 B = 33554432 B = 33.6 MB (decimal, as the prose)
    assert "每个张量 16777216 个元素" in text and "BF16，33.6 MB" in text
    # unfused: 3 kernels, each reads one tensor and writes one: 3 x 33.55 MB = 100.7 MB each way,
    # 201.3 MB in all
    assert "不融合：3 个 kernel" in text
    assert "读 101 MB" in text and "写 101 MB" in text and "共 201 MB" in text
    # fused: read x once, write y once: 2 x 33.55 = 67.1 MB
    assert "融合：1 个 kernel" in text and "共 67.1 MB" in text
    assert "MiB" not in text
    legible(fig)


def test_fusion_follows_size_and_precision(zh):
    # 2^20 FP32 elements = 4194304 B = 4.19 MB a tensor; unfused 6 x 4.194 = 25.2 MB,
    # fused 2 x 4.194 = 8.39 MB
    text = words(kernels.fusion(numel=2**20, dtype="fp32"))
    assert "共 25.2 MB" in text and "共 8.39 MB" in text and "FP32，4.19 MB" in text


def test_flash_blocks_traffic_against_the_materialised_scores(zh):
    fig = flash.flash_blocks()
    text = words(fig)
    # Q, K, V read once and O written once: 4 * 4096 * 128 * 2 B = 4194304 B = 4 MiB
    assert "共 4 MiB" in text
    # 4096 / 128 = 32 Q blocks each read K and V (2 * 4096 * 128 * 2 B = 2 MiB): 31 re-reads
    assert "多 62 MiB" in text and "循环\n32 次" in text
    # S is 4096 * 4096 * 2 B = 32 MiB; S and S~ each written and read: 4 MiB + 4 * 32 MiB
    assert "32 MiB" in text and "共 132 MiB" in text
    # one head, no mask; the online softmax keeps a running max m and a running sum rho
    # (not l, which would read as the sequence length), updated from m_old to m_new (no prime)
    assert "HBM（一个 head）" in text and "无 mask\n对 j" in text
    assert "\\rho_{\\mathrm{new}}" in text and "m_{\\mathrm{old}}" in text and "m'" not in text
    assert "片上 SRAM（shared memory）" in text
    legible(fig)


def test_flash_blocks_follow_the_block_size(zh):
    fig = flash.flash_blocks(block_q=64)
    # 4096 / 64 = 64 Q blocks: 63 re-reads of 2 MiB = 126 MiB; the K/V loop is unchanged
    text = words(fig)
    assert "多 126 MiB" in text and "循环\n32 次" in text and "64 × 128" in text
    legible(fig)


def test_flash_blocks_of_fa3_with_a_cluster(zh):
    # FlashAttention-3 at d = 128: 128-row Q blocks, 176-row K/V blocks, clusters of 2.
    # ceil(4096 / 176) = 24 K/V blocks; 32 Q blocks in 16 clusters read K and V 16 times:
    # 15 re-reads of 2 MiB = 30 MiB
    fig = flash.flash_blocks(block_k=176, cluster=2)
    text = words(fig)
    assert "循环\n24 次" in text and "每 2 个 Q 块（一个 cluster）再读一遍，多 30 MiB" in text
    assert "176 × 128" in text and "128 × 176" in text
    legible(fig)


def test_cluster_strips_bytes_saved(zh):
    fig = kernels.cluster_strips()
    text = words(fig)
    # each strip: 128 * 4096 * 2 B = 1 MiB
    assert "共用的 A 行条：128 × 4096，1 MiB" in text and "W 列条：4096 × 128，1 MiB" in text
    # apart: 2 blocks x (A strip + W strip) = 4 MiB; a cluster reads A once: 3 MiB, 1 MiB saved
    assert "共 4 MiB" in text and "共 3 MiB，省 1 MiB（25%）" in text
    legible(fig)


def test_cluster_strips_of_four(zh):
    fig = kernels.cluster_strips(cluster=4)
    # apart 4 x 2 MiB = 8 MiB; shared 1 + 4 = 5 MiB; saved 3 MiB = 37.5%, printed 38%
    text = words(fig)
    assert "共 8 MiB" in text and "共 5 MiB，省 3 MiB（38%）" in text and "block 3" in text
    legible(fig)


def test_kv_cache_steps_bytes_per_token(zh):
    fig = inference.kv_cache_steps()
    text = words(fig)
    # Llama-2-7B: 32 layers, 32 KV heads of 128, BF16: m_kv = 2 * 32 * 32 * 128 * 2 B
    # = 524288 B = 524 kB (decimal, as the book's traffic); one layer's row 2 * 32 * 128 * 2 B
    # = 16384 B = 16.4 kB
    assert " = 524 kB" in text and "2 × 32 × 128 × 2 B = 16.4 kB" in text
    # prefill writes the 3 prompt rows: 3 * 524288 B = 1572864 B = 1.57 MB; step 1 reads them
    assert "写 3 行 = 1.57 MB" in text and "读 3 行 = 1.57 MB" in text
    # step 4 reads 3 + 3 = 6 rows: 6 * 524288 B = 3145728 B = 3.15 MB
    assert "第 4 步" in text and "读 6 行 = 3.15 MB" in text and "写 1 行 = 524 kB" in text
    legible(fig)


def test_kv_cache_steps_follow_the_model(zh):
    # Llama-3-8B (GQA): 8 KV heads: m_kv = 2 * 32 * 8 * 128 * 2 B = 131072 B = 131 kB
    fig = inference.kv_cache_steps(model="llama-3-8b", prompt=2, steps=2)
    text = words(fig)
    # one layer's row 4096 B = 4.1 kB; step 2 reads 3 rows: 393216 B = 393 kB
    assert "2 × 8 × 128 × 2 B = 4.1 kB" in text and " = 131 kB" in text
    assert "读 3 行 = 393 kB" in text and "第 3 步" not in text
    legible(fig)


def test_prefill_decode_intensities(zh):
    fig = inference.prefill_decode()
    text = words(fig)
    # W: the MLP up projection of Llama-2-7B, 4096 x 11008 BF16 = 90177536 B = 90.2 MB
    assert "4096 × 11008" in text and "每次读 90.2 MB" in text
    # prefill, M = 512: I = 512 * 4096 * 11008 / (512 * 4096 + 4096 * 11008 + 512 * 11008)
    #   = 23085449216 / 52822016 = 437.0, above the H100 ridge 989.4 / 3.35 = 295.3
    assert "$I$ = 437 > $I^*$ = 295 FLOP/byte" in text
    # decode, M = 8: I = 8 * 4096 * 11008 / (8 * 4096 + 4096 * 11008 + 8 * 11008) = 7.979
    assert "$I$ = 7.98 < $I^*$ = 295 FLOP/byte" in text
    assert "compute-bound" in text and "memory-bound" in text
    legible(fig)


def test_prefill_decode_follow_batch_and_device(zh):
    # batch 512 decodes as many tokens as the prompt: the same intensity, 437
    # A100 SXM ridge: 312e12 / 2.039e12 = 153.0
    text = words(inference.prefill_decode(batch=512, device="a100-sxm"))
    assert text.count("$I$ = 437 > $I^*$ = 153 FLOP/byte") == 2
    # prompt 4096 (chapter 12): I = 4096 * 11008 / (4096 + 2 * 11008) = 1726.7, three figures
    # and no exponent: 1730
    assert "$I$ = 1730 > $I^*$ = 295" in words(inference.prefill_decode(prompt=4096))


def test_a_diagram_draws_on_a_given_axes(zh):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 5))
    ax = fig.add_axes((0, 0, 1, 1))
    assert kernels.fusion(ax=ax) is fig and len(fig.axes) == 1
    assert "共 201 MB" in words(fig)


def test_the_checks_catch_bad_labels(caplog):
    # the checks above must be able to fail: Chinese inside mathtext has no glyph,
    # and a label past the canvas' edge is outside the figure
    from roofline_book.present.diagrams import _draw

    plotting.use_cjk_font()
    with matplotlib.rc_context({"font.family": plotting.CJK_FONTS}):
        fig, ax = _draw.canvas(2, 1)
        _draw.label(ax, 1, 0.5, "$T_0$ 开工")
        _draw.label(ax, 1.9, 0.5, "一段很长的文字", ha="left")
        with caplog.at_level(logging.WARNING, logger="matplotlib"):
            with pytest.raises(AssertionError, match="一段很长的文字"):
                legible(fig)
    assert any("glyph" in r.getMessage() for r in caplog.records)
