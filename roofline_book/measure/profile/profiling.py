"""把一次 ``torch.profiler`` 的结果逐个算子对应到本包的模型，并与一条 roof 对照。

profiler 记下每个算子用了多长时间、跑了几次、输入的 shape 是什么
（``key_averages(group_by_input_shape=True)``）；它只对矩阵乘法和少数 elementwise
算子统计 FLOPs，从不统计字节数。:func:`attribute` 用同样的方式给记录下的调用分组
（名称与输入 shape，再加上对应的 dtype），给每组配上
:mod:`roofline_book.measure.profile.atenops` 的模型（对组内各次调用求和），并用一组上限来衡量它：
run file 测得的上限，或目录中的设备。

于是每一行都有调用次数、self time 及其占总时间的比例、模型给出的 FLOPs 和字节数、
算术强度、实测的 FLOP/s 与 byte/s、达到 roof 的比例（时间下界除以实测时间），
以及起限制作用的资源。下界来自 :func:`roofline_book.roofline.bounds.bound`，上限是一个
:class:`~roofline_book.roofline.bounds.Ceilings`：目录设备的（``Ceilings.of(hardware("h100-sxm"))``），
或 run file 测得的
（:func:`roofline_book.measure.judge.ceilings.of_run`）。程序里一个算子的输入往往是
上一个算子刚写出的，所以数据按已在 cache 中计（``resident=True``）：受装得下每个 kernel 工作集的
最小层级约束。没有模型的算子只保留时间和占比，其余为 ``None``。

组合算子与它下面的 kernel（:attr:`OpRow.kind`）：

- ``"composite"``：一个带模型的算子下面运行着带模型的 kernel（``aten::relu`` 交给
  ``aten::clamp_min`` 去算，``aten::mean`` 交给 ``sum`` 与 ``div_``），或者一个算子没有自己的
  kernel（torch 把它注册为 ``CompositeImplicitAutograd``，如 ``aten::linear``；或列在
  :data:`~roofline_book.measure.profile.atencalls.WRAPPERS` 中，如 ``aten::_to_copy``）。它自己不配
  模型，下面的 kernel 各带各的，所以不会重复计数；它自己的 self time 是派发的开销。一个
  没有模型、自己又干活的算子（``aten::sort`` 先 ``copy_``，再在自己的 self time 里排序）是
  ``"unmodelled"``。
- 一个带模型的 kernel 下面没有模型的子算子（分配、view、它内部调用的 kernel），它们的 self
  time 并入这个 kernel 那一行：模型算的是整个算子的工作，时间也就要算整个算子的时间，不然
  这一行会比它的 roof 还快。
- ``record_function`` 的范围、autograd 的节点这些不是算子（torch 里没有它们的 schema），
  是 ``"range"``：它们的 self time 是两次算子调用之间 Python 与框架的时间，列出来，但不算作
  没有模型的算子。
- ``torch.compile`` 编译出的图：Inductor 把算子融合成自己的 kernel，profiler 不把它们记成
  算子，它们的时间是 ``## Call CompiledFxGraph <key> ##`` 这个范围自己的 self time（torch 的
  ``_inductor/output_code.py`` 用这个名字记下每次调用）。这一行是 ``"compiled"``：它的时间
  算在算子的时间里，但没有模型，所以不算作已解释的部分。
- 编译期间的调用：Dynamo 与 AOTAutograd 在 FakeTensor 与 meta tensor 上追踪程序，profiler
  照样记下每个算子（``aten::mm`` 也在其中），它们的 self time 是追踪的开销，不是计算。输入是
  meta tensor 或没有存储的 FakeTensor 的调用、它们下面的一切，以及 torch 编译阶段的范围
  （名字以 ``(dynamo_timed)`` 结尾，``torch/_dynamo/utils.py``）之内的一切，合成一行
  :data:`COMPILING`，kind 为 ``"compile"``：不是算子的时间，也不配模型。
- 一行的时间比它的下界还短（:attr:`OpRow.beats_bound`），说明下界或归属有错；表格不把它当作
  正常的占比列出。

torch 在需要它的函数内部才导入。

Examples
--------
>>> from roofline_book import gemm, hardware
>>> from roofline_book.roofline.bounds import Ceilings
>>> h100 = Ceilings.of(hardware("h100-sxm"))
>>> h100.name, row_bound(gemm(4096, 4096, 4096), h100, "bf16").resource
('h100-sxm', 'matrix')
"""

