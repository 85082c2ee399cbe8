"""``roofline-book profile SCRIPT [ARGS...]``：一个 PyTorch 脚本的时间逐个 op 花在了哪里。"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from .._base.extras import require
from .._base.records import record_field
from ..devices.catalog import hardware
from ..roofline.bounds import CACHE_MARGIN, Ceilings
from ..units import si
from .common import UsageError, emit_result, output_file, parse_size, read_run_file
from .results import RESOURCES, Result, command_field

if TYPE_CHECKING:  # measure/ loads only when the command runs (profiling needs torch)
    from ..measure.profile.profiling import Attribution, OpRow
    from ..measure.runs.records import LevelInversion

_KINDS = "model composite unmodelled compiled range compile".split()


@dataclass(frozen=True, kw_only=True)
class InvertedLevel:
    """run file 中测得比外面一级还慢的层级，取外面那一级的 roof。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {
        "description": "a level the run file measured slower than a level further out"
    }

    level: str = record_field(description="a cache level, e.g. l3")
    bandwidth_Bps: float = record_field(minimum=0, unit="byte/s", description="its measured roof")
    outer: str = record_field(description="the faster level further out, e.g. dram")
    outer_bandwidth_Bps: float = record_field(
        minimum=0, unit="byte/s", description="that level's roof, which it is held to"
    )

    @classmethod
    def of(cls, s: LevelInversion) -> InvertedLevel:
        """run file 中的倒置 ``s``。"""
        return cls(level=s.level, bandwidth_Bps=s.bandwidth, outer=s.outer,
                   outer_bandwidth_Bps=s.outer_bandwidth)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ProfileRow:
    """一个 (op, shapes)：profiler 的数字与模型的数字（对各次调用求和）。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one (op, shapes) row"}

    id: str = record_field(description="the profiler's op name, e.g. aten::mm")
    shapes: tuple[tuple[int, ...], ...] = record_field(unit="1", description="input shapes")
    dtypes: tuple[str, ...] = record_field(description="input dtypes")
    calls: int = record_field(minimum=0, unit="1", description="calls")
    self_time_s: float = record_field(minimum=0, unit="s", description="self time over the calls")
    share: float = record_field(minimum=0, unit="1", description="share of the total self time")
    flops: int | None = record_field(
        nullable=True, minimum=0, unit="FLOP", description="model FLOPs over the calls"
    )
    bytes: int | None = record_field(
        nullable=True, minimum=0, unit="byte", description="model bytes over the calls"
    )
    intensity: float | None = record_field(nullable=True, minimum=0, unit="FLOP/byte")
    achieved_flops_per_s: float | None = record_field(
        nullable=True, minimum=0, unit="FLOP/s", description="flops / self_time_s"
    )
    achieved_Bps: float | None = record_field(
        nullable=True, minimum=0, unit="byte/s", description="bytes / self_time_s"
    )
    fraction_of_roof: float | None = record_field(
        nullable=True, minimum=0, unit="1", description="time lower bound / self time"
    )
    bound: str | None = record_field(
        nullable=True, enum=RESOURCES, description="the binding resource"
    )
    beats_bound: bool = record_field(
        description="faster than its lower bound: a defect of the model, the roof or the "
        "attribution, not a result"
    )
    profiler_flops: int | None = record_field(
        nullable=True, minimum=0, unit="FLOP", description="FLOPs the profiler counted"
    )
    kind: str = record_field(
        enum=_KINDS,
        description="model (a model of its own), composite (its work is in the modelled "
        "kernels below it), unmodelled, compiled (a torch.compile graph: Inductor's kernels, "
        "not modelled), range (a record_function range or an autograd node) or compile "
        "(torch.compile tracing on fake tensors)",
    )

    @classmethod
    def of(cls, r: OpRow) -> ProfileRow:
        """profile 的一行 ``r``；模型的 ``memory`` 是 run file 的主存 ``dram``。"""
        return cls(
            id=r.name,
            shapes=r.shapes,
            dtypes=r.dtypes,
            calls=r.calls,
            self_time_s=r.self_time_s,
            share=r.share,
            flops=r.flops,
            bytes=r.bytes,
            intensity=r.intensity,
            achieved_flops_per_s=r.achieved_flops,
            achieved_Bps=r.achieved_bytes,
            fraction_of_roof=r.fraction_of_roof,
            bound="dram" if r.bound == "memory" else r.bound,
            beats_bound=r.beats_bound,
            profiler_flops=r.profiler_flops,
            kind=r.kind,
        )


@dataclass(frozen=True, kw_only=True)
class RoofRate:
    """一种单元在一种精度下的速率上限。"""

    unit: str = record_field(description="the compute unit")
    precision: str | None = record_field(nullable=True, description="the precision")
    rate_per_s: float = record_field(
        minimum=0, unit="FLOP/s", description="its ceiling (evaluations/s for special)"
    )


@dataclass(frozen=True, kw_only=True)
class RoofLevel:
    """一个存储层级：带宽与容量。"""

    name: str = record_field(description="the level")
    bandwidth_Bps: float | None = record_field(
        nullable=True, minimum=0, unit="byte/s", description="null: no roof"
    )
    capacity_bytes: float | None = record_field(
        nullable=True, minimum=0, unit="byte", description="null: not known, or main memory"
    )


@dataclass(frozen=True, kw_only=True)
class Roof:
    """各行所对照的上限（:class:`~roofline_book.roofline.bounds.Ceilings`）。"""

    name: str = record_field(description="whose ceilings")
    rates: tuple[RoofRate, ...] = record_field(description="each unit's rate, per precision")
    levels: tuple[RoofLevel, ...] = record_field(description="memory levels, innermost first")

    @classmethod
    def of(cls, c: Ceilings) -> Roof:
        """上限 ``c``。"""
        return cls(
            name=c.name,
            rates=tuple(RoofRate(unit=u, precision=p, rate_per_s=v)
                        for (u, p), v in c.rates.items()),
            levels=tuple(
                RoofLevel(name=lv.name, bandwidth_Bps=lv.bandwidth, capacity_bytes=lv.capacity)
                for lv in c.levels
            ),
        )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ProfileResult(Result):
    """``profile --json``：一个 PyTorch 脚本的时间逐个 op 花在哪里。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {
        "description": "where a PyTorch script's time goes, op by op"
    }

    command: str = command_field("profile")
    script: str = record_field(description="the script profiled")
    args: tuple[str, ...] = record_field(description="the script's arguments")
    inverted_levels: tuple[InvertedLevel, ...] = record_field(
        description="the run file's inverted levels (--device-ceilings), each held to the roof "
        "of the level beyond it"
    )
    ops: tuple[ProfileRow, ...] = record_field(
        description="each (op, shapes), longest self time first"
    )
    total_self_time_s: float = record_field(minimum=0, unit="s")
    operator_self_time_s: float = record_field(
        minimum=0,
        unit="s",
        description="the operators' self time, compiled graphs in, ranges and tracing left out",
    )
    explained_share: float = record_field(
        minimum=0,
        unit="1",
        description="share of the operators' self time in modelled kernels and the composite "
        "ops above them",
    )
    modelled_share: float = record_field(
        minimum=0, unit="1", description="share of the operators' self time in modelled kernels"
    )
    compiled_self_time_s: float = record_field(
        minimum=0,
        unit="s",
        description="the compiled graphs' self time, in the operators' time, not modelled",
    )
    compile_self_time_s: float = record_field(
        minimum=0,
        unit="s",
        description="torch.compile's tracing on fake tensors, left out of the operators' time",
    )
    rows_beating_bound: int = record_field(
        minimum=0, unit="1", description="rows that ran faster than their lower bound"
    )
    clock: str = record_field(enum=["cpu", "device"], description="whose time: cpu or device")
    roof: Roof | None = record_field(
        nullable=True,
        description="the ceilings each row is held to (roofline_book.Ceilings), a catalog "
        "device's or a run file's",
    )

    @classmethod
    def of(
        cls, script: str, args: list[str], slow: tuple[Any, ...], a: Attribution
    ) -> ProfileResult:
        """脚本 ``script`` 以 ``args`` 运行的归因 ``a``；``slow``：run file 中倒置的层级。"""
        return cls(
            script=script,
            args=tuple(args),
            inverted_levels=tuple(InvertedLevel.of(s) for s in slow),
            ops=tuple(ProfileRow.of(r) for r in a.rows),
            total_self_time_s=a.total_time_s,
            operator_self_time_s=a.operator_time_s,
            explained_share=a.explained,
            modelled_share=a.modelled_share,
            compiled_self_time_s=a.compiled_time_s,
            compile_self_time_s=a.compile_time_s,
            rows_beating_bound=len(a.beaten()),
            clock=a.clock,
            roof=None if a.ceilings is None else Roof.of(a.ceilings),
        )


