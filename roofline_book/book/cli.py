"""按页面的样子展示命令行：运行 ``roofline-book``，打印或读取它的输出。"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any


def _run(args: tuple[str, ...], cwd: str | None, check: bool) -> subprocess.CompletedProcess:
    """在本进程中运行 ``roofline-book ARGS``：调用 console script 所调用的 ``main``，并捕获它的输出
    （一页要运行十几条命令；每条都启动一个新解释器，每条要多花一两秒）。
    """
    from ..cli import calculator

    before = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        done = calculator.run(list(args))
    finally:
        os.chdir(before)
    status = done["code"]
    completed = subprocess.CompletedProcess(
        ["roofline-book", *args], status, done["stdout"], done["stderr"]
    )
    if check and status:
        raise subprocess.CalledProcessError(
            status, completed.args, completed.stdout, completed.stderr
        )
    return completed


def run_cli(*args: str, cwd: str | None = None) -> str:
    """运行 ``roofline-book ARGS``；先打印命令，再打印它的输出。

    Parameters
    ----------
    *args : str
        参数，即在 ``roofline-book`` 之后键入的内容。
    cwd : str, optional
        命令的工作目录（``plot --out`` 写到这里）。

    Returns
    -------
    str
        命令打印到 stdout 的内容。

    Raises
    ------
    subprocess.CalledProcessError
        命令以非 0 状态退出。
    """
    done = _run(args, cwd, check=True)
    print("$ roofline-book", " ".join(args))
    print(done.stdout)
    return done.stdout


def cli_json(*args: str) -> Any:
    """加上 ``--json`` 运行同一条命令：读回它的输出（基本单位），什么也不打印。

    Examples
    --------
    >>> cli_json("op", "add", "--numel", "8", "--peak", "1T", "--bandwidth", "1T")["bytes"]
    48
    """
    return json.loads(_run((*args, "--json"), None, check=True).stdout)


def cli_error(*args: str) -> tuple[int, str]:
    """运行一条应当失败的命令；返回它的退出状态和写到 stderr 的内容。

    Examples
    --------
    >>> status, err = cli_error("op", "add", "--numel", "-1")
    >>> status, len(err.splitlines())
    (2, 1)
    """
    done = _run(args, None, check=False)
    return done.returncode, done.stderr


def json_fields(
    schema: dict, prefix: str = "", *, collapse: bool = True
) -> list[tuple[str, str, str]]:
    """``schema`` 的每个键，展开嵌套的对象与列表：``(路径, 类型, 说明)``。

    设备对象（:class:`~roofline_book.cli.results.Device`）写成一行 ``device``，代价的各键
    （:class:`~roofline_book.cli.results.CostOn`）合成一行 ``(cost)``：它们各自列一次
    （``collapse=False`` 时照样展开）。

    Examples
    --------
    >>> from roofline_book.cli.schema import SCHEMAS
    >>> [path for path, _, _ in json_fields(SCHEMAS["op"])]
    ['roofline_book_version', 'command', 'operator', 'arguments', 'device', '(cost)']
    >>> json_fields(SCHEMAS["block"])[-2]
    ('optimizer.ops[].(cost)', 'cost', 'the cost fields, as in op')
    """
    from .._base.records import json_schema
    from ..cli.results import CostOn, Device

    device, cost = json_schema(Device), json_schema(CostOn)["properties"]
    out = []
    properties = schema.get("properties", {})
    has_cost = collapse and all(properties.get(k) == v for k, v in cost.items())
    for key, sub in properties.items():
        if has_cost and key in cost:
            if key == next(iter(cost)):
                out.append((f"{prefix}(cost)", "cost", "the cost fields, as in op"))
            continue
        path = f"{prefix}{key}"
        if collapse and sub == device:
            out.append((path, "device", device["description"]))
            continue
        kind = sub.get("type", "const" if "const" in sub else "")
        kinds = kind if isinstance(kind, list) else [kind]
        out.append((path, " | ".join(kinds), sub.get("description", "")))
        if "object" in kinds:
            out += json_fields(sub, f"{path}.", collapse=collapse)
        elif "array" in kinds and "properties" in sub.get("items", {}):
            out += json_fields(sub["items"], f"{path}[].", collapse=collapse)
    return out


def json_fields_md(schema: dict | type, *, collapse: bool = True) -> Any:
    """``--json`` 的一份 schema （或一个记录类，取它的 schema）写成 Markdown 表格（供 ``glue``，
    同 :func:`markdown_table`）：每个键一行，写明类型和 schema 的说明。

    见 :func:`json_fields` （``collapse``：设备对象与代价的各键各写成一行）。

    Examples
    --------
    >>> from roofline_book.cli.schema import SCHEMAS
    >>> print(json_fields_md(SCHEMAS["op"]).data.splitlines()[2])
    | `roofline_book_version` | string | version of the roofline-book package that wrote this |
    """
    from .._base.records import json_schema
    from .tables import markdown_table

    if isinstance(schema, type):
        schema = json_schema(schema)
    rows = [
        {"键": f"`{path}`", "类型": kind.replace(" | ", " 或 "), "说明（schema 的原文）": text}
        for path, kind, text in json_fields(schema, collapse=collapse)
    ]
    return markdown_table(rows, align=["left", "left", "left"])
