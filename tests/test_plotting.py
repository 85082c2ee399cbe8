"""The figure helpers: what they draw, where, and their errors."""

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

from roofline_book import add, gemm  # noqa: E402
from roofline_book.present import plotting  # noqa: E402


@pytest.fixture
def ax():
    plotting.use_style()
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def test_roofline_line_follows_the_model(ax):
    line, ridge_line, ridge_dot = plotting.roofline(ax, 100e12, 1e12, label="example")
    x, y = line.get_data()
    np.testing.assert_allclose(y, np.minimum(100, x))  # TFLOP/s: min(P, B * I) / 1e12
    assert 100.0 in x  # the ridge itself is a vertex of the line
    assert ridge_line.get_xdata()[0] == 100.0
    np.testing.assert_allclose(ridge_dot.get_offsets(), [[100.0, 100.0]])
    assert ax.get_xscale() == ax.get_yscale() == "log"


def test_roofline_units_and_range(ax):
    (line,) = plotting.roofline(ax, 2e11, 2e10, unit="GFLOP/s", intensity_range=(1e3, 1e4))
    assert np.all(line.get_ydata() == 200.0)  # all right of the ridge (10 FLOP/byte): flat roof
    with pytest.raises(ValueError, match="unit"):
        plotting.roofline(ax, 1e12, 1e12, unit="TB")
    with pytest.raises(ValueError, match="increasing"):
        plotting.roofline(ax, 1e12, 1e12, intensity_range=(10, 1))
    with pytest.raises(ValueError, match="intensity_range"):
        plotting.roofline(ax, 1e12, 1e12, intensity_range=(0, 1))


def test_points_sit_on_the_roof(ax):
    drawn = plotting.points(
        ax, [("add", add(2**20)), ("gemm", gemm(4096, 4096, 4096))], 100e12, 1e12, annotate=False
    )
    (add_xy,), (gemm_xy,) = (d.get_offsets() for d in drawn)
    np.testing.assert_allclose(add_xy, [1 / 6, 1 / 6])  # memory roof: B * I in TFLOP/s
    np.testing.assert_allclose(gemm_xy, [8192 / 6, 100.0])  # flat roof


def test_a_ring_keeps_a_covered_point_visible(ax):
    from roofline_book import adamw

    named = [("add", add(2**20)), ("AdamW (loop)", adamw(10**6, "loop"))]
    dot, ring = plotting.points(ax, named, 100e12, 1e12, annotate=False, rings=["AdamW (loop)"])
    assert ring.get_sizes()[0] > 2 * dot.get_sizes()[0]  # larger, and hollow
    assert ring.get_facecolors().size == 0 and dot.get_facecolors().size > 0


def test_measured_and_gemm_intensity(ax):
    (dot,) = plotting.measured(ax, [("x", 2.0, 3e12)], annotate=False)
    np.testing.assert_allclose(dot.get_offsets(), [[2.0, 3.0]])
    (curve,) = plotting.gemm_intensity(ax, [64, 128], "fp32")
    np.testing.assert_allclose(curve.get_ydata(), [2 * 64 / 12, 2 * 128 / 12])
    (tokens,) = plotting.gemm_intensity(ax, [1, 2], "bf16", k=8, n=8)
    np.testing.assert_allclose(
        tokens.get_ydata(), [gemm(1, 8, 8).intensity, gemm(2, 8, 8).intensity]
    )
    with pytest.raises(TypeError, match="sizes"):
        plotting.gemm_intensity(ax, [64.0], "fp32")


def test_style_is_okabe_ito_on_no_background_of_its_own():
    plotting.use_style()
    colors = [c["color"].lower() for c in matplotlib.rcParams["axes.prop_cycle"]]
    assert colors[0] == plotting.PALETTE["blue"].lower()
    # transparent: the page's own background (light or dark) shows through
    assert matplotlib.rcParams["savefig.facecolor"] == "none"
    assert matplotlib.rcParams["axes.facecolor"] == "none"
    assert matplotlib.rcParams["svg.hashsalt"] == "roofline-book"


