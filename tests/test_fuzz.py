"""A fuzz of the command line and the public API with bad values (the new-user review's kind).

Every bad command-line value is refused in one line that names the flag, with exit status 2 and
no traceback; every bad argument to a public function raises ValueError or TypeError naming that
argument. Runs in about two seconds (in process, no subprocess per case).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os

import numpy as np
import pytest

import roofline_book as rb
from roofline_book import cli


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return str(tmp_path_factory.mktemp("fuzz"))


def bad_cli_inputs(TMP: str) -> list[tuple[list[str], str]]:
    """(argv, what its one-line error must name): every one must be refused."""
    os.makedirs(os.path.join(TMP, "adir.svg"), exist_ok=True)
    DEEP = os.path.join(TMP, "deep.json")
    with open(DEEP, "w") as f:
        f.write("[" * 100000 + "]" * 100000)
    U16 = os.path.join(TMP, "u16.json")
    with open(U16, "wb") as f:
        f.write(b"\xff\xfe{}")
    BIN = os.path.join(TMP, "bin.json")
    with open(BIN, "wb") as f:
        f.write(bytes(range(256)))
    # fmt: off
    G = ["op", "gemm", "--m", "64", "--k", "64", "--n", "64"]
    LB = ["op", "linear-backward"]
    P = os.path.join(TMP, "p.svg")

    # (argv, the text the one-line error must contain); every case here must be refused
    BAD: list[tuple[list[str], str]] = []
    for v in ["0", "-1", "1.5", "abc", "", "nan", "inf", "1e3", "0x10", "2^-1", "2^1000", "2^400",
              "4KiB", "True", "_1", "1__0", "0^0", "2^64", "99999999999999999999"]:
        BAD.append((["op", "gemm", "--m", v, "--k", "4", "--n", "4"], "--m"))
        BAD.append((["op", "add", "--numel", v], "numel"))
        BAD.append((["block", "--seq", v], "seq"))
        BAD.append((["infer", "--model", "llama-3-8b", "--batch", v], "--batch"))
        BAD.append((["infer", "--model", "llama-3-8b", "--prompt", v], "--prompt"))
        BAD.append((["infer", "--model", "llama-3-8b", "--context", v], "--context"))
    for v in ["0", "-1", "-1T", "nan", "inf", "1e400", "100TB/s", "100Tbyte/s", "100Tbytes",
              "100Ts", "abc", "", "1TB", "5 parsecs"]:
        BAD.append(([*G, "--peak", v, "--bandwidth", "1T"], "--peak"))
    for v in ["0", "-1", "nan", "1Ts", "1TOP/s", "1TFLOP/s", "abc", "", "1TFLOP"]:
        BAD.append(([*G, "--peak", "1T", "--bandwidth", v], "--bandwidth"))
    for v in ["", "tpu", "H100 ", "none"]:
        BAD.append(([*G, "--device", v], "device"))
        BAD.append((["devices", "--device", v], "device"))
        BAD.append((["block", "--device", v], "device"))
    for v in ["", "bf17", "int3", "fp64x"]:
        BAD.append(([*G, "--dtype", v], "dtype" if v else "precision"))
    BAD += [
        (["block", "--attention", "bogus"], "--attention"),
        (["block", "--attention", ""], "--attention"),
        (["block", "--grad-dtype", "nope"], "--grad-dtype"),
        (["block", "--param-dtype", "bf16"], "--param-dtype"),
        (["block", "--optimizer", "--param-dtype", "bogus"], "bogus"),
        (["op", "adamw", "--params", "1M", "--param-dtype", "int8"], "param-dtype"),
        (["op", "adamw", "--params", "1M", "--impl", "fast"], "impl"),
        (["op", "attention", "--batch", "1", "--heads", "1", "--seq-q", "4", "--head-dim", "8",
          "--impl", "nope"], "impl"),
        (["op", "attention", "--batch", "1", "--heads", "1", "--seq-q", "2^40", "--head-dim", "8",
          "--impl", "materialized", "--seq-k", "2^40"], "seq_q"),
        (["op", "elementwise", "--numel", "4", "--inputs", "0"], "inputs"),
        ([*LB, "--tokens", "0", "--in-features", "4", "--out-features", "4"], "--tokens"),
        ([*LB, "--tokens", "4", "--in-features", "0", "--out-features", "4"], "--in-features"),
        (["infer", "--model", "nope"], "model"),
        (["infer", "--model", ""], "model"),
        (["infer", "--model", "llama-3-8b", "--batch", "100000"], "--batch"),
        (["infer", "--model", "llama-3-8b", "--prompt", "9000"], "--prompt"),
        (["infer", "--model", "llama-3-8b", "--weights-dtype", "int3"], "int3"),
        ([*G, "--bogus", "1"], "--bogus"),
        ([*G, "--device", "b200", "--peak", "1T", "--bandwidth", "1T"], "--device"),
        ([*G, "--peak", "1T"], "--bandwidth"),
        (["plot", "--out", "/nonexistent/x.svg", "--point", "add:1M"], "--out"),
        (["plot", "--out", os.path.join(TMP, "adir.svg"), "--point", "add:1M"], "--out"),
        (["plot", "--out", "x.pdf"], "--out"),
        (["plot", "--out", "noext"], "--out"),
        (["plot", "--out", P, "--point", ""], "--point"),
        (["plot", "--out", P, "--point", "bogus:4"], "--point"),
        (["plot", "--out", P, "--point", "gemm:4,4"], "--point"),
        (["plot", "--out", P, "--point", "gemm:4,4,4,4,4"], "--point"),
        (["plot", "--out", P, "--point", "gemm:a,4,4"], "--point"),
        (["plot", "--out", P, "--point", "elementwise:1M,flops_per_element=0"], "--point"),
        (["plot", "--out", P, "--point", "adamw:1M,bogus=1"], "--point"),
        (["plot", "--out", P, "--point", "add:1M", "--dtype", "bf17"], "bf17"),
        (["claims", "/nonexistent.json"], "/nonexistent.json"),
        (["claims", TMP], TMP),
        (["claims", DEEP], DEEP),
        (["claims", U16], U16),
        (["claims", BIN], BIN),
        (["claims", "/dev/null"], "/dev/null"),
        (["devices", "--dtype", "bf17"], "bf17"),
        (["op"], "OPERATOR"),
        (["op", "conv2d"], "conv2d"),
        ([], "COMMAND"),
        (["bogus"], "bogus"),
    ]
    # fmt: on
    return BAD


def test_cli_refuses_every_bad_value_in_one_line(tmp, monkeypatch):
    monkeypatch.chdir(tmp)
    failures = []
    cases = bad_cli_inputs(tmp)
    assert len(cases) > 150
    for argv, must in cases:
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = cli.main(argv)
        except SystemExit as exc:
            status = exc.code
        except Exception as exc:  # a traceback for the user
            failures.append(("traceback", argv, f"{type(exc).__name__}: {exc}"[:120]))
            continue
        lines = err.getvalue().strip().splitlines()
        if status == 0:
            failures.append(("accepted", argv, out.getvalue()[:80]))
        elif status != 2 or len(lines) != 1 or must.lower() not in lines[0].lower():
            failures.append(("unclear", argv, lines[:2]))
    assert not failures, failures


GOOD = {
    "m": 64,
    "k": 64,
    "n": 64,
    "numel": 1024,
    "rows": 8,
    "d": 64,
    "cols": 64,
    "params": 1000,
    "batch": 1,
    "heads": 4,
    "seq_q": 64,
    "seq_k": 64,
    "head_dim": 16,
    "tokens": 8,
    "in_features": 16,
    "out_features": 16,
    "tile": 16,
    "intensity": 10.0,
    "peak_flops": 1e12,
    "bandwidth": 1e11,
    "flops": 1e9,
    "seconds": 1.0,
    "ridge": 100.0,
    "name": "h100-sxm",
    "memory_bandwidth": 1e11,
    "dtype": "bf16",
    "config": rb.LLAMA2_7B,
    "device": rb.hardware("h100-sxm"),
    "cost": rb.gemm(64, 64, 64),
    "overhead": 1e-6,
    "named": [("g", rb.gemm(8, 8, 8))],
    "impl": "fused",
}
BAD_VALUES = [
    0,
    -1,
    2.5,
    "x",
    None,
    True,
    float("nan"),
    float("inf"),
    2**2000,
    np.int64(-3),
    [1, 2],
]
SKIP = {"catalog", "table_frame", "adhoc"}


def test_api_errors_name_the_argument():
    failures, calls = [], 0
    for fname in rb.__all__:
        func = getattr(rb, fname)
        if not callable(func) or inspect.isclass(func) or fname in SKIP:
            continue
        sig = inspect.signature(func)
        base = {p.name: GOOD.get(p.name) for p in sig.parameters.values()
                if p.default is inspect.Parameter.empty}  # fmt: skip
        if fname.startswith("adamw"):
            base.pop("impl", None)
        if None in base.values():
            continue
        for p in sig.parameters.values():
            for bad in BAD_VALUES:
                calls += 1
                try:
                    func(**dict(base, **{p.name: bad}))
                except (ValueError, TypeError) as exc:
                    named = "device" if fname == "hardware" else p.name  # "device 'x' is not ..."
                    if named not in str(exc):
                        failures.append((fname, p.name, repr(bad)[:20], str(exc)[:80]))
                except Exception as exc:  # neither ValueError nor TypeError
                    failures.append((fname, p.name, repr(bad)[:20], type(exc).__name__))
    assert calls > 1000 and not failures, failures
