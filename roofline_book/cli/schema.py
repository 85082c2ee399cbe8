"""``--json`` 的词汇：每个子命令输出的 JSON Schema，以及各子命令共用的几块对象。

所有输出用同一套键名，单位是基本单位，单位写在键名里：

- 秒以 ``_s`` 结尾（``time_lower_bound_s``、``self_time_s``）；
- 速率以 ``_per_s`` 结尾（FLOP/s、每秒 token 数、特殊函数每秒求值次数：``peaks_per_s``），
  带宽以 ``_Bps`` 结尾（byte/s：``bandwidths_Bps``）；
- 计数不带后缀（``flops``、``bytes``、``kernels``、``calls``），字节数的容量写成 ``_bytes``；
- 资源用同一组标识（:data:`RESOURCES`，即 :mod:`roofline_book.bounds` 的）：计算单元
  ``matrix``、``vector``、``special`` （只有一个峰值的设备是 ``compute``），存储层级 ``l1``、
  ``l2``、``l3``、``hbm``，run file 实测的主存是 ``dram``；
- 设备总是同一个对象（:data:`DEVICE`）；每个算子带一个稳定标识 ``id``，与显示用的 ``name`` 分开；
- 每个输出都有 ``roofline_book_version`` 与 ``command``。

:data:`SCHEMAS` 按子命令给出 schema（JSON Schema 2020-12），测试拿每个子命令的真实输出去校验它，
命令行附录把它们列成表。按这些 schema 写出 JSON 的函数在 :mod:`roofline_book.cli.jsonout` 中。

Examples
--------
>>> sorted(SCHEMAS)
['block', 'claims', 'collectives', 'devices', 'infer', 'op', 'plot', 'profile', 'train']
>>> SCHEMAS["op"]["properties"]["time_lower_bound_s"]["description"]
'the largest of time_by_resource_s: the time lower bound [s]'
"""

from __future__ import annotations

from typing import Any

from ..collectives import OPS as COLLECTIVE_OPS

