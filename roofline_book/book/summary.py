"""总结一章的隐藏 cell 所用的计算：三种资源的 ridge point、全书例子的对照与图、习题的答案。

每个返回字典的函数，键就是正文读取的粘贴名，cell 只需 ``glue(**values)``。时间按名字里的单位给出
（``_us`` 为微秒、``_ms`` 为毫秒），带宽按 TB/s、峰值按 TFLOP/s，算术强度按 FLOP/byte。

Examples
--------
>>> from roofline_book import hardware
>>> r = ridge_points(hardware("h100-sxm"), "ib-ndr")
>>> round(r["sum_ridge"], 1), round(r["sum_i_nvlink"]), round(r["sum_i_ib"])  # / 3.35, .45, .05 T
(295.3, 2199, 19788)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..devices.catalog import Hardware, network
from ..distributed.comm import critical_intensity
from ..measure.published.rows import Measurement
from ..ops import Cost
from ..present import plotting
from ..present.tables import Row
from ..roofline.roofs import time_bound
from .tables import bound_zh, resource_zh

__all__ = [
    "estimate_answer",
    "levels_note",
    "measured_check_answer",
    "precision_answer",
    "recap_figure",
    "recap_figures",
    "ridge_points",
    "upgrade_speedups",
]


def ridge_points(device: Hardware, scale_out: str, precision: str = "bf16") -> dict[str, float]:
    """``device`` 在 ``precision`` 下对三种资源的 ridge point（FLOP/byte）。

    ``sum_ridge`` 是矩阵单元峰值除以 HBM 带宽；``sum_i_nvlink`` 是峰值除以设备自己的链路
    （NVLink）每个方向的带宽；``sum_i_ib`` 是峰值除以目录中网络 ``scale_out`` （例如
    ``"ib-ndr"``）每个方向的带宽（:func:`~roofline_book.distributed.comm.critical_intensity`）。
    目录里没有 ``device`` 的链路带宽时 ``ValueError``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> r = ridge_points(hardware("h100-sxm"), "ib-ndr")
    >>> round(r["sum_i_ib"] / r["sum_i_nvlink"], 6)   # 450 GB/s against 50 GB/s
    9.0
    """
    if device.link_bandwidth is None:
        raise ValueError(f"device: the catalog has no link bandwidth for {device.name}")
    return dict(
        sum_ridge=device.ridge_point(precision),
        sum_i_nvlink=critical_intensity(device, device.link_bandwidth, precision),
        sum_i_ib=critical_intensity(device, network(scale_out).bandwidth, precision),
    )


def recap_figures(
    rows: Sequence[Row],
    causal_flash: Cost,
    *,
    eager: str = "attention (eager)",
    flash: str = "attention (flash)",
) -> dict[str, object]:
    """一张 :func:`~roofline_book.present.tables.cost_table` 的各行放在一起时，正文读取的数与措辞。

    ``span`` 是各行算术强度的最大值与最小值之比（``span_orders`` 为它的常用对数取整，
    ``span_wan`` 为以万计的值）；名为 ``eager`` 与 ``flash`` 的两行给出各自的算术强度
    （``eager_I``、``flash_I``）、限制它的资源（``_res``）与措辞（``_bound``），以及两者时间下界
    之比 ``eager_over_flash``；``flash_causal_I`` 是加 causal mask 的 ``causal_flash`` 的算术强度。

    Examples
    --------
    >>> from roofline_book import add, attention, cost_table, gemm, hardware
    >>> rows = cost_table([("add", add(1024, "bf16")), ("gemm", gemm(4096, 4096, 4096, "bf16"))],
    ...                   hardware("h100-sxm"))
    >>> v = recap_figures(rows, gemm(64, 64, 64, "bf16"), eager="add", flash="gemm")
    >>> v["eager_I"], round(v["flash_I"], 1), v["span_orders"]   # 1/6 and 2 x 4096 / 6
    (0.16666666666666666, 1365.3, 4)
    """
    intensities = [r.cost.intensity for r in rows]
    span = max(intensities) / min(intensities)
    by_name = {r.name: r for r in rows}
    slow, fast = by_name[eager], by_name[flash]
    return dict(
        span=span,
        span_orders=round(math.log10(span)),
        span_wan=span / 1e4,
        flash_I=fast.cost.intensity,
        eager_I=slow.cost.intensity,
        flash_res=resource_zh(fast.resource),
        eager_res=resource_zh(slow.resource),
        flash_bound=bound_zh(fast.resource),
        eager_bound=bound_zh(slow.resource),
        eager_over_flash=slow.time.seconds / fast.time.seconds,
        flash_causal_I=causal_flash.intensity,
    )


def recap_figure(
    named: Sequence[tuple[str, Cost]],
    device: Hardware,
    *,
    title: str,
    callouts: Mapping[str, float] | None = None,
    precision: str = "bf16",
) -> Any:
    """各算子放在 ``device`` 的分层 roofline 上：每个算子一种标记，名字在右侧的图例里。

    roof 由 :func:`~roofline_book.present.plotting.ceilings` 画出（横轴 0.05 到
    :math:`10^5` FLOP/byte，纵轴 0.1 到 3000 TFLOP/s），点由
    :func:`~roofline_book.present.plotting.placed` 放置，两者都按 ``precision`` 的峰值。
    ``callouts`` 中的算子（名字 -> 文字相对于点向下的偏移，单位 pt，负数向下）另在点旁写出名字
    并画一条细线，用于图例中难以分辨的点。

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from roofline_book import add, gemm, hardware
    >>> fig = recap_figure([("add", add(1024, "bf16")), ("gemm", gemm(4096, 4096, 4096, "bf16"))],
    ...                    hardware("h100-sxm"), title="t", callouts={"add": -30})
    >>> [t.get_text() for t in fig.axes[0].texts if t.get_text() == "add"]
    ['add']
    >>> from matplotlib import pyplot as plt; plt.close(fig)
    """
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(7.2, 3.9))
    plotting.ceilings(ax, device, precision, intensity_range=(0.05, 1e5))
    drawn = plotting.placed(ax, named, device, precision, annotate=False)
    for name, dy in (callouts or {}).items():
        # the point at HBM is the first artist drawn under the operator's name
        xy = next(a for a in drawn if a.get_label() == name).get_offsets()[0]
        ax.annotate(name, xy, xytext=(25, dy), textcoords="offset points", fontsize=7,
                    arrowprops={"arrowstyle": "-", "lw": 0.6, "color": "#555555"})  # fmt: skip
    ax.set(ylim=(0.1, 3000), title=title)
    ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def levels_note(device: Hardware) -> str:
    """:func:`recap_figure` 的图注里说明存储层级的一句：目录有没有 ``device`` 的 L2 带宽。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> levels_note(hardware("h100-sxm"))[:9]
    '实心标记在 HBM'
    """
    if device.bandwidth("l2") is None:
        return f"每个算子只在 HBM 这一级放一个点（目录里没有 {device.name} 的 L2 带宽）。"
    return "实心标记在 HBM 这一级，同形的空心标记在 L2 这一级（只有 FlashAttention 的两个分开）。"


def estimate_answer(
    cost: Cost, device: Hardware, example: Hardware, *, rough_bytes: float
) -> dict[str, object]:
    """“先估算”一题的答案：心算的估计与包里的数，在 ``device`` 与示例设备 ``example`` 上。

    心算按 ``rough_bytes`` 字节除以 ``device`` 的 HBM 带宽（``ans_q1_est_us``，µs）；包里的数是
    ``cost`` 的算术强度 ``ans_q1_I``、两台设备上限制它的资源（``_bound_``）与措辞（``_phrase_``）、
    ``device`` 上的时间下界 ``ans_q1_us`` （µs），以及用来比较的 BF16 ridge point 与 HBM 带宽
    （TB/s）。

    Examples
    --------
    >>> from roofline_book import EXAMPLE, add, hardware
    >>> h100 = hardware("h100-sxm")
    >>> v = estimate_answer(add(2**20, "bf16"), h100, EXAMPLE, rough_bytes=6 * 2**20)
    >>> v["ans_q1_bound_h100"], round(v["ans_q1_est_us"], 3)   # 6 B x 2^20 / 3.35 TB/s
    ('HBM', 1.878)
    """
    here, there = time_bound(cost, device), time_bound(cost, example)
    return dict(
        ans_q1_I=cost.intensity,
        ans_q1_bound_h100=resource_zh(here.resource),
        ans_q1_bound_example=resource_zh(there.resource),
        ans_q1_phrase_h100=bound_zh(here.resource),
        ans_q1_phrase_example=bound_zh(there.resource),
        ans_q1_us=here.seconds * 1e6,
        ans_q1_est_us=rough_bytes / device.memory_bandwidth * 1e6,
        ans_q1_ridge=device.ridge_point("bf16"),
        ans_q1_hbm_tb=device.memory_bandwidth / 1e12,
    )


def precision_answer(cost: Cost, device: Hardware, modes: Sequence[str]) -> dict[str, object]:
    """同一个算子按几种计算方式（``modes``，例如 ``("fp32", "tf32")``）在 ``device`` 上的答案。

    给出 ``cost`` 的算术强度 ``ans_q2_I`` 与 HBM 带宽 ``ans_q2_bw_tb`` （TB/s），以及每种方式
    ``m`` 的 ridge point ``ans_q2_ridge_m``、dense 峰值 ``ans_q2_peak_m`` （TFLOP/s）、时间下界
    ``ans_q2_ms_m`` （ms）与 ``ans_q2_bound_m`` （``"compute"`` 或 ``"memory"``）。

    Examples
    --------
    >>> from roofline_book import gemm, hardware
    >>> v = precision_answer(gemm(4096, 4096, 4096, "fp32"), hardware("a100-sxm"), ["tf32"])
    >>> v["ans_q2_peak_tf32"], v["ans_q2_bound_tf32"]   # A100 TF32 dense: 156 TFLOP/s
    (156.0, 'compute')
    """
    values: dict[str, object] = dict(
        ans_q2_I=cost.intensity, ans_q2_bw_tb=device.memory_bandwidth / 1e12
    )
    for mode in modes:
        t = time_bound(cost, device, mode)
        values |= {
            f"ans_q2_ridge_{mode}": device.ridge_point(mode),
            f"ans_q2_peak_{mode}": device.peak_flops(mode) / 1e12,
            f"ans_q2_ms_{mode}": t.seconds * 1e3,
            f"ans_q2_bound_{mode}": t.bound,
        }
    return values


def upgrade_speedups(old: Hardware, new: Hardware, **named: tuple[Cost, str]) -> dict[str, float]:
    """换一块设备之后，每个算子的时间下界缩短的倍数（``old`` 上的下界除以 ``new`` 上的）。

    ``named`` 的每一项是 ``名字=(代价, 精度)``，结果的键为 ``ans_q3_名字_speedup``。

    Examples
    --------
    >>> from roofline_book import add, hardware
    >>> h100, h200 = hardware("h100-sxm"), hardware("h200-sxm")
    >>> v = upgrade_speedups(h100, h200, add=(add(2**24, "bf16"), "bf16"))
    >>> round(v["ans_q3_add_speedup"], 4)   # 4.8 TB/s against 3.35 TB/s
    1.4328
    """
    return {
        f"ans_q3_{name}_speedup": time_bound(cost, old, precision).seconds
        / time_bound(cost, new, precision).seconds
        for name, (cost, precision) in named.items()
    }


def measured_check_answer(
    memory_op: Cost, compute_op: Cost, device: Hardware, *, copy: Measurement, gemm: Measurement
) -> dict[str, object]:
    """“在你的 GPU 上测”一题的答案：两个算子在 ``device`` 上的假设，以及发表的实测达到的 roof 比例。

    ``memory_op`` 的时间下界 ``ans_q4_rms_us`` （µs）与措辞，``compute_op`` 的 ``ans_q4_gemm_ms``
    （ms）与措辞；``copy`` 与 ``gemm`` 是两个发表的测量，``ans_q4_copy_eta``、``ans_q4_gemm_eta``
    是它们的 :meth:`~roofline_book.measure.published.rows.Measurement.eta`。

    Examples
    --------
    >>> from roofline_book import gemm, hardware, rmsnorm
    >>> from roofline_book.measure.published import measurement
    >>> v = measured_check_answer(rmsnorm(4096, 4096, "bf16"), gemm(4096, 4096, 4096, "bf16"),
    ...     hardware("h100-sxm"), copy=measurement("stream-h100", kernel="copy"),
    ...     gemm=measurement("cublas-bf16-h100", n=8192))
    >>> round(v["ans_q4_copy_eta"], 3), v["ans_q4_gemm_bound"]   # 2.90 TB/s of 3.35
    (0.866, '受矩阵单元限制')
    """
    rms, big = time_bound(memory_op, device), time_bound(compute_op, device)
    return dict(
        ans_q4_rms_us=rms.seconds * 1e6,
        ans_q4_gemm_ms=big.seconds * 1e3,
        ans_q4_rms_bound=bound_zh(rms.resource),
        ans_q4_gemm_bound=bound_zh(big.resource),
        ans_q4_copy_eta=copy.eta(),
        ans_q4_gemm_eta=gemm.eta(),
    )
