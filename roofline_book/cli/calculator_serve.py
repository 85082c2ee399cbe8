"""计算器页面的 serving 表单：``serve --json`` 的结果排成中文表格，以及图要的数
（Pareto 曲线、时间线）。

表格中的每个数字与 ``roofline-book serve`` 的文本输出写法相同（同一个
:func:`~roofline_book.units.si`，同样的千分位与小数位），标签说明它是下界、上界还是估计，
与命令行一样。图要的数不在命令的 JSON 里：:func:`figures` 用同一串参数（命令行的 parser 读它）
建起同一个部署与负载，再模拟一串到达率（:func:`roofline_book.serving.search.pareto`）与前几步的
时间线。
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..serving.search import Load, pareto
from ..serving.simulate import simulate
from ..serving.workload import Lengths
from ..units import si

#: Pareto 曲线每个到达率至多模拟的请求数（表单的 ``--requests`` 更少时取它）。
CURVE_REQUESTS = 1000
#: 时间线至多记下的步数，与它画出的请求数。
TIMELINE_STEPS = 300
TIMELINE_ROWS = 16

_SCHEDULER_ZH = {
    "static": "static batching",
    "continuous": "continuous batching，整条 prompt 一步做完",
    "chunked": "continuous batching，chunked prefill，每步 {chunk} 个 token 的预算",
    "disaggregated": "prefill/decode 分离：{prefill} 个 prefill 副本 + {decode} 个 decode 副本",
}


def _label(kind: str, lower: bool) -> str:
    """下界、上界或估计：与命令行的 lower bound / upper bound / estimate 一致。"""
    if kind == "bound":
        return "下界" if lower else "上界"
    return "估计，括号内为下界" if lower else "估计"


def _slo(result: Mapping[str, Any]) -> str:
    parts = []
    if result["slo_ttft_s"] is not None:
        parts.append(f"TTFT ≤ {si(result['slo_ttft_s'], 's')}")
    if result["slo_tpot_s"] is not None:
        parts.append(f"TPOT ≤ {si(result['slo_tpot_s'], 's')}")
    return "、".join(parts)


def _settings(r: Mapping[str, Any]) -> dict[str, Any]:
    where = f"{r['devices']} × {r['device']}" if r["devices"] > 1 else r["device"]
    split = (
        f"每个副本 TP {r['tp']}、PP {r['pp']}、EP {r['ep']}"
        if r["devices"] > r["replicas"]
        else "每个副本一块设备"
    )
    sched = _SCHEDULER_ZH[r["scheduler"]].format(
        chunk=r["chunk"],
        prefill=r["prefill_replicas"],
        decode=r["replicas"] - r["prefill_replicas"],
    )
    if r["rate_per_s"] is None:
        rate = "全部在时刻 0 到达" if r["run"] is not None else "到达率待搜索"
    else:
        rate = f"每秒 {r['rate_per_s']:g} 个"
    hit = f"，prefix cache 命中 {r['prefix_hit']:.0%}" if r["prefix_hit"] else ""
    if r["kind"] == "bound":
        steps = "每一步取它那个 batch 的下界：延迟都是下界，吞吐都是上界"
    else:
        steps = (
            f"估计：计算取下界的 {r['efficiency_compute']:.0%}、内存取 "
            f"{r['efficiency_memory']:.0%}（{r['efficiency_source']}）；括号内为下界"
        )
    rows = [
        ["模型", r["model"]],
        ["设备", f"{where}：{r['replicas']} 个副本，{split}"],
        ["调度", sched],
        [
            "KV cache",
            f"每个副本 {r['kv_cache_tokens']:,} 个 token（vLLM 的规则，16 个 token 一个 block）",
        ],
        [
            "请求",
            f"{r['requests']:,} 个，{r['arrivals']} 到达，{rate}；prompt {r['prompt']}，"
            f"输出 {r['output']}{hit}",
        ],
        ["每一步", steps],
    ]
    return {"title": f"{r['model']} 的服务", "header": ["项目", "数值"], "rows": rows}


def _latencies(top: Mapping[str, Any], bound: Mapping[str, Any] | None) -> dict[str, Any]:
    label = _label(top["kind"], lower=True)
    rows = []
    for name, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("端到端延迟", "e2e_s")):
        s = top[key]
        b = None if bound is None else bound[key]
        if s is None:
            continue
        cells = [
            si(s[q], "s") + ("" if b is None else f" ({si(b[q], 's')})")
            for q in ("p50", "p90", "p99")
        ]
        rows.append([f"{name}（{label}）", *cells])
    return {"title": f"延迟（{label}）", "header": ["", "p50", "p90", "p99"], "rows": rows}


def _figures(r: Mapping[str, Any], s: Mapping[str, Any], b: Mapping[str, Any] | None) -> dict:
    upper = _label(s["kind"], lower=False)

    def both(x: float, y: float | None, unit: str) -> str:
        text = f"{x:,.2f} {unit}"
        return text if y is None else f"{text} (bound {y:,.2f})"

    rows = [
        [
            f"吞吐（{upper}）",
            both(s["requests_per_s"], None if b is None else b["requests_per_s"], "requests/s"),
        ],
        [
            f"输出 token 的吞吐（{upper}）",
            both(
                s["output_tokens_per_s"],
                None if b is None else b["output_tokens_per_s"],
                "tokens/s",
            ),
        ],
    ]
    if s["goodput_per_s"] is not None:
        met = "达到" if s["slo_met"] else "没有达到"
        rows.append(
            [
                f"goodput（{upper}）",
                f"{s['goodput_per_s']:,.2f} requests/s 满足 {_slo(r)}（占请求的 "
                f"{s['slo_attainment']:.0%}），{met}要求的 {r['slo_percentile']:g}%",
            ]
        )
    rows += [
        ["平均 batch", f"每步 {s['mean_batch']:,.1f} 条序列"],
        ["memory-bound 的步", f"{s['memory_bound_share']:.0%}（共 {s['steps']:,} 步）"],
        ["抢占", f"{s['preemptions']:,}"],
    ]
    return {"title": "吞吐与 goodput", "header": ["项目", "数值"], "rows": rows}


def _rates(r: Mapping[str, Any]) -> dict[str, Any] | None:
    entries = ([r["max_rate"]] if r["max_rate"] else []) + list(r["compare"])
    if not entries:
        return None
    upper = _label(r["kind"], lower=False)
    rows = []
    for e in entries:
        name = (
            f"分离（{e['prefill_replicas']} 个 prefill 副本）"
            if e["scheduler"] == "disaggregated"
            else e["scheduler"]
        )
        rows.append(
            [
                f"{name}：满足 SLO 的最高到达率（{upper}）",
                f"{e['max_rate_per_s']:,.2f} requests/s",
            ]
        )
        rows.append(
            [f"{name}：全部同时到达时", f"{e['saturation_requests_per_s']:,.2f} requests/s"]
        )
    return {
        "title": f"{r['slo_percentile']:g}% 的请求满足 {_slo(r)} 的最高到达率",
        "header": ["项目", "数值"],
        "rows": rows,
    }


def tables(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``serve --json`` 的结果排成中文表格：设置、延迟的百分位、吞吐与 goodput（及最高到达率）。

    延迟的单元格与命令行文本输出的写法相同（``18.56 ms``，有估计时 ``估计 (下界)``），
    吞吐写成 ``3,492.15 tokens/s``。
    """
    s = result["run"] or result
    top = {**s, "kind": result["kind"]}
    b = result["bound"]
    found = [_settings(result), _latencies(top, b), _figures(result, top, b)]
    rates = _rates(result)
    return found + ([rates] if rates else [])