from __future__ import annotations

import math
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from ...ops import Cost
from ...present.tables import text_table
from ...roofline import bounds
from ...roofline.bounds import Ceilings, TimeBound
from ...units import si
from .atencalls import Call, is_wrapper, precision_of, schemas
from .atenops import HELPERS, model
from .profevents import below, call_of, compiling_events, op_events, tree_inputs
from .scripts import ScriptError, as_main, profile_script, profiler

__all__ = [
    "COMPILING",
    "Attribution",
    "OpRow",
    "ScriptError",
    "as_main",
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
    kind: str = "model"
    """``"model"`` （带模型：``cost`` 不为 None，view 与分配的模型是零）、``"composite"`` （工作在
    下面带模型的 kernel 里）、``"unmodelled"`` （没有模型的算子）、``"compiled"`` （一个编译出的
    图，Inductor 的 kernel，没有模型）、``"range"`` （``record_function`` 的范围、autograd 的节点：
    不是算子），或 ``"compile"`` （编译期间在 FakeTensor 上的追踪：不是算子）。
    """

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
    def beats_bound(self) -> bool:
        """实测时间比时间下界还短（``fraction_of_roof > 1``）：真实的 kernel 打破了下界，说明模型
        多算了工作、上限偏低，或时间没有记在做这些工作的调用上。这样的比例不是结果，表格不列出它。
        """
        fraction = self.fraction_of_roof
        return fraction is not None and fraction > 1

    @property
    def bound(self) -> str | None:
        """决定下界的资源（``"matrix"``、``"memory"``、``"hbm"`` 等）。"""
        return None if self.bound_time is None else self.bound_time.resource


@dataclass(frozen=True)
class Attribution:
    """一次 profile 记录下的每个算子，每个一行 :class:`OpRow`，self time 大的在前。"""

    rows: tuple[OpRow, ...]
    total_time_s: float
    ceilings: Ceilings | None
    clock: str
    """各行记的是谁的时间：``"cpu"``，或 ``"device"`` （GPU 上 kernel 的时间）。"""

    @property
    def operator_time_s(self) -> float:
        """算子的 self time 之和（秒）：编译出的图（``"compiled"``）算在内，``"range"`` 与
        ``"compile"`` 行不算。"""
        return sum(r.self_time_s for r in self.rows if r.kind not in _NOT_OPERATORS)

    @property
    def compiled_time_s(self) -> float:
        """编译出的图（Inductor 的 kernel）的 self time 之和（秒）：在算子的时间里，没有模型。"""
        return sum(r.self_time_s for r in self.rows if r.kind == "compiled")

    @property
    def compile_time_s(self) -> float:
        """编译期间追踪的 self time（秒）：不是算子的时间。"""
        return sum(r.self_time_s for r in self.rows if r.kind == "compile")

    @property
    def range_time_s(self) -> float:
        """``record_function`` 范围与 autograd 节点的 self time（秒）：在任何算子之外。"""
        return sum(r.self_time_s for r in self.rows if r.kind == "range")

    def beaten(self) -> list[OpRow]:
        """时间比下界还短的行（:attr:`OpRow.beats_bound`）。"""
        return [r for r in self.rows if r.beats_bound]

    @property
    def explained(self) -> float:
        """算子的 self time 中，有模型的行（``"model"``）与其工作全由带模型的 kernel 完成的组合算子
        （``"composite"``）所占的比例；编译出的图在分母里、不在分子里；``record_function`` 范围、
        autograd 节点与编译期间的追踪不在分母里。
        """
        ops = self.operator_time_s
        done = sum(r.self_time_s for r in self.rows if r.kind in ("model", "composite"))
        return done / ops if ops > 0 else 0.0

    @property
    def modelled_share(self) -> float:
        """算子的 self time 中，带模型的行（``"model"``）所占的比例：不算组合算子的派发开销。"""
        ops = self.operator_time_s
        done = sum(r.self_time_s for r in self.rows if r.kind == "model")
        return done / ops if ops > 0 else 0.0

    def modelled(self) -> list[OpRow]:
        """带模型、做实事（有 FLOPs 或字节）的行；view 与分配那样模型为零的行不在其中。"""
        return [r for r in self.rows if r.cost is not None and (r.cost.flops or r.cost.bytes)]

    def total(self) -> Cost:
        """有模型的各算子的代价之和。"""
        return sum((r.cost for r in self.rows if r.cost is not None), Cost(0, 0, 0, 0))

    def table(self, limit: int | None = None) -> str:
        """把各行写成对齐的文本表格（带 SI 前缀），最多 ``limit`` 行。"""
        body = []
        for r in self.rows[:limit]:
            shapes = ",".join("x".join(map(str, s)) or "-" for s in r.shapes)
            if r.cost is None:
                figures = (_NO_COST.get(r.kind, "-"),) + ("-",) * 5
            else:
                figures = (
                    si(r.cost.flops, "FLOP"),
                    si(r.cost.bytes, "B"),
                    "-" if r.intensity is None else f"{r.intensity:.3g}",
                    si(r.achieved_flops or 0.0, "FLOP/s"),
                    _of_roof(r),
                    r.bound or "-",
                )
            name = _graph_name(r.name) if r.kind == "compiled" else r.name
            body.append((name, shapes[:48], str(r.calls), si(r.self_time_s, "s"),
                         f"{r.share:.1%}", *figures))  # fmt: skip
        header = ("op", "shapes", "calls", "self", "share", "FLOPs", "bytes", "FLOP/B",
                  "achieved", "of roof", "bound")  # fmt: skip
        return text_table(header, body, right={2, 3, 4, 5, 6, 7, 8, 9})


_NOT_OPERATORS = ("range", "compile")
_NO_COST = {"composite": "composite", "compiled": "Inductor", "compile": "tracing"}
COMPILING = "torch.compile: compiling (its phases, tracing on fake tensors)"
"""编译期间追踪的那一行（kind ``"compile"``）的名字。"""
_GRAPH = "## Call CompiledFxGraph "  # torch/_inductor/output_code.py names each call so


def _of_roof(row: OpRow) -> str:
    """表格中“占 roof 的比例”一栏：比下界还快的行不写比例，写 ``beats bound``。"""
    if row.fraction_of_roof is None:
        return "-"
    return "beats bound" if row.beats_bound else f"{row.fraction_of_roof:.0%}"


def _graph_name(name: str) -> str:
    """``## Call CompiledFxGraph fke7zqj5... ##`` 在表格中写成 ``compiled graph fke7zqj5``。"""
    return "compiled graph " + name.removeprefix(_GRAPH).removesuffix(" ##")[:8]


def _composite(event: Any, work: dict[int, bool]) -> bool:
    """它下面是否运行着做实事、带模型的 kernel：它本身是填充或复制的 helper 时（``zero_`` 就是
    ``fill_``），任何一个都算；是别的算子时，只算不是这类 helper 的 kernel。
    """
    helper = event.name in HELPERS
    return any(work.get(id(c)) and (helper or c.name not in HELPERS) for c in below(event))


def _classify(
    events: list[Any], calls: dict[int, Call], compiling: AbstractSet[int] = frozenset()
) -> tuple[dict, dict, dict]:
    """每个事件的 Cost（只给带着模型的 kernel）、它的时间记在哪个事件上，以及它那一行的 kind。"""
    costs = {id(e): None if id(e) in compiling else model(calls[id(e)]) for e in events}
    work = {k: c is not None and (c.flops > 0 or c.bytes > 0) for k, c in costs.items()}
    carries = {id(e): work[id(e)] and not _composite(e, work) for e in events}
    inside = set(carries)
    owner, kind = {}, {}
    for e in events:
        node = e.cpu_parent
        while node is not None and id(node) in inside and not carries[id(node)]:
            node = node.cpu_parent
        absorbed = not carries[id(e)] and node is not None and id(node) in inside
        owner[id(e)] = node if absorbed and id(e) not in compiling else e
        if id(e) in compiling:
            kind[id(e)] = "compile"
        elif e.name.startswith(_GRAPH):
            kind[id(e)] = "compiled"
        elif carries[id(e)] or (costs[id(e)] is not None and not work[id(e)]):
            kind[id(e)] = "model"
        elif not schemas(e.name):
            kind[id(e)] = "range"
        else:
            # a modelled op whose kernels run below it (relu over clamp_min, mean over sum and
            # div_), or an op with no kernel of its own (aten::linear, aten::_to_copy)
            wrapper = work[id(e)] or is_wrapper(calls[id(e)])
            kind[id(e)] = "composite" if wrapper else "unmodelled"
    kept = {k: (c if carries[k] or kind[k] == "model" else None) for k, c in costs.items()}
    return kept, owner, kind


_KINDS = ("model", "composite", "unmodelled", "compiled", "range", "compile")


def row_bound(cost: Cost, ceilings: Ceilings, precision: str) -> TimeBound | None:
    """一行的时间下界：``bound(cost, ceilings, precision, resident=True)``；``ceilings`` 没有
    这种精度的上限、或没有上限约束它时为 None。"""
    try:
        return bounds.bound(cost, ceilings, precision, resident=True)
    except ValueError:  # no rate for this precision (a run that did not measure it)
        return None


def attribute(
    prof: Any, ceilings: Ceilings | None = None, *, region: str | None = None
) -> Attribution:
    """把一次已结束的 ``torch.profiler.profile`` （``record_shapes=True``）对应到模型上。

    Parameters
    ----------
    prof : torch.profiler.profile
        用 ``record_shapes=True`` 运行（加上 ``with_flops=True``，就能把 profiler
        自己的 FLOPs 列在模型的旁边）。
    ceilings : roofline_book.roofline.bounds.Ceilings, optional
        衡量每个算子所用的上限（:func:`row_bound`）；不给时各行只有模型的数字，没有下界。
    region : str, optional
        只看 ``torch.profiler.record_function(region)`` 范围内的算子；此时总时间是
        这些范围内的时间。

    Returns
    -------
    Attribution
        每个（算子，输入 shape，dtype）一行，self time 大的在前。各行的 self time
        相加等于总时间（``total_time_s``）：即记录区间的时间，每个算子自己的时间只算一次。
        带模型的 kernel 那一行还含有它下面没有模型的子算子的 self time（那些子算子不再单独成行）。
    """
    events = op_events(prof, region)
    device_clock = any(getattr(e, "self_device_time_total", 0) > 0 for e in events)
    clock = "device" if device_clock else "cpu"
    inputs = tree_inputs(prof)
    calls = {id(e): call_of(e, inputs) for e in events}
    compiling = compiling_events(events, inputs)
    costs, owner, kinds = _classify(events, calls, compiling)
    groups: dict[Call, dict[str, Any]] = {}

    def group(e: Any) -> dict[str, Any]:
        call = calls[id(e)]
        if id(e) in compiling:
            key = Call(COMPILING, ())
        else:
            key = Call(call.name, call.shapes, call.dtypes)
        empty = {"calls": 0, "us": 0.0, "flops": 0, "cost": None, "kind": _KINDS[-1]}
        return groups.setdefault(key, empty)

    for e in events:
        target = group(owner[id(e)])
        target["us"] += e.self_device_time_total if device_clock else e.self_cpu_time_total
        if owner[id(e)] is not e:
            continue  # absorbed: its time belongs to the kernel above it
        g = group(e)
        g["calls"] += 1
        g["flops"] += int(getattr(e, "flops", 0) or 0)
        g["kind"] = min(g["kind"], kinds[id(e)], key=_KINDS.index)
        cost = costs[id(e)]
        if cost is not None:
            g["cost"] = cost if g["cost"] is None else g["cost"] + cost
    total_s = sum(g["us"] for g in groups.values()) * 1e-6
    rows = []
    for key, g in groups.items():
        seconds = g["us"] * 1e-6
        cost = g["cost"]
        precision = next((p for p in map(precision_of, key.dtypes) if p), None)
        works = cost is not None and (cost.flops > 0 or cost.bytes > 0)
        held = works and precision is not None and ceilings is not None
        bound = row_bound(cost, ceilings, precision) if held else None  # type: ignore[arg-type]
        rows.append(
            OpRow(
                key.name, key.shapes, key.dtypes, g["calls"], seconds,
                seconds / total_s if total_s > 0 else 0.0, cost, precision, bound,
                g["flops"] or None, g["kind"],
            )
        )  # fmt: skip
    rows.sort(key=lambda r: (-r.self_time_s, r.name, r.shapes))
    return Attribution(tuple(rows), total_s, ceilings, clock)


def plot(ax, attribution: Attribution, *, labelled: int = 6, unit: str = "GFLOP/s"):
    """把有模型的算子画成 roof 之下的点，坐标为（算术强度，实测 FLOP/s）。

    roof 取自 attribution 的上限：矩阵单元（取大部分时间所用的精度）的平顶，加上每个有带宽的
    层级的斜线（主存为实线，各级 cache 为点线）。点的颜色表示限制它的资源；self time 最多的
    ``labelled`` 个算子在点旁写出名字（``label_operators``；``labelled=0`` 不写，图例要先画时
    就这样调用，再单独调用 ``label_operators``）。

    Returns
    -------
    list of matplotlib artists
    """
    from ...present.plotting import PALETTE, RESOURCE_COLORS, UNITS, roofline, text

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
    peak = None if c is None else c.rate("compute" if c.shared_peak else "matrix", precision)
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
    ax.set_xlabel(text("intensity axis"))
    ax.set_ylabel(text("achieved axis", unit=unit))
    drawn += label_operators(ax, attribution, labelled, unit=unit)
    return drawn


def label_operators(ax, attribution: Attribution, labelled: int = 6, *, unit: str = "GFLOP/s"):
    """在 :func:`plot` 画出的点旁写出 self time 最多的 ``labelled`` 个算子的名字，每个算子一次
    （各种 scaled dot-product attention 记作 attention）。

    点的位置由实测决定，换一台机器就不同，所以每个名字放在它的点旁第一个不压住别的文字和点的
    地方（:func:`~roofline_book.present.plotting.layout.place_labels`），放不下的不写。
    图例若要画，先画图例再调用本函数。

    Returns
    -------
    list of matplotlib.text.Annotation
    """
    from ...present.plotting import UNITS
    from ...present.plotting.layout import place_labels

    scale = UNITS[unit]
    rows = [r for r in attribution.modelled() if r.intensity and r.achieved_flops]
    named: dict[str, tuple[float, float]] = {}  # one label per operator: its other shapes sit close
    for r in rows:
        name = "attention" if "scaled_dot_product" in r.name else r.name.removeprefix("aten::")
        if name not in named and len(named) < labelled:
            named[name] = (r.intensity or 0.0, (r.achieved_flops or 0.0) / scale)
    return place_labels(ax, list(named.items()))
