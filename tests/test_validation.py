"""Bad input raises ValueError or TypeError naming the argument; never a wrong number."""

import math
import re
import warnings
from typing import Any, cast

import numpy as np  # numpy scalars and arrays as inputs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import roofline_book as rb
from roofline_book import InvalidArgument, ops
from roofline_book.dtypes import BYTES, bytes_per_element
from roofline_book.llm.block import LLAMA2_7B, block_ops
from roofline_book.ops import Cost
from roofline_book.roofline.roofs import fraction_of_roof

GOOD = {"m": 4, "k": 4, "n": 4}


@pytest.mark.parametrize(
    "value,error",
    [
        (-1, ValueError),
        (0, ValueError),
        (2.0, TypeError),
        (2.5, TypeError),
        (float("nan"), TypeError),
        (True, TypeError),
        (np.bool_(True), TypeError),
        ("4", TypeError),
        (None, TypeError),
    ],
)
@pytest.mark.parametrize("arg", ["m", "k", "n"])
def test_gemm_rejects(arg, value, error):
    with pytest.raises(error, match=rf"^{arg} must be an integer >= 1"):
        ops.gemm(**(GOOD | {arg: value}))


def test_numpy_integers_are_sizes():
    assert ops.gemm(np.int64(4), np.int32(4), 4) == ops.gemm(4, 4, 4)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: ops.add(10, "bf17"), "dtype 'bf17' is not a known precision"),
        (lambda: ops.add(10, 16), "dtype must be a precision name"),  # type: ignore[arg-type]  # bad input on purpose
        (lambda: ops.adamw(10, "fast"), "impl must be one of loop, foreach, fused"),
        (lambda: ops.attention(1, 1, 8, 8, 8, impl="sparse"), "impl must be one of"),
        (lambda: ops.attention(1, 1, 8, 8, 8, causal=1), "causal must be True or False"),  # type: ignore[arg-type]  # bad input on purpose
        (lambda: ops.attention(1, 1, 8, 8, 64, sram_bytes=100), "sram_bytes must hold"),
        (lambda: ops.elementwise(8, inputs=0), "inputs must be an integer >= 1"),
        (lambda: ops.rmsnorm(0, 8), "rows must be an integer >= 1"),
        (lambda: Cost(-1, 0, 0), "flops must be an integer >= 0"),
        (lambda: Cost(1.5, 0, 0), "flops must be an integer >= 0"),  # type: ignore[arg-type]  # bad input on purpose
    ],
)
def test_messages_name_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def _is_size(value: object) -> bool:
    """What a size argument accepts: an integer (not a bool) >= 1."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and bool(value >= 1)


anything = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=4),
    st.sampled_from([np.int64(3), np.float32(2)]),
)
dtypes = st.one_of(st.sampled_from(sorted(BYTES)), st.text(max_size=6), st.integers())


@settings(max_examples=300, deadline=None)
@given(m=anything, k=anything, n=anything, dtype=dtypes)
def test_gemm_property(m, k, n, dtype):
    """Either a Cost that agrees with the formula, or a clear error; never a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            c = ops.gemm(m, k, n, dtype)
        except (ValueError, TypeError) as exc:
            # the message starts with the first bad argument: the sizes are checked in order,
            # then the precision
            sizes = (("m", m), ("k", k), ("n", n))
            first_bad = next((name for name, v in sizes if not _is_size(v)), "dtype")
            assert str(exc).split()[0] == first_bad
            return
    s = bytes_per_element(dtype)
    m, k, n = int(m), int(k), int(n)  # a NumPy size overflows the test's own arithmetic
    assert c.flops == 2 * m * k * n
    assert c.bytes == s * (m * k + k * n + m * n)
    assert math.isfinite(c.intensity) and c.intensity > 0


@settings(max_examples=200, deadline=None)
@given(
    b=anything,
    h=anything,
    nq=anything,
    nk=anything,
    d=anything,
    impl=st.sampled_from(["flash", "materialized", "other"]),
    causal=st.booleans(),
)
@example(b=np.int64(3), h=2**40, nq=2**40, nk=2**40, d=8, impl="flash", causal=False)
@example(b=1, h=np.int64(3), nq=2**40, nk=2**40, d=2**20, impl="materialized", causal=True)
def test_attention_property(b, h, nq, nk, d, impl, causal):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            c = ops.attention(b, h, nq, nk, d, "bf16", impl=impl, causal=causal, sram_bytes=1 << 30)
        except (ValueError, TypeError) as exc:
            assert str(exc).split()[0] in {
                "batch",
                "heads",
                "seq_q",
                "seq_k",
                "head_dim",
                "impl",
                "sram_bytes",
            }
            return
    b, h, nq, nk, d = (int(x) for x in (b, h, nq, nk, d))  # a NumPy size overflows here
    assert c.flops > 0 and c.bytes >= 2 * b * h * d * (2 * nq + 2 * nk)


@settings(max_examples=200, deadline=None)
@given(p=anything, impl=st.sampled_from(["loop", "foreach", "fused", "x"]), t=anything)
def test_adamw_property(p, impl, t):
    try:
        c = ops.adamw(p, impl, tensors=t)
    except (ValueError, TypeError) as exc:
        assert str(exc).split()[0] in {"params", "impl", "tensors"}
        return
    assert c.bytes == int(p) * (28 if impl == "fused" else 80)


@settings(max_examples=200, deadline=None)
@given(x=st.one_of(st.floats(), st.lists(st.floats(), max_size=4), st.booleans(), st.text()))
def test_attainable_property(x):
    from roofline_book import attainable

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            out = attainable(x, 100e12, 1e12)
        except (ValueError, TypeError) as exc:
            assert "intensity" in str(exc)
            return
    assert np.all(np.asarray(out) <= 100e12) and np.all(np.asarray(out) >= 0)


