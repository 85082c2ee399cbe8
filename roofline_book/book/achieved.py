"""实测性能与 roofline 上界的差距：一次计时占 roof 的比例 :math:`\\eta`，已发表的 H100 实测，
固定开销模型，以及三张图。

每个返回字典的函数，键就是页面的粘贴名（带 ``prefix`` 或 ``name`` 参数的按它命名）；章节里隐藏的
cell 选好算子、计时、设备与发表的行，调用这里，再粘贴结果。

Examples
--------
示例设备（100 TFLOP/s、1 TB/s）上 4096 见方的 BF16 GEMM 跑出 40 TFLOP/s：roof 是平顶，
:math:`\\eta` = 40 / 100：

>>> from roofline_book import EXAMPLE, gemm
>>> work = gemm(4096, 4096, 4096, "bf16")
>>> P, B = EXAMPLE.peak_flops(), EXAMPLE.memory_bandwidth
>>> f = timing_figures(work, work.flops / 40e12, P, B, prefix="ex")
>>> f["ex_roof_tf"], round(f["ex_fraction"], 3)
(100.0, 0.4)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ..devices.catalog import Hardware
from ..dtypes import Precision
from ..measure.published import figure as published_plot
from ..measure.published.rows import Measurement
from ..ops import Cost, add
from ..present import plotting
from ..roofline.roofs import (
    achieved,
    attainable,
    fraction_of_roof,
    overhead_fraction,
    ridge_point,
    time_lower_bound,
)

__all__ = [
    "attention_paper_flops",
    "exercise_answers",
    "gap_figure",
    "half_roof_elements",
    "overhead_figure",
    "published_figure",
    "published_figures",
    "roof_figures",
    "timing_figures",
]

#: 开销图里各条曲线依次所用的标记与颜色（:data:`roofline_book.present.plotting.PALETTE` 的键）。
_MARKERS, _COLOURS = "os^D", ("blue", "orange", "green", "vermillion")


def timing_figures(
    cost: Cost, seconds: float, peak_flops: float, bandwidth: float, *, prefix: str
) -> dict[str, float]:
    """一次计时放到两条 roof 的设备上：实测速率、roof、:math:`\\eta`，以及时间上的差距。

    Parameters
    ----------
    cost : Cost
        算子的 FLOPs 与字节。
    seconds : float
        测得（或假设）的时间（s）。
    peak_flops, bandwidth : float
        设备的峰值（FLOP/s）与内存带宽（byte/s）。
    prefix : str
        键的前缀。

    Returns
    -------
    dict
        ``{prefix}_roof_tf``、``{prefix}_achieved_tf`` （TFLOP/s）、``{prefix}_fraction``
        （:math:`\\eta`）、``{prefix}_elapsed_ms``、``{prefix}_bound_ms`` （时间下界）、
        ``{prefix}_gap_ms`` （两者之差）、``{prefix}_I`` （FLOP/byte）、``{prefix}_ridge``、
        ``{prefix}_P_tf``、``{prefix}_B_tb``。

    Examples
    --------
    4096 见方的 BF16 GEMM 在 100 TFLOP/s 的设备上至少要 2 x 4096^3 / 1e14 = 1.374 ms：

    >>> from roofline_book import gemm
    >>> f = timing_figures(gemm(4096, 4096, 4096), 3.0e-3, 100e12, 1e12, prefix="ex")
    >>> round(f["ex_bound_ms"], 3), round(f["ex_gap_ms"], 3), f["ex_ridge"]
    (1.374, 1.626, 100.0)
    """
    roof = attainable(cost.intensity, peak_flops, bandwidth)
    bound_s = time_lower_bound(cost, peak_flops, bandwidth).seconds
    values = dict(
        roof_tf=roof / 1e12,
        achieved_tf=achieved(cost.flops, seconds) / 1e12,
        fraction=fraction_of_roof(cost.flops, seconds, cost.intensity, peak_flops, bandwidth),
        elapsed_ms=seconds * 1e3,
        bound_ms=bound_s * 1e3,
        gap_ms=(seconds - bound_s) * 1e3,
        I=cost.intensity,
        ridge=ridge_point(peak_flops, bandwidth),
        P_tf=peak_flops / 1e12,
        B_tb=bandwidth / 1e12,
    )
    return {f"{prefix}_{k}": v for k, v in values.items()}


def gap_figure(
    points: Sequence[tuple[str, Cost, float]],
    peak_flops: float,
    bandwidth: float,
    *,
    name: str,
    right: Collection[str] = (),
    achieved_label: str = "实测",
    ylim: tuple[float, float] = (1e-2, 400),
    title: str = "实测性能与 roof 的差距",
) -> Any:
    """几个算子的实测速率与它们所在算术强度处的 roof，画在一块设备的 roofline 上。

    Parameters
    ----------
    points : sequence of (str, Cost, float)
        每个算子的名字、``Cost`` 与实测速率（FLOP/s）。
    peak_flops, bandwidth : float
        设备的峰值（FLOP/s）与内存带宽（byte/s）。
    name : str
        设备在图例中的名字。
    right : collection of str
        比例标签放在点右边的算子名。
    achieved_label : str
        实测点在图例中的标签。
    ylim : (float, float)
        纵轴范围（TFLOP/s）。
    title : str
        图的标题。

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    label = f"{name}的 roof（{peak_flops / 1e12:.0f} TFLOP/s，{bandwidth / 1e12:.0f} TB/s）"
    plotting.roofline(ax, peak_flops, bandwidth, label=label, intensity_range=(1e-2, 1e4))
    plotting.achieved_gap(ax, points, peak_flops, bandwidth, right=right,
                          labels=("算子所在算术强度处的 roof", achieved_label))  # fmt: skip
    ax.set(ylim=ylim, ylabel="性能 [TFLOP/s]", title=title)
    ax.legend(loc="upper left")
    return fig


