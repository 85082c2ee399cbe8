"""把已发表的测量放到一块设备的 roofline 上：每个点的标签与位置。"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..._base.validate import InvalidArgument
from ...devices.catalog import Hardware, hardware
from ...llm.inference import model
from .rows import Measurement

#: STREAM kernel 在图上的中文名。
_STREAM_NAMES = {"copy": "复制", "mul": "数乘", "add": "相加", "triad": "triad", "dot": "点积"}


def label(m: Measurement) -> str:
    """图上这个点的短标签（中文；出处写在图注里）。

    Examples
    --------
    >>> from roofline_book.measure.published import measurement
    >>> label(measurement("cublas-bf16-h100", n=8192))
    'GEMM 8192³'
    >>> label(measurement("stream-h100", kernel="copy"))
    'HBM 复制'
    >>> label(measurement("fa3-bf16-d128", seqlen=16384))
    'FlashAttention-3 d=128'
    """
    kind, c = m.row.kind, m.config
    if kind == "gemm":
        if "m" in c:
            n, k = c["nk"]
            return f"GEMM {c['m']}×{k}×{n}"
        return f"GEMM {c['n']}³"
    if kind == "stream":
        return f"HBM {_STREAM_NAMES[c['kernel']]}"
    if kind == "attention_forward":
        return f"FlashAttention-3 d={c['head_dim']}" + ("，因果 mask" if c["causal"] else "")
    if kind in ("generation", "prefill"):
        return f"{model(c['model']).name} {'decode' if kind == 'generation' else 'prefill'}"
    return m.id


def plot(
    ax,
    measured: Iterable[Measurement],
    device: Hardware | str = "h100-sxm",
    dtype: str = "bf16",
    *,
    labels: Mapping[str, str] | None = None,
    offsets: Mapping[str, tuple[float, float]] | None = None,
    intensity_range: tuple[float, float] = (1e-2, 1e5),
    unit: str = "TFLOP/s",
):
    """把已发表的测量放在 ``device`` 的 roofline 上（``dtype`` 的 dense 峰值与内存带宽）。

    有运算的测量画成点 ``(I, 实测 FLOP/s)``，点旁写 :func:`label` （或 ``labels[m.id]``）；
    没有运算的（STREAM copy，``I = 0``）画成一条虚线：实测带宽给出的 memory roof
    ``B_measured × I``。图上只写短标签，出处由调用者写进图注（:attr:`Measurement.source`）。

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    measured : iterable of Measurement
        要画的测量，每个都要有 roofline 位置。
    device : Hardware or str
        画哪块设备的 roof。
    dtype : str
        roof 的精度。
    labels : mapping, optional
        按 :attr:`Measurement.id` 给出的标签，代替 :func:`label`。
    offsets : mapping, optional
        标签相对于点的偏移（point），按 :attr:`Measurement.id` 索引；默认 ``(5, -12)``。
    intensity_range : tuple of float
        x 轴的范围（FLOP/byte）。
    unit : str
        y 轴的单位。

    Returns
    -------
    list of matplotlib artists
    """
    from ...present.plotting import PALETTE, roof_color, roofline
    from ...present.plotting.style import _scale

    device = hardware(device) if isinstance(device, str) else device
    scale = _scale(unit)
    drawn = roofline(
        ax,
        device.peak_flops(dtype),
        device.memory_bandwidth,
        label=f"{device.name} {dtype.upper()}",
        color=roof_color(device.key, dtype),
        intensity_range=intensity_range,
        unit=unit,
    )
    lo, hi = intensity_range
    for m in measured:
        p = m.point()
        if p is None:
            raise InvalidArgument("measured", f"{m.id} has no roofline point")
        name = (labels or {}).get(m.id, label(m))
        if p.intensity == 0:
            # a measured bandwidth: the memory roof it gives, up to the compute peak
            top = device.peak_flops(dtype) / p.bytes_per_s
            xs = [lo, min(top, hi)]
            drawn += ax.loglog(xs, [x * p.bytes_per_s / scale for x in xs],
                               color=PALETTE["vermillion"], linestyle="--", linewidth=1.2,
                               label=f"{name} {p.bytes_per_s / 1e12:.2f} TB/s")  # fmt: skip
            continue
        y = p.flops_per_s / scale
        drawn.append(ax.scatter([p.intensity], [y], s=30, zorder=5, color=PALETTE["vermillion"],
                                edgecolors="white", linewidths=0.5))  # fmt: skip
        drawn.append(
            ax.annotate(name, (p.intensity, y), xytext=(offsets or {}).get(m.id, (5, -12)),
                        textcoords="offset points", fontsize=8, color="#222222")
        )  # fmt: skip
    return drawn


def points(measured: Sequence[Measurement]) -> list[tuple[str, float, float]]:
    """``(标签, I, 实测 FLOP/s)``，可交给 :func:`roofline_book.present.plotting.measured`。

    Examples
    --------
    >>> from roofline_book.measure.published import measurement
    >>> [(n, round(i)) for n, i, _ in points([measurement("cublas-bf16-h100", n=4096)])]
    [('GEMM 4096³', 1365)]
    """
    out = []
    for m in measured:
        p = m.point()
        if p is None or p.intensity == 0:
            raise InvalidArgument("measured", f"{m.id} has no point with FLOPs")
        out.append((label(m), p.intensity, p.flops_per_s))
    return out
