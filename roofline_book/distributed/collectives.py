"""集合通信的 alpha-beta 模型。

每个 collective 需要多少步（latency），每个 rank 要发多少字节（bandwidth）。

一次集合通信的时间写成 ``t = k alpha + f S / B``：

- ``S`` 是 nccl-tests 所说的 size，即每个 rank 上那块（较大的）buffer 的字节数：all-reduce 与
  broadcast 的 buffer，all-gather 的输出，reduce-scatter 的输入，all-to-all 的发送 buffer；
- ``B`` 是每个设备、每个方向的链路带宽（byte/s），``alpha`` 是每一步的延迟（s）；
- ``k`` 是算法要走的步数，``f`` 是每个 rank 必须发出（也必须收进）的字节数占 ``S`` 的份额。

ring 的 ``f`` 正是 nccl-tests 把 algorithm bandwidth 换算成 bus bandwidth 的系数
（:func:`bus_factor`）：all-reduce 为 ``2(n-1)/n``，all-gather、reduce-scatter 与 all-to-all 为
``(n-1)/n``，broadcast 与 send/recv 为 1（NVIDIA/nccl-tests, ``doc/PERFORMANCE.md``）。所以
用 ``f`` 拟合出的 ``B`` 就是大消息下的 busbw。

Examples
--------
8 个 GPU、每个方向 450 GB/s、每步 1 us，ring all-reduce 1 GiB：
``2 x 7 = 14`` 步，每个 rank 发出 ``2 x 7/8 = 1.75`` 倍 buffer：

>>> t = collective_time("all_reduce", 2**30, 8, 450e9, 1e-6)
>>> t.latency_s, round(t.bandwidth_s * 1e3, 3)          # 14 us; 1.75 x 2**30 / 450e9 s
(1.4e-05, 4.176)
>>> round(bus_bandwidth("all_reduce", algorithm_bandwidth(2**30, t.seconds), 8) / 1e9, 1)
448.5

busbw 比链路的 450 GB/s 略低，差的是那 14 us 延迟。

小消息时 tree 的 ``2ceil(log2 n) = 6`` 步胜过 ring 的 14 步：

>>> collective_time("all_reduce", 1024, 8, 450e9, 1e-6, algorithm="tree").latency_s
6e-06
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from .._base.validate import InvalidArgument, InvalidArgumentType

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")
"""模型覆盖的集合通信，名字与 ``torch.distributed`` 的函数对应（send/recv 为点对点）。"""

ALGORITHMS = ("ring", "tree")
"""``ring``：每个 rank 只与邻居交换，步数随 n 线性增长，带宽最省；``tree``：binomial tree，
步数为 ``ceil(log2 n)`` 量级，但每一层都要把整块 buffer 传一遍。只有 all-reduce 与
broadcast 有 tree 形式；其余操作的唯一算法也记作 ``ring`` （all-to-all 是两两交换，
send/recv 是一跳）。