RESULT = ProfileResult


def _roof(args: argparse.Namespace) -> tuple[Any, tuple[Any, ...]]:
    """各行所对照的上限，以及 run file 中测得比外面一级还慢的层级（它们取外面那一级的 roof）。"""
    from ..measure.judge import ceilings

    if args.device_ceilings is not None and args.device is not None:
        raise UsageError("give either --device-ceilings RUN.json or --device NAME, not both")
    if args.device is not None:
        return Ceilings.of(hardware(args.device)), ()
    if args.device_ceilings is None:
        return None, ()
    run = read_run_file(args.device_ceilings, "--device-ceilings: the run file")
    try:
        return ceilings.of_run(run), ceilings.inversions(run)
    except ValueError as exc:
        raise UsageError(f"--device-ceilings: {exc}") from None


def _inverted(slow: tuple[Any, ...]) -> list[str]:
    """run file 中每个测得比外面一级还慢的层级一行。"""
    return [
        f"note: the run measured {s.level.upper()} at {si(s.bandwidth, 'B/s')}, slower than "
        f"{s.outer.upper()} at {si(s.outer_bandwidth, 'B/s')} (the machine was busy): data "
        f"held nearer is never read slower, so {s.level.upper()} is held to "
        f"{s.outer.upper()}'s roof"
        for s in slow
    ]


