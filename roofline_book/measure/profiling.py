"""把一次 ``torch.profiler`` 的结果逐个算子对应到本包的模型，并与一条 roof 对照。

profiler 记下每个算子用了多长时间、跑了几次、输入的 shape 是什么
（``key_averages(group_by_input_shape=True)``）；它只对矩阵乘法和少数 elementwise
算子统计 FLOPs，从不统计字节数。:func:`attribute` 用同样的方式给记录下的调用分组
（名称与输入 shape，再加上对应的 dtype），给每组配上
:mod:`roofline_book.measure.atenops` 的模型（对组内各次调用求和），并用一组上限来衡量它：
run file 测得的上限，或目录中的设备。

于是每一行都有调用次数、self time 及其占总时间的比例、模型给出的 FLOPs 和字节数、
算术强度、实测的 FLOP/s 与 byte/s、达到 roof 的比例（时间下界除以实测时间），
以及起限制作用的资源。下界来自 :func:`roofline_book.bounds.bound`，上限是一个
:class:`~roofline_book.bounds.Ceilings`：目录设备的（``Ceilings.of(hardware("h100-sxm"))``），
或 run file 测得的（:func:`roofline_book.measure.ceilings.of_run`）。程序里一个算子的输入往往是
上一个算子刚写出的，所以数据按已在 cache 中计（``resident=True``）：受装得下每个 kernel 工作集的
最小层级约束。没有模型的算子只保留时间和占比，其余为 ``None``。组合算子
（调用 ``aten::mm`` 的 ``aten::linear``）自己不配模型：它下面的 kernel 各带各的，
所以不会重复计数。

torch 在需要它的函数内部才导入。

Examples
--------
>>> from roofline_book import gemm, hardware
>>> from roofline_book.bounds import Ceilings
>>> h100 = Ceilings.of(hardware("h100-sxm"))
>>> h100.name, row_bound(gemm(4096, 4096, 4096), h100, "bf16").resource
('h100-sxm', 'matrix')
"""

from __future__ import annotations

import math
import os
import runpy
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import bounds
from ..bounds import Ceilings, TimeBound
from ..ops import Cost
from ..tables import text_table
from ..units import si
from .atenops import HELPERS, Call, model, precision_of

__all__ = [
    "Attribution",
    "OpRow",
    "ScriptError",
    "attribute",
    "plot",
    "profile_script",
    "profiler",
]


@dataclass(frozen=True)
class OpRow:
    """一个算子在一组输入 shape 下的记录：profiler 给出的数字与模型给出的数字。

    时间以秒计，FLOPs 以 FLOP 计，字节数以 byte 计，速率按每秒计；模型的数字是对
    ``calls`` 次调用求和的结果，没有模型的算子（``cost is None``）为 None。
    """

    name: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    calls: int
    self_time_s: float
    share: float
    cost: Cost | None
    precision: str | None
    bound_time: TimeBound | None
    profiler_flops: int | None
    """profiler 统计的 FLOPs（``with_flops=True``）；它没有统计时为 None。"""

    @property
    def flops(self) -> int | None:
        return None if self.cost is None else self.cost.flops

    @property
    def bytes(self) -> int | None:
        return None if self.cost is None else self.cost.bytes

    @property
    def intensity(self) -> float | None:
        return None if self.cost is None or not self.cost.bytes else self.cost.intensity

    def _per_second(self, amount: int | None) -> float | None:
        return None if amount is None or self.self_time_s <= 0 else amount / self.self_time_s

    @property
    def achieved_flops(self) -> float | None:
        """模型给出的 FLOPs 除以实测的 self time（FLOP/s）。"""
        return self._per_second(self.flops)

    @property
    def achieved_bytes(self) -> float | None:
        """模型给出的字节数除以实测的 self time（byte/s）。"""
        return self._per_second(self.bytes)

    @property
    def fraction_of_roof(self) -> float | None:
        """时间下界除以实测时间，等于实测速率除以 roof。"""
        if self.bound_time is None or self.self_time_s <= 0:
            return None
        return self.bound_time.seconds / self.self_time_s

    @property
    def bound(self) -> str | None:
        """决定下界的资源（``"matrix"``、``"memory"``、``"hbm"`` 等）。"""
        return None if self.bound_time is None else self.bound_time.resource

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.name,
            "shapes": [list(s) for s in self.shapes],
            "dtypes": list(self.dtypes),
            "calls": self.calls,
            "self_time_s": self.self_time_s,
            "share": self.share,
            "flops": self.flops,
            "bytes": self.bytes,
            "intensity": self.intensity,
            "achieved_flops_per_s": self.achieved_flops,
            "achieved_Bps": self.achieved_bytes,
            "fraction_of_roof": self.fraction_of_roof,
            "bound": "dram" if self.bound == "memory" else self.bound,
            "profiler_flops": self.profiler_flops,
        }


