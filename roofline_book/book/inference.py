"""batch 与显存一章的隐藏 cell 所用的计算：各种手段改变了哪个量，墙与 ridge point 的措辞。

Examples
--------
>>> from roofline_book import hardware
>>> from roofline_book.llm.inference import model
>>> rows = levers(model("llama-3-8b"), model("mixtral-8x7b"), hardware("h100-sxm"), 4096)
>>> [r.key for r in rows][:4]
['base', 'int4', 'w8a8', 'kv_fp8']
>>> round(rows[0].ceiling), rows[3].ceiling / rows[0].ceiling   # 3.35e12 / (4096 x 131072 B)
(6240, 2.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..devices.catalog import Hardware
from ..llm.inference import (
    ModelConfig,
    Precisions,
    StepBound,
    decode_batch_to_ridge,
    kv_bytes_per_token,
    kv_cache_bytes,
    step_floor,
    step_ops,
    step_time,
    weight_bytes,
)
from ..llm.serving import (
    MEMORY_RESERVE,
    PROFILE_SEQUENCES,
    PROFILE_TOKENS,
    activation_peak,
    max_batch,
    speculative_tokens,
)
from ..units import binary


@dataclass(frozen=True)
class Lever:
    """一种手段作用之后，decode 的五个量。

    Attributes
    ----------
    key : str
        短名（``"base"``、``"int4"``、``"w8a8"``、``"kv_fp8"``、``"mqa"``、``"moe"``、
        ``"speculative"``、``"flash_decoding"``、``"paged"``）。
    name : str
        表格第一列的中文名。
    weights : float
        权重的字节数 :math:`m_w`。
    kv : float
        每个 token 的 KV cache 字节数 :math:`m_{kv}`。
    b_star : float
        权重 GEMM 到达 ridge point 的 batch（序列条数）。
    b_max : int
        显存装得下的序列条数（vLLM 的规则，:func:`roofline_book.llm.serving.max_batch`）。
    ceiling : float
        序列之间不共用缓存时吞吐的天花板 :math:`B/(\\ell\\,m_{kv})` （token/s），投机解码再乘以
        每次验证平均产出的 token 数（草稿不计时间）。
    other_model : bool
        这一行是另一个模型（MoE 一行），不与基线比较：表里每一格都写出它自己的值。
    """

    key: str
    name: str
    weights: float
    kv: float
    b_star: float
    b_max: int
    ceiling: float
    other_model: bool = False


def levers(
    config: ModelConfig,
    moe: ModelConfig,
    device: Hardware,
    context: int,
    *,
    draft: int = 4,
    acceptance: float = 0.8,
) -> list[Lever]:
    """第 13 章对照表的各行：基线 ``config`` （BF16），以及每种手段单独作用之后。

    量化权重（W4A16 int4、W8A8 FP8）、FP8 KV cache、MQA（只留一个 KV head）作用在 ``config`` 上；
    MoE 一行是 ``moe`` 这个模型本身（BF16）；投机解码取 ``draft`` 个草稿 token、接受率
    ``acceptance``：权重 GEMM 每条序列有 ``draft + 1`` 行，所以按序列计的 :math:`b^*` 除以
    ``draft + 1``，每次读缓存平均产出 :func:`~roofline_book.llm.serving.speculative_tokens` 个
    token。Flash-Decoding 与 PagedAttention 不改变这五个量（它们让真实的 kernel 与分配够得着它们），
    两行与基线相同。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> h100 = hardware("h100-sxm")
    >>> rows = {r.key: r for r in levers(model("llama-3-8b"), model("mixtral-8x7b"), h100, 4096)}
    >>> rows["mqa"].kv / rows["base"].kv       # 1 KV head of 8
    0.125
    >>> round(rows["base"].b_star / rows["speculative"].b_star, 6)   # draft 4: 5 rows a sequence
    5.0
    >>> rows["moe"].b_max                      # 93.4 GB of BF16 weights, 85.5 GB of memory
    0
    >>> rows["moe"].other_model, rows["mqa"].other_model
    (True, False)
    """
    bf16 = Precisions()

    def row(key: str, name: str, m: ModelConfig, p: Precisions, *, rows: int = 1) -> Lever:
        per_verify = speculative_tokens(acceptance, draft) if rows > 1 else 1.0
        return Lever(
            key=key,
            name=name,
            weights=weight_bytes(m, p),
            kv=kv_bytes_per_token(m, p),
            b_star=decode_batch_to_ridge(m, device, p) / rows,
            b_max=max_batch(m, device, context, p),
            ceiling=per_verify * device.memory_bandwidth / kv_cache_bytes(m, context, p),
            other_model=m is moe,
        )

    return [
        row("base", f"基线：{config.name}，BF16", config, bf16),
        row("int4", "只量化权重：int4（W4A16）", config, Precisions(weights="int4")),
        row("w8a8", "W8A8 FP8", config, Precisions(weights="fp8", activations="fp8")),
        row("kv_fp8", "KV cache 存成 FP8", config, Precisions(kv="fp8")),
        row("mqa", "MQA：只留 1 个 KV head", replace(config, kv_heads=1), bf16),
        row("moe", f"MoE：{moe.name}", moe, bf16),
        row(
            "speculative",
            f"投机解码（γ = {draft}，a = {acceptance}）",
            config,
            bf16,
            rows=draft + 1,
        ),  # fmt: skip
        row("flash_decoding", "Flash-Decoding", config, bf16),
        row("paged", "PagedAttention", config, bf16),
    ]


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-3 * max(abs(a), abs(b))


def levers_table(rows: Sequence[Lever]) -> list[dict[str, str]]:
    """:func:`levers` 的各行写成表格的单元格。

    字节按十进制写（GB 为 :math:`10^9` 字节，kB 为 :math:`10^3` 字节）。与第一行（基线）相同的量写作
    “不变”；另一个模型的一行（``other_model``）每格都写出值，哪怕碰巧与基线相同。一条序列也放不下时
    （:math:`b_{\\max} = 0`），:math:`b_{\\max}` 一格写“放不下”。

    Examples
    --------
    >>> base = Lever("base", "基线", 16.06e9, 131072, 321.9, 139, 6240.3)
    >>> half = replace(base, key="kv_fp8", name="FP8 KV", kv=65536, b_max=279, ceiling=12480.6)
    >>> moe = Lever("moe", "MoE", 93.41e9, 131072, 1287.5, 0, 6240.3, other_model=True)
    >>> [list(r.values()) for r in levers_table([base, half, moe])]
    ... # doctest: +NORMALIZE_WHITESPACE
    [['基线', '16.06 GB', '131.1 kB', '322', '139', '6240'],
     ['FP8 KV', '不变', '65.5 kB', '不变', '279', '12481'],
     ['MoE', '93.41 GB', '131.1 kB', '1288', '放不下', '6240']]
    """
    base = rows[0]
    columns = (
        ("$m_w$", lambda r: r.weights, lambda v: f"{v / 1e9:.2f} GB"),
        ("$m_{kv}$", lambda r: r.kv, lambda v: f"{v / 1e3:.1f} kB"),
        ("$b^{*}$", lambda r: r.b_star, lambda v: f"{v:.0f}"),
        ("$b_{\\max}$", lambda r: r.b_max, lambda v: f"{v:d}" if v > 0 else "放不下"),
        ("吞吐天花板 [token/s]", lambda r: r.ceiling, lambda v: f"{v:.0f}"),
    )
    out = []
    for r in rows:
        cells = {"手段": r.name}
        for title, get, text in columns:
            value = get(r)
            shown = r is base or r.other_model or not _same(value, get(base))
            cells[title] = text(value) if shown else "不变"
        out.append(cells)
    return out


def batch_words(n: Mapping[str, Any], past: int) -> dict[str, str]:
    """batch 与显存一章随数而变的措辞：墙（:math:`b_{\\max}`）在 ridge point（:math:`b^*`）前或后。

    ``n`` 按名字给出这些数（缺一个就 ``KeyError``）：``wall3``、``bstar3`` （H100 上的 GQA 模型），
    ``wallh3``、``bstar3_h200`` （H200），``fits`` 与 ``bstar`` （按量化方案的字典，读 ``"int4"``
    与 ``"w8a8"``），``kv_fits`` （FP8 KV cache 按设备的字典，读 ``"h200"``），``mx_h100``
    （H100 上的 Mixtral），以及习题的 ``ans_q1h``、``bstar2``、``ans_q2``、``ans_q2w``、
    ``ans_q3i``、``ridge``。``past`` 是墙越过 :math:`b^*` 的 KV head 形状的个数（0 到 3，
    :func:`walls_past_ridge`）。

    Examples
    --------
    >>> n = dict(wall3=111, bstar3=321.9, wallh3=221, bstar3_h200=218.7, mx_h100=0,
    ...          fits={"int4": 131, "w8a8": 125}, bstar={"int4": 83.0, "w8a8": 321.9},
    ...          kv_fits={"h200": 442}, ans_q1h=113, bstar2=323.0, ans_q2=83.3, ans_q2w=33,
    ...          ans_q3i=238.9, ridge=295.3)
    >>> w = batch_words(n, 1)
    >>> w["h200_wall_text"], w["cross_int4"], w["mx_h100_text"], w["q3_text"]
    ('装得下的 batch 已比它多 2 条，墙越过了 ridge point', '超过了', '一条序列也放不下', '仍低于')
    """
    share = n["wallh3"] / n["bstar3_h200"]
    more = n["wallh3"] - round(n["bstar3_h200"])
    fits, bstar = n["fits"], n["bstar"]
    int4, w8a8 = fits["int4"] > bstar["int4"], fits["w8a8"] > bstar["w8a8"]
    q2 = n["ans_q2w"] < n["ans_q2"]
    q3 = n["ans_q3i"] < n["ridge"]
    return {
        "h200_wall_text": (
            f"装得下的 batch 已比它多 {more} 条，墙越过了 ridge point"
            if share >= 1
            else f"墙已到它的 {share:.0%}，与 ridge point 相当接近"
            if share >= 0.8
            else f"墙只到它的 {share:.0%}，仍在 ridge point 之前"
        ),
        "wall3_text": "而那里早已装不下"
        if n["wall3"] < n["bstar3"]
        else f"显存装得下的 {n['wall3']} 条已越过它",
        "cross_int4": "超过了" if int4 else "仍不到",
        "cross_int4_tail": "，权重 GEMM 能在装得下的 batch 上变成 compute-bound"
        if int4
        else "，权重 GEMM 在装得下的 batch 上仍是 memory-bound",
        "cross_w8a8": "也超过了" if w8a8 else "不到",
        "w8a8_tail": "" if w8a8 else "，它在峰值上的好处要到 batch 越过 ridge point 之后才显出来",
        "kv_h200_text": "后者已超过 H200 的"
        if n["kv_fits"]["h200"] > n["bstar3_h200"]
        else "后者仍不到 H200 的",
        "gqa_text": (
            "三种形状的墙都还没有越过",
            "只有 MQA 让墙越过了",
            "GQA、MQA 都让墙越过了",
            "三种形状都让墙越过了",
        )[past],  # fmt: skip
        "mx_h100_text": "一条序列也放不下" if n["mx_h100"] == 0 else f"只放得下 {n['mx_h100']} 条",
        "q1_text": "即使在 H200 上，MHA 模型的墙也还在 ridge point 之前"
        if n["ans_q1h"] < n["bstar2"]
        else "在 H200 上墙已越过 ridge point",
        "q2_text": "仍小于" if q2 else "已超过",
        "q2_tail": "MHA 的 KV cache 太大，量化权重也没能让墙越过 ridge point"
        if q2
        else "量化权重让 MHA 模型的墙也越过了 ridge point",
        "q2_l3": "int4 时墙到了 ridge point 的右侧" if int4 else "int4 时墙也还没到 ridge point",
        "q3_text": "仍低于" if q3 else "已高于",
        "q3_tail": "所以这一步仍是 memory-bound，验证多出来的位置几乎不增加时间下界"
        if q3
        else "所以这一步已是 compute-bound，验证多出来的位置要多花时间",
    }


def named(namespace: Mapping[str, Any], names: str) -> dict[str, object]:
    """``namespace`` 里 ``names`` （空格分隔）列出的值，按它们的名字给出，供 ``glue(**...)`` 粘贴。

    值是字典时，每一项按 ``名字_键`` 给出。这样一章里可见的 cell 算出的数，隐藏的 cell 只需列出名字
    （``named(globals(), "ridge fits")``）。

    Examples
    --------
    >>> named({"ridge": 295.3, "fits": {"int4": 131, "bf16": 111}, "x": 1}, "ridge fits")
    {'ridge': 295.3, 'fits_int4': 131, 'fits_bf16': 111}
    """
    values: dict[str, object] = {}
    for name in names.split():
        value = namespace[name]
        if isinstance(value, Mapping):
            values |= {f"{name}_{k}": v for k, v in value.items()}
        else:
            values[name] = value
    return values


def _attention(config: ModelConfig, batch: int, context: int, p: Precisions) -> float:
    """The arithmetic intensity of a decode step's attention, all layers together."""
    return dict(step_ops(config, batch, 1, context, p))[f"attention (x {config.layers})"].intensity


