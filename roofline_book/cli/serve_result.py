"""``roofline-book serve --json`` 的记录：:class:`ServeResult` 与它的各部分。"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from .._base.records import record_field
from ..serving.search import Comparison, Load, MaxRate, Slo
from ..serving.simulate import Deployment, Percentiles
from ..serving.simulate import ServeResult as Simulated
from .results import Result, command_field

_S = "s"


@dataclass(frozen=True, kw_only=True)
class Spread:
    """一个延迟的 p50、p90、p99 与均值（秒）。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "a latency's percentiles"}

    p50: float = record_field(minimum=0, description="median")
    p90: float = record_field(minimum=0, description="90th percentile")
    p99: float = record_field(minimum=0, description="99th percentile")
    mean: float = record_field(minimum=0)
    unit: str = record_field(enum=["s"], description="the unit of the four: seconds")

    @classmethod
    def of(cls, p: Percentiles) -> Spread:
        return cls(p50=p.p50, p90=p.p90, p99=p.p99, mean=p.mean, unit=_S)


@dataclass(frozen=True, kw_only=True)
class ServeRun:
    """一次模拟的结果：每步取下界（``kind`` 为 ``bound``）或估计（``estimate``）。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "one simulation's figures"}

    kind: str = record_field(
        enum=["bound", "estimate"],
        description="bound: every step at its lower bound, so latencies are lower bounds and "
        "throughputs upper bounds; estimate: the steps' bounds divided by --efficiency",
    )
    requests_per_s: float = record_field(minimum=0, unit="1/s", description="finished requests")
    output_tokens_per_s: float = record_field(minimum=0, unit="1/s", description="output tokens")
    ttft_s: Spread = record_field(description="time to first token: arrival to first token")
    tpot_s: Spread | None = record_field(
        nullable=True,
        description="time per output token after the first: (end - first token) / (output - 1); "
        "null when every output is one token",
    )
    e2e_s: Spread = record_field(description="end-to-end latency: arrival to last token")
    goodput_per_s: float | None = record_field(
        nullable=True,
        minimum=0,
        unit="1/s",
        description="requests a second meeting every SLO given",
    )
    slo_attainment: float | None = record_field(
        nullable=True, minimum=0, maximum=1, unit="1", description="share of requests meeting them"
    )
    slo_met: bool | None = record_field(
        nullable=True, description="at least slo_percentile % of requests meet every SLO given"
    )
    mean_batch: float = record_field(minimum=0, unit="1", description="sequences a step, mean")
    memory_bound_share: float = record_field(
        minimum=0, maximum=1, unit="1", description="share of steps whose bound is memory"
    )
    preemptions: int = record_field(minimum=0, unit="1", description="requests preempted")
    steps: int = record_field(minimum=0, unit="1", description="steps run, all engines")
    makespan_s: float = record_field(minimum=0, unit=_S, description="first arrival to last token")
    mean_in_system: float = record_field(
        minimum=0, unit="1", description="requests queued, running or in transfer, time mean"
    )

    @classmethod
    def of(cls, r: Simulated, slo: Any) -> ServeRun:
        given = slo is not None and (slo.ttft is not None or slo.tpot is not None)
        good = r.goodput(slo.ttft, slo.tpot) if given else (None, None)
        return cls(
            kind="estimate" if r.estimate else "bound",
            requests_per_s=r.requests_per_s,
            output_tokens_per_s=r.output_tokens_per_s,
            ttft_s=Spread.of(r.ttft_s),
            tpot_s=None if r.tpot_s is None else Spread.of(r.tpot_s),
            e2e_s=Spread.of(r.e2e_s),
            goodput_per_s=good[0],
            slo_attainment=good[1],
            slo_met=slo.met(r) if given else None,
            mean_batch=r.mean_batch,
            memory_bound_share=r.memory_bound_share,
            preemptions=r.preemptions,
            steps=r.steps,
            makespan_s=r.makespan_s,
            mean_in_system=r.mean_in_system,
        )


@dataclass(frozen=True, kw_only=True)
class RateEntry:
    """满足 SLO 的最高到达率，与那时的结果。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {"description": "the highest rate meeting the SLOs"}

    scheduler: str = record_field(description="the deployment's scheduler")
    prefill_replicas: int = record_field(
        minimum=0, unit="1", description="replicas that prefill (disaggregated), else 0"
    )
    max_rate_per_s: float = record_field(
        minimum=0, unit="1/s", description="arrival rate; 0: not even one request alone meets them"
    )
    saturation_requests_per_s: float = record_field(
        minimum=0,
        unit="1/s",
        description="throughput with every request arriving at once, over the whole run",
    )
    at_max_rate: ServeRun | None = record_field(nullable=True, description="the run at that rate")