def test_points_labels_take_offsets_as_data(ax):
    drawn = plotting.points(
        ax,
        [("add", add(2**20)), ("gemm", gemm(4096, 4096, 4096))],
        100e12,
        1e12,
        offsets={"gemm": (-40, 6)},
        fontsize=7.5,
    )
    add_label, gemm_label = drawn[1], drawn[3]
    assert add_label.get_text() == "add" and gemm_label.get_text() == "gemm"
    assert add_label.xyann == (5, -12)  # not named: the default, below right
    assert gemm_label.xyann == (-40, 6)
    np.testing.assert_allclose(gemm_label.xy, (8192 / 6, 100.0))  # at the point, on the flat roof
    assert gemm_label.get_fontsize() == 7.5


def test_reference_and_ridge_lines(ax):
    ax.set_yscale("log")
    line, text = plotting.ridge_line(ax, 295.4, "H100 ridge", label="ridge", linestyle=":")
    assert line.get_ydata()[0] == 295.4 and line.get_linestyle() == ":"
    assert line.get_label() == "ridge"
    assert text.get_text() == "H100 ridge" and text.xy == (0.02, 295.4) and text.xyann == (0, 3)
    vline, vtext = plotting.reference_line(ax, 347.9, "M*", vertical=True, below=True)
    assert vline.get_xdata()[0] == 347.9
    assert vtext.get_rotation() == 90 and vtext.xyann == (-3, 0)
    assert plotting.reference_line(ax, 1.0)[0].get_linestyle() == "--"  # no text: just the line
    with pytest.raises(ValueError, match="ridge"):
        plotting.ridge_line(ax, 0.0)


def test_time_bars_draw_both_bounds(ax):
    from roofline_book import time_lower_bound

    named = [
        ("add", time_lower_bound(add(4096 * 4096), 100e12, 1e12)),
        ("gemm", time_lower_bound(gemm(4096, 4096, 4096), 100e12, 1e12)),
    ]
    compute, memory = plotting.time_bars(ax, named)
    # add: 4096^2 / 100e12 s = 0.168 us of compute, 6 * 4096^2 / 1e12 s = 100.7 us of memory
    assert [round(b.get_width(), 3) for b in compute] == [0.168, 1374.39]
    assert [round(b.get_width(), 1) for b in memory] == [100.7, 100.7]  # 3 * 2 * 4096^2 B each
    labels = {t.get_text(): t.get_position()[1] for t in ax.get_yticklabels()}
    assert labels == {"add": 1, "gemm": 0}  # the first operator on top
    assert compute[0].get_y() > memory[0].get_y()  # compute bar above the memory bar
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "Time lower bound [µs]"
    with pytest.raises(ValueError, match="unit"):
        plotting.time_bars(ax, named, unit="min")


def test_traffic_bars_stack_read_on_written(ax):
    from roofline_book import adamw

    named = [("loop", adamw(1000, "loop")), ("fused", adamw(1000, "fused"))]
    read, written, *totals = plotting.traffic_bars(ax, named, per=1000)
    fused = adamw(1000, "fused")  # FP32: reads p, g, m, v (16 B), writes p, m, v (12 B)
    assert read[1].get_height() == fused.bytes_read / 1000 == 16
    assert written[1].get_y() == 16 and written[1].get_height() == 12
    assert [t.get_text() for t in totals] == [f"{adamw(1000, 'loop').bytes / 1000:.0f}", "28"]


def test_achieved_gap_joins_each_point_to_its_roof(ax):
    # the 4096^3 BF16 GEMM at 40 TFLOP/s under a 100 TFLOP/s roof; an add at half its roof
    work, small = gemm(4096, 4096, 4096), add(2**20)
    add_roof = 1e12 * small.intensity  # memory roof: B * I = 1e12 / 6 FLOP/s
    drawn = plotting.achieved_gap(
        ax, [("gemm", work, 40e12), ("add", small, add_roof / 2)], 100e12, 1e12, right={"add"}
    )
    gap, roof_dot, got_dot, label = drawn[:4]
    np.testing.assert_allclose(gap.get_segments()[0], [[work.intensity, 40], [work.intensity, 100]])
    np.testing.assert_allclose(roof_dot.get_offsets(), [[work.intensity, 100]])
    np.testing.assert_allclose(got_dot.get_offsets(), [[work.intensity, 40]])
    assert label.get_text() == "gemm: 40% of roof" and label.get_ha() == "right"
    assert drawn[7].get_text() == "add: 50% of roof" and drawn[7].get_ha() == "left"
    assert [h.get_label() for h in ax.get_legend_handles_labels()[0]] == ["roof", "achieved"]