@dataclass(frozen=True)
class Attribution:
    """一次 profile 记录下的每个算子，每个一行 :class:`OpRow`，self time 大的在前。"""

    rows: tuple[OpRow, ...]
    total_time_s: float
    ceilings: Ceilings | None
    clock: str
    """各行记的是谁的时间：``"cpu"``，或 ``"device"`` （GPU 上 kernel 的时间）。"""

    @property
    def explained(self) -> float:
        """有模型的算子所占的 self time 在总 self time 中的比例。"""
        return sum(r.share for r in self.rows if r.cost is not None)

    def modelled(self) -> list[OpRow]:
        return [r for r in self.rows if r.cost is not None]

    def total(self) -> Cost:
        """有模型的各算子的代价之和。"""
        return sum((r.cost for r in self.rows if r.cost is not None), Cost(0, 0, 0, 0))

    def as_json(self) -> dict[str, Any]:
        return {
            "ops": [r.as_json() for r in self.rows],
            "total_self_time_s": self.total_time_s,
            "explained_share": self.explained,
            "clock": self.clock,
            "roof": None if self.ceilings is None else ceilings_json(self.ceilings),
        }

    def table(self, limit: int | None = None) -> str:
        """把各行写成对齐的文本表格（带 SI 前缀），最多 ``limit`` 行。"""
        body = []
        for r in self.rows[:limit]:
            shapes = ",".join("x".join(map(str, s)) or "-" for s in r.shapes)
            if r.cost is None:
                figures = ("-",) * 6
            else:
                figures = (
                    si(r.cost.flops, "FLOP"),
                    si(r.cost.bytes, "B"),
                    "-" if r.intensity is None else f"{r.intensity:.3g}",
                    si(r.achieved_flops or 0.0, "FLOP/s"),
                    "-" if r.fraction_of_roof is None else f"{r.fraction_of_roof:.0%}",
                    r.bound or "-",
                )
            body.append((r.name, shapes[:48], str(r.calls), si(r.self_time_s, "s"),
                         f"{r.share:.1%}", *figures))  # fmt: skip
        header = ("op", "shapes", "calls", "self", "share", "FLOPs", "bytes", "FLOP/B",
                  "achieved", "of roof", "bound")  # fmt: skip
        return text_table(header, body, right={2, 3, 4, 5, 6, 7, 8, 9})


def _shapes(event: Any) -> tuple[tuple[int, ...], ...]:
    return tuple(
        tuple(int(d) for d in s) if isinstance(s, list) else () for s in event.input_shapes
    )


def _call(event: Any) -> Call:
    return Call(
        event.name,
        _shapes(event),
        tuple(str(d) for d in (getattr(event, "input_dtypes", None) or ())),
        tuple(getattr(event, "concrete_inputs", None) or ()),
    )


def _has_model(call: Call) -> bool:
    return model(call) is not None


def _events(prof: Any, region: str | None) -> list[Any]:
    """profile 中的算子事件（CPU 一侧）；给了 ``region`` 时只取其中的。"""
    from torch.autograd import DeviceType

    events = [e for e in prof.events() if e.device_type == DeviceType.CPU]
    if region is None:
        return events
    inside = []
    for e in events:
        node = e
        while node is not None and node.name != region:
            node = node.cpu_parent
        if node is not None:
            inside.append(e)
    if not inside:
        names = sorted({e.name for e in events if not e.name.startswith("aten::")})[:8]
        raise ValueError(
            f"region {region!r} was not recorded; record_function ranges seen: "
            f"{', '.join(names) or 'none'}"
        )
    return inside


def _composite(event: Any, modelled: dict[int, bool]) -> bool:
    """它下面是否运行着有模型的 kernel：它本身是填充或复制的 helper 时（``zero_`` 就是 ``fill_``），
    任何一个都算；是别的算子时，只算不是这类 helper 的 kernel。
    """
    helper = event.name in HELPERS
    stack = list(event.cpu_children)
    while stack:
        child = stack.pop()
        if modelled.get(id(child)) and (helper or child.name not in HELPERS):
            return True
        stack.extend(child.cpu_children)
    return False


def row_bound(cost: Cost, ceilings: Ceilings, precision: str) -> TimeBound | None:
    """一行的时间下界：``bound(cost, ceilings, precision, resident=True)``；``ceilings`` 没有
    这种精度的上限、或没有上限约束它时为 None。"""
    try:
        return bounds.bound(cost, ceilings, precision, resident=True)
    except ValueError:  # no rate for this precision (a run that did not measure it)
        return None


