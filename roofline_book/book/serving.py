"""Serving 一章的隐藏 cell 所用的计算：模拟的结果、一步的下界与 roofline 上的位置，按粘贴名给出。

每个函数返回一个字典，键就是正文读取的粘贴名，cell 只需 ``glue(**values)``。时间按毫秒
（``_ms``、以及 ``demo_ttft`` 这类延迟）或秒（``little_w``）给出，吞吐按每秒的请求或 token 数。
除了带 ``est`` 的几个估计，每个延迟都是下界、每个吞吐都是上界（每一步都取它的下界）。

Examples
--------
>>> from roofline_book import hardware
>>> from roofline_book.llm.config import model
>>> d = Deployment(model("llama-3-8b"), hardware("h100-sxm"))
>>> s = decode_step_figures(d, 1100, 64)
>>> round(s["step_b1"], 2), round(s["step_b64"], 2)   # (15.01 GB + b x 1100 x 131 kB) / 3.35 TB/s
(4.52, 7.24)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..devices.catalog import Hardware
from ..distributed.split import Split
from ..llm.inference import Precisions, decode_batch_to_ridge, kv_bytes_per_token
from ..llm.shape import ModelConfig
from ..measure.published.efficiency import serving_efficiency
from ..measure.published.rows import Published
from ..present.diagrams.serving import free_chunk
from ..serving.engine import BLOCK
from ..serving.search import Load, Slo, max_rate, run
from ..serving.simulate import Deployment, Percentiles, ServeResult
from ..serving.steps import StepModel, StepTime

#: 一条曲线：``sweep`` 的结果，每个到达率（1/s）一次模拟。
Curve = Sequence[tuple[float, ServeResult]]


def _steps(deployment: Deployment) -> StepModel:
    """部署的一个副本上一步的下界模型。"""
    d = deployment
    return StepModel(d.config, d.device, d.split, d.precisions, d.per_node)


def _tpot(result: ServeResult) -> Percentiles:
    if result.tpot_s is None:
        raise ValueError("result: every request emitted one token, so there is no TPOT")
    return result.tpot_s


def step_intensity(step: StepTime, device: Hardware, precision: str = "bf16") -> float:
    """一步的算术强度（FLOP/byte），从它的下界读出：``I = I* x compute_s / memory_s``。

    ``compute_s`` 是 FLOPs 除以 ``precision`` （部署的激活精度）下的峰值，``memory_s`` 是字节数
    除以带宽，所以两者之比乘以同一精度的 ridge point ``I*`` （矩阵单元对 HBM）就是 FLOPs 除以
    字节数。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> h100 = hardware("h100-sxm")
    >>> step = StepTime(2e-3, "compute", 2e-3, 1e-3, 0.0)   # twice as long on compute as on bytes
    >>> round(step_intensity(step, h100) / h100.ridge_point(), 6)
    2.0
    >>> round(step_intensity(step, h100, "fp8") / h100.ridge_point("fp8"), 6)
    2.0
    """
    return device.ridge_point(precision) * step.compute_s / step.memory_s


def max_rates(
    deployments: Mapping[str, Deployment], load: Load, slo: Slo, *, tolerance: float = 0.03
) -> dict[str, float]:
    """各部署满足 ``slo`` 的最高到达率（每秒请求数），键与 ``deployments`` 的相同。

    每个部署做一次 :func:`~roofline_book.serving.search.max_rate` 的二分，区间小于
    ``tolerance`` 倍时停下。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.config import model
    >>> from roofline_book.serving.workload import Lengths
    >>> d = Deployment(model("llama-3-8b"), hardware("h100-sxm"))
    >>> load = Load(20, Lengths.parse("prompt", 1000), Lengths.parse("output", 20))
    >>> max_rates({"any": d}, load, Slo(ttft=1e-3))   # one prefill alone takes 14 ms
    {'any': 0.0}
    """
    return {k: max_rate(d, load, slo, tolerance=tolerance).rate for k, d in deployments.items()}


def bound_and_estimate(deployment: Deployment, load: Load, rate: float) -> dict[str, float]:
    """一次模拟的下界（TTFT 与 TPOT 的 p90，ms；输出吞吐，token/s），以及按已发表的效率的估计。

    效率取 :func:`~roofline_book.measure.published.efficiency.serving_efficiency` （百分数
    ``eff_c``、``eff_m``），估计的 TPOT p90 为 ``est_tpot``。``n_req`` 是负载的请求数，
    ``demo_rate`` 就是 ``rate``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.config import model
    >>> from roofline_book.serving.workload import Lengths
    >>> d = Deployment(model("llama-3-8b"), hardware("h100-sxm"))
    >>> load = Load(10, Lengths.parse("prompt", 100), Lengths.parse("output", 10))
    >>> v = bound_and_estimate(d, load, 4)
    >>> v["n_req"], v["demo_rate"], v["est_tpot"] > v["demo_tpot"] >= 15.01e9 / 3.35e12 * 1e3
    (10, 4, True)
    """
    r = run(deployment, load, rate)
    eff = serving_efficiency(deployment.device)
    est = run(replace(deployment, efficiency=(eff.compute, eff.memory)), load, rate)
    return dict(
        n_req=load.requests,
        demo_rate=rate,
        demo_ttft=r.ttft_s.p90 * 1e3,
        demo_tpot=_tpot(r).p90 * 1e3,
        demo_tps=r.output_tokens_per_s,
        eff_c=eff.compute * 100,
        eff_m=eff.memory * 100,
        est_tpot=_tpot(est).p90 * 1e3,
    )


def timeline_figures(runs: Mapping[str, ServeResult], *, request: int = 1) -> dict[str, float]:
    """调度时间线（:func:`~roofline_book.present.diagrams.serving.timeline_runs`）上读出的数。

    ``runs`` 要有 ``"static"`` 与 ``"continuous"`` 两种调度。给出请求个数 ``tl_n``、两种调度做完
    全部请求的时刻 ``tl_static``、``tl_cont`` （ms），第 ``request`` 个请求（从 0 数）在两种调度下
    的 TTFT ``tl_wait_static``、``tl_wait_cont`` （ms），以及 continuous batching 最短与最长的
    一步 ``tl_min``、``tl_max`` （ms）。
    """
    static, cont = runs["static"], runs["continuous"]
    ends = {s: max(rec.end for rec in r.timeline) * 1e3 for s, r in runs.items()}
    spans = [(rec.end - rec.start) * 1e3 for rec in cont.timeline]
    return dict(
        tl_n=static.requests,
        tl_static=ends["static"],
        tl_cont=ends["continuous"],
        tl_wait_static=static.ttft_each[request] * 1e3,
        tl_wait_cont=cont.ttft_each[request] * 1e3,
        tl_min=min(spans),
        tl_max=max(spans),
    )


def pareto_figures(curves: Mapping[str, Curve], slo: Slo) -> dict[str, float]:
    """Pareto 曲线上读出的数：SLO 本身，静态批处理在最低到达率时的 TTFT，continuous batching
    在最高到达率时的吞吐与 goodput。

    ``curves`` 是各调度的 :func:`~roofline_book.serving.search.sweep`，到达率从低到高，要有
    ``"static"`` 与 ``"continuous"``。给出 ``slo_ttft``、``slo_tpot`` （ms）、``slo_pct``
    （达成率，%）；``low_rate`` 与那时静态批处理的 TTFT p90 ``static_low`` （ms）；``gp_rate``
    与那时 continuous batching 每秒完成的请求 ``gp_tput``、其中满足 SLO 的每秒个数 ``gp_good``
    与百分比 ``gp_share``。
    """
    if slo.ttft is None or slo.tpot is None:
        raise ValueError(f"slo: needs both a TTFT and a TPOT limit, got {slo}")
    low_rate, low = curves["static"][0]
    gp_rate, top = curves["continuous"][-1]
    good, share = top.goodput(slo.ttft, slo.tpot)
    return dict(
        slo_ttft=slo.ttft * 1e3,
        slo_tpot=slo.tpot * 1e3,
        slo_pct=slo.percentile,
        low_rate=low_rate,
        static_low=low.ttft_s.p90 * 1e3,
        gp_rate=gp_rate,
        gp_tput=top.requests_per_s,
        gp_good=good,
        gp_share=share * 100,
    )


def decode_step_figures(deployment: Deployment, context: int, batch: int) -> dict[str, float]:
    """只有 decode 的一步的下界（ms）：1 条与 ``batch`` 条序列，上下文都是 ``context``。

    键为 ``step_b1``、``step_b{batch}``、两者之比 ``step_ratio``、``step_b`` （即 ``batch``），
    以及权重 GEMM 到达 ridge point 的 batch ``b_star``
    （:func:`~roofline_book.llm.inference.decode_batch_to_ridge`）。
    """
    sm = _steps(deployment)
    step = {b: sm.time(decodes=b, context_sum=b * context).seconds * 1e3 for b in (1, batch)}
    return {
        "b_star": decode_batch_to_ridge(
            deployment.config, deployment.device, deployment.precisions
        ),
        "step_b1": step[1],
        f"step_b{batch}": step[batch],
        "step_ratio": step[batch] / step[1],
        "step_b": batch,
    }


def little_figures(deployment: Deployment, load: Load, rate: float) -> dict[str, float]:
    """Little 定律 :math:`N = \\lambda W` 在一次模拟上的两边。

    ``little_in`` 是到达率，``little_rate`` 是完成率 :math:`\\lambda` （1/s），``little_w`` 是
    平均停留 :math:`W` （s），``little_lw`` 是两者之积，``little_l`` 是按时间平均的系统中的请求数
    :math:`N`。
    """
    r = run(deployment, load, rate)
    return dict(
        little_in=rate,
        little_rate=r.requests_per_s,
        little_w=r.e2e_s.mean,
        little_l=r.mean_in_system,
        little_lw=r.requests_per_s * r.e2e_s.mean,
    )


def kv_capacity_figures(
    deployment: Deployment, request_tokens: int, curves: Mapping[str, Curve]
) -> dict[str, int]:
    """KV cache 的容量与抢占：``block`` （一个 block 的 token 数，vLLM 的 ``block_size``），
    ``kv_tokens`` （一个副本放得下的 token 数），``kv_fit`` （放得下几条 ``request_tokens``
    长的完整请求），``preempt_top`` （``curves`` 的全部模拟中抢占次数最多的一次）。
    """
    tokens = deployment.kv_capacity_tokens()
    return dict(
        block=BLOCK,
        kv_tokens=tokens,
        kv_fit=tokens // request_tokens,
        preempt_top=max(r.preemptions for c in curves.values() for _, r in c),
    )


def piggyback_figures(
    deployment: Deployment, batch: int, context: int, chunk: int
) -> dict[str, float]:
    """一个 decode 步（``batch`` 条序列，上下文都是 ``context``）能免费捎带多少 prefill。

    给出这一步的下界 ``ch_ms`` （ms）与算术强度 ``ch_i`` （FLOP/byte）、部署的激活精度下的
    ridge point ``ridge``、这一步仍受内存限制的最大 prefill 块 ``ch_free`` （token，
    :func:`~roofline_book.present.diagrams.serving.free_chunk`），以及捎带一块 ``chunk`` 个
    token 时的下界 ``ch_big_ms`` （ms）；``ch_b``、``ch_big`` 即 ``batch``、``chunk``。
    """
    sm, device = _steps(deployment), deployment.device
    act = deployment.precisions.activations
    dec = sm.time(decodes=batch, context_sum=batch * context)
    big = sm.time(decodes=batch, context_sum=batch * context, chunks=[(chunk, chunk, False)])
    return dict(
        ch_ms=dec.seconds * 1e3,
        ch_i=step_intensity(dec, device, act),
        ridge=device.ridge_point(act),
        ch_free=free_chunk(sm, batch, batch * context),
        ch_big_ms=big.seconds * 1e3,
        ch_b=batch,
        ch_big=chunk,
    )


def disaggregation_figures(
    deployment: Deployment, prompt: int, batch: int, context: int
) -> dict[str, float]:
    """prefill 与 decode 分离时两边的一步在 roofline 上的位置，与一条 prompt 的 KV cache 的传输。

    ``dg_i_pre`` 是一条 ``prompt`` 个 token 的 prefill 的算术强度，``dg_i_dec`` 是 ``batch``
    条序列（上下文都是 ``context``）的 decode 步的（FLOP/byte）；``dg_kv_mb`` 是这条 prompt 的
    KV cache （MB），``dg_link`` 是它经过的链路（GB/s，
    :meth:`~roofline_book.serving.simulate.Deployment.link_bandwidth`），``dg_ms`` 是传输时间
    （ms）；``dg_b`` 即 ``batch``。
    """
    sm, device = _steps(deployment), deployment.device
    act = deployment.precisions.activations
    pre = sm.time(chunks=[(prompt, prompt, True)])
    dec = sm.time(decodes=batch, context_sum=batch * context)
    link = deployment.link_bandwidth()
    kv = prompt * kv_bytes_per_token(deployment.config, deployment.precisions)
    return dict(
        dg_i_pre=step_intensity(pre, device, act),
        dg_i_dec=step_intensity(dec, device, act),
        dg_kv_mb=kv / 1e6,
        dg_link=link / 1e9,
        dg_ms=kv / link * 1e3,
        dg_b=batch,
    )


def prefix_hit_figures(
    deployment: Deployment, load: Load, slo: Slo, prompt: int, *, hit: float = 0.5
) -> dict[str, float]:
    """prefix caching：每条 prompt 有 ``hit`` 的比例命中时，一条 ``prompt`` 个 token 的 prefill 的
    下界 ``pre_hit_ms`` 与不命中时的 ``pre_ms`` （ms），以及满足 ``slo`` 的最高到达率
    ``hit_rate`` （1/s，二分到 3%）；``hit_pct`` 是命中的百分比。

    命中按整 block 计，且最后一个 token 总要计算（与模拟的规则相同）。
    """
    sm = _steps(deployment)
    cached = min(prompt - 1, math.floor(hit * prompt)) // BLOCK * BLOCK
    pre = sm.time(chunks=[(prompt, prompt, True)])
    pre_hit = sm.time(chunks=[(prompt - cached, prompt, True)])
    cached_rate = max_rates({"hit": replace(deployment, prefix_hit=hit)}, load, slo)["hit"]
    return dict(
        hit_pct=hit * 100,
        hit_rate=cached_rate,
        pre_ms=pre.seconds * 1e3,
        pre_hit_ms=pre_hit.seconds * 1e3,
    )


def _precisions(row: Published) -> Precisions:
    c = row.config
    return Precisions(
        weights=c["weights"],
        activations=c["activations"],
        kv=c["kv"],
        weight_block=c["weight_block"],
    )


#: 一步的下界由什么决定，写成正文里的词。
BOUND_WORDS = {"network": "网卡的带宽", "compute": "算力", "memory": "显存带宽"}


def node_throughput_bounds(
    config: ModelConfig, device: Hardware, prefill: Published, decode: Published
) -> dict[str, object]:
    """已发表的每节点服务吞吐（``prefill`` 与 ``decode`` 两行）与每一步取下界时的上界。

    两行的 ``config`` 给出部署：``per_node`` （每节点 GPU 数）、``ep`` （专家并行的 GPU 数）与
    精度；decode 一行给平均上下文 ``context``，prefill 一行给每块 GPU 的 prompt 数
    ``batch_per_gpu``、prompt 长度 ``prompt`` 与缓存命中率 ``cache_hit``。

    - decode：batch 取显存放得下的最大值（不留余量），每条序列每步一个 token，上界为每节点
      ``per_node x 每 GPU 序列数 / 一步的下界`` 个输出 token/s；
    - prefill：每块 GPU ``batch_per_gpu`` 条 prompt 一起 prefill，上界除以 ``1 - cache_hit``
      （命中的 token 不需运算，却算在公布的输入 token 里）。

    键带 ``ds_`` 前缀：上界 ``ds_{phase}_k`` 与公布值 ``ds_{phase}_pub_k`` （千 token/s），
    公布值占上界的百分比 ``ds_{phase}_pct``，MTP 草稿全被接受时的 decode 上界 ``ds_mtp_k``，
    每块 GPU 的序列数 ``ds_seq_gpu``，prefill 的下界由什么决定 ``ds_pre_by`` （中文），以及
    部署的各项（``ds_ep_dec``、``ds_ep_pre``、``ds_ctx``、``ds_hit`` （%）、``ds_node``、
    ``ds_batch``、``ds_prompt``）。
    """
    cp, cd = prefill.config, decode.config
    dec_split, pre_split = Split(tp=1, ep=cd["ep"]), Split(tp=1, ep=cp["ep"])
    fp8 = _precisions(decode)
    seqs = Deployment(config, device, dec_split, fp8, reserve=0.0).kv_capacity_tokens()
    seqs //= cd["context"]
    st_d = StepModel(config, device, dec_split, fp8).time(
        decodes=seqs, context_sum=seqs * cd["context"]
    )
    prompts = [(cp["prompt"], cp["prompt"], True)] * (cp["batch_per_gpu"] * cp["ep"])
    st_p = StepModel(config, device, pre_split, _precisions(prefill)).time(chunks=prompts)
    bound = {
        "decode": cd["per_node"] * seqs / cd["ep"] / st_d.seconds,
        "prefill": cp["per_node"]
        * cp["batch_per_gpu"]
        * cp["prompt"]
        / st_p.seconds
        / (1 - cp["cache_hit"]),
    }
    got = {"prefill": prefill.values[0], "decode": decode.values[0]}
    return {
        **{f"ds_{ph}_k": bound[ph] / 1e3 for ph in bound},
        **{f"ds_{ph}_pub_k": got[ph] / 1e3 for ph in got},
        **{f"ds_{ph}_pct": got[ph] / bound[ph] * 100 for ph in got},
        "ds_ep_dec": cd["ep"],
        "ds_ep_pre": cp["ep"],
        "ds_ctx": cd["context"],
        "ds_seq_gpu": seqs / cd["ep"],
        "ds_hit": cp["cache_hit"] * 100,
        "ds_mtp_k": bound["decode"] * (1 + config.mtp_layers) / 1e3,
        "ds_node": cp["per_node"],
        "ds_batch": cp["batch_per_gpu"],
        "ds_prompt": cp["prompt"],
        "ds_pre_by": BOUND_WORDS[st_p.bound],
    }
