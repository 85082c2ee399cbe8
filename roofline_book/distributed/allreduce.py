"""跨节点 all-reduce 的下界：节点内一段、节点间一段，带宽项取最忙的那条链路。

两种做法与它们的混合：分层（节点内 reduce-scatter、节点间 all-reduce、节点内 all-gather）与
NCCL 的扁平 ring（每块网卡一个 channel）。单条链路上集合通信的 alpha-beta 模型在
:mod:`roofline_book.distributed.collectives`；训练中 DP 组的归约
（:mod:`roofline_book.distributed.training`）用这里的下界。

Examples
--------
2 个节点、每节点 8 个 GPU，1 GB：节点内 ring 送出 ``2 x 7/8`` GB（400 GB/s 上 4.375 ms），比网卡
上的 ``2 x 1/2 x 1/8`` GB（50 GB/s 上 2.5 ms）忙：

>>> round(hierarchical_all_reduce(1e9, 8, 2, 400e9, 1e-6, 50e9, 5e-6).bandwidth_s * 1e3, 4)
4.375
"""

from __future__ import annotations

from .._base import validate as _validate
from .collectives import CommTime, collective_time, switch_share


def _links(
    nbytes: float, per_node: int, nodes: int, intra_bw: float, inter_bw: float
) -> tuple[float, int, int]:
    size = _validate.non_negative("nbytes", nbytes)
    p = _validate.count("per_node", per_node, minimum=1)
    m = _validate.count("nodes", nodes, minimum=1)
    for name, value in (("intra_bw", intra_bw), ("inter_bw", inter_bw)):
        _validate.positive(name, value)
    return size, p, m


def hierarchical_all_reduce(
    nbytes: float,
    per_node: int,
    nodes: int,
    intra_bw: float,
    intra_lat: float,
    inter_bw: float,
    inter_lat: float,
    *,
    intra_reduces: bool = False,
) -> CommTime:
    """跨 ``nodes`` 个节点、每节点 ``per_node`` 个 rank 的分层 all-reduce：带宽项取最忙的那条链路。

    1. 节点内 reduce-scatter：每个 rank 得到 ``S/p`` 的部分和（``p = per_node``）；
    2. 节点间 all-reduce：各节点上同号的 rank 组成一个 ``nodes`` 个 rank 的环，归约 ``S/p``；
       ``p`` 个环同时进行，各走自己的网卡；
    3. 节点内 all-gather：把 ``S`` 拼回每个 rank。

    三段走的是不同的链路（节点内的 NVLink 等，节点间的网卡），NCCL 把 buffer 切成小块流水地送过
    它们（NVLSTree，或每条网卡一个 channel 的 ring），所以带宽项不是三段之和，而是每条链路各自要
    传的字节除以它的带宽中最大的一个：

    - 网卡：``2(N-1)/N x (S/p) / inter_bw``（``N = nodes``），每个节点 ``p`` 块网卡分担节点之间
      ``2(N-1)/N x S`` 的流量，这是不在网络中归约时任何算法都省不掉的；
    - 节点内：ring 的 reduce-scatter 加 all-gather，``2(p-1)/p x S / intra_bw``；交换芯片会归约
      （``intra_reduces``，NVLink SHARP）时取 ``S / intra_bw``
      （:func:`~roofline_book.distributed.collectives.switch_share`）。

    延迟项是三段 ring 的步数乘各自每步的延迟之和（流水线的第一块要依次走过三段）。

    NB：``inter_bw`` 按每个 rank 一块网卡（DGX 的做法，“rail”）取每个 rank 每个方向的带宽；几个 GPU
    共用一块网卡时，应传入均分后的带宽。节点间的交换机若在网络中归约（InfiniBand SHARP），网卡
    那一项还会更小，这里不假定有它。

    Parameters
    ----------
    nbytes : float
        每个 rank 的 buffer，byte，>= 0。
    per_node, nodes : int
        每个节点的 rank 数与节点数，>= 1。
    intra_bw, inter_bw : float
        节点内（NVLink 等）与节点间（每个 rank 的网卡）每个方向的带宽，byte/s，> 0。
    intra_lat, inter_lat : float
        节点内与节点间每一步的延迟，s，>= 0。
    intra_reduces : bool
        节点内的交换芯片能否归约（NVLink SHARP）。

    Examples
    --------
    2 个节点、每节点 8 个 GPU，1 GB：节点内 ring 送出 ``2 x 7/8`` GB（400 GB/s 上 4.375 ms），
    网卡送出 ``2 x 1/2 x 1/8`` GB（50 GB/s 上 2.5 ms），下界取大的一个：

    >>> t = hierarchical_all_reduce(1e9, 8, 2, 400e9, 1e-6, 50e9, 5e-6)
    >>> round(t.latency_s * 1e6, 3)                  # 2 x 7 x 1 + 2 x 5
    24.0
    >>> round(t.bandwidth_s * 1e3, 4)                # max(1.75e9 / 400e9, 0.125e9 / 50e9)
    4.375
    >>> t = hierarchical_all_reduce(1e9, 8, 2, 400e9, 1e-6, 50e9, 5e-6, intra_reduces=True)
    >>> round(t.bandwidth_s * 1e3, 4)                # max(1e9 / 400e9, 0.125e9 / 50e9)
    2.5
    """
    size, p, m = _links(nbytes, per_node, nodes, intra_bw, inter_bw)
    for name, value in (("intra_lat", intra_lat), ("inter_lat", inter_lat)):
        _validate.non_negative(name, value)
    inside = collective_time("reduce_scatter", size, p, intra_bw, intra_lat)
    gather = collective_time("all_gather", size, p, intra_bw, intra_lat)
    across = collective_time("all_reduce", size / p, m, inter_bw, inter_lat)
    nvlink = switch_share(p) * size / intra_bw if intra_reduces else inside.bandwidth_s * 2
    return CommTime(
        latency_s=inside.latency_s + across.latency_s + gather.latency_s,
        bandwidth_s=max(nvlink, across.bandwidth_s),
    )


