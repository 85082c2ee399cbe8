"""集合通信一章的计算与图：alpha-beta 模型的表与数、H100 上发表的 busbw、跨节点的 all-reduce，
以及在本机用 ``torch.distributed`` 测得的计时与拟合。

每个函数只组合 :mod:`roofline_book.distributed` 的模型、:mod:`roofline_book.present.plotting`
的画法与测量的结果：章节里隐藏的 cell 选好输入（设备、发表的行、示意参数），调用这里，再粘贴结果。

Examples
--------
>>> steps = all_reduce_steps(8)          # ring 2 (8 - 1) = 14 steps, tree 2 log2(8) = 6
>>> steps
{'ring': 14, 'tree': 6}
>>> share_fraction(2 * 7 / 8)            # the ring all-reduce share at 8 ranks
'7/4'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ..devices.catalog import Hardware
from ..distributed import collectives as coll
from ..distributed.allreduce import flat_ring_all_reduce, hierarchical_all_reduce
from ..measure.collectives import Measurement
from ..measure.published.rows import Measurement as Published
from ..present import plotting
from .tables import markdown_table

__all__ = [
    "all_reduce_steps",
    "cross_node_figures",
    "fit_gap",
    "fit_table",
    "latency_figures",
    "measured_figure",
    "measured_figures",
    "published_busbw_figure",
    "ring_algbw",
    "shape_table",
    "share_fraction",
    "switch_busbw_limit",
    "switch_reduce_figures",
]

#: 参考线（链路带宽、拟合的量）的颜色：中性的灰。
_GREY = "#555555"


def _link(device: Hardware) -> tuple[float, float]:
    """The device's link bandwidth (byte/s each way) and latency a step (s)."""
    if device.link_bandwidth is None or device.link_latency is None:
        raise ValueError(f"device {device.name!r}: the catalog gives no link bandwidth or latency")
    return device.link_bandwidth, device.link_latency


def _ticks_in_view(fig: Any) -> None:
    """Drop the ticks that lie outside each axis' view limits."""
    for a in fig.axes:
        a.set_xticks([x for x in a.get_xticks() if a.get_xlim()[0] <= x <= a.get_xlim()[1]])
        a.set_yticks([y for y in a.get_yticks() if a.get_ylim()[0] <= y <= a.get_ylim()[1]])


def shape_table(shape: Mapping[tuple[str, str], tuple[float, float]], devices: int) -> Any:
    """各集合通信的步数 :math:`k`、份额 :math:`f` 与 busbw 系数，写成 Markdown 表。

    Parameters
    ----------
    shape : mapping
        ``(op, algorithm) -> (k, f)``：``collective_time(op, 1, devices, 1, 1)`` 的
        ``latency_s`` 与 ``bandwidth_s`` （消息、带宽、延迟都取 1 时，两项正是 ``k`` 与 ``f``）。
    devices : int
        rank 数 :math:`p`，用来算 nccl-tests 的 busbw 系数。

    Returns
    -------
    IPython.display.Markdown
        列为集合通信、算法、步数 k、份额 f、busbw 系数。

    Examples
    --------
    >>> print(shape_table({("all_gather", "ring"): (3.0, 0.75)}, 4).data)
    | 集合通信   | 算法   |   步数 k |   份额 f |   busbw 系数 |
    |:-----------|:-------|---------:|---------:|-------------:|
    | all-gather | ring   |        3 |     0.75 |         0.75 |
    """
    rows = [
        {
            "集合通信": op.replace("_", "-"),
            "算法": alg,
            "步数 k": f"{k:.0f}",
            "份额 f": f"{f:.3g}",
            "busbw 系数": f"{coll.bus_factor(op, devices):.3g}",
        }
        for (op, alg), (k, f) in shape.items()
    ]
    return markdown_table(rows, align=["left", "left", "right", "right", "right"])