def run(args: argparse.Namespace) -> int:
    """``profile`` 子命令。

    脚本运行之前检查一切：torch 在不在，``--plot`` 要的 matplotlib 在不在，``--plot`` 的路径
    （相对于调用者的工作目录解析成绝对路径，脚本 ``chdir`` 也不会挪动它）能不能写。
    """
    require("torch", "profile")
    from ..measure.profile import profiling

    plot = None if args.plot is None else output_file(args.plot, "--plot")
    suffix = "" if plot is None else plot.suffix.lower().removeprefix(".")
    if plot is not None:
        require("matplotlib", "profile --plot")
    roof, slow = _roof(args)
    script_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    try:
        prof = profiling.profile_script(args.script, script_args)
    except profiling.ScriptError as exc:
        raise UsageError(str(exc)) from None
    attribution = profiling.attribute(prof, roof, region=args.region)
    if plot is not None:
        _plot(attribution, plot, suffix)
    if args.json:
        emit_result(ProfileResult.of(args.script, script_args, slow, attribution))
        return 0
    where = "no roof (give --device-ceilings or --device)" if roof is None else roof.name
    print(f"{args.script}: {si(attribution.total_time_s, 's')} of {attribution.clock} self time, "
          f"{len(attribution.rows)} (op, shapes) rows; roof: {where}")  # fmt: skip
    print(attribution.table(args.limit))
    left = len(attribution.rows) - args.limit
    if left > 0:
        print(f"... {left} more rows (--limit, or --json for all)")
    for line in _summary(attribution) + _inverted(slow) + _gpu_roof(args, attribution):
        print(line)
    if roof is not None:
        print("memory levels (a row is held to the smallest that holds "
              f"{CACHE_MARGIN}x its working set): " + _levels(roof))  # fmt: skip
    if plot is not None:
        print(f"wrote {plot}")
    return 0


