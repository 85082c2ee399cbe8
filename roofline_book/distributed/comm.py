"""通信的 roofline：每送出一个字节要做多少 FLOPs，计算才盖得住通信。

切分把计算分给多块设备，同时要求它们交换字节。计算与通信可以重叠时，一种切分受通信限制的条件
是它每送出一个字节所做的 FLOPs 低于 ``peak / B``
（:func:`critical_intensity`，链路上的 ridge point）。
这里给出这个比值，各种并行方式一步训练的比值（:func:`strategy_intensities`），以及由它解出的阈值：
DP 每块设备每步至少要多少 token（:func:`tokens_to_hide`、:func:`dp_tokens_to_hide`），TP 切开的
MLP 每块设备至少要多宽（:func:`tp_width_to_hide`）。送出的字节来自
:mod:`roofline_book.distributed.collectives`
的 alpha-beta 模型。
"""

from __future__ import annotations

from .._base import validate as _validate
from ..devices.device import Hardware
from ..dtypes import bytes_per_element
from ..llm.config import ModelConfig
from .collectives import collective_time, switch_share


def critical_intensity(device: Hardware, bandwidth: float, dtype: str = "bf16") -> float:
    """通信的 ridge point：每送出一个字节要做多少 FLOPs，计算才盖得住通信（FLOP/byte）。

    ``peak / bandwidth``，``bandwidth`` 为每个方向的链路带宽。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> h100 = hardware("h100-sxm")
    >>> round(critical_intensity(h100, h100.link_bandwidth))      # 989.4 T / 450 G
    2199
    """
    return device.peak_flops(dtype) / _validate.positive("bandwidth", bandwidth)


def tokens_to_hide(
    config: ModelConfig, device: Hardware, seconds: float, dtype: str = "bf16"
) -> float:
    """每块设备每步至少要处理多少 token，backward 的计算才盖住 ``seconds`` 秒的梯度同步。

    梯度在 backward 中产生，同步只能与 backward（每个 token ``4 N`` FLOPs，``N`` 是矩阵乘法的权重）
    重叠：``4 N T / peak = seconds``，``T = seconds x peak / (4 N)``（``N`` 为各层的矩阵权重，MoE
    只计每个 token 用到的 expert，加 LM head）。``seconds`` 取
    :func:`roofline_book.distributed.training.train` 算出的 DP 通信（跨节点时是分层 all-reduce
    最忙的那条
    链路，:func:`~roofline_book.distributed.allreduce.hierarchical_all_reduce`）。

    Examples
    --------
    Llama-3-8B，H100：70 ms 的梯度 all-reduce 要 0.070 x 989.4e12 / (4 x 7.5e9) 个 token。

    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> m, h100 = model("llama-3-8b"), hardware("h100-sxm")
    >>> n = 32 * m.layer_matrix_parameters() + 128256 * 4096
    >>> round(tokens_to_hide(m, h100, 0.070)), round(0.070 * h100.peak_flops("bf16") / (4 * n))
    (2307, 2307)
    """
    c = config
    n = c.matrix_parameters(active=True) + c.vocab * c.hidden
    return _validate.positive("seconds", seconds) * device.peak_flops(dtype) / (4 * n)


def dp_tokens_to_hide(
    config: ModelConfig,
    device: Hardware,
    dp: int,
    bandwidth: float,
    latency: float = 0.0,
    dtype: str = "bf16",
) -> float:
    """每块设备每步至少要处理多少 token，backward 的计算才盖住 16 位梯度在 ``dp`` 块设备上一个
    ring 的 all-reduce，每一步都走 ``bandwidth``。跨节点的分层或多 rail 的 ring 用
    :func:`tokens_to_hide` 配 :mod:`roofline_book.distributed.collectives` 的时间。

    梯度在 backward 中产生，all-reduce 只能与 backward（每个 token ``4 N`` FLOPs）重叠：
    ``4 N T / peak = t_allreduce(2 P bytes)``，解出 ``T`` （``P`` 是全部权重，``N`` 是矩阵乘法的
    权重）；ring 时 ``T = 2 (n-1)/n x 2 P / (4 N) x peak / B = (n-1)/n (P / N) peak / B``，``n``
    很大、``P = N`` 时就是 JAX scaling book 的 ``C / W``。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> from roofline_book.llm.inference import model
    >>> h100 = hardware("h100-sxm")
    >>> m = model("llama-3-8b")
    >>> p, n = m.parameters(), 32 * m.layer_matrix_parameters() + 128256 * 4096
    >>> t = dp_tokens_to_hide(m, h100, 64, 50e9)
    >>> round(t), round(63 / 64 * p / n * h100.peak_flops("bf16") / 50e9)
    (20843, 20843)
    """
    t = collective_time("all_reduce", 2 * config.parameters(), dp, bandwidth, latency)
    return tokens_to_hide(config, device, t.seconds, dtype)


