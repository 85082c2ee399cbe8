"""The models and the command line's model commands run without NumPy (Pyodide's core has none).

A fresh interpreter's import system refuses NumPy, pandas, matplotlib and torch, as an
environment without them would; there ``import roofline_book`` and each model command must
work and print exactly what the same command prints here, with NumPy present. The commands
are those of the command-line appendix (docs/appendix/cli.md), plus the models' options that
reach the collectives (``infer --tp``, ``train``). test_install.py runs the same commands in a
fresh virtual environment where NumPy is not installed at all.
"""

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import roofline_book as rb
from roofline_book import cli
from roofline_book._base.extras import MissingExtra

ROOT = Path(__file__).resolve().parents[1]
REFUSED = ("numpy", "pandas", "matplotlib", "torch")

EXAMPLE = ("--peak", "100T", "--bandwidth", "1TB/s")  # the reference chapter's example device
MODEL_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("op", "gemm", "--m", "4096", "--k", "4096", "--n", "4096", "--dtype", "bf16", *EXAMPLE),
    ("op", "add", "--numel", "2^20", "--dtype", "bf16", *EXAMPLE),
    ("op", "attention", "--batch", "4", "--heads", "16", "--seq-q", "4096", "--head-dim", "128"),
    ("op", "softmax", "--rows", "131072", "--cols", "4096", "--device", "a100-sxm"),
    ("devices", "--dtype", "bf16"),
    ("devices", "--device", "h100-sxm"),
    ("block", "--device", "h100-sxm"),
    ("block", "--seq", "1", "--optimizer", "--device", "mi300x"),
    ("infer", "--model", "llama-3-8b", "--device", "h100-sxm", "--batch", "16"),
    ("infer", "--model", "mixtral-8x7b", "--tp", "4", "--ep", "4", "--kv-dtype", "fp8"),
    ("train", "--model", "llama-3-8b", "--device", "h100-sxm", "--gpus", "64", "--zero", "3"),
)
"""Each model command once as text and once with ``--json``."""

RUNS = [list(argv) for argv in MODEL_COMMANDS] + [[*argv, "--json"] for argv in MODEL_COMMANDS]
RUNS += [["collectives", "--help"], ["op", "gemm", "--m", "0", "--k", "4", "--n", "4"]]
# the parser of the one command that measures (it needs torch to run, not to list its options),
# and a bad input, whose one-line error must not change either

REFUSE_IMPORTS = f"""
import importlib.abc, sys

class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {REFUSED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (refused)", name=name)
        return None

sys.meta_path.insert(0, _Refuse())
"""
"""Prepended to a script: every later import of NumPy, pandas, matplotlib or torch fails."""

RUN_COMMANDS = f"""
import contextlib, io, json, sys
from roofline_book.cli import main

def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # --help
            code = exc.code
    return {{"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}}

results = [run(argv) for argv in json.loads(sys.argv[1])]
loaded = sorted({{m.partition(".")[0] for m in sys.modules}} & set({REFUSED!r}))
print(json.dumps({{"results": results, "loaded": loaded}}))
"""
"""A script: runs ``roofline-book`` once per argument list in ``sys.argv[1]`` (JSON), prints
each run's exit status, stdout and stderr, and the refused packages that got imported."""


def in_process(argv: list[str]) -> dict:
    """One run of the ordinary command line in this process, where NumPy is present."""
    out, err = io.StringIO(), io.StringIO()
    code: int | str | None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # --help
            code = exc.code
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def same_output(argv: list[str], got: dict, expected: dict) -> None:
    """``got`` prints what ``expected`` does: equal JSON for ``--json``, equal text otherwise."""
    assert (got["code"], got["stderr"]) == (expected["code"], expected["stderr"]), argv
    if "--json" in argv:
        assert json.loads(got["stdout"]) == json.loads(expected["stdout"]), argv
    else:
        assert got["stdout"] == expected["stdout"], argv


def _refused(script: str) -> subprocess.CompletedProcess:
    # the clone's package, not an installed one; run from outside the tree
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", REFUSE_IMPORTS + script, json.dumps(RUNS)],
        capture_output=True, text=True, env=env, cwd=ROOT / "tests", timeout=120, check=False,
    )  # fmt: skip


def test_the_refusing_finder_refuses():
    done = _refused("import numpy")
    assert done.returncode == 1 and "No module named 'numpy' (refused)" in done.stderr


def test_the_model_commands_print_the_same_without_numpy():
    done = _refused(RUN_COMMANDS)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["loaded"] == []
    assert len(report["results"]) == len(RUNS)
    for argv, got in zip(RUNS, report["results"], strict=True):
        expected = in_process(argv)
        assert expected["code"] == (2 if argv[-1] == "4" else 0), (argv, expected["stderr"])
        same_output(argv, got, expected)


# attainable() on one point, 100 TFLOP/s and 1 TB/s, by hand:
#   I = 0.5 FLOP/byte:  1e12 * 0.5 = 5e11 FLOP/s, under the 1e14 roof (exact in binary)
#   I = 1000:           1e12 * 1000 = 1e15, above the roof: 1e14
#   I = 1e300:          1e12 * 1e300 overflows to inf: min(1e14, inf) = 1e14
POINTS = {0.5: 5e11, 1000: 1e14, 1e300: 1e14}


def test_attainable_on_a_scalar_is_the_same_float_without_numpy():
    code = (
        "import roofline_book as rb, sys\n"
        "print(repr([rb.attainable(i, 100e12, 1e12) for i in (0.5, 1000, 1e300)]))\n"
        "try:\n"
        "    rb.attainable([0.5, 1000], 100e12, 1e12)\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "print('numpy' in sys.modules)\n"
    )
    done = _refused(code)
    assert done.returncode == 0, done.stderr[-3000:]
    values, error, numpy_loaded = done.stdout.splitlines()
    without = eval(values)  # a list of float reprs
    with_numpy = [rb.attainable(i, 100e12, 1e12) for i in POINTS]
    assert without == with_numpy == list(POINTS.values())
    assert all(type(v) is float for v in [*without, *with_numpy])
    assert error == (
        "MissingExtra attainable() on an array of intensities needs numpy (pip install numpy); "
        "a single intensity does not"
    )
    assert numpy_loaded == "False"


def test_attainable_still_takes_arrays_and_numpy_scalars():
    grid = np.array(list(POINTS))
    out = rb.attainable(grid, 100e12, 1e12)
    assert isinstance(out, np.ndarray) and out.tolist() == list(POINTS.values())
    assert rb.attainable(np.float32(0.5), 100e12, 1e12) == 5e11  # 0.5 is exact in float32
    assert rb.attainable(np.array(1000.0), 100e12, 1e12) == 1e14  # a 0-d array: a float
    with pytest.raises(TypeError, match="intensity"):
        rb.attainable(np.bool_(True), 100e12, 1e12)
    with pytest.raises(TypeError, match="^peak_flops must be a finite real number"):
        rb.ridge_point(np.bool_(True), 1e12)
    with pytest.raises(TypeError, match="^m must be an integer"):
        rb.gemm(np.bool_(True), 4, 4)
    assert issubclass(MissingExtra, ImportError)