def all_reduce_steps(devices: int) -> dict[str, int]:
    """all-reduce 在 ``devices`` 个 rank 上每种算法的步数 :math:`k`。

    Examples
    --------
    >>> all_reduce_steps(64)                 # ring 2 x 63, tree 2 x log2(64)
    {'ring': 126, 'tree': 12}
    """
    return {
        a: int(coll.collective_time("all_reduce", 1, devices, 1, 1, algorithm=a).latency_s)
        for a in coll.ALGORITHMS
    }


def latency_figures(
    devices: int, bandwidth: float, latency: float, small: float, large: float
) -> dict[str, float | int]:
    """ring all-reduce 上一大一小两个消息的时间与延迟占比，以及半性能长度 :math:`m_{1/2}`。

    Parameters
    ----------
    devices : int
        rank 数。
    bandwidth : float
        每个方向的链路带宽，byte/s。
    latency : float
        每一步的延迟 :math:`\\alpha`，s。
    small, large : float
        两个消息大小，byte。

    Returns
    -------
    dict
        ``ar_small_us`` / ``ar_large_ms`` （µs / ms）与各自的延迟占比 ``ar_small_lat`` /
        ``ar_large_lat``，``ar_half_mb`` （MB），步数 ``ar_k``，以及参数本身 ``ex_bw`` （GB/s）、
        ``ex_alpha_us`` （µs）、``ex_n``。

    Examples
    --------
    >>> f = latency_figures(8, 400e9, 2e-6, 2**16, 2**30)
    >>> f["ar_k"], round(f["ar_small_us"], 5), round(f["ar_half_mb"], 6)   # 14 x 2 us + ...
    (14, 28.28672, 6.4)
    """
    small_t, large_t = (
        coll.collective_time("all_reduce", s, devices, bandwidth, latency) for s in (small, large)
    )
    half = coll.half_bandwidth_bytes("all_reduce", devices, bandwidth, latency)
    return dict(
        ar_small_us=small_t.seconds * 1e6,
        ar_small_lat=small_t.latency_s / small_t.seconds,
        ar_large_ms=large_t.seconds * 1e3,
        ar_large_lat=large_t.latency_s / large_t.seconds,
        ar_half_mb=half / 1e6,
        ar_k=all_reduce_steps(devices)["ring"],
        ex_bw=bandwidth / 1e9,
        ex_alpha_us=latency * 1e6,
        ex_n=devices,
    )


def ring_algbw(nbytes: float, bandwidth: float, ranks: Sequence[int]) -> dict[int, float]:
    """没有延迟的 ring all-reduce 在各 rank 数上的 algbw，byte/s：:math:`m / T`。

    Examples
    --------
    >>> {r: round(v / 1e9, 3) for r, v in ring_algbw(2**30, 400e9, (2, 4)).items()}  # Bp/(2(p-1))
    {2: 400.0, 4: 266.667}
    """
    return {
        r: coll.algorithm_bandwidth(
            nbytes, coll.collective_time("all_reduce", nbytes, r, bandwidth, 0.0).seconds
        )
        for r in ranks
    }


def switch_busbw_limit(devices: int, nbytes: float, link: float) -> float:
    """交换芯片归约（NVLS）时 all-reduce 的 busbw 上限，byte/s。

    每块设备只把 buffer 送出一次（:func:`~roofline_book.distributed.collectives.switch_share`），
    algbw 最多是链路带宽；nccl-tests 仍按 ring 的系数 :math:`2(p-1)/p` 换算成 busbw。

    Examples
    --------
    >>> switch_busbw_limit(8, 8e9, 450e9) / 1e9          # 450 x 2 x 7 / 8
    787.5
    """
    per_pass = coll.switch_share(devices) * nbytes / link
    return coll.bus_bandwidth("all_reduce", nbytes / per_pass, devices)


