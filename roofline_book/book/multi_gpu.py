"""多块 GPU 的数与图：链路、小消息 all-reduce、TP 的 decode、通信的 roofline、DP 的分层梯度
同步、训练计划的各项与 ZeRO 各级的显存。

隐藏的 cell 选好模型、设备、切分与公开的实测，调用这里：返回键为粘贴名的 dict（``glue(**values)``）
或一张 matplotlib 图。单位写在键名里：``_ms``、``_us``、``_ns``、``_s`` 为时间，``_gb`` 为
:math:`10^9` 字节，``_gib``、``_mem``、``_cap`` 为 :math:`2^{30}` 字节。
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..devices.catalog import Hardware, Network
from ..distributed import collectives as coll
from ..distributed.activations import head_activation_bytes, layer_activation_bytes
from ..distributed.parallel import GPUS_PER_NODE, ParallelInference, all_reduce
from ..distributed.training import ADAM_BYTES_PER_PARAMETER, TrainingStep
from ..dtypes import bytes_per_element
from ..llm.config import ModelConfig
from ..present import plotting

GIB = 2**30


def _known(device: Hardware, field: str) -> float:
    """``device`` 的一个可缺的数（链路、显存）；目录里没有时给出写明设备与字段的错误。"""
    value = getattr(device, field)
    if value is None:
        raise ValueError(f"device: the catalog has no {field} for {device.key!r}")
    return float(value)


def link_figures(device: Hardware, pcie_device: Hardware, net: Network) -> dict[str, float | str]:
    """节点内的链路（``device``，每个方向 ``nvlink`` 与厂商印出的两个方向之和 ``nvlink_both``，
    GB/s）、只经 PCIe 相连的 ``pcie_device`` （``pcie``、``pcie_ratio``）、节点之间每块 GPU 一个
    端口的网络 ``net`` （``ib`` GB/s、``ib_gbit`` Gb/s、``ib_ratio``），ring 每步的延迟
    （``lat_nvlink``、``lat_ib``，µs），NCCL 调优模型的版本与每次集合通信的固定开销（``base_us``）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.devices.catalog import network
    >>> f = link_figures(hardware("h100-sxm"), hardware("l40s"), network("ib-ndr"))
    >>> f["nvlink"], f["nvlink_both"], f["ib_gbit"], round(f["base_us"], 1)   # 50 GB/s x 8 bit
    (450.0, 900.0, 400.0, 6.6)
    """
    link, pcie = _known(device, "link_bandwidth"), _known(pcie_device, "link_bandwidth")
    # fmt: off
    return dict(
        nvlink=link / 1e9, nvlink_both=2 * link / 1e9, pcie=pcie / 1e9, pcie_ratio=link / pcie,
        ib=net.bandwidth / 1e9, ib_gbit=net.bandwidth * 8 / 1e9, ib_ratio=link / net.bandwidth,
        lat_nvlink=_known(device, "link_latency") * 1e6, lat_ib=net.latency * 1e6,
        nccl_version=coll.NCCL_VERSION, base_us=coll.NCCL_BASE_LATENCY * 1e6,
    )
    # fmt: on


def bytes_per_parameter(weights: str = "bf16", gradients: str = "bf16") -> dict[str, int]:
    """混合精度 Adam 每个参数的字节数：权重、梯度、优化器状态（FP32 的主权重与两个矩，
    :data:`~roofline_book.distributed.training.ADAM_BYTES_PER_PARAMETER`）与三者之和（byte）。

    Examples
    --------
    >>> bytes_per_parameter()                      # 2 + 2 + 12
    {'weights': 2, 'gradients': 2, 'optimizer': 12, 'total': 16}
    >>> bytes_per_parameter("bf16", "fp32")["total"]     # Megatron's FP32 main_grad: 2 + 4 + 12
    18
    """
    w, g = bytes_per_element(weights, "weights"), bytes_per_element(gradients, "gradients")
    a = ADAM_BYTES_PER_PARAMETER
    return {"weights": w, "gradients": g, "optimizer": a, "total": w + g + a}


def parameter_figures(config: ModelConfig, prefix: str) -> dict[str, int | float]:
    """参数量 :math:`\\Psi` （键 ``prefix``）与矩阵乘法的权重数 :math:`\\Psi_{\\text{mm}}`
    （``{prefix}_mm``：各层每个 token 用到的 linear 层加 LM head，与
    :func:`roofline_book.distributed.comm.tokens_to_hide` 相同），以及它们以亿计的值（``_yi``）。

    Examples
    --------
    >>> from roofline_book.llm.inference import model
    >>> parameter_figures(model("llama-3-8b"), "psi")["psi_mm"]   # 32 x 218103808 + 128256 x 4096
    7504658432
    """
    psi = config.parameters()
    mm = config.matrix_parameters(active=True) + config.vocab * config.hidden
    p = prefix
    return {p: psi, f"{p}_mm": mm, f"{p}_yi": psi / 1e8, f"{p}_mm_yi": mm / 1e8}


def all_reduce_figures(
    device: Hardware, nbytes: int, devices: int, *, large: float = 8e9
) -> dict[str, float | int]:
    """``devices`` 块 ``device`` 上一次 ``nbytes`` 字节的 all-reduce
    （:func:`roofline_book.distributed.parallel.all_reduce`）：带宽项 ``ar_bw_ns``、NCCL 模型的延迟
    项 ``ar_lat_us`` 与其中 ring 的步数 ``ring_steps``；``large`` 字节时下界允许的 busbw
    ``nvls_allowed`` （GB/s）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = all_reduce_figures(hardware("h100-sxm"), 16384, 8)
    >>> round(f["ar_bw_ns"], 1), f["ring_steps"]     # NVSwitch: 16384 B / 450 GB/s; ring 2 x 7
    (36.4, 14)
    """
    t, step = all_reduce(nbytes, devices, device), _known(device, "link_latency")
    big = all_reduce(large, devices, device)
    return dict(
        nvls_allowed=coll.bus_bandwidth("all_reduce", large / big.bandwidth_s, devices) / 1e9,
        ar_bw_ns=t.bandwidth_s * 1e9,
        ar_lat_us=t.latency_s * 1e6,
        ring_steps=round((t.latency_s - coll.NCCL_BASE_LATENCY) / step),
    )


def tp_decode_figures(
    one: ParallelInference,
    many: ParallelInference,
    config: ModelConfig,
    device: Hardware,
    oneshot_us: float,
) -> dict[str, float | int]:
    """decode 一步在一块（``one``）与 ``p`` 块（``many``，TP ``p``）``device`` 上的下界与加速比；
    加上 all-reduce 的延迟后的加速比有两种估计：NCCL 的模型（``speedup_latency``），以及每次换成
    实测的 one-shot kernel（每次 ``oneshot_us`` µs，``speedup_oneshot``）。

    键名里的 ``8`` 与 ``h100`` 是书中的例子；``est_w8_gb``、``est_t8_ms`` 是只读权重的手算估计。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.distributed.parallel import Split, infer
    >>> from roofline_book.llm.inference import model
    >>> m, h100 = model("llama-3-70b"), hardware("h100-sxm")
    >>> one, eight = (infer(m, h100, Split(tp=p), batch=1, context=4096) for p in (1, 8))
    >>> f = tp_decode_figures(one, eight, m, h100, oneshot_us=8.0)
    >>> f["n_ar"], round(f["oneshot_ms"], 3)      # 80 layers x 2 + 1; 161 x 8 µs
    (161, 1.288)
    """
    dec1, dec = one.decode, many.decode
    n_ar = next(c.count for c in dec.comms if c.op == "all_reduce")
    oneshot_s = n_ar * oneshot_us * 1e-6
    weights, p, hbm = config.parameters() * 2, many.split.tp, device.memory_bandwidth
    # fmt: off
    return dict(
        t1_ms=dec1.seconds * 1e3, t8_ms=dec.seconds * 1e3, t8_dev_ms=dec.device_s * 1e3,
        t8_comm_us=dec.communication_s * 1e6, t8_lat_ms=dec.latency_s * 1e3, t8_share=dec.share,
        speedup_bound=dec1.seconds / dec.seconds,
        speedup_latency=dec1.seconds / (dec.seconds + dec.latency_s),
        speedup_oneshot=dec1.seconds / (dec.seconds + oneshot_s), n_ar=n_ar,
        oneshot_ms=oneshot_s * 1e3, oneshot_extra=oneshot_s / dec.seconds,
        w8_gb=many.weight_bytes_per_device / 1e9, w1_gib=one.weight_bytes_per_device / GIB,
        w_all_gb=weights / 1e9, h100_hbm_tb=hbm / 1e12,
        h100_cap_gib=_known(device, "memory_capacity") / GIB,
        est_w8_gb=weights / p / 1e9, est_t8_ms=weights / p / hbm * 1e3,
    )
    # fmt: on


def tp_decode_figure(runs: Mapping[int, ParallelInference], title: str) -> Any:
    """decode 一步随 TP 份数 ``p`` 的堆叠柱（ms）：每块 GPU 的算子（HBM）、通信的带宽项、NCCL 模型
    估计的延迟项（半透明，不计入下界），以及单卡下界的 ``1/p`` （黑色虚线）。``runs`` 为 TP 份数 ->
    :func:`roofline_book.distributed.parallel.infer` 的结果，第一个是 ``p = 1``。

    Examples
    --------
    >>> import matplotlib
    >>> from roofline_book import hardware
    >>> from roofline_book.distributed.parallel import Split, infer
    >>> from roofline_book.llm.inference import model
    >>> from roofline_book.present import plotting
    >>> m, h100 = model("llama-3-8b"), hardware("h100-sxm")
    >>> runs = {p: infer(m, h100, Split(tp=p), batch=1, context=4096) for p in (1, 2)}
    >>> _ = plotting.use_cjk_font()
    >>> with matplotlib.rc_context({"font.family": plotting.CJK_FONTS}):
    ...     fig = tp_decode_figure(runs, "decode")
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ['1', '2']
    >>> from matplotlib import pyplot as plt; plt.close(fig)
    """
    import numpy as np
    from matplotlib import pyplot as plt

    tps = np.array(list(runs))
    dev = np.array([r.decode.device_s for r in runs.values()]) * 1e3
    bw = np.array([r.decode.communication_s for r in runs.values()]) * 1e3
    lat = np.array([r.decode.latency_s for r in runs.values()]) * 1e3
    c, ticks = plotting.PALETTE, tps.astype(str)
    fig, ax = plt.subplots(figsize=(5.2, 3.2))
    ax.bar(ticks, dev, color=c["blue"], label="每块 GPU 的算子（HBM）")
    ax.bar(ticks, bw, bottom=dev, color=c["vermillion"], label="通信带宽项")
    late = "通信延迟项（NCCL 模型的估计，不计入下界）"
    ax.bar(ticks, lat, bottom=dev + bw, color=c["orange"], alpha=0.6, label=late)
    ax.plot(ticks, dev[0] / tps, color=c["black"], linestyle="--", marker="o", label="单卡的 1/p")
    ax.set(xlabel="TP 份数 p", ylabel="decode 一步 [ms]", title=title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def comm_roofline_figure(
    device: Hardware,
    links: Mapping[str, float],
    strategies: Mapping[str, float],
    marked: tuple[str, float],
    title: str,
    *,
    intensity_range: tuple[float, float] = (100, 3e6),
    top: float = 8000,
) -> Any:
    """通信的 roofline（:func:`roofline_book.present.plotting.comm_roofline`）：``links`` 为
    链路名 -> 每个方向的带宽（byte/s，图例写作“名字，带宽 GB/s”），``strategies`` 为标签 -> 每送出
    一个字节的 FLOPs（方块）；``marked`` 的标签与 FLOPs 画成第一条链路的 roof 上的菱形。``top`` 是
    纵轴的上限（TFLOP/s），给平顶之上的标签留出地方。

    Examples
    --------
    >>> import matplotlib
    >>> from roofline_book import hardware
    >>> from roofline_book.present import plotting
    >>> h100 = hardware("h100-sxm")
    >>> _ = plotting.use_cjk_font()
    >>> with matplotlib.rc_context({"font.family": plotting.CJK_FONTS}):
    ...     fig = comm_roofline_figure(h100, {"NVLink": 450e9}, {"DP": 1e5}, ("TP", 1e3), "t")
    >>> fig.axes[0].get_legend().get_texts()[0].get_text()
    'NVLink，450 GB/s'
    >>> from matplotlib import pyplot as plt; plt.close(fig)
    """
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(5.4, 3.4))
    roofs = {f"{name}，{bw / 1e9:.0f} GB/s": bw for name, bw in links.items()}
    plotting.comm_roofline(ax, device, roofs, strategies, intensity_range=intensity_range)
    label, intensity = marked
    first = next(iter(links.values()))
    y = min(device.peak_flops("bf16"), intensity * first) / 1e12  # on the first link's roof
    # blue: the first link's colour in comm_roofline
    ax.scatter([intensity], [y], color=plotting.PALETTE["blue"], marker="D", s=30, zorder=6)
    arrow = {"arrowstyle": "-", "lw": 0.6, "color": "#555555"}
    xy = (intensity, y)
    ax.annotate(label, xy, (-60, 22), textcoords="offset points", fontsize=8, arrowprops=arrow)
    ax.set_ylim(top=top)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def dp_sync_figures(
    step: TrainingStep, device: Hardware, net: Network, *, per_node: int = GPUS_PER_NODE
) -> dict[str, float | int | str]:
    """纯 DP 一步训练（``step`` 只有一次梯度 all-reduce）的分层同步：节点内交换芯片归约
    （``dp_nvl_ms``），节点之间每块网卡对 ``1/per_node`` 的梯度做 ring（``dp_nic_ms``），下界取最忙
    的链路（``dp_comm_ms``）；两段相加（节点内按 ring）的 ``dp_sum_ms`` 不是下界。``dp_busbw``、
    ``dp_sum_busbw`` 为两者允许的 busbw（GB/s），``node_nic`` 为一个节点的网卡带宽（GB/s），
    ``dp_fits`` 说显存放不放得下。

    Examples
    --------
    Llama-3-8B 的 BF16 梯度 2 x 8.03e9 B，节点内送出一次：16.06 GB / 450 GB/s = 35.7 ms。

    >>> from roofline_book import hardware
    >>> from roofline_book.devices.catalog import network
    >>> from roofline_book.distributed.training import TrainSplit, train
    >>> from roofline_book.llm.inference import model
    >>> h100 = hardware("h100-sxm")
    >>> dp = train(model("llama-3-8b"), h100, TrainSplit(dp=64), batch=512, seq=4096)
    >>> f = dp_sync_figures(dp, h100, network("ib-ndr"))
    >>> round(f["dp_nvl_ms"], 1), f["node_nic"]
    (35.7, 400.0)
    """
    (comm,) = step.comms
    nbytes, link = comm.nbytes, _known(device, "link_bandwidth")
    nodes = step.devices // per_node
    # each NIC: a ring over the nodes, on 1/per_node of the buffer
    nic = coll.collective_time("all_reduce", nbytes / per_node, nodes, net.bandwidth, 0)
    nic_s = nic.bandwidth_s
    nvl_s = coll.switch_share(per_node) * nbytes / link  # the switch reduces: sent once
    sum_s = coll.collective_time("all_reduce", nbytes, per_node, link, 0).bandwidth_s + nic_s
    bound, summed = (
        coll.bus_bandwidth("all_reduce", nbytes / t, step.devices) / 1e9
        for t in (comm.time.bandwidth_s, sum_s)
    )
    memory = step.memory_bytes
    # fmt: off
    return dict(
        dp_nic_ms=nic_s * 1e3, dp_nvl_ms=nvl_s * 1e3, dp_sum_ms=sum_s * 1e3,
        dp_comm_ms=comm.time.bandwidth_s * 1e3, dp_busbw=bound, dp_sum_busbw=summed,
        dp_window_s=comm.window_s, dp_grad_gb=nbytes / 1e9, dp_compute_s=step.compute_s,
        dp_mem_gib=memory / GIB,
        dp_fits="放不下" if memory > _known(device, "memory_capacity") else "放得下",
        per_node=per_node, node_nic=per_node * net.bandwidth / 1e9,
    )
    # fmt: on


def ring_over_switch(devices: int) -> float:
    """all-reduce 的份额 :math:`f`：ring 的 :math:`2(p-1)/p` 是交换芯片归约（送出一次）的几倍。

    Examples
    --------
    >>> ring_over_switch(8)      # 2 x 7 / 8
    1.75
    """
    return coll.bus_factor("all_reduce", devices) / coll.switch_share(devices)


def device_contrast(
    base: Hardware, other: Hardware, base_name: str, other_name: str
) -> dict[str, float]:
    """两种设备的 HBM 带宽（``{name}_bw``，TB/s）、显存（``{name}_cap``，GiB）与 dense BF16 峰值
    （``{name}_peak``，TFLOP/s）；``peak_share`` 为 ``other`` 的峰值占 ``base`` 的比例，
    ``{base_name}_rated_mhz`` 为 ``base`` 的峰值所按的时钟（MHz）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> f = device_contrast(hardware("h100-sxm"), hardware("h20"), "h100", "h20")
    >>> f["h100_peak"], f["h100_rated_mhz"]     # 989.4e12 / (132 SMs x 4096 FLOP a clock)
    (989.4, 1830.0)
    """
    rated = base.rated_clock("matrix", "bf16")
    if rated is None:
        raise ValueError(f"base: the catalog has no rated clock for {base.key!r}'s BF16 peak")
    a, b = base_name, other_name
    # fmt: off
    return {
        f"{a}_bw": base.memory_bandwidth / 1e12, f"{b}_bw": other.memory_bandwidth / 1e12,
        f"{a}_cap": _known(base, "memory_capacity") / GIB,
        f"{b}_cap": _known(other, "memory_capacity") / GIB,
        f"{a}_peak": base.peak_flops("bf16") / 1e12, f"{b}_peak": other.peak_flops("bf16") / 1e12,
        "peak_share": other.peak_flops("bf16") / base.peak_flops("bf16"),
        f"{a}_rated_mhz": rated / 1e6,
    }
    # fmt: on


def serving_contrast(
    base: ParallelInference, other: ParallelInference, base_name: str, other_name: str
) -> dict[str, float | int | None]:
    """同一模型、同一切分在两种设备上：最大 batch（``s_{name}_batch``）、decode 与 prefill 一步的
    下界（``s_{name}_dec``、``s_{name}_pre``，ms）、``other`` 的 prefill 是 ``base`` 的几倍
    （``s_pre_ratio``）、``base`` 的 decode 比 ``other`` 慢多少（``s_dec_gain``），prefill 中通信
    带宽项占不重叠估计的比例（``s_pre_comm`` 为 ``base`` 的，``s_pre_comm_{other_name}``）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.distributed.parallel import Split, infer
    >>> from roofline_book.llm.inference import model
    >>> m = model("llama-3-8b")
    >>> a, b = (infer(m, hardware(k), Split(tp=8), batch=1, context=4096)
    ...         for k in ("h100-sxm", "h20"))
    >>> f = serving_contrast(a, b, "h100", "h20")
    >>> round(f["s_dec_gain"], 4) == round(4.0 / 3.35 - 1, 4)      # decode reads at HBM rate
    True
    """
    a, b = base_name, other_name
    # fmt: off
    return {
        f"s_{a}_batch": base.max_batch, f"s_{b}_batch": other.max_batch,
        f"s_{a}_dec": base.decode.seconds * 1e3, f"s_{b}_dec": other.decode.seconds * 1e3,
        f"s_{a}_pre": base.prefill.seconds * 1e3, f"s_{b}_pre": other.prefill.seconds * 1e3,
        "s_pre_ratio": other.prefill.seconds / base.prefill.seconds,
        "s_dec_gain": base.decode.seconds / other.decode.seconds - 1,
        "s_pre_comm": base.prefill.share, f"s_pre_comm_{b}": other.prefill.share,
    }
    # fmt: on


def activation_figures(config: ModelConfig, seq: int) -> dict[str, float]:
    """一层为 backward 保存的激活，按
    :func:`~roofline_book.distributed.activations.layer_activation_bytes` 数，每个 token 多少个
    :math:`d_{\\text{model}}` 字节：eager（``act_eager_h``）、融合 kernel（``act_fused_h``）、一个
    RMSNorm（``act_norm_h``）；一条 ``seq`` 个 token 的序列的各层合计（``act_seq_gb``）与 LM head
    的 logits、loss（``act_logits_gb``、``act_loss_gb``），GB。

    Examples
    --------
    >>> from roofline_book.llm.inference import model
    >>> round(activation_figures(model("llama-3-8b"), 4096)["act_logits_gb"], 2)  # 4096 x 128256 B
    1.05
    """
    eager = sum(layer_activation_bytes(config).values())
    fused = sum(layer_activation_bytes(config, saving="fused").values())
    head, h = head_activation_bytes(config), config.hidden
    # fmt: off
    return dict(
        act_eager_h=eager / h, act_fused_h=fused / h,
        act_norm_h=layer_activation_bytes(config)["norms"] / 2 / h,  # two norms a layer
        act_logits_gb=head["logits"] * seq / 1e9, act_loss_gb=head["loss"] * seq / 1e9,
        act_seq_gb=eager * seq * config.layers / 1e9,
    )
    # fmt: on


def _count(step: TrainingStep, op: str) -> int:
    return sum(c.count for c in step.comms if c.op == op)


def fsdp_step_figures(step: TrainingStep, sequences: int, prefix: str) -> dict[str, Any]:
    """FSDP（ZeRO-3）一步训练，键以 ``prefix`` 开头：每个副本的序列数 ``_seqs``、micro-step 数
    ``_steps``、计算 ``_compute``、通信 ``_comm``、一步 ``_step`` （s）、MFU 上限、显存与其中的激活
    （``_mem``、``_act``，GiB）、all-gather 与 reduce-scatter 的次数，以及计算盖不盖得住通信
    （``_hidden``）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.distributed.training import TrainSplit, train
    >>> from roofline_book.llm.inference import model
    >>> s = train(model("llama-2-7b"), hardware("h100-sxm"), TrainSplit(dp=64, zero=3),
    ...           batch=512, seq=4096, grad_dtype="fp32")
    >>> f = fsdp_step_figures(s, 512 // 64, "s7")
    >>> f["s7_steps"], f["s7_gathers"], f["s7_scatters"]    # 8 micro-steps, forward and backward
    (8, 16, 8)
    """
    p = prefix
    # fmt: off
    return {
        f"{p}_seqs": sequences, f"{p}_steps": step.accumulation_steps,
        f"{p}_compute": step.compute_s, f"{p}_comm": step.communication_s,
        f"{p}_step": step.exposed_s, f"{p}_mfu": step.mfu, f"{p}_mem": step.memory_bytes / GIB,
        f"{p}_act": step.memory_bytes_per_device["activations"] / GIB,
        f"{p}_gathers": _count(step, "all_gather"), f"{p}_scatters": _count(step, "reduce_scatter"),
        f"{p}_hidden": "盖得住" if step.communication_s <= step.compute_s else "盖不住",
    }
    # fmt: on


def pipeline_step_figures(
    step: TrainingStep, sequences: int, prefix: str, *, tp_link: str = "nvlink"
) -> dict[str, Any]:
    """节点内 TP、跨节点 PP 与 DP 的一步训练，键以 ``prefix`` 开头：全部重叠与 TP 留在关键路径上时
    的一步（``_step``、``_exposed``，s）与 MFU 上限（``_mfu_overlap``、``_mfu``）、显存与激活、
    气泡、micro-batch 数（``_micro``）；走 ``tp_link`` 的 TP all-reduce 的次数与带宽项（``_tp_n``、
    ``_tp``，s）；只能与最后一个 backward 重叠的梯度归约（``_rs``）与它的窗口（``_window``），ms。
    """
    p = prefix
    tp = next(c for c in step.comms if c.link == tp_link)
    rs = next(c for c in step.comms if c.when == "last backward")
    # fmt: off
    return {
        f"{p}_step": step.seconds, f"{p}_exposed": step.exposed_s, f"{p}_mfu": step.mfu,
        f"{p}_mfu_overlap": step.mfu_all_overlap, f"{p}_mem": step.memory_bytes / GIB,
        f"{p}_act": step.memory_bytes_per_device["activations"] / GIB,
        f"{p}_bubble": step.bubble, f"{p}_micro": step.accumulation_steps, f"{p}_seqs": sequences,
        f"{p}_tp": tp.time.bandwidth_s, f"{p}_tp_n": tp.count,
        f"{p}_window": rs.window_s * 1e3, f"{p}_rs": rs.time.bandwidth_s * 1e3,
    }
    # fmt: on


def fsdp_variant_figures(
    base: TrainingStep, micro: TrainingStep, kept: TrainingStep, device: Hardware
) -> dict[str, float | str]:
    """FSDP 的两种变体与 ``base`` （micro-batch 1，用完权重就释放）比较：更大的 micro-batch
    （``micro``：``mb8_comm`` s、``mb8_mem`` GiB、``mb8_fits`` 放不放得进 ``device``），权重在整步
    内保持聚合（``kept``：``kept_comm`` s、``kept_mem`` GiB、多出的 ``kept_extra`` GB）；
    ``train_cap`` 为 ``device`` 的显存（GiB）。
    """
    capacity = _known(device, "memory_capacity")
    # fmt: off
    return dict(
        mb8_comm=micro.communication_s, mb8_mem=micro.memory_bytes / GIB,
        mb8_fits="放得进" if micro.memory_bytes <= capacity else "放不进",
        kept_extra=(kept.memory_bytes - base.memory_bytes) / 1e9, kept_mem=kept.memory_bytes / GIB,
        kept_comm=kept.communication_s, train_cap=capacity / GIB,
    )
    # fmt: on


def zero_memory_figures(
    steps: Mapping[int, TrainingStep], device: Hardware, prefix: str
) -> dict[str, float | int | None]:
    """ZeRO 各级每块 GPU 的显存（``{prefix}_z{stage}``，GiB）、与级别无关的激活（含 LM head 与
    loss，``{prefix}_act``）、放得进 ``device`` 的最低一级（``{prefix}_first``，都放不进为 None）。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.distributed.training import TrainSplit, train
    >>> from roofline_book.llm.inference import model
    >>> m, h100 = model("llama-3-8b"), hardware("h100-sxm")
    >>> steps = {z: train(m, h100, TrainSplit(dp=64, zero=z), batch=512, seq=4096) for z in (0, 3)}
    >>> zero_memory_figures(steps, h100, "zero")["zero_first"]
    3
    """
    capacity = _known(device, "memory_capacity")
    first = next((z for z, s in steps.items() if s.memory_bytes <= capacity), None)
    a = next(iter(steps.values())).memory_bytes_per_device
    return {
        f"{prefix}_first": first,
        f"{prefix}_act": (a["activations"] + a["logits and loss"]) / GIB,
        **{f"{prefix}_z{z}": s.memory_bytes / GIB for z, s in steps.items()},
    }