def test_roof_labels_sit_where_they_are_told(ax):
    texts = plotting.roof_labels(
        ax, 100e12, 1e12, memory=(0.01, 1), compute=(1000, 120), ridge=(120, 1), regions_y=0.01
    )
    assert [t.get_text().split("\n")[0] for t in texts] == [
        "memory roof", "compute roof", "ridge point", "memory-bound", "compute-bound",
    ]  # fmt: skip
    assert "I* = 100 FLOP/byte" in texts[2].get_text()  # 100 TFLOP/s / 1 TB/s
    assert texts[3].get_position() == (100 / 1.3, 0.01) and texts[4].get_position() == (130, 0.01)


def test_device_rooflines_one_style_per_precision(ax):
    from roofline_book import hardware

    h100 = hardware("h100-sxm")
    drawn = plotting.device_rooflines(ax, [(h100, "H100", "blue")], {"bf16": "-", "fp32": "--"})
    lines = [a for a in drawn if hasattr(a, "get_linestyle") and a.get_label().startswith("H100")]
    assert [(line.get_label(), line.get_linestyle()) for line in lines] == [
        ("H100 BF16", "-"),
        ("H100 FP32", "--"),
    ]
    # each flat roof is that precision's dense peak, in TFLOP/s
    assert max(lines[0].get_ydata()) == pytest.approx(h100.peak_flops("bf16") / 1e12)
    assert max(lines[1].get_ydata()) == pytest.approx(h100.peak_flops("fp32") / 1e12)


def test_a_catalog_device_without_a_fixed_colour_is_drawn_in_the_palette(ax):
    # Okabe & Ito (2008), "Color Universal Design": the eight colours of the palette
    okabe_ito = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
                 "#000000"}  # fmt: skip
    from roofline_book import catalog, hardware

    assert set(plotting.PALETTE.values()) == okabe_ito
    assert plotting.roof_color("h100-sxm", "bf16") == "#0072B2"  # the book's fixed choice
    mi300x = hardware("mi300x")  # no fixed colour: one from the palette, one per precision
    colours = [plotting.roof_color("mi300x", p) for p in ("bf16", "fp8")]
    assert set(colours) <= okabe_ito and colours[0] != colours[1]
    drawn = plotting.device_rooflines(ax, [(mi300x, "MI300X", None)], {"bf16": "-"})
    assert drawn[0].get_color() == colours[0]
    assert all(plotting.roof_color(k, p) for k, d in catalog().items() for p in d.precisions)
    # on one chart no two roofs share a colour, fixed or not
    both = [(hardware("h100-sxm"), "H100", None), (mi300x, "MI300X", None)]
    lines = plotting.device_rooflines(ax, both, {"bf16": "-", "fp8": "--"})
    roofs = [a for a in lines if a.get_label().startswith(("H100", "MI300X"))]
    assert len(roofs) == 4 and len({a.get_color() for a in roofs}) == 4
    assert roofs[0].get_color() == "#0072B2"  # H100 BF16 keeps the book's colour
    with pytest.raises(ValueError, match="device must be a catalog device"):
        plotting.roof_color("tpu-v9", "bf16")


def test_square_gemm_fraction_reaches_one_past_the_ridge(ax):
    from roofline_book import hardware

    h100 = hardware("h100-sxm")
    sizes = [64, 1024, 4096]
    bf16, fp32 = plotting.square_gemm_fraction(ax, h100, sizes, {"bf16": "blue", "fp32": "red"})
    # BF16 square GEMM intensity 2n/(3*2) = n/3: 64 -> 21.3 FLOP/byte, under the 295 ridge
    # (vendor dense 989.4e12 over 3.35e12 B/s)
    assert bf16.get_ydata()[0] == pytest.approx(64 / 3 * 3.35e12 / 989.4e12)
    assert list(bf16.get_ydata()[1:]) == [1.0, 1.0]  # n/3 >= 295 from n = 1024 on
    # FP32 intensity 2n/(3*4) = n/6: 10.7 FLOP/byte at n = 64, under the FP32 ridge (about 20)
    assert fp32.get_ydata()[0] == pytest.approx(64 / 6 * 3.35e12 / h100.peak_flops("fp32"))
    assert list(fp32.get_ydata()[1:]) == [1.0, 1.0]
    assert bf16.get_label() == "BF16 (ridge 295 FLOP/byte)"  # 989.4 / 3.35 = 295.3


