"""benchmark 的 run file：一次 run 写出的 JSON、它的 schema，以及把它读回来。

run file 保存一次 benchmark run 在一块设备上测得的内容：设备、软件版本、日期、测得的上限，
以及每个算子的模型 FLOPs、字节数和实测时间（或跳过的原因）。本书和
:mod:`roofline_book.measure.claims` 读取它；其中没有任何手填的内容。

顶层键：``format``、``version``、``date`` （UTC，ISO 8601）、``host``、``suite``、``device``、
``software``、``ceilings`` 和 ``results`` （每个算子 case 一个条目）；操作系统报告时还有
``load_average`` （开始和结束时宿主机的负载），因为机器上的其他工作会拖慢 CPU run。
:data:`RUN_SCHEMA` 是 JSON Schema；:func:`read_run` 按它校验，再检查 schema 表达不了的内容
（id 唯一，上限指向一个测过的条目并与之相符）。

写入是原子的（先写同一目录下的临时文件，再 :func:`os.replace`），除非明确要求，绝不替换已有
的文件。

Examples
--------
>>> entry = {"model": {"flops": 2 * 10**9, "bytes_read": 8 * 10**6, "bytes_written": 4 * 10**6},
...          "time": {"median_s": 0.01, "iqr_s": 0.001, "reps": 20, "inner": 1}}
>>> rates(entry)                       # FLOP/s, byte/s
(200000000000.0, 1200000000.0)
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..dtypes import BYTES
from ..extras import MissingExtra, install_hint
from ..hardware import Hardware, adhoc
from ..ops import Cost
from .cases import BANDWIDTH_KINDS, REGISTRY
from .suites import SUITES

FORMAT = "roofline-book-run"
"""每个 run file 都带的 ``format`` 字段。"""

VERSION = 1
"""本包读写的 run file 格式版本。"""

OPERATORS = tuple(REGISTRY)
"""run 条目可带的算子名：所有登记过的算子。"""

STATUSES = ("ok", "skipped", "failed")
"""``ok``：已检查并计时；``skipped``：这里没有运行（不支持、内存不足），带原因；``failed``：结果
错误或 case 抛出异常，因此没有计时；原因写明是哪一种。
"""

_COUNT = {"type": "integer", "minimum": 0}
_SIZE = {"type": "integer", "minimum": 1}
_POSITIVE = {"type": "number", "exclusiveMinimum": 0}
_NON_NEGATIVE = {"type": "number", "minimum": 0}
_TEXT = {"type": "string", "minLength": 1}
_OPTIONAL_TEXT = {"type": ["string", "null"]}
_OPTIONAL_COUNT = {"type": ["integer", "null"], "minimum": 0}

RUN_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "roofline-book benchmark run",
    "type": "object",
    "required": [
        "format",
        "version",
        "date",
        "host",
        "suite",
        "device",
        "software",
        "ceilings",
        "results",
    ],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT},
        "version": {"const": VERSION},
        "date": {
            "type": "string",
            "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$",
            "description": "start of the run, UTC, ISO 8601",
        },
        "host": {"type": "string"},
        "suite": {"enum": list(SUITES)},
        "device": {
            "type": "object",
            "required": ["type", "name", "cache_bytes", "memory_bytes"],
            "additionalProperties": False,
            "properties": {
                "type": {"enum": ["cpu", "cuda"]},
                "name": _TEXT,
                "cache_bytes": {
                    **_OPTIONAL_COUNT,
                    "description": "last-level cache (CPU) or L2 (GPU), byte",
                },
                "caches": {
                    "type": "object",
                    "description": "CPU: data or unified cache per level (one core), byte",
                    "propertyNames": {"pattern": "^L[1-9]$"},
                    "additionalProperties": _SIZE,
                },
                "memory_bytes": {**_OPTIONAL_COUNT, "description": "main memory, byte"},
                "cpu_model": _OPTIONAL_TEXT,
                "threads": {"type": ["integer", "null"], "minimum": 1},
                "cpu_capability": _OPTIONAL_TEXT,
                "threads_policy": {
                    "enum": ["set", "all"],
                    "description": "CPU: threads set for the run, or torch's default (all)",
                },
                "sm_count": {"type": ["integer", "null"], "minimum": 1},
                "compute_capability": _OPTIONAL_TEXT,
            },
        },
        "software": {
            "type": "object",
            "required": ["python", "torch", "cuda", "driver"],
            "additionalProperties": False,
            "properties": {
                "python": _TEXT,
                "torch": _TEXT,
                "cuda": _OPTIONAL_TEXT,
                "driver": _OPTIONAL_TEXT,
                # the package version that wrote the run (runs before 0.1.0 lack it)
                "roofline_book": _TEXT,
            },
        },
        "ceilings": {
            "type": "object",
            "required": ["peak_flops", "bandwidth", "working_set_bytes"],
            "additionalProperties": False,
            "properties": {
                "peak_flops": {
                    "$ref": "#/$defs/per_precision",
                    "description": "the best peak-GEMM probe per precision (in a run from "
                    "before the probes, the best GEMM of the sweep), FLOP/s",
                },
                "bandwidth": {
                    "type": "object",
                    "description": "rates of the streaming kernels from the model's bytes, byte/s",
                    "additionalProperties": False,
                    "properties": {kind: {"$ref": "#/$defs/ceiling"} for kind in BANDWIDTH_KINDS},
                },
                "working_set_bytes": {
                    **_SIZE,
                    "description": "bytes the copy touches (source and destination)",
                },
                "vector_flops": {
                    "$ref": "#/$defs/per_precision",
                    "description": "CPU: an add within the L2 per precision, FLOP/s",
                },
                "cache_bandwidth": {
                    "type": "object",
                    "description": "CPU: per cache level (L2, L3), a copy that stays in it, byte/s",
                    "propertyNames": {"pattern": "^L[1-9]$"},
                    "additionalProperties": {
                        "type": "object",
                        "required": ["value", "entry", "working_set_bytes", "cache_bytes"],
                        "additionalProperties": False,
                        "properties": {
                            "value": _POSITIVE,
                            "entry": _TEXT,
                            "spread": _NON_NEGATIVE,
                            "working_set_bytes": _SIZE,
                            "cache_bytes": _SIZE,
                        },
                    },
                },
            },
        },
        "results": {"type": "array", "items": {"$ref": "#/$defs/entry"}},
        "load_average": {
            "type": "array",
            "items": _NON_NEGATIVE,
            "minItems": 2,
            "maxItems": 2,
            "description": "the host's 1-minute load average at the start and the end",
        },
        "stability": {
            "type": "object",
            "required": ["probe", "first_s", "last_s", "drift", "stable"],
            "additionalProperties": False,
            "description": "a sentinel probe timed between the cases, from the first to the last",
            "properties": {
                "probe": _TEXT,
                "first_s": _POSITIVE,
                "last_s": _POSITIVE,
                "drift": _POSITIVE,
                "checkpoints_s": {"type": "array", "items": _POSITIVE, "minItems": 2},
                "spread": _NON_NEGATIVE,
                "ceiling_drift": {
                    **_POSITIVE,
                    "description": "the peak and DRAM probes' last round (after the cases) over "
                    "their best earlier one, the farthest from 1",
                },
                "stable": {"type": "boolean"},
            },
        },
    },
    "$defs": {
        "per_precision": {
            "type": "object",
            "propertyNames": {"enum": list(BYTES)},
            "additionalProperties": {"$ref": "#/$defs/ceiling"},
        },
        "ceiling": {
            "type": "object",
            "required": ["value", "entry"],
            "additionalProperties": False,
            "properties": {
                "value": _POSITIVE,
                "entry": _TEXT,
                "spread": {**_NON_NEGATIVE, "description": "max / min - 1 of the rounds"},
            },
        },
        "model": {
            "type": "object",
            "required": ["flops", "bytes_read", "bytes_written", "kernels"],
            "additionalProperties": False,
            "properties": {
                "flops": _COUNT,
                "bytes_read": _COUNT,
                "bytes_written": _COUNT,
                "kernels": _COUNT,
                # which units and cache levels the model's work needs (optional:
                # run files written before the model kept them still load)
                "vector_flops": _COUNT,
                "special_flops": _COUNT,
                "vector_fma_flops": _COUNT,
                "reread_bytes": _COUNT,
                "reread_footprint": _COUNT,
            },
        },
        "entry": {
            "type": "object",
            "required": ["id", "name", "shape", "precision", "impl", "status", "model"],
            "additionalProperties": False,
            "properties": {
                "id": _TEXT,
                "name": {"enum": list(OPERATORS)},
                "shape": {"type": "object", "minProperties": 1, "additionalProperties": _SIZE},
                "precision": {"enum": list(BYTES)},
                "impl": _TEXT,
                "status": {"enum": list(STATUSES)},
                "reason": _TEXT,
                "note": _TEXT,
                "model": {"$ref": "#/$defs/model"},
                "implementation": {
                    "$ref": "#/$defs/model",
                    "description": "CPU: what the implementation runs, where it does more",
                },
                "write_allocate_bytes": {
                    **_COUNT,
                    "description": "CPU: line fills before stores to lines not in cache, byte",
                },
                "rounds_s": {
                    "type": "array",
                    "items": _POSITIVE,
                    "minItems": 2,
                    "description": "ceiling probes: the median of each round; time is the best",
                },
                "time": {
                    "type": "object",
                    "required": ["median_s", "iqr_s", "reps", "inner"],
                    "additionalProperties": False,
                    "properties": {
                        "median_s": _POSITIVE,
                        "iqr_s": _NON_NEGATIVE,
                        "reps": _SIZE,
                        "inner": _SIZE,
                        "samples_s": {
                            "type": "array",
                            "items": _NON_NEGATIVE,
                            "minItems": 1,
                            "description": "per-call time of each sample, second",
                        },
                    },
                },
                "check": {
                    "type": "object",
                    "required": ["reference", "max_abs_err", "rtol", "atol"],
                    "additionalProperties": False,
                    "properties": {
                        "reference": _TEXT,
                        "max_abs_err": _NON_NEGATIVE,
                        "rtol": _NON_NEGATIVE,
                        "atol": _NON_NEGATIVE,
                    },
                },
                "l2_flush": {"type": "boolean"},
                "measured_dram_bytes": {
                    "type": "object",
                    "required": ["read", "written", "kernels", "tool"],
                    "additionalProperties": False,
                    "properties": {
                        "read": _COUNT,
                        "written": _COUNT,
                        "kernels": _SIZE,
                        "tool": _TEXT,
                    },
                },
            },
            "allOf": [
                {
                    "if": {"properties": {"status": {"const": "ok"}}},
                    "then": {"required": ["time", "check"], "not": {"required": ["reason"]}},
                    "else": {
                        "required": ["reason"],
                        "not": {"anyOf": [{"required": ["time"]}, {"required": ["check"]}]},
                    },
                }
            ],
        },
    },
}
"""run file 的 JSON Schema（draft 2020-12）。"""

# A ceiling must equal the rate of the entry it names, to this relative tolerance
# (the two are written from the same float; the slack only absorbs decimal round trips).
_CEILING_RTOL = 1e-9


def _where(path: Any) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in path]
    return "run" + "".join(parts)


def validate_run(run: Mapping[str, Any], *, require_schema: bool = True) -> None:
    """按 :data:`RUN_SCHEMA` 校验一个 run，并检查其内部是否自洽。

    Parameters
    ----------
    run : Mapping
        解析后的 run file。
    require_schema : bool
        没有 ``jsonschema`` 包时，抛出 ImportError（True），或跳过 schema、
        只检查自洽性（False：做测量的机器不一定装了它，本书的构建环境装了）。

    Raises
    ------
    TypeError
        ``run`` 不是 mapping。
    ValueError
        写明第一个出错的字段，例如 ``run.results[3].time.median_s``。
    ImportError
        缺少 ``jsonschema`` 且 ``require_schema`` 为真。

    Examples
    --------
    >>> validate_run({"format": "roofline-book-run"})
    Traceback (most recent call last):
    ...
    ValueError: run: 'version' is a required property
    """
    if not isinstance(run, Mapping):
        raise TypeError(f"run must be a mapping (a parsed run file), got {type(run).__name__}")
    try:
        import jsonschema
    except ImportError:
        if require_schema:
            raise MissingExtra(
                f"validating a run file needs jsonschema: {install_hint('jsonschema')}"
            ) from None
    else:
        validator = jsonschema.Draft202012Validator(RUN_SCHEMA)
        error = jsonschema.exceptions.best_match(validator.iter_errors(run))
        if error is not None:
            raise ValueError(f"{_where(error.absolute_path)}: {error.message}")

    index: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(run["results"]):
        if entry["id"] in index:
            raise ValueError(f"run.results[{i}].id: {entry['id']!r} appears twice")
        index[entry["id"]] = entry
        samples = entry.get("time", {}).get("samples_s")
        if samples is not None and len(samples) != entry["time"]["reps"]:
            raise ValueError(
                f"run.results[{i}].time.samples_s: {len(samples)} samples, "
                f"but reps is {entry['time']['reps']}"
            )

    ceilings = run["ceilings"]
    named = [
        (ceilings["peak_flops"][key], f"peak_flops.{key}", 0) for key in ceilings["peak_flops"]
    ]
    named += [(ceilings["bandwidth"][key], f"bandwidth.{key}", 1) for key in ceilings["bandwidth"]]
    for key, ceiling in ceilings.get("vector_flops", {}).items():
        named.append((ceiling, f"vector_flops.{key}", 0))
    for level, ceiling in ceilings.get("cache_bandwidth", {}).items():
        named.append((ceiling, f"cache_bandwidth.{level}", 1))
    for ceiling, name, which in named:
        where = f"run.ceilings.{name}"
        entry = index.get(ceiling["entry"])
        if entry is None:
            raise ValueError(f"{where}.entry: no result has id {ceiling['entry']!r}")
        if entry["status"] != "ok":
            raise ValueError(f"{where}.entry: {ceiling['entry']!r} has status {entry['status']!r}")
        expected = rates(entry)[which]
        if not math.isclose(ceiling["value"], expected, rel_tol=_CEILING_RTOL):
            raise ValueError(
                f"{where}.value: {ceiling['value']!r} is not the rate of {ceiling['entry']!r} "
                f"({expected!r})"
            )


def read_run(path: str | os.PathLike[str], *, require_schema: bool = True) -> dict[str, Any]:
    """读取并校验一个 run file（``require_schema`` 见 :func:`validate_run`）。

    Raises
    ------
    FileNotFoundError
        文件不存在。
    ValueError
        文件不是 JSON，或不是合法的 run（错误信息写明文件和字段）。

    Examples
    --------
    >>> read_run("no/such/run.json")
    Traceback (most recent call last):
    ...
    FileNotFoundError: ...
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        run = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON: {exc}") from None
    try:
        validate_run(run, require_schema=require_schema)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    return run