def timeline_steps(records: Sequence[Any], rows: int = TIMELINE_ROWS) -> list[dict[str, Any]]:
    """时间线上画的步：记下的各步中，前 ``rows`` 个请求（按到达的顺序）各自的那一份。

    其余请求在同一步里的 token 不画（页面的图题说明只画了前 ``rows`` 个）；最后一个画出的请求
    离开之后的步也不画。

    Parameters
    ----------
    records : sequence of StepRecord
        :func:`roofline_book.serving.simulate.simulate` 的 ``timeline``。

    Returns
    -------
    list of dict
        ``{"engine", "start", "end" (秒), "bound", "items": [[请求序号, "prefill" 或 "decode",
        token 数], ...]}``。
    """
    steps: list[dict[str, Any]] = []
    for rec in records:
        items = [list(item) for item in rec.items if item[0] < rows]
        steps.append(
            {
                "engine": rec.engine,
                "start": rec.start,
                "end": rec.end,
                "bound": rec.bound,
                "items": items,
            }
        )
    while steps and not steps[-1]["items"]:
        steps.pop()
    return steps


def figures(argv: Sequence[str]) -> dict[str, Any]:
    """``serve ARGV`` 的部署与负载下，图要的数：Pareto 曲线的点与前几步的时间线。

    ``ARGV`` 由命令行的 parser 读，所以模型、设备、调度与负载都与命令相同；有 ``--efficiency``
    时各步取估计，与命令的结果一样。Pareto 曲线的每个到达率模拟至多 :data:`CURVE_REQUESTS`
    个请求（``--requests`` 更少时取它）。

    Returns
    -------
    dict
        ``pareto`` （:func:`~roofline_book.serving.search.pareto` 的点）、``curve_requests``、
        ``timeline`` （:func:`timeline_steps`；没有 ``--rate`` 时为空）、``timeline_others``
        （这些步里是否还有没画出的请求）与 ``kind``
        （``bound`` 或 ``estimate``）。

    Examples
    --------
    >>> got = figures(["serve", "--model", "llama-3-8b", "--rate", "20", "--requests", "100"])
    >>> len(got["pareto"]), got["curve_requests"], got["kind"]
    (10, 100, 'bound')
    >>> first = got["timeline"][0]
    >>> first["items"], first["bound"]  # request 0 arrives alone: its 1000-token prompt
    ([[0, 'prefill', 1000]], 'compute')
    """
    from . import build_parser, serve

    args = build_parser().parse_args(list(argv))
    d = serve._deployment(args)
    efficiency, _ = serve._efficiency(args.efficiency, d.device)
    estimate = replace(d, efficiency=efficiency) if efficiency else d
    prompt = Lengths.parse("prompt", args.prompt)
    output = Lengths.parse("output", args.output)

    def load(n: int) -> Load:
        return Load(n, prompt, output, arrivals=args.arrivals, seed=args.seed)

    few = min(args.requests, CURVE_REQUESTS)
    steps: list[dict[str, Any]] = []
    others = False
    if args.rate is not None:
        rate = args.rate
        run = simulate(estimate, load(args.requests).at(rate), timeline=TIMELINE_STEPS)
        steps = timeline_steps(run.timeline)
        others = any(
            i >= TIMELINE_ROWS for rec in run.timeline[: len(steps)] for i, _, _ in rec.items
        )
    return {
        "kind": "estimate" if efficiency else "bound",
        "pareto": pareto(estimate, load(few)),
        "curve_requests": few,
        "timeline": steps,
        "timeline_others": others,
        "rate_per_s": None if args.rate is None or math.isinf(args.rate) else args.rate,
    }
