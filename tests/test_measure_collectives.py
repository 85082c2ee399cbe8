"""The collectives measurement: two real gloo processes on this machine, and its bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from roofline_book import cli  # noqa: E402
from roofline_book.measure import collectives as mc  # noqa: E402
from roofline_book.measure.bench import ranks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def quick_json() -> dict:
    """``roofline-book collectives --procs 2 --quick --json``, run once in a real process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "roofline_book", "collectives", "--procs", "2", "--quick", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)


def test_the_json_has_every_collective_at_every_quick_size(quick_json):
    assert quick_json["backend"] == "gloo" and quick_json["procs"] == 2
    assert isinstance(quick_json["roofline_book_version"], str)
    results = quick_json["results"]
    assert {r["op"] for r in results} == set(mc.OPS) == set(quick_json["fit"])
    # 8 B .. 2 MiB in steps of 4: 10 sizes; each already a whole number of float32 per rank
    assert len(results) == 6 * 10
    assert sorted({r["bytes"] for r in results}) == [2**k for k in range(3, 23, 2)]
    for r in results:
        assert set(r) >= {"op", "bytes", "time_s", "algbw_Bps", "busbw_Bps"}
        assert r["time_s"] > 0 and r["reps"] >= 5


def test_the_json_matches_its_schema(quick_json):
    jsonschema = pytest.importorskip("jsonschema")
    from roofline_book.cli.schema import SCHEMAS  # noqa: E402

    validator = jsonschema.Draft202012Validator(SCHEMAS["collectives"])
    errors = [
        f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(quick_json)
    ]
    assert not errors, errors[:5]
    assert quick_json["command"] == "collectives"


def test_bandwidths_follow_nccl_tests(quick_json):
    # doc/PERFORMANCE.md: algbw = S / t; busbw = algbw x 2(n-1)/n for all-reduce (1 at n = 2),
    # x (n-1)/n for all-gather, reduce-scatter and all-to-all (1/2 at n = 2), x 1 otherwise
    factor = {"all_reduce": 1.0, "all_gather": 0.5, "reduce_scatter": 0.5, "all_to_all": 0.5}
    for r in quick_json["results"]:
        assert r["algbw_Bps"] == pytest.approx(r["bytes"] / r["time_s"])
        assert r["busbw_Bps"] == pytest.approx(r["algbw_Bps"] * factor.get(r["op"], 1.0))


def _relative_cost(alpha: float, beta: float, x: np.ndarray, t: np.ndarray) -> float:
    return float(np.sum((alpha + x / beta - t) ** 2 / t**2))


def test_the_fit_is_the_least_squares_line_through_the_raw_times(quick_json):
    # an independent fit of the same raw times: numpy's weighted polyfit of t against
    # x = f x size (f = 1 for all-reduce at n = 2, 1/2 for all-gather ...), weights 1/t
    # (relative residuals); where its intercept is negative the line goes through 0
    share = {"all_reduce": 1.0, "all_gather": 0.5, "reduce_scatter": 0.5, "all_to_all": 0.5}
    for op, fit in quick_json["fit"].items():
        rows = [r for r in quick_json["results"] if r["op"] == op]
        x = np.array([share.get(op, 1.0) * r["bytes"] for r in rows])
        t = np.array([r["time_s"] for r in rows])
        slope, alpha = np.polyfit(x, t, 1, w=1 / t)
        if alpha < 0:
            alpha, slope = 0.0, float(np.sum(x * t / t**2) / np.sum(x * x / t**2))
        assert fit["alpha_s"] == pytest.approx(alpha, rel=1e-6, abs=1e-12), op
        assert fit["beta_Bps"] == pytest.approx(1 / slope, rel=1e-6), op
        # in seconds and byte/s: alpha within the measured times; beta a loopback's rate, between
        # 1 MB/s and 1 TB/s (a 2 MiB message takes between 2 us and 2 s)
        assert 0 <= fit["alpha_s"] <= t.max(), op
        assert 1e6 < fit["beta_Bps"] < 1e12, op

        # the line minimises the squared relative residuals: moving it makes them larger
        alpha, beta = fit["alpha_s"], fit["beta_Bps"]
        best = _relative_cost(alpha, beta, x, t)
        step = 0.05 * t.min()
        moves = [(alpha + step, beta), (alpha, beta * 1.05), (alpha, beta / 1.05)]
        if alpha > step:
            moves.append((alpha - step, beta))
        for moved in moves:
            assert _relative_cost(*moved, x, t) > best, (op, moved)


def test_fit_by_hand():
    # all-gather on 4 ranks: f = 3/4. Times 10 us + 3/4 x S / 1 GB/s at S = 1 kB, 1 MB, 100 MB:
    # 10.75 us, 760 us, 75.01 ms -> alpha 10 us, beta 1 GB/s exactly
    sizes = [1e3, 1e6, 1e8]
    times = [10.75e-6, 760e-6, 75.01e-3]
    fit = mc.fit_alpha_beta("all_gather", 4, sizes, times)
    assert fit.alpha_s == pytest.approx(10e-6)
    assert fit.beta_Bps == pytest.approx(1e9)
    assert fit.seconds("all_gather", 1e6, 4) == pytest.approx(760e-6)


def test_fit_without_a_negative_latency():
    # times proportional to size but slightly convex: the free line's intercept would be < 0,
    # so alpha = 0 and beta from the line through the origin
    fit = mc.fit_alpha_beta("send_recv", 2, [1e3, 1e6], [1e-6, 1.2e-3])
    assert fit.alpha_s == 0.0
    # weights 1/t^2: slope = sum(x t / t^2) / sum(x^2 / t^2) = (1e9 + 1e9/1.2) / (1e18 + 1e18/1.44)
    slope = (1e9 + 1e9 / 1.2) / (1e18 + 1e18 / 1.44)
    assert fit.beta_Bps == pytest.approx(1 / slope)


