"""Helpers the book's chapters call, so their hidden cells only choose inputs and glue results.

This is the top layer of the package: it may import everything below it
(the models, the presentation layer, :mod:`roofline_book.measure`) and
nothing imports it. A chapter starts with one line::

    from roofline_book import book; glue, plt, plotting = book.preamble()

and then calls :func:`glue` (many values at once), :func:`glue_figure` and
:func:`markdown_table`.
"""

from .claims import claims_table, run_highlights, summary_table, verdict_counts
from .cli import cli_error, cli_json, run_cli
from .devices import (
    cache_frame,
    clock_frame,
    peaks_frame,
    sources_frame,
    sparse_frame,
    special_frame,
)
from .notebook import glue, glue_figure, plain, preamble
from .profiling import attribution_frame, glue_profile, glue_scaling
from .rows import first_size, share
from .runs import cpu_run, show_run
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
    "cpu_run",
    "verdict_counts",
    "first_size",
    "glue",
    "glue_figure",
    "glue_profile",
    "glue_scaling",
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