__all__ = ["COST", "DEVICE", "SCHEMAS", "fields"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _num(description: str, *, nullable: bool = False, minimum: float | None = 0) -> dict:
    kind: Any = ["number", "null"] if nullable else "number"
    out: dict[str, Any] = {"type": kind, "description": description}
    if minimum is not None:
        out["minimum"] = minimum
    return out


def _int(description: str, *, nullable: bool = False) -> dict:
    return {"type": ["integer", "null"] if nullable else "integer", "minimum": 0,
            "description": description}  # fmt: skip


def _str(description: str, *, nullable: bool = False, enum: list | None = None) -> dict:
    out: dict[str, Any] = {"type": ["string", "null"] if nullable else "string",
                           "description": description}  # fmt: skip
    if enum is not None:
        out["enum"] = enum + ([None] if nullable else [])
    return out


def _obj(properties: dict[str, dict], description: str, *, optional: tuple[str, ...] = ()) -> dict:
    return {
        "type": "object",
        "description": description,
        "required": [k for k in properties if k not in optional],
        "additionalProperties": False,
        "properties": properties,
    }


def _map(values: dict, description: str) -> dict:
    return {"type": "object", "description": description, "additionalProperties": values}


def _list(items: dict, description: str) -> dict:
    return {"type": "array", "description": description, "items": items}


RESOURCES = ["matrix", "vector", "special", "compute", "memory", "l1", "l2", "l3", "llc", "hbm",
             "dram"]  # fmt: skip
"""资源的标识：计算单元、只有一个峰值的设备的 ``compute``、存储层级。"""

DEVICE = _obj(
    {
        "key": _str("catalog key, e.g. h100-sxm (an ad-hoc device's key is its name)"),
        "name": _str("the device's full name"),
        "adhoc": {"type": "boolean", "description": "built from --peak and --bandwidth"},
        "precision": _str("the precision whose compute ceilings apply, e.g. bf16"),
        "peaks_per_s": _obj(
            {
                "matrix": _num("matrix-unit dense peak [FLOP/s]"),
                "vector": _num("vector-unit peak [FLOP/s]; null if not published", nullable=True),
                "special": _num(
                    "special-function-unit rate [evaluations/s]; null if not published",
                    nullable=True,
                ),
            },
            "compute ceilings at this precision",
        ),
        "bandwidths_Bps": _obj(
            {
                "hbm": _num("device memory bandwidth [byte/s]"),
                "l2": _num("L2 bandwidth [byte/s]; null if not published", nullable=True),
            },
            "memory ceilings",
        ),
        "ridge_point": _num("matrix peak over HBM bandwidth [FLOP/byte]"),
    },
    "the device an answer was computed on (the same object in every output)",
)
"""设备对象：``op``、``block``、``infer``、``plot`` 与 ``profile --device`` 都输出它。"""

_PER_UNIT = _obj(
    {u: _int(f"FLOPs on the {u} units") for u in ("matrix", "vector", "special")},
    "FLOPs by compute unit [FLOP]",
)

COST = {
    "flops": _int("FLOPs [FLOP], exact: beyond 2**53 (huge shapes) read it as a big integer"),
    "flops_by_unit": _PER_UNIT,
    "bytes_read": _int("compulsory bytes read [byte]"),
    "bytes_written": _int("compulsory bytes written [byte]"),
    "bytes": _int("bytes_read + bytes_written [byte]"),
    "reread_bytes": _int("bytes read again, which a cache may serve [byte]"),
    "kernels": _int("kernel launches"),
    "intensity": _num("flops / bytes [FLOP/byte]"),
    "bound": _str("the resource that sets the time lower bound", enum=RESOURCES),
    "bound_kind": _str("whether that resource computes or moves data", enum=["compute", "memory"]),
    "attainable_per_s": _num(
        "rate of the unit doing most FLOPs, at the time lower bound "
        "[FLOP/s; evaluations/s for special]"
    ),  # fmt: skip
    "attainable_unit": _str("the unit attainable_per_s is for; null with no FLOPs", nullable=True),
    "attainable_by_unit_per_s": _map(_num("[FLOP/s; evaluations/s]"), "each unit's rate"),
    "time_by_resource_s": _map(_num("[s]"), "seconds each resource needs [s]"),
    "time_compute_s": _num("the largest time over compute units [s]"),
    "time_memory_s": _num("the largest time over memory levels [s]"),
    "time_lower_bound_s": _num("the largest of time_by_resource_s: the time lower bound [s]"),
}
"""一个代价在一块设备上的 roofline 结论：``op`` 的顶层、``block`` 和 ``infer`` 的每个算子、
``plot`` 的每个点都有这些键。"""

_VERSION = {
    "roofline_book_version": _str("version of the roofline-book package that wrote this"),
}


def _command(name: str, properties: dict[str, dict], description: str,
             optional: tuple[str, ...] = ()) -> dict:  # fmt: skip
    body = _obj(
        _VERSION | {"command": {"const": name, "description": "the subcommand"}} | properties,
        description,
        optional=optional,
    )
    return {"$schema": DIALECT, "title": f"roofline-book {name} --json"} | body


def _op_entry(extra: dict[str, dict]) -> dict:
    return _obj(
        {
            "id": _str("stable identifier of the operator (display names may change)"),
            "name": _str("display name"),
        }
        | extra
        | COST,
        "one operator",
    )


_BLOCK_OP = _op_entry({"share": _num("this operator's share of the summed time lower bounds")})
_STEP_OP = _op_entry(
    {
        "layers": _int("layers whose cost this entry sums; null outside the layers", nullable=True),
        "layer_kind": _str(
            "local or global, where the two kinds differ", nullable=True, enum=["local", "global"]
        ),  # fmt: skip
    }
)
_LAYER_OP = _op_entry({})


def _phase(extra: dict[str, dict]) -> dict:
    return _obj(
        {
            "time_lower_bound_s": _num(
                "every kernel one after another; on several devices the larger of that and the "
                "collectives' bandwidth terms, which may overlap it [s]"
            ),
            "any_implementation_time_lower_bound_s": _num(
                "no implementation, fused or overlapped, is faster [s]"
            ),
            "layer_ops": _list(_LAYER_OP, "one layer's operators (layer 0)"),
            "ops": _list(_STEP_OP, "the whole model's operators"),
        }
        | extra,
        "one phase",
    )


_SOURCE = {"type": "object", "description": "where a figure comes from"}

SCHEMAS: dict[str, dict] = {
    "op": _command(
        "op",
        {
            "operator": _str("the operator, as 'op OPERATOR' names it"),
            "arguments": {
                "type": "object",
                "description": "every argument the package function got, defaults included: "
                "calling it with them gives these figures",
            },
            "device": DEVICE,
        }
        | COST,
        "one operator on one device",
    ),
    "block": _command(
        "block",
        {
            "config": {"type": "object", "description": "the decoder block's shape"},
            "attention": _str("attention implementation"),
            "device": DEVICE,
            "ops": _list(_BLOCK_OP, "the block's forward operators, in order"),
            "optimizer": _obj(
                {"device": DEVICE, "ops": _list(_BLOCK_OP, "one AdamW step, each implementation")},
                "with --optimizer only",
            ),
        },
        "a decoder block's operators",
        optional=("optimizer",),
    ),
    "infer": _command(
        "infer",
        {
            "model": _str("catalog key of the model"),
            "parameters": _int("parameters"),
            "active_parameters": _int("parameters used per token"),
            "batch": _int("sequences"),
            "context": _int("tokens the decode step attends to"),
            "prompt": _int("prompt tokens prefilled"),
            "precisions": {"type": "object", "description": "weights, activations, KV cache"},
            "sliding_window": _int("window of the local layers [tokens]", nullable=True),
            "local_layers": _int("layers with a sliding window"),
            "kv_cache_bytes_per_token": _int("[byte]"),
            "kv_cache_bytes_per_sequence": _int("[byte]"),
            "kv_cache_bytes": _int("the whole batch's KV cache [byte]"),
            "weight_bytes": _int("[byte]"),
            "activation_peak_bytes": _int("estimated activation peak [byte]"),
            "max_batch": _int("largest batch that fits; null without a capacity", nullable=True),
            "decode_batch_to_ridge": _num("batch at which decode's MLP GEMM reaches the ridge"),
            "devices": _int("devices of the group, tp x pp (1 unsplit)"),
            "tp": _int("tensor-parallel devices"),
            "pp": _int("pipeline stages"),
            "ep": _int("expert-parallel devices (of the TP group)"),
            "weight_bytes_per_device": _int("weights on the device that holds most [byte]"),
            "kv_cache_bytes_per_sequence_per_device": _int(
                "one sequence's KV cache on one device [byte]"
            ),
            "communication_time_s": _num(
                "a decode step's collectives, whole model, their bandwidth terms (in the "
                "decode bound) [s]"
            ),
            "communication_latency_s": _num(
                "a decode step's collectives, their alpha terms (not in the bound) [s]"
            ),
            "prefill_communication_time_s": _num("the prefill's collectives, bandwidth terms [s]"),
            "interconnect": _obj(
                {
                    "link": _str("nvlink, infinity-fabric or pcie", nullable=True),
                    "link_bandwidth_Bps": _num(
                        "the device's links together, per direction [byte/s]", nullable=True
                    ),
                    "link_latency_s": _num("per collective step [s]", nullable=True),
                    "link_reduces": {
                        "type": "boolean",
                        "description": "the switch reduces in the network (NVLink SHARP)",
                    },
                },
                "the catalog's GPU-to-GPU link",
            ),
            "device": DEVICE,
            "prefill": _phase({}),
            "decode": _phase(
                {
                    "tokens_per_s": _num("batch / time_lower_bound_s: an upper bound [1/s]"),
                    "any_implementation_tokens_per_s": _num(
                        "batch / any_implementation_time_lower_bound_s [1/s]"
                    ),
                }
            ),
        },
        "a language model's prefill and decode step",
    ),
    "devices": _command(
        "devices",
        {
            "devices": _list(
                _obj(
                    {
                        "key": _str("catalog key"),
                        "name": _str("full name"),
                        "vendor": _str("vendor"),
                        "matrix_peaks_per_s": _map(
                            _num("[FLOP/s; OP/s for int8]"), "dense peak by precision"
                        ),
                        "sparse_matrix_peaks_per_s": _map(
                            _num("[FLOP/s]"), "2:4-sparse peak by precision (with --sparse)"
                        ),
                        "ridge_points": _map(_num("[FLOP/byte]"), "ridge point by precision"),
                        "bandwidths_Bps": DEVICE["properties"]["bandwidths_Bps"],
                        "memory_capacity_bytes": _int("[byte]", nullable=True),
                        "memory_capacity_basis": _str("how the capacity is counted", nullable=True),
                        "clock_hz": _num("[Hz]", nullable=True),
                        "l2_cache_bytes": _int("[byte]", nullable=True),
                        "shared_memory_per_sm_bytes": _int("[byte]", nullable=True),
                        "sms": _int("streaming multiprocessors (or compute units)", nullable=True),
                        "sources": _map(_SOURCE, "the source of each figure"),
                        "compared_sources": _map({"type": "array"}, "sources compared, not taken"),
                        "derivations": _map({"type": "string"}, "how derived figures follow"),
                        "firmness": _str("how firm the sources are"),
                        "ceilings": _list(
                            _obj(
                                {
                                    "resource": _str("unit or level", enum=RESOURCES),
                                    "precision": _str("precision", nullable=True),
                                    "value": _num("in unit"),
                                    "unit": _str("FLOP/s, exp/s or B/s"),
                                    "clock_hz": _num("[Hz]", nullable=True),
                                    "source": _SOURCE,
                                    "derivation": _str("how it follows", nullable=True),
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
    "plot": _command(
        "plot",
        {
            "out": _str("the file written (absolute path)"),
            "device": DEVICE,
            "points": _list(
                _obj(
                    {
                        "operator": _str("the operator"),
                        "label": _str("the point as typed, the legend's label"),
                        "arguments": {"type": "object", "description": "as in op"},
                    }
                    | COST,
                    "one point",
                ),
                "the points, in order",
            ),
        },
        "a roofline chart",
    ),
    "profile": _command(
        "profile",
        {
            "script": _str("the script profiled"),
            "args": _list({"type": "string"}, "the script's arguments"),
            "inverted_levels": _list(
                _obj(
                    {
                        "level": _str("a cache level, e.g. l3"),
                        "bandwidth_Bps": _num("its measured roof [byte/s]"),
                        "outer": _str("the faster level further out, e.g. dram"),
                        "outer_bandwidth_Bps": _num("that level's roof, which it is held to"),
                    },
                    "a level the run file measured slower than a level further out",
                ),
                "the run file's inverted levels (--device-ceilings), each held to the roof "
                "of the level beyond it",
            ),
            "ops": _list(
                _obj(
                    {
                        "id": _str("the profiler's op name, e.g. aten::mm"),
                        "shapes": _list({"type": "array"}, "input shapes"),
                        "dtypes": _list({"type": "string"}, "input dtypes"),
                        "calls": _int("calls"),
                        "self_time_s": _num("self time over the calls [s]"),
                        "share": _num("share of the total self time"),
                        "flops": _int("model FLOPs over the calls [FLOP]", nullable=True),
                        "bytes": _int("model bytes over the calls [byte]", nullable=True),
                        "intensity": _num("[FLOP/byte]", nullable=True),
                        "achieved_flops_per_s": _num("flops / self_time_s [FLOP/s]", nullable=True),
                        "achieved_Bps": _num("bytes / self_time_s [byte/s]", nullable=True),
                        "fraction_of_roof": _num("time lower bound / self time", nullable=True),
                        "bound": _str("the binding resource", nullable=True, enum=RESOURCES),
                        "beats_bound": {
                            "type": "boolean",
                            "description": "faster than its lower bound: a defect of the "
                            "model, the roof or the attribution, not a result",
                        },
                        "profiler_flops": _int("FLOPs the profiler counted [FLOP]", nullable=True),
                        "kind": _str(
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
            "total_self_time_s": _num("[s]"),
            "operator_self_time_s": _num(
                "the operators' self time, compiled graphs in, ranges and tracing left out [s]"
            ),
            "explained_share": _num(
                "share of the operators' self time in modelled kernels "
                "and the composite ops above them"
            ),  # fmt: skip
            "modelled_share": _num("share of the operators' self time in modelled kernels"),
            "compiled_self_time_s": _num(
                "the compiled graphs' self time, in the operators' time, not modelled [s]"
            ),
            "compile_self_time_s": _num(
                "torch.compile's tracing on fake tensors, left out of the operators' time [s]"
            ),
            "rows_beating_bound": _int("rows that ran faster than their lower bound"),
            "clock": _str("whose time: cpu or device", enum=["cpu", "device"]),
            "roof": {
                "type": ["object", "null"],
                "description": "the ceilings each row is held to (roofline_book.bounds.Ceilings): "
                "{name, rates: [{unit, precision, rate_per_s}], levels: [{name, bandwidth_Bps, "
                "capacity_bytes}]}, a catalog device's or a run file's",
                "required": ["name", "rates", "levels"],
            },
        },
        "where a PyTorch script's time goes, op by op",
    ),
    "claims": _command(
        "claims",
        {
            "run": _str("the run file judged"),
            "claims": _list(
                _obj(
                    {
                        "id": _str("stable identifier of the claim"),
                        "claim": _str("the claim"),
                        "verdict": _str("pass, fail, inconclusive or not measured"),
                        "rule": _str("how it is judged"),
                        "figures": _list(
                            _obj(
                                {
                                    "subject": {
                                        "type": "object",
                                        "description": "what the figure is of: {entry: ID} "
                                        "or {kind, name} (a precision, a probe, the run)",
                                    },
                                    "quantity": _str("a stable key of the quantity"),
                                    "label": _str("what the figure is, in English"),
                                    "value": _num("in unit", nullable=True, minimum=None),
                                    "unit": _str("FLOP/s, B/s, s, ...", nullable=True),
                                },
                                "one figure",
                            ),
                            "figures the verdict rests on",
                        ),
                        "missing": _str(
                            "what the run lacks (a key), if not measured", nullable=True
                        ),  # fmt: skip
                    },
                    "one claim",
                ),
                "the book's claims",
            ),
            "prediction": _obj(
                {
                    "median_error": _num("median |predicted - measured| / measured", nullable=True),
                    "entries": _int("entries compared"),
                    "excluded": _list(
                        _obj({"id": _str("entry"), "why": _str("reason")}, "one left out"),
                        "entries left out",
                    ),
                    "per_entry": _list(
                        _obj(
                            {
                                "id": _str("the run entry"),
                                "predicted_s": _num("[s]"),
                                "measured_s": _num("[s]"),
                                "time_lower_bound_s": _num("[s]", nullable=True),
                                "level": _str("the memory level the bound uses: l2, l3, dram, ..."),
                            },
                            "one entry",
                        ),
                        "each entry compared",
                    ),
                },
                "the roofline's prediction error",
            ),
            "stable": {"type": ["boolean", "null"], "description": "the stability sentinel held"},
            "tolerance": _num("the timing tolerance every comparison of this run uses"),
        },
        "the claims checklist of a run file",
    ),
    "train": _command(
        "train",
        {
            "model": _str("catalog key of the model"),
            "device": _str("catalog key of the device"),
            "gpus": _int("devices, dp x tp x pp"),
            "dp": _int("data-parallel replicas"),
            "tp": _int("tensor-parallel devices"),
            "pp": _int("pipeline stages"),
            "zero": _int("ZeRO stage (3 is FSDP)"),
            "reshard": {
                "type": "boolean",
                "description": "ZeRO-3 frees the gathered weights after each use",
            },
            "batch": _int("sequences per step, all devices"),
            "micro_batch": _int("sequences a replica runs at once"),
            "accumulation_steps": _int(
                "micro-steps per replica a step, batch / (dp x micro_batch)"
            ),
            "seq": _int("tokens per sequence"),
            "tokens": _int("tokens per step, all devices"),
            "recompute": {"type": "boolean", "description": "full activation recompute"},
            "activation_saving": _str(
                "what a layer saves for the backward", enum=["eager", "fused"]
            ),
            "activation_bytes_per_token_per_layer": _int(
                "saved by one layer, one token, tp 1 [byte]"
            ),
            "grad_dtype": _str(
                "precision gradients are kept and reduced in", enum=["bf16", "fp32"]
            ),
            "step_flops": _num("the step's FLOPs, recompute included [FLOP]"),
            "model_flops": _num("6N per token plus attention, no recompute [FLOP]"),
            "peak_flops_per_s": _num("the matrix peak MFU is taken against [FLOP/s]"),
            "compute_time_s": _num("one device's FLOPs at the matrix peak, with the bubble [s]"),
            "micro_backward_time_s": _num("one micro-batch's backward on one device [s]"),
            "pipeline_bubble": _num("(p - 1) / (m + p - 1)"),
            "communication_time_s": _num("every collective's bandwidth term, summed [s]"),
            "communication_latency_s": _num("every collective's alpha term, summed [s]"),
            "step_time_lower_bound_s": _num("all communication overlapped where it can [s]"),
            "step_time_exposed_tp_s": _num(
                "the TP all-reduces on the critical path, as Megatron runs them by default [s]"
            ),
            "mfu_upper_bound": _num("model FLOPs / (devices x peak x step_time_exposed_tp_s)"),
            "mfu_all_overlap_upper_bound": _num(
                "model FLOPs / (devices x peak x step_time_lower_bound_s)"
            ),
            "memory_bytes_per_device": _num("weights, gradients, optimizer, activations [byte]"),
            "memory_bytes_per_device_by_part": _map(_num("[byte]"), "memory by part"),
            "memory_capacity_bytes": _num("the device's memory [byte]", nullable=True),
            "fits": {"type": ["boolean", "null"], "description": "memory fits the capacity"},
            "communication": _list(
                _obj(
                    {
                        "what": _str("the collective's role"),
                        "op": _str("the collective", enum=list(COLLECTIVE_OPS)),
                        "count": _int("times per step"),
                        "when": _str(
                            "when in the step", enum=["micro-step", "last backward", "step"]
                        ),
                        "bytes": _num("each time, each device's buffer [byte]"),
                        "devices": _int("devices taking part"),
                        "link": _str("nvlink, pcie, a network key, ..."),
                        "transfer_time_s": _num("bandwidth term, all times [s]"),
                        "latency_time_s": _num("alpha term, all times [s]"),
                        "overlaps": {"type": "boolean", "description": "can overlap compute"},
                        "overlap_window_s": _num(
                            "the compute it can hide under; null: the whole step [s]", nullable=True
                        ),
                    },
                    "one collective of the step",
                ),
                "the step's communication",
            ),
        },
        "a training step over many devices",
    ),
    "collectives": _command(
        "collectives",
        {
            "torch_version": _str("torch that measured"),
            "backend": _str("torch.distributed backend", enum=["gloo", "nccl"]),
            "procs": _int("processes (ranks)"),
            "results": _list(
                _obj(
                    {
                        "op": _str("the collective", enum=list(COLLECTIVE_OPS)),
                        "bytes": _int("nccl-tests' size: each rank's (larger) buffer [byte]"),
                        "time_s": _num("median of the samples, each the slowest rank's [s]"),
                        "iqr_s": _num("interquartile range of the samples [s]"),
                        "reps": _int("samples"),
                        "algbw_Bps": _num(
                            "nccl-tests' algorithm bandwidth, bytes / time_s [byte/s]"
                        ),
                        "busbw_Bps": _num("nccl-tests' bus bandwidth, algbw x its factor [byte/s]"),
                    },
                    "one collective at one size",
                ),
                "every collective at every size",
            ),
            "fit": _map(
                _obj(
                    {
                        "alpha_s": _num("fixed time of one operation [s]"),
                        "beta_Bps": _num(
                            "fitted bandwidth; null if the time does not grow with size [byte/s]",
                            nullable=True,
                        ),
                    },
                    "time = alpha_s + bytes x f / beta_Bps, f the ring's share of bytes sent",
                ),
                "the alpha-beta fit of each collective",
            ),
        },
        "collectives timed with torch.distributed on this machine",
    ),
}
"""每个子命令 ``--json`` 的 JSON Schema。"""


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
    has_cost = collapse and all(properties.get(k) is v for k, v in COST.items())
    for key, sub in properties.items():
        if has_cost and key in COST:
            if key == next(iter(COST)):
                out.append((f"{prefix}(cost)", "cost", "the cost fields, as in op"))
            continue
        path = f"{prefix}{key}"
        if collapse and sub is DEVICE:
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
