"""``--json`` 的词汇：每个子命令输出的 JSON Schema，以及各子命令共用的几块对象。

所有输出用同一套键名，单位是基本单位，单位写在键名里：

- 秒以 ``_s`` 结尾（``time_lower_bound_s``、``self_time_s``）；
- 速率以 ``_per_s`` 结尾（FLOP/s、每秒 token 数、特殊函数每秒求值次数：``peaks_per_s``），
  带宽以 ``_Bps`` 结尾（byte/s：``bandwidths_Bps``）；
- 计数不带后缀（``flops``、``bytes``、``kernels``、``calls``），字节数的容量写成 ``_bytes``；
- 资源用同一组标识（:data:`RESOURCES`，即 :mod:`roofline_book.roofline.bounds` 的）：计算单元
  ``matrix``、``vector``、``special`` （只有一个峰值的设备是 ``compute``），存储层级 ``l1``、
  ``l2``、``l3``、``hbm``，run file 实测的主存是 ``dram``；
- 设备总是同一个对象（:data:`DEVICE`）；每个算子带一个稳定标识 ``id``，与显示用的 ``name`` 分开；
- 每个输出都有 ``roofline_book_version`` 与 ``command``。

:data:`SCHEMAS` 按子命令给出 schema（JSON Schema 2020-12），测试拿每个子命令的真实输出去校验它，
命令行附录把它们列成表。声明了结果记录的子命令（:mod:`roofline_book.cli.results`）的 schema 由
记录生成。

Examples
--------
>>> sorted(SCHEMAS)
['block', 'claims', 'collectives', 'devices', 'infer', 'op', 'plot', 'profile', 'train']
>>> SCHEMAS["op"]["properties"]["time_lower_bound_s"]["description"]
'the largest of time_by_resource_s: the time lower bound [s]'
"""

from __future__ import annotations

from . import block, claims, collectives, devices, infer, op, plot, profile, train
from .results import command_schema
from .schemaparts import (
    BLOCK_OP,
    COST,
    DEVICE,
    RESOURCES,
    SOURCE,
    command,
    integer,
    listing,
    mapping,
    number,
    obj,
    string,
)

__all__ = ["COST", "DEVICE", "SCHEMAS", "fields"]


