"""serving 的离散事件模拟：请求到达、被派给引擎、一步一步跑完；每一步的时间是它那个 batch 的下界。

一个部署（:class:`Deployment`）是 ``replicas`` 个副本，每个副本是按 ``split`` 切开的一组设备。
聚合部署中每个副本既 prefill 也 decode（调度见 :mod:`roofline_book.serving.engine`），新请求派给手上
请求最少的副本。``scheduler="disaggregated"`` 时其中 ``prefill`` 个副本只做 prefill，其余只做
decode：prefill 做完就出第一个 token，KV cache 经设备之间的链路传到 decode 副本（节点内 NVLink，
跨节点每块 GPU 一个 NIC；逐层传，所以传输可以与 prefill 重叠，最后一层的那一份在 prefill 之后）。
``pp > 1`` 时每个副本有 ``pp`` 个虚拟引擎（vLLM 的做法），各有 ``1/pp`` 的 KV cache，流水线的各
stage 轮流为它们工作；一步的时间是走完全部 stage 的时间。

默认每一步都取它的下界，所以打印的每个延迟都是这个调度下的下界、每个吞吐都是上界。有一处保留：
步变慢时 batch 的组成也会变（调度的异常，Graham 1969），所以一个更慢的引擎的某个百分位可能比这里低
一点（测试里的几个负载中不到 5%）；单个请求的 TTFT 不会低于它的 prompt 单独 prefill 的下界。给了效率
（``efficiency=(计算, 内存)``）时，一步的时间是计算项除以前者、内存项除以后者中大的一个：
一个估计，不是下界。
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from .._base import validate as _validate
from .._base.validate import InvalidArgument
from ..devices.catalog import Hardware, network
from ..distributed.parallel import DEFAULT_NETWORK, weight_bytes_per_device
from ..distributed.routing import GPUS_PER_NODE
from ..distributed.split import Split
from ..llm.inference import Precisions, kv_bytes_per_token
from ..llm.serving import MEMORY_RESERVE, activation_peak
from ..llm.shape import ModelConfig
from ..units import si
from .engine import BLOCK, WATERMARK, Engine, StepRecord, Track
from .steps import StepModel
from .workload import Request

#: 调度器的名字（见 :mod:`roofline_book.serving.engine`）。
SCHEDULERS = ("static", "continuous", "chunked", "disaggregated")


@dataclass(frozen=True)
class Deployment:
    """一个部署：模型、设备、切分、副本数与调度（各字段的说明写在字段下）。"""

    config: ModelConfig
    device: Hardware
    split: Split = Split()
    precisions: Precisions = Precisions()
    scheduler: str = "chunked"
    """:data:`SCHEDULERS` 之一。"""
    replicas: int = 1
    """副本数；每个副本 ``split.devices`` 块设备。"""
    prefill: int | None = None
    """``"disaggregated"`` 时做 prefill 的副本数（默认一半，至少 1）；其余做 decode。"""
    chunk: int = 2048
    """``"chunked"`` 一步的 token 预算（Sarathi-Serve 的 token budget）；attention 数据并行时
    （``split.ep > split.tp``）是每组的预算。"""
    max_tokens: int = 8192
    """不分块的 prefill 一步至多的 token 数（至少一条 prompt），数据并行时也是每组的。"""
    max_seqs: int | None = None
    """一个引擎同时处理的请求数上限（vLLM 的 ``max_num_seqs``）；默认只受内存限制。"""
    prefix_hit: float = 0.0
    """每条 prompt 中已在 prefix cache 里的比例：prefill 不再算它们，但 attention 仍要读它们。"""
    efficiency: tuple[float, float] | None = None
    """``(计算, 内存)``：给了就把每一步的下界换成估计。"""
    reserve: float = MEMORY_RESERVE
    """设备内存中不给 KV cache 的比例（vLLM 的 ``1 - gpu_memory_utilization``）。"""
    per_node: int = GPUS_PER_NODE
    """一个节点的 GPU 数。"""

    def __post_init__(self) -> None:
        if self.scheduler not in SCHEDULERS:
            raise InvalidArgument(
                "scheduler", f"({self.scheduler!r}) must be one of {', '.join(SCHEDULERS)}"
            )
        _validate.size("replicas", self.replicas)
        _validate.size("chunk", self.chunk)
        _validate.size("max_tokens", self.max_tokens)
        if self.max_seqs is not None:
            _validate.size("max_seqs", self.max_seqs)
        hit = _validate.non_negative("prefix_hit", self.prefix_hit)
        if hit >= 1:
            raise InvalidArgument("prefix_hit", f"must be below 1, got {self.prefix_hit}")
        if self.efficiency is not None:
            for name, value in zip(("compute", "memory"), self.efficiency, strict=True):
                v = _validate.positive(f"efficiency ({name})", value)
                if v > 1:
                    raise InvalidArgument("efficiency", f"({name} {value}) must be in (0, 1]")
        if self.scheduler == "disaggregated":
            if self.replicas < 2:
                raise InvalidArgument(
                    "replicas",
                    f"disaggregation needs at least 2 (prefill + decode), got {self.replicas}",
                )
            if not 1 <= self.prefill_replicas < self.replicas:
                raise InvalidArgument(
                    "prefill",
                    f"({self.prefill}) must be between 1 and replicas - 1 ({self.replicas - 1})",
                )

    @property
    def prefill_replicas(self) -> int:
        """做 prefill 的副本数（分离部署），否则为 0。"""
        if self.scheduler != "disaggregated":
            return 0
        return self.prefill if self.prefill is not None else max(1, self.replicas // 2)

    @property
    def devices(self) -> int:
        """部署用的设备数：``replicas x split.devices``。"""
        return self.replicas * self.split.devices

    def kv_capacity_tokens(self) -> int:
        """一个副本的 KV cache 放得下的 token 数（整组设备合计，vLLM 的规则）。

        每块设备 ``(1 - reserve) x capacity`` 减去它的权重与 ``1/tp`` 的激活峰值，余下的除以每个
        token 在这块设备上的 KV cache（它的 stage 的层、``1/min(tp, kv_heads)`` 的 KV head），
        再乘 attention 的数据并行组数。
        """
        c, s, p = self.config, self.split, self.precisions
        if self.device.memory_capacity is None:
            raise InvalidArgument(
                "device", f"must have a memory capacity; {self.device.key} has none"
            )
        free = (
            (1 - self.reserve) * self.device.memory_capacity
            - weight_bytes_per_device(c, s, p)
            - activation_peak(c, p) / s.tp
        )
        layers = math.ceil(c.layers / s.pp)
        per_token = kv_bytes_per_token(c, p) * layers / c.layers / s.kv_shards(c)
        return max(0, math.floor(free / per_token)) * s.attention_dp

    def link_bandwidth(self) -> float:
        """分离部署中一个 prefill 副本把 KV cache 传出去的带宽（byte/s）。

        全部副本在一个节点内时走 NVLink，否则走网络；副本的每块设备各传自己那一份，所以乘设备数。
        """
        if self.devices <= self.per_node:
            if self.device.link_bandwidth is None:
                raise InvalidArgument(
                    "device", f"{self.device.key} has no interconnect in the catalog"
                )
            return self.split.devices * self.device.link_bandwidth
        return self.split.devices * network(DEFAULT_NETWORK).bandwidth


@dataclass(frozen=True)
class Percentiles:
    """一个延迟的分布（秒）：p50、p90、p99 与均值。"""

    p50: float
    p90: float
    p99: float
    mean: float


def percentile(values: list[float], q: float) -> float:
    """第 ``q`` 百分位（线性插值，与 NumPy 的默认相同）。

    Examples
    --------
    >>> percentile([1.0, 2.0, 3.0, 4.0], 50), percentile([1.0, 2.0, 3.0, 4.0], 90)
    (2.5, 3.7)
    """
    xs = sorted(values)
    at = (len(xs) - 1) * q / 100
    lo = math.floor(at)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (at - lo)


def _spread(values: list[float]) -> Percentiles | None:
    if not values:
        return None
    return Percentiles(
        percentile(values, 50),
        percentile(values, 90),
        percentile(values, 99),
        math.fsum(values) / len(values),
    )


@dataclass(frozen=True)
class ServeResult:
    """一次模拟的结果。延迟在 ``estimate`` 为假时是下界，吞吐是上界。"""

    requests: int
    makespan_s: float
    """第一个请求到达到最后一个请求结束（秒）。"""
    requests_per_s: float
    output_tokens_per_s: float
    ttft_s: Percentiles
    tpot_s: Percentiles | None
    """输出只有一个 token 的请求没有 TPOT；全是这样时为 None。"""
    e2e_s: Percentiles
    mean_batch: float
    """每步的序列数的均值。"""
    memory_bound_share: float
    """下界由内存决定的步数占全部步数的比例。"""
    steps: int
    preemptions: int
    mean_in_system: float
    """系统中（排队、在跑、在传 KV）的请求数对时间的平均。"""
    estimate: bool
    ttft_each: tuple[float, ...] = field(repr=False)
    tpot_each: tuple[float | None, ...] = field(repr=False)
    e2e_each: tuple[float, ...] = field(repr=False)
    finish_each: tuple[float, ...] = field(repr=False)
    timeline: tuple[StepRecord, ...] = field(repr=False, default=())

    @property
    def steady_requests_per_s(self) -> float:
        """稳态的完成率：第 10% 与第 90% 个请求结束之间每秒结束的请求数（不计开头与收尾）。

        全部请求一起到达时，这是引擎饱和时的吞吐；收尾时 batch 变小，整段的平均会低估它。
        """
        ends = sorted(self.finish_each)
        lo, hi = len(ends) // 10, len(ends) - 1 - len(ends) // 10
        if hi <= lo or ends[hi] <= ends[lo]:
            return self.requests_per_s
        return (hi - lo) / (ends[hi] - ends[lo])

    def goodput(self, ttft: float | None, tpot: float | None) -> tuple[float, float]:
        """满足 SLO（TTFT 不超过 ``ttft`` 秒、TPOT 不超过 ``tpot`` 秒）的请求：(每秒个数, 比例)。"""
        ok = 0
        for a, b in zip(self.ttft_each, self.tpot_each, strict=True):
            if (ttft is None or a <= ttft) and (tpot is None or b is None or b <= tpot):
                ok += 1
        return ok / self.makespan_s if self.makespan_s > 0 else math.inf, ok / self.requests


def _engines(d: Deployment) -> list[Engine]:
    tokens = d.kv_capacity_tokens()
    per_engine = tokens // d.split.pp // BLOCK
    steps = StepModel(d.config, d.device, d.split, d.precisions, d.per_node)
    engines: list[Engine] = []
    for r in range(d.replicas):
        scheduler = d.scheduler
        if scheduler == "disaggregated":
            scheduler = "prefill" if r < d.prefill_replicas else "decode"
        for _ in range(d.split.pp):
            engines.append(
                Engine(
                    len(engines),
                    steps,
                    scheduler,
                    per_engine,
                    # with attention data-parallel in dp groups, each group schedules its own
                    # budget (as vLLM's and SGLang's DP attention ranks do)
                    chunk=d.chunk * d.split.attention_dp,
                    max_tokens=d.max_tokens * d.split.attention_dp,
                    max_seqs=d.max_seqs,
                    estimate=d.efficiency,
                )
            )
    return engines


def _check(d: Deployment, requests: list[Request], engines: list[Engine]) -> None:
    if not requests:
        raise InvalidArgument("requests", "must hold at least one request")
    usable = engines[0].capacity_blocks - int(WATERMARK * engines[0].capacity_blocks)
    longest = max(r.prompt + r.output for r in requests)
    if longest > d.config.max_context:
        raise InvalidArgument(
            "prompt",
            f"prompt + output ({longest} tokens) is beyond {d.config.key}'s context window "
            f"({d.config.max_context})",
        )
    if usable <= 0:
        weights = si(weight_bytes_per_device(d.config, d.split, d.precisions), "B")
        raise InvalidArgument(
            "device",
            f"{d.config.key}'s weights ({weights} a device) leave no room for a KV cache on "
            f"{d.split.devices} x {d.device.key}: add devices (--tp, --ep) or smaller weights "
            "(--weights-dtype)",
        )
    if -(-longest // BLOCK) > usable:
        held = usable * BLOCK
        raise InvalidArgument(
            "prompt",
            f"and output: a request of {longest} tokens does not fit the KV cache of one "
            f"engine ({held} tokens on {d.split.devices} x {d.device.key}): use more devices "
            "(--tp, --ep) or shorter requests",
        )


def simulate(d: Deployment, requests: list[Request], *, timeline: int = 0) -> ServeResult:
    """在部署 ``d`` 上跑完 ``requests``；``timeline`` 为要记下的前几步（画时间线用）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.config import model
    >>> from roofline_book.serving.workload import Lengths, generate
    >>> rs = generate(200, 5.0, Lengths.parse("prompt", 1000), Lengths.parse("output", 200))
    >>> r = simulate(Deployment(model("llama-3-8b"), hardware("h100-sxm")), rs)
    >>> r.requests, round(r.requests_per_s, 1) < 5.5
    (200, True)
    """
    engines = _engines(d)
    _check(d, requests, engines)
    # vLLM's prefix cache hits whole blocks, and at least the last prompt token is computed
    hits = [
        min(r.prompt - 1, math.floor(d.prefix_hit * r.prompt)) // BLOCK * BLOCK for r in requests
    ]
    tracks = [
        Track(i, r.arrival, r.prompt, r.output, cached=h)
        for i, (r, h) in enumerate(zip(requests, hits, strict=True))
    ]
    intake = [e for e in engines if e.scheduler != "decode"]
    decoders = [e for e in engines if e.scheduler == "decode"]
    link_free = {e.number: 0.0 for e in intake}
    bandwidth = d.link_bandwidth() if decoders else 0.0
    kv_token = kv_bytes_per_token(d.config, d.precisions)
    events: list[tuple[float, int, int, object]] = []
    order = 0
    records: list[StepRecord] = []
    busy: dict[int, float] = {}

    def push(t: float, kind: int, obj: object) -> None:
        nonlocal order
        heapq.heappush(events, (t, order, kind, obj))
        order += 1

    def kick(e: Engine, now: float) -> None:
        if e.number in busy:
            return
        if len(records) >= timeline:
            now += e.forward(horizon(e) - now)
        bound = e.plan()
        if bound is None:
            return
        end = now + e.duration(bound)
        busy[e.number] = now
        push(end, 0, e)
        if len(records) < timeline:
            _, chunks = e.pending
            items = [(t.index, "prefill", n) for t, n in chunks]
            live = e.batch if e.scheduler == "static" and e.pending[0] else list(e.running.values())
            items += [(t.index, "decode", 1) for t in (live if e.pending[0] else [])]
            records.append(StepRecord(e.number, now, end, bound.bound, tuple(items)))

    def horizon(e: Engine) -> float:
        """the first moment something from outside can reach ``e``"""
        arrival = tracks[nxt].arrival if nxt < len(tracks) else math.inf
        if e.scheduler == "static":  # a static batch takes no one in until it is done
            return math.inf
        if e.scheduler != "decode":
            return arrival
        # a decode engine hears of a request when its KV cache arrives: after a prefill step
        # that is running, or that an arrival will start
        upstream = (
            t
            for t, _, kind, obj in events
            if kind == 1 or getattr(obj, "scheduler", "") == "prefill"
        )
        return min(arrival, min(upstream, default=math.inf))

    in_system, area, last = 0, 0.0, tracks[0].arrival
    finished = 0
    nxt = 0
    while finished < len(tracks):
        arrival = tracks[nxt].arrival if nxt < len(tracks) else math.inf
        if events and events[0][0] < arrival:
            now, _, kind, obj = heapq.heappop(events)
        else:
            now, kind, obj = arrival, 2, tracks[nxt]
            nxt += 1
            if math.isinf(now):
                raise AssertionError("the simulation stalled with requests left")
        area += in_system * (now - last)
        last = now
        if kind == 2:  # arrivals: every one at this instant joins before any engine plans
            assert isinstance(obj, Track)
            batch = [obj]
            while nxt < len(tracks) and tracks[nxt].arrival == now:
                batch.append(tracks[nxt])
                nxt += 1
            touched: dict[int, Engine] = {}
            for t in batch:
                in_system += 1
                e = min(intake, key=lambda x: (x.load, x.number))
                e.waiting.append(t)
                touched[e.number] = e
            for e in touched.values():
                kick(e, now)
        elif kind == 0:  # a step ends
            assert isinstance(obj, Engine)
            start = busy.pop(obj.number)
            ended, prefilled = obj.finish_step(now)
            finished += len(ended)
            in_system -= len(ended)
            for t in prefilled:
                if t.generated >= t.output:
                    t.finish = now
                    obj.release(t)
                    finished += 1
                    in_system -= 1
                    continue
                seconds = t.prompt * kv_token / bandwidth
                begin = max(link_free[obj.number], start)
                ready = max(begin + seconds, now + seconds / d.config.layers)
                link_free[obj.number] = ready
                push(ready, 1, (obj, t))
            kick(obj, now)
        else:  # a KV cache arrives at a decode engine
            assert isinstance(obj, tuple)
            source, t = obj
            assert isinstance(source, Engine) and isinstance(t, Track)
            source.release(t)
            target = min(decoders, key=lambda x: (x.load, x.number))
            target.waiting.append(t)
            kick(target, now)
            kick(source, now)
    return _result(d, tracks, engines, area, records)


def _result(
    d: Deployment,
    tracks: list[Track],
    engines: list[Engine],
    area: float,
    records: list[StepRecord],
) -> ServeResult:
    first = min(t.arrival for t in tracks)
    end = max(t.finish or 0.0 for t in tracks)
    span = end - first
    ttft = [t.first - t.arrival for t in tracks]  # type: ignore[operator]
    e2e = [t.finish - t.arrival for t in tracks]  # type: ignore[operator]
    tpot = [(t.finish - t.first) / (t.output - 1) if t.output > 1 else None for t in tracks]  # type: ignore[operator]
    steps = sum(e.steps_run for e in engines)
    rate = len(tracks) / span if span > 0 else math.inf
    return ServeResult(
        requests=len(tracks),
        makespan_s=span,
        requests_per_s=rate,
        output_tokens_per_s=sum(t.output for t in tracks) / span if span > 0 else math.inf,
        ttft_s=_spread(ttft),  # type: ignore[arg-type]
        tpot_s=_spread([x for x in tpot if x is not None]),
        e2e_s=_spread(e2e),  # type: ignore[arg-type]
        mean_batch=sum(e.batch_sum for e in engines) / steps if steps else 0.0,
        memory_bound_share=sum(e.memory_steps for e in engines) / steps if steps else 0.0,
        steps=steps,
        preemptions=sum(e.preemptions for e in engines),
        mean_in_system=area / span if span > 0 else 0.0,
        estimate=d.efficiency is not None,
        ttft_each=tuple(ttft),
        tpot_each=tuple(tpot),
        e2e_each=tuple(e2e),
        finish_each=tuple(t.finish or 0.0 for t in tracks),
        timeline=tuple(records),
    )


__all__ = ["SCHEDULERS", "Deployment", "Percentiles", "ServeResult", "percentile", "simulate"]
