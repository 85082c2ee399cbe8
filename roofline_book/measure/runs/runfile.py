"""benchmark 的 run file：一次 run 写出的 JSON、它的 schema，以及把它读回来。

run file 保存一次 benchmark run 在一块设备上测得的内容（设备、软件、日期、测得的上限，每个算子
case 一个条目），其中没有任何手填的内容；它载入为 :class:`~roofline_book.measure.runs.records.Run`
（字段与一致性规则都在那里），本书和 :mod:`roofline_book.measure.judge` 读的就是它。
:data:`RUN_SCHEMA` 由这些记录类生成。

写入是原子的（先写同一目录下的临时文件，再 :func:`os.replace`），除非明确要求，绝不替换已有
的文件。
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..._base.extras import MissingExtra, install_hint
from ..._base.records import json_schema
from ..._base.validate import InvalidArgumentType
from ..bench.cases import REGISTRY
from .records import FORMAT as FORMAT
from .records import STATUSES as STATUSES
from .records import VERSION as VERSION
from .records import Run

OPERATORS = tuple(REGISTRY)
"""run 条目可带的算子名：所有登记过的算子。"""

RUN_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "roofline-book benchmark run",
} | json_schema(Run)
"""run file 的 JSON Schema（draft 2020-12），由 :class:`~roofline_book.measure.runs.records.Run`
的字段生成。"""


def _where(path: Any) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in path]
    return "run" + "".join(parts)


def validate_run(run: Mapping[str, Any], *, require_schema: bool = True) -> Run:
    """按 :data:`RUN_SCHEMA` 校验一个解析后的 run，并载入为
    :class:`~roofline_book.measure.runs.records.Run` （它检查 schema 表达不了的一致性）。

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
    try:
        return Run.from_mapping(run)
    except (KeyError, TypeError, AttributeError) as exc:  # malformed where no schema checked
        raise ValueError(f"run: not a run file ({type(exc).__name__}: {exc})") from None


def load_run(path: str | os.PathLike[str], *, require_schema: bool = True) -> Run:
    """读取并校验一个 run file（``require_schema`` 见 :func:`validate_run`），载入为
    :class:`~roofline_book.measure.runs.records.Run`。

    Raises
    ------
    FileNotFoundError
        文件不存在。
    ValueError
        文件不是 JSON，或不是合法的 run（错误信息写明文件和字段）。

    Examples
    --------
    >>> run = load_run("tests/data/fixture-cpu-pass.json")
    >>> run.device.type, len(run.results("gemm")) > 0
    ('cpu', True)
    >>> load_run("no/such/run.json")
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
        return validate_run(run, require_schema=require_schema)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None


def write_run(run: Run, path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """校验 ``run``，并以原子方式写入 ``path``。

    JSON 先写进同一目录下的临时文件，再一步改名为 ``path``，所以读的一方
    永远看不到写了一半的文件。缺少的上级目录会被创建。

    Parameters
    ----------
    run : roofline_book.measure.runs.records.Run
        一个 run，例如 :func:`roofline_book.measure.run.run_suite` 的返回值。
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
        ``run`` 不合 schema（装了 ``jsonschema`` 时检查；此时什么也不写）。
    """
    if not isinstance(run, Run):
        raise InvalidArgumentType("run", f"must be a Run, got {type(run).__name__}")
    data = run.as_mapping()
    validate_run(data, require_schema=False)
    if not isinstance(force, bool):
        raise InvalidArgumentType("force", f"must be True or False, got {force!r}")
    path = Path(path)
    if path.exists() and not force:
        raise FileExistsError(
            f"{path} already exists; a run file is not overwritten unless forced (--force)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, allow_nan=False) + "\n"
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
