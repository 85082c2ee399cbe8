"""profiler 的事件：读出每个算子调用的记录
（:class:`~roofline_book.measure.profile.atencalls.Call`），
找出编译期间的调用，按 ``record_function``
的范围筛选。:mod:`roofline_book.measure.profile.profiling`
用它们归属时间。

torch 在需要它的函数内部才导入。
"""

from __future__ import annotations

import math
from typing import Any

from ..._base.validate import InvalidArgument
from .atencalls import Call, Listed

__all__ = ["below", "call_of", "compiling_events", "op_events", "tree_inputs"]


def _shapes(event: Any) -> tuple[tuple[int, ...], ...]:
    return tuple(
        tuple(int(d) for d in s) if isinstance(s, list) else () for s in event.input_shapes
    )


_DTYPE_TEXT = {"float32": "float", "float64": "double", "float16": "c10::Half",
               "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
               "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
               "bool": "bool"}  # fmt: skip


def _dtype_text(dtype: Any) -> str:
    """一个 ``torch.dtype`` 写成 profiler 的 ``input_dtypes`` 那样（``torch.float32`` 写成
    ``"float"``）。
    """
    text = str(dtype).removeprefix("torch.")
    return _DTYPE_TEXT.get(text, text)


def _distinct(tensor: Any) -> int | None:
    """一个 tensor 中不同元素的个数：stride 为 0 的维（``expand`` 出来的）只算一份。"""
    sizes, strides = list(getattr(tensor, "sizes", ()) or ()), getattr(tensor, "strides", None)
    if strides is None or len(strides) != len(sizes):
        return None
    return math.prod(n for n, step in zip(sizes, strides, strict=True) if step != 0)


_Inputs = dict[int, tuple[tuple[Listed | None, ...], tuple[int | None, ...], bool]]


def _fake(tensor: Any) -> bool:
    """profiler 记下的一个 tensor 是否没有数据：在 meta 设备上，或是没有存储的 FakeTensor
    （元素个数不为零，``storage_data_ptr`` 却是 None）。"""
    if str(getattr(tensor, "device", "")) == "meta":
        return True
    sizes = list(getattr(tensor, "sizes", ()) or ())
    return getattr(tensor, "storage_data_ptr", 0) is None and math.prod(sizes) > 0


def tree_inputs(prof: Any) -> _Inputs:
    """每个算子事件（按 correlation id）的 tensor 列表、各 tensor 输入的不同元素个数，以及它的
    tensor 输入是否没有数据（:func:`_fake`：编译期间的追踪）。

    ``key_averages`` 与 ``FunctionEvent.input_shapes`` 对 ``TensorList`` 只记 ``[]``，也不记
    stride 与设备；profiler 的事件树（``kineto_results.experimental_event_tree()``）记下了列表中的
    每个 tensor，以及每个 tensor 的 stride、设备与存储。
    """
    try:
        stack = list(prof.profiler.kineto_results.experimental_event_tree())
    except (AttributeError, RuntimeError):
        return {}
    found: _Inputs = {}
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        inputs = getattr(node.extra_fields, "inputs", None)
        if not inputs:  # a kernel or runtime event (no inputs): its ids are not an op's
            continue
        lists = tuple(
            tuple((tuple(t.sizes), _dtype_text(t.dtype)) for t in i if hasattr(t, "sizes"))
            if isinstance(i, list)
            else None
            for i in inputs
        )
        distinct = tuple(_distinct(i) if hasattr(i, "sizes") else None for i in inputs)
        tensors = [t for i in inputs for t in (i if isinstance(i, list) else [i])]
        fake = any(_fake(t) for t in tensors if hasattr(t, "sizes"))
        found[node.correlation_id] = (lists, distinct, fake)
    return found


def compiling_events(events: list[Any], inputs: _Inputs) -> set[int]:
    """编译期间的事件（``id``）：输入没有数据的调用、torch 编译阶段的范围（``(dynamo_timed)``），
    以及它们下面的一切。"""
    fake = {k for k, (_, _, f) in inputs.items() if f}
    memo: dict[int, bool] = {}

    def during(e: Any) -> bool:
        key = id(e)
        if key not in memo:
            mine = getattr(e, "id", None) in fake or e.name.endswith("(dynamo_timed)")
            parent = e.cpu_parent
            memo[key] = mine or (parent is not None and during(parent))
        return memo[key]

    return {id(e) for e in events if during(e)}


def call_of(event: Any, inputs: _Inputs | None = None) -> Call:
    lists, distinct, _ = (inputs or {}).get(getattr(event, "id", -1), ((), (), False))
    return Call(
        event.name,
        _shapes(event),
        tuple(str(d) for d in (getattr(event, "input_dtypes", None) or ())),
        tuple(getattr(event, "concrete_inputs", None) or ()),
        lists if any(x is not None for x in lists) else (),
        footprints=distinct,
    )


def op_events(prof: Any, region: str | None) -> list[Any]:
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
        raise InvalidArgument(
            "region",
            f"{region!r} was not recorded; record_function ranges seen: "
            f"{', '.join(names) or 'none'}",
        )
    return inside


def below(event: Any) -> list[Any]:
    """``event`` 下面的全部事件。"""
    out, stack = [], list(event.cpu_children)
    while stack:
        child = stack.pop()
        out.append(child)
        stack.extend(child.cpu_children)
    return out