_HAND: dict[str, dict] = {
    "block": command(
        "block",
        {
            "config": {"type": "object", "description": "the decoder block's shape"},
            "attention": string("attention implementation"),
            "device": DEVICE,
            "ops": listing(BLOCK_OP, "the block's forward operators, in order"),
            "optimizer": obj(
                {"device": DEVICE, "ops": listing(BLOCK_OP, "one AdamW step, each implementation")},
                "with --optimizer only",
            ),
        },
        "a decoder block's operators",
        optional=("optimizer",),
    ),
    "devices": command(
        "devices",
        {
            "devices": listing(
                obj(
                    {
                        "key": string("catalog key"),
                        "name": string("full name"),
                        "vendor": string("vendor"),
                        "matrix_peaks_per_s": mapping(
                            number("[FLOP/s; OP/s for int8]"), "dense peak by precision"
                        ),
                        "sparse_matrix_peaks_per_s": mapping(
                            number("[FLOP/s]"), "2:4-sparse peak by precision (with --sparse)"
                        ),
                        "ridge_points": mapping(number("[FLOP/byte]"), "ridge point by precision"),
                        "bandwidths_Bps": DEVICE["properties"]["bandwidths_Bps"],
                        "memory_capacity_bytes": integer("[byte]", nullable=True),
                        "memory_capacity_basis": string(
                            "how the capacity is counted", nullable=True
                        ),
                        "clock_hz": number("[Hz]", nullable=True),
                        "l2_cache_bytes": integer("[byte]", nullable=True),
                        "shared_memory_per_sm_bytes": integer("[byte]", nullable=True),
                        "sms": integer(
                            "streaming multiprocessors (or compute units)", nullable=True
                        ),
                        "sources": mapping(SOURCE, "the source of each figure"),
                        "compared_sources": mapping(
                            {"type": "array"}, "sources compared, not taken"
                        ),
                        "derivations": mapping({"type": "string"}, "how derived figures follow"),
                        "firmness": string("how firm the sources are"),
                        "ceilings": listing(
                            obj(
                                {
                                    "resource": string("unit or level", enum=RESOURCES),
                                    "precision": string("precision", nullable=True),
                                    "value": number("in unit"),
                                    "unit": string("FLOP/s, exp/s or B/s"),
                                    "clock_hz": number("[Hz]", nullable=True),
                                    "source": SOURCE,
                                    "derivation": string("how it follows", nullable=True),
                                },
                                "one ceiling",
                            ),
                            "every ceiling, per unit and level",
                        ),
                    },
                    "one catalog device, every precision",
                    optional=("sparse_matrix_peaks_per_s",),
                ),
                "catalog devices",
            )
        },
        "the hardware catalog",
    ),
    "profile": command(
        "profile",
        {
            "script": string("the script profiled"),
            "args": listing({"type": "string"}, "the script's arguments"),
            "inverted_levels": listing(
                obj(
                    {
                        "level": string("a cache level, e.g. l3"),
                        "bandwidth_Bps": number("its measured roof [byte/s]"),
                        "outer": string("the faster level further out, e.g. dram"),
                        "outer_bandwidth_Bps": number("that level's roof, which it is held to"),
                    },
                    "a level the run file measured slower than a level further out",
                ),
                "the run file's inverted levels (--device-ceilings), each held to the roof "
                "of the level beyond it",
            ),
            "ops": listing(
                obj(
                    {
                        "id": string("the profiler's op name, e.g. aten::mm"),
                        "shapes": listing({"type": "array"}, "input shapes"),
                        "dtypes": listing({"type": "string"}, "input dtypes"),
                        "calls": integer("calls"),
                        "self_time_s": number("self time over the calls [s]"),
                        "share": number("share of the total self time"),
                        "flops": integer("model FLOPs over the calls [FLOP]", nullable=True),
                        "bytes": integer("model bytes over the calls [byte]", nullable=True),
                        "intensity": number("[FLOP/byte]", nullable=True),
                        "achieved_flops_per_s": number(
                            "flops / self_time_s [FLOP/s]", nullable=True
                        ),
                        "achieved_Bps": number("bytes / self_time_s [byte/s]", nullable=True),
                        "fraction_of_roof": number("time lower bound / self time", nullable=True),
                        "bound": string("the binding resource", nullable=True, enum=RESOURCES),
                        "beats_bound": {
                            "type": "boolean",
                            "description": "faster than its lower bound: a defect of the "
                            "model, the roof or the attribution, not a result",
                        },
                        "profiler_flops": integer(
                            "FLOPs the profiler counted [FLOP]", nullable=True
                        ),
                        "kind": string(
                            "model (a model of its own), composite (its work is in the "
                            "modelled kernels below it), unmodelled, compiled (a torch.compile "
                            "graph: Inductor's kernels, not modelled), range (a record_function "
                            "range or an autograd node) or compile (torch.compile tracing on "
                            "fake tensors)",
                            enum="model composite unmodelled compiled range compile".split(),
                        ),  # fmt: skip
                    },
                    "one (op, shapes) row",
                ),
                "each (op, shapes), longest self time first",
            ),
            "total_self_time_s": number("[s]"),
            "operator_self_time_s": number(
                "the operators' self time, compiled graphs in, ranges and tracing left out [s]"
            ),
            "explained_share": number(
                "share of the operators' self time in modelled kernels "
                "and the composite ops above them"
            ),  # fmt: skip
            "modelled_share": number("share of the operators' self time in modelled kernels"),
            "compiled_self_time_s": number(
                "the compiled graphs' self time, in the operators' time, not modelled [s]"
            ),
            "compile_self_time_s": number(
                "torch.compile's tracing on fake tensors, left out of the operators' time [s]"
            ),
            "rows_beating_bound": integer("rows that ran faster than their lower bound"),
            "clock": string("whose time: cpu or device", enum=["cpu", "device"]),
            "roof": {
                "type": ["object", "null"],
                "description": "the ceilings each row is held to (roofline_book.Ceilings): "
                "{name, rates: [{unit, precision, rate_per_s}], levels: [{name, bandwidth_Bps, "
                "capacity_bytes}]}, a catalog device's or a run file's",
                "required": ["name", "rates", "levels"],
            },
        },
        "where a PyTorch script's time goes, op by op",
    ),
    "claims": command(
        "claims",
        {
            "run": string("the run file judged"),
            "claims": listing(
                obj(
                    {
                        "id": string("stable identifier of the claim"),
                        "claim": string("the claim"),
                        "verdict": string("pass, fail, inconclusive or not measured"),
                        "rule": string("how it is judged"),
                        "figures": listing(
                            obj(
                                {
                                    "subject": {
                                        "type": "object",
                                        "description": "what the figure is of: {entry: ID} "
                                        "or {kind, name} (a precision, a probe, the run)",
                                    },
                                    "quantity": string("a stable key of the quantity"),
                                    "label": string("what the figure is, in English"),
                                    "value": number("in unit", nullable=True, minimum=None),
                                    "unit": string("FLOP/s, B/s, s, ...", nullable=True),
                                },
                                "one figure",
                            ),
                            "figures the verdict rests on",
                        ),
                        "missing": string(
                            "what the run lacks (a key), if not measured", nullable=True
                        ),  # fmt: skip
                    },
                    "one claim",
                ),
                "the book's claims",
            ),
            "prediction": obj(
                {
                    "median_error": number(
                        "median |predicted - measured| / measured", nullable=True
                    ),
                    "entries": integer("entries compared"),
                    "excluded": listing(
                        obj({"id": string("entry"), "why": string("reason")}, "one left out"),
                        "entries left out",
                    ),
                    "per_entry": listing(
                        obj(
                            {
                                "id": string("the run entry"),
                                "predicted_s": number("[s]"),
                                "measured_s": number("[s]"),
                                "time_lower_bound_s": number("[s]", nullable=True),
                                "level": string(
                                    "the memory level the bound uses: l2, l3, dram, ..."
                                ),
                            },
                            "one entry",
                        ),
                        "each entry compared",
                    ),
                },
                "the roofline's prediction error",
            ),
            "stable": {"type": ["boolean", "null"], "description": "the stability sentinel held"},
            "tolerance": number("the timing tolerance every comparison of this run uses"),
        },
        "the claims checklist of a run file",
    ),
}
"""尚未声明结果记录（``RESULT``）的子命令的 schema，手写。"""

