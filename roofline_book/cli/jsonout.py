"""尚未声明结果记录的子命令写 JSON 所用的函数：外层的信封、设备对象，以及一个代价的各键，
都由 :mod:`roofline_book.cli.results` 的记录写出。"""

from __future__ import annotations

from typing import Any

from .._base.records import as_mapping
from ..devices.catalog import Hardware
from ..ops import Cost
from .results import CostOn, Device, Result, is_adhoc

__all__ = ["cost_json", "device_json", "envelope", "is_adhoc"]


def envelope(command: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` 前面加上每个输出都有的 ``roofline_book_version`` 与 ``command``。"""
    return as_mapping(Result(command=command)) | body


def device_json(device: Hardware, precision: str) -> dict[str, Any]:
    """:class:`~roofline_book.cli.results.Device`：``device`` 在 ``precision`` 下的上限。"""
    return as_mapping(Device.on(device, precision))


def cost_json(cost: Cost, device: Hardware, precision: str) -> dict[str, Any]:
    """:class:`~roofline_book.cli.results.CostOn`：roofline 模型对 ``device`` 上一个代价的结论。"""
    return as_mapping(CostOn.of(cost, device, precision))
