"""``--json`` 的 schema 由这些小块拼成：数、整数、字符串、对象的写法，所有输出共用的设备对象
（:data:`DEVICE`）与代价（:data:`COST`），以及每个子命令都带的版本与命令名。

:mod:`roofline_book.cli.schema` 用它们写出每个子命令的 schema。
"""

from __future__ import annotations

from typing import Any

DIALECT = "https://json-schema.org/draft/2020-12/schema"


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


RESOURCES = ["matrix", "vector", "special", "compute", "memory", "l1", "l2", "l3", "llc", "hbm",
             "dram"]  # fmt: skip
"""资源的标识：计算单元、只有一个峰值的设备的 ``compute``、存储层级。"""

DEVICE = obj(
    {
        "key": string("catalog key, e.g. h100-sxm (an ad-hoc device's key is its name)"),
        "name": string("the device's full name"),
        "adhoc": {"type": "boolean", "description": "built from --peak and --bandwidth"},
        "precision": string("the precision whose compute ceilings apply, e.g. bf16"),
        "peaks_per_s": obj(
            {
                "matrix": number("matrix-unit dense peak [FLOP/s]"),
                "vector": number("vector-unit peak [FLOP/s]; null if not published", nullable=True),
                "special": number(
                    "special-function-unit rate [evaluations/s]; null if not published",
                    nullable=True,
                ),
            },
            "compute ceilings at this precision",
        ),
        "bandwidths_Bps": obj(
            {
                "hbm": number("device memory bandwidth [byte/s]"),
                "l2": number("L2 bandwidth [byte/s]; null if not published", nullable=True),
            },
            "memory ceilings",
        ),
        "ridge_point": number("matrix peak over HBM bandwidth [FLOP/byte]"),
    },
    "the device an answer was computed on (the same object in every output)",
)
"""设备对象：``op``、``block``、``infer``、``plot`` 与 ``profile --device`` 都输出它。"""

PER_UNIT = obj(
    {u: integer(f"FLOPs on the {u} units") for u in ("matrix", "vector", "special")},
    "FLOPs by compute unit [FLOP]",
)

COST = {
    "flops": integer("FLOPs [FLOP], exact: beyond 2**53 (huge shapes) read it as a big integer"),
    "flops_by_unit": PER_UNIT,
    "bytes_read": integer("compulsory bytes read [byte]"),
    "bytes_written": integer("compulsory bytes written [byte]"),
    "bytes": integer("bytes_read + bytes_written [byte]"),
    "reread_bytes": integer("bytes read again, which a cache may serve [byte]"),
    "kernels": integer("kernel launches"),
    "intensity": number("flops / bytes [FLOP/byte]"),
    "bound": string("the resource that sets the time lower bound", enum=RESOURCES),
    "bound_kind": string(
        "whether that resource computes or moves data", enum=["compute", "memory"]
    ),
    "attainable_per_s": number(
        "rate of the unit doing most FLOPs, at the time lower bound "
        "[FLOP/s; evaluations/s for special]"
    ),  # fmt: skip
    "attainable_unit": string(
        "the unit attainable_per_s is for; null with no FLOPs", nullable=True
    ),
    "attainable_by_unit_per_s": mapping(number("[FLOP/s; evaluations/s]"), "each unit's rate"),
    "time_by_resource_s": mapping(number("[s]"), "seconds each resource needs [s]"),
    "time_compute_s": number("the largest time over compute units [s]"),
    "time_memory_s": number("the largest time over memory levels [s]"),
    "time_lower_bound_s": number("the largest of time_by_resource_s: the time lower bound [s]"),
}
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


def op_entry(extra: dict[str, dict]) -> dict:
    return obj(
        {
            "id": string("stable identifier of the operator (display names may change)"),
            "name": string("display name"),
        }
        | extra
        | COST,
        "one operator",
    )


BLOCK_OP = op_entry({"share": number("this operator's share of the summed time lower bounds")})
STEP_OP = op_entry(
    {
        "layers": integer(
            "layers whose cost this entry sums; null outside the layers", nullable=True
        ),
        "layer_kind": string(
            "local or global, where the two kinds differ", nullable=True, enum=["local", "global"]
        ),  # fmt: skip
    }
)
LAYER_OP = op_entry({})


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
