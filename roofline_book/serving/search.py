"""在模拟之上回答的问题：满足 SLO 的最高到达率，吞吐与延迟随到达率的走向，聚合与分离的比较。

SLO 是 TTFT 与 TPOT 各自的上限，按达成率判断（默认 90%，DistServe 的 SLO attainment）：
一个到达率满足 SLO，当且仅当 TTFT 与 TPOT 都不超过上限的请求至少占这个比例。
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .._base import validate as _validate
from .._base.validate import InvalidArgument
from .simulate import Deployment, ServeResult, simulate
from .workload import Lengths, Request, generate


@dataclass(frozen=True)
class Slo:
    """服务目标：TTFT 与 TPOT 的上限（秒，None 为不限），与要求的达成率 ``percentile``
    （百分数）。"""

    ttft: float | None = None
    tpot: float | None = None
    percentile: float = 90.0

    def __post_init__(self) -> None:
        if self.ttft is not None:
            _validate.positive("slo_ttft", self.ttft)
        if self.tpot is not None:
            _validate.positive("slo_tpot", self.tpot)
        q = _validate.positive("slo_percentile", self.percentile)
        if q > 100:
            raise InvalidArgument("slo_percentile", f"must be in (0, 100], got {self.percentile}")

    def met(self, result: ServeResult) -> bool:
        """``result`` 是否满足这个 SLO：TTFT 与 TPOT 都在上限之内的请求的百分比至少为 ``percentile``
        （DistServe 的 SLO attainment；两项各自的百分位都在上限内还不够）。"""
        return result.goodput(self.ttft, self.tpot)[1] >= self.percentile / 100


@dataclass(frozen=True)
class Load:
    """一种负载：请求个数、prompt 与输出的长度、到达过程与随机种子。"""

    requests: int
    prompt: Lengths
    output: Lengths
    arrivals: str = "poisson"
    seed: int = 0

    def at(self, rate: float) -> list[Request]:
        """这种负载在每秒 ``rate`` 个请求时的请求序列。"""
        return generate(
            self.requests, rate, self.prompt, self.output, arrivals=self.arrivals, seed=self.seed
        )


def run(deployment: Deployment, load: Load, rate: float) -> ServeResult:
    """部署 ``deployment`` 在负载 ``load``、到达率 ``rate`` 下的模拟结果。"""
    return simulate(deployment, load.at(rate))


def sweep(
    deployment: Deployment, load: Load, rates: list[float]
) -> list[tuple[float, ServeResult]]:
    """一串到达率下的结果：画吞吐与延迟的 Pareto 曲线用。"""
    return [(r, run(deployment, load, r)) for r in rates]


#: :func:`pareto` 默认的到达率：饱和时稳态吞吐的这些倍数。
PARETO_SHARES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: :func:`pareto` 估计饱和吞吐时至少模拟的请求数：请求少时它们几乎同时结束，稳态吞吐无从谈起。
PARETO_SATURATION_REQUESTS = 2000


def pareto(
    deployment: Deployment, load: Load, shares: tuple[float, ...] = PARETO_SHARES
) -> list[dict[str, float | None]]:
    """吞吐与 p90 延迟随到达率的走向（画 Pareto 曲线用），每个到达率一组普通的数。

    到达率取饱和时（全部请求一起到达）的稳态吞吐
    （:attr:`~roofline_book.serving.simulate.ServeResult.steady_requests_per_s`）的 ``shares``
    倍，每个到达率模拟一次 ``load``。饱和吞吐由至少 :data:`PARETO_SATURATION_REQUESTS` 个同样
    长度的请求估计：几百个请求一起到达时，它们几乎同时结束，第 10% 到第 90% 个结束之间的速率
    远高于引擎能持续的吞吐。

    Returns
    -------
    list of dict
        每个到达率一项：``rate_per_s`` （到达率，1/s）、``requests_per_s`` 与
        ``output_tokens_per_s`` （吞吐，1/s）、``ttft_p90_s``、``tpot_p90_s`` （没有 TPOT 时为
        None）与 ``e2e_p90_s`` （秒）。每步取下界时，吞吐是上界、延迟是下界。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.config import model
    >>> from .workload import Lengths
    >>> d = Deployment(model("llama-3-8b"), hardware("h100-sxm"))
    >>> load = Load(200, Lengths.parse("prompt", 1000), Lengths.parse("output", 200))
    >>> low, high = pareto(d, load, (0.2, 1.0))
    >>> low["requests_per_s"] < high["requests_per_s"], low["ttft_p90_s"] < high["ttft_p90_s"]
    (True, True)
    """
    for share in shares:
        _validate.positive("shares", share)
    many = replace(load, requests=max(load.requests, PARETO_SATURATION_REQUESTS))
    top = run(deployment, many, math.inf).steady_requests_per_s
    points: list[dict[str, float | None]] = []
    for share in shares:
        r = run(deployment, load, share * top)
        points.append(
            {
                "rate_per_s": share * top,
                "requests_per_s": r.requests_per_s,
                "output_tokens_per_s": r.output_tokens_per_s,
                "ttft_p90_s": r.ttft_s.p90,
                "tpot_p90_s": None if r.tpot_s is None else r.tpot_s.p90,
                "e2e_p90_s": r.e2e_s.p90,
            }
        )
    return points


@dataclass(frozen=True)
class MaxRate:
    """满足 SLO 的最高到达率（每秒请求数）、那时的结果，以及饱和时的模拟（到达率为无穷）。

    最高到达率不超过饱和时的稳态吞吐（:attr:`~roofline_book.serving.simulate.ServeResult.steady_requests_per_s`）。"""

    rate: float
    result: ServeResult | None
    saturation: ServeResult


def max_rate(deployment: Deployment, load: Load, slo: Slo, *, tolerance: float = 0.01) -> MaxRate:
    """满足 ``slo`` 的最高到达率：在 0 与饱和时的稳态吞吐之间二分，直到区间小于 ``tolerance`` 倍。

    同一个 ``seed`` 下不同到达率的请求只差一个时间轴的伸缩，所以结果随到达率大体单调；
    二分找到的是满足 SLO 的一个到达率，其上方 ``tolerance`` 倍处不满足。请求总数要远多于那时系统中
    同时有的请求数（Little 定律：到达率乘停留时间），否则模拟在队列形成之前就结束了，找到的到达率会
    偏高；``roofline-book serve --max-rate`` 在请求不够多时提醒。连很低的到达率都满足不了时
    （一个请求单独跑就超出 SLO）为 0。
    """
    tolerance = _validate.positive("tolerance", tolerance)
    saturated = run(deployment, load, math.inf)
    # no rate above the saturated engines' steady throughput is sustained, however few the
    # requests (a short run above it only queues them)
    hi = saturated.steady_requests_per_s
    lo_result = run(deployment, load, hi / 1000)
    if not slo.met(lo_result):
        return MaxRate(0.0, None, saturated)
    lo = hi / 1000
    best = lo_result
    top = run(deployment, load, hi)
    if slo.met(top):
        return MaxRate(hi, top, saturated)
    while hi - lo > tolerance * lo:
        mid = math.sqrt(lo * hi)
        got = run(deployment, load, mid)
        if slo.met(got):
            lo, best = mid, got
        else:
            hi = mid
    return MaxRate(lo, best, saturated)


@dataclass(frozen=True)
class Comparison:
    """同样的设备，聚合与分离两种部署：各自满足 SLO 的最高到达率与那时的结果。"""

    aggregated: Deployment
    disaggregated: Deployment
    aggregated_rate: MaxRate
    disaggregated_rate: MaxRate


def compare(deployment: Deployment, load: Load, slo: Slo) -> Comparison:
    """把 ``deployment`` 的设备分别做成聚合（chunked prefill）与分离部署，比较满足 SLO 的最高
    到达率。

    分离部署中 prefill 副本数取 ``deployment.prefill``；没给时逐个试 ``1 .. replicas - 1``，
    取最好的。
    """
    if deployment.replicas < 2:
        raise InvalidArgument(
            "replicas", f"comparing with disaggregation needs at least 2, got {deployment.replicas}"
        )
    agg = replace(
        deployment,
        scheduler="chunked" if deployment.scheduler == "disaggregated" else deployment.scheduler,
        prefill=None,
    )
    agg_rate = max_rate(agg, load, slo)
    choices = [deployment.prefill] if deployment.prefill else range(1, deployment.replicas)
    best: tuple[Deployment, MaxRate] | None = None
    for p in choices:
        d = replace(deployment, scheduler="disaggregated", prefill=p)
        got = max_rate(d, load, slo)
        if best is None or got.rate > best[1].rate:
            best = (d, got)
    assert best is not None
    return Comparison(agg, best[0], agg_rate, best[1])


__all__ = [
    "PARETO_SATURATION_REQUESTS",
    "PARETO_SHARES",
    "Comparison",
    "Load",
    "MaxRate",
    "Slo",
    "compare",
    "max_rate",
    "pareto",
    "run",
    "sweep",
]
