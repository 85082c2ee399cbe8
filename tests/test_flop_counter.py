"""FLOPs cross-checked against PyTorch's own counter, FlopCounterMode.

It counts matrix products (mm, bmm, addmm, and so linear layers forward and
backward). It counts zero for elementwise ops, norms, softmax and optimizer
steps, which the last test pins down, so that if a PyTorch release starts
counting them the docstrings can be revisited.
"""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from roofline_book.ops import adamw, add, attention, gemm, linear_backward, rmsnorm, softmax

dim = st.integers(min_value=1, max_value=48)


def counted(fn) -> int:
    with FlopCounterMode(display=False) as mode:
        fn()
    return mode.get_total_flops()


@settings(max_examples=40, deadline=None)
@given(m=dim, k=dim, n=dim)
def test_mm(m, k, n):
    a, b = torch.randn(m, k), torch.randn(k, n)
    assert counted(lambda: a @ b) == gemm(m, k, n, "fp32").flops


@settings(max_examples=30, deadline=None)
@given(batch=st.integers(1, 5), m=dim, k=dim, n=dim)
def test_bmm(batch, m, k, n):
    a, b = torch.randn(batch, m, k), torch.randn(batch, k, n)
    assert counted(lambda: torch.bmm(a, b)) == gemm(m, k, n, "fp32", batch=batch).flops


@settings(max_examples=30, deadline=None)
@given(m=dim, k=dim, n=dim)
def test_addmm(m, k, n):
    bias, a, b = torch.randn(n), torch.randn(m, k), torch.randn(k, n)
    # FlopCounterMode counts addmm as its matrix product; the bias add is not counted.
    assert counted(lambda: torch.addmm(bias, a, b)) == gemm(m, k, n, "fp32").flops


@settings(max_examples=30, deadline=None)
@given(tokens=dim, d_in=dim, d_out=dim)
def test_linear_forward_and_backward(tokens, d_in, d_out):
    x = torch.randn(tokens, d_in, requires_grad=True)
    w = torch.randn(d_out, d_in, requires_grad=True)
    with FlopCounterMode(display=False) as mode:
        y = torch.nn.functional.linear(x, w)
        y.sum().backward()
    forward = gemm(tokens, d_in, d_out, "fp32").flops
    assert mode.get_total_flops() == forward + linear_backward(tokens, d_in, d_out, "fp32").flops
    assert mode.get_total_flops() == 3 * forward


@settings(max_examples=25, deadline=None)
@given(b=st.integers(1, 3), h=st.integers(1, 4), nq=dim, nk=dim, d=st.integers(1, 32))
def test_attention_as_matmuls(b, h, nq, nk, d):
    q, k, v = torch.randn(b, h, nq, d), torch.randn(b, h, nk, d), torch.randn(b, h, nk, d)

    def materialized():
        scores = q @ k.transpose(-2, -1) / d**0.5
        return torch.softmax(scores, dim=-1) @ v

    matmul_flops = 4 * b * h * nq * nk * d
    assert counted(materialized) == matmul_flops
    # The model adds the softmax's 5 FLOPs per score, which the counter leaves out.
    model = attention(b, h, nq, nk, d, "fp32", impl="materialized").flops
    assert model - matmul_flops == 5 * b * h * nq * nk


def test_counter_counts_nothing_for_memory_bound_ops():
    x, y = torch.randn(64, 32), torch.randn(64, 32)
    w = torch.ones(32)
    assert counted(lambda: x + y) == 0 and add(64 * 32).flops > 0
    assert counted(lambda: torch.nn.functional.rms_norm(x, (32,), w)) == 0
    assert rmsnorm(64, 32).flops > 0
    assert counted(lambda: torch.softmax(x, -1)) == 0 and softmax(64, 32).flops > 0
    p = torch.nn.Parameter(torch.randn(100))
    p.grad = torch.randn(100)
    opt = torch.optim.AdamW([p], foreach=False)
    assert counted(opt.step) == 0 and adamw(100).flops > 0


@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpa_on_cpu_is_not_counted(is_causal):
    # On the CPU, SDPA dispatches to a kernel the counter has no formula for,
    # so it reports zero; the book says so where it sets SDPA beside the model.
    q = torch.randn(1, 2, 16, 8)
    flops = counted(
        lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=is_causal)
    )
    assert flops == 0
    assert attention(1, 2, 16, 16, 8, "fp32", causal=is_causal).flops > 0


def test_eager_attention_kernels_match_pytorch_ops():
    """Hugging Face's eager attention in BF16, run by PyTorch: the ops that launch a kernel."""
    from torch.utils._python_dispatch import TorchDispatchMode

    views = {"transpose", "expand", "view", "_unsafe_view"}

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names, self.softmax_input = [], None

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            if name == "_softmax":
                self.softmax_input = args[0].dtype
            if name not in views:
                self.names.append(name)
            return func(*args, **(kwargs or {}))

    b, h, n, d = 1, 2, 8, 4
    q, k, v = (torch.randn(b, h, n, d, dtype=torch.bfloat16) for _ in range(3))
    mask = torch.full((n, n), float("-inf")).triu(1)[None, None].to(torch.bfloat16)
    with Ops() as seen:  # transformers' eager_attention_forward
        w = torch.matmul(q, k.transpose(2, 3)) * d**-0.5
        w = w + mask
        w = torch.nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        torch.matmul(w, v)
    # bmm, mul, add, the cast to FP32, _softmax on FP32, the cast back, bmm
    assert seen.names == ["bmm", "mul", "add", "_to_copy", "_softmax", "_to_copy", "bmm"]
    assert seen.softmax_input == torch.float32
    assert attention(b, h, n, n, d, "bf16", impl="eager", causal=True).kernels == len(seen.names)