def ceilings_json(ceilings: Ceilings) -> dict[str, Any]:
    """``--json`` 中的上限：名称、每种单元和精度的速率，以及由内向外的各层级。"""
    return {
        "name": ceilings.name,
        "rates": [
            {"unit": unit, "precision": precision, "rate_per_s": value}
            for (unit, precision), value in ceilings.rates.items()
        ],
        "levels": [
            {"name": lv.name, "bandwidth_Bps": lv.bandwidth, "capacity_bytes": lv.capacity}
            for lv in ceilings.levels
        ],
    }


def attribute(
    prof: Any, ceilings: Ceilings | None = None, *, region: str | None = None
) -> Attribution:
    """把一次已结束的 ``torch.profiler.profile`` （``record_shapes=True``）对应到模型上。

    Parameters
    ----------
    prof : torch.profiler.profile
        用 ``record_shapes=True`` 运行（加上 ``with_flops=True``，就能把 profiler
        自己的 FLOPs 列在模型的旁边）。
    ceilings : roofline_book.bounds.Ceilings, optional
        衡量每个算子所用的上限（:func:`row_bound`）；不给时各行只有模型的数字，没有下界。
    region : str, optional
        只看 ``torch.profiler.record_function(region)`` 范围内的算子；此时总时间是
        这些范围内的时间。

    Returns
    -------
    Attribution
        每个（算子，输入 shape，dtype）一行，self time 大的在前。各行的 self time
        相加等于总时间（``total_time_s``）：即记录区间的时间，每个算子自己的时间只算一次。
    """
    events = _events(prof, region)
    device_clock = any(getattr(e, "self_device_time_total", 0) > 0 for e in events)
    clock = "device" if device_clock else "cpu"
    calls = {id(e): _call(e) for e in events}
    modelled = {id(e): _has_model(calls[id(e)]) for e in events}
    groups: dict[Call, dict[str, Any]] = {}
    for e in events:
        call = calls[id(e)]
        key = Call(call.name, call.shapes, call.dtypes)
        group = groups.setdefault(key, {"calls": 0, "us": 0.0, "flops": 0, "cost": None})
        group["calls"] += 1
        group["us"] += e.self_device_time_total if device_clock else e.self_cpu_time_total
        group["flops"] += int(getattr(e, "flops", 0) or 0)
        if modelled[id(e)] and not _composite(e, modelled):
            cost = model(call)
            group["cost"] = cost if group["cost"] is None else group["cost"] + cost
    total_s = sum(g["us"] for g in groups.values()) * 1e-6
    rows = []
    for key, g in groups.items():
        seconds = g["us"] * 1e-6
        cost = g["cost"]
        precision = next((p for p in map(precision_of, key.dtypes) if p), None)
        held = cost is not None and precision is not None and ceilings is not None
        bound = row_bound(cost, ceilings, precision) if held else None  # type: ignore[arg-type]
        rows.append(
            OpRow(
                key.name, key.shapes, key.dtypes, g["calls"], seconds,
                seconds / total_s if total_s > 0 else 0.0, cost, precision, bound,
                g["flops"] or None,
            )
        )  # fmt: skip
    rows.sort(key=lambda r: (-r.self_time_s, r.name, r.shapes))
    return Attribution(tuple(rows), total_s, ceilings, clock)


