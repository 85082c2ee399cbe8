"""书中各章调用的辅助函数，让隐藏的 cell 只需选择输入、粘贴结果。

这是包的最上层：它可以导入下面的一切（模型、展示层、:mod:`roofline_book.measure`），而没有
谁导入它。一章以这样一行开始::

    from roofline_book import book; glue, plt, plotting = book.preamble()

然后调用 :func:`glue` （一次粘贴多个值）、:func:`glue_figure` 和 :func:`markdown_table`。
"""

from .claims import claims_table, run_highlights, verdict_counts
from .cli import cli_error, cli_json, json_fields_md, run_cli
from .devices import (
    cache_frame,
    clock_frame,
    links_frame,
    peaks_frame,
    sources_frame,
    sparse_frame,
    special_frame,
)
from .notebook import glue, glue_figure, plain, preamble
from .profiling import attribution_frame, glue_profile, glue_scaling
from .rows import first_size, share
from .runs import cpu_run, gpu_runs, show_run, summary_table
from .tables import (
    RESOURCE_ZH,
    bound_frame,
    bound_zh,
    markdown_table,
    reader_si,
    resource_zh,
    roof_frame,
    short,
)

__all__ = [
    "RESOURCE_ZH",
    "attribution_frame",
    "bound_frame",
    "bound_zh",
    "cache_frame",
    "clock_frame",
    "claims_table",
    "cli_error",
    "cli_json",
    "json_fields_md",
    "cpu_run",
    "gpu_runs",
    "verdict_counts",
    "first_size",
    "glue",
    "glue_figure",
    "glue_profile",
    "glue_scaling",
    "links_frame",
    "markdown_table",
    "peaks_frame",
    "plain",
    "preamble",
    "reader_si",
    "resource_zh",
    "roof_frame",
    "run_highlights",
    "run_cli",
    "share",
    "short",
    "show_run",
    "sources_frame",
    "special_frame",
    "sparse_frame",
    "summary_table",
]