def test_attention_sweep_draws_both_impls_and_the_floor():
    from roofline_book import attention

    fig, (left, right) = plt.subplots(1, 2)
    try:
        drawn = plotting.attention_sweep(
            left, right, [512, 1024], 4, 64, {"materialized": "red", "flash": "blue"}
        )
        labels = [a.get_label() for a in drawn]
        assert labels == ["materialized", "materialized", "flash", "flash", "Q, K, V, O once"]
        assert list(drawn[0].get_ydata()) == [
            attention(1, 4, n, n, 64, "bf16", impl="materialized").bytes for n in (512, 1024)
        ]
        assert list(drawn[-1].get_ydata()) == [4 * 4 * n * 64 * 2 for n in (512, 1024)]
        assert left.get_yscale() == "log" and right.get_xscale() == "log"
    finally:
        plt.close(fig)


def test_log2_axis_labels_plain_integers(ax):
    ax.plot([1, 64], [1, 2])
    plotting.log2_axis(ax, [1, 4, 16, 64])
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "4", "16", "64"]
    assert len(ax.xaxis.get_minorticklocs()) == 0
    with pytest.raises(ValueError, match="axis must be 'x' or 'y'"):
        plotting.log2_axis(ax, axis="z")


# --------------------------------------------------------------------------
# The hierarchical roofline: ceilings per unit, slopes per memory level


def test_ceilings_draw_a_flat_per_flop_unit_and_a_slope_per_level(ax):
    import dataclasses

    from roofline_book import adhoc, hardware

    h100 = hardware("h100-sxm")
    without = dataclasses.replace(h100, l2_bandwidth=None)
    drawn = plotting.ceilings(ax, without, "bf16", intensity_range=(0.1, 1e4))
    lines = [a for a in drawn if hasattr(a, "get_ydata")]
    tops = sorted(float(np.max(line.get_ydata())) for line in lines)
    # vector and matrix flats (FLOP/s); no special-function flat, which counts evaluations;
    # the HBM slope climbs to the highest flat. The vector units get the packed BF16 FMA peak,
    # 133.8 TFLOP/s, and the rate of an add (one FLOP per lane slot), half of it: 66.9
    vector, matrix = h100.ceiling("vector") / 1e12, h100.peak_flops("bf16") / 1e12
    assert vector == pytest.approx(133.8)
    assert tops == pytest.approx([133.8 / 2, vector, matrix, matrix])
    words = [a.get_text() for a in drawn if hasattr(a, "get_text")]
    assert "vector units, FMA 133.8 TFLOP/s" in words and "HBM 3.35 TB/s" in words
    assert "vector units, add or multiply 66.9 TFLOP/s" in words
    assert not any("special" in w for w in words)
    # with an L2 bandwidth (10 TB/s here) a second, dashed slope
    with_l2 = dataclasses.replace(h100, l2_bandwidth=10e12)
    slopes = [a for a in plotting.ceilings(ax, with_l2) if hasattr(a, "get_ydata")][3:]
    assert [line.get_linestyle() for line in slopes] == ["-", "--"]
    x = slopes[1].get_xdata()
    np.testing.assert_allclose(slopes[1].get_ydata()[:5], 10 * x[:5])  # 10 TB/s x I, in TFLOP/s
    np.testing.assert_allclose(slopes[0].get_ydata()[:5], 3.35 * x[:5])
    one_peak = adhoc("one", {"bf16": 100e12}, 1e12, l2_bandwidth=4e12)
    assert len([a for a in plotting.ceilings(ax, one_peak) if hasattr(a, "get_ydata")]) == 3