def flat_ring_all_reduce(
    nbytes: float,
    per_node: int,
    nodes: int,
    intra_bw: float,
    intra_lat: float,
    inter_bw: float,
    inter_lat: float,
) -> CommTime:
    """NCCL 跨节点的扁平 ring all-reduce：``n = per_node x nodes`` 个 rank 一个环，每块网卡一个
    channel。

    NCCL 只建扁平的环（不建二维环）：``p = per_node`` 个 channel 各是一个经过全部 ``n`` 个 rank 的
    环，每个环在每个节点里走 ``p - 1`` 跳 NVLink、从一块网卡出节点，不同的环从不同的网卡
    （rail）出去。每个 rank 一共送出 ``2(n-1)/n x S``，其中 ``1/p`` 走它自己的网卡、其余走节点内：

    - 网卡：``2(n-1)/n x (S/p) / inter_bw``；
    - 节点内：``2(n-1)/n x (p-1)/p x S / intra_bw``。

    各个 channel 同时走不同的链路，带宽项取两者中大的一个。延迟项按 NCCL 的 ring 模型：``2(n-1)``
    步里 ``2(N-1)`` 步跨节点（每步 ``inter_lat``），其余在节点内（每步 ``intra_lat``）。与
    :func:`hierarchical_all_reduce` 相比，网卡上多传 ``(n-1)/n`` 对 ``(N-1)/N`` 之比。

    Parameters
    ----------
    nbytes : float
        每个 rank 的 buffer，byte，>= 0。
    per_node, nodes : int
        每个节点的 rank 数（也是网卡数、channel 数）与节点数，>= 1。
    intra_bw, inter_bw : float
        节点内与每块网卡每个方向的带宽，byte/s，> 0。
    intra_lat, inter_lat : float
        节点内与节点间每一步的延迟，s，>= 0。

    Examples
    --------
    4 个节点、每节点 8 个 rank，1 GB：网卡送出 ``2 x 31/32 x 1/8`` GB，节点内送出
    ``2 x 31/32 x 7/8`` GB：

    >>> t = flat_ring_all_reduce(1e9, 8, 4, 400e9, 1e-6, 50e9, 5e-6)
    >>> round(t.bandwidth_s * 1e3, 4)          # max(0.2421875e9 / 50e9, 1.6953125e9 / 400e9)
    4.8438
    >>> round(t.latency_s * 1e6, 3)            # (62 - 6) x 1 + 6 x 5
    86.0
    """
    size, p, m = _links(nbytes, per_node, nodes, intra_bw, inter_bw)
    for name, value in (("intra_lat", intra_lat), ("inter_lat", inter_lat)):
        _validate.non_negative(name, value)
    n = p * m
    if n == 1:
        return CommTime(0.0, 0.0)
    sent = 2 * (n - 1) / n * size
    across_steps = 2 * (m - 1)
    if m == 1:  # one node: every hop of the ring stays inside it
        nic, nvlink = 0.0, sent / intra_bw
    else:
        nic, nvlink = sent / p / inter_bw, sent * (p - 1) / p / intra_bw
    return CommTime(
        latency_s=(2 * (n - 1) - across_steps) * intra_lat + across_steps * inter_lat,
        bandwidth_s=max(nic, nvlink),
    )