# The new-user review's API fuzz: every error names the argument the caller passed (not the
# parameter of a function called inside), and says what is allowed.
CALLER_NAMES = {
    "linear_backward tokens": (lambda: ops.linear_backward(0, 16, 32), "tokens must be an"),
    "linear_backward in": (lambda: ops.linear_backward(16, 0, 32), "in_features must be an"),
    "linear_backward out": (
        lambda: ops.linear_backward(16, 32, 0.5),  # type: ignore[arg-type]
        "out_features must be an",
    ),
    "block_ops impl": (
        lambda: block_ops(LLAMA2_7B, attention_impl="bogus"),
        "attention_impl must be one of eager, materialized, flash; got 'bogus'",
    ),
    "fraction_of_roof at intensity 0": (
        lambda: fraction_of_roof(1e9, 1.0, 0, 1e12, 1e9),
        "intensity must be > 0 (at 0 FLOP/byte the roof is 0 FLOP/s)",
    ),
    "a size beyond int64": (
        lambda: ops.attention(1, 1, 4, 2**2000, 8), "seq_k must be an integer from 1 to 2**63 - 1"
    ),
    "attention_backward beyond int64": (
        lambda: ops.attention_backward(1, 1, 2**2000, 4, 8), "seq_q must be an integer from 1"
    ),
    "a score matrix beyond int64": (
        lambda: ops.attention(1, 3, 2**40, 2**40, 8, impl="materialized"),
        "batch * heads * seq_q * seq_k (the score matrix) must be at most 2**63 - 1 elements",
    ),
    "AdamW int8 weights": (
        lambda: ops.adamw(10, param_dtype="int8"), "param_dtype must be a floating-point precision"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CALLER_NAMES, ids=list(CALLER_NAMES))
def test_errors_name_the_callers_argument(case):
    call, message = CALLER_NAMES[case]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert message in str(info.value)


def test_counts_have_no_size_limit():
    # a Cost's FLOPs and bytes are products of sizes: far beyond any one tensor's size
    huge = ops.gemm(2**62, 2**62, 2**62)
    assert huge.flops == 2 * 2**186 and math.isfinite(huge.intensity)
    assert Cost(2**100, 1, 1).flops == 2**100


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: ops.gemm(4, 4, 4, out_dtype="bf17"), "out_dtype 'bf17' is not a known precision"),
        (
            lambda: ops.rmsnorm(4, 4, weight_dtype=cast(Any, 3)),
            "weight_dtype must be a precision name",
        ),
        (lambda: ops.adamw(10, grad_dtype="x"), "grad_dtype 'x' is not a known precision"),
        (
            lambda: ops.adamw(10, param_dtype=cast(Any, None)),
            "param_dtype must be a precision name",
        ),
        (lambda: ops.adamw(10, state_dtype=cast(Any, 2.5)), "state_dtype must be a precision name"),
        (lambda: ops.add(4, "x"), "dtype 'x' is not a known precision"),
    ],
)
def test_each_precision_argument_is_named(call, message):
    with pytest.raises((ValueError, TypeError), match=re.escape(message)):
        call()


def test_reals_beyond_a_float_and_wrong_types_are_named():
    from roofline_book.present.tables import block_table
    from roofline_book.roofline.roofs import attainable, attainable_on

    with pytest.raises(ValueError, match="peak_flops must be a finite real number > 0"):
        attainable(1.0, 2**2000, 1e12)  # was OverflowError: int too large to convert to float
    with pytest.raises(TypeError, match="device must be a Hardware, got int"):
        attainable_on(1.0, 0)  # was AttributeError
    with pytest.raises(TypeError, match="config must be a Block, got float"):
        block_table(cast(Any, 2.5), rb.hardware("h100-sxm"))


def test_fraction_of_roof_above_one_is_refused():
    # 1e9 FLOP in 1e-9 s is 1e18 FLOP/s; at 10 FLOP/byte and 1e12 byte/s the roof is
    # min(1e12, 10 x 1e12) = 1e12 FLOP/s: a million times the roof, which no run reaches
    with pytest.raises(InvalidArgument, match=r"^seconds .* 1e\+18 FLOP/s, 1e\+06 times the roof"):
        fraction_of_roof(1e9, 1e-9, 10, 1e12, 1e12)
    # at the roof exactly: 1e12 FLOP in 1 s against a 1e12 FLOP/s roof is 1.0
    assert fraction_of_roof(1e12, 1.0, 10, 1e12, 1e12) == 1.0


def test_max_batch_refuses_a_context_beyond_the_window():
    # Llama-3-8B's max_position_embeddings is 8192 (config.json); infer --context refuses
    # more, and so does the API
    from roofline_book.llm.inference import model
    from roofline_book.llm.serving import max_batch

    h100 = rb.hardware("h100-sxm")
    with pytest.raises(ValueError, match=r"context \(10000000\) is beyond llama-3-8b's .*\(8192\)"):
        max_batch(model("llama-3-8b"), h100, 10**7)
    assert max_batch(model("llama-3-8b"), h100, 8192) > 0  # the window itself is allowed


def test_adhoc_model_names_a_missing_field():
    from roofline_book.llm.inference import adhoc_model

    with pytest.raises(TypeError, match=r"^vocab is required by adhoc_model; required: hidden"):
        adhoc_model("x", hidden=512, layers=2, heads=8, kv_heads=2, ffn=1024)
