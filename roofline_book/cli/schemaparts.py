"""尚未声明结果记录的子命令的 ``--json`` schema 由这些小块拼成：数、整数、字符串、对象的写法，
以及由 :mod:`roofline_book.cli.results` 的记录生成的设备对象（:data:`DEVICE`）、代价
（:data:`COST`）与算子条目。
"""

from __future__ import annotations

from typing import Any

from .._base.records import json_schema
from .results import DIALECT, RESOURCES, BlockOp, CostOn, Device, LayerOp, StepOp

__all__ = ["DIALECT", "RESOURCES"]


def number(description: str, *, nullable: bool = False, minimum: float | None = 0) -> dict:
    kind: Any = ["number", "null"] if nullable else "number"
    out: dict[str, Any] = {"type": kind, "description": description}
    if minimum is not None:
        out["minimum"] = minimum
    return out


def integer(description: str, *, nullable: bool = False) -> dict:
    return {"type": ["integer", "null"] if nullable else "integer", "minimum": 0,
            "description": description}  # fmt: skip


def string(description: str, *, nullable: bool = False, enum: list | None = None) -> dict:
    out: dict[str, Any] = {"type": ["string", "null"] if nullable else "string",
                           "description": description}  # fmt: skip
    if enum is not None:
        out["enum"] = enum + ([None] if nullable else [])
    return out


def obj(properties: dict[str, dict], description: str, *, optional: tuple[str, ...] = ()) -> dict:
    return {
        "type": "object",
        "description": description,
        "required": [k for k in properties if k not in optional],
        "additionalProperties": False,
        "properties": properties,
    }


def mapping(values: dict, description: str) -> dict:
    return {"type": "object", "description": description, "additionalProperties": values}


def listing(items: dict, description: str) -> dict:
    return {"type": "array", "description": description, "items": items}


DEVICE = json_schema(Device)
"""设备对象：``op``、``block``、``infer``、``plot`` 与 ``profile --device`` 都输出它。"""

COST = json_schema(CostOn)["properties"]
"""一个代价在一块设备上的 roofline 结论：``op`` 的顶层、``block`` 和 ``infer`` 的每个算子、
``plot`` 的每个点都有这些键。"""

VERSION = {
    "roofline_book_version": string("version of the roofline-book package that wrote this"),
}


def command(name: str, properties: dict[str, dict], description: str,
             optional: tuple[str, ...] = ()) -> dict:  # fmt: skip
    body = obj(
        VERSION | {"command": {"const": name, "description": "the subcommand"}} | properties,
        description,
        optional=optional,
    )
    return {"$schema": DIALECT, "title": f"roofline-book {name} --json"} | body


BLOCK_OP = json_schema(BlockOp)
STEP_OP = json_schema(StepOp)
LAYER_OP = json_schema(LayerOp)


def phase(extra: dict[str, dict]) -> dict:
    return obj(
        {
            "time_lower_bound_s": number(
                "every kernel one after another; on several devices the larger of that and the "
                "collectives' bandwidth terms, which may overlap it [s]"
            ),
            "any_implementation_time_lower_bound_s": number(
                "no implementation, fused or overlapped, is faster [s]"
            ),
            "layer_ops": listing(LAYER_OP, "one layer's operators (layer 0)"),
            "ops": listing(STEP_OP, "the whole model's operators"),
        }
        | extra,
        "one phase",
    )


SOURCE = {"type": "object", "description": "where a figure comes from"}
