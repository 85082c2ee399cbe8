"""``roofline-book profile SCRIPT [ARGS...]``：一个 PyTorch 脚本的时间逐个 op 花在了哪里。"""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..extras import require
from ..hardware import hardware
from ..units import si
from .common import UsageError, emit


def _roof(args: argparse.Namespace) -> Any:
    from ..measure import profiling, runfile

    if args.device_ceilings is not None and args.device is not None:
        raise UsageError("give either --device-ceilings RUN.json or --device NAME, not both")
    if args.device is not None:
        return profiling.Roof.from_device(hardware(args.device))
    if args.device_ceilings is None:
        return None
    try:
        run = runfile.read_run(args.device_ceilings)
    except OSError as exc:
        raise UsageError(
            f"--device-ceilings: cannot read the run file {args.device_ceilings!r}: {exc.strerror}"
        ) from None
    return profiling.Roof.from_run(run)


def _writable(path: str, flag: str) -> str:
    """``path`` 的绝对路径（相对于现在的工作目录）；它写不了时给出一行错误。"""
    full = os.path.abspath(path)
    folder = os.path.dirname(full)
    if os.path.isdir(full):
        raise UsageError(f"{flag}: {path!r} is a folder, not a file")
    if not os.path.isdir(folder):
        raise UsageError(f"{flag}: the folder of {path!r} ({folder}) does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(full) and not os.access(full, os.W_OK)):
        raise UsageError(f"{flag}: cannot write {path!r}: permission denied")
    return full


def run(args: argparse.Namespace) -> int:
    """``profile`` 子命令。

    脚本运行之前检查一切：torch 在不在，``--plot`` 要的 matplotlib 在不在，``--plot`` 的路径
    （相对于调用者的工作目录解析成绝对路径，脚本 ``chdir`` 也不会挪动它）能不能写。
    """
    require("torch", "profile")
    from ..measure import profiling

    if args.limit < 1:
        raise UsageError(f"--limit must be a whole number >= 1, got {args.limit}")
    suffix = args.plot.rsplit(".", 1)[-1].lower() if args.plot and "." in args.plot else ""
    if args.plot and suffix not in ("svg", "png"):
        raise UsageError(f"--plot must end in .svg or .png, got {args.plot!r}")
    plot_path = None
    if args.plot:
        require("matplotlib", "profile --plot")
        plot_path = _writable(args.plot, "--plot")
    roof = _roof(args)
    script_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    try:
        prof = profiling.profile_script(args.script, script_args)
    except profiling.ScriptError as exc:
        raise UsageError(str(exc)) from None
    attribution = profiling.attribute(prof, roof, region=args.region)
    if plot_path is not None:
        _plot(attribution, plot_path, suffix)
    if args.json:
        emit(attribution.as_json() | {"script": args.script, "args": script_args})
        return 0
    where = "no roof (give --device-ceilings or --device)" if roof is None else roof.name
    print(f"{args.script}: {si(attribution.total_time_s, 's')} of {attribution.clock} self time, "
          f"{len(attribution.rows)} (op, shapes) rows; roof: {where}")  # fmt: skip
    print(attribution.table(args.limit))
    left = len(attribution.rows) - args.limit
    if left > 0:
        print(f"... {left} more rows (--limit, or --json for all)")
    outside = sum(r.self_time_s for r in attribution.rows if r.kind == "range")
    print(f"explained by modelled ops: {attribution.explained:.1%} of the operators' self time "
          f"({attribution.modelled_share:.1%} in modelled kernels, the rest in composite ops "
          f"above them); {si(outside, 's')} outside any operator "
          "(record_function ranges, autograd nodes)")  # fmt: skip
    if roof is not None and roof.device is None:
        print("roof: the run file measured no vector-unit ceiling; "
              "non-matrix FLOPs are held to the memory roof only")  # fmt: skip
        if roof.cache_roof is not None:
            print(f"memory roof: {si(roof.cache_roof, 'B/s')} ({roof.cache_level}, bound 'l2') "
                  "where a cache may hold the data, "
                  f"{si(roof.bandwidth or 0.0, 'B/s')} (DRAM, bound 'memory') "
                  "from a working set of "
                  f"{si(roof.streams_from or 0.0, 'B')}")  # fmt: skip
    if plot_path is not None:
        print(f"wrote {plot_path}")
    return 0


def _plot(attribution: Any, out: str, suffix: str) -> None:
    from ..measure import profiling

    matplotlib = require("matplotlib", "profile --plot")
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from .. import plotting

    plotting.use_style()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    try:
        profiling.plot(ax, attribution)
        if attribution.roof is not None:
            ax.set_title(attribution.roof.name, fontsize=9)
        fig.savefig(out, format=suffix, metadata={"Date": None} if suffix == "svg" else {})
    finally:
        plt.close(fig)


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """把 ``profile`` 加到 ``sub`` 中。"""
    profile = sub.add_parser(
        "profile",
        parents=[common],
        help="run a PyTorch script under the profiler; each op's FLOPs, bytes and roof",
        description=(
            "Run SCRIPT under torch.profiler (CPU, and CUDA when available) and attribute "
            "every recorded op to the package's models: calls, self time and share, FLOPs "
            "and bytes summed over the calls, intensity, achieved rate, fraction of the "
            "roof and the bound. SCRIPT runs as under 'python SCRIPT': its folder first on "
            "sys.path, the caller's working directory, and its stdout sent to stderr so that "
            "stdout holds only the report. Needs torch (the [bench] extra); --plot needs "
            "matplotlib (the [plot] extra). Options go before SCRIPT; what follows it is the "
            "script's own argv."
        ),
    )
    group = profile.add_argument_group("roof")
    group.add_argument(
        "--device-ceilings",
        metavar="RUN.json",
        help="the measured ceilings of a run file (from 'roofline-book bench')",
    )
    group.add_argument("--device", metavar="NAME", help="a catalog device (see 'devices')")
    profile.add_argument(
        "--plot", metavar="FILE", help="also draw the ops on the roofline (.svg/.png)"
    )
    profile.add_argument(
        "--region", metavar="NAME", help="only the ops inside torch.profiler.record_function(NAME)"
    )
    profile.add_argument("--limit", type=int, default=25, help="rows in the table (default 25)")
    profile.add_argument("script", metavar="SCRIPT", help="the Python script to run")
    profile.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                         help="the script's arguments")  # fmt: skip
    profile.set_defaults(handler=run)