def roof_figures(device: Hardware, name: str, dtype: Precision = "bf16") -> dict[str, float]:
    """一块设备的 roof：``dtype`` 的 dense 峰值、HBM 带宽与 ridge point，键以短名 ``name`` 开头。

    Returns
    -------
    dict
        ``{name}_peak_tf`` （TFLOP/s）、``{name}_bw_tb`` （TB/s）、``{name}_ridge`` （FLOP/byte）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = roof_figures(hardware("h100-sxm"), "h100")
    >>> f["h100_peak_tf"], f["h100_bw_tb"], round(f["h100_ridge"], 1)   # 989.4 / 3.35
    (989.4, 3.35, 295.3)
    """
    return {
        f"{name}_peak_tf": device.peak_flops(dtype) / 1e12,
        f"{name}_bw_tb": device.memory_bandwidth / 1e12,
        f"{name}_ridge": device.ridge_point(dtype),
    }


def published_figures(
    *, gemm: Measurement, copy: Measurement, triad: Measurement, attention: Measurement
) -> dict[str, Any]:
    """四个已发表的测量（方阵 GEMM、STREAM copy 与 triad、FlashAttention 前向）的读数与 η。

    Returns
    -------
    dict
        ``pub_gemm_n``、``pub_gemm_tf``、``pub_gemm_I``、``pub_gemm_eta``；``pub_copy_tb``、
        ``pub_copy_eta``；``pub_triad_tb``、``pub_triad_eta``；``pub_fa_tf``、``pub_fa_d``、
        ``pub_fa_seq``、``pub_fa_I``、``pub_fa_eta``。速率是发表的值与单位，:math:`\\eta` 对测量
        所用设备的 datasheet roof。

    Examples
    --------
    >>> from roofline_book.measure.published import measurement
    >>> f = published_figures(gemm=measurement("cublas-bf16-h100", n=8192),
    ...                       copy=measurement("stream-h100", kernel="copy"),
    ...                       triad=measurement("stream-h100", kernel="triad"),
    ...                       attention=measurement("fa3-bf16-d128", seqlen=16384))
    >>> round(f["pub_gemm_I"], 1), round(f["pub_copy_eta"], 3)   # 8192 / 3; 2.90 / 3.35
    (2730.7, 0.866)
    """
    return dict(
        pub_gemm_n=gemm.config["n"],
        pub_gemm_tf=gemm.value,
        pub_gemm_I=_point(gemm).intensity,
        pub_gemm_eta=gemm.eta(),
        pub_copy_tb=copy.value,
        pub_copy_eta=copy.eta(),
        pub_triad_tb=triad.value,
        pub_triad_eta=triad.eta(),
        pub_fa_tf=attention.value,
        pub_fa_d=attention.config["head_dim"],
        pub_fa_seq=attention.config["seqlen"],
        pub_fa_I=_point(attention).intensity,
        pub_fa_eta=attention.eta(),
    )