def switch_reduce_figures(device: Hardware, ring: Published, nvls: Published) -> dict[str, Any]:
    """发表的 ring 与 NVLS all-reduce busbw（GB/s 的行），与 ``device`` 的链路对照。

    Returns
    -------
    dict
        ``ring_busbw``、``nvls_busbw``、链路 ``h100_link`` （GB/s）、``ring_share`` （ring 的 busbw
        占链路的比例）、``nvls_allowed`` （:func:`switch_busbw_limit`，GB/s）、``nvls_factor``
        （busbw 系数）、``h100_gpus`` 与每步延迟 ``h100_alpha_us`` （µs）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.measure.published import measurement
    >>> ring, nvls = (measurement(f"nccl-tests-allreduce-h100-{a}") for a in ("ring", "nvls"))
    >>> f = switch_reduce_figures(hardware("h100-sxm"), ring, nvls)
    >>> f["h100_link"], f["nvls_allowed"], round(f["ring_share"], 4)     # 370 / 450
    (450.0, 787.5, 0.8222)
    """
    (link, latency), gpus, big = _link(device), ring.config["devices"], ring.config["bytes"]
    return dict(
        ring_busbw=ring.value,
        nvls_busbw=nvls.value,
        h100_link=link / 1e9,
        ring_share=ring.value * 1e9 / link,
        nvls_allowed=switch_busbw_limit(gpus, big, link) / 1e9,
        nvls_factor=coll.bus_factor("all_reduce", gpus),
        h100_gpus=gpus,
        h100_alpha_us=latency * 1e6,
    )


