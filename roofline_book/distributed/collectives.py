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
from dataclasses import dataclass

from .._base import validate as _validate
from .._base.validate import InvalidArgument

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
        op 或 algorithm 未知、某个操作没有所选算法，或数值越界：``InvalidArgument``，它的
        ``name`` 是参数名（类型不对时是 ``InvalidArgumentType``，也是 TypeError）。

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
    roofline_book.InvalidArgument: algorithm 'tree' is modelled only for all_reduce, broadcast; ...
    """
    op = _op(op)
    size = _validate.non_negative("nbytes", nbytes)
    n = _validate.count("devices", devices, minimum=1)
    beta = _validate.positive("bandwidth", bandwidth)
    alpha = _validate.non_negative("latency", latency)
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
    n = _validate.count("devices", devices, minimum=1)
    beta = _validate.positive("bandwidth", bandwidth)
    alpha = _validate.non_negative("latency", latency)
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
    n = _validate.count("devices", devices, minimum=1)
    beta = _validate.positive("bandwidth", bandwidth)
    alpha = _validate.non_negative("latency", latency)
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
    n = _validate.count("devices", devices, minimum=1)
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
    return _validate.non_negative("nbytes", nbytes) / _validate.positive("seconds", seconds)


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
    return _validate.non_negative("algbw", algbw) * bus_factor(op, devices)


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
    return 1.0 if _validate.count("devices", devices, minimum=1) > 1 else 0.0


NCCL_VERSION = "2.30.7"
"""NCCL 的版本：:data:`NCCL_BASE_LATENCY` 与硬件目录的 ``link_latency`` 取自它的调优模型。"""

NCCL_BASE_LATENCY = 6.6e-6
"""NCCL 调优模型里 ring 集合通信的固定延迟（``baseLat``，Ring，LL 协议），s。

NCCL 2.30.7（``src/graph/tuning.cc``，``ncclTunerConstantsDefaults``；自 2.18.1 起不变）估一次 ring
集合通信的延迟为 ``baseLat + nsteps x hwLat``：``baseLat`` 与步数无关（launch 与同步），``hwLat``
是每一步的延迟（硬件目录的 ``link_latency``）。这是 NCCL 选算法用的模型，不是测量。"""
