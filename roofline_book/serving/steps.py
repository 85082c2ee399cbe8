"""一个 serving step 的时间下界：batch 里的序列各在自己的上下文长度上，可以混着 prefill 的块。

:func:`roofline_book.llm.inference.step_floor` 给的是整齐的一步（``batch`` 条序列，各有 ``new`` 个
新 token、上下文都是 ``context``）。continuous batching 的一步不整齐：每条 decode 序列的上下文不同，
还可能夹着几个 prefill 块。这一步的下界仍是 ``max(各单元的 FLOPs / 峰值, 必需字节 / 带宽)``，
而 FLOPs 与大部分字节可以逐条序列相加：

- 每条序列的 FLOPs：它那几个 token 经过每个 linear 层、它的 query 对它的上下文做的 attention、
  它的 LM head 行（只有这一步要出 token 的序列才有）；
- 每条序列的字节：它的 query 看到的缓存与写入的新 key/value，它的 token 的 embedding 行与 logits；
- 整步共有的字节：权重（attention、dense MLP、shared expert、norm、LM head）读一次，MoE 层读这一步的
  全部 token 用到的 expert（:func:`~roofline_book.llm.layers.expected_experts`，依赖 token 总数）。
  这是均匀路由下用到的不同 expert 个数的期望；路由偏斜时用到的更少，所以对 MoE 模型这一项是
  期望，不是严格的下限。

:class:`StepModel` 把每条序列的那一份从 :func:`~roofline_book.llm.inference.step_entries` 与
:func:`~roofline_book.llm.inference.traffic_parts` 取出（按形状缓存，decode 的一份是上下文的仿射
函数时只取两次），所以整齐的一步与 ``step_floor`` 一致，而一步的计算是 O(1) 加上 prefill 块的个数。

多块设备（:class:`~roofline_book.distributed.split.Split`）时，每块设备的计算至少是整组的
``1 / max(tp, ep)``，字节按 :func:`~roofline_book.distributed.parallel.infer` 的分法（权重与激活
除以 ``tp``，缓存再除以 attention 的数据并行组数，expert 除以它们的份数），通信取带宽项；一步的
下界是三者中大的一个（通信可以与计算重叠）。
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .._base.validate import InvalidArgument
from ..devices.catalog import Hardware
from ..distributed.parallel import inference_comms
from ..distributed.routing import GPUS_PER_NODE
from ..distributed.split import Split
from ..dtypes import bytes_per_element
from ..llm.inference import Precisions, step_entries, traffic_parts
from ..llm.layers import MLA_ABSORB_MAX_NEW, expected_experts
from ..llm.shape import ModelConfig
from ..ops import ZERO, Cost
from ..roofline.roofs import time_bound

#: 计算资源的名字（:func:`~roofline_book.roofline.roofs.time_bound` 的 ``by_resource``）。
_MEMORY = ("hbm", "l2")


@dataclass(frozen=True)
class Piece:
    """一条序列在一步中的那一份：各计算资源上的秒数、随 token 走的字节、缓存的字节（byte）。"""

    compute: tuple[float, ...]
    token_bytes: int
    cache_bytes: int

    def __add__(self, other: Piece) -> Piece:
        return Piece(
            tuple(a + b for a, b in zip(self.compute, other.compute, strict=True)),
            self.token_bytes + other.token_bytes,
            self.cache_bytes + other.cache_bytes,
        )


@dataclass(frozen=True)
class StepTime:
    """一步的下界（秒），以及它由什么决定：``"compute"``、``"memory"`` 或 ``"network"``。"""

    seconds: float
    bound: str
    compute_s: float
    memory_s: float
    network_s: float


@dataclass
class StepModel:
    """``config`` 在 ``split`` 切开的一组 ``device`` 上，一步混合 batch 的时间下界。

    Parameters
    ----------
    config, device, split, precisions
        模型、设备、切分（默认一块设备）、精度（默认 BF16）。
    per_node
        一个节点的 GPU 数（EP 的 all-to-all 在节点内走 NVLink，跨节点走网络）。

    Examples
    --------
    一条 1000 个 token 的 prompt 的 prefill，与它之后第一个 decode step，与 ``step_floor`` 相同：

    >>> from roofline_book import hardware
    >>> from roofline_book.llm.config import model
    >>> from roofline_book.llm.inference import step_floor
    >>> m, h100 = model("llama-3-8b"), hardware("h100-sxm")
    >>> s = StepModel(m, h100)
    >>> math.isclose(s.time(chunks=[(1000, 1000, True)]).seconds,
    ...              step_floor(m, 1, 1000, 1000, h100).seconds, rel_tol=1e-12)
    True
    >>> math.isclose(s.time(decodes=1, context_sum=1001).seconds,
    ...              step_floor(m, 1, 1, 1001, h100).seconds, rel_tol=1e-12)
    True
    """

    config: ModelConfig
    device: Hardware
    split: Split = Split()
    precisions: Precisions = Precisions()
    per_node: int = GPUS_PER_NODE
    _pieces: dict[tuple[int, int, bool], Piece] = field(
        default_factory=dict, init=False, repr=False
    )

    def __post_init__(self) -> None:
        self.split.check(self.config, per_node=self.per_node)
        p, c = self.precisions, self.config
        probe = time_bound(
            Cost(10**12, 10**9, 0, 1, vector_flops=2 * 10**9, special_flops=10**9),
            self.device,
            p.activations,
        )
        self._resources = tuple(r for r in probe.by_resource if r not in _MEMORY)
        self._byte_s = max(probe.by_resource.get(r, 0.0) for r in _MEMORY) / 10**9
        # the bytes every step moves whatever its tokens: attention-side weights, norms,
        # the embedding and LM head tables (a token's embedding row is its own piece)
        parts = traffic_parts(c, 1, 1, 1, p)
        self._shared = parts.weights + parts.tables - p.table_bytes(c.hidden)
        per = (3 if c.gated else 2) * c.hidden * c.ffn
        self._expert_bytes = p.weight_bytes(per)
        self._moe_layers = sum(c.moe_layer(i) for i in range(c.layers))
        self._head = self._lm_head()
        self._decode = self._affine_decode()
        self._fit_chunks()
        tokens = [1, 64, 4096]
        comm = [self._comm_exact(t) for t in tokens]
        self._comm_per_token: float | None = comm[0]
        if any(
            not math.isclose(x, t * comm[0], rel_tol=1e-9)
            for x, t in zip(comm, tokens, strict=True)
        ):
            self._comm_per_token = None

    # ---- one sequence's share ------------------------------------------------------------
    def _lm_head(self) -> Piece:
        e = step_entries(self.config, 1, 1, 1, self.precisions)[-1]
        assert e.id == "lm_head"
        a = bytes_per_element(self.precisions.activations)
        return Piece(self._compute(e.cost), self.config.vocab * a, 0)

    def _compute(self, cost: Cost) -> tuple[float, ...]:
        if not cost.flops:
            return tuple(0.0 for _ in self._resources)
        t = time_bound(
            Cost(
                cost.flops,
                0,
                0,
                1,
                vector_flops=cost.vector_flops,
                special_flops=cost.special_flops,
                vector_fma_flops=cost.vector_fma_flops,
                fp32_vector_slots=cost.fp32_vector_slots,
            ),
            self.device,
            self.precisions.activations,
        )
        return tuple(t.by_resource.get(r, 0.0) for r in self._resources)

    def piece(self, new: int, context: int, emit: bool = True) -> Piece:
        """一条序列在一步中有 ``new`` 个新 token、上下文为 ``context`` 时的那一份。

        ``emit`` 为假时（prefill 的前几块）这一步不为它算 logits。
        """
        key = (new, context, emit)
        got = self._pieces.get(key)
        if got is None:
            if self._chunk is not None and new > self._chunk_from:
                got = self._from_chunk_fit(new, context, emit)
            else:
                got = self._piece(new, context, emit)
            self._pieces[key] = got
        return got

    # a prefill chunk's share is a polynomial in (new, context) with the terms below (causal
    # attention over new x context - new^2 / 2 keys, everything else per token), except under a
    # sliding window; the fit is checked at points it was not made from, else not used
    _TERMS = staticmethod(lambda n, x: (1.0, n, x, n * x, n * n))

    def _fit_chunks(self) -> None:
        self._chunk: list[list[float]] | None = None
        self._chunk_from = max(MLA_ABSORB_MAX_NEW, 1) if self.config.mla else 1
        lo = self._chunk_from + 1
        top = self.config.max_context
        if top < 4 * lo + 64:
            return
        points = [
            (lo, lo),
            (lo, top // 2),
            (top // 4, top // 4),
            (top // 4, top),
            (lo + 7, top // 3),
        ]
        rows = [list(self._TERMS(n, x)) for n, x in points]
        values = [self._flat(self._piece(n, x, True)) for n, x in points]
        coeffs = _solve(rows, values)
        if coeffs is None:
            return
        self._chunk = coeffs
        for n, x in [(lo + 3, lo + 3), (top // 8, top // 2), (top // 3 + 1, top - 5), (500, 1000)]:
            if n > x or x > top:
                continue
            got, want = (
                self._flat(self._piece(n, x, True)),
                self._flat(self._from_chunk_fit(n, x, True)),
            )
            if any(
                not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)
                for a, b in zip(got, want, strict=True)
            ):
                self._chunk = None
                return

    def _flat(self, p: Piece) -> list[float]:
        return [*p.compute, float(p.token_bytes), float(p.cache_bytes)]

    def _from_chunk_fit(self, new: int, context: int, emit: bool) -> Piece:
        assert self._chunk is not None
        terms = self._TERMS(new, context)
        flat = [math.fsum(c * t for c, t in zip(col, terms, strict=True)) for col in self._chunk]
        r = len(self._resources)
        piece = Piece(tuple(flat[:r]), round(flat[r]), round(flat[r + 1]))
        if emit:
            return piece
        return Piece(
            tuple(a - b for a, b in zip(piece.compute, self._head.compute, strict=True)),
            piece.token_bytes - self._head.token_bytes,
            piece.cache_bytes,
        )

    def _piece(self, new: int, context: int, emit: bool) -> Piece:
        c, p = self.config, self.precisions
        total = sum((e.cost for e in step_entries(c, 1, new, context, p)), ZERO)
        parts = traffic_parts(c, 1, new, context, p)
        token = p.table_bytes(new * c.hidden) + parts.logits
        piece = Piece(self._compute(total), token, parts.cache)
        if not emit:
            piece = Piece(
                tuple(a - b for a, b in zip(piece.compute, self._head.compute, strict=True)),
                piece.token_bytes - self._head.token_bytes,
                piece.cache_bytes,
            )
        return piece

    def _affine_decode(self) -> tuple[Piece, Piece] | None:
        """decode 的一份是 ``a + b x context`` 时的 ``(a, b)``；滑动窗口的模型不是，返回 None。"""
        top = self.config.max_context
        probes = sorted({1, 2, min(top, 777), min(top, 4096), top})
        pieces = {x: self._piece(1, x, True) for x in probes}
        a1, a2 = pieces[1], pieces[2]
        slope = Piece(
            tuple(y - x for x, y in zip(a1.compute, a2.compute, strict=True)),
            a2.token_bytes - a1.token_bytes,
            a2.cache_bytes - a1.cache_bytes,
        )
        base = Piece(
            tuple(x - s for x, s in zip(a1.compute, slope.compute, strict=True)),
            a1.token_bytes - slope.token_bytes,
            a1.cache_bytes - slope.cache_bytes,
        )
        for x, got in pieces.items():
            want = self._scaled(base, slope, 1, x)
            close = all(
                math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-18)
                for u, v in zip(got.compute, want.compute, strict=True)
            )
            if not close or (got.token_bytes, got.cache_bytes) != (
                want.token_bytes,
                want.cache_bytes,
            ):
                return None
        return base, slope

    @staticmethod
    def _scaled(base: Piece, slope: Piece, count: int, context_sum: int) -> Piece:
        return Piece(
            tuple(
                count * a + context_sum * b
                for a, b in zip(base.compute, slope.compute, strict=True)
            ),
            count * base.token_bytes + context_sum * slope.token_bytes,
            count * base.cache_bytes + context_sum * slope.cache_bytes,
        )

    def decodes(self, count: int, context_sum: int, contexts: list[int] | None = None) -> Piece:
        """``count`` 条 decode 序列（各一个新 token）的份之和，它们的上下文之和为 ``context_sum``。

        decode 的一份不是上下文的仿射函数时（滑动窗口），需要 ``contexts`` 逐条给出。
        """
        if self._decode is not None:
            return self._scaled(*self._decode, count, context_sum)
        if contexts is None:
            raise InvalidArgument(
                "contexts", f"must list each sequence's context for {self.config.key}"
            )
        total = Piece(tuple(0.0 for _ in self._resources), 0, 0)
        for x in contexts:
            total = total + self.piece(1, x, True)
        return total

    @property
    def affine(self) -> bool:
        """decode 的一份是否是上下文的仿射函数（没有滑动窗口的模型都是）。"""
        return self._decode is not None

    def decode_lines(self, count: int, context_sum: int) -> list[tuple[float, float, str]]:
        """只有 decode 的一串步：第 ``j`` 步（上下文之和 ``context_sum + j x count``）在每种资源
        上的时间是 ``a + b j``；返回各资源的 ``(a, b, 种类)``。decode 的一份须是仿射的
        （:attr:`affine`）。"""
        assert self._decode is not None
        base, slope = self._decode
        s = self.split
        lanes = max(s.tp, s.ep)
        now = self._scaled(base, slope, count, context_sum)
        step = self._scaled(base, slope, 0, count)
        lines = [
            (a / lanes, b / lanes, "compute")
            for a, b in zip(now.compute, step.compute, strict=True)
        ]
        none = Piece(tuple(0.0 for _ in self._resources), 0, 0)
        a = self._device_bytes(now, count)
        b = self._device_bytes(step, count) - self._device_bytes(none, count)
        lines.append((a * self._byte_s, b * self._byte_s, "memory"))
        lines.append((self.network_s(count), 0.0, "network"))
        return lines

    # ---- the step ------------------------------------------------------------------------
    def _comm_exact(self, tokens: int) -> float:
        if self.split.devices == 1:
            return 0.0
        comms = inference_comms(
            self.config, self.split, tokens, 1, self.device, self.precisions, per_node=self.per_node
        )
        return math.fsum(x.time.bandwidth_s for x in comms)

    def _device_bytes(self, total: Piece, tokens: int) -> float:
        """一块设备在一步中必须搬运的字节：权重与表除以 ``tp``，随 token 走的字节再除以
        attention 的数据并行组数，缓存除以它的份数，这一步的 ``tokens`` 个 token 用到的 expert
        除以它们的份数。"""
        s, c = self.split, self.config
        experts = 0
        if self._moe_layers:
            touched = expected_experts(c.experts, c.experts_per_token, tokens)
            experts = round(touched * self._expert_bytes) * self._moe_layers
        return (
            self._shared / s.tp
            + total.token_bytes / (s.tp * s.attention_dp)
            + total.cache_bytes / (s.attention_dp * (1 if c.mla else s.tp))
            + experts / s.expert_shards
        )

    def network_s(self, tokens: int) -> float:
        """一步有 ``tokens`` 个 token 时通信的带宽项（秒）。"""
        if self._comm_per_token is not None:
            return tokens * self._comm_per_token
        return self._comm_exact(tokens)

    def time(
        self,
        *,
        decodes: int = 0,
        context_sum: int = 0,
        contexts: list[int] | None = None,
        chunks: list[tuple[int, int, bool]] = (),  # type: ignore[assignment]
    ) -> StepTime:
        """一步的下界：``decodes`` 条 decode 序列（上下文之和 ``context_sum``）加上 ``chunks``。

        ``chunks`` 的每一项是 ``(new, context, emit)``：一个 prefill 块有 ``new`` 个 token，块末的
        上下文为 ``context``，``emit`` 表示这一步为它出第一个 token。
        """
        total = (
            self.decodes(decodes, context_sum, contexts)
            if decodes
            else Piece(tuple(0.0 for _ in self._resources), 0, 0)
        )
        tokens = decodes
        for new, context, emit in chunks:
            total = total + self.piece(new, context, emit)
            tokens += new
        if tokens == 0:
            return StepTime(0.0, "memory", 0.0, 0.0, 0.0)
        lanes = max(self.split.tp, self.split.ep)
        compute = max(total.compute) / lanes
        nbytes = self._device_bytes(total, tokens)
        memory = nbytes * self._byte_s
        network = self.network_s(tokens)
        seconds = max(compute, memory, network)
        bound = "compute" if seconds == compute else "memory" if seconds == memory else "network"
        return StepTime(seconds, bound, compute, memory, network)


def _solve(rows: list[list[float]], values: list[list[float]]) -> list[list[float]] | None:
    """解 ``rows @ X = values``（方阵，Gauss 消元，选主元）；返回 X 的每一列，奇异时 None。"""
    n, m = len(rows), len(values[0])
    a = [list(map(float, r)) + list(v) for r, v in zip(rows, values, strict=True)]
    for i in range(n):
        pivot = max(range(i, n), key=lambda r: abs(a[r][i]))
        if a[pivot][i] == 0:
            return None
        a[i], a[pivot] = a[pivot], a[i]
        for r in range(n):
            if r != i and a[r][i]:
                f = a[r][i] / a[i][i]
                a[r] = [x - f * y for x, y in zip(a[r], a[i], strict=True)]
    return [[a[i][n + j] / a[i][i] for i in range(n)] for j in range(m)]


__all__ = ["Piece", "StepModel", "StepTime"]
