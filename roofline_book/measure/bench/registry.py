"""benchmark case 是什么，以及每个算子只登记一次的登记表。

:class:`Operator` 用 :func:`register` 登记（仿照 PyTorch 的 ``register_flop_formula``）：
它的名称、各尺寸的名称、各实现、所属类别、它的 shape 在标签中怎样写，以及怎样画。凡是列出
算子的地方（suite、run file 的 schema、结论检验、报告的作图样式、
:func:`roofline_book.measure.bench.cases.case_for`）都读这张登记表。带宽探针之外，每个 case
都是算子登记表 :data:`roofline_book.ops.registry.REGISTRY` 中某一项的 ``case``：测一个新算子，
就在 :mod:`roofline_book.measure.bench.cases` 中加一项，并在它的登记项里写上 case 的名字。

这里还有：构建好的 case 是什么（:class:`Case`、:class:`Prepared`），case 不被计时的两种情形
（:class:`Unsupported`、:class:`Incorrect`），以及与 float64 参考结果对照的正确性检查
（:func:`compare`）。torch 在函数内部才导入，所以导入本模块很轻。
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ...ops import Cost
from ...ops.registry import REGISTRY as OPERATOR_REGISTRY

FAMILIES = ("ceiling", "gemm", "elementwise", "norm", "optimizer", "attention")
"""``ceiling``：带宽探针；其余按结论检验的方式给算子分组。"""

RTOL = {"fp64": 1e-12, "fp32": 1e-4, "tf32": 5e-3, "bf16": 1.6e-2, "fp16": 2e-3}
"""每种精度的正确性检查的相对容差：结果末位的几个单位（bf16 保留 8 位有效二进制位，fp16 为 11 位，
tf32 的乘积为 11 位）。
"""


class Unsupported(Exception):
    """这个 PyTorch 或这块设备无法运行这个 case；错误信息说明原因。"""


class Incorrect(Exception):
    """case 的结果与参考结果不符；错误信息给出误差。"""


@dataclass
class Prepared:
    """已分配好 tensor 的 case：要计时的调用，以及它的正确性检查。

    Attributes
    ----------
    fn : callable
        要计时的调用；没有参数。
    check : callable
        调用 ``fn`` 一次，把结果与参考结果比较；返回 run file 的 ``check`` 记录，或抛出
        :class:`Incorrect`。
    close : callable
        恢复 case 改动过的任何全局设置。
    note : str
        读这次 run 的人应当知道的、关于这个 case 怎样运行的说明。
    """

    fn: Callable[[], object]
    check: Callable[[], dict[str, Any]]
    close: Callable[[], None] = field(default=lambda: None)
    note: str = ""


@dataclass(frozen=True)
class Case:
    """suite 中的一个算子 case。

    Attributes
    ----------
    name : str
        算子，:data:`roofline_book.measure.bench.cases.OPERATORS` 的一个键。
    shape : tuple
        ``(str, int)`` 对的序列：各尺寸，名称与 :mod:`roofline_book.ops` 中函数的参数名相同。
    precision : str
    impl : str
        计算方式（一个 torch 函数，或模型区分的一种实现：``loop``/``foreach``/``fused``、
        ``materialized``/``sdpa``）。
    cost : Cost
        模型给出的 FLOPs 与字节数。
    footprint : int
        case 分配的字节数，含检查所用的（byte）。
    build : callable
        ``build(torch.device) -> Prepared``。
    inplace : bool
        case 是否只覆盖写它刚读过的数据（``x.add_(y)``、优化器的一步）：这时没有写入会落在 cache
        必须先取来的行上。
    implementation : Cost, optional
        CPU 实现实际运行的内容，在已知它比模型计的更多时给出（CPU 上的 ``torch.rms_norm`` 是六到
        八个 kernel 的组合，16 位输入还要先转成 FP32）：CPU 上对其时间的预测用它，下界用模型。
    """

    name: str
    shape: tuple[tuple[str, int], ...]
    precision: str
    impl: str
    cost: Cost
    footprint: int
    build: Callable[[Any], Prepared] = field(compare=False, repr=False)
    inplace: bool = False
    implementation: Cost | None = None

    @property
    def id(self) -> str:
        """在一次 run 中唯一：``name/precision/impl/size=value,...``。"""
        sizes = ",".join(f"{k}={v}" for k, v in self.shape)
        return f"{self.name}/{self.precision}/{self.impl}/{sizes}"

    @property
    def allocate_bytes(self) -> int:
        """write-allocate 的 cache（x86 CPU）在模型之外多读的字节数：向它没有持有的行写入之前，
        先取来这一行。非原地的写入每写一个字节付一次这个代价；原地的写入不付（byte）。
        """
        return 0 if self.inplace else self.cost.bytes_written

    @property
    def memory_bound(self) -> bool:
        """它的时间是否取决于内存流量（除 GEMM 外都是）：是则冲刷 cache。"""
        return self.name != "gemm"


def power_text(value: int) -> str:
    """2 的幂写成 ``2^k``，否则写普通的数。

    Examples
    --------
    >>> power_text(2**20), power_text(1000)
    ('2^20', '1000')
    """
    return f"2^{value.bit_length() - 1}" if value > 0 and value & (value - 1) == 0 else str(value)


def _sizes_text(shape: Mapping[str, int]) -> str:
    return "x".join(str(v) for v in shape.values())


@dataclass(frozen=True)
class Operator:
    """benchmark suite 中的一个算子，登记表的每个读者看到的都是它。

    Attributes
    ----------
    name : str
        run file 中的 ``name``。
    sizes : tuple of str
        各尺寸的名称，按 case 构建函数接收它们的顺序。
    impls : tuple of str
        它的各个实现；第一个是默认的。
    family : str
        :data:`FAMILIES` 之一。
    make : callable
        ``make(*sizes, impl=..., precision=...) -> Case``。
    label : callable
        ``label(shape) -> str``，把 shape 写成简短的标签。
    marker : str
        在实测 roofline 上所用的 matplotlib marker。
    colour : str
        :data:`roofline_book.present.plotting.PALETTE` 的一个键。
    """

    name: str
    sizes: tuple[str, ...]
    impls: tuple[str, ...]
    family: str
    make: Callable[..., Case] = field(compare=False, repr=False)
    label: Callable[[Mapping[str, int]], str] = field(
        default=_sizes_text, compare=False, repr=False
    )
    marker: str = "o"
    colour: str = "black"


_REGISTRY: dict[str, Operator] = {}
REGISTRY: Mapping[str, Operator] = MappingProxyType(_REGISTRY)
"""按名称索引的全部登记过的算子（只读），按 :data:`FAMILIES` 列出的类别排序，
同一类别内按登记顺序。
"""


def register(operator: Operator) -> Operator:
    """把一个算子登记进 :data:`REGISTRY`；一个名称只能登记一次。

    Raises
    ------
    ValueError
        名称已登记过，类别不在 :data:`FAMILIES` 中，或它不是带宽探针、又没有
        :data:`roofline_book.ops.registry.REGISTRY` 的哪一项以它为 benchmark case。
    """
    if operator.name in _REGISTRY:
        raise ValueError(f"operator {operator.name!r} is registered already")
    if operator.family not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}; got {operator.family!r}")
    if not operator.impls or not operator.sizes:
        raise ValueError(f"operator {operator.name!r} needs at least one impl and one size")
    modelled = {e.case for e in OPERATOR_REGISTRY.values()}
    if operator.family != "ceiling" and operator.name not in modelled:
        raise ValueError(
            f"operator {operator.name!r} is no registered operator's case: name it in its "
            "roofline_book.ops.registry entry (case=...)"
        )
    ordered = sorted([*_REGISTRY.values(), operator], key=lambda o: FAMILIES.index(o.family))
    _REGISTRY.clear()
    _REGISTRY.update((o.name, o) for o in ordered)
    return operator


def compare(out, ref, precision: str, *, scale: float = 1.0, reference: str = "fp64") -> dict:
    """把结果与参考结果比较；返回 run file 的 ``check`` 记录。

    即 ``torch.allclose(out, ref, rtol, atol)``，其中 ``rtol = RTOL[precision]``，
    ``atol = rtol * scale``，``scale`` 是数值的典型大小（随机正态输入的 GEMM 为 ``sqrt(k)``）。

    Raises
    ------
    Incorrect
        两者不符时抛出，带最大绝对误差。

    Examples
    --------
    >>> import torch
    >>> compare(torch.ones(3), torch.ones(3, dtype=torch.float64), "fp32")["max_abs_err"]
    0.0
    >>> compare(torch.zeros(3), torch.ones(3, dtype=torch.float64), "fp32")
    Traceback (most recent call last):
    ...
    roofline_book.measure.bench.registry.Incorrect: max |error| 1 against the fp64 reference
    exceeds ...
    """
    import torch

    if precision not in RTOL:
        raise ValueError(f"precision must be one of {', '.join(RTOL)}; got {precision!r}")
    rtol = RTOL[precision]
    atol = rtol * scale
    got = out.detach().to(device=ref.device, dtype=torch.float64)
    if got.shape != ref.shape:
        raise Incorrect(f"result has shape {tuple(got.shape)}, reference {tuple(ref.shape)}")
    error = float((got - ref).abs().max()) if got.numel() else 0.0
    if not torch.allclose(got, ref, rtol=rtol, atol=atol) or not math.isfinite(error):
        raise Incorrect(
            f"max |error| {error:.3g} against the {reference} reference "
            f"exceeds rtol={rtol:g}, atol={atol:g}"
        )
    return {"reference": reference, "max_abs_err": error, "rtol": rtol, "atol": atol}
