"""一个小的 Llama 式 block 的一个训练步，供 profile：前向、反向、AdamW。

block 是 pre-norm 的 decoder 层：RMSNorm、一个融合的 QKV 投影、causal scaled-dot-product
attention、输出投影和一次 residual add；RMSNorm、SwiGLU MLP（gate、up、down）和一次 residual
add。五个 linear layer，没有 bias，FP32。参数由设定了种子的生成器填充，所以两次运行做的运算相同。

作为脚本运行时（``python -m roofline_book.measure.profile.trainstep`` 或
``roofline-book profile .../trainstep.py``），它构建 block，先做一步预热，再在
``record_function("train_step")`` 之内做一步，这样 profile 可以只看这一步
（``--region train_step``）。

torch 在函数内部才导入。
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from roofline_book._base import validate as _validate  # absolute: this file also runs as a script
from roofline_book._base.validate import InvalidArgument

REGION = "train_step"
"""脚本套在它测量的那一步外面的 ``record_function`` 范围。"""


@dataclass(frozen=True)
class BlockShape:
    """block 及其输入的尺寸（tokens = batch * seq）。"""

    hidden: int = 512
    heads: int = 8
    ffn: int = 1408
    batch: int = 2
    seq: int = 256

    def __post_init__(self) -> None:
        for name in ("hidden", "heads", "ffn", "batch", "seq"):
            _validate.size(name, getattr(self, name))
        if self.hidden % self.heads:
            raise InvalidArgument(
                "hidden", f"must be a multiple of heads ({self.heads}); got {self.hidden}"
            )

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    @property
    def linears(self) -> dict[str, tuple[int, int]]:
        """每个 linear layer 的 (in_features, out_features)，按前向运行它们的顺序。"""
        h, f = self.hidden, self.ffn
        return {"qkv": (h, 3 * h), "o": (h, h), "gate": (h, f), "up": (h, f), "down": (f, h)}

    @property
    def params(self) -> int:
        """参数个数：五个投影和两个 RMSNorm 权重。"""
        return sum(i * o for i, o in self.linears.values()) + 2 * self.hidden


def training_step(shape: BlockShape = BlockShape(), *, seed: int = 0) -> Callable[[], float]:
    """构建 block、它的输入和一个 ``torch.optim.AdamW`` （``foreach=False``）；返回一个函数，
    它运行一步（前向、loss、反向、AdamW、zero_grad）并返回 loss。
    """
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(seed)
    h, heads = shape.hidden, shape.heads

    def weight(*size: int, scale: float) -> torch.nn.Parameter:
        return torch.nn.Parameter(torch.randn(*size, generator=gen) * scale)

    w = {name: weight(o, i, scale=i**-0.5) for name, (i, o) in shape.linears.items()}
    w["norm1"] = torch.nn.Parameter(torch.ones(h))
    w["norm2"] = torch.nn.Parameter(torch.ones(h))
    x = torch.randn(shape.batch, shape.seq, h, generator=gen)
    optimizer = torch.optim.AdamW(w.values(), lr=1e-3, foreach=False)

    def forward(x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        qkv = F.linear(F.rms_norm(x, (h,), w["norm1"]), w["qkv"])
        q, k, v = qkv.view(b, t, 3, heads, h // heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + F.linear(a.transpose(1, 2).reshape(b, t, h), w["o"])
        n = F.rms_norm(x, (h,), w["norm2"])
        return x + F.linear(F.silu(F.linear(n, w["gate"])) * F.linear(n, w["up"]), w["down"])

    def step() -> float:
        loss = forward(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return float(loss.detach())

    return step


def time_steps(
    shapes: Sequence[BlockShape], *, reps: int = 3, seed: int = 0
) -> list[tuple[int, float]]:
    """每个 shape 下一步的 wall time 中位数（秒），先做一步预热。

    Returns
    -------
    list of (tokens, seconds)
    """
    reps = _validate.size("reps", reps)
    out = []
    for shape in shapes:
        step = training_step(shape, seed=seed)
        step()
        samples = []
        for _ in range(reps):
            start = time.perf_counter()
            step()
            samples.append(time.perf_counter() - start)
        out.append((shape.tokens, statistics.median(samples)))
    return out


#: 判定时间随 token 数增长的界线：低于 LOW 时与 batch 无关的时间占主导（每步的固定开销，或
#: 读权重、优化器状态这类不随 batch 变的字节），高于 HIGH 时时间跟随工作量；介于两者之间时无法判定。
GROWTH_LOW, GROWTH_HIGH = 0.25, 0.75


def growth(small: tuple[int, float], large: tuple[int, float]) -> float:
    """多出的工作有多少体现在时间上：``(T2/T1 - 1) / (N2/N1 - 1)``。

    时间不变（与 batch 无关的时间：固定开销或不随 batch 变的字节）时为 0，
    时间随 token 数同比增长（时间与工作量成正比）时为 1。

    Examples
    --------
    >>> round(growth((32, 0.010), (256, 0.012)), 4), growth((256, 0.1), (1024, 0.4))
    (0.0286, 1.0)
    """
    (n1, t1), (n2, t2) = small, large
    if n2 <= n1:
        raise InvalidArgument("large", f"must have more tokens than small, got {n1} and {n2}")
    return (t2 / t1 - 1) / (n2 / n1 - 1)


def scaling_verdict(value: float) -> str:
    """``"overhead"`` （低于 :data:`GROWTH_LOW`）、``"work"`` （高于 :data:`GROWTH_HIGH`）
    或 ``"mixed"``。

    Examples
    --------
    >>> scaling_verdict(0.05), scaling_verdict(0.9), scaling_verdict(0.5)
    ('overhead', 'work', 'mixed')
    """
    if value < GROWTH_LOW:
        return "overhead"
    return "work" if value > GROWTH_HIGH else "mixed"


def main(argv: Sequence[str] | None = None) -> None:
    """脚本：先做一步预热，再在 ``record_function(REGION)`` 之内做一步。"""
    import torch

    parser = argparse.ArgumentParser(description="one training step of a small Llama-style block")
    defaults = BlockShape()
    for name in ("batch", "seq", "hidden", "heads", "ffn"):
        parser.add_argument(f"--{name}", type=int, default=getattr(defaults, name))
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    shape = BlockShape(args.hidden, args.heads, args.ffn, args.batch, args.seq)
    step = training_step(shape)
    step()
    with torch.profiler.record_function(REGION):
        step()


if __name__ == "__main__":
    main()
