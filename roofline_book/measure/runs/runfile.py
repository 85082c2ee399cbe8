"""benchmark 的 run file：一次 run 写出的 JSON、它的 schema，以及把它读回来。

run file 保存一次 benchmark run 在一块设备上测得的内容：设备、软件版本、日期、测得的上限，
以及每个算子的模型 FLOPs、字节数和实测时间（或跳过的原因）。本书和
:mod:`roofline_book.measure.judge.claims` 读取它；其中没有任何手填的内容。

顶层键：``format``、``version``、``date`` （UTC，ISO 8601）、``host``、``suite``、``device``、
``software``、``ceilings`` 和 ``results`` （每个算子 case 一个条目）；操作系统报告时还有
``load_average`` （开始和结束时宿主机的负载），因为机器上的其他工作会拖慢 CPU run。
:data:`RUN_SCHEMA` 是 JSON Schema，由 :mod:`roofline_book.measure.runs.records`
的记录类生成（字段即键，
约束在字段的 metadata 中）；:func:`read_run` 按它校验，再检查 schema 表达不了的内容（id 唯一且与
条目的字段一致，上限指向一个测过的条目并与之相符）。:func:`load_run` 再把它载入为
:class:`~roofline_book.measure.runs.records.Run`。

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

from ..._base.extras import MissingExtra, install_hint
from ..._base.records import json_schema
from ...ops import Cost
from ..bench.cases import REGISTRY
from .records import FORMAT as FORMAT
from .records import STATUSES as STATUSES
from .records import VERSION as VERSION
from .records import Run, as_run

OPERATORS = tuple(REGISTRY)
"""run 条目可带的算子名：所有登记过的算子。"""

RUN_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "roofline-book benchmark run",
} | json_schema(Run)
"""run file 的 JSON Schema（draft 2020-12），由 :class:`~roofline_book.measure.runs.records.Run`
的字段生成。"""

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
        sizes = ",".join(f"{k}={v}" for k, v in entry["shape"].items())
        composed = f"{entry['name']}/{entry['precision']}/{entry['impl']}/{sizes}"
        if entry["id"] != composed:
            raise ValueError(
                f"run.results[{i}].id: {entry['id']!r} is not name/precision/impl/shape "
                f"({composed!r})"
            )
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


def load_run(path: str | os.PathLike[str], *, require_schema: bool = True) -> Run:
    """读取并校验一个 run file，载入为 :class:`~roofline_book.measure.runs.records.Run`。

    与 :func:`read_run` 相同（同样的错误），只是返回类型化的记录。

    Examples
    --------
    >>> run = load_run("tests/data/fixture-cpu-pass.json")
    >>> run.device.type, len(run.results("gemm")) > 0
    ('cpu', True)
    """
    return Run.from_mapping(read_run(path, require_schema=require_schema))


def write_run(
    run: Run | Mapping[str, Any], path: str | os.PathLike[str], *, force: bool = False
) -> Path:
    """校验 ``run``，并以原子方式写入 ``path``。

    JSON 先写进同一目录下的临时文件，再一步改名为 ``path``，所以读的一方
    永远看不到写了一半的文件。缺少的上级目录会被创建。

    Parameters
    ----------
    run : roofline_book.measure.runs.records.Run or Mapping
        一个 run，即 :func:`roofline_book.measure.run.run_suite` 的返回值（或它的 mapping）。
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
    if isinstance(run, Run):
        run = run.as_mapping()
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
    """条目所带的模型代价，写成 :class:`~roofline_book.ops.Cost` （dict 形式的条目；类型化的
    条目直接读 ``Entry.cost``）。

    Examples
    --------
    >>> model_cost({"model": {"flops": 1, "bytes_read": 8, "bytes_written": 4, "kernels": 1}}).bytes
    12
    """
    return Cost(**entry["model"])


def rates(entry: Mapping[str, Any]) -> tuple[float, float]:
    """按模型算出的计时条目的实测速率：(FLOP/s, byte/s)。

    FLOP/s 是模型 FLOPs 除以时间中位数；byte/s 是模型字节数（读与写之和）除以时间中位数。
    dict 形式的条目用它；类型化的条目用 ``Entry.rates``。
    """
    model, seconds = entry["model"], entry["time"]["median_s"]
    return model["flops"] / seconds, (model["bytes_read"] + model["bytes_written"]) / seconds


def results(
    run: Mapping[str, Any], name: str | None = None, *, status: str | None = "ok"
) -> list[Mapping[str, Any]]:
    """一次 run 的条目，可以只取某个算子的、只取某种状态的（dict 形式的 run；类型化的 run 用
    ``Run.results``）。

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


def memory_roof(run: Run | Mapping[str, Any]) -> float | None:
    """测得的内存带宽：各带宽上限中最高的一个（byte/s），没有时为 None。"""
    return as_run(run).memory_roof