def write_run(run: Mapping[str, Any], path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """校验 ``run``，并以原子方式写入 ``path``。

    JSON 先写进同一目录下的临时文件，再一步改名为 ``path``，所以读的一方
    永远看不到写了一半的文件。缺少的上级目录会被创建。

    Parameters
    ----------
    run : Mapping
        一个 run，即 :func:`roofline_book.measure.run.run_suite` 的返回值。
    path : str or os.PathLike
        写到哪里。
    force : bool
        覆盖已有的文件。不给它时绝不碰已有的文件：测得的数据不会被悄悄丢掉。

    Returns
    -------
    pathlib.Path
        写入的路径。

    Raises
    ------
    FileExistsError
        ``path`` 已存在且 ``force`` 为假。
    ValueError
        ``run`` 不是合法的 run（此时什么也不写）。装了 ``jsonschema`` 时检查
        schema，自洽性则总是检查。
    """
    validate_run(run, require_schema=False)
    if not isinstance(force, bool):
        raise TypeError(f"force must be True or False, got {force!r}")
    path = Path(path)
    if path.exists() and not force:
        raise FileExistsError(
            f"{path} already exists; a run file is not overwritten unless forced (--force)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(run, indent=1, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if force:
            os.replace(tmp, path)
        else:
            _publish_new(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _publish_new(tmp: str, path: Path) -> None:
    """``path`` 不存在时把 ``tmp`` 改名为 ``path``，操作系统支持时一步完成。"""
    try:
        # A hard link fails if the name was taken meanwhile, where os.replace would not.
        os.link(tmp, path)
    except FileExistsError:
        raise FileExistsError(
            f"{path} appeared while writing; a run file is not overwritten unless forced (--force)"
        ) from None
    except OSError:  # no hard links on this file system
        if path.exists():
            raise FileExistsError(f"{path} already exists") from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def model_cost(entry: Mapping[str, Any]) -> Cost:
    """条目所带的模型代价，写成 :class:`~roofline_book.ops.Cost`。

    Examples
    --------
    >>> model_cost({"model": {"flops": 1, "bytes_read": 8, "bytes_written": 4, "kernels": 1}}).bytes
    12
    """
    return Cost(**entry["model"])


def rates(entry: Mapping[str, Any]) -> tuple[float, float]:
    """按模型算出的计时条目的实测速率：(FLOP/s, byte/s)。

    FLOP/s 是模型 FLOPs 除以时间中位数；byte/s 是模型字节数（读与写之和）除以时间中位数。
    """
    model, seconds = entry["model"], entry["time"]["median_s"]
    return model["flops"] / seconds, (model["bytes_read"] + model["bytes_written"]) / seconds


def results(
    run: Mapping[str, Any], name: str | None = None, *, status: str | None = "ok"
) -> list[Mapping[str, Any]]:
    """一次 run 的条目，可以只取某个算子的、只取某种状态的。

    Parameters
    ----------
    name : str, optional
        :data:`OPERATORS` 之一；省略时取所有算子。
    status : str or None
        :data:`STATUSES` 之一（默认 ``"ok"``），None 表示所有状态。
    """
    if name is not None and name not in OPERATORS:
        raise ValueError(f"name must be one of {', '.join(OPERATORS)}; got {name!r}")
    if status is not None and status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)} or None; got {status!r}")
    return [
        e
        for e in run["results"]
        if (name is None or e["name"] == name) and (status is None or e["status"] == status)
    ]


def memory_roof(run: Mapping[str, Any]) -> float | None:
    """测得的内存带宽：各带宽上限中最高的一个（byte/s），没有时为 None。"""
    values = [c["value"] for c in run["ceilings"]["bandwidth"].values()]
    return max(values) if values else None


def as_hardware(run: Mapping[str, Any]) -> Hardware:
    """把 run 测得的各项上限变成一个 :class:`~roofline_book.device.Hardware`。

    每种精度的峰值 FLOP/s 取扫描中最快的 GEMM，带宽取 :func:`memory_roof`。
    凡是可以用 datasheet 设备的地方，都可以用它。

    Raises
    ------
    ValueError
        run 没有测出 GEMM 峰值或带宽。
    """
    peaks = {key: c["value"] for key, c in run["ceilings"]["peak_flops"].items()}
    bandwidth = memory_roof(run)
    if not peaks or bandwidth is None:
        raise ValueError("run: the ceilings lack a measured GEMM peak or a measured bandwidth")
    return adhoc(f"{run['device']['name']} (measured {run['date']})", peaks, bandwidth)
