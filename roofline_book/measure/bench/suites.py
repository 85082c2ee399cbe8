"""各个 suite：一次 run 在 CPU 或 CUDA 上测哪些算子的哪些尺寸。

Examples
--------
>>> spec = suite_spec("cpu", "tiny")
>>> spec.gemm_sizes, spec.gemm_precisions
((32, 64, 128), ('fp32', 'bf16'))
>>> [c.id for c in cases("cpu", "tiny")][:2]
['gemm/fp32/mm/m=32,k=32,n=32', 'gemm/fp32/mm/m=64,k=64,n=64']
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..._base import validate as _validate
from ...roofline.bounds import (
    CACHE_MARGIN as CACHE_MARGIN,  # the bound's margin: one constant for both
)
from . import machine
from .cases import ADAMW_FLAGS, ATTENTION_IMPLS, BANDWIDTH_KINDS, names
from .cases import make as make_case
from .registry import Case

DEVICES = ("cpu", "cuda")
"""suite 运行的设备。"""

SUITES = ("tiny", "quick", "full")
"""run 的尺寸预设：``tiny`` 供测试，``quick`` 供初步查看，以及 ``full``。"""

SMALL_GEMM = (32, 128, 128)
"""本书小 GEMM 例子的 ``(m, k, n)``，每个 suite 都测。"""

CEILING_CACHE_MULTIPLE = 4
"""带宽上限的 copy 触及的数据量至少是末级 cache（CPU）或 L2（GPU）的这么多倍，使读和写都不能由它
供给（即结论检验中的 :data:`CACHE_MARGIN`）。
"""

FALLBACK_CACHE_BYTES = 64 * 2**20
"""设备没有报告 cache 大小时假定的值（byte）。"""

CACHE_PROBE_FRACTION = 4
"""cache 带宽探针的 copy 至多触及末级 cache 的 1/这个数，使它的两个数组在两次调用之间都留在
cache 中（仅 CPU：在 GPU 上每个受限于内存的 case 都在冲刷 L2 之后计时）。
"""


@dataclass(frozen=True)
class Suite:
    """一次 run 测量的各个尺寸。

    Attributes
    ----------
    name : str
        ``"tiny"``、``"quick"`` 或 ``"full"``。
    gemm_sizes : tuple of int
        方阵 GEMM 的尺寸 ``n`` （``n x n`` 乘 ``n x n``）；另外加上 :data:`SMALL_GEMM`。
    gemm_precisions : tuple of str
        GEMM 扫描的精度；每种都测一个峰值。
    elementwise_sizes : tuple of int
        每个 elementwise 算子每个 tensor 的元素个数。
    elementwise_precisions : tuple of str
    norm_shapes : tuple
        ``(rows, d)`` 的序列：每种 norm（RMSNorm，以及沿最后一维的 softmax）的 shape。
    norm_precisions : tuple of str
    adamw : tuple
        ``(params, tensors)``：AdamW 一步的参数个数，平均分在 ``tensors`` 个 tensor 中。
    attention_shapes : tuple
        ``(batch, heads, seq, head_dim)`` 的序列：self-attention 的 shape（``seq_q = seq_k``）
        ，不加 mask。
    attention_precision : str
    min_run_time : float
        每个 case 计时的总时长下限（秒）。
    ceiling_numel : int or None
        带宽上限每个数组的元素个数；None 表示按 cache 大小确定
        （:data:`CEILING_CACHE_MULTIPLE`）。
    peak_gemm : tuple of int
        测每种精度峰值的方阵 GEMM 的 ``n``，与扫描分开、分轮计时（都不在 ``gemm_sizes`` 中），所以
        关于扫描的结论绝不会拿它自己的条目来判定；峰值取其中最好的。CPU 的一个核在操作数装得进 L2
        的 GEMM 上最快，GPU 则在大 GEMM 上最快，所以 CPU 的 suite 两者都测。
    rounds : int
        上限探针的轮数，>= 2：除最后一轮外都在算子 case 之前交替进行，最后一轮在它们之后；最好的
        一轮就是上限，最后一轮相对其余最好一轮的漂移说明机器是否保持不变。
    streaming : bool
        为每个 elementwise 算子和精度加上流量至少为末级 cache 的 :data:`CACHE_MARGIN` 倍的最小
        2 的幂尺寸，使关于从内存流式读写的结论在每台机器上都有测量。``tiny`` 不加：
        测试留在 cache 中。
    """

    name: str
    gemm_sizes: tuple[int, ...]
    gemm_precisions: tuple[str, ...]
    elementwise_sizes: tuple[int, ...]
    elementwise_precisions: tuple[str, ...]
    norm_shapes: tuple[tuple[int, int], ...]
    norm_precisions: tuple[str, ...]
    adamw: tuple[int, int]
    attention_shapes: tuple[tuple[int, int, int, int], ...]
    attention_precision: str
    min_run_time: float
    ceiling_numel: int | None = None
    peak_gemm: tuple[int, ...] = (384, 1280)
    rounds: int = 3
    streaming: bool = True

    def __post_init__(self) -> None:
        if set(self.peak_gemm) & set(self.gemm_sizes):
            raise ValueError(f"peak_gemm {self.peak_gemm} must not hold the sweep's sizes")


def _powers(lo: int, hi: int, step: int = 1) -> tuple[int, ...]:
    return tuple(2**e for e in range(lo, hi + 1, step))


_TINY_CPU = Suite(
    name="tiny",
    gemm_sizes=(32, 64, 128),
    gemm_precisions=("fp32", "bf16"),
    elementwise_sizes=(2**10, 2**14),
    elementwise_precisions=("fp32",),
    norm_shapes=((64, 256),),
    norm_precisions=("fp32",),
    adamw=(2**14, 4),
    attention_shapes=((1, 2, 128, 32),),
    attention_precision="fp32",
    min_run_time=0.002,
    ceiling_numel=2**16,
    peak_gemm=(192,),
    rounds=2,
    streaming=False,
)

_SUITES: dict[tuple[str, str], Suite] = {
    ("cpu", "tiny"): _TINY_CPU,
    ("cpu", "quick"): Suite(
        name="quick",
        gemm_sizes=_powers(6, 10),
        gemm_precisions=("fp32", "bf16"),
        elementwise_sizes=(2**14, 2**18, 2**22),
        elementwise_precisions=("fp32", "bf16"),
        norm_shapes=((1024, 4096),),
        norm_precisions=("fp32", "bf16"),
        adamw=(2**22, 8),
        attention_shapes=((1, 4, 1024, 64),),
        attention_precision="fp32",
        min_run_time=0.08,
    ),
    ("cpu", "full"): Suite(
        name="full",
        gemm_sizes=_powers(6, 12),
        gemm_precisions=("fp32", "bf16"),
        elementwise_sizes=_powers(10, 26, 2),
        elementwise_precisions=("fp32", "bf16"),
        norm_shapes=((512, 4096), (2048, 4096)),
        norm_precisions=("fp32", "bf16"),
        adamw=(2**24, 16),
        attention_shapes=((1, 8, 512, 64), (1, 8, 1024, 64), (1, 8, 2048, 64)),
        attention_precision="fp32",
        min_run_time=0.4,
        peak_gemm=(384, 3072),
    ),
    # the flash backend wants a half-precision input and a head_dim it supports
    ("cuda", "tiny"): dataclasses.replace(
        _TINY_CPU, attention_shapes=((1, 2, 128, 64),), attention_precision="bf16"
    ),
    ("cuda", "quick"): Suite(
        name="quick",
        gemm_sizes=_powers(8, 12),
        gemm_precisions=("fp32", "tf32", "bf16", "fp16"),
        elementwise_sizes=_powers(16, 28, 4),
        elementwise_precisions=("fp32", "bf16"),
        norm_shapes=((4096, 4096),),
        norm_precisions=("fp32", "bf16"),
        adamw=(2**24, 8),
        attention_shapes=((4, 16, 1024, 128), (4, 16, 4096, 128)),
        attention_precision="bf16",
        min_run_time=0.05,
        peak_gemm=(6144,),
    ),
    ("cuda", "full"): Suite(
        name="full",
        gemm_sizes=_powers(7, 13),
        gemm_precisions=("fp32", "tf32", "bf16", "fp16"),
        elementwise_sizes=_powers(12, 28, 2),
        elementwise_precisions=("fp32", "bf16"),
        norm_shapes=((4096, 4096), (16384, 8192)),
        norm_precisions=("fp32", "bf16"),
        adamw=(2**26, 8),
        attention_shapes=tuple((4, 16, s, 128) for s in (1024, 2048, 4096, 8192)),
        attention_precision="bf16",
        min_run_time=0.15,
        peak_gemm=(12288,),
    ),
}


def suite_spec(device: str = "cpu", suite: str = "quick") -> Suite:
    """一个 suite 在某种设备上的各个尺寸。

    Parameters
    ----------
    device : {"cpu", "cuda"}
    suite : {"tiny", "quick", "full"}

    Examples
    --------
    >>> suite_spec("cuda", "full").gemm_precisions
    ('fp32', 'tf32', 'bf16', 'fp16')
    >>> suite_spec("tpu")
    Traceback (most recent call last):
    ...
    roofline_book.InvalidArgument: device must be one of cpu, cuda; got 'tpu'
    """
    device = _validate.choice("device", device, DEVICES)
    suite = _validate.choice("suite", suite, SUITES)
    return _SUITES[device, suite]


def ceiling_numel(cache_bytes: int) -> int:
    """带宽探针每个 fp32 数组的元素个数：取 2 的幂，使 copy 的两个数组至少为 ``cache_bytes`` 的
    :data:`CEILING_CACHE_MULTIPLE` 倍。

    Examples
    --------
    >>> ceiling_numel(32 * 2**20)    # 4 * 32 MiB / 8 bytes per element = 2^24
    16777216
    """
    cache_bytes = _validate.size("cache_bytes", cache_bytes)
    return 2 ** math.ceil(math.log2(CEILING_CACHE_MULTIPLE * cache_bytes / 8))


def streaming_numel(name: str, precision: str, cache_bytes: int) -> int:
    """elementwise 算子 ``name`` 搬运 ``cache_bytes`` 的 :data:`CACHE_MARGIN` 倍或更多时的最小 2
    的幂尺寸。

    Examples
    --------
    >>> streaming_numel("add", "fp32", 105 * 2**20) == 2**26    # 12 B per element
    True
    >>> streaming_numel("relu", "bf16", 105 * 2**20) == 2**27   # 4 B per element
    True
    """
    cache_bytes = _validate.size("cache_bytes", cache_bytes)
    numel = 2**10
    while make_case(name, (numel,), precision).cost.bytes < CACHE_MARGIN * cache_bytes:
        numel *= 2
    return numel


def _cache(device: str, cache_bytes: int | None) -> int:
    if cache_bytes is None:
        found = machine.cpu_cache_bytes() if device == "cpu" else None
        cache_bytes = found or FALLBACK_CACHE_BYTES
    return cache_bytes


def cache_probe_numel(cache_bytes: int) -> int:
    """留在大小为 ``cache_bytes`` 的 cache 中的 copy 每个 fp32 数组的元素个数：取 2 的幂，两个数组
    都在它的 1/:data:`CACHE_PROBE_FRACTION` 之内。

    Examples
    --------
    >>> cache_probe_numel(2 * 2**20)     # 2 MiB L2: 2 x 256 KiB arrays
    65536
    """
    cache_bytes = _validate.size("cache_bytes", cache_bytes)
    return max(2 ** int(math.log2(cache_bytes / CACHE_PROBE_FRACTION / 8)), 2**10)


def probes(
    device: str = "cpu",
    suite: str = "quick",
    *,
    cache_bytes: int | None = None,
    caches: Mapping[int, int] | None = None,
) -> dict[str, list[Case]]:
    """一个 suite 的上限探针，在各个 case 之前分轮交替计时。

    Returns
    -------
    dict
        ``"bandwidth"``：对 ``ceiling_numel(cache_bytes)`` 个元素（超出 cache，
        来自主存）做的 copy、triad 和原地 triad；``"peak"``：``peak_gemm`` 的每个
        尺寸、每种精度各一个方阵 GEMM；``"cache"``：仅 CPU，从 L2 起的每个 cache
        层级一个 copy，数据量在该层容量的 1/:data:`CACHE_PROBE_FRACTION` 之内
        （一条 cache roof），按 ``caches`` （层级: 字节数，省略时从机器读取）的顺序；
        ``"vector"``：仅 CPU，每种 elementwise 精度一个 add，数组占满半个 L2，
        此时决定耗时的是向量单元而不是内存；后两项在 CUDA 上为空。

    Examples
    --------
    >>> [c.id for c in probes("cpu", "tiny", cache_bytes=2**20)["peak"]]
    ['gemm/fp32/mm/m=192,k=192,n=192', 'gemm/bf16/mm/m=192,k=192,n=192']
    >>> sets = probes("cpu", "quick", cache_bytes=105 * 2**20, caches={1: 48 * 2**10,
    ...               2: 2 * 2**20, 3: 105 * 2**20})
    >>> [c.id for c in sets["cache"]]
    ['copy/fp32/copy_/numel=65536', 'copy/fp32/copy_/numel=2097152']
    """
    spec = suite_spec(device, suite)
    cache = _cache(device, cache_bytes)
    numel = spec.ceiling_numel or ceiling_numel(cache)
    if caches is None:
        caches = machine.cpu_caches() if device == "cpu" else {}
    levels = cache_probes(caches, numel) if device == "cpu" else {}
    l2 = caches.get(2) if device == "cpu" else None
    vector = []
    if l2:
        n = 2 ** int(math.log2(l2 / 2 / make_case("add", (1,), "fp32").cost.bytes))
        vector = [make_case("add", (n,), p) for p in spec.elementwise_precisions]
    return {
        "bandwidth": [make_case(kind, (numel,), "fp32") for kind in BANDWIDTH_KINDS],
        "peak": [
            make_case("gemm", (n, n, n), p) for p in spec.gemm_precisions for n in spec.peak_gemm
        ],
        "cache": [case for _, case in levels.values()],
        "vector": vector,
    }


def cache_probes(caches: Mapping[int, int], dram_numel: int) -> dict[str, tuple[int, Case]]:
    """配有带宽探针的各 cache 层级，按名称：该层级的字节数和它的 copy。

    从 L2 起（L1 的 copy 计到的主要是调用开销）；每个 copy 有 :func:`cache_probe_numel` 个元素，
    至多为 DRAM 探针的一半；copy 会与更小层级重复的层级不测。

    Examples
    --------
    >>> levels = cache_probes({1: 48 * 2**10, 2: 2**21, 3: 105 * 2**20}, 2**26)
    >>> {name: (size, case.shape) for name, (size, case) in levels.items()}
    {'L2': (2097152, (('numel', 65536),)), 'L3': (110100480, (('numel', 2097152),))}
    """
    out: dict[str, tuple[int, Case]] = {}
    seen: set[int] = set()
    for level, size in sorted(caches.items()):
        numel = min(cache_probe_numel(size), dram_numel // 2)
        if level >= 2 and numel not in seen:
            seen.add(numel)
            out[f"L{level}"] = (size, make_case("copy", (numel,), "fp32"))
    return out


def cases(
    device: str = "cpu", suite: str = "quick", *, cache_bytes: int | None = None
) -> list[Case]:
    """一个 suite 的算子 case，按 run 测量的顺序排列（上限探针见 :func:`probes`）。

    同一类中每个登记过的算子都取 suite 为这一类给定的尺寸，所以新登记的
    elementwise 算子或 norm 不用改这里就会被测到。

    Parameters
    ----------
    device : {"cpu", "cuda"}
    suite : {"tiny", "quick", "full"}
    cache_bytes : int, optional
        决定带宽上限数据量的末级 cache 或 L2 的大小（byte）；省略时从设备读取
        （CPU），否则取 :data:`FALLBACK_CACHE_BYTES`。
    """
    spec = suite_spec(device, suite)
    cache = _cache(device, cache_bytes)
    out: list[Case] = []
    for precision in spec.gemm_precisions:
        for m, k, n in [(n, n, n) for n in spec.gemm_sizes] + [SMALL_GEMM]:
            out.append(make_case("gemm", (m, k, n), precision))
    for name in names("elementwise"):
        for precision in spec.elementwise_precisions:
            sizes = list(spec.elementwise_sizes)
            if spec.streaming:
                sizes.append(streaming_numel(name, precision, cache))
            out += [make_case(name, (n,), precision) for n in sorted(set(sizes))]
    for precision in spec.norm_precisions:
        for name in names("norm"):
            out += [make_case(name, shape, precision) for shape in spec.norm_shapes]
    params, tensors = spec.adamw
    for impl in ADAMW_FLAGS:
        out.append(make_case("adamw", (params, tensors), "fp32", impl))
    for b, h, s, d in spec.attention_shapes:
        for impl in ATTENTION_IMPLS:
            out.append(make_case("attention", (b, h, s, s, d), spec.attention_precision, impl))
    return out
