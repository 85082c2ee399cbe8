"""形状与精度怎样改变一个 GEMM 在 roofline 上的位置：算术强度、可达性能、输出分块与轮，
两种精度的 roof 与方阵 GEMM 的可达比例两张图。

每个返回字典的函数，键就是页面的粘贴名；章节里隐藏的 cell 选好设备、形状与精度，调用这里，
再粘贴结果。GEMM 都按 :func:`roofline_book.gemm` 的理想流量（两个输入各读一次、输出写一次），
峰值都是矩阵单元在该精度下的 dense 峰值（FP32 在 NVIDIA 设备上是 CUDA core 的速率）。

Examples
--------
>>> from roofline_book import hardware
>>> g = gemm_on(hardware("h100-sxm"), 8, 4096, 4096)
>>> round(g.intensity, 2), g.time.bound, g.waves.tiles      # I ~ M = 8; one row of 32 tiles
(7.97, 'memory', 32)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..devices.catalog import Hardware
from ..devices.waves import DEFAULT_TILE, Waves, gemm_waves
from ..dtypes import Precision
from ..ops import Cost, gemm
from ..present import plotting
from ..roofline.bounds import TimeBound
from ..roofline.roofs import attainable_on, time_bound

__all__ = [
    "GemmOnDevice",
    "device_figures",
    "device_rooflines_figure",
    "exercise_answers",
    "gemm_on",
    "peak_ratio",
    "precision_switch",
    "shape_contrast",
    "square_fraction_figure",
    "tile_figures",
]


@dataclass(frozen=True)
class GemmOnDevice:
    """一个 GEMM 在一块设备上按 roofline 得到的量。

    Attributes
    ----------
    cost : Cost
        GEMM 的 FLOPs 与理想流量（按存储精度计字节）。
    roof : float
        它所在算术强度处的 roof：矩阵单元在计算精度下的峰值与 HBM 斜线中较低者（FLOP/s）。
    peak : float
        矩阵单元在计算精度下的 dense 峰值（FLOP/s）。
    time : TimeBound
        每种资源所需的时间（s），其中最大者是下界（:func:`roofline_book.time_bound`）。
    waves : Waves
        输出按分块排到各个 SM 上的轮（:func:`roofline_book.devices.waves.gemm_waves`）。
    """

    cost: Cost
    roof: float
    peak: float
    time: TimeBound
    waves: Waves

    @property
    def intensity(self) -> float:
        """算术强度（FLOP/byte）。"""
        return self.cost.intensity

    @property
    def fraction(self) -> float:
        """roof 占峰值的比例：按 roofline 最多能用到的算力。"""
        return self.roof / self.peak

    @property
    def busy(self) -> float:
        """有分块可算的 SM 的比例（分块不少于 SM 数时为 1）。"""
        return min(1.0, self.waves.tiles / self.waves.sms)


def gemm_on(
    device: Hardware,
    m: int,
    k: int,
    n: int,
    dtype: Precision = "bf16",
    *,
    compute: Precision | None = None,
    tile: tuple[int, int] = DEFAULT_TILE,
) -> GemmOnDevice:
    """:math:`M\\times K` 乘 :math:`K\\times N` 的 GEMM 在 ``device`` 上的 roofline 量。

    Parameters
    ----------
    device : Hardware
        设备（须有 SM 数与该精度的矩阵峰值）。
    m, k, n : int
        GEMM 的三个维度。
    dtype : str
        数据的存储精度，决定每个元素的字节数。
    compute : str, optional
        矩阵单元计算所用的精度；默认与 ``dtype`` 相同。FP32 数据按 TF32 计算时取 ``"tf32"``。
    tile : (int, int)
        一个输出分块的行数与列数。

    Examples
    --------
    FP32 存储、TF32 计算的 512 见方 GEMM：I = 2 x 512 / (3 x 4) = 85.3 FLOP/byte，低于 H100 TF32
    的 ridge point（494.7 / 3.35 = 147.7），roof 是 85.33 x 3.35 = 285.9 TFLOP/s：

    >>> from roofline_book import hardware
    >>> g = gemm_on(hardware("h100-sxm"), 512, 512, 512, "fp32", compute="tf32")
    >>> round(g.intensity, 2), round(g.roof / 1e12, 1), g.time.bound, g.waves.tiles
    (85.33, 285.9, 'memory', 16)
    """
    unit = compute or dtype
    cost = gemm(m, k, n, dtype)
    return GemmOnDevice(
        cost=cost,
        roof=attainable_on(cost.intensity, device, unit),
        peak=device.peak_flops(unit),
        time=time_bound(cost, device, unit),
        waves=gemm_waves(m, n, tile=tile, device=device),
    )


def peak_ratio(device: Hardware, dtype: Precision = "bf16", over: Precision = "fp32") -> float:
    """``device`` 上 ``dtype`` 的 dense 峰值是 ``over`` 的几倍，也就是 ridge point 右移的倍数。

    Examples
    --------
    A100 SXM：BF16 Tensor Core 312 TFLOP/s，FP32 CUDA core 19.5 TFLOP/s，312 / 19.5 = 16：

    >>> from roofline_book import hardware
    >>> peak_ratio(hardware("a100-sxm"))
    16.0
    """
    return device.peak_flops(dtype) / device.peak_flops(over)


def device_figures(device: Hardware, name: str) -> dict[str, Any]:
    """一块设备在本页引用的峰值、带宽与 ridge point，键以设备的短名 ``name`` 区分。

    Returns
    -------
    dict
        ``{name}_peak_ratio`` （BF16 峰值 / FP32 峰值）、``ridge_{name}_bf16``、
        ``ridge_{name}_fp32`` （FLOP/byte）、``{name}_tf32_tf``、``{name}_fp32_tf`` （TFLOP/s）、
        ``{name}_bw_tb`` （HBM，TB/s）。

    Examples
    --------
    H100 SXM：989.4 / 67 = 14.77；67e12 / 3.35e12 = 20 FLOP/byte：

    >>> from roofline_book import hardware
    >>> f = device_figures(hardware("h100-sxm"), "h100")
    >>> round(f["h100_peak_ratio"], 2), f["ridge_h100_fp32"], f["h100_bw_tb"]
    (14.77, 20.0, 3.35)
    """
    return {
        f"{name}_peak_ratio": peak_ratio(device),
        f"ridge_{name}_bf16": device.ridge_point("bf16"),
        f"ridge_{name}_fp32": device.ridge_point("fp32"),
        f"{name}_tf32_tf": device.peak_flops("tf32") / 1e12,
        f"{name}_fp32_tf": device.peak_flops("fp32") / 1e12,
        f"{name}_bw_tb": device.memory_bandwidth / 1e12,
    }


def shape_contrast(
    device: Hardware,
    small: tuple[int, int, int],
    large: tuple[int, int, int],
    dtype: Precision = "bf16",
) -> dict[str, float]:
    """一小一大两个同精度 GEMM 的算术强度、可达比例与时间下界。

    Parameters
    ----------
    small, large : (int, int, int)
        两个 GEMM 的 ``(M, K, N)``。

    Returns
    -------
    dict
        ``small_I``、``big_I`` （FLOP/byte）；``small_frac``、``big_frac`` （roof / 峰值）；
        ``small_ns`` （小 GEMM 的时间下界，ns）；``big_vs_small_time`` （两者时间下界之比）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = shape_contrast(hardware("h100-sxm"), (32, 128, 128), (4096, 4096, 4096))
    >>> round(f["small_I"], 2), round(f["big_I"], 1), f["big_frac"]
    (21.33, 1365.3, 1.0)
    """
    s, b = (gemm_on(device, *shape, dtype) for shape in (small, large))
    return dict(
        small_I=s.intensity,
        big_I=b.intensity,
        small_frac=s.fraction,
        big_frac=b.fraction,
        small_ns=s.time.seconds * 1e9,
        big_vs_small_time=b.time.seconds / s.time.seconds,
    )


def tile_figures(
    device: Hardware,
    small: tuple[int, int],
    large: tuple[int, int],
    odd: int,
    tile: tuple[int, int] = DEFAULT_TILE,
) -> dict[str, float | int]:
    """两个输出（小、大）与一个边长 ``odd`` 的方阵输出按 ``tile`` 分块后，在 SM 上排成的轮。

    Parameters
    ----------
    small, large : (int, int)
        两个输出的 ``(M, N)``。
    odd : int
        方阵输出的边长，通常选分块数刚刚超过 SM 数整数倍的一个。
    tile : (int, int)
        一个输出分块的行数与列数。

    Returns
    -------
    dict
        ``sms``；``small_tiles``、``small_busy`` （有活干的 SM 比例）、``small_tile_use``
        （分块里有效输出的比例）；``big_tiles``、``big_waves`` （分块数 / SM 数）、
        ``big_waves_ceil``、``big_last_tiles``、``big_last_fill``、``big_wave_eff``
        （按整轮计的效率）；``odd_n``、``odd_tiles``、``odd_waves``、``odd_last``、``odd_wave_eff``。

    Examples
    --------
    H100 有 132 个 SM；1536 见方的输出切成 12 x 12 = 144 块，144 = 132 + 12，要两轮，
    144 / 264 = 54.5 %：

    >>> from roofline_book import hardware
    >>> f = tile_figures(hardware("h100-sxm"), (32, 128), (4096, 4096), 1536)
    >>> f["odd_tiles"], f["odd_waves"], f["odd_last"], round(f["odd_wave_eff"], 3)
    (144, 2, 12, 0.545)
    """
    s, b, o = (gemm_waves(m, n, tile=tile, device=device) for m, n in (small, large, (odd, odd)))
    return dict(
        sms=s.sms,
        small_tiles=s.tiles,
        small_busy=min(1, s.tiles / s.sms),
        small_tile_use=small[0] * small[1] / (s.tiles * tile[0] * tile[1]),
        big_tiles=b.tiles,
        big_waves=b.tiles / b.sms,
        big_waves_ceil=b.waves,
        big_last_tiles=b.last,
        big_last_fill=b.last_fill,
        big_wave_eff=b.efficiency,
        odd_n=odd,
        odd_tiles=o.tiles,
        odd_waves=o.waves,
        odd_last=o.last,
        odd_wave_eff=o.efficiency,
    )


def precision_switch(device: Hardware, shape: tuple[int, int, int]) -> dict[str, float]:
    """同一个 GEMM 在 FP32（CUDA core）与 BF16（Tensor Core）下的算术强度与可达性能。

    Returns
    -------
    dict
        ``mid_I_fp32``、``mid_I_bf16`` （FLOP/byte）；``mid_roof_fp32_tf``、``mid_roof_bf16_tf``
        （TFLOP/s）；``mid_frac_bf16`` （BF16 的 roof / BF16 峰值）。

    Examples
    --------
    256 见方：FP32 的 I = 2 x 256 / (3 x 4) = 42.7，高于 FP32 的 ridge point，roof 是 67 TFLOP/s；
    BF16 的 I = 85.3，低于 BF16 的 ridge point，roof 是 85.33 x 3.35 = 285.9 TFLOP/s：

    >>> from roofline_book import hardware
    >>> f = precision_switch(hardware("h100-sxm"), (256, 256, 256))
    >>> f["mid_roof_fp32_tf"], round(f["mid_roof_bf16_tf"], 1)
    (67.0, 285.9)
    """
    f32, b16 = (gemm_on(device, *shape, p) for p in ("fp32", "bf16"))
    return dict(
        mid_I_fp32=f32.intensity,
        mid_I_bf16=b16.intensity,
        mid_frac_bf16=b16.fraction,
        mid_roof_fp32_tf=f32.roof / 1e12,
        mid_roof_bf16_tf=b16.roof / 1e12,
    )


def exercise_answers(
    device: Hardware,
    *,
    small: tuple[int, int, int],
    linear: tuple[int, int, int],
    cube: tuple[int, int, int],
    decode: tuple[int, int, int],
    largest: int,
) -> dict[str, float | int | str]:
    """本页习题的答案：小 GEMM 换 FP32、linear 层、FP32 与 TF32、decode 的 GEMM、两种精度的方阵。

    Parameters
    ----------
    small : (int, int, int)
        按 FP32 计算的小 GEMM（``ans_q1_*``），并与它的 BF16 版本比可达性能。
    linear : (int, int, int)
        BF16 的 linear 层（``ans_q2_*``）：强度、瓶颈、可达比例、分块与有活干的 SM。
    cube : (int, int, int)
        FP32 存储，按 FP32 与 TF32 两种方式计算（``ans_q3_*``）。
    decode : (int, int, int)
        decode 时行数很少的 BF16 GEMM（``ans_q4_*``）。
    largest : int
        方阵 GEMM 的边长，比较 FP32 与 BF16 的时间下界（``ans_q5_*``）；例如 CUDA 快速套件在每种
        精度下都计时的最大边长。

    Examples
    --------
    4096 见方的方阵在两种精度下都受算力限制，时间之比就是峰值之比 989.4 / 67：

    >>> from roofline_book import hardware
    >>> a = exercise_answers(hardware("h100-sxm"), small=(32, 128, 128), linear=(256, 4096, 4096),
    ...                      cube=(512, 512, 512), decode=(8, 4096, 4096), largest=4096)
    >>> a["ans_q5_bounds"], round(a["ans_q5_ratio"], 2), a["ans_q2_tiles"], a["ans_q4_tiles"]
    ('compute/compute', 14.77, 64, 32)
    """
    q1, q1_bf16 = gemm_on(device, *small, "fp32"), gemm_on(device, *small, "bf16")
    q2, q4 = gemm_on(device, *linear), gemm_on(device, *decode)
    q3 = {p: gemm_on(device, *cube, "fp32", compute=p) for p in ("fp32", "tf32")}
    q5 = {p: gemm_on(device, largest, largest, largest, p) for p in ("fp32", "bf16")}
    return dict(
        ans_q1_I=q1.intensity,
        ans_q1_bound=q1.time.bound,
        ans_q1_frac=q1.fraction,
        ans_q1_roof_tf=q1.roof / 1e12,
        ans_q1_roof_bf16_tf=q1_bf16.roof / 1e12,
        ans_q2_I=q2.intensity,
        ans_q2_bound=q2.time.bound,
        ans_q2_roof_frac=q2.fraction,
        ans_q2_tiles=q2.waves.tiles,
        ans_q2_busy=q2.busy,
        ans_q3_I=q3["fp32"].intensity,
        ans_q3_bound_fp32=q3["fp32"].time.bound,
        ans_q3_bound_tf32=q3["tf32"].time.bound,
        ans_q3_roof_fp32=q3["fp32"].roof / 1e12,
        ans_q3_roof_tf32=q3["tf32"].roof / 1e12,
        ans_q3_gain=q3["tf32"].roof / q3["fp32"].roof,
        ans_q3_peak_ratio=q3["tf32"].peak / q3["fp32"].peak,
        ans_q4_I=q4.intensity,
        ans_q4_frac=q4.fraction,
        ans_q4_us=q4.time.seconds * 1e6,
        ans_q4_tiles=q4.waves.tiles,
        ans_q4_busy=q4.busy,
        ans_q5_n=largest,
        ans_q5_ratio=q5["fp32"].time.seconds / q5["bf16"].time.seconds,
        ans_q5_bounds=f"{q5['fp32'].time.bound}/{q5['bf16'].time.bound}",
        ans_q5_I_fp32=q5["fp32"].intensity,
        ans_q5_I_bf16=q5["bf16"].intensity,
    )


def device_rooflines_figure(
    devices: Sequence[tuple[Hardware, str]], dtypes: Mapping[str, str], *, title: str
) -> Any:
    """几块设备在几种精度下 GEMM 的 roofline，画在一张图上（dense 峰值，HBM 带宽）。

    Parameters
    ----------
    devices : sequence of (Hardware, str)
        每块设备与它在图例中的短名；颜色取自每块设备、每种精度的 roof 颜色。
    dtypes : mapping of str to str
        精度到线型，例如 ``{"bf16": "-", "fp32": "--"}``。
    title : str
        图的标题。

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    # colour None: each device and precision takes its own roof colour
    entries: list[Any] = [(d, label, None) for d, label in devices]
    plotting.device_rooflines(ax, entries, dtypes)
    ax.set(ylim=(1, 2000), xlabel="算术强度 [FLOP/byte]", ylabel="可达性能 [TFLOP/s]", title=title)
    ax.legend(loc="lower right", ncol=2, fontsize=7.5)
    return fig


def square_fraction_figure(
    device: Hardware, sizes: Sequence[int], dtypes: Sequence[str], *, title: str
) -> Any:
    """方阵 GEMM 的可达性能占该精度峰值的比例随边长的变化，每种精度一条曲线。

    Parameters
    ----------
    device : Hardware
    sizes : sequence of int
        方阵的边长 ``n`` （横轴，以 2 为底的对数坐标）。
    dtypes : sequence of str
        要画的精度，颜色取 :data:`roofline_book.present.plotting.PRECISION_COLORS`。
    title : str
        图的标题。

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    colors = {d: plotting.PRECISION_COLORS[d] for d in dtypes}
    plotting.square_gemm_fraction(ax, device, sizes, colors)
    ax.set(xlabel=plotting.text("square gemm axis"), ylabel="可达性能 / 该精度峰值",
           ylim=(0, 1.05), title=title)  # fmt: skip
    ax.legend(loc="lower right")
    return fig