def tp_width_to_hide(
    device: Hardware,
    tp: int,
    bandwidth: float,
    *,
    gated: bool = True,
    dtype: str = "bf16",
    reduces: bool = False,
) -> float:
    """TP 切开的 MLP 每块设备的宽度（``ffn / tp``）至少要多大，矩阵乘法才盖得住它的 all-reduce。

    一个 token 在 MLP 上每块设备做 ``2 x mats x h x w`` FLOPs（``mats`` = 3 个门控矩阵或 2 个），
    all-reduce 的是它的 ``h`` 个激活：两者都与 ``h`` 成正比，阈值
    ``w* = peak x t_AR(a) / (2 mats)``，``t_AR(a)`` 为每个 hidden 元素的 all-reduce 时间。
    低于 ``w*``，TP 受 all-reduce 限制。

    Examples
    --------
    >>> from roofline_book import hardware
    >>> h100 = hardware("h100-sxm")
    >>> round(tp_width_to_hide(h100, 8, 450e9))   # 989.4e12 x (2 x 7/8 x 2 / 450e9) / 6
    1283
    >>> round(tp_width_to_hide(h100, 8, 450e9, reduces=True))   # 989.4e12 x (2 / 450e9) / 6
    733
    """
    a = bytes_per_element(dtype)
    if reduces:
        per_element = switch_share(tp) * a / _validate.positive("bandwidth", bandwidth)
    else:
        per_element = collective_time("all_reduce", a, tp, bandwidth, 0.0).bandwidth_s
    return device.peak_flops(dtype) * per_element / (2 * (3 if gated else 2))


def strategy_intensities(
    config: ModelConfig,
    tokens: int,
    *,
    dp: int = 8,
    tp: int = 8,
    pp: int = 4,
    reduces: bool = False,
    dtype: str = "bf16",
) -> dict[str, float]:
    """每种并行方式每块设备每送出一个字节所做的 FLOPs（FLOP/byte），一步训练、每块设备 ``tokens``
    个 token。

    送出的字节是 ring 集合通信每块设备送出的量（``reduces`` 时 all-reduce 取交换芯片归约的
    ``f = 1``，:func:`~roofline_book.distributed.collectives.switch_share`）：

    - ``"DP"``：backward 的 ``4 N T`` （梯度只能与它重叠）对 16 位梯度 ``2 P`` 字节的 all-reduce；
    - ``"FSDP"``：``6 N T`` 对两次权重 all-gather 加一次梯度 reduce-scatter；
    - ``"TP"``：一层（各层的平均）的 ``6 x (层的矩阵权重) / tp x T`` 对每层 forward、backward
      各 2 次 ``T x h`` 激活的 all-reduce；
    - ``"PP"``：一个 stage 的 ``6 N T / pp`` 对送出的激活与收回的梯度各 ``T x h``。

    Examples
    --------
    >>> from roofline_book.llm.inference import model
    >>> i = strategy_intensities(model("llama-3-8b"), 4096, dp=64)
    >>> round(i["DP"] / 4096, 3)                 # 4 N / (2 x 63/64 x 2 P) per token
    0.949
    """
    tokens = _validate.size("tokens", tokens)
    c, a = config, bytes_per_element(dtype)
    n = c.matrix_parameters(active=True) + c.vocab * c.hidden
    grads = a * c.parameters()

    def sent(op: str, nbytes: float, devices: int) -> float:
        if op == "all_reduce" and reduces:
            return switch_share(devices) * nbytes
        return collective_time(op, nbytes, devices, 1.0, 0.0).bandwidth_s  # bytes at 1 B/s

    step = 6 * n * tokens
    fsdp = 2 * sent("all_gather", grads, dp) + sent("reduce_scatter", grads, dp)
    layer = 6 * c.matrix_parameters(active=True) / c.layers * tokens / tp  # a mean layer
    act = tokens * c.hidden * a
    return {
        "DP": 4 * n * tokens / sent("all_reduce", grads, dp),
        "FSDP": step / fsdp,
        "TP": layer / (4 * sent("all_reduce", act, tp)),
        "PP": step / pp / (2 * sent("send_recv", act, 2)),
    }


__all__ = [
    "critical_intensity",
    "dp_tokens_to_hide",
    "strategy_intensities",
    "tokens_to_hide",
    "tp_width_to_hide",
]