NB：这里的 tree 是教科书的 binomial tree。NCCL 的 tree 只连节点：节点之内是一条链，没有 tree
（NVIDIA/nccl#919）；节点内的小消息 all-reduce 走 one-shot、two-shot 这类直接读写其他 GPU 缓冲区的
kernel，或 NVLink SHARP。"""

TREE_OPS = ("all_reduce", "broadcast")
"""有 tree 形式的操作。"""


@dataclass(frozen=True)
class CommTime:
    """一次集合通信的时间，分成延迟项与带宽项。

    Attributes
    ----------
    latency_s : float
        步数乘每步延迟 ``k alpha``，s。与消息大小无关。
    bandwidth_s : float
        每个 rank 必须发出的字节数除以每个方向的带宽 ``f S/B``，s。

    Examples
    --------
    >>> CommTime(latency_s=0.25, bandwidth_s=0.5).seconds
    0.75
    """

    latency_s: float
    bandwidth_s: float

    @property
    def seconds(self) -> float:
        """总时间 ``k alpha + f S/B``，s。"""
        return self.latency_s + self.bandwidth_s

    def __add__(self, other: CommTime) -> CommTime:
        """依次执行的两段通信：各项相加。"""
        return CommTime(self.latency_s + other.latency_s, self.bandwidth_s + other.bandwidth_s)


def _op(op: object) -> str:
    if not isinstance(op, str) or op not in OPS:
        raise InvalidArgument("op", f"must be one of {', '.join(OPS)}; got {op!r}")
    return op


def _devices(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgumentType(
            name, f"must be an integer >= 1, got {value!r} ({type(value).__name__})"
        )
    if int(value) < 1:
        raise InvalidArgument(name, f"must be an integer >= 1, got {value!r}")
    return int(value)


def _real(name: str, value: object, *, strict: bool) -> float:
    relation = "> 0" if strict else ">= 0"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentType(
            name, f"must be a finite real number {relation}, got {value!r} ({type(value).__name__})"
        )
    number = float(value)
    if not math.isfinite(number) or number < 0 or (strict and number == 0):
        raise InvalidArgument(name, f"must be a finite real number {relation}, got {value!r}")
    return number


def _algorithm(op: str, algorithm: object) -> str:
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise InvalidArgument(
            "algorithm", f"must be one of {', '.join(ALGORITHMS)}; got {algorithm!r}"
        )
    if algorithm == "tree" and op not in TREE_OPS:
        raise InvalidArgument(
            "algorithm", f"'tree' is modelled only for {', '.join(TREE_OPS)}; {op} has only 'ring'"
        )
    return algorithm


def _steps(op: str, n: int, algorithm: str) -> tuple[int, float]:
    """(步数 k, 每个 rank 发出的字节占 S 的份额 f)。"""
    if n == 1:  # 数据不离开设备
        return 0, 0.0
    if algorithm == "tree":
        depth = math.ceil(math.log2(n))
        if op == "all_reduce":  # reduce 上行 + broadcast 下行，每层整块 buffer
            return 2 * depth, 2.0 * depth
        return depth, float(depth)  # broadcast
    if op == "all_reduce":  # reduce-scatter 再 all-gather，每步 S/n
        return 2 * (n - 1), 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return n - 1, (n - 1) / n
    if op == "broadcast":  # 流水线的链：首个分块要走 n-1 跳，带宽上只是一跳
        return n - 1, 1.0
    return 1, 1.0  # send_recv：一跳


def collective_time(
    op: str,
    nbytes: float,
    devices: int,
    bandwidth: float,
    latency: float,
    *,
    algorithm: str = "ring",
) -> CommTime:
    """``devices`` 个 rank 做一次 ``op`` 的 alpha-beta 时间。

    ===============  ==========  ======================  ====================
    op               algorithm   步数 k                  每个 rank 发出 f x S
    ===============  ==========  ======================  ====================
    all_reduce       ring        2(n-1)                  2(n-1)/n x S
    all_reduce       tree        2 ceil(log2 n)          2 ceil(log2 n) x S
    all_gather       ring        n-1                     (n-1)/n x S
    reduce_scatter   ring        n-1                     (n-1)/n x S
    all_to_all       ring        n-1                     (n-1)/n x S
    broadcast        ring        n-1                     S
    broadcast        tree        ceil(log2 n)            ceil(log2 n) x S
    send_recv        ring        1                       S
    ===============  ==========  ======================  ====================

    ring all-reduce 是 reduce-scatter 接 all-gather（Patarasuk & Yuan 2009），每步每个 rank 发
    ``S/n``；ring 的 ``f`` 是任何用点对点传输的算法都省不掉的量（nccl-tests
    ``doc/PERFORMANCE.md``）。tree 是 binomial tree，不分块流水（Thakur, Rabenseifner & Gropp 2005：
    reduce 与 broadcast 各 ``ceil(log2 n)(alpha + Sbeta)``）：步数少，小消息占优；
    每层都传整块 buffer，大消息输给 ring。NB：NCCL 的 double binary tree 分块流水，带宽项接近 ring，
    这里的 tree 是不流水的教科书形式。``devices == 1`` 时数据不离开设备，时间为 0。

    Parameters
    ----------
    op : str
        :data:`OPS` 之一。
    nbytes : float
        每个 rank 的 buffer 字节数，按 nccl-tests 的 size 计（见模块说明），>= 0。
    devices : int
        参与的 rank 数 n，>= 1。
    bandwidth : float
        每个设备每个方向的链路带宽，byte/s，> 0。
    latency : float
        每一步的延迟 ``alpha``，s，>= 0。
    algorithm : {"ring", "tree"}
        tree 只用于 all_reduce 与 broadcast。

    Returns
    -------
    CommTime

    Raises
    ------
    ValueError
        op 或 algorithm 未知、某个操作没有所选算法，或数值越界（错误信息写出参数名）。

    Examples
    --------
    4 个 rank 的 ring all-gather 4 MB，每个方向 100 GB/s，每步 5 us：
    3 步，每个 rank 发出 ``3/4 x 4  MB = 3  MB``，即 30 us：

    >>> t = collective_time("all_gather", 4e6, 4, 100e9, 5e-6)
    >>> round(t.latency_s * 1e6, 3), round(t.bandwidth_s * 1e6, 3), round(t.seconds * 1e6, 3)
    (15.0, 30.0, 45.0)
    >>> collective_time("all_gather", 4e6, 4, 100e9, 5e-6, algorithm="tree")
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: algorithm 'tree' is modelled only for all_reduce, broadcast; all_gather ...
    """
    op = _op(op)
    size = _real("nbytes", nbytes, strict=False)
    n = _devices("devices", devices)
    beta = _real("bandwidth", bandwidth, strict=True)
    alpha = _real("latency", latency, strict=False)
    steps, share = _steps(op, n, _algorithm(op, algorithm))
    return CommTime(latency_s=steps * alpha, bandwidth_s=share * size / beta)


def half_bandwidth_bytes(
    op: str, devices: int, bandwidth: float, latency: float, *, algorithm: str = "ring"
) -> float:
    """延迟项与带宽项相等时的 size（byte）：``S_half = k alpha B / f``。

    小于它的消息主要在付延迟，大于它的主要在付带宽；在这个 size 上，ring 的 busbw 正好是链路
    带宽的一半（Hockney 的“半性能长度” n_1/2）。``devices == 1`` 时没有通信，返回 0。

    Examples
    --------
    8 个 rank 的 ring all-reduce，每步 2 us、每个方向 400 GB/s：
    ``14 x 2e-6 x 400e9 / 1.75`` = 6.4 MB：

    >>> half_bandwidth_bytes("all_reduce", 8, 400e9, 2e-6) / 1e6
    6.4
    """
    op = _op(op)
    n = _devices("devices", devices)
    beta = _real("bandwidth", bandwidth, strict=True)
    alpha = _real("latency", latency, strict=False)
    steps, share = _steps(op, n, _algorithm(op, algorithm))
    return steps * alpha * beta / share if share > 0 else 0.0


def crossover_bytes(op: str, devices: int, bandwidth: float, latency: float) -> float | None:
    """tree 与 ring 用时相等的 size（byte）；比它小的消息 tree 更快，比它大的 ring 更快。

    由 ``k_ring alpha + f_ring S/B = k_tree alpha + f_tree S/B`` 得
    ``S = (k_ring - k_tree) alpha B / (f_tree - f_ring)``。两者步数或份额相同（n <= 2 的
    broadcast）、没有正的交点时返回 None。

    Examples
    --------
    16 个 rank 的 all-reduce，每步 5 us、每个方向 50 GB/s：ring 30 步、份额 30/16，tree 8 步、
    份额 8，交点为 ``22 x 5e-6 x 50e9 / (8 - 1.875)`` 字节：

    >>> round(crossover_bytes("all_reduce", 16, 50e9, 5e-6))
    897959
    """
    op = _op(op)
    if op not in TREE_OPS:
        raise InvalidArgument(
            "op", f"must be one of {', '.join(TREE_OPS)} (those with a tree); got {op!r}"
        )
    n = _devices("devices", devices)
    beta = _real("bandwidth", bandwidth, strict=True)
    alpha = _real("latency", latency, strict=False)
    k_ring, f_ring = _steps(op, n, "ring")
    k_tree, f_tree = _steps(op, n, "tree")
    if f_tree <= f_ring or k_ring <= k_tree or alpha == 0:
        return None
    return (k_ring - k_tree) * alpha * beta / (f_tree - f_ring)


def bus_factor(op: str, devices: int) -> float:
    """nccl-tests 从 algorithm bandwidth 换算到 bus bandwidth 的系数。

    all_reduce 为 ``2(n-1)/n``；all_gather、reduce_scatter 与 all_to_all 为 ``(n-1)/n``；
    broadcast 与 send_recv 为 1（NVIDIA/nccl-tests ``doc/PERFORMANCE.md``，"Summary"；
    ``src/*.cu`` 中各 ``*GetBw``）。它也是 ring 算法每个 rank 发出的字节占 size 的份额，所以
    busbw 可以直接与每个方向的链路带宽相比，与 n 无关。

    Parameters
    ----------
    op : str
        :data:`OPS` 之一。
    devices : int
        rank 数 n，>= 1。

    Examples
    --------
    >>> bus_factor("all_reduce", 8), bus_factor("all_gather", 8), bus_factor("broadcast", 8)
    (1.75, 0.875, 1.0)
    """
    op = _op(op)
    n = _devices("devices", devices)
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


def algorithm_bandwidth(nbytes: float, seconds: float) -> float:
    """nccl-tests 的 algorithm bandwidth：size 除以时间，byte/s。

    Parameters
    ----------
    nbytes : float
        nccl-tests 的 size（每个 rank 的 buffer），byte，>= 0。
    seconds : float
        一次操作的时间，s，> 0。

    Examples
    --------
    >>> algorithm_bandwidth(2**30, 0.01) / 1e9                 # 1 GiB in 10 ms
    107.3741824
    """
    return _real("nbytes", nbytes, strict=False) / _real("seconds", seconds, strict=True)


def bus_bandwidth(op: str, algbw: float, devices: int) -> float:
    """nccl-tests 的 bus bandwidth：algbw 乘 :func:`bus_factor`，byte/s。

    Parameters
    ----------
    op : str
        :data:`OPS` 之一。
    algbw : float
        :func:`algorithm_bandwidth`，byte/s，>= 0。
    devices : int
        rank 数 n，>= 1。

    Examples
    --------
    >>> bus_bandwidth("all_reduce", 100e9, 8) / 1e9            # 100 x 2 x 7 / 8
    175.0
    >>> bus_bandwidth("all_to_all", 100e9, 4) / 1e9            # 100 x 3 / 4
    75.0
    """
    return _real("algbw", algbw, strict=False) * bus_factor(op, devices)


def switch_share(devices: int) -> float:
    """交换芯片中归约（NVLink SHARP）的 all-reduce 每块设备送出（也收进）的字节占缓冲区的份额。

    总是 1（一块设备时为 0）：rank i 输入的每个元素都影响其他每个 rank 的输出，所以它至少要把整个
    缓冲区送出一次；交换芯片归约好的结果再整个送回来。ring 的 ``2(n-1)/n`` 多出的是 reduce-scatter
    之后再 all-gather 的那一趟。

    Examples
    --------
    >>> switch_share(8), switch_share(1)
    (1.0, 0.0)
    """
    return 1.0 if _devices("devices", devices) > 1 else 0.0


NCCL_VERSION = "2.30.7"
"""NCCL 的版本：:data:`NCCL_BASE_LATENCY` 与硬件目录的 ``link_latency`` 取自它的调优模型。"""

NCCL_BASE_LATENCY = 6.6e-6
"""NCCL 调优模型里 ring 集合通信的固定延迟（``baseLat``，Ring，LL 协议），s。

NCCL 2.30.7（``src/graph/tuning.cc``，``ncclTunerConstantsDefaults``；自 2.18.1 起不变）估一次 ring
集合通信的延迟为 ``baseLat + nsteps x hwLat``：``baseLat`` 与步数无关（launch 与同步），``hwLat``
是每一步的延迟（硬件目录的 ``link_latency``）。这是 NCCL 选算法用的模型，不是测量。"""


def _links(
    nbytes: float, per_node: int, nodes: int, intra_bw: float, inter_bw: float
) -> tuple[float, int, int]:
    size = _real("nbytes", nbytes, strict=False)
    p = _devices("per_node", per_node)
    m = _devices("nodes", nodes)
    for name, value in (("intra_bw", intra_bw), ("inter_bw", inter_bw)):
        _real(name, value, strict=True)
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
      （``intra_reduces``，NVLink SHARP）时取 ``S / intra_bw`` （:func:`switch_share`）。

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
        _real(name, value, strict=False)
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
        _real(name, value, strict=False)
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
