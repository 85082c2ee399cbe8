"""一个 decoder block 的 roofline 全景所用的数：逐项账目的摘要，attention 的三种写法，
常用的 FLOPs 估算公式，optimizer 与 attention 反向的对照，以及 attention 流量随序列长度的图。

每个函数返回一个字典（键即页面的粘贴名，带 ``prefix`` 参数的加上这个前缀）或一张图；章节里
隐藏的 cell 选好模型、设备与形状，调用这里，再粘贴结果。attention 都是 batch 1 的自注意力
（``seq_q = seq_k``），除非另有参数。
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..devices.catalog import Hardware
from ..devices.kernels import device_sram_bytes
from ..dtypes import bytes_per_element
from ..llm.block import Block
from ..ops import Cost, adamw, attention
from ..ops.tiles import FlashTile, fa3_tile
from ..present import plotting
from ..present.tables import Row
from ..roofline.roofs import time_bound
from .rows import share
from .tables import bound_zh

#: attention 的三种写法，按本书讲的顺序；block 中受 HBM 限制的小算子（行名中的片段）。
IMPLS, SMALL_OPS = ("eager", "materialized", "flash"), ("norm", "RoPE", "add", "SwiGLU")


def _prefixed(prefix: str, values: dict[str, Any]) -> dict[str, Any]:
    return {prefix + k: v for k, v in values.items()}


def block_summary(
    rows: Sequence[Row], *, gemm: str = "projection", small: Sequence[str] = SMALL_OPS
) -> dict[str, Any]:
    """:func:`roofline_book.block_table` 一张表的要点：投影 GEMM、小算子与 attention 各占多少。

    ``gemm`` 与 ``small`` 是投影 GEMM 与小算子各行的名称片段；attention 一行的名称以
    ``"attention ("`` 开头，RoPE 一行含 ``"RoPE"``。占比都是在全表时间下界之和中的比例。

    Returns
    -------
    dict
        ``fa_<资源>_us`` （attention 一行每种资源所需的 µs）、``fa_bound``、``flash_attn_share``、
        ``flash_attn_I`` （FLOP/byte）、``fa_kv_mib`` （一个 head 的 K、V）、``fa_reread_gb``；
        ``gemm_share``、``min_gemm_I``；``small_share``、``min_mem_ratio`` （小算子的
        :math:`T_{\\text{memory}}/T_{\\text{compute}}` 的最小值）；``rope_mb``、``rope_us``、
        ``rope_share``。

    Examples
    --------
    >>> from roofline_book import LLAMA2_7B, block_table, hardware
    >>> s = block_summary(block_table(LLAMA2_7B, hardware("h100-sxm")))
    >>> s["fa_kv_mib"], s["rope_mb"]  # 2 x 4096 x 128 x 2 B; 4 x 4096^2 x 2 + 2 x 4096 x 128 x 2 B
    (2.0, 136.31488)
    """
    fa = next((r for r in rows if r.name.startswith("attention (")), None)
    rope_row = next((r for r in rows if "RoPE" in r.name), None)
    if fa is None or rope_row is None:
        raise ValueError(f"rows need an attention and a RoPE row; got {[r.name for r in rows]}")
    small_rows = [r for r in rows if any(k in r.name for k in small)]
    return {
        **{f"fa_{r}_us": s * 1e6 for r, s in fa.time.by_resource.items()},
        "fa_bound": bound_zh(fa.resource), "gemm_share": share(rows, contains=[gemm]),
        "rope_mb": rope_row.cost.bytes / 1e6, "rope_us": rope_row.time.seconds * 1e6,
        "rope_share": rope_row.share, "small_share": share(rows, contains=small),
        "min_gemm_I": min(r.cost.intensity for r in rows if gemm in r.name),
        "min_mem_ratio": min(r.time.memory / r.time.compute for r in small_rows),
        "flash_attn_share": fa.share, "flash_attn_I": fa.cost.intensity,
        "fa_kv_mib": fa.cost.reread_footprint / 2**20, "fa_reread_gb": fa.cost.reread_bytes / 1e9,
    }  # fmt: skip


def unmasked_attention(
    device: Hardware, heads: int, seq: int, head_dim: int, *, tile: FlashTile, dtype: str = "bf16"
) -> dict[str, Any]:
    """无 mask 时三种写法（eager、物化、FlashAttention 按分块 ``tile``）在 ``device`` 上的对照，
    以及分块的尺寸与按片上存储规则 :math:`r_q = Z/(4ds)` 定出的块。

    Returns
    -------
    dict
        ``attn_bytes_ratio`` （物化 / flash 的字节）；``attn_eager_I``、``attn_mat_I``、
        ``attn_flash_I`` （FLOP/byte）；``attn_mat_gb``、``attn_flash_gb``、``attn_reread_gb``；
        ``attn_flash_bound``、``attn_flash_l2_us``、``attn_flash_matrix_us``、``l2_tb`` （L2 带宽，
        TB/s）；``mat_bps``、``eager_nomask_bps`` （每个得分比 flash 多搬的字节）、
        ``eager_vs_mat_nomask``、``eager_nomask_kernels``；``mat_I_limit`` （:math:`\\ell \\gg d`
        时物化写法的强度 :math:`(4d+5)/(4s)`）；``fa3_bm`` 与 ``flash_rows_per_block`` （Q 块的
        行数）、``fa3_bn`` （K/V 块的行数）、``fa3_c`` （cluster 中的 Q 块数）、``fa3_nk`` （一个
        Q 块流过的 K/V 块数）、``sram_kib`` （每个 SM 的 shared memory :math:`Z`）与
        ``flash_sram_rows``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> a = unmasked_attention(hardware("h100-sxm"), 32, 4096, 128, tile=fa3_tile(128))
    >>> a["mat_bps"], a["mat_I_limit"]    # S written and read, S~ written and read: 4 x 2 B
    (8.0, 64.625)
    >>> a["fa3_nk"], a["flash_sram_rows"]    # ceil(4096 / 176); 228 KiB / (4 x 128 x 2 B)
    (24, 228)
    """
    sram, l2 = device.shared_memory_per_sm, device.bandwidth("l2")
    if sram is None or l2 is None:
        raise ValueError(f"device {device.key!r} needs its shared memory and L2 bandwidth")
    eag, mat, fla = (
        attention(1, heads, seq, seq, head_dim, dtype, impl=i, tile=tile) for i in IMPLS
    )
    tfla = time_bound(fla, device)
    eager_bps, mat_bps = ((c.bytes - fla.bytes) / (heads * seq**2) for c in (eag, mat))
    return {
        "attn_bytes_ratio": mat.bytes / fla.bytes, "attn_mat_I": mat.intensity,
        "attn_flash_I": fla.intensity, "attn_eager_I": eag.intensity,
        "attn_mat_gb": mat.bytes / 1e9, "attn_flash_gb": fla.bytes / 1e9,
        "attn_reread_gb": fla.reread_bytes / 1e9,
        "mat_I_limit": (4 * head_dim + 5) / (4 * bytes_per_element(dtype)),
        "eager_nomask_bps": eager_bps, "mat_bps": mat_bps, "eager_nomask_kernels": eag.kernels,
        "eager_vs_mat_nomask": eager_bps / mat_bps, "attn_flash_bound": bound_zh(tfla.resource),
        "l2_tb": l2 / 1e12, "attn_flash_l2_us": tfla.by_resource["l2"] * 1e6,
        "attn_flash_matrix_us": tfla.by_resource["matrix"] * 1e6,
        "fa3_bn": tile.block_n, "fa3_nk": -(-seq // tile.block_n),
        "flash_rows_per_block": tile.block_m, "fa3_bm": tile.block_m, "fa3_c": tile.cluster_m,
        "flash_sram_rows": sram // (4 * head_dim * bytes_per_element(dtype)),
        "sram_kib": sram / 1024,
    }  # fmt: skip


def causal_attention(costs: Mapping[str, Cost], device: Hardware) -> dict[str, Any]:
    """因果 mask 下物化写法与 FlashAttention（``costs`` 的 ``"materialized"``、``"flash"``）的对照。

    Returns
    -------
    dict
        ``attn_c_ratio`` （字节之比）、``attn_c_mat_I``、``attn_c_flash_I`` （FLOP/byte）、
        ``attn_c_bound`` （FlashAttention 在 ``device`` 上受什么限制）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> c = {i: attention(1, 32, 4096, 4096, 128, impl=i, causal=True) for i in IMPLS}
    >>> causal_attention(c, hardware("h100-sxm"))["attn_c_ratio"]   # (4ld + 4l^2) s / (4ld s)
    33.0
    """
    cm, cf = costs["materialized"], costs["flash"]
    return {
        "attn_c_ratio": cm.bytes / cf.bytes, "attn_c_mat_I": cm.intensity,
        "attn_c_flash_I": cf.intensity, "attn_c_bound": bound_zh(time_bound(cf, device).resource),
    }  # fmt: skip


def fa3_schedule(
    device: Hardware, heads: int, seq: int, head_dim: int, *, causal: bool = True
) -> dict[str, Any]:
    """FlashAttention-3 按它自己的分块（:func:`roofline_book.fa3_tile`）调度时 K、V 的重读。

    Returns
    -------
    dict
        ``fa3_own_c`` （cluster 中的 Q 块数）、``fa3_own_reread_gb``、``fa3_own_l2_us``、
        ``fa3_own_bound``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = fa3_schedule(hardware("h100-sxm"), 32, 4096, 128)
    >>> f["fa3_own_c"], f["fa3_own_bound"]     # FA3 drops the cluster under a causal mask
    (1, '受 L2 限制')
    """
    tile = fa3_tile(head_dim, causal=causal)
    own = attention(1, heads, seq, seq, head_dim, impl="flash", causal=causal, tile=tile)
    t_own = time_bound(own, device)
    return {
        "fa3_own_reread_gb": own.reread_bytes / 1e9, "fa3_own_l2_us": t_own.by_resource["l2"] * 1e6,
        "fa3_own_bound": bound_zh(t_own.resource), "fa3_own_c": tile.cluster_m,
    }  # fmt: skip


def attention_traffic_figure(
    device: Hardware, seqs: Sequence[int], heads: int, head_dim: int, *, tile: FlashTile
) -> Any:
    """无 mask 的 BF16 attention 前向随序列长度 ``seqs`` 的流量（左）与算术强度（右），三种写法。

    左图的实线是必经 HBM 的流量，点线是 FlashAttention（分块 ``tile``）加上 K、V 重读后经过 L2
    的流量；右图的点线是 ``device`` 的 BF16 ridge point。

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from roofline_book import hardware
    >>> import matplotlib
    >>> _ = plotting.use_cjk_font()
    >>> with matplotlib.rc_context({"font.family": plotting.CJK_FONTS}):
    ...     fig = attention_traffic_figure(hardware("h100-sxm"), [512], 32, 128, tile=fa3_tile(128))
    >>> [t.get_text() for t in fig.axes[1].texts]
    ['H100 SXM BF16 的 ridge point']
    >>> from matplotlib import pyplot as plt; plt.close(fig)
    """
    from matplotlib import pyplot as plt

    dtype = "bf16"
    swept = [attention(1, heads, n, n, head_dim, dtype, tile=tile) for n in seqs]
    fig, (left, right) = plt.subplots(1, 2, figsize=(6.4, 3.2))
    palette = plotting.PALETTE
    colors = {"eager": palette["orange"], "materialized": palette["vermillion"]}
    colors["flash"] = palette["black"]
    lines = plotting.attention_sweep(left, right, seqs, heads, head_dim, colors, dtype)
    lines[-1].remove()  # the floor of Q, K, V, O once: the flash curve itself
    reread = [c.bytes + c.reread_bytes for c in swept]
    lines += left.plot(seqs, reread, color=colors["flash"], linestyle=":")
    ridge, roof = device.ridge_point(dtype), plotting.roof_color(device.key, dtype)
    plotting.ridge_line(right, ridge, linestyle=":", color=roof)
    label = f"{device.key.replace('-', ' ').upper()} {dtype.upper()} 的 ridge point"
    at = {"xycoords": right.get_yaxis_transform(), "textcoords": "offset points"}
    right.annotate(label, (1, ridge), xytext=(-3, -3), **at, ha="right", va="top", fontsize=7.5,
                   color=roof)  # fmt: skip
    left.set_ylabel("流量 [bytes]")
    right.set(yscale="log", yticks=[1e2, 1e3, 1e4])  # no tick label outside the axes
    title = f"attention 前向：{heads} 个 head，d = {head_dim}，{dtype.upper()}，无 mask"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    names = ["eager", "物化写法", "FlashAttention（必需流量）", "FlashAttention 含重读（L2）"]
    fig.legend(lines[0:6:2] + lines[-1:], names, loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=4, fontsize=7, frameon=False)  # fmt: skip
    return fig


def implementation_comparison(
    blocks: Mapping[str, Sequence[Row]], heads: int, seq: int, *, materialized_bps: float
) -> dict[str, Any]:
    """同一个 block 换用三种 attention 写法（``blocks`` 按写法给出各自的
    :func:`roofline_book.block_table`）：attention 一行与整个 block 的对照。

    ``heads``、``seq`` 用来把字节摊到每个得分上；``materialized_bps`` 是物化写法每个得分比
    flash 多搬的字节（:func:`unmasked_attention` 的 ``mat_bps``）。

    Returns
    -------
    dict
        ``causal_flops_ratio``、``causal_bytes_ratio``、``eager_bytes_ratio`` （对 flash 之比）；
        ``mat_attn_share``、``eager_attn_share``；``eager_kernels``、``eager_bps``、``eager_vs_mat``；
        ``<写法>_total_us`` （block 的时间下界）、``block_ratio``、``eager_block_ratio``。

    Examples
    --------
    >>> from roofline_book import LLAMA2_7B, block_table, hardware
    >>> b = {i: block_table(LLAMA2_7B, hardware("h100-sxm"), attention_impl=i) for i in IMPLS}
    >>> c = implementation_comparison(b, 32, 4096, materialized_bps=8.0)
    >>> c["causal_bytes_ratio"], c["eager_kernels"]
    (33.0, 7)
    """
    eager, mat, flash = (
        next(r for r in blocks[i] if r.name.startswith("attention (")) for i in IMPLS
    )
    totals = {k: sum(r.time.seconds for r in rows) for k, rows in blocks.items()}
    eager_bps = (eager.cost.bytes - flash.cost.bytes) / (heads * seq**2)
    return {
        "causal_flops_ratio": mat.cost.flops / flash.cost.flops,
        "causal_bytes_ratio": mat.cost.bytes / flash.cost.bytes,
        "eager_bytes_ratio": eager.cost.bytes / flash.cost.bytes,
        "mat_attn_share": mat.share, "eager_attn_share": eager.share,
        "eager_kernels": eager.cost.kernels, "eager_bps": eager_bps,
        "eager_vs_mat": eager_bps / materialized_bps,
        **{f"{k}_total_us": t * 1e6 for k, t in totals.items()},
        "block_ratio": totals["materialized"] / totals["flash"],
        "eager_block_ratio": totals["eager"] / totals["flash"],
    }  # fmt: skip


def kaplan_forward_flops(params: int, tokens: int) -> int:
    """前向的运算量，每个 token :math:`2\\Psi` 次（Kaplan et al. 2020，表 1）。

    >>> kaplan_forward_flops(10**9, 1000)
    2000000000000
    """
    return 2 * params * tokens


def kaplan_attention_flops(tokens: int, n_ctx: int, d_attn: int) -> int:
    """attention 得分的运算量，每层每个 token :math:`2 n_{ctx} d_{attn}` 次（Kaplan et al.
    2020，表 1）：两次矩阵乘法只算因果 mask 保留的一半。

    >>> kaplan_attention_flops(4096, 4096, 4096)    # 2 x 4096^3
    137438953472
    """
    return 2 * tokens * n_ctx * d_attn


def chinchilla_attention_flops(seq: int, d_attn: int, batch: int = 1) -> int:
    """attention 的两次矩阵乘法 :math:`QK^\\top` 与 :math:`\\tilde S V`，
    各 :math:`2\\ell^2 d_{attn}`，不减半（Hoffmann et al. 2022，附录 F）。

    >>> chinchilla_attention_flops(4096, 4096)      # 4 x 4096^3
    274877906944
    """
    return 2 * 2 * seq**2 * d_attn * batch


def flops_estimates(
    block: Block, rows: Sequence[Row], *, materialized: Row, flash: Row, gemm: str = "projection"
) -> dict[str, Any]:
    """把 ``block`` 的表（``rows``，名称含 ``gemm`` 的是投影 GEMM）与 Kaplan、Chinchilla 的
    估算公式逐项对照；``materialized``、``flash`` 是两种写法的 attention 一行（因果 mask）。

    Returns
    -------
    dict
        ``proj_tflop``、``two_n_t_tflop``、``proj_vs_2nt``、``params_m``、``cfg_tokens``；
        ``kaplan_attn_gflop``、``flash_matrix_gflop``、``flash_vs_kaplan``；
        ``chinchilla_attn_gflop``、``mat_matrix_gflop``、``mat_softmax_part`` （softmax 在物化写法
        全部 FLOPs 中的比例）。
    """
    tokens, d_attn = block.tokens, block.hidden
    proj = sum(r.cost.flops for r in rows if gemm in r.name)
    two_n_t = kaplan_forward_flops(block.parameters, tokens)
    kaplan = kaplan_attention_flops(tokens, block.seq, d_attn)
    chinchilla = chinchilla_attention_flops(block.seq, d_attn, block.batch)
    fm, mm = flash.cost.matrix_flops, materialized.cost.matrix_flops
    return {
        "proj_tflop": proj / 1e12, "two_n_t_tflop": two_n_t / 1e12, "proj_vs_2nt": proj / two_n_t,
        "params_m": block.parameters / 1e6, "cfg_tokens": tokens,
        "kaplan_attn_gflop": kaplan / 1e9, "flash_matrix_gflop": fm / 1e9,
        "flash_vs_kaplan": fm / kaplan, "chinchilla_attn_gflop": chinchilla / 1e9,
        "mat_matrix_gflop": mm / 1e9, "mat_softmax_part": 1 - mm / materialized.cost.flops,
    }  # fmt: skip


def optimizer_comparison(
    block: Block, rows: Sequence[Row], forward_seconds: float, *, step_forwards: int = 3
) -> dict[str, Any]:
    """AdamW 一步（``rows``：:func:`roofline_book.optimizer_table`，含 ``"AdamW (loop)"`` 与
    ``"AdamW (fused)"``）与一次前向（``forward_seconds``）、一个训练步的时间下界之比。

    一个训练步约合 ``step_forwards`` 次前向（反向约为前向的 2 倍，所以取 3）。对照的是 FP32 梯度
    的做法（Megatron-LM、DeepSpeed 的默认）：``block`` 的参数在 FP32 里做 fused 一步，之后另由
    一个 kernel 读 FP32 master weight、写出 BF16 的副本。

    Returns
    -------
    dict
        ``opt_loop_ms``、``opt_fused_ms``、``opt_ratio``；``opt_fused_bpp``、``opt_megatron_bpp``
        （每个参数的字节）；``step_forwards``、``opt_vs_forward``、``opt_vs_step``。

    Examples
    --------
    >>> from roofline_book import LLAMA2_7B, hardware, optimizer_table
    >>> rows = optimizer_table(LLAMA2_7B, hardware("h100-sxm"), param_dtype="fp32",
    ...                        grad_dtype="bf16", model_dtype="bf16")
    >>> o = optimizer_comparison(LLAMA2_7B, rows, 2e-3)
    >>> o["opt_fused_bpp"], o["opt_megatron_bpp"]  # 2x4 + 2 + 4x4 + 2; 2x4 + 4 + 4x4 + 4 + 2
    (28.0, 34.0)
    """
    opt = {r.name: r.time.seconds for r in rows}
    fused = next(r.cost for r in rows if r.name == "AdamW (fused)")
    params = block.parameters
    fp32_fused = adamw(params, "fused", tensors=block.tensors)  # FP32 grads
    master_copy = bytes_per_element("fp32") + bytes_per_element("bf16")  # read master, write copy
    return {
        "opt_loop_ms": opt["AdamW (loop)"] * 1e3, "opt_fused_ms": opt["AdamW (fused)"] * 1e3,
        "opt_ratio": opt["AdamW (loop)"] / opt["AdamW (fused)"],
        "opt_fused_bpp": fused.bytes / params,
        "opt_megatron_bpp": fp32_fused.bytes / params + master_copy,
        "step_forwards": step_forwards, "opt_vs_forward": opt["AdamW (fused)"] / forward_seconds,
        "opt_vs_step": opt["AdamW (fused)"] / (step_forwards * forward_seconds),
    }  # fmt: skip


def backward_comparison(stored: Cost, recompute: Cost, device: Hardware) -> dict[str, Any]:
    """attention 反向的两种做法：读回存下的 :math:`\\tilde S`，或在片上重算。

    Returns
    -------
    dict
        ``bwd_flops_ratio`` （重算 / 存下）、``bwd_bytes_ratio`` （存下 / 重算）、
        ``bwd_time_ratio`` （重算 / 存下）；``bwd_stored_ms``、``bwd_recompute_ms`` 与各自的限制
        资源 ``bwd_stored_res``、``bwd_recompute_res``。

    Examples
    --------
    >>> from roofline_book import attention_backward, hardware
    >>> s, r = (attention_backward(1, 32, 4096, 4096, 128, impl=i) for i in ("stored", "flash"))
    >>> b = backward_comparison(s, r, hardware("h100-sxm"))
    >>> b["bwd_stored_res"], b["bwd_recompute_res"]
    ('hbm', 'matrix')
    """
    ts, tr = time_bound(stored, device), time_bound(recompute, device)
    return {
        "bwd_flops_ratio": recompute.flops / stored.flops,
        "bwd_bytes_ratio": stored.bytes / recompute.bytes,
        "bwd_time_ratio": tr.seconds / ts.seconds,
        "bwd_stored_ms": ts.seconds * 1e3, "bwd_recompute_ms": tr.seconds * 1e3,
        "bwd_stored_res": ts.resource, "bwd_recompute_res": tr.resource,
    }  # fmt: skip


def score_traffic(
    device: Hardware, heads: int, seq: int, head_dim: int, *, dtype: str = "bf16", prefix: str = ""
) -> dict[str, Any]:
    """物化写法（无 mask）仅在得分矩阵 :math:`S`、:math:`\\tilde S` 上搬的字节：各写、读一次，
    共 :math:`4 s h \\ell^2`。

    Returns
    -------
    dict
        ``scores_gb``、``scores_ms`` （按 HBM 带宽）、``scores_fraction`` （占这种写法全部
        字节的比例）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> score_traffic(hardware("h100-sxm"), 32, 8192, 128)["scores_gb"]   # 4 x 2 x 32 x 8192^2 B
    17.179869184
    """
    scores = 4 * bytes_per_element(dtype) * heads * seq**2
    mat = attention(1, heads, seq, seq, head_dim, dtype, impl="materialized")
    return _prefixed(prefix, {
        "scores_gb": scores / 1e9, "scores_ms": scores / device.memory_bandwidth * 1e3,
        "scores_fraction": scores / mat.bytes,
    })  # fmt: skip


def sram_rule(
    device: Hardware, heads: int, seq: int, head_dim: int, *, z: int | None = None, prefix: str = ""
) -> dict[str, Any]:
    """按片上存储 :math:`Z` 定块（:math:`r_q = Z/(4ds)`，无 cluster）时的 BF16 FlashAttention
    （无 mask），:math:`Z` 与 :math:`2Z` 对照。:math:`Z` 即 ``z`` （byte），默认取
    :func:`roofline_book.devices.kernels.device_sram_bytes`。

    Returns
    -------
    dict
        ``rows`` （:math:`r_q`）、``reread_before_gb``、``reread_after_gb``、``bytes_gb`` （必需
        流量）、``us_before``、``us_after``、``l2_us_before``、``res`` （两者受什么限制，相同时只写
        一次）、``n_spill`` （一个 head 的 K、V 装不进 L2 的序列长，:math:`L_2/(2ds)`）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> q = sram_rule(hardware("h100-sxm"), 32, 4096, 128)
    >>> q["rows"], q["n_spill"]     # 228 KiB / (4 x 128 x 2 B); 50 MiB / (2 x 128 x 2 B)
    (228, 102400)
    """
    if device.l2_cache is None:
        raise ValueError(f"device {device.key!r} has no L2 capacity in the catalog")
    z = device_sram_bytes(device) if z is None else z
    s = bytes_per_element("bf16")
    by_z, big = (attention(1, heads, seq, seq, head_dim, "bf16", impl="flash", sram_bytes=m)
                 for m in (z, 2 * z))  # fmt: skip
    t_z, t_big = time_bound(by_z, device), time_bound(big, device)
    return _prefixed(prefix, {
        "reread_before_gb": by_z.reread_bytes / 1e9, "reread_after_gb": big.reread_bytes / 1e9,
        "bytes_gb": big.bytes / 1e9, "rows": z // (4 * head_dim * s),
        "us_before": t_z.seconds * 1e6, "us_after": t_big.seconds * 1e6,
        "l2_us_before": t_z.by_resource["l2"] * 1e6,
        "n_spill": device.l2_cache // (2 * head_dim * s),
        "res": "，".join(dict.fromkeys(bound_zh(t.resource) for t in (t_z, t_big))),
    })  # fmt: skip


def flash_vs_materialized(
    device: Hardware, shape: tuple[int, int, int, int], *, dtype: str = "bf16", prefix: str = ""
) -> dict[str, Any]:
    """一个形状 ``shape = (batch, heads, seq, head_dim)`` （无 mask）上物化写法与 FlashAttention
    的时间下界之比，以及读实测时要用的量。

    Returns
    -------
    dict
        形状 ``batch``、``heads``、``seq``、``d``；``mat_ms``、``flash_us``、``ratio`` （物化 /
        flash）、``mat_bound``、``flash_bound``；``gflop`` （flash 的运算量）、``mat_gb``
        （物化写法的字节）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> q = flash_vs_materialized(hardware("h100-sxm"), (4, 16, 4096, 128))
    >>> q["mat_bound"], q["flash_bound"]
    ('受 HBM 限制', '受矩阵单元限制')
    """
    batch, heads, seq, head_dim = shape
    costs = {i: attention(batch, heads, seq, seq, head_dim, dtype, impl=i) for i in IMPLS[1:]}
    t = {i: time_bound(c, device) for i, c in costs.items()}
    tm, tf = t["materialized"], t["flash"]
    return _prefixed(prefix, {
        "batch": batch, "heads": heads, "seq": seq, "d": head_dim,
        "mat_ms": tm.seconds * 1e3, "flash_us": tf.seconds * 1e6, "ratio": tm.seconds / tf.seconds,
        "gflop": costs["flash"].flops / 1e9, "mat_gb": costs["materialized"].bytes / 1e9,
        "mat_bound": bound_zh(tm.resource), "flash_bound": bound_zh(tf.resource),
    })  # fmt: skip
