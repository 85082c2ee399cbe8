"""流式 case：带宽探针与 elementwise 算子，各占一行。"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .... import ops
from ...._base import validate as _validate
from ....ops import Cost
from ..registry import Case, Operator, Prepared, compare, power_text, register
from ._tensors import CHECK_ELEMENTS, _generator, _randn, _strided

TRIAD_SCALAR = 3.0
"""triad ``a = b + s * c`` 中的 ``s``。"""


@dataclass(frozen=True)
class Stream:
    """一个流式 case：对每个输入的 ``numel`` 个元素做一趟。

    Attributes
    ----------
    impl : str
        torch 函数，按 run file 中的名称。
    family : str
        ``"ceiling"`` （带宽探针）或 ``"elementwise"`` （算子）。
    cost : callable
        ``cost(numel, precision) -> Cost``，即模型。
    inputs : int
        输入数组的个数，1（``x``）或 2（``x``、``y``）。
    inplace : bool
        结果是否写在 ``x`` 上。
    call : callable
        ``call(x, y, out)``，即要计时的工作（只有一个输入时 ``y`` 为 None）。
    reference : callable
        在抽样值上以 float64 计算的 ``reference(x, y)``。
    colour : str
        :data:`roofline_book.present.plotting.PALETTE` 的一个键。
    """

    impl: str
    family: str
    cost: Callable[[int, str], Cost]
    inputs: int
    inplace: bool
    call: Callable[[Any, Any, Any], object]
    reference: Callable[[Any, Any], Any]
    colour: str = "black"


def _torch():
    import torch

    return torch


STREAMS: dict[str, Stream] = {
    "copy": Stream(
        "copy_",
        "ceiling",
        lambda n, p: ops.elementwise(n, p, inputs=1, outputs=1, flops_per_element=0),
        1,
        False,
        lambda x, y, out: out.copy_(x),
        lambda x, y: x,
    ),
    "triad": Stream(
        "add(alpha)",
        "ceiling",
        lambda n, p: ops.elementwise(n, p, inputs=2, outputs=1, flops_per_element=2),
        2,
        False,
        lambda x, y, out: _torch().add(x, y, alpha=TRIAD_SCALAR, out=out),
        lambda x, y: x + TRIAD_SCALAR * y,
    ),
    "triad_inplace": Stream(
        "add_(alpha)",
        "ceiling",
        lambda n, p: ops.elementwise(n, p, inputs=2, outputs=1, flops_per_element=2),
        2,
        True,
        lambda x, y, out: x.add_(y, alpha=TRIAD_SCALAR),
        lambda x, y: x + TRIAD_SCALAR * y,
    ),
    "add": Stream(
        "add",
        "elementwise",
        ops.add,
        2,
        False,
        lambda x, y, out: _torch().add(x, y, out=out),
        lambda x, y: x + y,
        colour="vermillion",
    ),
    "relu": Stream(
        # torch.relu has no out=; clamp_min is how it computes
        "clamp_min",
        "elementwise",
        ops.relu,
        1,
        False,
        lambda x, y, out: _torch().clamp_min(x, 0, out=out),
        lambda x, y: x.clamp_min(0),
        colour="orange",
    ),
}
"""流式 case，各占一行。``copy``：``dst.copy_(src)``；``triad``：
``torch.add(b, c, alpha=3, out=a)``；``triad_inplace``：``a.add_(b, alpha=3)``；``add``：
``torch.add(x, y, out=z)``；``relu``：``torch.clamp_min(x, 0, out=y)``。模型：:func:`ops.add`、
:func:`ops.relu`，copy（一读、一写、没有 FLOP）与两种 triad（两读、一写、每个元素两个 FLOP）用
:func:`ops.elementwise`。
"""

BANDWIDTH_KINDS = tuple(name for name, s in STREAMS.items() if s.family == "ceiling")
"""内存带宽上限：``dst = src``、``a = b + s * c`` 与 ``a += s * b``。"""


def elementwise_case(name: str, numel: int, precision: str = "fp32") -> Case:
    """对 ``numel`` 个元素运行的流式 case ``name`` （:data:`STREAMS` 的一个键）。

    输出预先分配，使内存分配器不计入时间：在 CPU 上，新分配的大块输出是内核刚给的新页，每页第一次
    写入都要经过一次 page fault。在 CPU 上，向不在 cache 中的数组写入时先读入这一行
    （write-allocate），这部分流量模型不计；原地 triad 写到它刚读过的行，所以它显示的是不含这次
    额外读取的内存带宽。
    """
    name = _validate.choice("name", name, tuple(STREAMS))
    stream = STREAMS[name]
    cost = stream.cost(numel, precision)
    arrays = stream.inputs + (0 if stream.inplace else 1)
    footprint = cost.bytes + 8 * (arrays + 1) * min(numel, CHECK_ELEMENTS)

    def build(device) -> Prepared:
        import torch

        gen = _generator(device)
        x = _randn((numel,), precision, device, gen)
        y = _randn((numel,), precision, device, gen) if stream.inputs == 2 else None
        out = x if stream.inplace else torch.empty_like(x)

        def fn() -> None:
            stream.call(x, y, out)

        def check() -> dict:
            xs = _strided(x).to(torch.float64, copy=True)  # before the call, which may write x
            ys = None if y is None else _strided(y).double()
            fn()
            return compare(_strided(out), stream.reference(xs, ys), precision, scale=TRIAD_SCALAR)

        return Prepared(fn, check)

    shape = (("numel", numel),)
    return Case(name, shape, precision, stream.impl, cost, footprint, build, inplace=stream.inplace)


def _numel_label(shape: Mapping[str, int]) -> str:
    return f"n={power_text(shape['numel'])}"


for _name, _stream in STREAMS.items():
    register(
        Operator(
            _name,
            ("numel",),
            (_stream.impl,),
            _stream.family,
            lambda numel, *, impl, precision, _n=_name: elementwise_case(_n, numel, precision),
            label=_numel_label,
            marker="s" if _stream.family == "elementwise" else "o",
            colour=_stream.colour,
        )
    )
