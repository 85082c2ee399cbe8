"""一个 MLA + 细粒度 MoE 模型（DeepSeek-V3）放在 roofline 上：各节所用的数、图与表。

MLA 吸收后 decode attention 的强度与它的 roofline 图，专家并行（EP）与 all-to-all 的数，
MTP 的加速比，以及公布的实测与包算出的上限。每个函数按粘贴名返回一组数（章节写
``glue(**values)``）、一张图或一张 Markdown 表；模型、设备与部署由调用者选定。

Examples
--------
吸收后全部 head 读同一行 latent 缓存：DeepSeek-V3 的 128 个 head、:math:`d_k = 512 + 64`、
:math:`d_v = 512`，每条序列一个 query 时约 128 × 1088 / 576 FLOP/byte：

>>> round(absorbed_mla_intensity(128, 1, 576, 512), 1)
241.8
>>> round(heads_to_ridge(989.4e12 / 3.35e12, 576, 512), 1)   # h n_q at the H800 BF16 ridge
156.4
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._base.validate import InvalidArgument
from ..devices.catalog import Hardware
from ..devices.ceiling import Network
from ..distributed.parallel import Split, device_ops, dispatch_copies, infer
from ..dtypes import bytes_per_element
from ..llm.inference import (
    ModelConfig,
    Precisions,
    decode_batch_to_ridge,
    kv_bytes_per_token,
    step_entries,
    step_traffic,
    weight_bytes,
)
from ..llm.layers import MLA_ABSORB_MAX_NEW, expected_experts
from ..llm.serving import mtp_speedup, speculative_tokens
from ..measure.published.rows import Measurement, Published
from ..ops import Cost, mla_attention
from ..present import plotting
from ..roofline.roofs import time_bound


def _latent(config: ModelConfig) -> int:
    """MLA 的 latent 宽 :math:`d_c`；不是 MLA 的模型给出一个说明参数的错误。"""
    if config.kv_lora_rank is None:
        raise InvalidArgument("config", f"{config.key} has no MLA latent (kv_lora_rank)")
    return config.kv_lora_rank


def _link(device: Hardware) -> float:
    """设备之间每个方向的带宽（byte/s）；目录里没有时给出一个说明参数的错误。"""
    if device.link_bandwidth is None:
        raise InvalidArgument("device", f"{device.key} has no interconnect in the catalog")
    return device.link_bandwidth


def absorbed_mla_intensity(heads: int, queries: int, d_k: int, d_v: int) -> float:
    """吸收后 MLA decode attention 的算术强度 :math:`h\\,n_q\\,(d_k + d_v)/d_k` （FLOP/byte）。

    BF16 latent 缓存（2 字节一个元素）的一行读一次，每个 head、每个 query 对它做
    :math:`2d_k` （得分）加 :math:`2d_v` （累加 value）次运算；query 与输出的字节不计，
    所以略高于包的精确值。

    Examples
    --------
    >>> absorbed_mla_intensity(16, 1, 576, 512)     # TP 8: 128 / 8 heads on one GPU
    30.22222222222222
    """
    return heads * queries * (d_k + d_v) / d_k


def heads_to_ridge(ridge: float, d_k: int, d_v: int) -> float:
    """:func:`absorbed_mla_intensity` 到达 ridge point ``ridge`` （FLOP/byte）时的 :math:`h\\,n_q`。

    Examples
    --------
    >>> heads_to_ridge(1088.0, 576, 512)
    576.0
    """
    return ridge * d_k / (d_k + d_v)


def shape_figures(config: ModelConfig, device: Hardware, context: int) -> dict[str, Any]:
    """模型的形状（``config.json``）与参数量，以及设备的 NVLink 与两种 ridge point。

    键：``ds_params``、``ds_active`` （总参数与每个 token 激活的参数，以 :math:`10^8` 计），
    ``nvlink`` （GB/s，每个方向），``ridge``、``ridge_fp8`` （BF16 与 FP8，FLOP/byte），
    ``context``，以及形状 ``layers``、``heads``、``experts``、``top_k``、``dense_layers``、
    ``d_c``、``d_r``、``d_k``、``d_v``、``hidden``、``ffn``、``dense_ffn``、``vocab``、``q_rank``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> f = shape_figures(model("deepseek-v3"), hardware("h800-sxm"), 4096)
    >>> f["d_k"], f["top_k"], f["nvlink"]      # 512 + 64; top-8; 200 GB/s each way
    (576, 8, 200.0)
    """
    c = config
    return dict(
        ds_params=c.parameters() / 1e8, ds_active=c.parameters(active=True) / 1e8,
        nvlink=_link(device) / 1e9, ridge=device.ridge_point(), ridge_fp8=device.ridge_point("fp8"),
        context=context, layers=c.layers, heads=c.heads, experts=c.experts,
        top_k=c.experts_per_token, dense_layers=c.dense_layers, d_c=_latent(c), d_r=c.rope_head_dim,
        d_k=c.kv_elements, d_v=_latent(c), hidden=c.hidden, ffn=c.ffn, dense_ffn=c.dense_ffn,
        vocab=c.vocab, q_rank=c.q_lora_rank,
    )  # fmt: skip


def mla_cache_figures(
    config: ModelConfig, gqa: ModelConfig, precisions: Precisions
) -> dict[str, Any]:
    """每个 token 的 KV cache：MLA 模型 ``config``、对照的 GQA 模型 ``gqa``，以及每个 head
    各存自己的 :math:`K`、:math:`V` 时（MHA）的 :math:`L\\,h\\,(d + d_v')\\,s_{kv}`。

    键：``kv_ds_kb``、``kv_gqa_kb`` （kB），``kv_ratio`` （GQA 对 MLA），``gqa_name``，
    ``gqa_params`` （十亿个），``kv_mha_mb`` （MB），``kv_mha_ratio`` （MHA 对 MLA）。

    Examples
    --------
    >>> from roofline_book.llm.inference import Precisions, model
    >>> f = mla_cache_figures(model("deepseek-v3"), model("llama-3-70b"), Precisions())
    >>> f["kv_ds_kb"], f["kv_gqa_kb"]     # 61 x 576 x 2 B; 2 x 80 x 8 x 128 x 2 B
    (70.272, 327.68)
    """
    mine, theirs = kv_bytes_per_token(config, precisions), kv_bytes_per_token(gqa, precisions)
    # every head its own K (d) and V (vd)
    mha = config.layers * config.heads * (config.d + config.vd) * bytes_per_element(precisions.kv)
    return dict(
        kv_ds_kb=mine / 1e3,
        kv_gqa_kb=theirs / 1e3,
        kv_ratio=theirs / mine,
        gqa_name=gqa.name,
        gqa_params=gqa.parameters() / 1e9,
        kv_mha_mb=mha / 1e6,
        kv_mha_ratio=mha / mine,
    )


def mla_figures(
    config: ModelConfig, device: Hardware, context: int, precisions: Precisions
) -> dict[str, Any]:
    """吸收后的 decode attention，每条序列 1 个与 2 个 query（batch 1）：包的强度与公式。

    键：``mla_i1``、``mla_i2`` （包的强度，FLOP/byte），``mla_f1``、``mla_f2``
    （:func:`absorbed_mla_intensity`），``mla_ridge_hq`` （:func:`heads_to_ridge`，BF16），
    ``head_d``、``head_v`` （展开后每个 head 的 key 与 value 宽），``absorb_max`` （包走吸收
    形式的最多新 token 数），``attn_b`` （全部层 MLA 的参数，以 :math:`10^8` 计）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import Precisions, model
    >>> f = mla_figures(model("deepseek-v3"), hardware("h800-sxm"), 4096, Precisions())
    >>> f["mla_i1"] < f["mla_f1"], f["mla_f2"] / f["mla_f1"]
    (True, 2.0)
    """
    c, d_k, d_v = config, config.kv_elements, _latent(config)
    package = {}
    for n_q in (1, 2):
        rows = {e.key: e for e in step_entries(c, 1, n_q, context, precisions)}
        package[n_q] = rows["attention"].cost.intensity
    return dict(
        mla_i1=package[1],
        mla_i2=package[2],
        mla_f1=absorbed_mla_intensity(c.heads, 1, d_k, d_v),
        mla_f2=absorbed_mla_intensity(c.heads, 2, d_k, d_v),
        mla_ridge_hq=heads_to_ridge(device.ridge_point(), d_k, d_v),
        head_d=c.d,
        head_v=c.vd,
        absorb_max=MLA_ABSORB_MAX_NEW,
        attn_b=c.attention_parameters() * c.layers / 1e8,
    )


def flashmla_cost(row: Published) -> Cost:
    """公布的一行 FlashMLA 测量所用形状的必需代价（:func:`roofline_book.ops.mla_attention`）。

    Examples
    --------
    >>> from roofline_book.measure import published
    >>> cost = flashmla_cost(published.row("flashmla-decode-bw-h800"))
    >>> cost.bytes_read == 2 * (128 * 8192 * 576 + 128 * 16 * 576)   # cache rows and queries
    True
    """
    shape = dict(row.config)
    dtype = shape.pop("dtype")
    b, h, sq, sk, dqk, dv = (
        shape.pop(k) for k in ("batch", "heads", "seq_q", "seq_k", "d_qk", "d_v")
    )
    return mla_attention(b, h, sq, sk, dqk, dv, dtype, **shape)


def flashmla_point(row: Published) -> tuple[float, float]:
    """公布的一行 FlashMLA 测量在 roofline 上的点：（算术强度 FLOP/byte，TFLOP/s）。

    以 GB/s 公布的一行，速率按 :math:`B\\,I` 换成 TFLOP/s。

    Examples
    --------
    >>> from roofline_book.measure import published
    >>> x, y = flashmla_point(published.row("flashmla-decode-flops-h800-v2"))
    >>> y                              # published: 660 TFLOP/s
    660.0
    """
    cost = flashmla_cost(row)
    scale = 1 if row.unit == "TFLOP/s" else cost.intensity / 1e3
    return cost.intensity, row.values[0] * scale


def flashmla_allowed(row: Published, device: Hardware) -> float:
    """``device`` 的 roofline 允许这一行 FlashMLA 形状达到的速率（FLOP/s），按 FlashMLA 的计数。

    FlashMLA 只计矩阵乘法的运算（不含 softmax），所以 FLOPs 去掉向量与特殊函数单元的部分，
    再除以同一形状在 ``device`` 上的时间下界（:func:`roofline_book.roofline.roofs.time_bound`）。
    """
    cost = flashmla_cost(row)
    matrix = cost.flops - cost.vector_flops - cost.special_flops  # FlashMLA's count: no softmax
    return matrix / time_bound(cost, device, row.config["dtype"]).seconds


def mla_roofline_figure(
    device: Hardware,
    named: Sequence[tuple[str, Cost]],
    measured: Sequence[tuple[float, float]],
    *,
    offsets: Mapping[str, tuple[float, float]],
    title: str,
    dtype: str = "bf16",
    label: str = "FlashMLA 的实测",
) -> Any:
    """MLA decode attention 的 roofline 图（返回 matplotlib Figure）。

    ``device`` 在 ``dtype`` 下的 roof；``named`` 的各个代价放在它们的上限处
    （:func:`roofline_book.present.plotting.placed`，``offsets`` 移动它们的名字）；
    ``measured`` 的实测（强度 FLOP/byte，TFLOP/s）画成叉，图例写 ``label``。
    """
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    plotting.ceilings(ax, device, dtype, intensity_range=(5, 3000))
    plotting.placed(ax, named, device, dtype, offsets=offsets)
    xs, ys = zip(*measured, strict=True)
    ax.scatter(
        xs, ys, marker="x", s=40, color=plotting.PALETTE["vermillion"], zorder=6, label=label
    )
    ax.legend(fontsize=7, loc="lower right")
    ax.set(ylim=(10, 3000), title=title)
    fig.tight_layout()
    return fig


def expert_figures(
    config: ModelConfig,
    device: Hardware,
    precisions: Precisions,
    *,
    context: int,
    per_node: int,
    prefill_ep: int,
    decode_ep: int,
    tokens: int = 32,
) -> dict[str, Any]:
    """专家并行：读权重的墙、整个 EP 组的 :math:`b^{*}`，以及两种 EP 下每块 GPU 的份额。

    DP attention（``Split(tp=1, ep=...)``）下每块 GPU 存完整的 attention、dense 层与共享
    专家，加上它那份路由专家（:func:`roofline_book.distributed.parallel.infer`）。

    键：``w1_gb`` （一个 token 一步读的字节，GB），``t_mid`` （即 ``tokens``），``e_mid``
    （``tokens`` 个 token 均匀路由时一层用到的专家数），``w_all`` （全部权重，GB），
    ``b_star`` （:func:`~roofline_book.llm.inference.decode_batch_to_ridge`），``e_over_k``，
    ``per_gpu_node``、``per_gpu_pre``、``per_gpu_dec`` （:math:`b^{*}` 除以一个节点的 GPU 数、
    prefill 与 decode 的 EP），``w_gpu_pre``、``w_gpu_dec`` （每块 GPU 的权重，GB），
    ``kv_seq_mb`` （decode 的 EP 下一条 ``context`` 长的序列在每块 GPU 上的缓存，MB），
    ``ep_pre``、``ep_dec``、``nodes_pre``、``nodes_dec``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> ds = model("deepseek-v3")
    >>> f = expert_figures(ds, hardware("h800-sxm"), ds.checkpoint, context=4096,
    ...                    per_node=8, prefill_ep=32, decode_ep=144)
    >>> f["e_over_k"], f["nodes_pre"], f["nodes_dec"]
    (32, 4, 18)
    """
    c, p = config, precisions
    b_star = decode_batch_to_ridge(c, device, p)
    units = {
        ep: infer(c, device, Split(tp=1, ep=ep), context=context, precisions=p, per_node=per_node)
        for ep in (prefill_ep, decode_ep)
    }
    return dict(
        w1_gb=step_traffic(c, 1, 1, context, p) / 1e9, t_mid=tokens,
        e_mid=expected_experts(c.experts, c.experts_per_token, tokens),
        w_all=weight_bytes(c, p) / 1e9, b_star=b_star, e_over_k=c.experts // c.experts_per_token,
        per_gpu_node=b_star / per_node, per_gpu_pre=b_star / prefill_ep,
        per_gpu_dec=b_star / decode_ep,
        w_gpu_pre=units[prefill_ep].weight_bytes_per_device / 1e9,
        w_gpu_dec=units[decode_ep].weight_bytes_per_device / 1e9,
        kv_seq_mb=units[decode_ep].kv_bytes_per_sequence_per_device / 1e6,
        ep_pre=prefill_ep, ep_dec=decode_ep,
        nodes_pre=prefill_ep // per_node, nodes_dec=decode_ep // per_node,
    )  # fmt: skip


def fp8_figures(config: ModelConfig, device: Hardware, precisions: Precisions) -> dict[str, Any]:
    """W8A8 FP8（``precisions``，带块缩放）对 BF16 与只量化权重（W8A16）。

    键：``fp8_gain`` （FP8 峰值对 BF16），``b_star_bf16``、``b_star_w8a16`` （整组的
    :math:`b^{*}`），``w_bf16`` （BF16 权重，GB），``scale_share`` （块缩放系数多出的权重
    字节比例）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> ds = model("deepseek-v3")
    >>> f = fp8_figures(ds, hardware("h800-sxm"), ds.checkpoint)
    >>> round(f["fp8_gain"], 4), round(f["b_star_bf16"] / f["b_star_w8a16"], 1)  # 1978.9 / 989.4
    (2.0001, 2.0)
    """
    bf16 = Precisions()
    w8a16 = Precisions(weights="fp8")  # FP8 weights, BF16 compute
    unscaled = weight_bytes(config, Precisions(weights="fp8", activations="fp8"))
    return dict(
        fp8_gain=device.peak_flops("fp8") / device.peak_flops("bf16"),
        b_star_bf16=decode_batch_to_ridge(config, device, bf16),
        b_star_w8a16=decode_batch_to_ridge(config, device, w8a16),
        w_bf16=weight_bytes(config, bf16) / 1e9,
        scale_share=weight_bytes(config, precisions) / unscaled - 1,
    )


def all_to_all_figures(
    config: ModelConfig,
    device: Hardware,
    nic: Network,
    precisions: Precisions,
    *,
    prefill: Mapping[str, Any],
    decode: Mapping[str, Any],
    per_gpu: int,
    dtype: str = "fp8",
) -> dict[str, Any]:
    """一个部署的 all-to-all 放到通信的 roofline 上：每一步的下界，每送出一个字节的运算。

    ``prefill`` 给出 ``ep``、``per_node``、``batch_per_gpu`` 与 ``prompt``；``decode`` 给出
    ``ep``、``per_node`` 与 ``context``，每块 GPU 带 ``per_gpu`` 条序列。切分是 DP attention
    加 EP（``Split(tp=1, ep=...)``），一步由 :func:`roofline_book.distributed.parallel.infer` 求。

    键：``nic_gbit`` （Gb/s），``i_nic``、``i_nvl`` （``dtype`` 峰值除以网卡与 NVLink 的
    带宽，FLOP/byte），``i_sent_prefill``、``i_sent_decode`` （一块 GPU 的运算除以它送出的
    字节），``dev_ms_*``、``comm_ms_*`` （GPU 上的算子与通信带宽项，ms），
    ``i_nic_only_prefill`` （只计网卡上的字节），``copies_pre``、``copies_dec``、
    ``copies_ratio`` （一个 token 经网卡送的份数，
    :func:`~roofline_book.distributed.parallel.dispatch_copies`），以及输入 ``per_gpu``、
    ``prompt_pre``、``batch_pre``、``tokens_pre``、``ctx_dec``。
    """
    c, p = config, precisions
    ep_pre, ep_dec, prompt = prefill["ep"], decode["ep"], prefill["prompt"]
    shapes = {  # phase: (sequences in the group, new tokens, context, EP)
        "prefill": (prefill["batch_per_gpu"] * ep_pre, prompt, prompt, ep_pre),
        "decode": (per_gpu * ep_dec, 1, decode["context"], ep_dec),
    }
    nodes = {"prefill": prefill["per_node"], "decode": decode["per_node"]}
    figures: dict[str, Any] = {}
    flops, sent = {}, {}
    for phase, (batch, new, ctx, ep) in shapes.items():
        split = Split(tp=1, ep=ep)
        run = infer(c, device, split, batch=batch, context=ctx, precisions=p,
                    per_node=nodes[phase], net=nic)  # fmt: skip
        step = run.prefill if phase == "prefill" else run.decode
        flops[phase] = sum(x.flops for _, x in device_ops(c, split, batch, new, ctx, p))
        sent[phase] = sum(m.nbytes * m.count for m in step.comms)
        figures[f"i_sent_{phase}"] = flops[phase] / sent[phase]
        figures[f"dev_ms_{phase}"] = step.device_s * 1e3
        figures[f"comm_ms_{phase}"] = step.communication_s * 1e3
    # a token's copies over NVLink (inside its node) and over the NIC (across nodes)
    inside, across = dispatch_copies(c, ep_pre, nodes["prefill"])
    across_dec = dispatch_copies(c, ep_dec, nodes["decode"])[1]
    return figures | dict(
        nic_gbit=nic.bandwidth * 8 / 1e9,
        i_nic=device.peak_flops(dtype) / nic.bandwidth,
        i_nvl=device.peak_flops(dtype) / _link(device),
        i_nic_only_prefill=flops["prefill"] / (sent["prefill"] * across / (inside + across)),
        copies_pre=across, copies_dec=across_dec, copies_ratio=across_dec / across,
        per_gpu=per_gpu, prompt_pre=prefill["prompt"], batch_pre=prefill["batch_per_gpu"],
        tokens_pre=prefill["batch_per_gpu"] * prefill["prompt"], ctx_dec=decode["context"],
    )  # fmt: skip


def mtp_figures(
    config: ModelConfig,
    device: Hardware,
    precisions: Precisions,
    *,
    acceptance: tuple[float, float],
    per_gpu: int,
    ep: int,
    context: int,
) -> dict[str, Any]:
    """MTP 当作草稿一个 token 的投机解码，接受率取 ``acceptance`` 的低端与高端时的加速比。

    :func:`~roofline_book.llm.serving.mtp_speedup` 把整个模型放在一块设备上：batch 取每块
    GPU 的 ``per_gpu`` 条序列（``mtp_low``、``mtp_high``），或整个 EP 组一步的
    ``per_gpu x ep`` 条（``mtp_group_low``、``mtp_group_high``）。另有 ``acc_low``、
    ``acc_high``，与一步平均产出的 token 数 ``tok_low``、``tok_high`` （:math:`1 + a`）。
    """
    out: dict[str, Any] = {}
    for end, a in zip(("low", "high"), acceptance, strict=True):
        out[f"acc_{end}"] = a
        out[f"tok_{end}"] = speculative_tokens(a, 1)
        for key, batch in ((f"mtp_{end}", per_gpu), (f"mtp_group_{end}", per_gpu * ep)):
            out[key] = mtp_speedup(config, device, batch=batch, context=context, acceptance=a,
                                   precisions=precisions)  # fmt: skip
    return out


def closest_to_roof(row: Published) -> Measurement:
    """扫描过的一行公布测量里，达到 roof 比例 ``η`` 最高的一个（:meth:`Measurement.eta`）。"""
    return max(row.measurements(), key=lambda m: m.eta())


@dataclass(frozen=True)
class NodeBounds:
    """一个节点每秒 token 数的上限（token/s），由一步的下界换成。

    ``prefill`` 是输入 token（含命中缓存、不用再算的那些），``decode`` 是输出 token；
    ``decode_batch`` 是 decode 一步整组的序列数，即显存放得下的最多条数。
    """

    prefill: float
    decode: float
    decode_batch: int


def node_token_bounds(
    config: ModelConfig,
    device: Hardware,
    precisions: Precisions,
    *,
    prefill: Mapping[str, Any],
    decode: Mapping[str, Any],
    tokens_per_step: int = 2,
) -> NodeBounds:
    """一个部署在每个节点上每秒 token 数的上限。

    ``prefill``、``decode`` 的键同 :func:`all_to_all_figures`，``prefill`` 另有 ``cache_hit``。
    prefill 一步算 ``per_node x batch_per_gpu x prompt`` 个 token，除以 ``infer`` 的 prefill
    下界；命中缓存的 token 不用算，所以再除以 ``1 - cache_hit``。decode 的 batch 取显存放得下
    的最大值，每条序列一步至多 ``tokens_per_step`` 个 token（MTP）。
    """
    c, p = config, precisions
    ep_pre, ep_dec = prefill["ep"], decode["ep"]
    pre = infer(c, device, Split(tp=1, ep=ep_pre), batch=prefill["batch_per_gpu"] * ep_pre,
                context=prefill["prompt"], precisions=p, per_node=prefill["per_node"])  # fmt: skip
    split, ctx, node = Split(tp=1, ep=ep_dec), decode["context"], decode["per_node"]
    fits = infer(c, device, split, context=ctx, precisions=p, per_node=node).max_batch or 0
    dec = infer(c, device, split, batch=fits, context=ctx, precisions=p, per_node=node).decode
    computed = prefill["per_node"] * prefill["batch_per_gpu"] * prefill["prompt"]
    return NodeBounds(
        prefill=computed / pre.prefill.seconds / (1 - prefill["cache_hit"]),
        decode=decode["per_node"] * fits / ep_dec * tokens_per_step / dec.seconds,
        decode_batch=fits,
    )


def bounds_table(
    rows: Sequence[tuple[str, float, float, str]], decimals: Mapping[str, int] | None = None
) -> Any:
    """公布的实测与包的上限并排的 Markdown 表；每行是（测的什么，公布的数，上限，单位）。

    小数位按单位取（``decimals``，默认“千 token/s”一位，其余取整）；最后一列是两者之比。

    Examples
    --------
    >>> rows = [("GEMM", 660, 989.4, "TFLOP/s"), ("decode", 14.8, 29.6, "千 token/s")]
    >>> print(bounds_table(rows).data)
    | 实测   |   公布 |   包的上限 |       单位 |   实测 / 上限 |
    |:-------|-------:|-----------:|-----------:|--------------:|
    | GEMM   |    660 |        989 |    TFLOP/s |           67% |
    | decode |   14.8 |       29.6 | 千 token/s |           50% |
    """
    import pandas as pd

    from .tables import markdown_table

    places = {"千 token/s": 1} if decimals is None else decimals
    cells = []
    for what, value, bound, unit in rows:
        n = places.get(unit, 0)
        cells.append({"实测": what, "公布": f"{value:.{n}f}", "包的上限": f"{bound:.{n}f}",
                      "单位": unit, "实测 / 上限": f"{value / bound:.0%}"})  # fmt: skip
    return markdown_table(pd.DataFrame(cells))