def _point(m: Measurement) -> Any:
    """The measurement's roofline point; a clear error for a row that has none."""
    p = m.point()
    if p is None:
        raise ValueError(f"measurement {m.id!r} has no roofline point")
    return p


def published_figure(
    measured: Sequence[Measurement],
    device: Hardware | str,
    name: str,
    dtype: str = "bf16",
    *,
    offsets: Mapping[str, tuple[float, float]] | None = None,
    labels: Mapping[str, str] | None = None,
) -> Any:
    """已发表的测量放在一块设备的 roofline 上（:func:`roofline_book.measure.published.plot`）。

    没有运算的测量（STREAM copy）画成实测的 memory roof；没有在 ``labels`` 里给出标签时，
    它的标签是短标签加上“（实测 memory roof）”。

    Parameters
    ----------
    measured : sequence of Measurement
        要画的测量。
    device : Hardware or str
        画哪块设备的 roof。
    name : str
        设备在标题中的短名。
    dtype : str
        roof 的精度。
    offsets : mapping, optional
        标签相对于点的偏移（point），按 :attr:`Measurement.id` 索引。
    labels : mapping, optional
        按 :attr:`Measurement.id` 给出的标签。

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib import pyplot as plt

    names = {m.id: f"{published_plot.label(m)}（实测 memory roof）" for m in measured
             if _point(m).intensity == 0}  # fmt: skip
    names.update(labels or {})
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    published_plot.plot(ax, measured, device, dtype, intensity_range=(1e-2, 1e5),
                        offsets=offsets, labels=names)  # fmt: skip
    ax.set(ylim=(1e-2, 5e3), title=f"{name}：已发表的实测放在 {dtype.upper()} roofline 上")
    ax.legend(loc="lower right", fontsize=7)
    return fig


def half_roof_elements(device: Hardware, overhead: float, dtype: Precision = "bf16") -> float:
    """元素数为多少时，一个 add 搬数据的时间等于固定开销 ``overhead``，即只达到 roof 的一半。

    Examples
    --------
    BF16 add 每个元素 6 字节；5 µs x 3.35 TB/s / 6 B = 2.79 M 个元素：

    >>> from roofline_book import hardware
    >>> round(half_roof_elements(hardware("h100-sxm"), 5e-6) / 1e6, 3)
    2.792
    """
    return overhead * device.memory_bandwidth / add(1, dtype).bytes


def overhead_figure(
    series: Mapping[str, tuple[Sequence[Cost], float]],
    bandwidth: float,
    overhead: float,
    *,
    name: str,
) -> Any:
    """每个 kernel 再加固定开销 ``overhead`` 时，模型给出的 :math:`\\eta` 随流量的变化。

    Parameters
    ----------
    series : mapping of str to (sequence of Cost, float)
        每条曲线的图例标签、各个规模的 ``Cost`` 与所用计算单元的峰值（FLOP/s）。
    bandwidth : float
        内存带宽（byte/s）。
    overhead : float
        每个 kernel 的固定开销（s）。
    name : str
        设备在标题中的短名。

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    for i, (label, (costs, peak)) in enumerate(series.items()):
        xs = [c.bytes for c in costs]
        ys = [overhead_fraction(c, peak, bandwidth, overhead) for c in costs]
        colour = plotting.PALETTE[_COLOURS[i % len(_COLOURS)]]
        ax.semilogx(xs, ys, marker=_MARKERS[i % len(_MARKERS)], markersize=3, label=label,
                    color=colour)  # fmt: skip
    title = f"{name}：roofline 时间加上每个 kernel 假设的 {overhead * 1e6:.0f} µs 开销"
    ax.set(xlabel="kernel 的流量 [byte]", ylabel="模型给出的 η（占 roof 的比例）", ylim=(0, 1.05),
           title=title)  # fmt: skip
    ax.legend(loc="upper left")
    return fig


