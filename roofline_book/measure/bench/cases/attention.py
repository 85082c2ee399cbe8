"""self-attention 前向：逐个写出的三个 kernel，对照 SDPA。"""

from __future__ import annotations

import math
import warnings

from .... import ops
from ...._base import validate as _validate
from ....dtypes import bytes_per_element
from ..registry import Case, Operator, Prepared, Unsupported, compare, register
from ._tensors import CHECK_ROWS, _generator, _randn, is_out_of_memory

ATTENTION_IMPLS = ("materialized", "sdpa")
"""``materialized``：``S = scale * Q K^T`` （baddbmm）、``P = softmax(S)``、``O = P V`` （bmm），
各写入预先分配的 tensor；``sdpa``：``torch.nn.functional.scaled_dot_product_attention``，在 CUDA
上强制使用 flash 后端。模型为 ``ops.attention(impl="materialized")`` 与
``ops.attention(impl="flash")``。
"""


def _flash_only():
    """一个只允许 SDPA 使用 flash 后端的 context（torch >= 2.1）。"""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # torch >= 2.3
    except ImportError:
        import torch

        return torch.backends.cuda.sdp_kernel(
            enable_flash=True, enable_math=False, enable_mem_efficient=False
        )
    return sdpa_kernel(SDPBackend.FLASH_ATTENTION)


def _materialized(q, k, v, scale: float):
    """逐个写出、写入预先分配 tensor 的 attention 三个 kernel：(fn, result)。"""
    import torch

    bh, seq, head_dim = q.shape[0] * q.shape[1], q.shape[2], q.shape[3]
    q3, k3, v3 = (t.reshape(bh, seq, head_dim) for t in (q, k, v))
    kt = k3.transpose(1, 2)
    scores = torch.empty((bh, seq, seq), device=q.device, dtype=q.dtype)
    probs = torch.empty_like(scores)
    out = torch.empty_like(q3)

    def fn() -> None:
        scores.baddbmm_(q3, kt, beta=0.0, alpha=scale)
        torch.softmax(scores, -1, out=probs)
        torch.bmm(probs, v3, out=out)

    return fn, lambda: out


def attention_case(
    batch: int,
    heads: int,
    seq_q: int,
    seq_k: int,
    head_dim: int,
    *,
    impl: str,
    precision: str = "bf16",
) -> Case:
    """self-attention 前向，不加 mask，``seq_q = seq_k``；模型为 :func:`ops.attention`。"""
    impl = _validate.choice("impl", impl, ATTENTION_IMPLS)
    if seq_q != seq_k:
        raise ValueError(f"the suite's attention has seq_q == seq_k, got {seq_q} and {seq_k}")
    seq = seq_q
    model_impl = "materialized" if impl == "materialized" else "flash"
    cost = ops.attention(batch, heads, seq, seq, head_dim, precision, impl=model_impl)
    s = bytes_per_element(precision)
    bh = batch * heads
    rows = min(seq, CHECK_ROWS)
    footprint = 4 * bh * seq * head_dim * s + 8 * bh * (2 * seq * head_dim + 2 * rows * seq)
    if impl == "materialized":
        footprint += 2 * bh * seq * seq * s

    def build(device) -> Prepared:
        import torch

        gen = _generator(device)
        q, k, v = (_randn((batch, heads, seq, head_dim), precision, device, gen) for _ in range(3))
        scale = 1.0 / math.sqrt(head_dim)
        close, note = (lambda: None), ""
        if impl == "materialized":
            fn, result = _materialized(q, k, v, scale)
        else:
            sdpa = torch.nn.functional.scaled_dot_product_attention
            if device.type == "cuda":
                context = _flash_only()
                context.__enter__()

                def close() -> None:
                    context.__exit__(None, None, None)

                note = "flash backend forced"
            else:
                note = "default CPU backend"
            box = {}

            def fn() -> None:
                box["o"] = sdpa(q, k, v)

            def result():
                return box["o"].reshape(bh, seq, head_dim)

        def check() -> dict:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    fn()
            except RuntimeError as exc:
                if is_out_of_memory(exc):
                    raise
                why = "; ".join(str(w.message) for w in caught) or str(exc)
                raise Unsupported(
                    f"{impl} attention in {precision} on {device.type}: {why}"
                ) from None
            qd, kd, vd = (t.reshape(bh, seq, head_dim).double() for t in (q, k, v))
            weights = torch.softmax(qd[:, :rows] @ kd.transpose(1, 2) * scale, -1)
            return compare(result()[:, :rows], weights @ vd, precision)

        return Prepared(fn, check, close, note)

    shape = (
        ("batch", batch),
        ("heads", heads),
        ("seq_q", seq),
        ("seq_k", seq),
        ("head_dim", head_dim),
    )
    return Case("attention", shape, precision, impl, cost, footprint, build)


register(
    Operator(
        "attention",
        ("batch", "heads", "seq_q", "seq_k", "head_dim"),
        ATTENTION_IMPLS,
        "attention",
        attention_case,
        label=lambda s: f"b{s['batch']} h{s['heads']} s{s['seq_q']} d{s['head_dim']}",
        marker="v",
        colour="black",
    )
)