def test_placed_puts_an_operator_once_per_level_under_its_units_roof(ax):
    import dataclasses

    from roofline_book import attention, hardware, time_bound
    from roofline_book.ops import fa3_tile

    h100 = dataclasses.replace(hardware("h100-sxm"), l2_bandwidth=8e12)
    fa = attention(1, 8, 2048, 2048, 128, tile=fa3_tile(128))
    drawn = plotting.placed(ax, [("add", add(2**20)), ("fa", fa)], h100, unit_ticks=["fa"])
    dots = [a for a in drawn if hasattr(a, "get_offsets")]
    # the add: x = 1/6, y = FLOPs / (6 bytes per FLOP at 3.35 TB/s) = 3.35e12 / 6, at HBM and
    # (no re-reads) at the same intensity in L2
    np.testing.assert_allclose(dots[0].get_offsets(), [[1 / 6, 3.35 / 6]])
    np.testing.assert_allclose(dots[1].get_offsets(), [[1 / 6, 3.35 / 6]])
    # flash: the matrix FLOPs (4 N^2 d per head) over the bound, never above the matrix roof;
    # at HBM over the compulsory bytes, at L2 over every byte, re-reads included
    t = time_bound(fa, h100)
    matrix = 8 * 4 * 2048**2 * 128
    assert fa.matrix_flops == matrix
    rate = matrix / t.seconds / 1e12
    assert rate <= h100.peak_flops("bf16") / 1e12 * (1 + 1e-12)
    np.testing.assert_allclose(dots[2].get_offsets(), [[matrix / fa.bytes, rate]])
    np.testing.assert_allclose(
        dots[3].get_offsets(), [[matrix / (fa.bytes + fa.reread_bytes), rate]]
    )
    # each point lies under its own level's slope
    assert rate <= 3.35 * matrix / fa.bytes and rate <= 8 * matrix / (fa.bytes + fa.reread_bytes)
    # and a tick per other unit at the rate its time allows the matrix units
    ticks = dots[4:]
    assert len(ticks) == 2
    special = ticks[1].get_offsets()[0][1]
    assert special == pytest.approx(matrix / (8 * 2048**2 / h100.ceiling("special")) / 1e12)


def test_figure_words_follow_the_language():
    try:
        plotting.set_language("zh")
        assert plotting.text("vector") == "向量单元"
        assert plotting.text("of roof", name="add", fraction=0.25) == "add：roof 的 25%"
        with pytest.raises(ValueError, match="language must be one of en, zh"):
            plotting.set_language("fr")
    finally:
        plotting.set_language("en")
    assert plotting.text("vector") == "vector units"
    assert set(plotting.TEXTS["en"]) == set(plotting.TEXTS["zh"])  # every word in both


def test_memory_hierarchy_levels_from_the_whitepaper(ax):
    from roofline_book import adhoc, hardware

    labels, boundary = plotting.memory_hierarchy(ax, hardware("h100-sxm"))
    # H100 whitepaper: 50 MiB L2, 256 KiB L1 + shared per SM (228 KiB of it shared), 256 KiB
    # registers per SM; HBM3 at 3.35 TB/s (datasheet), 81559 MiB = 79.65 GiB as nvidia-smi
    # reports the "80 GB" (a binary capacity). Bottom (HBM) to top (compute).
    texts = [t.get_text() for t in labels]
    assert len(texts) == 5
    assert texts[0].startswith("HBM") and "79.65 GiB" in texts[0] and "3.35 TB/s" in texts[0]
    assert texts[1] == "L2 cache\n50 MiB"
    assert "256 KiB" in texts[2] and "228 KiB" in texts[2]
    assert texts[3] == "registers\n256 KiB per SM"
    # the traffic boundary lies between the HBM label and the L2 label
    y = boundary.get_ydata()[0]
    assert labels[0].get_position()[1] < y < labels[1].get_position()[1]
    with pytest.raises(ValueError, match="l2_cache"):
        plotting.memory_hierarchy(ax, adhoc("mine", 100e12, 1e12))


def test_reference_line_text_on_the_right(ax):
    line, label = plotting.reference_line(ax, 100.0, "ridge", side="right")
    assert label.xy == (0.98, 100.0) and label.get_ha() == "right"
    _, left = plotting.reference_line(ax, 10.0, "limit")
    assert left.xy == (0.02, 10.0) and left.get_ha() == "left"
    with pytest.raises(ValueError, match="side must be 'left' or 'right'"):
        plotting.reference_line(ax, 1.0, "x", side="top")