@dataclass(frozen=True, kw_only=True)
class ServeResult(Result):
    """``serve`` 的结果。"""

    SCHEMA_EXTRA: ClassVar[dict[str, str]] = {
        "description": "a serving simulation: requests scheduled step by step, each step at the "
        "lower bound of the batch it runs (or an estimate beside it)"
    }

    command: str = command_field("serve")
    model: str = record_field()
    device: str = record_field(description="catalog key, or the ad-hoc device's name")
    devices: int = record_field(minimum=1, unit="1", description="replicas x devices a replica")
    tp: int = record_field(minimum=1, unit="1")
    pp: int = record_field(minimum=1, unit="1")
    ep: int = record_field(minimum=1, unit="1")
    replicas: int = record_field(minimum=1, unit="1")
    prefill_replicas: int = record_field(
        minimum=0, unit="1", description="replicas that only prefill (disaggregated), else 0"
    )
    scheduler: str = record_field(enum=["static", "continuous", "chunked", "disaggregated"])
    chunk: int = record_field(minimum=1, unit="1", description="chunked prefill's tokens a step")
    kv_cache_tokens: int = record_field(
        minimum=0, unit="1", description="tokens the KV cache of one replica holds"
    )
    requests: int = record_field(minimum=1, unit="1")
    rate_per_s: float | None = record_field(
        nullable=True, minimum=0, unit="1/s", description="arrival rate; null: all at once (inf)"
    )
    arrivals: str = record_field(description="poisson, constant, or trace")
    prompt: str = record_field(description="prompt tokens: a count or a distribution")
    output: str = record_field(description="output tokens: a count or a distribution")
    prefix_hit: float = record_field(minimum=0, maximum=1, unit="1")
    slo_ttft_s: float | None = record_field(nullable=True, minimum=0, unit=_S)
    slo_tpot_s: float | None = record_field(nullable=True, minimum=0, unit=_S)
    slo_percentile: float = record_field(
        minimum=0,
        maximum=100,
        unit="1",
        description="share of requests, in percent, that must meet every SLO given (attainment)",
    )
    efficiency_compute: float | None = record_field(
        nullable=True, minimum=0, maximum=1, unit="1", description="estimate's compute efficiency"
    )
    efficiency_memory: float | None = record_field(
        nullable=True, minimum=0, maximum=1, unit="1", description="estimate's memory efficiency"
    )
    efficiency_source: str | None = record_field(nullable=True, description="where they come from")
    kind: str = record_field(
        enum=["bound", "estimate"], description="what the top-level figures are"
    )
    requests_per_s: float = record_field(minimum=0, unit="1/s")
    output_tokens_per_s: float = record_field(minimum=0, unit="1/s")
    ttft_s: Spread = record_field()
    tpot_s: Spread | None = record_field(nullable=True)
    e2e_s: Spread = record_field()
    goodput_per_s: float | None = record_field(nullable=True, minimum=0, unit="1/s")
    mean_batch: float = record_field(minimum=0, unit="1")
    memory_bound_share: float = record_field(minimum=0, maximum=1, unit="1")
    run: ServeRun | None = record_field(
        nullable=True, description="the run at --rate (null with --max-rate or --compare alone)"
    )
    bound: ServeRun | None = record_field(
        nullable=True, description="with --efficiency: the same run with every step at its bound"
    )
    max_rate: RateEntry | None = record_field(nullable=True, description="--max-rate's answer")
    compare: tuple[RateEntry, ...] = record_field(
        description="--compare: aggregated and disaggregated on the same devices"
    )