def decode_batch_figures(
    mha: ModelConfig,
    gqa: ModelConfig,
    device: Hardware,
    larger: Hardware,
    context: int,
    p: Precisions,
) -> dict[str, object]:
    """decode 的 :math:`b^*` 与显存的墙：两个模型（``mha`` 键尾为 2，``gqa`` 为 3）在 ``device``
    （``h100``）与显存更大的 ``larger`` （``h200``）上，上下文 ``context``、精度 ``p``。

    给出 ``p`` 的激活精度下的 ridge point 与每个权重的字节数 ``s_w``、近似
    ``b_approx = I* s_w / 2``、精确的 ``bstar``
    （:func:`~roofline_book.llm.inference.decode_batch_to_ridge`）、batch 1 时 attention 的算术强度
    ``attn``、``gqa`` 的头数与分组 ``g3``；显存一侧是 vLLM 的规则（可用比例 ``utilization``、做
    profile 的 token 与序列数）、两块设备的容量（GB，以及二进制单位的写法）、权重 ``w``、激活峰值
    ``act``、一条序列的 KV cache ``kv`` （GB），以及装得下的序列数 ``wall`` / ``wallh``
    （:func:`~roofline_book.llm.serving.max_batch`）。``short2`` 是 ``mha`` 的 :math:`b^*` 与墙
    之比。目录里没有两块设备的显存容量时 ``ValueError``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> v = decode_batch_figures(model("llama-2-7b"), model("llama-3-8b"), hardware("h100-sxm"),
    ...                          hardware("h200-sxm"), 4096, Precisions())
    >>> round(v["b_approx"], 1), v["g3"], round(v["kv3"], 3)   # 295.3 x 2 / 2; 4096 x 131072 B
    (295.3, 4, 0.537)
    """
    ridge, s_w = device.ridge_point(p.activations), p.weight_bytes(1)
    cap, cap_h = device.memory_capacity, larger.memory_capacity
    if cap is None or cap_h is None:
        raise ValueError("device, larger: the catalog has no memory capacity for one of them")
    values: dict[str, object] = dict(
        ridge=ridge,
        s_w=s_w,
        b_approx=ridge * s_w / 2,
        ctx=context,
        heads3=gqa.heads,
        kv_heads3=gqa.kv_heads,
        g3=gqa.heads // gqa.kv_heads,
        utilization=1 - MEMORY_RESERVE,
        profile_tokens=PROFILE_TOKENS,
        profile_seqs=PROFILE_SEQUENCES,
        cap_h100=cap / 1e9,
        cap_h200=cap_h / 1e9,
        cap_h100_mib=cap / 2**20,
        cap_h100_bin=binary(cap),
        cap_h200_bin=binary(cap_h),
        bstar3_h200=decode_batch_to_ridge(gqa, larger, p),
    )
    for tag, m in (("2", mha), ("3", gqa)):
        values |= {
            f"bstar{tag}": decode_batch_to_ridge(m, device, p),
            f"attn{tag}": _attention(m, 1, context, p),
            f"w{tag}": weight_bytes(m, p) / 1e9,
            f"act{tag}": activation_peak(m, p) / 1e9,
            f"kv{tag}": context * kv_bytes_per_token(m, p) / 1e9,
            f"wall{tag}": max_batch(m, device, context, p),
            f"wallh{tag}": max_batch(m, larger, context, p),
        }
    values["short2"] = values["bstar2"] / values["wall2"]  # type: ignore[operator]
    return values


