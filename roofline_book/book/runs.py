"""按页面的样子展示 benchmark run：摘要、roofline、datasheet、结论和每个条目。

每张表都是带中文表头的 Markdown，值按读者读的方式写出（SI 前缀、百分比、``512x512x512``
这样的 shape）：不截断，也不打印原始的 float。
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._base.validate import InvalidArgument
from ..measure.judge import report
from ..measure.runs import runfile
from ..measure.runs.records import Run
from ..present.tables import markdown_table as markdown_table_text
from ..units import si
from .claims import claims_table

#: 指明本书构建时测得的 CPU run file 的环境变量。
CPU_RUN_ENV = "ROOFLINE_CPU_RUN"

#: ``make bench`` 和本书构建写 run file 的位置，相对于 checkout 的根目录。
BENCH_FOLDER = Path("_build") / "bench"

#: 指明 GPU run file 所在文件夹的环境变量（本书构建时设为 checkout 的 ``docs/data``）。
GPU_RUNS_ENV = "ROOFLINE_GPU_RUNS"

#: 仓库里收存 GPU run file 的文件夹，相对于 checkout 的根目录。
GPU_FOLDER = Path("docs") / "data"


def cpu_run(path: str | os.PathLike[str] | None = None) -> Run:
    """一章读取的 CPU run file，由 :func:`~roofline_book.measure.runs.runfile.load_run` 校验并载入。

    按以下顺序查找：``path``；``$ROOFLINE_CPU_RUN`` 指定的文件（本书构建时把它设为测得的 run，
    ``_build/bench/cpu-quick.json``）；否则取工作目录、其上级目录或本包所在 checkout 中
    ``_build/bench/`` 下最新的 CPU run（按它记录的日期）。

    Parameters
    ----------
    path : str or os.PathLike, optional
        直接读这个 run file，不再查找。

    Raises
    ------
    FileNotFoundError
        找不到 CPU run file；错误信息说明怎样测一个（``make bench``，或
        ``roofline-book bench --quick --out ...``）。
    ValueError
        找到的文件不是合法的 run；``path`` 是 GPU 的 run 时为 InvalidArgument。

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
        run = runfile.load_run(path)
        if run.device.type != "cpu":
            raise InvalidArgument(
                "path", f"must be a CPU run; {path} is a run of {run.device.type}"
            )
        return run
    here = Path.cwd().resolve()
    roots = [here, *here.parents, Path(__file__).resolve().parents[2]]
    folders = [root / BENCH_FOLDER for root in roots]
    for folder in dict.fromkeys(f for f in folders if f.is_dir()):
        runs = [runfile.load_run(f) for f in sorted(folder.glob("*.json"))]
        runs = [r for r in runs if r.device.type == "cpu"]
        if runs:
            return max(runs, key=lambda r: r.date)
    raise FileNotFoundError(
        f"no CPU run file: ${CPU_RUN_ENV} is not set and no {BENCH_FOLDER}/ above "
        f"{here} holds one. Measure this machine first: `make bench` in the repository, "
        f"or `roofline-book bench --quick --out {BENCH_FOLDER / 'cpu-quick.json'}`"
    )


def gpu_runs(folder: str | os.PathLike[str] | None = None) -> list[Run]:
    """仓库收存的每份 GPU run file，按文件名排序，逐个由
    :func:`~roofline_book.measure.runs.runfile.load_run` 校验并载入。

    按以下顺序确定文件夹：``folder``；``$ROOFLINE_GPU_RUNS``（本书构建时设为 checkout 的
    ``docs/data``，与 kernel 的工作目录无关）；否则是本包所在 checkout 的 ``docs/data``。
    文件夹不存在或其中没有 ``*.json`` 时返回空列表。

    Parameters
    ----------
    folder : str or os.PathLike, optional
        直接读这个文件夹里的 ``*.json``。

    Raises
    ------
    ValueError
        某个文件不是合法的 run。

    Examples
    --------
    >>> gpu_runs("no/such/folder")
    []
    """
    if folder is None:
        folder = os.environ.get(GPU_RUNS_ENV) or Path(__file__).resolve().parents[2] / GPU_FOLDER
    return [runfile.load_run(f) for f in sorted(Path(folder).glob("*.json"))]


#: 逐条目表格的表头，按顺序。
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

#: 状态与条目备注的中文表述。
_STATUS_ZH = {"ok": "已测", "skipped": "跳过", "failed": "失败"}
_NOTES_ZH = {"output allocated per call": "每次调用都分配输出"}


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.3g}%"