def _least_busy_mix(a: tuple[float, float], b: tuple[float, float]) -> float:
    """两种做法各自在两条链路上的时间 ``a = (a1, a2)``、``b = (b1, b2)``；把 buffer 按比例
    ``x : 1-x`` 分给它们同时进行，最忙链路的时间 ``max(x a1 + (1-x) b1, x a2 + (1-x) b2)``
    在 ``x`` 上的最小值。"""

    def busiest(x: float) -> float:
        return max(x * a[0] + (1 - x) * b[0], x * a[1] + (1 - x) * b[1])

    points = [0.0, 1.0]
    slope = (a[0] - b[0]) - (a[1] - b[1])
    if slope != 0:
        x = (b[1] - b[0]) / slope
        if 0 < x < 1:
            points.append(x)
    return min(busiest(x) for x in points)


def multi_node_all_reduce(
    nbytes: float,
    per_node: int,
    nodes: int,
    intra_bw: float,
    intra_lat: float,
    inter_bw: float,
    inter_lat: float,
    *,
    intra_reduces: bool = False,
) -> CommTime:
    """跨节点 all-reduce 的下界：:func:`hierarchical_all_reduce` 与 NCCL 的扁平 ring
    （:func:`flat_ring_all_reduce`）以及两者按任意比例的混合中，最忙那条链路的最短时间。

    分层的做法在网卡上最省（``2(N-1)/N x S/p``，不在网络中归约时任何做法都省不掉），扁平 ring 在
    节点内略省（一部分归约的字节走了网卡）。没有交换芯片归约、NVLink 又是较忙的链路时（例如 A100
    节点），扁平 ring 比分层的做法快：下界取两者中较快的，两者各忙一条链路时，把 buffer 按比例分给
    它们同时进行还能更快，下界也取这个最小值。延迟项取分层做法的（估计，不是下界）。

    参数与 :func:`hierarchical_all_reduce` 相同。

    Examples
    --------
    8 个 A100 节点（NVLink 300 GB/s、不归约，每 GPU 一块 50 GB/s 网卡），1 GB：分层的 NVLink 要
    ``2 x 7/8 / 300`` s，扁平 ring 的 NVLink 只要 ``2 x 63/64 x 7/8 / 300`` s，网卡也不比它忙：

    >>> t = multi_node_all_reduce(1e9, 8, 8, 300e9, 0.6e-6, 50e9, 2.7e-6)
    >>> h = hierarchical_all_reduce(1e9, 8, 8, 300e9, 0.6e-6, 50e9, 2.7e-6)
    >>> round(h.bandwidth_s * 1e3, 4), round(t.bandwidth_s * 1e3, 4)    # 1.75 / 300, 1.7227 / 300
    (5.8333, 5.7422)
    """
    h = hierarchical_all_reduce(
        nbytes,
        per_node,
        nodes,
        intra_bw,
        intra_lat,
        inter_bw,
        inter_lat,
        intra_reduces=intra_reduces,
    )
    size, p, m = float(nbytes), int(per_node), int(nodes)
    if m == 1:
        return h
    n = p * m
    sent = 2 * (n - 1) / n * size
    ring_links = (sent * (p - 1) / p / intra_bw, sent / p / inter_bw)
    inside = switch_share(p) * size if intra_reduces else 2 * (p - 1) / p * size
    h_links = (inside / intra_bw, 2 * (m - 1) / m * size / p / inter_bw)
    return CommTime(latency_s=h.latency_s, bandwidth_s=_least_busy_mix(h_links, ring_links))


__all__ = ["flat_ring_all_reduce", "hierarchical_all_reduce", "multi_node_all_reduce"]
