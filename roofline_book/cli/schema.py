"""每个子命令 ``--json`` 输出的 JSON Schema（draft 2020-12），由子命令声明的结果记录生成。

词汇（键名里的单位、资源的标识、共用的设备对象与代价）与子命令怎样声明它的结果，见
:mod:`roofline_book.cli.results`。测试拿每个子命令的真实输出去校验 :data:`SCHEMAS`，命令行附录
把它们列成表（:func:`roofline_book.book.json_fields_md`）。

Examples
--------
>>> sorted(SCHEMAS)
['block', 'claims', 'collectives', 'devices', 'infer', 'op', 'plot', 'profile', 'serve', 'train']
>>> SCHEMAS["op"]["properties"]["time_lower_bound_s"]["description"]
'the largest of time_by_resource_s: the time lower bound [s]'
"""

from __future__ import annotations

from . import SUBCOMMANDS
from .results import command_schema

__all__ = ["SCHEMAS"]

SCHEMAS: dict[str, dict] = {
    module.__name__.rsplit(".", 1)[-1]: command_schema(module.RESULT)
    for module in SUBCOMMANDS
    if hasattr(module, "RESULT")
}
"""每个子命令 ``--json`` 的 JSON Schema，按 ``--help`` 列出子命令的顺序；键是子命令名。"""
