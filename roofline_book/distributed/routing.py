"""MoE 的 dispatch：一个 token 至少要送到多少块 GPU、多少个节点（均匀路由，或 DeepSeek 的分组
路由）。推理（:mod:`roofline_book.distributed.parallel`）与训练
（:mod:`roofline_book.distributed.trainsplit`）的 all-to-all 都按它计字节。
"""

from __future__ import annotations

import math

from ..llm.config import ModelConfig

GPUS_PER_NODE = 8
"""一个 HGX/DGX 节点的 GPU 数：NVLink（或 PCIe）连起来的一组。"""


def _misses(pool: float, held: float, picks: int) -> float:
    """``picks`` 个 expert 从 ``pool`` 个中不重复地均匀挑出时，全都不在某 ``held`` 个之中的概率：
    ``C(pool - held, picks) / C(pool, picks)``，写成乘积，``held`` 可以不是整数。"""
    if held >= pool:
        return 0.0
    return math.prod(max(pool - held - i, 0.0) / (pool - i) for i in range(picks))


def _hit(config: ModelConfig, held: float) -> float:
    """一个 token 至少有一个 expert 落在某个放着 ``held`` 个（序号相连的）expert 的设备或节点上的
    概率，按分组路由：先从 ``expert_groups`` 组中均匀选 ``groups_per_token`` 组，再从选中的
    ``groups_per_token x E / expert_groups`` 个 expert 中均匀挑 ``k`` 个。各组与各设备对齐
    （DeepSeek 按序号放 expert），这是 token 送出份数最少的放法。"""
    e, k = config.experts, config.experts_per_token
    n, t = config.expert_groups, config.groups_per_token
    size = e / n
    pool = t * size
    if held <= size:  # inside one group: that group chosen, then a pick among its experts
        return t / n * (1 - _misses(pool, held, k))
    g = math.floor(held / size)  # whole groups on it: j of them chosen
    total = math.comb(n, t)
    return math.fsum(
        math.comb(g, j) * math.comb(n - g, t - j) / total * (1 - _misses(pool, j * size, k))
        for j in range(1, min(g, t) + 1)
    )


def dispatch_copies(
    config: ModelConfig, ep: int, per_node: int = GPUS_PER_NODE
) -> tuple[float, float]:
    """一个 token 在 dispatch 中期望送出的份数：送到本节点其他 GPU 的，和送到其他节点的。

    ``ep`` 块设备各放 ``experts / ep`` 个序号相连的 routed expert；一个 token 对每块命中的设备只送
    一份（DeepEP 的做法），跨节点时对每个命中的节点只经网络送一份，到了再经 NVLink 转给那个节点
    里的 GPU（所以这里只计网络上的份数）。本节点其他 ``min(ep, per_node) - 1`` 块设备、
    其他 ``ep / per_node - 1`` 个节点，各以 ``_hit`` 的概率被命中（先选组、再在组里挑，
    见它的说明）。没有分组路由时（``expert_groups = 1``），一块放 ``m`` 个 expert 的设备
    被错过的概率是 ``C(E - m, k) / C(E, k)``；DeepSeek-V3 的 token 只从 8 组中的 4 组里
    挑 expert，送出的份数更少。

    Examples
    --------
    256 个 expert、top-8 分在 8 块 GPU 上（一个节点），每块 32 个：不分组时一个 token 错过某块 GPU
    的概率是 C(224, 8) / C(256, 8)，约 0.34；DeepSeek-V3 按 8 组选 4 组，每块 GPU 恰是一组，
    一块 GPU 被命中的概率是 1/2 x (1 - C(96, 8) / C(128, 8))：

    >>> from roofline_book.llm.inference import adhoc_model
    >>> m = adhoc_model("moe", hidden=64, layers=1, heads=1, kv_heads=1, ffn=64, vocab=64,
    ...                 experts=256, experts_per_token=8)
    >>> [round(x, 2) for x in dispatch_copies(m, 8)]
    [4.63, 0.0]
    >>> grouped = adhoc_model("v3", hidden=64, layers=1, heads=1, kv_heads=1, ffn=64, vocab=64,
    ...                       experts=256, experts_per_token=8, expert_groups=8, groups_per_token=4)
    >>> [round(x, 2) for x in dispatch_copies(grouped, 8)]
    [3.18, 0.0]
    """
    held = config.experts / ep
    in_node = min(ep, per_node)
    intra = (in_node - 1) * _hit(config, held)
    nodes = math.ceil(ep / per_node)
    inter = (nodes - 1) * _hit(config, held * per_node) if nodes > 1 else 0.0
    return intra, inter