_MODULES = {
    "op": op,
    "block": block,
    "infer": infer,
    "devices": devices,
    "plot": plot,
    "profile": profile,
    "claims": claims,
    "train": train,
    "collectives": collectives,
}

SCHEMAS: dict[str, dict] = {
    name: command_schema(module.RESULT) if hasattr(module, "RESULT") else _HAND[name]
    for name, module in _MODULES.items()
}
"""每个子命令 ``--json`` 的 JSON Schema：声明了结果记录的子命令由记录生成，其余手写。"""


def fields(schema: dict, prefix: str = "", *, collapse: bool = True) -> list[tuple[str, str, str]]:
    """``schema`` 的每个键，展开嵌套的对象与列表：``(路径, 类型, 说明)``。

    设备对象（:data:`DEVICE`）写成一行 ``device``，代价的各键（:data:`COST`）合成一行 ``cost``：
    它们各自列一次（``collapse=False`` 时照样展开）。

    Examples
    --------
    >>> [path for path, _, _ in fields(SCHEMAS["op"])]
    ['roofline_book_version', 'command', 'operator', 'arguments', 'device', '(cost)']
    >>> fields(SCHEMAS["block"])[-1]
    ('optimizer.ops[].(cost)', 'cost', 'the cost fields, as in op')
    """
    out = []
    properties = schema.get("properties", {})
    has_cost = collapse and all(properties.get(k) == v for k, v in COST.items())
    for key, sub in properties.items():
        if has_cost and key in COST:
            if key == next(iter(COST)):
                out.append((f"{prefix}(cost)", "cost", "the cost fields, as in op"))
            continue
        path = f"{prefix}{key}"
        if collapse and sub == DEVICE:
            out.append((path, "device", DEVICE["description"]))
            continue
        kind = sub.get("type", "const" if "const" in sub else "")
        kinds = kind if isinstance(kind, list) else [kind]
        out.append((path, " | ".join(kinds), sub.get("description", "")))
        if "object" in kinds:
            out += fields(sub, f"{path}.", collapse=collapse)
        elif "array" in kinds and "properties" in sub.get("items", {}):
            out += fields(sub["items"], f"{path}[].", collapse=collapse)
    return out
