"""``roofline-book serve``：一组 GPU 服务一串请求，按步调度，每一步取它那个 batch 的下界。

模拟在 :mod:`roofline_book.serving` 中；这里解析参数、调用它，把结果写成文本或
:class:`~roofline_book.cli.serve_result.ServeResult` （``--json``）。默认每一步取下界，所以延迟都是
下界、吞吐都是上界；``--efficiency`` 给出估计，下界印在它旁边。
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._base.validate import InvalidArgument
from ..distributed.split import Split
from ..serving.search import Load, Slo, compare, max_rate
from ..serving.search import run as run_at
from ..serving.simulate import SCHEDULERS, Deployment, simulate
from ..serving.simulate import ServeResult as Simulated
from ..serving.workload import Lengths, parse_rate, read_trace
from ..units import si
from .common import (
    UsageError,
    add_device_arguments,
    device_from_args,
    emit_result,
    model_arg,
    model_help,
    parse_size,
    text_table,
)
from .infer import add_precision_arguments, precisions_from_args
from .serve_result import RateEntry, ServeResult, ServeRun, Spread, serve_record

RESULT = ServeResult

#: ``--max-rate`` 的结果可信，需要请求总数至少是那时系统中平均请求数的这么多倍：模拟有一段填满的
#: 过程（约一个请求的停留时间），之后才是稳态。
STEADY = 3

_SCHEDULER_TEXT = {
    "static": "static batching",
    "continuous": "continuous batching, whole prompts",
    "chunked": "continuous batching, chunked prefill of {chunk} tokens a step",
    "disaggregated": "prefill/decode disaggregation, {prefill} prefill + {decode} decode replicas",
}


def _arrival_rate(text: str) -> float:
    """``--rate`` 的 parser：每秒请求数，或 ``inf``。"""
    try:
        return parse_rate(text)
    except InvalidArgument as exc:
        raise argparse.ArgumentTypeError(exc.detail) from None


def _efficiency(text: str | None, device: Any) -> tuple[tuple[float, float] | None, str | None]:
    if text is None:
        return None, None
    if text == "published":
        from ..measure.published.efficiency import serving_efficiency

        e = serving_efficiency(device)
        return (e.compute, e.memory), f"compute {e.compute_source}; memory {e.memory_source}"
    try:
        parts = [float(x) for x in text.split(",")]
    except ValueError:
        parts = []
    if len(parts) not in (1, 2) or not all(0 < x <= 1 for x in parts):
        raise UsageError(
            f"--efficiency {text!r}: give 'published', one share in (0, 1] for both, "
            "or COMPUTE,MEMORY"
        )
    c, m = (parts[0], parts[0]) if len(parts) == 1 else (parts[0], parts[1])
    return (c, m), "given"


def _deployment(args: argparse.Namespace) -> Deployment:
    config = model_arg(args.model)
    device = device_from_args(args)
    p, _ = precisions_from_args(args, config)
    return Deployment(
        config,
        device,
        Split(tp=args.tp, pp=args.pp, ep=args.ep),
        p,
        scheduler=args.scheduler,
        replicas=args.replicas,
        prefill=args.prefill,
        chunk=args.chunk,
        max_tokens=args.max_tokens,
        max_seqs=args.max_seqs,
        prefix_hit=args.prefix_hit,
    )


def run(args: argparse.Namespace) -> int:
    """``serve`` 子命令。"""
    d = _deployment(args)
    efficiency, source = _efficiency(args.efficiency, d.device)
    slo = Slo(args.slo_ttft, args.slo_tpot, args.slo_percentile)
    if args.trace is not None:
        if args.max_rate or args.compare:
            raise UsageError(
                "--trace replays its own arrivals: it takes no --max-rate or --compare"
            )
        try:
            requests = read_trace(Path(args.trace).read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"--trace {args.trace}: cannot read it ({exc.strerror})") from None
    elif args.rate is None and not (args.max_rate or args.compare):
        raise UsageError("give --rate R (requests a second, or inf), or --max-rate, or --compare")
    load = Load(
        args.requests,
        Lengths.parse("prompt", args.prompt),
        Lengths.parse("output", args.output),
        arrivals=args.arrivals,
        seed=args.seed,
    )
    if (args.max_rate or args.compare) and args.slo_ttft is None and args.slo_tpot is None:
        raise UsageError("--max-rate and --compare need --slo-ttft and/or --slo-tpot")
    estimate = replace(d, efficiency=efficiency) if efficiency else d
    main: Simulated | None = None
    bound: Simulated | None = None
    if args.trace is not None:
        main = simulate(estimate, requests)
        bound = simulate(d, requests) if efficiency else None
    elif args.rate is not None:
        main = run_at(estimate, load, args.rate)
        bound = run_at(d, load, args.rate) if efficiency else None
    best = max_rate(estimate, load, slo) if args.max_rate else None
    versus = compare(estimate, load, slo) if args.compare else None
    trace = args.trace is not None
    record = serve_record(
        d,
        load,
        slo,
        (efficiency, source),
        (main, bound),
        (best, versus),
        rate=args.rate,
        arrivals="trace" if trace else args.arrivals,
    )
    if args.json:
        emit_result(record)
    else:
        _text(record, d)
    return 0


def _ms(x: float) -> str:
    return si(x, "s")


def _run_rows(r: ServeRun, b: ServeRun | None) -> list[list[str]]:
    """延迟的三行；有下界时每格写 ``估计 (下界)``。"""
    label = "lower bound" if r.kind == "bound" else "estimate (bound)"
    rows = []
    for name, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("end to end", "e2e_s")):
        s: Spread | None = getattr(r, key)
        sb: Spread | None = None if b is None else getattr(b, key)
        if s is None:
            continue
        cells = [
            _ms(getattr(s, q)) + ("" if sb is None else f" ({_ms(getattr(sb, q))})")
            for q in ("p50", "p90", "p99")
        ]
        rows.append([f"{name}, {label}", *cells])
    return rows


def _text(r: ServeResult, d: Deployment) -> None:
    where = f"{r.devices} x {r.device}" if r.devices > 1 else r.device
    split = f"TP {r.tp}, PP {r.pp}, EP {r.ep}" if r.devices > r.replicas else "one device each"
    sched = _SCHEDULER_TEXT[r.scheduler].format(
        chunk=r.chunk, prefill=r.prefill_replicas, decode=r.replicas - r.prefill_replicas
    )
    if r.run is None:
        rate = "rate searched"
    else:
        rate = "all at once" if r.rate_per_s is None else f"{r.rate_per_s:g} a second"
    lines = [
        ("model", r.model),
        ("devices", f"{where}: {r.replicas} replica(s), {split}"),
        ("scheduler", sched),
        ("KV cache", f"{r.kv_cache_tokens:,} tokens a replica (vLLM's rule, 16-token blocks)"),
        (
            "requests",
            f"{r.requests:,}, {r.arrivals} arrivals, {rate}; prompt {r.prompt}, output {r.output}"
            + (f", prefix cache hit {r.prefix_hit:.0%}" if r.prefix_hit else ""),
        ),
    ]
    if r.kind == "bound":
        lines.append(
            (
                "steps",
                "each at the lower bound of its batch (max of FLOPs / peak, bytes / bandwidth, "
                "and the collectives' bandwidth terms): latencies are lower bounds, "
                "throughputs upper bounds, for this scheduler (a slower engine can form other "
                "batches, and a percentile can then come out a few per cent lower)",
            )
        )
    else:
        lines.append(
            (
                "steps",
                f"estimates: compute at {r.efficiency_compute:.0%} and memory at "
                f"{r.efficiency_memory:.0%} of their bounds ({r.efficiency_source}); "
                "the bounds in parentheses",
            )
        )
    print(text_table(None, [list(x) for x in lines]))
    shown = r.run
    if shown is not None:
        print()
        print(text_table(["", "p50", "p90", "p99"], _run_rows(shown, r.bound), right={1, 2, 3}))
        print()
        print(text_table(None, _figures(shown, r.bound, r)))
    if r.max_rate is not None:
        print()
        print(text_table(None, _rate_lines("highest rate meeting the SLOs", r.max_rate, r)))
    for e in r.compare:
        print()
        name = (
            "aggregated"
            if e.scheduler != "disaggregated"
            else f"disaggregated ({e.prefill_replicas} prefill, "
            f"{r.replicas - e.prefill_replicas} decode)"
        )
        print(text_table(None, _rate_lines(f"{name}: highest rate", e, r)))


def _slo_text(r: ServeResult) -> str:
    parts = []
    if r.slo_ttft_s is not None:
        parts.append(f"TTFT <= {_ms(r.slo_ttft_s)}")
    if r.slo_tpot_s is not None:
        parts.append(f"TPOT <= {_ms(r.slo_tpot_s)}")
    return " and ".join(parts) + f" for {r.slo_percentile:g}% of requests"


def _figures(s: ServeRun, b: ServeRun | None, r: ServeResult) -> list[list[str]]:
    upper = "upper bound" if s.kind == "bound" else "estimate"

    def both(x: float, y: float | None, unit: str) -> str:
        text = f"{x:,.2f} {unit}"
        return text if y is None else f"{text} (bound {y:,.2f})"

    rows = [
        [
            f"throughput, {upper}",
            both(s.requests_per_s, None if b is None else b.requests_per_s, "requests/s"),
        ],
        [
            f"output tokens, {upper}",
            both(s.output_tokens_per_s, None if b is None else b.output_tokens_per_s, "tokens/s"),
        ],
    ]
    if s.goodput_per_s is not None:
        rows.append(
            [
                f"goodput, {upper}",
                f"{s.goodput_per_s:,.2f} requests/s meet {_slo_text(r).rsplit(' for ', 1)[0]} "
                f"({s.slo_attainment:.0%} of requests); "
                + ("the SLOs are met" if s.slo_met else "the SLOs are not met"),
            ]
        )
    rows += [
        ["mean batch", f"{s.mean_batch:,.1f} sequences a step"],
        ["memory-bound steps", f"{s.memory_bound_share:.0%} of {s.steps:,}"],
        ["preemptions", f"{s.preemptions:,}"],
    ]
    return rows


def _rate_lines(title: str, e: RateEntry, r: ServeResult) -> list[list[str]]:
    upper = "upper bound" if r.kind == "bound" else "estimate"
    rows = [[f"{title}, {upper}", f"{e.max_rate_per_s:,.2f} requests/s ({_slo_text(r)})"]]
    if e.at_max_rate is not None:
        a = e.at_max_rate
        tpot = "-" if a.tpot_s is None else _ms(a.tpot_s.p90)
        rows.append(
            [
                "  at that rate",
                f"TTFT p90 {_ms(a.ttft_s.p90)}, TPOT p90 {tpot}, "
                f"{a.output_tokens_per_s:,.0f} output tokens/s",
            ]
        )
    rows.append(
        [
            "  all at once",
            f"{e.saturation_requests_per_s:,.2f} requests/s over the whole run",
        ]
    )
    found = e.at_max_rate
    if found is not None and STEADY * found.mean_in_system > r.requests:
        # Little's law: the run holds mean_in_system requests at once, and filling up takes about
        # one time in system; with too few in all, it ends before a queue above the capacity
        # could break the SLOs
        rows.append(
            [
                "  caution",
                f"{r.requests:,} requests are too few to reach a steady state at this rate "
                f"({found.mean_in_system:,.0f} in the system at once): give --requests "
                f"{STEADY * math.ceil(found.mean_in_system):,} or more",
            ]
        )
    return rows


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """把 ``serve`` 加到 ``sub`` 中。"""
    serve = sub.add_parser(
        "serve",
        parents=[common],
        help="a stream of requests served step by step: TTFT, TPOT, throughput, goodput",
        description=(
            "Simulate serving: requests arrive, an iteration-level scheduler batches them, and "
            "each step takes the lower bound of the batch it runs (its decodes at their own "
            "contexts, plus any prefill chunks). Latencies printed are lower bounds and "
            "throughputs upper bounds; --efficiency prints estimates beside them."
        ),
    )
    serve.add_argument("--model", required=True, metavar="NAME|PATH", help=model_help())
    load = serve.add_argument_group("requests")
    load.add_argument(
        "--rate",
        type=_arrival_rate,
        metavar="R",
        help="arrivals a second, or inf (all at once)",
    )
    load.add_argument(
        "--prompt",
        default="1000",
        metavar="N|DIST",
        help="prompt tokens: N, uniform:LO:HI, exponential:MEAN or normal:MEAN:STD (1000)",
    )
    load.add_argument(
        "--output", default="200", metavar="N|DIST", help="output tokens, as --prompt (200)"
    )
    load.add_argument(
        "--requests", type=parse_size, default=1000, metavar="N", help="requests (1000)"
    )
    load.add_argument(
        "--arrivals",
        choices=("poisson", "constant"),
        default="poisson",
        help="arrival process (poisson)",
    )
    load.add_argument(
        "--trace",
        metavar="CSV",
        help="replay a trace: CSV with columns arrival_s, prompt_tokens, output_tokens",
    )
    load.add_argument("--seed", type=int, default=0, help="random seed (0)")
    sched = serve.add_argument_group("scheduler")
    sched.add_argument("--scheduler", choices=SCHEDULERS, default="chunked", help="(chunked)")
    sched.add_argument(
        "--chunk",
        type=parse_size,
        default=2048,
        metavar="N",
        help="chunked prefill's token budget a step (2048)",
    )
    sched.add_argument(
        "--max-tokens",
        type=parse_size,
        default=8192,
        metavar="N",
        help="tokens a step of whole prompts, at least one prompt (8192)",
    )
    sched.add_argument(
        "--max-seqs",
        type=parse_size,
        metavar="N",
        help="requests an engine runs at once (no limit)",
    )
    sched.add_argument(
        "--prefix-hit",
        type=float,
        default=0.0,
        metavar="F",
        help="share of each prompt already in the prefix cache (0)",
    )
    sched.add_argument(
        "--replicas", type=parse_size, default=1, metavar="N", help="model replicas (1)"
    )
    sched.add_argument(
        "--prefill",
        type=parse_size,
        metavar="N",
        help="replicas that only prefill, with --scheduler disaggregated (half)",
    )
    slo = serve.add_argument_group("service-level objectives")
    slo.add_argument("--slo-ttft", type=float, metavar="S", help="TTFT limit, seconds")
    slo.add_argument("--slo-tpot", type=float, metavar="S", help="TPOT limit, seconds")
    slo.add_argument(
        "--slo-percentile",
        type=float,
        default=90.0,
        metavar="Q",
        help="share of requests, in percent, that must meet both limits (90)",
    )
    slo.add_argument(
        "--max-rate", action="store_true", help="search the highest rate meeting the SLOs"
    )
    slo.add_argument(
        "--compare",
        action="store_true",
        help="aggregated and disaggregated deployments of the same --replicas, side by side",
    )
    serve.add_argument(
        "--efficiency",
        nargs="?",
        const="published",
        metavar="F|C,M",
        help=(
            "print estimates beside the bounds: alone, the published efficiencies of the "
            "device (MAMF's GEMM, gpt-fast's decode scaled by STREAM); or one share, or "
            "COMPUTE,MEMORY shares"
        ),
    )
    add_precision_arguments(serve)
    split = serve.add_argument_group("split over devices (each replica)")
    split.add_argument("--tp", type=parse_size, default=1, metavar="N", help="tensor parallel (1)")
    split.add_argument("--pp", type=parse_size, default=1, metavar="N", help="pipeline stages (1)")
    split.add_argument("--ep", type=parse_size, default=1, metavar="N", help="expert parallel (1)")
    add_device_arguments(serve)
    serve.set_defaults(handler=run)