def attention_paper_flops(m: Measurement) -> float:
    """FlashAttention 论文计 FLOPs 的约定：只数两次矩阵乘法，每个 head :math:`4\\ell^2 d`。

    没给 batch 与 head 数时取论文的约定（batch × :math:`\\ell` = 16384，head 数 × :math:`d` =
    2048）；因果 mask 时减半。

    Examples
    --------
    :math:`\\ell` = 16384、:math:`d` = 128：16 个 head，:math:`4 \\times 2^{28} \\times 2^7 \\times
    2^4 = 2^{41}` FLOP：

    >>> from roofline_book.measure.published import measurement
    >>> attention_paper_flops(measurement("fa3-bf16-d128", seqlen=16384)) == 2**41
    True
    """
    c = m.config
    seqlen, d = c["seqlen"], c["head_dim"]
    batch, heads = c.get("batch", 16384 // seqlen), c.get("heads", 2048 // d)
    return 4 * seqlen**2 * d * heads * batch / (2 if c.get("causal") else 1)


def exercise_answers(
    device: Hardware,
    *,
    gemm: tuple[Cost, float],
    addition: tuple[Cost, float],
    overhead: float,
    attention: Measurement,
    probe: int,
) -> dict[str, float | int]:
    """本页习题的答案：一次 GEMM 计时、一次 add 计时、开销模型、FlashAttention 的估算、峰值探针。

    Parameters
    ----------
    device : Hardware
        计时所用的设备：GEMM 按矩阵单元的 BF16 峰值，add 按向量单元做加法的速率
        （:meth:`Hardware.vector_op_rate <roofline_book.devices.device.Hardware.vector_op_rate>`）。
    gemm : (Cost, float)
        BF16 GEMM 与它的时间（s）（``ans_q1_*``）。
    addition : (Cost, float)
        BF16 add 与它的时间（s）（``ans_q2_*``）；它在开销模型下的 η 是 ``ans_q3_eta_16m``。
    overhead : float
        每个 kernel 的固定开销 :math:`T_0` （s）（``ans_q3_*``）。
    attention : Measurement
        已发表的 FlashAttention 前向（``ans_q4_*``）。
    probe : int
        峰值探针 GEMM 的边长（``ans_q5_*``）。

    Examples
    --------
    >>> from roofline_book import add, gemm, hardware
    >>> from roofline_book.measure.published import measurement
    >>> a = exercise_answers(hardware("h100-sxm"), gemm=(gemm(4096, 4096, 4096), 1e-3),
    ...                      addition=(add(4096 * 4096), 50e-6), overhead=5e-6,
    ...                      attention=measurement("fa3-bf16-d128", seqlen=16384), probe=6144)
    >>> round(a["ans_q1_tf"], 1), round(a["ans_q2_tbps"], 3), a["ans_q4_I_matmul"]
    (137.4, 2.013, 8192.0)
    """
    matrix, vector = device.ceiling("matrix", "bf16"), device.ceiling("vector", "bf16")
    ops, band = device.vector_op_rate("bf16"), device.memory_bandwidth
    (g, t_gemm), (a, t_add) = gemm, addition
    p, paper = _point(attention), attention_paper_flops(attention)
    return dict(
        ans_q1_tf=achieved(g.flops, t_gemm) / 1e12,
        ans_q1_fraction=fraction_of_roof(g.flops, t_gemm, g.intensity, matrix, band),
        ans_q2_gflops=achieved(a.flops, t_add) / 1e9,
        ans_q2_tbps=a.bytes / t_add / 1e12,
        ans_q2_fraction=fraction_of_roof(a.flops, t_add, a.intensity, ops, band),
        ans_q2_vs_peak=achieved(a.flops, t_add) / ops,
        vec_tflops=vector / 1e12,
        vec_ops_t=ops / 1e12,
        ans_q3_elements_m=half_roof_elements(device, overhead) / 1e6,
        ans_q3_eta_16m=overhead_fraction(a, ops, band, overhead),
        ans_q4_paper_tflop=paper / 1e12,
        ans_q4_ms=p.seconds * 1e3,
        ans_q4_I_matmul=paper / p.cost.bytes,  # the paper's FLOPs: matrix products only
        ans_q4_I=p.intensity,
        ans_q4_eta=attention.eta(),
        ans_q4_eta_est=attention.value * 1e12 / device.peak_flops("bf16"),
        ans_q5_n=probe,
        ans_q5_peak_ms=2 * probe**3 / device.peak_flops("bf16") * 1e3,
    )
