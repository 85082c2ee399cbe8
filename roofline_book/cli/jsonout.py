"""子命令按 :mod:`roofline_book.cli.schema` 的词汇写出的 JSON：外层的信封、设备对象，
以及一个代价的各键。"""

from __future__ import annotations

from typing import Any

from .. import __version__
from ..devices.catalog import Hardware, catalog
from ..ops import Cost
from ..roofline.roofs import main_unit, time_bound, unit_rates

__all__ = ["cost_json", "device_json", "envelope", "is_adhoc"]


def envelope(command: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` 前面加上每个输出都有的 ``roofline_book_version`` 与 ``command``。"""
    return {"roofline_book_version": __version__, "command": command} | body


def is_adhoc(device: Hardware) -> bool:
    """``device`` 不是目录中的设备（由 ``--peak --bandwidth`` 建成）。"""
    return catalog().get(device.key) is not device


def device_json(device: Hardware, precision: str) -> dict[str, Any]:
    """:data:`~roofline_book.cli.schema.DEVICE`：``device`` 在 ``precision`` 下的上限。"""
    return {
        "key": device.key,
        "name": device.name,
        "adhoc": is_adhoc(device),
        "precision": precision,
        "peaks_per_s": {
            "matrix": device.peak_flops(precision),
            "vector": device.ceiling("vector", precision),
            "special": device.ceiling("special", precision),
        },
        "bandwidths_Bps": {"hbm": device.memory_bandwidth, "l2": device.l2_bandwidth},
        "ridge_point": device.ridge_point(precision),
    }


def cost_json(cost: Cost, device: Hardware, precision: str) -> dict[str, Any]:
    """:data:`~roofline_book.cli.schema.COST`：roofline 模型对 ``device`` 上一个代价的结论，
    用基本单位。

    ``time_by_resource_s`` 是每种单元和每个存储层级所需的秒数；``time_lower_bound_s`` 是其中最大的，
    ``bound`` 指出它对应的资源。``attainable_per_s`` 是承担最多 FLOPs 的那个单元
    （``attainable_unit``）的速率，即它的 FLOPs 除以时间下界；``attainable_by_unit_per_s`` 给出每个
    单元的速率，没有一个超过该单元的峰值。
    """
    time = time_bound(cost, device, precision)
    rates = unit_rates(cost, time)
    unit = main_unit(cost, time)
    return {
        "flops": cost.flops,
        "flops_by_unit": dict(cost.flops_by_unit),
        "bytes_read": cost.bytes_read,
        "bytes_written": cost.bytes_written,
        "bytes": cost.bytes,
        "reread_bytes": cost.reread_bytes,
        "kernels": cost.kernels,
        "intensity": cost.intensity,
        "bound": time.resource,
        "bound_kind": time.bound,
        "attainable_per_s": rates[unit] if unit else 0.0,
        "attainable_unit": unit,
        "attainable_by_unit_per_s": dict(rates),
        "time_by_resource_s": dict(time.by_resource),
        "time_compute_s": time.compute,
        "time_memory_s": time.memory,
        "time_lower_bound_s": time.seconds,
    }