def test_fit_bad_input():
    with pytest.raises(ValueError, match="same length >= 2"):
        mc.fit_alpha_beta("all_reduce", 2, [8], [1e-5])
    with pytest.raises(ValueError, match="two different sizes"):
        mc.fit_alpha_beta("all_reduce", 2, [8, 8], [1e-5, 2e-5])
    with pytest.raises(ValueError, match="seconds must be"):
        mc.fit_alpha_beta("all_reduce", 2, [8, 16], [1e-5, 0])


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"procs": 1}, "procs must be an integer >= 2"),
        ({"procs": 65}, "procs must be at most 64"),
        ({"backend": "mpi"}, "backend must be one of gloo, nccl"),
        ({"ops": ("gather",)}, "ops must be one of all_reduce"),
        ({"sizes": (8, 8)}, "two different sizes"),
        ({"timeout": 0}, "timeout must be"),
    ],
)
def test_measure_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mc.measure(**kwargs)


def test_nccl_without_enough_gpus():
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("this machine can run nccl with two ranks")
    with pytest.raises(ValueError, match="nccl needs one CUDA GPU per process"):
        mc.measure(2, "nccl")


@pytest.mark.parametrize(
    "argv,expected",
    [
        (
            ("--procs", "1"),
            "--procs must be an integer from 2 to 64 (processes on this host), got 1",
        ),
        (("--procs", "65"), "--procs must be an integer from 2 to 64"),
        (("--procs", "two"), "argument --procs: invalid int value: 'two'"),
        (("--timeout", "inf"), "--timeout must be a finite number of seconds > 0, got inf"),
        (("--timeout", "nan"), "--timeout must be"),
        (("--backend", "mpi"), "invalid choice: 'mpi'"),
        (("--timeout", "0"), "--timeout must be"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(argv, expected, capsys):
    status = cli.main(["collectives", *argv])
    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert len(err.splitlines()) == 1 and expected in err


def test_cli_nccl_without_gpus_is_one_line_and_exit_2(capsys):
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("this machine can run nccl with two ranks")
    status = cli.main(["collectives", "--backend", "nccl", "--procs", "2"])
    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and "nccl needs one CUDA GPU per process" in err


def _fail_on_rank_one(dist, op, buf, rank, procs):
    if rank == 1:
        raise RuntimeError("injected failure")
    mc_run_op(dist, op, buf, rank, procs)


def _hang_on_rank_one(dist, op, buf, rank, procs):
    if rank == 1:
        time.sleep(60)
    mc_run_op(dist, op, buf, rank, procs)


def _exit_on_rank_one(dist, op, buf, rank, procs):
    if rank == 1:
        os._exit(3)
    mc_run_op(dist, op, buf, rank, procs)


mc_run_op = ranks.run_op


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ranks fork only on Linux")
def test_a_rank_that_fails_is_named_and_the_others_stop(monkeypatch):
    # the ranks are forked, so they run this process's (patched) module
    monkeypatch.setattr(ranks, "run_op", _fail_on_rank_one)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="rank 1 failed: RuntimeError: injected failure"):
        mc.measure(2, "gloo", sizes=(8, 64), ops=("all_reduce",), timeout=30)
    assert time.monotonic() - start < 20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ranks fork only on Linux")
def test_ranks_that_hang_are_stopped_at_the_timeout(monkeypatch):
    monkeypatch.setattr(ranks, "run_op", _hang_on_rank_one)
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish within 3 s"):
        mc.measure(2, "gloo", sizes=(8, 64), ops=("all_reduce",), timeout=3)
    assert time.monotonic() - start < 15


def test_the_fit_is_the_model_with_alpha_spread_over_the_steps():
    # all-reduce on 2 ranks: 2 steps, so 300 us of fixed time is 150 us a step; at 1 MB the
    # fit gives 300 us + 1e6 / 2e9 s = 800 us, and so does collective_time with 150 us a step
    from roofline_book.distributed.collectives import collective_time

    fit = mc.Fit(alpha_s=300e-6, beta_Bps=2e9)
    assert fit.step_latency("all_reduce", 2) == pytest.approx(150e-6)
    assert fit.seconds("all_reduce", 1e6, 2) == pytest.approx(800e-6)
    model = collective_time("all_reduce", 1e6, 2, 2e9, fit.step_latency("all_reduce", 2))
    assert model.seconds == pytest.approx(800e-6)
    # all-gather on 4: 3 steps, f = 3/4
    fit = mc.Fit(alpha_s=300e-6, beta_Bps=1e9)
    model = collective_time("all_gather", 4e6, 4, 1e9, fit.step_latency("all_gather", 4))
    assert model.seconds == pytest.approx(300e-6 + 3e6 / 1e9) == fit.seconds("all_gather", 4e6, 4)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ranks fork only on Linux")
def test_a_rank_that_dies_is_a_clear_error(monkeypatch):
    # rank 1 exits without a word; either it is seen dead first, or rank 0 is seen failing on
    # the connection rank 1 left: one line, a rank named, never a hang
    monkeypatch.setattr(ranks, "run_op", _exit_on_rank_one)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"rank (1 died \(exit code 3\)|0 failed: )"):
        mc.measure(2, "gloo", sizes=(8, 64), ops=("all_reduce",), timeout=30)
    assert time.monotonic() - start < 20


def test_cli_timeout_is_one_line_and_exit_1(capsys):
    status = cli.main(["collectives", "--procs", "2", "--quick", "--timeout", "0.05"])
    out, err = capsys.readouterr()
    assert (status, out) == (1, "")
    assert err.count("\n") == 1 and "did not finish within 0.05 s" in err and "--timeout" in err
