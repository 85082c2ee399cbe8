"""One training step of a small Llama-style block, to profile: forward, backward, AdamW.

The block is a pre-norm decoder layer: RMSNorm, one fused QKV projection,
causal scaled-dot-product attention, the output projection and a residual
add; RMSNorm, a SwiGLU MLP (gate, up, down) and a residual add. Five linear
layers, no biases, FP32. Its parameters are filled from a seeded generator,
so two runs do the same arithmetic.

Run as a script (``python -m roofline_book.measure.trainstep`` or
``roofline-book profile .../trainstep.py``) it builds the block, takes one
warm-up step and then one step inside ``record_function("train_step")``, so
a profile can be narrowed to that step (``--region train_step``).

torch is imported inside the functions.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from roofline_book import _validate  # absolute: this file also runs as a script

REGION = "train_step"
"""The ``record_function`` range the script puts around its measured step."""


@dataclass(frozen=True)
class BlockShape:
    """Sizes of the block and of its input (tokens = batch * seq)."""

    hidden: int = 512
    heads: int = 8
    ffn: int = 1408
    batch: int = 2
    seq: int = 256

    def __post_init__(self) -> None:
        for name in ("hidden", "heads", "ffn", "batch", "seq"):
            _validate.size(name, getattr(self, name))
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    @property
    def linears(self) -> dict[str, tuple[int, int]]:
        """Each linear layer's (in_features, out_features), in the order the forward runs them."""
        h, f = self.hidden, self.ffn
        return {"qkv": (h, 3 * h), "o": (h, h), "gate": (h, f), "up": (h, f), "down": (f, h)}

    @property
    def params(self) -> int:
        """Parameters: the five projections and the two RMSNorm weights."""
        return sum(i * o for i, o in self.linears.values()) + 2 * self.hidden


def training_step(shape: BlockShape = BlockShape(), *, seed: int = 0) -> Callable[[], float]:
    """Build the block, its input and a ``torch.optim.AdamW`` (``foreach=False``); return a
    function that runs one step (forward, loss, backward, AdamW, zero_grad) and returns the loss.
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
    """Median wall time of one step (second) for each shape, after one warm-up step.

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


#: Where the growth of time with tokens is judged: below LOW the fixed cost per step
#: dominates, above HIGH the time follows the work; in between, neither.
GROWTH_LOW, GROWTH_HIGH = 0.25, 0.75


def growth(small: tuple[int, float], large: tuple[int, float]) -> float:
    """How much of the extra work shows in the time: ``(T2/T1 - 1) / (N2/N1 - 1)``.

    0 when the time does not move (a fixed cost per step), 1 when it grows
    as the tokens do (time proportional to the work).

    Examples
    --------
    >>> round(growth((32, 0.010), (256, 0.012)), 4), growth((256, 0.1), (1024, 0.4))
    (0.0286, 1.0)
    """
    (n1, t1), (n2, t2) = small, large
    if n2 <= n1:
        raise ValueError(f"large must have more tokens than small, got {n1} and {n2}")
    return (t2 / t1 - 1) / (n2 / n1 - 1)


def scaling_verdict(value: float) -> str:
    """``"overhead"`` (below :data:`GROWTH_LOW`), ``"work"`` (above :data:`GROWTH_HIGH`),
    or ``"mixed"``.

    Examples
    --------
    >>> scaling_verdict(0.05), scaling_verdict(0.9), scaling_verdict(0.5)
    ('overhead', 'work', 'mixed')
    """
    if value < GROWTH_LOW:
        return "overhead"
    return "work" if value > GROWTH_HIGH else "mixed"


def main(argv: Sequence[str] | None = None) -> None:
    """The script: one warm-up step, then one step inside ``record_function(REGION)``."""
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