def published_busbw_figure(
    device: Hardware,
    ring: Published,
    nvls: Published,
    sizes: Sequence[float],
    device_label: str,
) -> Any:
    """ring 的 alpha-beta 模型给出的 all-reduce busbw 曲线，旁边是发表的 ring 与 NVLS 实测点。

    两条点线：链路每个方向的带宽，与交换芯片归约时允许的 busbw（:func:`switch_busbw_limit`）。

    Parameters
    ----------
    device : Hardware
        链路带宽与每步延迟取自它。
    ring, nvls : published Measurement
        发表的 busbw（GB/s），``config`` 里有 ``devices`` 与 ``bytes``。
    sizes : sequence of float
        曲线上的消息大小，byte。
    device_label : str
        标题中设备的名字（如 ``"H100 SXM"``）。

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib import pyplot as plt

    (link, latency), gpus, big = _link(device), ring.config["devices"], ring.config["bytes"]
    allowed = switch_busbw_limit(gpus, big, link)
    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    plotting.collective_busbw(ax, "all_reduce", sizes, gpus, link, latency, label="ring 模型")
    plotting.reference_line(
        ax, link / 1e9, f"NVLink 每个方向 {link / 1e9:.0f} GB/s", color=_GREY, linestyle=":"
    )
    plotting.reference_line(
        ax,
        allowed / 1e9,
        f"交换芯片归约时允许的 busbw {allowed / 1e9:.0f} GB/s",
        color=plotting.PALETTE["green"],
        linestyle=":",
    )
    for m, name, dy in ((ring, "ring 实测", -14), (nvls, "NVLS 实测", 6)):
        ax.scatter([big], [m.value], color=plotting.PALETTE["vermillion"], zorder=3)
        ax.annotate(
            f"{name} {m.value:.0f}",
            (big, m.value),
            xytext=(-70, dy),
            textcoords="offset points",
            fontsize=7.5,
        )
    ax.set(ylim=(1, 2000), title=f"{gpus} 块 {device_label} 的 all-reduce busbw")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def cross_node_figures(
    nbytes: float,
    per_node: int,
    nodes: int,
    bandwidth: float,
    latency: float,
    nic: float,
    nic_latency: float,
) -> dict[str, float | int]:
    """跨节点 all-reduce 的三种做法：分层、NCCL 的扁平 ring、每一跳都走网卡的 ring。

    Parameters
    ----------
    nbytes : float
        每个 rank 的 buffer，byte。
    per_node, nodes : int
        每个节点的 GPU 数与节点数。
    bandwidth, latency : float
        节点内链路每个方向的带宽（byte/s）与每步延迟（s）。
    nic, nic_latency : float
        每块 GPU 的网卡每个方向的带宽（byte/s）与每步延迟（s）。

    Returns
    -------
    dict
        ``h_ms`` （分层）、``ring_ms`` （扁平 ring）、``every_ms`` （每一跳走网卡）与它对扁平 ring
        的倍数 ``every_gain``；分层时节点内两趟的带宽项 ``h_in_ms`` 与网卡的带宽项 ``h_nic_ms``；
        以及参数 ``h_nodes``、``h_per_node``、``h_ranks``、``h_nic_bw`` （GB/s）、
        ``h_nic_alpha_us`` （µs）。

    Examples
    --------
    >>> f = cross_node_figures(2**30, 8, 4, 400e9, 2e-6, 50e9, 10e-6)
    >>> round(f["h_in_ms"], 8), round(f["h_nic_ms"], 8)   # 2 x 7/8 x 2**30 / 400e9; 2 x 3/4 x ...
    (4.69762048, 4.02653184)
    """
    layered = hierarchical_all_reduce(nbytes, per_node, nodes, bandwidth, latency, nic, nic_latency)
    flat = flat_ring_all_reduce(nbytes, per_node, nodes, bandwidth, latency, nic, nic_latency)
    every_hop = coll.collective_time("all_reduce", nbytes, nodes * per_node, nic, nic_latency)
    inside = 2 * coll.collective_time("reduce_scatter", nbytes, per_node, bandwidth, 0).bandwidth_s
    across = coll.collective_time("all_reduce", nbytes / per_node, nodes, nic, 0).bandwidth_s
    return dict(
        h_ms=layered.seconds * 1e3,
        h_in_ms=inside * 1e3,
        h_nic_ms=across * 1e3,
        ring_ms=flat.seconds * 1e3,
        every_ms=every_hop.seconds * 1e3,
        every_gain=every_hop.seconds / flat.seconds,
        h_nodes=nodes,
        h_per_node=per_node,
        h_ranks=nodes * per_node,
        h_nic_bw=nic / 1e9,
        h_nic_alpha_us=nic_latency * 1e6,
    )


def _bandwidth(m: Measurement, op: str) -> float:
    beta = m.fits[op].beta_Bps
    if beta is None:
        raise ValueError(f"op {op!r}: the fit has no bandwidth (its time did not grow with size)")
    return beta


def measured_figure(m: Measurement, op: str, title: str) -> Any:
    """一次测量中 ``op`` 的时间（左）与 busbw（右），连同拟合的 alpha-beta 模型。

    左图的点是中位数、竖线是四分位距，点线是拟合的固定时间 :math:`T_{\\text{fixed}}`；右图的点线
    是拟合的带宽 :math:`B_{\\text{fit}}`。模型每一步的延迟是 :math:`T_{\\text{fixed}}/k`
    （:meth:`~roofline_book.measure.collectives.Fit.step_latency`）。

    Parameters
    ----------
    m : roofline_book.measure.collectives.Measurement
        一次测量（:func:`~roofline_book.measure.collectives.measure`）。
    op : str
        画出的集合通信；它的拟合须有带宽。
    title : str
        左图的标题。

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        ``op`` 的拟合没有带宽（扫描的时间不随大小增长）。
    """
    from matplotlib import pyplot as plt

    points, fit, beta = m.of(op), m.fits[op], _bandwidth(m, op)
    xs = [p.nbytes for p in points]
    blue = plotting.PALETTE["blue"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.2, 3.4))
    plotting.measured_sizes(
        left,
        xs,
        [p.time_s for p in points],
        [p.quartiles_s for p in points],
        label="实测（中位数与四分位距）",
    )
    per_step = fit.step_latency(op, m.procs)
    plotting.collective_times(
        left, op, xs, m.procs, beta, per_step, label="拟合的 alpha-beta 模型", color=blue
    )
    plotting.reference_line(
        left,
        fit.alpha_s,
        "拟合的固定时间",
        color=_GREY,
        linestyle=":",
        side="right",
        below=True,
        avoid=True,
    )
    plotting.measured_sizes(right, xs, [p.busbw_Bps / 1e9 for p in points], label="实测")
    plotting.collective_busbw(
        right, op, xs, m.procs, beta, per_step, label="拟合的 alpha-beta 模型", color=blue
    )
    plotting.reference_line(right, beta / 1e9, "拟合的带宽", color=_GREY, linestyle=":", avoid=True)
    left.set_title(title)
    right.set_title("busbw")
    left.legend(fontsize=7, loc="upper left")  # times grow to the right
    fig.tight_layout()
    _ticks_in_view(fig)
    return fig


def fit_table(m: Measurement) -> Any:
    """每种集合通信的拟合（固定时间 µs、带宽 GB/s）与最大消息的 busbw（GB/s），Markdown 表。

    拟合没有带宽的一行写“—”。
    """
    rows = [
        {
            "集合通信": op.replace("_", "-"),
            "固定时间 [µs]": f"{f.alpha_s * 1e6:.0f}",
            "拟合带宽 [GB/s]": "—" if f.beta_Bps is None else f"{f.beta_Bps / 1e9:.2f}",
            "最大消息的 busbw [GB/s]": f"{m.of(op)[-1].busbw_Bps / 1e9:.2f}",
        }
        for op, f in m.fits.items()
    ]
    return markdown_table(rows)


def fit_gap(m: Measurement) -> float:
    """拟合的带宽与最大消息的 busbw 之比（大者比小者），取各集合通信中最大的那个。

    拟合没有带宽、或最大消息的 busbw 为 0 的操作不计。

    Raises
    ------
    ValueError
        没有一个操作可比。
    """
    gaps = [
        max(f.beta_Bps, m.of(op)[-1].busbw_Bps) / min(f.beta_Bps, m.of(op)[-1].busbw_Bps)
        for op, f in m.fits.items()
        if f.beta_Bps and m.of(op)[-1].busbw_Bps > 0
    ]
    if not gaps:
        raise ValueError("no op has both a fitted bandwidth and a busbw above 0")
    return max(gaps)


def measured_figures(m: Measurement, op: str) -> dict[str, Any]:
    """正文引用的一次测量的数：``op`` 的拟合、最大消息，以及随数而变的一句措辞。

    Returns
    -------
    dict
        ``fit_worst`` （:func:`fit_gap`）、``m_alpha_us`` （µs）、``m_beta_gbs`` （GB/s）、
        ``m_half_kb`` （拟合的半性能长度，kB）、最大消息的 ``m_largest_mib``、
        ``m_largest_busbw`` （GB/s）、``m_largest_ms``，点数 ``m_points``、``m_torch``，以及
        ``m_shape``：最大消息的时间超过最小消息的 2 倍时，说曲线已走出延迟的平台。

    Raises
    ------
    ValueError
        ``op`` 的拟合没有带宽。
    """
    points, fit, beta = m.of(op), m.fits[op], _bandwidth(m, op)
    largest = points[-1]
    per_step = fit.step_latency(op, m.procs)
    return dict(
        fit_worst=fit_gap(m),
        m_alpha_us=fit.alpha_s * 1e6,
        m_beta_gbs=beta / 1e9,
        m_largest_mib=largest.nbytes / 2**20,
        m_largest_busbw=largest.busbw_Bps / 1e9,
        m_largest_ms=largest.time_s * 1e3,
        m_half_kb=coll.half_bandwidth_bytes(op, m.procs, beta, per_step) / 1e3,
        m_points=len(m.points),
        m_torch=m.torch_version,
        m_shape=(
            "形状与前面 ring 的模型曲线相同：小消息处是一段平台，大消息处沿斜线上升"
            if largest.time_s > 2 * points[0].time_s
            else "这里小消息与大消息的时间相差不到 2 倍，扫描还没有走出延迟主导的平台"
        ),
    )


def share_fraction(value: float, max_denominator: int = 64) -> str:
    """份额或比值写成分数（``1.75`` -> ``"7/4"``），分母不超过 ``max_denominator``。

    Examples
    --------
    >>> share_fraction(15 / 8), share_fraction(0.5), share_fraction(2.0)
    ('15/8', '1/2', '2')
    """
    return str(Fraction(value).limit_denominator(max_denominator))
