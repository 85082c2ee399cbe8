"""FLOPs 一章正文里的数与图：GEMM 的计算量随边长增长的图，计算量给出的时间下界，
特殊函数单元在 FlashAttention 里占的份量，以及习题的答案。

每个返回 dict 的函数，键就是章节粘贴（glue）时用的名字，所以一章只需写
``glue(**flops.compute_time_figures(big, h100, EXAMPLE))``。

Examples
--------
>>> from roofline_book import EXAMPLE, gemm, hardware
>>> f = compute_time_figures(gemm(4096, 4096, 4096, "bf16"), hardware("h100-sxm"), EXAMPLE)
>>> f["gemm4096_flops_sci"], round(f["t_example_ms"], 3), round(f["t_h100_ms"], 4)
('1.37 × 10¹¹', 1.374, 0.1389)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..devices.catalog import Hardware
from ..ops import Cost, gemm, linear_backward
from ..roofline.roofs import time_bound, time_lower_bound
from ..units import sci


def square_gemm_flops_figure(sizes: Sequence[int]) -> Any:
    """边长为 ``sizes`` 的方阵 GEMM（:math:`M = K = N = n`）的 FLOPs :math:`2n^3`，画在双对数坐标上
    （以 2 为底的横轴，每隔一个边长标一个刻度）。

    Parameters
    ----------
    sizes : sequence of int
        矩阵边长，由小到大。

    Returns
    -------
    matplotlib.figure.Figure
        一条折线，每个边长一个点。

    Examples
    --------
    >>> from matplotlib import pyplot as plt
    >>> fig = square_gemm_flops_figure([64, 128, 256])
    >>> [int(y) for y in fig.axes[0].lines[0].get_ydata()]   # 2 x 64^3, 2 x 128^3, 2 x 256^3
    [524288, 4194304, 33554432]
    >>> plt.close(fig)
    """
    from matplotlib import pyplot as plt

    from ..present import plotting

    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    ax.loglog(sizes, [gemm(n, n, n).flops for n in sizes], marker="o")
    plotting.log2_axis(ax, sizes[::2])
    ax.set(
        xlabel="矩阵边长 n（M = K = N = n）",
        ylabel="FLOPs = 2n³",
        title="方阵乘法的计算量随 n³ 增长",
    )
    return fig


def compute_time_figures(cost: Cost, device: Hardware, example: Hardware) -> dict[str, Any]:
    """``cost`` （正文取 :math:`n = 4096` 的 BF16 GEMM）的计算量，与它在只有一个峰值的示例设备
    ``example`` 上、在 ``device`` 的 BF16 矩阵单元上的 :math:`T_{\\text{compute}}`；以及这两台
    设备的峰值。

    Returns
    -------
    dict
        ``gemm4096_flops_sci`` （科学计数法的文字）、``gemm4096_gflops``；``t_example_ms``、
        ``t_h100_ms`` （ms）；``device`` 的 ``h100_bf16_tflops`` （TFLOP/s）、
        ``h100_matrix_mhz`` （这个峰值所用的时钟）、``ms_per_tflop`` （每 TFLOP 的 ms）、
        ``sparse_over_dense`` （2:4 稀疏的速率是 dense 的几倍）；示例设备的
        ``example_tflops`` 与 ``example_tbps`` （TB/s）。

    Examples
    --------
    >>> from roofline_book import EXAMPLE, gemm, hardware
    >>> f = compute_time_figures(gemm(1024, 1024, 1024), hardware("h100-sxm"), EXAMPLE)
    >>> f["example_tflops"], f["example_tbps"], f["h100_matrix_mhz"]
    (100.0, 1.0, 1830.0)
    """
    on_example = time_lower_bound(cost, example.peak_flops(), example.memory_bandwidth)
    on_device = time_bound(cost, device, "bf16")
    peak = device.ceiling("matrix", "bf16")
    return dict(
        gemm4096_flops_sci=sci(cost.flops),
        gemm4096_gflops=cost.flops / 1e9,
        t_example_ms=on_example.compute * 1e3,
        h100_bf16_tflops=peak / 1e12,
        t_h100_ms=on_device.by_resource["matrix"] * 1e3,
        h100_matrix_mhz=device.rated_clock("matrix", "bf16") / 1e6,  # type: ignore[operator]
        ms_per_tflop=1e12 / peak * 1e3,
        example_tflops=example.peak_flops() / 1e12,
        example_tbps=example.memory_bandwidth / 1e12,
        sparse_over_dense=device.sparse_peak_flops("bf16") / device.peak_flops("bf16"),
    )


def special_function_figures(cost: Cost, device: Hardware, dtype: str = "bf16") -> dict[str, float]:
    """``cost`` （正文取 FlashAttention 的前向）里特殊函数（``exp``）占的份量：占 FLOPs 的比例、
    特殊函数单元所需的时间，以及与矩阵单元、与 HBM 相比。

    矩阵单元与特殊函数单元按同一个 SM 时钟比较：每种单元所需的 SM 时钟数是它的工作量除以
    ``per_sm_clock`` （峰值 /（SM 数 × 该峰值所用的时钟）），与 GPU 实际跑在哪个时钟无关。

    Returns
    -------
    dict
        ``fa_exp_share``、``fa_exp_us`` （µs）、``fa_exp_vs_matrix`` （两种单元所需的 SM
        时钟数之比）、``fa_exp_vs_hbm`` （特殊函数单元与 HBM 所需的时间之比）。

    Examples
    --------
    >>> from roofline_book import attention, hardware
    >>> h100 = hardware("h100-sxm")
    >>> fa = attention(4, 16, 4096, 4096, 64, "bf16", sram_bytes=h100.shared_memory_per_sm)
    >>> round(special_function_figures(fa, h100)["fa_exp_vs_matrix"], 3)   # 4d = 256 FLOPs an exp
    1.0
    """
    by_resource = time_bound(cost, device, dtype).by_resource
    exp_clocks = cost.special_flops / device.per_sm_clock("special")
    matrix_clocks = cost.matrix_flops / device.per_sm_clock("matrix", dtype)
    return dict(
        fa_exp_share=cost.special_flops / cost.flops,
        fa_exp_us=by_resource["special"] * 1e6,
        fa_exp_vs_matrix=exp_clocks / matrix_clocks,
        fa_exp_vs_hbm=by_resource["special"] / by_resource["hbm"],
    )


def problem_answers(
    device: Hardware,
    reference: Cost,
    *,
    square: int,
    linear: tuple[int, int, int],
    large_linear: tuple[int, int, int],
) -> dict[str, Any]:
    """习题的答案（BF16，矩阵单元的 dense 峰值）。

    Parameters
    ----------
    device : roofline_book.Hardware
        算 :math:`T_{\\text{compute}}` 的设备。
    reference : roofline_book.Cost
        第 1 题拿来比较的 GEMM（正文的 :math:`n = 4096`）。
    square : int
        第 1 题方阵 GEMM 的边长。
    linear : tuple of int
        第 2、3 题的线性层 ``(token 数, 输入维度, 输出维度)``：前向一个 GEMM，反向两个。
    large_linear : tuple of int
        第 4 题的线性层，同上，只算前向。

    Returns
    -------
    dict
        ``ans_q1_flops_sci``、``ans_q1_ratio``；``ans_q2_fwd_sci``、``ans_q2_total_sci``、
        ``ans_q2_ratio``；``ans_q3_us`` （µs）；``ans_q4_flops_sci``、``ans_q4_ms`` （ms）。

    Examples
    --------
    >>> from roofline_book import gemm, hardware
    >>> a = problem_answers(hardware("h100-sxm"), gemm(4096, 4096, 4096), square=8192,
    ...                     linear=(2048, 4096, 11008), large_linear=(16384, 8192, 8192))
    >>> a["ans_q1_ratio"], a["ans_q2_ratio"], a["ans_q4_flops_sci"]
    (8.0, 3.0, '2.20 × 10¹²')
    """
    q1 = gemm(square, square, square)
    fwd, bwd = gemm(*linear), linear_backward(*linear)
    q4 = gemm(*large_linear)
    return dict(
        ans_q1_flops_sci=sci(q1.flops),
        ans_q1_ratio=q1.flops / reference.flops,
        ans_q2_fwd_sci=sci(fwd.flops),
        ans_q2_total_sci=sci(fwd.flops + bwd.flops),
        ans_q2_ratio=(fwd.flops + bwd.flops) / fwd.flops,
        ans_q3_us=time_bound(fwd + bwd, device).compute * 1e6,
        ans_q4_flops_sci=sci(q4.flops),
        ans_q4_ms=time_bound(q4, device).compute * 1e3,
    )