def throughput_figures(
    config: ModelConfig, device: Hardware, context: int, p: Precisions, *, top: int
) -> dict[str, float]:
    """decode 的吞吐上限（token/s）：batch 1、显存的墙、:math:`b^*` 与扫描的最大 batch ``top`` 处。

    每步取算子逐个执行的下界（:func:`~roofline_book.llm.inference.step_time`），``tps_any_top``
    取任何实现的下界；``ceiling`` 是序列之间不共用缓存时的天花板 :math:`B/(\\ell\\,m_{kv})`，
    ``top_share`` 是 ``top`` 处达到它的比例；``attn_share`` 是墙处一步里 attention 的占比；
    ``kv_us`` 与 ``rest_us`` 是 ``top`` 处每个 token 花在读缓存与其余算子上的 µs。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> h100, p = hardware("h100-sxm"), Precisions()
    >>> v = throughput_figures(model("llama-3-8b"), h100, 4096, p, top=1024)
    >>> round(v["ceiling"]), v["top_batch"], v["tps_top"] < v["ceiling"]   # 3.35 TB/s / 537 MB
    (6240, 1024, True)
    """
    attn = f"attention (x {config.layers})"
    wall, bstar = max_batch(config, device, context, p), decode_batch_to_ridge(config, device, p)

    def step(batch: int) -> StepBound:
        return step_time(step_ops(config, batch, 1, context, p), device, p)

    at_wall, last = step(wall), step(top)
    ceiling = device.memory_bandwidth / (context * kv_bytes_per_token(config, p))
    tps_top = top / last.seconds
    return dict(
        tps1=1 / step(1).seconds,
        tps_wall=wall / at_wall.seconds,
        tps_star=round(bstar) / step(round(bstar)).seconds,
        ceiling=ceiling,
        attn_share=at_wall.by_op[attn] / at_wall.seconds,
        tps_top=tps_top,
        top_share=tps_top / ceiling,
        top_batch=top,
        kv_us=last.by_op[attn] / top * 1e6,
        rest_us=(last.seconds - last.by_op[attn]) / top * 1e6,
        tps_any_top=top / step_floor(config, top, 1, context, device, p).seconds,
    )