def _summary(attribution: Any) -> list[str]:
    """表格下面的几行：解释了多少、编译出的图与编译的时间，以及比下界还快的行。"""
    compiled = attribution.compiled_time_s
    graphs = (
        f"; {si(compiled, 's')} of it in compiled graphs (Inductor's fused kernels, not modelled)"
        if compiled > 0
        else ""
    )
    lines = [
        f"explained by modelled ops: {attribution.explained:.1%} of the operators' self time "
        f"({attribution.modelled_share:.1%} in modelled kernels, the rest in composite ops "
        f"above them{graphs}); {si(attribution.range_time_s, 's')} outside any operator "
        "(record_function ranges, autograd nodes)"
    ]
    if attribution.compile_time_s > 0:
        lines.append(
            f"{si(attribution.compile_time_s, 's')} compiling: torch.compile's phases and its "
            "tracing on fake tensors (calls that did no work), left out of the operators' time"
        )
    beaten = attribution.beaten()
    if beaten:
        names = ", ".join(
            f"{r.name} {','.join('x'.join(map(str, s)) for s in r.shapes if s)} "
            f"({r.fraction_of_roof:.2f}x)"
            for r in beaten[:3]
        )
        more = f" and {len(beaten) - 3} more" if len(beaten) > 3 else ""
        lines.append(
            f"WARNING: {len(beaten)} row(s) ran faster than their lower bound: {names}{more}. "
            "A bound that a real kernel beats is a defect in the model, the roof or the "
            "attribution of time to calls, not a result: those rows show 'beats bound'"
        )
    return lines


def _gpu_roof(args: argparse.Namespace, attribution: Any) -> list[str]:
    """CPU 上的时间对照一个目录设备（都是 GPU）的 roof 时的提醒。"""
    if args.device is None or attribution.clock != "cpu":
        return []
    return [
        f"WARNING: the roof is {args.device}'s, a GPU's, but the times are CPU self times (no "
        "CUDA kernel was recorded): each 'of roof' says how far this CPU is from that GPU, "
        "not how well the ops use the hardware they ran on (--device-ceilings RUN.json holds "
        "them to this machine's measured roof)"
    ]


class _Once(argparse.Action):
    """一个只能给一次的选项：给两次时报错，而不是默默地取后一个。"""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        if option in getattr(namespace, "_given", ()):
            before = getattr(namespace, self.dest)
            parser.error(f"{option} given twice ({before!r} and {values!r}): give it once")
        namespace._given = (*getattr(namespace, "_given", ()), option)
        setattr(namespace, self.dest, values)


def _levels(ceilings: Any) -> str:
    """``l1 (48 KiB, no roof), l2 (1 MiB, 179 GB/s), ..., dram (69 GB/s)``."""
    out = []
    for lv in ceilings.levels:
        rate = "no roof" if lv.bandwidth is None else si(lv.bandwidth, "B/s")
        out.append(f"{lv.name} ({rate})" if lv.capacity is None or lv is ceilings.memory
                   else f"{lv.name} ({si(lv.capacity, 'B')}, {rate})")  # fmt: skip
    return ", ".join(out)


def _plot(attribution: Any, out: Path, suffix: str) -> None:
    from ..measure.profile import profiling

    matplotlib = require("matplotlib", "profile --plot")
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from ..present import plotting

    plotting.use_style()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    try:
        profiling.plot(ax, attribution)
        if attribution.ceilings is not None:
            ax.set_title(attribution.ceilings.name, fontsize=9)
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
        action=_Once,
        metavar="RUN.json",
        help="the measured ceilings of a run file (from 'roofline-book bench')",
    )
    group.add_argument(
        "--device", action=_Once, metavar="NAME", help="a catalog device (see 'devices')"
    )
    profile.add_argument(
        "--plot", action=_Once, metavar="FILE", help="also draw the ops on the roofline (.svg/.png)"
    )
    profile.add_argument(
        "--region",
        action=_Once,
        metavar="NAME",
        help="only the ops inside torch.profiler.record_function(NAME)",
    )
    profile.add_argument(
        "--limit",
        action=_Once,
        type=parse_size,
        default=25,
        metavar="N",
        help="rows in the table (default 25)",
    )
    profile.add_argument("script", metavar="SCRIPT", help="the Python script to run")
    script_args = profile.add_argument(
        "args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's arguments, if any"
    )
    # argparse makes every positional required, a REMAINDER too; a script may take no argv,
    # and "required: SCRIPT, ARGS" would say otherwise
    script_args.required = False
    profile.set_defaults(handler=run)