def plot(ax, attribution: Attribution, *, labelled: int = 6, unit: str = "GFLOP/s"):
    """把有模型的算子画成 roof 之下的点，坐标为（算术强度，实测 FLOP/s）。

    roof 取自 attribution 的上限：矩阵单元（取大部分时间所用的精度）的平顶，加上每个有带宽的
    层级的斜线（主存为实线，各级 cache 为点线）。点的颜色表示限制它的资源；self time 最多的
    ``labelled`` 个算子在点旁写出名字。

    Returns
    -------
    list of matplotlib artists
    """
    from ..plotting import PALETTE, RESOURCE_COLORS, UNITS, roofline, text

    rows = [r for r in attribution.modelled() if r.intensity and r.achieved_flops]
    if not rows:
        raise ValueError("attribution: no modelled operator with FLOPs to place")
    by_time: dict[str, float] = {}
    for r in rows:
        by_time[r.precision or "fp32"] = by_time.get(r.precision or "fp32", 0.0) + r.self_time_s
    precision = max(by_time, key=by_time.__getitem__)
    xs = [r.intensity for r in rows if r.intensity]
    span = (10 ** math.floor(math.log10(min(xs)) - 1), 10 ** math.ceil(math.log10(max(xs)) + 1))
    c, drawn = attribution.ceilings, []
    peak = None if c is None else c.rate("compute" if c.single else "matrix", precision)
    if c is not None and peak is not None:
        slopes = [lv for lv in c.levels if lv.bandwidth is not None]
        memory = slopes[-1]
        assert memory.bandwidth is not None
        drawn += roofline(ax, peak, memory.bandwidth, intensity_range=span, unit=unit,
                          label=text("measured roof", precision=precision))  # fmt: skip
        for level in slopes[:-1]:  # a level that data a cache may hold is held to
            assert level.bandwidth is not None
            drawn += roofline(ax, peak, level.bandwidth, intensity_range=span, unit=unit,
                              linestyle=":", ridge=False,
                              color=RESOURCE_COLORS.get(level.name, RESOURCE_COLORS["l2"]),
                              label=text("cache roof", level=level.name.upper()))  # fmt: skip
    scale = UNITS[unit]
    groups: dict[str, list[OpRow]] = {}
    for r in rows:
        groups.setdefault(r.bound or "", []).append(r)
    for bound, members in groups.items():  # one scatter per colour: hundreds of rows stay quick
        color = RESOURCE_COLORS.get(bound, PALETTE["vermillion"])
        xs = [r.intensity or 0.0 for r in members]
        ys = [(r.achieved_flops or 0.0) / scale for r in members]
        label = text(bound) if bound else None
        drawn.append(ax.scatter(xs, ys, color=color, s=22, zorder=5, edgecolor="white",
                                linewidth=0.4, label=label))  # fmt: skip
    for r in rows[:labelled]:
        xy = (r.intensity, (r.achieved_flops or 0.0) / scale)
        name = r.name.removeprefix("aten::")
        drawn.append(ax.annotate(name, xy, xytext=(4, 4), textcoords="offset points",
                                 fontsize=7, color="#222222"))  # fmt: skip
    ax.set_xlabel(text("intensity axis"))
    ax.set_ylabel(text("achieved axis", unit=unit))
    return drawn


def profiler(*, cuda: bool | None = None) -> Any:
    """一个记录 :func:`attribute` 所需内容的 ``torch.profiler.profile``。

    记录 CPU 活动，CUDA 可用时也记录 CUDA 活动（``cuda=None``）；记录输入 shape
    （``record_shapes=True``）和 profiler 的 FLOPs（``with_flops=True``）。kineto 每次
    开始和结束 profile 都会往 stderr 写一条提示；这里设置 ``KINETO_LOG_LEVEL=6``
    （已设置时不改）让 kineto 的日志安静下来，Python 中的错误照样抛出。
    """
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    import torch
    from torch.profiler import ProfilerActivity, profile

    use_cuda = torch.cuda.is_available() if cuda is None else cuda
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if use_cuda else [])
    return profile(activities=activities, record_shapes=True, with_flops=True)


class ScriptError(RuntimeError):
    """要 profile 的脚本无法运行、抛出了异常，或没有运行任何 torch 算子。"""


def profile_script(path: str, argv: Sequence[str] = (), *, cuda: bool | None = None) -> Any:
    """在 ``torch.profiler`` 下运行 ``path`` 处的 Python 脚本，返回 profile。

    脚本作为 ``__main__`` 运行（``runpy.run_path``），``sys.argv = [path, *argv]``；
    profiler 记录 CPU 活动，CUDA 可用时也记录 CUDA 活动（``cuda=None``），并记录输入
    shape 和 FLOPs。kineto 自己写到 stderr 的开始、结束提示通过 ``KINETO_LOG_LEVEL``
    关掉，除非它已经设置。

    Raises
    ------
    ScriptError
        文件不存在、脚本抛出异常（或以非 0 状态退出），或它没有运行任何 torch 算子。
    """
    if not os.path.isfile(path):
        raise ScriptError(f"script {path!r} does not exist or is not a file")
    import torch

    use_cuda = torch.cuda.is_available() if cuda is None else cuda
    saved = sys.argv[:]
    sys.argv = [path, *argv]
    try:
        with profiler(cuda=use_cuda) as prof:
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    raise ScriptError(f"script {path!r} exited with status {exc.code}") from None
            except Exception as exc:  # the user's script: any error it raises is reported
                where = _last_frame(exc, path)
                raise ScriptError(
                    f"script {path!r} raised {type(exc).__name__}: {exc}{where}"
                ) from None
            if use_cuda:
                torch.cuda.synchronize()
    finally:
        sys.argv = saved
    if not any(e.name.startswith("aten::") for e in prof.events()):
        raise ScriptError(f"script {path!r} ran no torch operator: nothing to attribute")
    return prof


def _last_frame(exc: BaseException, path: str) -> str:
    """脚本中 traceback 最深一帧的 `` (line N)``，没有则为空。"""
    line, tb = None, exc.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(path):
            line = tb.tb_lineno
        tb = tb.tb_next
    return "" if line is None else f" (line {line})"