def published_throughput(row: str, **swept: Any) -> dict[str, object]:
    """一个已发表的吞吐测量（行 ``row``，扫描字段取 ``swept``）：token/s、达到的 roof 比例、出处，
    以及它的 batch、prompt 与输出长度（``batch_prompt_generated``）。

    Examples
    --------
    >>> row = "trtllm-throughput-h100-fp8"
    >>> v = published_throughput(row, batch_prompt_generated=(80, 2048, 128))
    >>> v["trt_tps"], v["trt_batch"], v["trt_prompt"], v["trt_out"]   # Llama-2-7B, FP8
    (2244.0, 80, 2048, 128)
    """
    from ..measure.published import measurement
    from .measured import source_link

    m = measurement(row, **swept)
    batch, prompt, out = m.config["batch_prompt_generated"]
    return dict(
        trt_tps=m.value,
        trt_eta=m.eta(),
        trt_source=source_link(m),
        trt_batch=batch,
        trt_prompt=prompt,
        trt_out=out,
    )


def walls_past_ridge(
    shapes: Mapping[int, ModelConfig], fits: Mapping[int, int], device: Hardware, p: Precisions
) -> int:
    """``shapes`` （按 KV head 数）里有几种形状，装得下的序列数 ``fits`` 超过了它的 :math:`b^*`。

    Examples
    --------
    >>> from dataclasses import replace
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> shapes = {n: replace(model("llama-3-8b"), kv_heads=n) for n in (8, 1)}
    >>> walls_past_ridge(shapes, {8: 111, 1: 400}, hardware("h100-sxm"), Precisions())   # b* ~ 322
    1
    """
    return sum(fits[n] > decode_batch_to_ridge(m, device, p) for n, m in shapes.items())
