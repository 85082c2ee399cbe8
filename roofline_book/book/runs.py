"""Benchmark runs as a page shows them: summary, rooflines, datasheet, claims and every entry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..measure import report
from .claims import claims_table, summary_table

RESULT_COLUMNS = (
    "id",
    "status",
    "intensity [FLOP/B]",
    "median [s]",
    "IQR [s]",
    "achieved [FLOP/s]",
    "achieved [B/s]",
    "fraction of measured roof",
    "note",
    "DRAM bytes (ncu)",
)
"""Columns of the per-entry table, in order; those a run lacks are left out."""

#: Headers of the measured-against-datasheet table in Chinese.
_AGAINST_ZH = {
    "ceiling": "上限",
    "measured": "实测",
    "datasheet": "datasheet",
    "unit": "单位",
    "measured / datasheet": "实测 / datasheet",
}


def show_run(run: Mapping[str, Any]) -> None:
    """Display one run in a notebook: its summary, its measured rooflines (against the
    datasheet's where the device is in the catalog), the claims checklist and every entry."""
    from IPython.display import Markdown, display
    from matplotlib import pyplot as plt

    display(Markdown(f"**{run['device']['name']}**，{run['date']}，suite `{run['suite']}`"))
    display(summary_table(run))
    sheet = report.datasheet_for(run)
    fig = report.plot_runs(run, report.measured_precisions(run), datasheet=sheet)
    display(fig)
    plt.close(fig)
    if sheet is None:
        display(Markdown("这台设备不在硬件参数表中，没有 datasheet roof 可比。"))
    else:
        display(report.against_datasheet(run, sheet).rename(columns=_AGAINST_ZH))
    display(claims_table(run))
    frame = report.results_frame(run)
    display(frame[[c for c in RESULT_COLUMNS if c in frame]])
