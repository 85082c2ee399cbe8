"""把设备上的代价做成表格的行（roof、限制资源、时间下界、占比），以及唯一的文本表格渲染。

命令行、benchmark 摘要和书中的 Markdown 表格都经由这里的渲染（``tabulate``）；资源的叫法取自
:mod:`roofline_book.present.words`，一个 decoder block 的算子见 :mod:`roofline_book.llm.block`。

Examples
--------
>>> print(text_table(["op", "time"], [["add", "6 us"], ["gemm", "1.37 ms"]], right={1}))
op       time
add      6 us
gemm  1.37 ms
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .._base.extras import require
from .._base.validate import InvalidArgument, InvalidArgumentType
from ..devices.catalog import Hardware
from ..devices.kernels import device_flash_tile, device_sram_bytes
from ..dtypes import Precision
from ..llm.block import Block, block_ops, optimizer_ops
from ..llm.layers import Op
from ..ops import Cost
from ..roofline.roofs import Bound, TimeBound, main_unit, time_bound, unit_rates
from .words import RESOURCES

#: 本书对下界可能来自的每种资源的叫法（正文与表格单元格）：
#: :data:`roofline_book.present.words.RESOURCES` 的中文。
RESOURCE_ZH = RESOURCES["zh"]


@dataclass(frozen=True)
class Row:
    """一个算子在一块设备上：它的代价、限制它的 roof，以及时间下界。"""

    name: str
    cost: Cost
    time: TimeBound
    share: float
    """占整张表时间下界之和的比例。"""

    @property
    def bound(self) -> Bound:
        """决定下界的是存储层级还是计算单元。"""
        return self.time.bound

    @property
    def resource(self) -> str:
        """决定下界的单元或存储层级（``"matrix"``、``"hbm"`` 等）。"""
        return self.time.resource

    @property
    def rates(self) -> dict[str, float]:
        """每种计算单元的 FLOPs 除以时间下界，按单元索引。

        见 :func:`roofline_book.roofline.roofs.unit_rates`。
        """
        return unit_rates(self.cost, self.time)

    @property
    def unit(self) -> str | None:
        """:attr:`attainable` 所报告的单元，即承担最多 FLOPs 的那个。"""
        return main_unit(self.cost, self.time)

    @property
    def attainable(self) -> float:
        """算子主单元能达到的最高速率，即它的 FLOPs 除以时间下界（FLOP/s）：只用一种单元的
        工作为 ``min(P, B I)``，永远不超过该单元的峰值。没有 FLOPs 的算子为 0。"""
        unit = self.unit
        return 0.0 if unit is None else self.rates[unit]


def cost_table(
    named: Mapping[str, Cost] | Iterable[tuple[str, Cost] | Op],
    device: Hardware,
    dtype: Precision = "bf16",
) -> list[Row]:
    """把具名的代价放到 ``device`` 上：按顺序给出每个的 roof、限制资源、时间下界和占比。

    每个算子受它用到的每一个上限约束（:func:`roofline_book.roofline.roofs.time_bound`）：矩阵 FLOPs
    受设备在 ``dtype`` 下的矩阵单元峰值约束，向量与特殊函数 FLOPs 受这些单元的速率约束，
    字节数受 HBM（建模了 L2 时还有 L2）约束。用你自己的数字时，用
    :func:`roofline_book.devices.catalog.adhoc` 建设备。

    Parameters
    ----------
    named : mapping or list of tuple
        算子，``{name: Cost}``、``[(name, Cost), ...]`` 或一层的算子
        （:class:`~roofline_book.llm.layers.Op`，取它的 ``name``）；至少一个，每个至少搬运一个字节。
    device : roofline_book.devices.device.Hardware
        在哪块设备上运行。
    dtype : str or torch.dtype
        算子的精度，决定用哪些上限。

    Returns
    -------
    list of Row
        每个算子一项，顺序与给出时相同；占比之和为 1。:func:`table_frame` 把它们变成
        ``pandas.DataFrame``。

    Examples
    --------
    在示例设备（100 TFLOP/s、1 TB/s）上：BF16 add 每个 FLOP 搬运 6 字节，所以它的 roof 是
    1 TB/s / 6；4096^3 的 GEMM 在水平 roof 之下。

    >>> from roofline_book.devices.catalog import EXAMPLE
    >>> from roofline_book.ops import add, gemm
    >>> rows = cost_table({"add": add(4096 * 4096), "gemm": gemm(4096, 4096, 4096)}, EXAMPLE)
    >>> [(r.name, r.bound, round(r.attainable / 1e12, 3)) for r in rows]
    [('add', 'memory', 0.167), ('gemm', 'compute', 100.0)]

    add 的下界是 ``6 * 4096**2 / 1e12`` s = 100.7 us，GEMM 的是
    ``2 * 4096**3 / 100e12`` s = 1374.4 us：

    >>> [round(r.time.seconds * 1e6, 1) for r in rows]
    [100.7, 1374.4]
    >>> round(rows[0].share, 3)                 # 100.7 / (100.7 + 1374.4)
    0.068
    """
    if not isinstance(device, Hardware):
        raise InvalidArgumentType("device", f"must be a Hardware, got {type(device).__name__}")
    pairs = _named_costs(named)
    times = [time_bound(c, device, dtype) for _, c in pairs]
    total = math.fsum(t.seconds for t in times)
    return [
        Row(name, cost, t, t.seconds / total) for (name, cost), t in zip(pairs, times, strict=True)
    ]


def _named_costs(named: object) -> list[tuple[str, Cost]]:
    """把 ``named`` 变成非空的 (name, Cost) 列表，每个 Cost 都搬运一些字节。"""
    if isinstance(named, Mapping):
        items = list(named.items())
    elif isinstance(named, (str, bytes)) or not isinstance(named, Iterable):
        raise InvalidArgumentType(
            "named",
            f"must be a mapping of name to Cost or an iterable of (name, Cost) pairs, "
            f"got {type(named).__name__}",
        )
    else:
        items = list(named)
    if not items:
        raise InvalidArgument("named", "must hold at least one (name, Cost) pair, got none")
    pairs = []
    for i, item in enumerate(items):
        if isinstance(item, Op):  # a layer's operator: its display name and cost
            item = (item.name, item.cost)
        if not (isinstance(item, tuple) and len(item) == 2):
            raise InvalidArgumentType(f"named[{i}]", f"must be a (name, Cost) pair, got {item!r}")
        name, cost = item
        if not isinstance(name, str):
            raise InvalidArgumentType(
                f"named[{i}]", f"must be named by a str, got {type(name).__name__}"
            )
        if not isinstance(cost, Cost):
            raise InvalidArgumentType(
                f"named[{i}]",
                f"({name!r}) must hold a roofline_book.Cost, got {type(cost).__name__}",
            )
        if cost.bytes == 0:
            raise InvalidArgument(
                f"named[{i}]", f"({name!r}) moves no bytes, so it has no intensity"
            )
        pairs.append((name, cost))
    return pairs


def table_frame(rows: Iterable[Row]):
    """把各行变成 ``pandas.DataFrame`` （需要装有 pandas），每个数字一列。

    列：operator、FLOPs、bytes、算术强度（FLOP/byte）、attainable（FLOP/s）、bound、
    时间下界（微秒）、占整张表时间的比例。
    """
    rows = list(rows)
    for i, r in enumerate(rows):
        if not isinstance(r, Row):
            raise InvalidArgumentType(
                f"rows[{i}]", f"must be a Row (see cost_table), got {type(r).__name__}"
            )
    pd = require("pandas", "table_frame")

    return pd.DataFrame(
        {
            "operator": [r.name for r in rows],
            "FLOPs": [r.cost.flops for r in rows],
            "bytes": [r.cost.bytes for r in rows],
            "intensity [FLOP/B]": [r.cost.intensity for r in rows],
            "attainable [FLOP/s]": [r.attainable for r in rows],
            "bound": [r.bound for r in rows],
            "resource": [r.resource for r in rows],
            "time bound [us]": [r.time.seconds * 1e6 for r in rows],
            "share": [r.share for r in rows],
        }
    )


def block_table(
    config: Block,
    device: Hardware,
    *,
    attention_impl: str = "flash",
    sram_bytes: int | None = None,
) -> list[Row]:
    """block（任何目录模型的一层）的前向算子放在 ``device`` 上，各带限制资源、时间下界和占比。

    每个算子受它用到的单元与层级的上限约束（:func:`cost_table`），精度为 ``config.dtype``。
    flash kernel 的 tile 取 :func:`~roofline_book.devices.kernels.device_flash_tile` （Hopper 上
    FlashAttention-3 的 tile，带两块的 cluster：所考虑的调度中 K/V 重读最少的一种）；没有时，
    或者给了 ``sram_bytes`` 时，query 块按片上
    存储的规则来定，``sram_bytes`` 默认取设备每个 SM 的 shared memory（设备没有这个数字时取 A100 的
    192 KB）。

    Examples
    --------
    >>> from roofline_book.devices.catalog import hardware
    >>> from roofline_book.llm.block import LLAMA2_7B
    >>> rows = {r.name: r for r in block_table(LLAMA2_7B, hardware("h100-sxm"))}
    >>> rows["MLP up projection"].resource, rows["residual add"].resource
    ('matrix', 'hbm')
    >>> round(sum(r.share for r in rows.values()), 6)
    1.0
    >>> from roofline_book.llm.block import Block
    >>> from roofline_book.llm.config import model
    >>> [r.name for r in block_table(Block(model("mixtral-8x7b")), hardware("h100-sxm"))][7:9]
    ['router', 'experts gate projection']
    """
    if not isinstance(device, Hardware):
        raise InvalidArgumentType("device", f"must be a Hardware, got {type(device).__name__}")
    if not isinstance(config, Block):
        raise InvalidArgumentType("config", f"must be a Block, got {type(config).__name__}")
    tile = None
    if sram_bytes is None:
        sram_bytes = device_sram_bytes(device)
        tile = device_flash_tile(device, config.head_dim, config.dtype, config.causal)
    ops = block_ops(config, attention_impl=attention_impl, sram_bytes=sram_bytes, tile=tile)
    return cost_table(ops, device, config.dtype)


def optimizer_table(
    config: Block,
    device: Hardware,
    *,
    param_dtype: Precision = "fp32",
    grad_dtype: Precision | None = None,
    state_dtype: Precision | None = None,
    model_dtype: Precision | None = None,
) -> list[Row]:
    """在 ``device`` 上对 block 的参数做一步 AdamW，每种实现一项。

    计算 roof 是设备在 ``param_dtype`` 下的峰值；占比一列把三种实现相互比较。

    Examples
    --------
    >>> from roofline_book.devices.catalog import hardware
    >>> from roofline_book.llm.block import LLAMA2_7B
    >>> rows = optimizer_table(LLAMA2_7B, hardware("h100-sxm"), grad_dtype="bf16",
    ...                        model_dtype="bf16")
    >>> [r.name for r in rows], {r.bound for r in rows}
    (['AdamW (loop)', 'AdamW (foreach)', 'AdamW (fused)'], {'memory'})
    """
    ops = optimizer_ops(
        config,
        param_dtype=param_dtype,
        grad_dtype=grad_dtype,
        state_dtype=state_dtype,
        model_dtype=model_dtype,
    )
    return cost_table(ops, device, param_dtype)


# --------------------------------------------------------------------------
# Rendering


_ALIGN = ("left", "right", "center")


def _aligned(
    header: Sequence[str] | None,
    rows: Sequence[Sequence[object]],
    right: Collection[int],
    align: Sequence[str] | None = None,
) -> tuple[list[list[str]], list[str]]:
    lines = ([list(header)] if header else []) + [[str(c) for c in r] for r in rows]
    if not lines:
        raise InvalidArgument("rows", "are empty and so is the header: a table needs one of them")
    width = len(lines[0])
    for i, line in enumerate(lines):
        if len(line) != width:
            raise InvalidArgument(
                "rows", f"line {i} has {len(line)} cells, the table has {width} columns"
            )
    if align is None:
        return lines, ["right" if i in right else "left" for i in range(width)]
    if len(align) != width or not set(align) <= set(_ALIGN):
        raise InvalidArgument(
            "align", f"must hold {width} of 'left', 'right', 'center'; got {list(align)!r}"
        )
    return lines, list(align)


def text_table(
    header: Sequence[str] | None, rows: Sequence[Sequence[str]], right: Collection[int] = ()
) -> str:
    """把文本行排成对齐的纯文本，列与列之间两个空格。

    Parameters
    ----------
    header : sequence of str or None
        第一行；None 表示没有。
    rows : sequence of sequence of str
        每行一项，每项的单元格数与表头相同。
    right : set of int
        右对齐的列的下标（数字列）；其余左对齐。
    """
    from tabulate import tabulate

    lines, align = _aligned(header, rows, right)
    # the header goes in as a row: tabulate pads a separate header line differently
    text = tabulate(lines, tablefmt="plain", colalign=align, disable_numparse=True)
    return "\n".join(line.rstrip() for line in text.splitlines())


def markdown_table(
    header: Sequence[str],
    rows: Sequence[Sequence[object]],
    right: Collection[int] = (),
    *,
    align: Sequence[str] | None = None,
) -> str:
    """把各行写成 Markdown（竖线）表格；单元格中的 ``|`` 会被转义。

    单元格写成 ``str(cell)``。``align`` （每列 ``"left"``、``"right"`` 或 ``"center"``）优先于
    ``right``。

    Examples
    --------
    >>> print(markdown_table(["op", "n"], [["a|b", "12"]], right={1}))
    | op   |   n |
    |:-----|----:|
    | a\\|b |  12 |
    """
    from tabulate import tabulate

    escaped = [[str(c).replace("|", "\\|") for c in r] for r in rows]
    lines, colalign = _aligned([str(h) for h in header], escaped, right, align)
    return tabulate(
        lines[1:], headers=lines[0], tablefmt="pipe", colalign=colalign, disable_numparse=True
    )
