"""一个 serving 引擎按步调度：它的等待队列、正在跑的序列、KV cache 的 block，以及每一步跑什么。

调度（``scheduler``）：

- ``"static"``：引擎空闲时取走已到达的请求（至多放得下的条数，每条按 prompt 加全部输出预留内存），
  一步 prefill 全部 prompt，再 decode 到这一批最长的那条结束；结束早的占着位置（padding）。
- ``"continuous"``：iteration-level 调度（Orca 的做法）：每步跑全部在 decode 的序列，再加上这一步
  新接纳的请求的整个 prompt（一步的 token 至多 ``max_tokens``，但至少一条 prompt）。vLLM V0 的默认
  调度不同：有 prompt 要做的那一步只做 prefill，不带 decode；这里没有建模它。
- ``"chunked"``：chunked prefill（Sarathi-Serve，vLLM V1 的默认）：每步的 token 预算为 ``chunk``；
  先放全部 decode，余下的预算分给还在 prefill 的请求，一条 prompt 可以分几步做完。
- ``"prefill"``、``"decode"``：prefill/decode 分离时的两种引擎。前者只做 prefill（每步至多
  ``max_tokens`` 个 token），后者 decode 从 prefill 引擎传来 KV cache 的请求，它们的 block 与
  聚合部署一样边 decode 边取，被抢占的在 decode 引擎上重算（vLLM 的 P/D 做法）。

内存按 vLLM（V0）的规则：KV cache 以 16 个 token 为一个 block；一个请求在它 prompt 的 block 放得下
时才被接纳（留 1% 的 block 作 watermark；prefix cache 命中的整 block 共用，不另占）；decode 写满一个
block 就再取一个；没有空 block 时，最后接纳的请求被抢占，它的 KV cache 丢掉，稍后连同已生成的
token 重新 prefill。vLLM V1 在 chunked prefill 时按块取 block，比这里接纳得早一些。
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

from .steps import StepModel, StepTime

#: 一个 block 的 token 数（vLLM 的默认 ``block_size``）。
BLOCK = 16

#: 接纳新请求时留着不用的 block 比例（vLLM V0 的 ``watermark``）。
WATERMARK = 0.01


@dataclass(eq=False)
class Track:
    """一个请求在模拟中的状态与时刻（秒）。"""

    index: int
    arrival: float
    prompt: int
    output: int
    cached: int = 0
    """prefix cache 命中的 prompt token 数：prefill 不算它们，但 attention 要读它们。"""
    done: int = 0
    """已有 KV cache 的 prompt token 数（含命中的）。"""
    generated: int = 0
    first: float | None = None
    finish: float | None = None
    blocks: int = 0
    shared: int = 0
    """接纳时与 prefix cache 共用、不另占的 block 数。"""
    epoch: int = 0
    """被抢占一次加一；decode 的到期堆里旧的项据此作废。"""
    offset: int = 0
    """在 decode 时：上下文 = ``offset + 引擎的 decode 步数``。"""

    @property
    def target(self) -> int:
        """prefill 要做到的 token 数：prompt，被抢占过的还要加上已生成的（重新计算）。"""
        return self.prompt + (self.generated if self.epoch else 0)


def _envelope(
    lines: list[tuple[float, float, str]], steps: int, budget: float
) -> tuple[int, float, int]:
    """步 ``j = 0 .. steps - 1`` 的时间是各 ``a + b j`` 中最大的：返回结束时刻早于 ``budget`` 的
    前 ``n`` 步、它们的总时间，以及其中由内存决定的步数。"""

    def at(line: tuple[float, float, str], j: float) -> float:
        return line[0] + line[1] * j

    def span(a: float, b: float, j0: int, j1: int) -> float:  # sum of a + b j over j0 <= j < j1
        return (j1 - j0) * a + b * (j1 * (j1 - 1) - j0 * (j0 - 1)) / 2

    done, total, memory = 0, 0.0, 0
    while done < steps:
        top = max(lines, key=lambda x: (at(x, done), x[1]))
        end = steps
        for other in lines:  # the first step at which a steeper line takes over
            if other[1] > top[1]:
                cross = (top[0] - other[0]) / (other[1] - top[1])
                end = min(end, max(done + 1, math.ceil(cross)))
        a, b, kind = top
        whole = span(a, b, done, end)
        if total + whole >= budget:  # stop inside this stretch, at the last step ending in time
            lo, hi = done, end
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if total + span(a, b, done, mid) < budget:
                    lo = mid
                else:
                    hi = mid - 1
            memory += (lo - done) * (kind == "memory")
            return lo, total + span(a, b, done, lo), memory
        total += whole
        memory += (end - done) * (kind == "memory")
        done = end
    return done, total, memory


def _blocks(tokens: int) -> int:
    return -(-tokens // BLOCK)


@dataclass
class StepRecord:
    """时间线上的一步：哪个引擎、起止时刻、每条序列这一步的 token 数与种类。"""

    engine: int
    start: float
    end: float
    bound: str
    items: tuple[tuple[int, str, int], ...]
    """``(请求序号, "prefill" 或 "decode", token 数)``。"""


@dataclass
class Engine:
    """一个引擎：一组设备（``steps`` 描述它们）上的一个模型副本。"""

    number: int
    steps: StepModel
    scheduler: str
    capacity_blocks: int
    chunk: int = 2048
    max_tokens: int = 8192
    max_seqs: int | None = None
    estimate: tuple[float, float] | None = None
    """``(计算, 内存)`` 两个效率：给了就把一步的下界换成估计。"""
    waiting: deque[Track] = field(default_factory=deque)
    prefilling: list[Track] = field(default_factory=list)
    running: dict[int, Track] = field(default_factory=dict)
    """在 decode 的请求，按接纳的先后。"""
    k: int = 0
    """已跑的 decode 步数：在 decode 的请求的上下文是 ``offset + k``。"""
    offset_sum: int = 0
    due: list[tuple[int, int, int, Track]] = field(default_factory=list)
    phase: list[int] = field(default_factory=lambda: [0] * BLOCK)
    free_blocks: int = 0
    batch: list[Track] = field(default_factory=list)
    """static：正在跑的这一批。"""
    batch_steps: int = 0
    pending: tuple[int, tuple[tuple[Track, int], ...]] = (0, ())
    steps_run: int = 0
    memory_steps: int = 0
    batch_sum: int = 0
    preemptions: int = 0

    def __post_init__(self) -> None:
        self.free_blocks = self.capacity_blocks

    @property
    def load(self) -> int:
        """排队的、在 prefill 的和在 decode 的请求数。"""
        return len(self.waiting) + len(self.prefilling) + len(self.running) + len(self.batch)

    # ---- the decode set ----------------------------------------------------------------
    def _join(self, t: Track) -> None:
        """``t`` 开始 decode：下一个 decode 步喂它最新的 token，上下文为 ``prompt + generated``。"""
        t.offset = t.prompt + t.generated - self.k
        self.offset_sum += t.offset
        self.phase[(t.offset - 1) % BLOCK] += 1
        heapq.heappush(self.due, (self.k + t.output - t.generated - 1, t.index, t.epoch, t))
        self.running[t.index] = t

    def _leave(self, t: Track, held: int) -> None:
        """``t`` 离开 decode：放回它 ``held`` 个 token 的 block（接纳时预留的更多就放回那些）。"""
        del self.running[t.index]
        self.offset_sum -= t.offset
        self.phase[(t.offset - 1) % BLOCK] -= 1
        self.free_blocks += max(t.blocks, _blocks(held) - t.shared)
        t.blocks = 0

    def _preempt_newest(self) -> bool:
        """抢占最后接纳的在 decode 的请求（vLLM：recompute）；没有可抢占的返回 False。"""
        if not self.running:
            return False
        t = self.running[next(reversed(self.running))]
        t.generated = t.offset + self.k - t.prompt
        self._leave(t, t.offset + self.k - 1)
        t.epoch += 1
        t.done = 0
        self.waiting.appendleft(t)
        self.preemptions += 1
        return True

    def _admit(self, t: Track, tokens: int, *, shared: bool = True) -> bool:
        """为 ``tokens`` 个 token 取 block；prefix cache 命中的整 block 共用，不另占（vLLM 按
        block 的哈希共用）。KV cache 从别处传来的请求（``shared`` 为假）占整份。"""
        if self.max_seqs is not None and self.load - len(self.waiting) >= self.max_seqs:
            return False
        common = t.cached // BLOCK if shared else 0
        need = _blocks(tokens) - common
        if need > self.free_blocks - int(WATERMARK * self.capacity_blocks):
            return False
        self.free_blocks -= need
        t.blocks, t.shared = need, common
        return True

    def _start_prefill(self, t: Track) -> int:
        """接纳 ``t`` 之后它还要 prefill 的 token 数（prefix cache 命中的不算，重算时也不算）。"""
        t.done = t.cached
        return t.target - t.done

    # ---- one step ----------------------------------------------------------------------
    def plan(self) -> StepTime | None:
        """选好下一步跑什么，返回它的下界；没有可跑的返回 None。"""
        if self.scheduler == "static":
            return self._plan_static()
        if self.scheduler == "decode":  # KV caches that arrived: the prompt's blocks, whole
            while (
                self.waiting
                and not self.waiting[0].epoch
                and self._admit(self.waiting[0], self.waiting[0].prompt, shared=False)
            ):
                self._join(self.waiting.popleft())
        chunks: list[tuple[Track, int]] = []
        if self.running:
            while self.phase[(-self.k) % BLOCK] > self.free_blocks and self._preempt_newest():
                pass
            self.free_blocks -= self.phase[(-self.k) % BLOCK]
        decodes = len(self.running)
        if self.scheduler == "chunked":
            budget = max(self.chunk - decodes, 0)
            for t in self.prefilling:
                if budget <= 0:
                    break
                n = min(t.target - t.done, budget)
                chunks.append((t, n))
                budget -= n
            while (
                budget > 0 and self.waiting and self._admit(self.waiting[0], self.waiting[0].target)
            ):
                t = self.waiting.popleft()
                self.prefilling.append(t)
                n = min(self._start_prefill(t), budget)
                chunks.append((t, n))
                budget -= n
        else:  # whole prompts; a decode engine recomputes the requests it preempted (vLLM's P/D)
            budget = self.max_tokens
            while self.waiting:
                t = self.waiting[0]
                left = t.target - t.cached
                if self.scheduler == "decode" and not t.epoch:
                    break
                if (chunks and left > budget) or not self._admit(t, t.target):
                    break
                self.waiting.popleft()
                chunks.append((t, self._start_prefill(t)))
                budget -= left
        if not decodes and not chunks:
            return None
        contexts = None
        if not self.steps.affine:
            contexts = [t.offset + self.k for t in self.running.values()]
        bound = self.steps.time(
            decodes=decodes,
            context_sum=self.offset_sum + decodes * self.k,
            contexts=contexts,
            chunks=[(n, t.done + n, t.done + n >= t.target) for t, n in chunks],
        )
        self.pending = (decodes, tuple(chunks))
        self._count(bound, decodes + len(chunks))
        return bound

    def _count(self, bound: StepTime, sequences: int) -> None:
        self.steps_run += 1
        self.batch_sum += sequences
        self.memory_steps += bound.bound == "memory"

    def _plan_static(self) -> StepTime | None:
        if not self.batch:
            while self.waiting and self._admit(
                self.waiting[0], self.waiting[0].prompt + self.waiting[0].output
            ):
                self.batch.append(self.waiting.popleft())
            if not self.batch:
                return None
            self.batch_steps = 0
            chunks = [(t, self._start_prefill(t)) for t in self.batch]
            bound = self.steps.time(chunks=[(n, t.prompt, True) for t, n in chunks])
            self.pending = (0, tuple(chunks))
        else:  # every sequence of the batch steps until the longest ends (padding)
            j = self.batch_steps
            contexts = [t.prompt + j + 1 for t in self.batch]
            bound = self.steps.time(
                decodes=len(contexts),
                context_sum=sum(contexts),
                contexts=None if self.steps.affine else contexts,
            )
            self.pending = (len(contexts), ())
        self._count(bound, len(self.batch))
        return bound

    def forward(self, budget: float) -> float:
        """只有 decode、没有请求结束、不缺 block 的一串步一次走完，只走结束时刻早于 ``budget`` 秒
        之后的那些；返回走过的秒数。时间是逐步下界之和的闭式解（每种资源的时间随步数线性增长）。"""
        if self.scheduler == "static":
            return self._forward_static(budget)
        if (
            self.scheduler not in ("continuous", "chunked", "decode")
            or self.waiting
            or self.prefilling
            or not self.running
            or not self.steps.affine
        ):
            return 0.0
        steps = self.due[0][0] - self.k  # the steps before the first that ends a request
        steps = min(steps, self._blocks_last())
        if steps <= 0:
            return 0.0
        count = len(self.running)
        lines = self.steps.decode_lines(count, self.offset_sum + count * self.k)
        if self.estimate is not None:
            compute, memory = self.estimate
            scale = {"compute": 1 / compute, "memory": 1 / memory, "network": 1.0}
            lines = [(a * scale[k], b * scale[k], k) for a, b, k in lines]
        n, elapsed, memory_steps = _envelope(lines, steps, budget)
        if n == 0:
            return 0.0
        self.free_blocks -= self._block_need(n)
        self.k += n
        self.steps_run += n
        self.batch_sum += n * count
        self.memory_steps += memory_steps
        return elapsed

    def _forward_static(self, budget: float) -> float:
        if not self.batch or self.pending[1] or not self.steps.affine:
            return 0.0
        j = self.batch_steps
        if j == 0 and self.batch[0].first is None:
            return 0.0
        live = [t.output for t in self.batch if t.finish is None]
        steps = min(live) - 2 - j  # decode step j leaves every sequence with j + 2 tokens
        if steps <= 0:
            return 0.0
        count = len(self.batch)
        context_sum = sum(t.prompt for t in self.batch) + count * (j + 1)
        lines = self.steps.decode_lines(count, context_sum)
        if self.estimate is not None:
            compute, memory = self.estimate
            scale = {"compute": 1 / compute, "memory": 1 / memory, "network": 1.0}
            lines = [(a * scale[k], b * scale[k], k) for a, b, k in lines]
        n, elapsed, memory_steps = _envelope(lines, steps, budget)
        self.batch_steps += n
        for t in self.batch:
            t.generated += n
        self.steps_run += n
        self.batch_sum += n * count
        self.memory_steps += memory_steps
        return elapsed

    def _block_need(self, n: int) -> int:
        cycle = sum(self.phase)
        full, rest = divmod(n, BLOCK)
        return full * cycle + sum(self.phase[(-(self.k + j)) % BLOCK] for j in range(rest))

    def _blocks_last(self) -> int:
        """有几步的新 block 放得下。"""
        cycle = sum(self.phase)
        if cycle == 0:
            return 1 << 62
        full, left = divmod(self.free_blocks, cycle)  # whole cycles of BLOCK steps, then
        n = full * BLOCK  # one step at a time while the blocks that step starts still fit
        for _ in range(BLOCK - 1):
            left -= self.phase[(-(self.k + n)) % BLOCK]
            if left < 0:
                break
            n += 1
        return n

    def duration(self, bound: StepTime) -> float:
        """这一步花的时间：默认是下界；给了效率就是估计。"""
        if self.estimate is None:
            return bound.seconds
        compute, memory = self.estimate
        return max(bound.compute_s / compute, bound.memory_s / memory, bound.network_s)

    def finish_step(self, now: float) -> tuple[list[Track], list[Track]]:
        """这一步在 ``now`` 结束：记下 token，返回 ``(结束的请求, prefill 刚做完的请求)``。"""
        decodes, chunks = self.pending
        self.pending = (0, ())
        if self.scheduler == "static":
            return self._finish_static(now, bool(decodes)), []
        ended: list[Track] = []
        prefilled: list[Track] = []
        if decodes:
            k = self.k
            self.k += 1
            while self.due and self.due[0][0] <= k:
                _, _, epoch, t = heapq.heappop(self.due)
                if epoch != t.epoch or t.finish is not None:
                    continue
                self._leave(t, t.offset + k)
                t.generated, t.finish = t.output, now
                ended.append(t)
        for t, n in chunks:
            t.done += n
            if t.done < t.target:
                continue
            if self.scheduler == "chunked":
                self.prefilling.remove(t)
            t.generated += 1
            if t.first is None:
                t.first = now
            if self.scheduler == "prefill":
                prefilled.append(t)
            elif t.generated >= t.output:
                t.finish = now
                self.free_blocks += t.blocks
                t.blocks = 0
                ended.append(t)
            else:
                self._join(t)
        return ended, prefilled

    def _finish_static(self, now: float, decoded: bool) -> list[Track]:
        ended = []
        if not decoded:
            for t in self.batch:
                t.done, t.generated, t.first = t.prompt, 1, now
        else:
            self.batch_steps += 1
            for t in self.batch:
                if t.generated < t.output:
                    t.generated += 1
        for t in self.batch:
            if t.finish is None and t.generated >= t.output:
                t.finish = now
                ended.append(t)
        if all(t.finish is not None for t in self.batch):
            for t in self.batch:
                self.free_blocks += t.blocks
                t.blocks = 0
            self.batch = []
        return ended

    def release(self, t: Track) -> None:
        """prefill 引擎把 ``t`` 的 KV cache 传走之后放掉它的 block。"""
        self.free_blocks += t.blocks
        t.blocks = 0
