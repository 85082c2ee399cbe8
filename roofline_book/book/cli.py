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


def json_fields_md(schema: dict, *, collapse: bool = True) -> Any:
    """``--json`` 的一份 schema 写成 Markdown 表格（供 ``glue``，同 :func:`markdown_table`）：每个键
    一行，写明类型和 schema 的说明。

    见 :func:`roofline_book.cli.schema.fields`（``collapse``：设备对象与代价的各键各写成一行）。

    Examples
    --------
    >>> from roofline_book.cli.schema import SCHEMAS
    >>> print(json_fields_md(SCHEMAS["op"]).data.splitlines()[2])
    | `roofline_book_version` | string | version of the roofline-book package that wrote this |
    """
    from ..cli.schema import fields
    from .tables import markdown_table

    rows = [
        {"键": f"`{path}`", "类型": kind.replace(" | ", " 或 "), "说明（schema 的原文）": text}
        for path, kind, text in fields(schema, collapse=collapse)
    ]
    return markdown_table(rows, align=["left", "left", "left"])