def rate_or_null(rate: float) -> float | None:
    """JSON 中的到达率：无穷写成 null。"""
    return None if math.isinf(rate) else rate


def _entry(scheduler: str, prefill: int, got: MaxRate, slo: Slo) -> RateEntry:
    return RateEntry(
        scheduler=scheduler,
        prefill_replicas=prefill,
        max_rate_per_s=got.rate,
        saturation_requests_per_s=got.saturation.requests_per_s,
        at_max_rate=None if got.result is None else ServeRun.of(got.result, slo),
    )


def serve_record(  # noqa: PLR0913
    d: Deployment,
    load: Load,
    slo: Slo,
    estimate: tuple[tuple[float, float] | None, str | None],
    runs: tuple[Simulated | None, Simulated | None],
    searches: tuple[MaxRate | None, Comparison | None],
    *,
    rate: float | None,
    arrivals: str,
) -> ServeResult:
    """``serve`` 的记录：部署 ``d`` 与负载 ``load``；``estimate`` 为 ``(效率, 出处)``，
    ``runs`` 为 ``--rate`` 下的 ``(那次运行, 同负载的下界)``，``searches`` 为
    ``(--max-rate, --compare)`` 的回答。"""
    efficiency, source = estimate
    main, bound = runs
    best, versus = searches
    best_entry = None if best is None else _entry(d.scheduler, d.prefill_replicas, best, slo)
    pairs: tuple[RateEntry, ...] = ()
    if versus is not None:
        pairs = (
            _entry(versus.aggregated.scheduler, 0, versus.aggregated_rate, slo),
            _entry(
                "disaggregated",
                versus.disaggregated.prefill_replicas,
                versus.disaggregated_rate,
                slo,
            ),
        )
    shown = main
    if shown is None:
        assert best is not None or versus is not None
        first = best if best is not None else versus.aggregated_rate  # type: ignore[union-attr]
        shown = first.result or first.saturation
    top = ServeRun.of(shown, slo)
    return ServeResult(
        model=d.config.key,
        device=d.device.key,
        devices=d.devices,
        tp=d.split.tp,
        pp=d.split.pp,
        ep=d.split.ep,
        replicas=d.replicas,
        prefill_replicas=d.prefill_replicas,
        scheduler=d.scheduler,
        chunk=d.chunk,
        kv_cache_tokens=d.kv_capacity_tokens(),
        requests=shown.requests,
        rate_per_s=None if rate is None else rate_or_null(rate),
        arrivals=arrivals,
        prompt=str(load.prompt) if arrivals != "trace" else "trace",
        output=str(load.output) if arrivals != "trace" else "trace",
        prefix_hit=d.prefix_hit,
        slo_ttft_s=slo.ttft,
        slo_tpot_s=slo.tpot,
        slo_percentile=slo.percentile,
        efficiency_compute=None if efficiency is None else efficiency[0],
        efficiency_memory=None if efficiency is None else efficiency[1],
        efficiency_source=source,
        kind=top.kind,
        requests_per_s=top.requests_per_s,
        output_tokens_per_s=top.output_tokens_per_s,
        ttft_s=top.ttft_s,
        tpot_s=top.tpot_s,
        e2e_s=top.e2e_s,
        goodput_per_s=top.goodput_per_s,
        mean_batch=top.mean_batch,
        memory_bound_share=top.memory_bound_share,
        run=None if main is None else top,
        bound=None if bound is None else ServeRun.of(bound, slo),
        max_rate=best_entry,
        compare=pairs,
    )
