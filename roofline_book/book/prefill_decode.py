"""prefill 与 decode 一章的隐藏 cell 所用的计算：两个阶段的对照、KV cache、一步的下界与发表的测量。

每个返回字典的函数，键就是正文读取的粘贴名，cell 只需 ``glue(**values)``。时间按名字里的单位给出
（``_ms`` 为毫秒、``_us`` 为微秒），容量按 GB（:math:`10^9` 字节），算术强度按 FLOP/byte。

Examples
--------
>>> kv_figures({"l2": 524288, "l3": 131072}, 4096)["kv_ratio"]   # 32 KV heads against 8
4.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..devices.catalog import Hardware
from ..llm.inference import ModelConfig, Precisions, layer_ops, linear, models
from ..measure.published.rows import Measurement
from ..ops import Cost
from ..present.tables import Row
from .rows import share
from .tables import bound_frame, markdown_table


def sweep_words(figures: Mapping[str, float | int | bool], flat_limit: int) -> dict[str, object]:
    """构建机器上权重流式扫描（:meth:`StreamingSweep.figures`）的数与措辞，键带 ``cpu_`` 前缀。

    措辞跟着数走：平坦段平不平（``flat``）、高出模型多少（``flat_over_model`` 超过 1.2 时说交点因
    此右移）、预测的交点是否落在实测的离散范围内（``within``）。

    Examples
    --------
    >>> fig = {"flat": False, "flat_batch": 16, "flat_spread": 4.1, "flat_over_model": 3.0,
    ...        "within": True, "rise": 4.4, "predicted": 15.3}
    >>> words = sweep_words(fig, 4)
    >>> words["cpu_within"], words["cpu_flat_limit"], words["cpu_predicted"]
    ('落在', 4, 15.3)
    >>> words["cpu_flat_text"]
    '这台机器上它并不平：batch 不超过 16 的各点里，最慢的是最快的 4.1 倍'
    """
    flat, batch, spread = figures["flat"], figures["flat_batch"], figures["flat_spread"]
    rise = figures["rise"]
    flat_text = (
        f"batch 不超过 {batch} 的各点基本持平（最慢的是最快的 {spread:.2f} 倍），之后上升"
        if flat
        else f"这台机器上它并不平：batch 不超过 {batch} 的各点里，最慢的是最快的 {spread:.1f} 倍"
    )
    shape = (
        "先平、后升的形状与模型一致，它正是 decode 要靠 batch 才能用上算力的原因"
        if flat
        else "小 batch 处并不平，这一段不能支持“每次调用只是读一遍权重”的说法；能确认的只是 batch "
        f"增大后时间最终按每行大致恒定的代价增长（最大的 batch 是拟合平坦段的 {rise:.1f} 倍）"
    )
    cause = (
        "平坦段高出按带宽算的下界，交点也随之右移"
        if figures["flat_over_model"] > 1.2
        else "平坦段与按带宽算的下界相差不大"
    )
    numbers = {f"cpu_{k}": v for k, v in figures.items() if not isinstance(v, bool)}
    return numbers | {
        "cpu_flat_limit": flat_limit,
        "cpu_within": "落在" if figures["within"] else "不在",
        "cpu_flat_text": flat_text,
        "cpu_flat_cause": cause,
        "cpu_shape": shape,
    }


def _weighted(rows: Sequence[Row], names: Sequence[str]) -> list[float]:
    """The intensities of the rows whose name contains one of ``names`` (the weight GEMMs)."""
    return [r.cost.intensity for r in rows if any(w in r.name for w in names)]


def phase_figures(
    prefill: Sequence[Row],
    decode: Sequence[Row],
    device: Hardware,
    config: ModelConfig,
    prompt: int,
    weights: Sequence[str],
) -> dict[str, object]:
    """一层的 prefill 与 decode 两张 :func:`~roofline_book.present.tables.cost_table` 的对照。

    ``tbl-11-phases`` 是两张表叠成的 Markdown 表；``pre_i`` 是 prefill 里乘权重的 GEMM（名字含
    ``weights`` 之一）最低的算术强度，``dec_i`` 与 ``dec_w_i`` 是 decode 里全部算子与乘权重的 GEMM
    最高的；``pre_us``、``dec_us`` 是各自的时间下界之和（µs）；``pre_share`` 是 prefill 的下界里
    乘权重的 GEMM 的占比，``dec_mem_share`` 是 decode 里受内存限制的占比；``up_i`` 是只算 up 投影
    （``prompt x hidden`` 乘 ``hidden x ffn``，BF16）的算术强度。

    Examples
    --------
    >>> from roofline_book import cost_table, hardware
    >>> from roofline_book.llm.inference import Precisions, layer_ops, model
    >>> m, h100, p = model("llama-2-7b"), hardware("h100-sxm"), Precisions()
    >>> pre, dec = (cost_table(layer_ops(m, 1, n, 4096, p), h100) for n in (4096, 1))
    >>> v = phase_figures(pre, dec, h100, m, 4096, ("projection", "MLP up", "MLP down"))
    >>> round(v["up_i"])   # 2 x 4096 x 4096 x 11008 / (2 x 4096 x (4096 + 2 x 11008))
    1727
    """
    import pandas as pd

    phases = pd.concat(
        {"prefill": bound_frame(prefill), "decode": bound_frame(decode)}, names=["阶段"]
    )
    return {
        "tbl-11-phases": markdown_table(phases),
        "pre_i": min(_weighted(prefill, weights)),
        "dec_i": max(r.cost.intensity for r in decode),
        "pre_us": sum(r.time.seconds for r in prefill) * 1e6,
        "dec_us": sum(r.time.seconds for r in decode) * 1e6,
        "pre_share": share(prefill, contains=weights),
        "ridge": device.ridge_point(),
        "h100_peak_tflops": device.peak_flops("bf16") / 1e12,
        "prompt": prompt,
        "h100_bw_tbps": device.memory_bandwidth / 1e12,
        "dec_mem_share": share(decode, bound="memory"),
        "dec_w_i": max(_weighted(decode, weights)),
        "pre_gateup_i": next(r.cost.intensity for r in prefill if r.name.startswith("MLP up")),
        "up_i": linear(prompt, config.hidden, config.ffn, Precisions()).intensity,
    }


def kv_figures(kv: Mapping[str, float], prompt: int) -> dict[str, float]:
    """每个 token 的 KV cache（``kv``，按模型的短名，字节）换成 kB（``kv_名_kb``）、一条 ``prompt``
    长的序列的 GB（``seq_名``），以及前两个模型之比 ``kv_ratio``。

    Examples
    --------
    >>> kv_figures({"l2": 524288, "l3": 131072}, 4096)   # MHA 32 heads against GQA 8
    ... # doctest: +NORMALIZE_WHITESPACE
    {'kv_l2_kb': 524.288, 'kv_l3_kb': 131.072, 'seq_l2': 2.147483648, 'seq_l3': 0.536870912,
     'kv_ratio': 4.0}
    """
    first, second = list(kv.values())[:2]
    return (
        {f"kv_{t}_kb": v / 1e3 for t, v in kv.items()}
        | {f"seq_{t}": prompt * v / 1e9 for t, v in kv.items()}
        | {"kv_ratio": first / second}
    )


def window_figures(
    window_gb: Mapping[str, float],
    full_gb: Mapping[str, float],
    windowed: ModelConfig,
    mixed: ModelConfig,
    context: int,
) -> dict[str, object]:
    """滑动窗口的缓存（``win_名``）与全 attention 的缓存（``full_名``，GB），上下文 ``context``、
    ``windowed`` 的窗口 ``window``，以及 ``mixed`` 里局部层的个数与总层数。

    Examples
    --------
    >>> from roofline_book.llm.inference import model
    >>> v = window_figures({"m": 0.5}, {"m": 1.1}, model("mistral-7b"), model("gemma-2-9b"), 8192)
    >>> v["win_m"], v["window"], v["gemma_local"], v["gemma_layers"]   # 4096 window; 21 of 42 local
    (0.5, 4096, 21, 42)
    """
    return (
        {f"win_{t}": v for t, v in window_gb.items()}
        | {f"full_{t}": v for t, v in full_gb.items()}
        | dict(
            long=context,
            gemma_local=mixed.local_layers,
            gemma_layers=mixed.layers,
            window=windowed.sliding_window,
        )
    )


def group_figures(ops: Mapping[str, Cost], context: int, p: Precisions) -> dict[str, float]:
    """decode 一层的 attention 与 QKV 投影的算术强度（``ops`` 是 :func:`layer_ops` 的结果）。

    另给出模型目录里查询头与 KV 头之比 ``g`` 最大的模型（``g_max``）在 batch 1、上下文 ``context``
    时 attention 的算术强度 ``attn_i_max``：decode 的 attention 每读一个 KV 字节约做 ``g`` 次运算。

    Examples
    --------
    >>> from roofline_book.llm.inference import layer_ops, model
    >>> ops = dict(layer_ops(model("llama-3-8b"), 1, 1, 4096, Precisions()))
    >>> v = group_figures(ops, 4096, Precisions())
    >>> v["g_max"], round(v["attn_i_max"] / v["attn_i"], 1)   # 64 query heads over 4 KV heads
    (16, 4.0)
    """
    groups = {m.heads // m.kv_heads: m for m in models().values()}
    widest = groups[max(groups)]
    return dict(
        attn_i=ops["attention"].intensity,
        qkv_i=ops["QKV projection"].intensity,
        g_max=max(groups),
        attn_i_max={o.name: o.cost for o in layer_ops(widest, 1, 1, context, p)}[
            "attention"
        ].intensity,
    )


def device_step_figures(
    ms: Mapping[str, float], any_ms: Mapping[str, float], gain: Mapping[str, float]
) -> dict[str, object]:
    """一步的时间下界（ms，键为 ``阶段_模型_设备``）在两块设备上的对照与措辞。

    ``ms`` 是算子逐个执行的下界，``any_ms`` 是任何实现的下界（键加 ``any_`` 前缀），``gain`` 是
    H100 SXM 上的时间除以 H200 SXM 上的（``prefill``、``decode``），以及两者的带宽之比
    ``bandwidth`` 与峰值之比 ``peak`` （键加 ``gain_`` 前缀）。另给出 Llama-2-7B 在 H100 SXM 上
    decode 每秒的 token 数 ``tps_l2``、prefill 里融合能省下的比例 ``fused_share``，以及随数而变的
    三句措辞（峰值是否相同、decode 之比是否就是带宽之比）。

    Examples
    --------
    >>> ms = {"prefill_l2_h100": 10.0, "decode_l2_h100": 4.0}
    >>> gain = {"prefill": 1.01, "decode": 1.40, "bandwidth": 4.8 / 3.35, "peak": 1.0}
    >>> v = device_step_figures(ms, {"prefill_l2_h100": 9.5, "decode_l2_h100": 4.0}, gain)
    >>> v["tps_l2"], round(v["fused_share"], 3), v["peak_phrase"], v["decode_phrase"]
    (250.0, 0.05, '与 H100 SXM 相同', '几乎相同')
    """
    same_peak = abs(gain["peak"] - 1) < 1e-6
    return (
        dict(ms)
        | {f"any_{k}": v for k, v in any_ms.items()}
        | {f"gain_{k}": v for k, v in gain.items()}
        | dict(
            tps_l2=1e3 / ms["decode_l2_h100"],
            fused_share=1 - any_ms["prefill_l2_h100"] / ms["prefill_l2_h100"],
            peak_phrase="与 H100 SXM 相同"
            if same_peak
            else f"是 H100 SXM 的 {gain['peak']:.2f} 倍",
            decode_phrase="完全相同"
            if abs(gain["decode"] / gain["bandwidth"] - 1) < 1e-3
            else "几乎相同",
            prefill_phrase="省下的只是 norm、residual add 这些 memory-bound 小算子的时间"
            if same_peak
            else "其中既有峰值之差，也有 norm、residual add 这些 memory-bound 小算子省下的时间",
        )
    )


def decode_estimates(
    configs: Mapping[str, ModelConfig],
    weights: Mapping[str, float],
    kv: Mapping[str, float],
    prompt: int,
    device: Hardware,
) -> dict[str, float]:
    """手算的 decode 一步（ms）：读一遍权重与 ``prompt`` 个 token 的 KV cache，除以 ``device`` 的
    带宽（``est_名``）；以及读一遍 BF16 的 embedding 表（``vocab x hidden x 2`` 字节）的时间
    （``emb_名``）。

    ``weights`` 与 ``kv`` 是各模型权重的字节数与每个 token 的 KV 字节数，键与 ``configs`` 相同。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> v = decode_estimates({"l3": model("llama-3-8b")}, {"l3": 16.06e9}, {"l3": 131072}, 4096,
    ...                      hardware("h100-sxm"))
    >>> round(v["est_l3"], 2), round(v["emb_l3"], 3)   # (16.06 + 0.54) GB; 128256 x 4096 x 2 B
    (4.95, 0.314)
    """
    bw = device.memory_bandwidth
    return {f"est_{t}": (weights[t] + prompt * kv[t]) / bw * 1e3 for t in configs} | {
        f"emb_{t}": m.vocab * m.hidden * 2 / bw * 1e3 for t, m in configs.items()
    }


def per_token_figures(
    per_token: Mapping[str, float], device: Hardware, other: Hardware
) -> dict[str, object]:
    """decode 与 prefill 每个 token 的时间之比（``pt_设备``），对照 ridge point 的措辞。

    ``pt_phrase`` 说 ``device`` 上的比值离它的 ridge point 多远（不到 10% 时“只差”，否则
    “同一量级”），
    ``ridge2`` 是 ``other`` 的 ridge point。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> v = per_token_figures({"pt_h100": 280.0}, hardware("h100-sxm"), hardware("h200-sxm"))
    >>> v["pt_phrase"], round(v["ridge2"], 1)   # 280 / 295.3 - 1 = -5.2%; 989.4 / 4.8
    ('只差 5.2%', 206.1)
    """
    gap = abs(per_token[f"pt_{device.key[:4]}"] / device.ridge_point() - 1)
    return dict(per_token) | dict(
        ridge2=other.ridge_point(),
        pt_phrase=f"只差 {gap:.1%}" if gap < 0.1 else f"在同一量级（相差 {gap:.0%}）",
    )


def published_decode_figures(
    decode: Sequence[Measurement], ttft: Measurement, copy: Measurement, device: Hardware
) -> dict[str, object]:
    """已发表的 decode 吞吐（``decode``：BF16、8 位、4 位权重，token/s）、首 token 延迟（``ttft``，
    ms）与同一块 GPU 上的 STREAM copy：各自达到的 roof 比例、出处链接，以及两者每个 token 的时间。

    ``pub_dec_ms`` 是 BF16 decode 一个 token 的 ms，``pub_pre_us`` 是 prefill 一个 token 的 µs
    （首 token 延迟除以 prompt 长度），``pub_ratio`` 是两者之比；``a100_ridge`` 是 ``device`` 的
    ridge point。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.measure import published
    >>> v = published_decode_figures(published.row("gptfast-llama2-7b").measurements(),
    ...     published.measurement("trtllm-ttft-a100-fp16", prompt=2048),
    ...     published.measurement("stream-a100", kernel="copy"), hardware("a100-sxm"))
    >>> round(v["pub_dec_ms"] * v["gf_tps"], 6), v["ttft_prompt"]   # 1000 ms / (token/s)
    (1000.0, 2048)
    """
    from .measured import source_link

    first = decode[0]
    dec_ms, pre_us = 1e3 / first.value, ttft.value * 1e3 / ttft.config["prompt"]
    return dict(
        gf_eta=first.eta(),
        gf_tps=first.value,
        copy_eta=copy.eta(),
        gf_of_copy=first.eta() / copy.eta(),
        gf8_eta=decode[1].eta(),
        gf4_eta=decode[2].eta(),
        ttft_ms=ttft.value,
        ttft_eta=ttft.eta(),
        ttft_prompt=ttft.config["prompt"],
        pub_dec_ms=dec_ms,
        pub_pre_us=pre_us,
        pub_ratio=dec_ms * 1e3 / pre_us,
        a100_ridge=device.ridge_point(),
        gf_source=source_link(first),
        ttft_source=source_link(ttft),
        copy_source=source_link(copy),
    )


def l2_note(device: Hardware) -> str:
    """prefill 与 decode 算子图的图注里说明 L2 的一句；目录没有 ``device`` 的 L2 带宽时为空。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> l2_note(hardware("h100-sxm"))[:11], l2_note(hardware("h200-sxm"))
    ('灰色虚线是 L2 带宽', '')
    """
    if device.bandwidth("l2") is None:
        return ""
    return (
        "灰色虚线是 L2 带宽；空心圈是算子在 L2 这一级的位置，这些算子没有 L2 重读，"
        "空心圈与实心点重合。"
    )