def results_table(run: Run) -> Any:
    """把一次 run 的每个条目写成中文 Markdown 表格：读者写法的条目、状态、算术强度、时间中位数与
    相对 IQR、按模型算出的实测速率，以及达到其算术强度处实测 roof 的比例；有条目带备注时加一列
    备注（为什么跳过、运行时用了什么设置），ncu 测了 DRAM 字节数时也列出。

    Returns
    -------
    IPython.display.Markdown
    """
    from IPython.display import Markdown

    rows_in = report.results(run)
    notes = any(r.entry.reason or r.entry.note for r in rows_in)
    ncu = any(r.entry.measured_dram_bytes is not None for r in rows_in)
    headers = [*RESULT_HEADERS, *["备注"] * notes, *["DRAM 实测读写（ncu）"] * ncu]
    rows = []
    for r in rows_in:
        entry = r.entry
        row = [entry.text, _STATUS_ZH[entry.status]]
        row.append("—" if r.intensity is None else f"{r.intensity:.3g}")
        if entry.time is not None and r.flops_rate is not None and r.bytes_rate is not None:
            row += [
                si(entry.time.median_s, "s"),
                _percent(entry.time.iqr_fraction),
                si(r.flops_rate, "FLOP/s"),
                si(r.bytes_rate, "B/s"),
                _percent(r.fraction_of_roof),
            ]
        else:
            row += ["—"] * 5
        if notes:
            note = entry.reason or entry.note or ""
            row.append(_NOTES_ZH.get(note, note))
        if ncu:
            dram = entry.measured_dram_bytes
            row.append(f"读 {si(dram.read, 'B')}，写 {si(dram.written, 'B')}" if dram else "—")
        rows.append(row)
    return Markdown(markdown_table_text(headers, rows, right=set(range(2, 8))))


def against_table(run: Run, sheet: Any) -> Any:
    """测得的上限与 datasheet 的 dense 数字并列，写成中文 Markdown 表格。"""
    from IPython.display import Markdown

    rows = [
        [
            "内存带宽" if a.precision is None else f"峰值 {a.precision}（dense）",
            si(a.measured, a.unit),
            si(a.datasheet, a.unit),
            _percent(a.ratio),
        ]
        for a in report.against_datasheet(run, sheet)
    ]
    return Markdown(
        markdown_table_text(
            ("上限", "实测", "datasheet", "实测 / datasheet"), rows, right={1, 2, 3}
        )
    )


#: 测得的各类上限在摘要表中的行名，``{}`` 处是精度、流式 kernel 或 cache 层级。
MEASURED_ZH = {
    "peak": "实测峰值 {}",
    "bandwidth": "实测带宽（{}）",
    "cache bandwidth": "实测带宽（{} copy）",
    "vector": "实测 L2 内 add 速率 {}",
}


def summary_rows(run: Run) -> dict[str, str]:
    """一次 run 的设备、软件、日期、测得的上限与稳定性，行名用中文，值按读者读的方式写出。

    Examples
    --------
    >>> rows = summary_rows(runfile.load_run("tests/data/fixture-cpu-pass.json"))
    >>> rows["实测峰值 fp32"], rows["实测带宽（copy）"], rows["CUDA"]
    ('107.4 GFLOP/s', '21.47 GB/s', '—')
    """
    device, software = run.device, run.software
    rows = {
        "设备": device.name,
        "类型": device.type,
        "主机": run.host,
        "日期（UTC）": run.date,
        "测试集": run.suite,
        "torch": software.torch,
        "CUDA": software.cuda or "—",
        "驱动": software.driver or "—",
    }
    for m in report.measured_ceilings(run):
        rows[MEASURED_ZH[m.quantity].format(m.subject)] = si(m.value, m.unit)
    if device.threads:
        rows["线程数"] = str(device.threads)
    record = run.stability
    if record is not None and record.spread is not None:
        verdict = "稳定" if record.stable else "不稳定"
        count = len(record.checkpoints_s or ())
        rows["稳定性"] = f"{verdict}（哨兵 {count} 个检查点相差 {record.spread:.0%}）"
    return rows


def summary_table(run: Run) -> Any:
    """:func:`summary_rows` 写成一列的表（pandas DataFrame）。"""
    import pandas as pd

    return pd.Series(summary_rows(run), name="值").to_frame()


def show_run(run: Run) -> None:
    """在 notebook 中展示一次 run：摘要、实测 roofline（设备在目录中时与 datasheet 的对照）、
    结论清单和每个条目。
    """
    from IPython.display import Markdown, display
    from matplotlib import pyplot as plt

    display(Markdown(f"**{run.device.name}**，{run.date}，suite `{run.suite}`"))
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
    # a caption numbers the table, so the PDF's continued pages name it (表 B.1 – 接上页)
    caption = f"{run.device.name}：每个条目的计时，与它在自己的算术强度处达到的 roof 比例"
    display(Markdown(f"```{{table}} {caption}\n{results_table(run).data}\n```"))
