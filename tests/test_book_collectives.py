"""The collectives chapter's helpers (roofline_book.book.collectives), checked against the
alpha-beta costs worked out by hand: ring all-reduce 2(p-1) steps and 2(p-1)/p x m per rank
(Patarasuk & Yuan 2009), binomial tree 2 ceil(log2 p) steps of the whole buffer (Thakur et al.
2005), nccl-tests' doc/PERFORMANCE.md (algbw = m / T, all-reduce busbw = algbw x 2(p-1)/p), the
H100 SXM's NVLink 4 (900 GB/s both ways, 450 GB/s each way) and the busbw NVIDIA quotes in
nccl-tests issue #212 (ring 370 GB/s, NVLS 480 GB/s on 8 GPUs)."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from roofline_book import hardware  # noqa: E402
from roofline_book.book import collectives as bc  # noqa: E402
from roofline_book.measure.bench.timing import Timing  # noqa: E402
from roofline_book.measure.collectives import Fit, Measurement, Point  # noqa: E402
from roofline_book.measure.published import measurement  # noqa: E402

B, ALPHA = 400e9, 2e-6  # an illustrative link: byte/s each way, s a step


pytestmark = pytest.mark.usefixtures("chinese_figures")


def test_shape_table_writes_steps_shares_and_busbw_factors():
    # p = 8: ring all-reduce 14 steps, f = 14/8 = 1.75; tree 2 x 3 = 6 steps of the whole
    # buffer, f = 6; all-gather 7 steps, f = 7/8; busbw factors 2 x 7/8 and 7/8
    shape = {("all_reduce", "ring"): (14.0, 1.75), ("all_reduce", "tree"): (6.0, 6.0)}
    shape[("all_gather", "ring")] = (7.0, 0.875)
    lines = bc.shape_table(shape, 8).data.splitlines()
    assert lines[0].split("|")[1:-1] == [
        " 集合通信   ",
        " 算法   ",
        "   步数 k ",
        "   份额 f ",
        "   busbw 系数 ",
    ]
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in lines[2:]]
    assert cells == [
        ["all-reduce", "ring", "14", "1.75", "1.75"],
        ["all-reduce", "tree", "6", "6", "1.75"],
        ["all-gather", "ring", "7", "0.875", "0.875"],
    ]


def test_all_reduce_steps_ring_linear_tree_logarithmic():
    # ring 2(p-1); tree 2 ceil(log2 p)
    assert bc.all_reduce_steps(8) == {"ring": 14, "tree": 6}
    assert bc.all_reduce_steps(64) == {"ring": 126, "tree": 12}
    assert bc.all_reduce_steps(5) == {"ring": 8, "tree": 6}


def test_latency_figures_small_message_pays_latency():
    f = bc.latency_figures(8, B, ALPHA, small=64 * 2**10, large=2**30)
    # 64 KiB: 14 x 2 us = 28 us of latency + 1.75 x 65536 / 400e9 s = 0.28672 us
    assert f["ar_small_us"] == pytest.approx(28.28672)
    assert f["ar_small_lat"] == pytest.approx(28 / 28.28672)
    # 1 GiB: 0.028 ms + 1.75 x 2**30 / 400e9 s = 0.028 + 4.69762048 ms
    assert f["ar_large_ms"] == pytest.approx(4.72562048)
    assert f["ar_large_lat"] == pytest.approx(0.028 / 4.72562048)
    # m_1/2 = k alpha B / f = 14 x 2e-6 x 400e9 / 1.75 = 6.4e6 B
    assert f["ar_half_mb"] == pytest.approx(6.4)
    assert (f["ar_k"], f["ex_bw"], f["ex_alpha_us"], f["ex_n"]) == (14, 400, 2, 8)


def test_ring_algbw_falls_with_ranks():
    # latency-free ring: T = 2(p-1)/p x m / B, so algbw = B p / (2(p-1))
    alg = bc.ring_algbw(2**30, B, ranks=(2, 64))
    assert alg[2] == pytest.approx(400e9)
    assert alg[64] == pytest.approx(400e9 * 64 / 126)


def test_switch_busbw_limit_and_h100_figures():
    # NVLS: each GPU sends the buffer once, algbw up to 450 GB/s; busbw x 2 x 7/8 = 787.5 GB/s
    assert bc.switch_busbw_limit(8, 8e9, 450e9) == pytest.approx(787.5e9)
    ring, nvls = (measurement(f"nccl-tests-allreduce-h100-{a}") for a in ("ring", "nvls"))
    f = bc.switch_reduce_figures(hardware("h100-sxm"), ring, nvls)
    assert f["ring_busbw"] == 370 and f["nvls_busbw"] == 480
    assert f["h100_link"] == pytest.approx(450)
    assert f["ring_share"] == pytest.approx(370 / 450)
    assert f["nvls_allowed"] == pytest.approx(787.5)
    assert f["nvls_factor"] == pytest.approx(1.75) and f["h100_gpus"] == 8
    assert f["h100_alpha_us"] == pytest.approx(0.6)  # NCCL's NVLink ring step (LL protocol)


def test_published_busbw_figure_draws_model_limits_and_points():
    ring, nvls = (measurement(f"nccl-tests-allreduce-h100-{a}") for a in ("ring", "nvls"))
    sizes = [2.0**20, 2.0**34]
    fig = bc.published_busbw_figure(hardware("h100-sxm"), ring, nvls, sizes, "H100 SXM")
    ax = fig.axes[0]
    assert ax.get_title() == "8 块 H100 SXM 的 all-reduce busbw"
    model, link, allowed = ax.lines[:3]
    # model busbw = 1.75 m / (14 x 0.6 us + 1.75 m / 450e9), in GB/s
    expected = [1.75 * s / (14 * 0.6e-6 + 1.75 * s / 450e9) / 1e9 for s in sizes]
    assert list(model.get_ydata()) == pytest.approx(expected)
    assert link.get_ydata()[0] == pytest.approx(450)
    assert allowed.get_ydata()[0] == pytest.approx(787.5)
    points = sorted(tuple(c.get_offsets()[0]) for c in ax.collections)
    assert points == [(8e9, 370), (8e9, 480)]
    texts = {t.get_text() for t in ax.texts}
    assert {"NVLink 每个方向 450 GB/s", "ring 实测 370", "NVLS 实测 480"} <= texts
    assert "交换芯片归约时允许的 busbw 788 GB/s" in texts  # 787.5 rounds to even


def test_cross_node_figures_busiest_link_plus_latency():
    f = bc.cross_node_figures(2**30, 8, 4, B, ALPHA, 50e9, 10e-6)
    # inside: reduce-scatter + all-gather, 2 x 7/8 x 2**30 B / 400e9 = 4.69762048 ms
    assert f["h_in_ms"] == pytest.approx(4.69762048)
    # NICs: all-reduce of 2**30 / 8 over 4 nodes, 2 x 3/4 x 2**27 / 50e9 = 4.02653184 ms
    assert f["h_nic_ms"] == pytest.approx(4.02653184)
    # layered: busiest link + 7 x 2 + 7 x 2 + 6 x 10 us of latency = 4.69762048 + 0.088 ms
    assert f["h_ms"] == pytest.approx(4.78562048)
    # flat ring of 32: 2 x 31/32 x 2**30 B sent, 1/8 of it on the NIC = 5.20093696 ms;
    # latency 56 x 2 + 6 x 10 us = 0.172 ms
    assert f["ring_ms"] == pytest.approx(5.37293696)
    # every hop on a NIC: 62 x 10 us + 2 x 31/32 x 2**30 / 50e9
    every = 0.62 + 2 * 31 / 32 * 2**30 / 50e9 * 1e3
    assert f["every_ms"] == pytest.approx(every)
    assert f["every_gain"] == pytest.approx(every / 5.37293696)
    assert (f["h_nodes"], f["h_per_node"], f["h_ranks"]) == (4, 8, 32)
    assert (f["h_nic_bw"], f["h_nic_alpha_us"]) == pytest.approx((50, 10))


# A made-up run: two ranks, all-reduce times exactly 100 us + m / 1e9 (f = 2 x 1/2 = 1)
FIXED, BETA = 100e-6, 1e9
SIZES = (8, 2**10, 2**20)


def _run(beta: float | None = BETA) -> Measurement:
    points = tuple(Point("all_reduce", s, 2, Timing((FIXED + s / BETA,), inner=1)) for s in SIZES)
    return Measurement("gloo", 2, points, {"all_reduce": Fit(FIXED, beta)}, "2.13.0+cpu")


def test_measured_figures_from_the_fit_and_largest_message():
    f = bc.measured_figures(_run(), "all_reduce")
    t = FIXED + 2**20 / BETA  # 1.148576 ms
    assert f["m_alpha_us"] == pytest.approx(100) and f["m_beta_gbs"] == pytest.approx(1)
    assert f["m_largest_mib"] == 1 and f["m_largest_ms"] == pytest.approx(1.148576)
    assert f["m_largest_busbw"] == pytest.approx(2**20 / t / 1e9)  # busbw factor 1 at p = 2
    # m_1/2 = k alpha_step B / f = 2 x 50 us x 1e9 / 1 = 1e5 B
    assert f["m_half_kb"] == pytest.approx(100)
    assert f["fit_worst"] == pytest.approx(BETA / (2**20 / t))
    assert (f["m_points"], f["m_torch"]) == (3, "2.13.0+cpu")
    assert f["m_shape"].startswith("形状与前面 ring 的模型曲线相同")
    # a sweep still on the plateau: largest time under twice the smallest
    flat = Measurement("gloo", 2, _run().points[:2], {"all_reduce": Fit(FIXED, BETA)}, "x")
    assert bc.measured_figures(flat, "all_reduce")["m_shape"].startswith("这里小消息与大消息")


def test_fit_table_and_missing_bandwidth():
    lines = bc.fit_table(_run()).data.splitlines()
    # 100 us, 1.00 GB/s, busbw of 1 MiB: 2**20 / 1.148576e-3 s = 0.91 GB/s
    assert [c.strip() for c in lines[2].split("|")[1:-1]] == ["all-reduce", "100", "1.00", "0.91"]
    assert [c.strip() for c in bc.fit_table(_run(None)).data.splitlines()[2].split("|")][3] == "—"
    with pytest.raises(ValueError, match="all_reduce"):
        bc.measured_figures(_run(None), "all_reduce")
    with pytest.raises(ValueError, match="no op"):
        bc.fit_gap(_run(None))


def test_measured_figure_draws_points_and_fitted_model():
    fig = bc.measured_figure(_run(), "all_reduce", title="两个进程")
    left, right = fig.axes
    assert (left.get_title(), right.get_title()) == ("两个进程", "busbw")
    model = [line for line in left.lines if line.get_label() == "拟合的 alpha-beta 模型"][0]
    # the model reproduces the made-up times: 100 us + m / 1e9
    assert list(model.get_ydata()) == pytest.approx([FIXED + s / BETA for s in SIZES])
    rule = [line for line in left.lines if list(line.get_ydata()) == [FIXED, FIXED]]
    assert len(rule) == 1
    # right: busbw = m / T in GB/s, and the fitted bandwidth's rule at 1 GB/s
    bus = [line for line in right.lines if line.get_label() == "拟合的 alpha-beta 模型"][0]
    assert list(bus.get_ydata()) == pytest.approx([s / (FIXED + s / BETA) / 1e9 for s in SIZES])
    assert any(list(line.get_ydata()) == [1.0, 1.0] for line in right.lines)
    assert {t.get_text() for t in left.texts} == {"拟合的固定时间"}
    assert {t.get_text() for t in right.texts} == {"拟合的带宽"}
    # ticks stay inside the view
    lo, hi = left.get_xlim()
    assert all(lo <= x <= hi for x in left.get_xticks())


def test_share_fraction():
    # ring all-reduce at 16 ranks 2 x 15/16; all-gather at 8 ranks 7/8; a ratio of 1/2
    assert bc.share_fraction(2 * 15 / 16) == "15/8"
    assert bc.share_fraction(7 / 8) == "7/8" and bc.share_fraction(0.5) == "1/2"
    assert bc.share_fraction(0.3333333, max_denominator=64) == "1/3"
