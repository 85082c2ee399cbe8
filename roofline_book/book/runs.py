"""Benchmark runs as a page shows them: summary, rooflines, datasheet, claims and every entry.

Every table is Markdown with Chinese headers and values written as a reader
reads them (SI prefixes, percentages, shapes as ``512x512x512``): nothing is
truncated and no raw float is printed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..measure import report, runfile
from ..measure.claims import entry_text
from ..tables import markdown_table as markdown_table_text
from ..units import si
from .claims import claims_table, summary_table

#: The environment variable naming the CPU run file the book's build measured.
CPU_RUN_ENV = "ROOFLINE_CPU_RUN"

#: Where ``make bench`` and the book's build write run files, below a checkout's root.
BENCH_FOLDER = Path("_build") / "bench"


def cpu_run(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The CPU run file a chapter reads, loaded and validated by ``runfile.read_run``.

    Looked for in this order: ``path``; the file ``$ROOFLINE_CPU_RUN`` names
    (the book's build sets it to the run it measured, ``_build/bench/cpu-quick.json``);
    else the newest CPU run (by the date it records) in ``_build/bench/`` of the
    working folder, of a folder above it, or of the checkout this package lies in.

    Parameters
    ----------
    path : str or os.PathLike, optional
        A run file to read instead of looking for one.

    Raises
    ------
    FileNotFoundError
        If no CPU run file is found; the message says how to measure one
        (``make bench``, or ``roofline-book bench --quick --out ...``).
    ValueError
        If the file found is not a valid run, or ``path`` is the run of a GPU.

    Examples
    --------
    >>> cpu_run("no/such/run.json")
    Traceback (most recent call last):
    ...
    FileNotFoundError: ...
    """
    if path is None and os.environ.get(CPU_RUN_ENV):
        path = os.environ[CPU_RUN_ENV]
    if path is not None:
        run = runfile.read_run(path)
        if run["device"]["type"] != "cpu":
            raise ValueError(f"{path}: a run of {run['device']['type']}, not of a CPU")
        return run
    here = Path.cwd().resolve()
    roots = [here, *here.parents, Path(__file__).resolve().parents[2]]
    folders = [root / BENCH_FOLDER for root in roots]
    for folder in dict.fromkeys(f for f in folders if f.is_dir()):
        runs = [runfile.read_run(f) for f in sorted(folder.glob("*.json"))]
        runs = [r for r in runs if r["device"]["type"] == "cpu"]
        if runs:
            return max(runs, key=lambda r: r["date"])
    raise FileNotFoundError(
        f"no CPU run file: ${CPU_RUN_ENV} is not set and no {BENCH_FOLDER}/ above "
        f"{here} holds one. Measure this machine first: `make bench` in the repository, "
        f"or `roofline-book bench --quick --out {BENCH_FOLDER / 'cpu-quick.json'}`"
    )


#: Headers of the per-entry table, in order.
RESULT_HEADERS = (
    "条目",
    "状态",
    "算术强度 [FLOP/B]",
    "中位时间",
    "IQR / 中位",
    "FLOP/s",
    "B/s",
    "占 roof",
)

#: Statuses and entry notes in Chinese.
_STATUS_ZH = {"ok": "已测", "skipped": "跳过", "failed": "失败"}
_NOTES_ZH = {"output allocated per call": "每次调用都分配输出"}


def _percent(value: float) -> str:
    return f"{100 * value:.3g}%"


def results_table(run: Mapping[str, Any]) -> Any:
    """Every entry of a run as a Chinese Markdown table: the entry as a reader writes it,
    status, intensity, median time and relative IQR, achieved rates from the model and the
    fraction of the measured roof at its intensity; a note column where any entry has one
    (why it was skipped, a setting it ran with), and the DRAM bytes ncu measured, if any.

    Returns
    -------
    IPython.display.Markdown
    """
    from IPython.display import Markdown

    frame = report.results_frame(run)
    by_id = {e["id"]: e for e in runfile.results(run, status=None)}
    headers = list(RESULT_HEADERS)
    notes = "note" in frame and any(frame["note"])
    ncu = "DRAM bytes (ncu)" in frame
    headers += ["备注"] * notes + ["DRAM 实测读写（ncu）"] * ncu
    rows = []
    for _, r in frame.iterrows():
        entry = by_id[r["id"]]
        row = [entry_text(r["id"]), _STATUS_ZH[r["status"]]]
        intensity = r["intensity [FLOP/B]"]
        row.append("—" if math.isnan(intensity) else f"{intensity:.3g}")
        if r["status"] == "ok":
            row += [
                si(r["median [s]"], "s"),
                _percent(r["IQR [s]"] / r["median [s]"]),
                si(r["achieved [FLOP/s]"], "FLOP/s"),
                si(r["achieved [B/s]"], "B/s"),
                _percent(r["fraction of measured roof"]),
            ]
        else:
            row += ["—"] * 5
        if notes:
            row.append(_NOTES_ZH.get(r["note"], r["note"]))
        if ncu:
            dram = entry.get("measured_dram_bytes")
            row.append(
                f"读 {si(dram['read'], 'B')}，写 {si(dram['written'], 'B')}" if dram else "—"
            )
        rows.append(row)
    return Markdown(markdown_table_text(headers, rows, right=set(range(2, 8))))


def against_table(run: Mapping[str, Any], sheet: Any) -> Any:
    """Measured ceilings beside the datasheet's dense figures, as a Chinese Markdown table."""
    from IPython.display import Markdown

    frame = report.against_datasheet(run, sheet)
    rows = []
    for _, r in frame.iterrows():
        name = str(r["ceiling"])
        name = (
            "内存带宽"
            if name == "memory bandwidth"
            else name.replace("peak ", "峰值 ").replace(" (dense)", "（dense）")
        )
        rows.append(
            [
                name,
                si(r["measured"], r["unit"]),
                si(r["datasheet"], r["unit"]),
                _percent(r["measured / datasheet"]),
            ]
        )
    return Markdown(
        markdown_table_text(
            ("上限", "实测", "datasheet", "实测 / datasheet"), rows, right={1, 2, 3}
        )
    )


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
        display(against_table(run, sheet))
    display(claims_table(run))
    display(results_table(run))
