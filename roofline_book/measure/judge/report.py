"""按书中的样子整理一次 run：测得的上限、每个条目的速率、与 datasheet 的对照、实测 roofline。

CUDA 附录和实测性能一章都通过这些函数、以同样的方式呈现每一次 run；测试也用它们呈现作为
fixture 的 run。这里给出的是结构化的记录（量、对象、数值、单位），由 ``roofline_book.book``
写成中文，由命令行写成英文；一切都读自一次 run（:class:`~roofline_book.measure.runs.records.Run`），
没有任何手填的数字。
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..._base.extras import require
from ..._base.validate import InvalidArgument, InvalidArgumentType
from ...devices.catalog import Hardware, reported
from ...present.plotting import PALETTE, UNITS, measured, roofline, text
from ..bench.cases import OPERATORS
from ..runs.records import Entry, Run
from . import predict
from .ceilings import of_run
from .claims import streams_from_memory


def datasheet_for(run: Run) -> Hardware | None:
    """按名称找到 run 所用设备在目录中的条目；不在目录中时为 None。

    Examples
    --------
    >>> from roofline_book.measure.runs import runfile
    >>> run = runfile.load_run("tests/data/fixture-cpu-pass.json")
    >>> datasheet_for(run) is None
    True
    >>> from dataclasses import replace
    >>> datasheet_for(replace(run, device=replace(run.device, name="NVIDIA H200"))).key
    'h200-sxm'
    """
    return reported(run.device.name)


@dataclass(frozen=True)
class Measured:
    """一项测得的上限，结构化：哪一类（``quantity``）、哪一项（``subject``）、数值与单位。

    Attributes
    ----------
    quantity : {"peak", "vector", "bandwidth", "cache bandwidth"}
        GEMM 峰值、向量单元的速率（L2 之内的 add）、流式带宽、某一级 cache 之内的 copy。
    subject : str
        精度（``fp32``）、流式 kernel（``copy``）或 cache 层级（``L2``）。
    value : float
    unit : {"FLOP/s", "B/s"}
    """

    quantity: str
    subject: str
    value: float
    unit: str


def measured_ceilings(run: Run) -> list[Measured]:
    """一次 run 测得的各项上限，按 峰值、带宽、cache 带宽、向量速率 的顺序。

    Examples
    --------
    >>> from roofline_book.measure.runs import runfile
    >>> run = runfile.load_run("tests/data/fixture-cpu-pass.json")
    >>> [(m.quantity, m.subject) for m in measured_ceilings(run)][:3]
    [('peak', 'fp32'), ('peak', 'bf16'), ('bandwidth', 'copy')]
    """
    c = run.ceilings
    groups = (
        ("peak", c.peak_flops, "FLOP/s"),
        ("bandwidth", c.bandwidth, "B/s"),
        ("cache bandwidth", c.cache_bandwidth, "B/s"),
        ("vector", c.vector_flops, "FLOP/s"),
    )
    return [
        Measured(quantity, subject, ceiling.value, unit)
        for quantity, ceilings, unit in groups
        for subject, ceiling in ceilings.items()
    ]


@dataclass(frozen=True)
class Result:
    """run 的一个条目，连同按模型算出的实测速率和它达到的实测 roof 的比例。

    Attributes
    ----------
    entry : roofline_book.measure.runs.records.Entry
    intensity : float or None
        模型的算术强度（FLOP/byte）；模型不搬运字节时为 None。
    flops_rate, bytes_rate : float or None
        实测 FLOP/s 与 byte/s（没有计时时为 None）。
    fraction_of_roof : float or None
        达到实测 roof 的比例：测得的上限给出的时间下界除以实测时间
        （:func:`~roofline_book.measure.judge.predict.bound_seconds`）；没有上限约束它时为 None。
    """

    entry: Entry
    intensity: float | None
    flops_rate: float | None = None
    bytes_rate: float | None = None
    fraction_of_roof: float | None = None


def results(run: Run) -> list[Result]:
    """run 的每个条目（不论状态），连同实测速率和达到实测 roof 的比例。"""
    roofs = of_run(run)
    out = []
    for entry in run.entries:
        cost = entry.cost
        intensity = cost.intensity if cost.bytes else None
        if not entry.ok:
            out.append(Result(entry, intensity))
            continue
        flops, band = entry.rates
        least = predict.bound_seconds(entry, roofs)
        fraction = least / entry.median_s if least else None
        out.append(Result(entry, intensity, flops, band, fraction))
    return out


@dataclass(frozen=True)
class Against:
    """一项测得的上限与 datasheet 的 dense 数字并列。

    Attributes
    ----------
    quantity : {"peak", "bandwidth"}
        某种精度的 dense 峰值（FLOP/s），或内存带宽（B/s）。
    precision : str or None
        峰值的精度；带宽为 None。
    measured, datasheet : float
    unit : {"FLOP/s", "B/s"}
    """

    quantity: str
    precision: str | None
    measured: float
    datasheet: float
    unit: str

    @property
    def ratio(self) -> float:
        """``measured / datasheet``：达到的比例。"""
        return self.measured / self.datasheet


def against_datasheet(run: Run, datasheet: Hardware) -> list[Against]:
    """测得的上限与 datasheet 的 dense 数字：datasheet 列出的每种测过的 GEMM 精度一项，
    内存带宽一项。
    """
    if not isinstance(datasheet, Hardware):
        raise InvalidArgumentType(
            "datasheet", f"must be a Hardware, got {type(datasheet).__name__}"
        )
    roofs = of_run(run)
    rows = []
    for precision in run.ceilings.peak_flops:
        try:
            sheet = datasheet.peak_flops(precision)
        except ValueError:
            continue
        measured = roofs.rate("matrix", precision)
        assert measured is not None  # every measured peak is a matrix rate
        rows.append(Against("peak", precision, measured, sheet, "FLOP/s"))
    bandwidth = run.memory_roof
    if bandwidth is not None:
        rows.append(Against("bandwidth", None, bandwidth, datasheet.memory_bandwidth, "B/s"))
    return rows


def plot_run(
    ax,
    run: Run,
    precision: str = "fp32",
    *,
    unit: str | None = None,
    datasheet: Hardware | None = None,
):
    """run 在 ``precision`` 精度下实测的 roofline，该精度的各算子画成点。

    实测 roof 取该精度的峰值和最高的 DRAM 带宽上限；每个测过的 cache 层级
    （``ceilings.cache_bandwidth``）各加一条点线 roof，并写出名称。给了 ``datasheet``
    时（例如 :func:`datasheet_for` 的结果），在旁边用虚线画出它的 dense roof。实心标记的
    数据来自内存；空心标记的工作集足够小，可以部分由 cache 供给，所以可能高于内存 roof。
    点由 :func:`roofline_book.present.plotting.measured` 画，每个算子和填充方式一组。

    Returns
    -------
    list of matplotlib artists
    """
    peak = of_run(run).rate("matrix", precision)
    bandwidth = run.memory_roof
    if peak is None:
        have = ", ".join(run.ceilings.peak_flops)
        raise InvalidArgument(
            "precision", f"must be one the run measured a peak of ({have}); got {precision!r}"
        )
    if bandwidth is None:
        raise ValueError("run: the ceilings hold no measured bandwidth")
    if unit is None:
        unit = "TFLOP/s" if peak >= 1e13 else "GFLOP/s"
    if unit not in UNITS:
        raise InvalidArgument("unit", f"must be one of {', '.join(UNITS)}; got {unit!r}")
    span = (1e-2, 1e4)
    drawn = roofline(
        ax,
        peak,
        bandwidth,
        label=text("measured roof", precision=precision),
        color=PALETTE["blue"],
        intensity_range=span,
        unit=unit,
    )
    cache_colours = ("green", "purple", "sky")
    levels = run.ceilings.cache_bandwidth.items()
    for (level, c), colour in zip(levels, cache_colours, strict=False):
        drawn += roofline(  # a cache roof: what data that stays in that level may reach
            ax, peak, c.value, label=text("cache roof", level=level), color=PALETTE[colour],
            linestyle=":", intensity_range=span, unit=unit, ridge=False,
        )  # fmt: skip
    if datasheet is not None:
        drawn += roofline(
            ax, datasheet.peak_flops(precision), datasheet.memory_bandwidth,
            label=text("datasheet roof", key=datasheet.key, precision=precision),
            color=PALETTE["orange"], linestyle="--", unit=unit, ridge=False,
        )  # fmt: skip
    groups: dict[tuple[str, bool], list[tuple[str, float, float]]] = {}
    for entry in run.results():
        if not entry.cost.flops or entry.precision != precision:
            continue
        hollow = not streams_from_memory(run, entry.cost)
        point = (entry.text, entry.cost.intensity, entry.rates[0])
        groups.setdefault((entry.name, hollow), []).append(point)
    seen = set()
    for (name, hollow), points in groups.items():  # one collection each: a small SVG
        style = OPERATORS[name]
        drawn += measured(
            ax, points, unit=unit, color=PALETTE[style.colour], marker=style.marker,
            hollow=hollow, label=None if name in seen else name, annotate=False, size=28,
        )  # fmt: skip
        seen.add(name)
    ax.minorticks_off()  # a log axis's minor ticks are a third of the figure's SVG
    ax.legend(loc="lower right", fontsize=7, ncol=2)
    return drawn


def plot_runs(run: Run, precisions: Sequence[str], *, datasheet=None):
    """每种精度一张实测 roofline，并排放在一个 matplotlib Figure 中，标题写明设备和精度；
    ``datasheet`` 的含义同 :func:`plot_run`。
    """
    plt = require("matplotlib.pyplot", "the run report")

    fig, axes = plt.subplots(
        1, len(precisions), figsize=(5 * len(precisions), 3.9), sharey=True, squeeze=False
    )
    for ax, precision in zip(axes[0], precisions, strict=True):
        plot_run(ax, run, precision, datasheet=datasheet)
        ax.set_title(f"{run.device.name}, {precision}")
    for ax in axes[0][1:]:
        ax.set_ylabel("")
    return fig


def measured_precisions(run: Run) -> list[str]:
    """一次 run 要画哪些精度：测了 FP32 和 BF16 就画这两种，否则画第一个峰值的精度。"""
    peaks = list(run.ceilings.peak_flops)
    return [p for p in ("fp32", "bf16") if p in peaks] or peaks[:1]


PREDICTION_TARGET = 0.2
"""``predicted = measured`` 周围画出的带：在构建本书的 CPU 上，预测误差的中位数须在带内。"""


def plot_predictions(ax, run: Run, *, band: float = PREDICTION_TARGET):
    """每个计过时的条目的预测时间对实测时间（log-log），每个算子一种颜色，画出对角线和它
    周围的 ``band``；上限探针和用来拟合固定开销的 case 画成空心（它们不计入误差）。

    Returns
    -------
    list of matplotlib artists
    """
    from .predict import predictions

    items = predictions(run)
    if not items:
        raise ValueError("run: nothing to predict (no bandwidth ceiling or no measured peak)")
    low = min(min(p.predicted_s, p.measured_s) for p in items) / 2
    high = max(max(p.predicted_s, p.measured_s) for p in items) * 2
    drawn = ax.plot([low, high], [low, high], color=PALETTE["black"], lw=1, label=text("equal"))
    drawn.append(
        ax.fill_between(
            [low, high],
            [low * (1 - band), high * (1 - band)],
            [low * (1 + band), high * (1 + band)],
            color=PALETTE["sky"],
            alpha=0.25,
            label=text("within", pct=100 * band),
        )
    )
    name_of = {p.id: run.entry(p.id).name for p in items}
    for name in [n for n in OPERATORS if n in name_of.values()]:
        style = OPERATORS[name]
        colour = PALETTE[style.colour]
        for hollow in (False, True):
            group = [p for p in items if name_of[p.id] == name and bool(p.excluded) == hollow]
            if group:
                drawn.append(
                    ax.scatter(
                        [p.predicted_s for p in group],
                        [p.measured_s for p in group],
                        marker=style.marker,
                        s=26,
                        zorder=5,
                        edgecolors=colour,
                        facecolors="none" if hollow else colour,
                        label=None if hollow else name,
                    )
                )
    ax.set(xscale="log", yscale="log", xlim=(low, high), ylim=(low, high))
    ax.minorticks_off()
    ax.set_xlabel(text("predicted time"))
    ax.set_ylabel(text("measured time"))
    ax.legend(loc="upper left", fontsize=7, ncol=2)
    return drawn


def predictions_figure(run: Run, *, title: str = ""):
    """把 :func:`plot_predictions` 画在单独的一个 matplotlib Figure 上，带标题。"""
    plt = require("matplotlib.pyplot", "the run report")

    fig, ax = plt.subplots(figsize=(5.4, 4.2))
    plot_predictions(ax, run)
    if title:
        ax.set_title(title)
    return fig
