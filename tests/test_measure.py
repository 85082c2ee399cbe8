"""The benchmark suite: a real tiny run on the CPU, the command line, the run-file format.

The CPU run uses the ``tiny`` sizes on one thread, so it takes a few seconds.
Tests of the CUDA path are marked ``cuda`` and skipped without a CUDA device.
Fixture run files under tests/data/ are hand-made test data, not measurements.
"""

import argparse
import contextlib
import dataclasses
import importlib.util
import io
import json
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from roofline_book import ops
from roofline_book._base.validate import InvalidArgument
from roofline_book.cli import bench as cli_bench
from roofline_book.measure import collectives
from roofline_book.measure import run as measure_run
from roofline_book.measure.bench import cases, registry, streaming, suites, timing
from roofline_book.measure.judge.ceilings import of_run
from roofline_book.measure.judge.verdicts import SPEED_TOLERANCE
from roofline_book.measure.run import measure
from roofline_book.measure.runs import runfile
from roofline_book.measure.runs.records import Run
from roofline_book.ops.registry import REGISTRY

DATA = Path(__file__).parent / "data"
FIXTURES = sorted(DATA.glob("fixture-*.json"))
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench")
    cli_bench.configure_parser(parser)
    return parser.parse_args(list(argv))


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli_bench.run(parse(*argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny CPU run made through the command line: (path, run, stdout)."""
    path = tmp_path_factory.mktemp("run") / "cpu-tiny.json"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        status, out, _ = run_cli("--suite", "tiny", "--out", str(path), "--no-progress")
    finally:
        torch.set_num_threads(threads)
    assert status == 0
    return path, runfile.load_run(path), out


# --------------------------------------------------------------------------
# A real run on the CPU


def test_tiny_run_measures_every_case(tiny):
    _, run, _ = tiny
    sets = suites.probes("cpu", "tiny")
    probed = [c.id for key in ("bandwidth", "peak", "cache", "vector") for c in sets[key]]
    operators = [c.id for c in suites.cases("cpu", "tiny") if c.id not in probed]
    assert [e.id for e in run.entries] == probed + operators  # probes first, once each
    assert {e.status for e in run.entries} == {"ok"}
    assert run.device.type == "cpu" and run.device.threads == 1
    assert run.device.threads_policy == "set"
    assert run.software.torch == torch.__version__
    assert run.suite == "tiny"
    if hasattr(os, "getloadavg"):
        assert len(run.load_average) == 2 and min(run.load_average) >= 0
    # the sentinel (the smallest cache's copy) is timed before the cases, after every sixth
    # and after the last: its spread, and the probes' last round, say whether the machine held
    probe = run.stability
    assert probe.probe == (sets["cache"] or sets["peak"])[0].id
    checkpoints = probe.checkpoints_s
    assert len(checkpoints) == 1 + math.ceil(len(operators) / measure_run.CHECKPOINT_EVERY)
    assert probe.first_s == checkpoints[0] and probe.last_s == checkpoints[-1]
    assert probe.drift == pytest.approx(checkpoints[-1] / checkpoints[0])
    assert probe.spread == pytest.approx(max(checkpoints) / min(checkpoints) - 1)
    drifts = [
        run.entry(c.id).rounds_s[-1] / min(run.entry(c.id).rounds_s[:-1])
        for c in sets["peak"] + sets["bandwidth"]
    ]
    assert probe.ceiling_drift == max(drifts, key=lambda d: abs(d - 1))
    assert probe.stable == (probe.spread <= SPEED_TOLERANCE)  # the verdicts' tolerance


def test_models_are_the_ops_functions(tiny):
    # a case's model is its registry entry's function on the case's shape and precision, with
    # the case's implementation where the function knows it by that name (SDPA: the default,
    # flash); the bandwidth probes are no operators: plain streams
    _, run, _ = tiny
    probes = {
        "copy": lambda s, p: ops.elementwise(s["numel"], p, flops_per_element=0),
        "triad": lambda s, p: ops.elementwise(s["numel"], p, inputs=2, flops_per_element=2),
        "triad_inplace": lambda s, p: ops.elementwise(s["numel"], p, inputs=2, flops_per_element=2),
    }
    by_case = {entry.case: entry for entry in REGISTRY.values() if entry.case}
    for e in run.entries:
        if e.name in probes:
            assert e.cost == probes[e.name](e.shape, e.precision), e.id
            continue
        entry = by_case[e.name]
        given = dict(e.shape) | {entry.roof_dtype: e.precision}
        if e.impl in entry.choices.get("impl", ()):
            given["impl"] = e.impl
        assert e.cost == entry.call(given)[0], e.id
    gemm = run.entry("gemm/fp32/mm/m=128,k=128,n=128")
    # 2 * 128**3 = 4_194_304 FLOP; 4 bytes * 3 * 128**2 = 196_608 bytes
    assert gemm.as_mapping()["model"] == {
        "flops": 4_194_304,
        "bytes_read": 131_072,
        "bytes_written": 65_536,
        "kernels": 1,
    }


def test_every_entry_is_checked_then_timed(tiny):
    _, run, _ = tiny
    for e in run.entries:
        t, check = e.time, e.check
        # a ceiling probe's round takes 3 samples (its rounds absorb the noise), a case 5
        least = 3 if e.rounds_s else timing.MIN_SAMPLES
        assert t.reps >= least and t.inner >= 1
        assert check.max_abs_err <= check.atol + check.rtol * 1e3
        assert check.rtol == registry.RTOL[e.precision]
        assert e.l2_flush is False  # no cache flush on the CPU


def test_ceilings_are_the_best_round_of_their_probe(tiny):
    _, run, _ = tiny
    ceilings = run.ceilings
    # the tiny suite's 2 rounds (before and after the cases), and the peak GEMMs once more
    # at every checkpoint between
    cases = sum(1 for e in run.entries if not e.rounds_s)
    between = (cases - 1) // measure_run.CHECKPOINT_EVERY
    assert between >= 1
    for precision in ("fp32", "bf16"):
        probe = run.entry(f"gemm/{precision}/mm/m=192,k=192,n=192")  # apart from the sweep
        rounds = probe.rounds_s
        assert len(rounds) == 2 + between and probe.median_s == min(rounds)
        peak = ceilings.peak_flops[precision]
        assert (peak.value, peak.entry) == (2 * 192**3 / min(rounds), probe.id)
        assert peak.spread == pytest.approx(max(rounds) / min(rounds) - 1)
    copy_entry = run.entry("copy/fp32/copy_/numel=65536")
    assert len(copy_entry.rounds_s) == 2
    assert ceilings.bandwidth["copy"].value == 8 * 2**16 / min(copy_entry.rounds_s)
    assert ceilings.working_set_bytes == 2 * 4 * 2**16  # source and destination, fp32
    caches = run.device.caches
    for level, c in ceilings.cache_bandwidth.items():
        # a copy of n fp32 values reads and writes 8n bytes in its best round
        entry = run.entry(c.entry)
        assert c.cache_bytes == caches[level] and int(level[1:]) >= 2
        assert 4 * c.working_set_bytes <= c.cache_bytes or c.working_set_bytes == 2**18
        assert c.value == 8 * entry.shape["numel"] / min(entry.rounds_s)
    if "L2" in caches:  # the vector probe: an add whose three arrays fill half the L2
        for c in ceilings.vector_flops.values():
            n = run.entry(c.entry).shape["numel"]  # one FLOP per element
            assert 12 * n <= caches["L2"] // 2 < 24 * n
            assert c.value == n / min(run.entry(c.entry).rounds_s)


def test_cpu_entries_carry_write_allocate_bytes_and_what_runs(tiny):
    _, run, _ = tiny
    # out of place: every written byte is first fetched; in place: none
    assert run.entry("copy/fp32/copy_/numel=65536").write_allocate_bytes == 4 * 2**16
    assert run.entry("triad_inplace/fp32/add_(alpha)/numel=65536").write_allocate_bytes is None
    assert not any(e.write_allocate_bytes for e in run.results("adamw"))
    # torch.rms_norm on the CPU: pow, mean, + eps, rsqrt, x * r, weight * y (fp32: no casts)
    norm = run.results("rmsnorm")[0]
    assert norm.implementation is not None and norm.implementation.kernels == 6
    assert norm.cost.kernels == 1
    roofs = of_run(run)
    assert roofs.rate("matrix", "bf16") >= run.ceilings.peak_flops["bf16"].value
    assert roofs.memory.bandwidth >= run.memory_roof  # line fills counted


def test_cli_prints_table_and_checklist(tiny):
    _, run, out = tiny
    for peak in run.ceilings.peak_flops.values():
        assert peak.entry in out  # each peak names the entry it came from
    assert out.count("\n") > len(run.entries)
    assert "claims:" in out and "[not measured]" in out  # tiny: ceilings fit in cache


def test_case_for_rebuilds_every_entry(tiny):
    _, run, _ = tiny
    for e in run.entries:
        assert cases.case_for(e.name, e.shape, e.precision, e.impl).id == e.id


# --------------------------------------------------------------------------
# Measuring one case


def add_case(check) -> registry.Case:
    """An add of 8 values whose check is ``check(z, x, y)``."""

    def build(device):
        x, y = torch.arange(8.0), torch.ones(8)
        z = torch.empty(8)
        return registry.Prepared(lambda: torch.add(x, y, out=z), lambda: check(z, x, y))

    return registry.Case("add", (("numel", 8),), "fp32", "add", ops.add(8, "fp32"), 96, build)


def test_a_wrong_result_is_failed_and_not_timed():
    def wrong(z, x, y):
        torch.add(x, y, out=z)
        return registry.compare(z, (x - y).double(), "fp32")

    entry = measure(add_case(wrong))
    assert entry.status == "failed"
    assert entry.reason.startswith("wrong result: max |error| 2 ")
    assert entry.time is None and entry.check is None
    assert "time" not in entry.as_mapping() and "check" not in entry.as_mapping()


def test_a_right_result_is_timed():
    def right(z, x, y):
        torch.add(x, y, out=z)
        return registry.compare(z, x.double() + y.double(), "fp32")

    entry = measure(add_case(right), min_run_time=0.001)
    assert entry.status == "ok" and entry.check.max_abs_err == 0.0
    assert entry.time.reps == len(entry.time.samples_s) >= timing.MIN_SAMPLES
    assert entry.as_mapping()["model"] == {
        "flops": 8,
        "bytes_read": 64,
        "bytes_written": 32,
        "kernels": 1,
        "vector_flops": 8,  # an add runs on the vector units
    }


def refusing_case(error: Exception, footprint: int = 96) -> registry.Case:
    def build(device):
        raise error

    return registry.Case("add", (("numel", 8),), "fp32", "add", ops.add(8), footprint, build)


def test_unsupported_and_out_of_memory_are_skipped():
    entry = measure(refusing_case(registry.Unsupported("no fused kernel here")))
    assert (entry.status, entry.reason) == ("skipped", "no fused kernel here")
    oom = RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 TB")
    entry = measure(refusing_case(oom))
    assert entry.status == "skipped"
    assert entry.reason.startswith("out of memory: RuntimeError: DefaultCPUAllocator")


def test_a_case_that_raises_is_failed_and_the_run_goes_on():
    entry = measure(refusing_case(TypeError("softmax() got an unexpected keyword 'out'")))
    assert entry.status == "failed"
    assert entry.reason == "error: TypeError: softmax() got an unexpected keyword 'out'"
    with pytest.raises(KeyboardInterrupt):
        measure(refusing_case(KeyboardInterrupt()))


def test_a_case_larger_than_free_memory_is_skipped_before_allocating():
    entry = measure(refusing_case(AssertionError("must not be built"), footprint=10**18))
    assert entry.status == "skipped" and entry.reason.startswith("needs about 1 EB")


def test_measure_rejects_what_is_not_a_case():
    with pytest.raises(TypeError, match="case must be a roofline_book.measure.bench.registry.Case"):
        measure("gemm")


def test_compare_uses_the_precision_tolerance():
    ref = torch.full((4,), 100.0, dtype=torch.float64)
    # bf16: rtol 1.6e-2, so 101 is within 100 * 0.016 + 0.016 of 100; 103 is not
    assert registry.compare(torch.full((4,), 101.0), ref, "bf16")["max_abs_err"] == 1.0
    with pytest.raises(registry.Incorrect, match="max .error. 3 "):
        registry.compare(torch.full((4,), 103.0), ref, "bf16")
    with pytest.raises(registry.Incorrect, match="shape"):
        registry.compare(torch.ones(3), ref, "fp32")
    with pytest.raises(registry.Incorrect):
        registry.compare(torch.full((4,), math.nan), ref, "fp32")


def test_time_cpu_measures_a_known_duration():
    t = timing.time_cpu(lambda: time.sleep(0.002), min_run_time=0.02)
    assert 0.002 <= t.median_s < 0.02
    assert t.reps >= timing.MIN_SAMPLES and t.inner >= 1 and t.iqr_s >= 0


def test_time_cpu_rejects_bad_input():
    with pytest.raises(TypeError, match="fn must be callable"):
        timing.time_cpu(42)
    with pytest.raises(ValueError, match="min_run_time must be a finite real number > 0"):
        timing.time_cpu(lambda: None, min_run_time=0)


# --------------------------------------------------------------------------
# Suites and cases


def test_ceilings_leave_the_cache():
    cache = 32 * 2**20
    copy_case, triad, inplace = suites.probes("cpu", "quick", cache_bytes=cache)["bandwidth"]
    assert copy_case.id == "copy/fp32/copy_/numel=16777216"  # 4 * 32 MiB / 8 bytes per element
    assert copy_case.cost.bytes == suites.CEILING_CACHE_MULTIPLE * cache == 4 * cache
    assert triad.cost.bytes == 6 * cache  # three arrays of 2 * cache bytes
    assert inplace.id == "triad_inplace/fp32/add_(alpha)/numel=16777216"
    assert inplace.cost == triad.cost  # the same reads, writes and FLOPs, in place
    assert not inplace.allocate_bytes and copy_case.allocate_bytes == 2 * cache


def test_streaming_sizes_scale_with_the_cache():
    # every elementwise operator and precision gets the smallest power of two whose
    # traffic is 4 x the last-level cache: add fp32 moves 12 B per element, relu bf16 4 B
    for cache, add32, relu16 in ((105 * 2**20, 2**26, 2**27), (8 * 2**20, 2**22, 2**23)):
        ids = {c.id for c in suites.cases("cpu", "quick", cache_bytes=cache)}
        assert (
            f"add/fp32/add/numel={add32}" in ids and f"add/fp32/add/numel={add32 // 2}" not in ids
        )
        assert f"relu/bf16/clamp_min/numel={relu16}" in ids
        assert 12 * add32 >= 4 * cache > 12 * add32 / 2
    assert not any(  # tiny stays in cache
        c.cost.bytes >= 4 * 2**20
        for c in suites.cases("cpu", "tiny", cache_bytes=2**20)
        if c.name in ("add", "relu")
    )


def test_every_suite_has_the_chapter_small_gemm_and_all_adamw_impls():
    for device in suites.DEVICES:
        for suite in suites.SUITES:
            ids = [c.id for c in suites.cases(device, suite, cache_bytes=2**20)]
            assert len(ids) == len(set(ids))
            spec = suites.suite_spec(device, suite)
            for p in spec.gemm_precisions:
                assert f"gemm/{p}/mm/m=32,k=128,n=128" in ids
            assert sum(i.startswith("adamw/") for i in ids) == 3


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda: suites.suite_spec("tpu"), ValueError, "device must be one of cpu, cuda"),
        (lambda: suites.suite_spec("cpu", "huge"), ValueError, "suite must be one of tiny, quick"),
        (lambda: measure_run.run_suite("cpu", 3), TypeError, "suite must be one of"),  # type: ignore[arg-type]
        (
            lambda: cases.adamw_case(10, 3, impl="loop"),
            ValueError,
            "params .10. must be a multiple",
        ),
        (
            lambda: cases.adamw_case(8, 2, impl="sgd"),
            ValueError,
            "impl must be one of loop, foreach",
        ),
        (
            lambda: cases.attention_case(1, 1, 8, 8, 8, impl="flash"),
            ValueError,
            "impl must be one of",
        ),
        (lambda: cases.elementwise_case("gelu", 8), ValueError, "name must be one of copy"),
        (lambda: cases.case_for("conv", {"n": 1}, "fp32", "x"), ValueError, "name must be one of"),
        (lambda: cases.case_for("gemm", {"m": 2}, "fp32", "mm"), ValueError, "lacks 'k'"),
        (lambda: cases.case_for("add", {"numel": 8, "x": 1}, "fp32", "add"), ValueError, "exactly"),
        (lambda: cases.case_for("gemm", [2, 2, 2], "fp32", "mm"), TypeError, "shape must be"),  # type: ignore[arg-type]  # bad input on purpose
        (lambda: cases.gemm_case(0, 2, 2), ValueError, "m must be an integer >= 1"),
    ],
)
def test_bad_arguments_name_themselves(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_tf32_is_skipped_on_the_cpu():
    entry = measure(cases.gemm_case(8, 8, 8, precision="tf32"))
    assert entry.status == "skipped" and "CUDA" in entry.reason


def test_shape_labels():
    assert cases.shape_text("adamw", {"params": 2**22, "tensors": 8}) == "2^22 in 8"
    assert cases.shape_text("rmsnorm", {"rows": 1024, "d": 4096}) == "1024x4096"
    assert cases.shape_text("add", {"numel": 1000}) == "n=1000"


# --------------------------------------------------------------------------
# The command line


def test_options():
    args = parse("--out", "x.json")
    assert (args.device, args.suite, args.force, args.out) == ("cpu", "full", False, Path("x.json"))
    assert parse("--quick", "--out", "x").suite == "quick"
    assert parse("--suite", "tiny", "--device", "cuda", "--force", "--out", "x").device == "cuda"
    for argv in (
        ["--quick", "--suite", "tiny", "--out", "x"],
        [],
        ["--device", "tpu", "--out", "x"],
    ):
        with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
            parse(*argv)


def test_an_existing_run_file_is_never_overwritten(tiny):
    path, _, _ = tiny
    before = path.read_bytes()
    status, out, err = run_cli("--suite", "tiny", "--out", str(path), "--no-progress")
    assert status == 2 and out == ""
    assert "exists" in err and "--force" in err
    assert path.read_bytes() == before


def test_unwritable_out_is_refused_before_measuring(tmp_path):
    status, out, err = run_cli("--suite", "tiny", "--out", str(tmp_path))
    assert (status, out) == (2, "") and "is a folder" in err
    blocker = tmp_path / "file"
    blocker.write_text("")
    status, _, err = run_cli("--suite", "tiny", "--out", str(blocker / "run.json"))
    assert status == 2 and "cannot create the folder" in err


def test_force_replaces_atomically(tiny, tmp_path, monkeypatch):
    _, run, _ = tiny
    path = tmp_path / "run.json"
    path.write_text("{}")
    monkeypatch.setattr(measure_run, "run_suite", lambda *a, **k: run)
    status, _, _ = run_cli("--suite", "tiny", "--out", str(path), "--force")
    assert status == 0
    assert runfile.load_run(path) == run
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary file left


def test_a_file_appearing_during_the_run_is_kept(tiny, tmp_path, monkeypatch):
    _, run, _ = tiny
    path = tmp_path / "run.json"

    def someone_else_writes(*args, **kwargs):
        path.write_text("theirs")
        return run

    monkeypatch.setattr(measure_run, "run_suite", someone_else_writes)
    status, _, err = run_cli("--suite", "tiny", "--out", str(path))
    assert status == 1 and "appeared during the run" in err
    assert path.read_text() == "theirs"
    stamp = run.date.replace(":", "")
    assert runfile.load_run(tmp_path / f"run.{stamp}.json") == run


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_says_so_in_one_line(tmp_path):
    path = tmp_path / "gpu.json"
    status, out, err = run_cli("--device", "cuda", "--out", str(path))
    assert status == 2 and out == "" and not path.exists()
    assert err.count("\n") == 1 and "--device cuda" in err and "no CUDA device" in err
    with pytest.raises(ValueError, match="no CUDA device"):
        measure_run.run_suite("cuda", "tiny")


# --------------------------------------------------------------------------
# The run-file format


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fixtures_are_valid_runs(path):
    assert "hand-made" in runfile.load_run(path).device.name


def fixture() -> dict:
    return json.loads((DATA / "fixture-cpu-pass.json").read_text())


def broken(change) -> dict:
    run = fixture()
    change(run)
    return run


def _set(path, value):
    def change(run):
        node = run
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda r: r["results"][0]["time"].pop("median_s"), r"results\[0\]\.time: 'median_s' is"),
        (_set(("results", 0, "time", "median_s"), -1.0), r"results\[0\]\.time\.median_s: -1\.0"),
        (_set(("results", 2, "precision"), "fp33"), r"results\[2\]\.precision: 'fp33' is not"),
        (_set(("results", 2, "reason"), "why"), r"run\.results\[2\]"),
        (_set(("results", 2, "status"), "skipped"), r"run\.results\[2\]"),
        (_set(("date",), "yesterday"), r"run\.date: 'yesterday' does not match"),
        (_set(("format",), "other"), r"run\.format: 'roofline-book-run' was expected"),
        (lambda r: r.pop("ceilings"), r"run: 'ceilings' is a required property"),
        (lambda r: r["results"].insert(1, r["results"][0]), r"results\[1\]\.id: .* appears twice"),
        (_set(("results", 1, "impl"), "add"), "does not match its fields"),
        (_set(("ceilings", "bandwidth", "copy", "entry"), "nope"), "copy.entry: no result"),
        (_set(("ceilings", "peak_flops", "fp32", "value"), 1.0), "fp32.value: 1.0 is not the rate"),
        (
            _set(("results", 0, "time", "samples_s"), [1e-3]),
            r"results\[0\]\.time\.samples_s: 1 samp",
        ),
        (
            _set(
                ("ceilings", "peak_flops", "fp16"),
                {"value": 1.0, "entry": "gemm/fp16/mm/m=32,k=128,n=128"},
            ),
            "has status 'skipped'",
        ),
    ],
)
def test_invalid_runs_name_the_field(change, message, tmp_path):
    run = broken(change)
    with pytest.raises(ValueError, match=message):
        runfile.validate_run(run)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(run))
    with pytest.raises(ValueError, match=str(path)):
        runfile.load_run(path)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: measure_run.run_suite("tpu", "tiny"), "device"),
        (lambda: measure_run.run_suite("cpu", "huge"), "suite"),
        (lambda: measure_run.run_suite("cpu", "tiny", threads=0), "threads"),
        (lambda: Run.from_mapping(fixture()).results("conv"), "name"),
        (lambda: Run.from_mapping(fixture()).results(status="done"), "status"),
        (lambda: collectives.measure(65, sizes=(8, 64)), "procs"),
        (lambda: collectives.measure(2, ops=()), "ops"),
        (lambda: collectives.measure(2, sizes=(8, 8)), "sizes"),
        (lambda: streaming.weight_streaming((4, 2), d=64), "batches"),
    ],
)
def test_a_rejected_argument_is_named(call, name):
    # the command line turns the name into the flag the user typed (cli.common.Parser.flag)
    with pytest.raises(InvalidArgument) as caught:
        call()
    assert caught.value.name == name


def test_a_gpu_run_where_a_cpu_run_is_asked_names_the_path(tmp_path):
    from roofline_book.book.runs import cpu_run

    data = fixture()
    data["device"] |= {"type": "cuda", "sm_count": 132, "compute_capability": "9.0"}
    for key in ("cpu_model", "threads", "cpu_capability", "threads_policy", "caches"):
        data["device"].pop(key, None)
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidArgument, match="path must be a CPU run") as caught:
        cpu_run(path)
    assert caught.value.name == "path"


def test_load_run_rejects_what_is_not_json(tmp_path):
    path = tmp_path / "run.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        runfile.load_run(path)
    with pytest.raises(TypeError, match="run must be a mapping"):
        runfile.validate_run([])


def test_write_run_refuses_an_existing_file(tmp_path):
    run = Run.from_mapping(fixture())
    path = tmp_path / "deeper" / "run.json"
    assert runfile.write_run(run, path) == path  # creates the folder
    assert json.loads(path.read_text()) == fixture()  # the same JSON back
    with pytest.raises(FileExistsError, match="not overwritten unless forced"):
        runfile.write_run(run, path)
    runfile.write_run(dataclasses.replace(run, host="second"), path, force=True)
    assert runfile.load_run(path).host == "second"
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.json"]
    with pytest.raises(TypeError, match="run must be a Run"):
        runfile.write_run(fixture(), tmp_path / "dict.json")


def test_rates_and_filters():
    typed = Run.from_mapping(fixture())
    flops, bandwidth = typed.entry("add/fp32/add/numel=16777216").rates  # in 9 ms
    assert flops == 2**24 / 0.009  # 1 FLOP per element
    assert bandwidth == 12 * 2**24 / 0.009  # 3 fp32 tensors of 2^24 elements
    assert len(typed.results("adamw")) == 3
    assert [e.status for e in typed.results(status="skipped")] == ["skipped"]
    with pytest.raises(ValueError, match="name must be one of copy, triad, triad_inplace, gemm"):
        typed.results("conv")
    with pytest.raises(ValueError, match="status must be one of ok, skipped, failed"):
        typed.results(status="done")


def test_a_runs_ceilings_are_what_it_measured():
    run = Run.from_mapping(fixture())
    roofs = of_run(run)
    # each bandwidth probe with its line fills: the copy moves 2^28 + 2^27 B in 12.5 ms, the
    # in-place triad 3 x 2^27 B (no fills) in 12.5 ms: 32.2 GB/s either way
    assert roofs.memory.name == "dram"
    assert roofs.memory.bandwidth == pytest.approx(3 * 4 * 2**25 / 0.0125)
    assert roofs.rate("matrix", "fp32") == 2 * 1024**3 / 0.02  # the 1024^3 GEMM in 20 ms
    # the vector lanes: the FP32 peak taken as lane slots per second, for every precision
    assert roofs.rate("vector", "bf16") == roofs.rate("vector", "fp32") == 2 * 1024**3 / 0.02
    assert [lv.name for lv in roofs.levels] == ["l2", "dram"]  # 16 MiB, no roof measured
    ceilings = dataclasses.replace(run.ceilings, bandwidth={})
    with pytest.raises(ValueError, match="the ceilings hold no measured bandwidth"):
        of_run(dataclasses.replace(run, ceilings=ceilings))


# --------------------------------------------------------------------------
# Nsight Compute: the DRAM bytes parser (gpu/ncu_merge.py)

NCU_HEADER = (
    '"ID","Process ID","Process Name","Host Name",'
    '"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",'
    '"Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC",'
    '"dram__bytes_read.sum","dram__bytes_write.sum"'
)


def ncu_row(kernel_id: int, nvtx: str, kernel: str, read: str, written: str) -> str:
    cells = [str(kernel_id), "4242", "python3.12", "host", nvtx, kernel, "1", "7"]
    cells += ["(128, 1, 1)", "(4096, 1, 1)", "0", "9.0", read, written]
    return ",".join(f'"{c}"' for c in cells)


ADD_RANGE = "<default>:rb|add/fp32/add/numel=16777216|:none:none:none:none:none:none"
LOOP_RANGE = "<default>:rb|adamw/fp32/loop/params=4194304,tensors=8|:none:none:none:none:none:none"
NCU_CSV = "\n".join(
    [
        "==PROF== Connected to process 4242 (/usr/bin/python3.12)",
        '==PROF== Profiling "vectorized_elementwise_kernel": 0%....50%....100% - 1 pass',
        NCU_HEADER,
        '"","","","","","","","","","","","","byte","Kbyte"',
        ncu_row(0, ADD_RANGE, "vectorized_elementwise_kernel", "134,217,728", "67,108.864"),
        ncu_row(1, LOOP_RANGE, "elementwise_kernel", "2097152", "2097.152"),
        ncu_row(2, LOOP_RANGE, "elementwise_kernel", "4194304", "2097.152"),
        ncu_row(3, "", "fill_kernel", "0", "999"),
    ]
)


def load_script(name: str):
    path = Path(__file__).parents[1] / "gpu" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ncu_merge():
    return load_script("ncu_merge")


def test_ncu_ops_profiles_the_largest_memory_bound_case_of_each_kind():
    chosen = [e.id for e in load_script("ncu_ops").chosen(Run.from_mapping(fixture()))]
    assert "add/fp32/add/numel=16777216" in chosen
    assert "add/fp32/add/numel=16384" not in chosen  # a smaller add of the same kind
    assert not any(i.startswith("gemm/") for i in chosen)
    assert sum(i.startswith("adamw/") for i in chosen) == 3
    assert sum(i.startswith("attention/") for i in chosen) == 2
    # 3 ceilings, add and ReLU in 2 precisions, RMSNorm, softmax, 3 AdamW, 2 attention
    assert len(chosen) == len(set(chosen)) == 14


def test_ncu_csv_sums_dram_bytes_per_range(ncu_merge):
    got = ncu_merge.parse_ncu_csv(NCU_CSV)
    assert got == {
        # Kbyte is 1000 bytes: 67,108.864 Kbyte = 67_108_864 bytes
        "add/fp32/add/numel=16777216": {"read": 134_217_728, "written": 67_108_864, "kernels": 1},
        # two kernels: 2 + 4 MiB read, 2 x 2_097_152 bytes written
        "adamw/fp32/loop/params=4194304,tensors=8": {
            "read": 6_291_456,
            "written": 4_194_304,
            "kernels": 2,
        },
    }


@pytest.mark.parametrize(
    "text,message",
    [
        ("==PROF== nothing\n", "no CSV header"),
        ('"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum"\n', "no NVTX column"),
        ('"ID","thread Domain:Push/Pop_Range","dram__bytes_read.sum"\n', "no dram__bytes_write"),
        (NCU_CSV.replace('"byte","Kbyte"', '"byte","furlong"'), "unit 'furlong'"),
        (NCU_CSV.replace('"134,217,728"', '"n/a"'), "CSV line 5, dram__bytes_read.sum: 'n/a'"),
    ],
)
def test_ncu_csv_problems_are_named(ncu_merge, text, message):
    with pytest.raises(ValueError, match=message):
        ncu_merge.parse_ncu_csv(text)


def test_ncu_bytes_merge_into_the_run(ncu_merge):
    run = Run.from_mapping(fixture())
    merged = ncu_merge.merge_dram_bytes(run, ncu_merge.parse_ncu_csv(NCU_CSV), tool="ncu 2025.1")
    runfile.validate_run(merged.as_mapping())
    add = merged.entry("add/fp32/add/numel=16777216")
    assert add.as_mapping()["measured_dram_bytes"] == {
        "read": 134_217_728,
        "written": 67_108_864,
        "kernels": 1,
        "tool": "ncu 2025.1",
    }
    measured = set(ncu_merge.parse_ncu_csv(NCU_CSV))
    assert {e.id for e in merged.entries if e.measured_dram_bytes is not None} == measured
    assert run.entry(add.id).measured_dram_bytes is None
    counts = {"read": 1, "written": 1, "kernels": 1}
    with pytest.raises(ValueError, match="already has measured_dram_bytes"):
        ncu_merge.merge_dram_bytes(merged, {add.id: counts})
    with pytest.raises(ValueError, match="which the run does not have"):
        ncu_merge.merge_dram_bytes(run, {"gemm/fp32/mm/m=9,k=9,n=9": counts})
    skipped = "gemm/fp16/mm/m=32,k=128,n=128"
    with pytest.raises(ValueError, match="status 'skipped'"):
        ncu_merge.merge_dram_bytes(run, {skipped: counts})


# --------------------------------------------------------------------------
# CUDA


@pytest.mark.cuda
@needs_cuda
def test_tiny_cuda_run():
    run = measure_run.run_suite("cuda", "tiny")
    assert run.device.type == "cuda" and run.software.cuda
    assert [e.id for e in run.entries] == [
        c.id for c in suites.cases("cuda", "tiny", cache_bytes=run.device.cache_bytes)
    ]
    for e in run.entries:
        assert e.status in ("ok", "skipped"), e.reason
        if e.ok:
            assert e.l2_flush is (e.name != "gemm")
    assert run.entry("gemm/bf16/mm/m=128,k=128,n=128").ok
    assert set(run.ceilings.peak_flops) == {"fp32", "bf16"}


@pytest.mark.cuda
@needs_cuda
def test_time_cuda_measures_a_known_amount_of_work():
    x = torch.empty(2**26, dtype=torch.float32, device="cuda")
    flush = torch.empty(2**28, dtype=torch.int8, device="cuda")
    t = timing.time_cuda(lambda: x.zero_(), min_run_time=0.02, flush=flush)
    assert t.inner == 1 and t.reps >= timing.CUDA_MIN_REPS
    bandwidth = 4 * 2**26 / t.median_s
    props = torch.cuda.get_device_properties(0)
    assert 1e10 < bandwidth < 2e13, f"{bandwidth:.3g} B/s on {props.name}"
    batched = timing.time_cuda(lambda: x.zero_(), min_run_time=0.02)
    assert batched.inner >= 1 and batched.median_s > 0


# --------------------------------------------------------------------------
# The registry and the timing record


def test_every_operator_is_registered_once_and_read_everywhere():
    from roofline_book.measure.bench import registry
    from roofline_book.present.plotting import PALETTE

    assert cases.BANDWIDTH_KINDS == cases.names("ceiling") == ("copy", "triad", "triad_inplace")
    for op in cases.OPERATORS.values():
        assert op.colour in PALETTE and op.family in registry.FAMILIES
    gemm = cases.OPERATORS["gemm"]
    with pytest.raises(ValueError, match="'gemm' is registered already"):
        registry.register(gemm)
    with pytest.raises(ValueError, match="family must be one of ceiling, gemm"):
        registry.register(registry.Operator("conv", ("n",), ("x",), "convolution", gemm.make))


def test_timing_keeps_its_samples_and_knows_its_spread():
    steady = timing.Timing((1.0, 1.01, 0.99, 1.0, 1.02), inner=3)
    assert steady.median_s == 1.0 and steady.reps == 5
    assert steady.iqr_s == pytest.approx(0.01)  # q3 1.01 - q1 1.00
    assert steady.meets_confidence()  # 0.01 / 1.0 < 0.1
    noisy = timing.Timing((1.0, 2.0, 1.0, 3.0), inner=1)
    assert not noisy.meets_confidence()  # IQR 1.25 against a median of 1.5
    assert steady.samples_s == (1.0, 1.01, 0.99, 1.0, 1.02)
    with pytest.raises(ValueError, match="samples_s must hold at least one"):
        timing.Timing((), inner=1)
    with pytest.raises(ValueError, match="finite and >= 0"):
        timing.Timing((1.0, float("nan")), inner=1)


def test_run_entries_keep_their_samples(tiny):
    _, run, _ = tiny
    for e in run.results():
        assert e.time is not None and e.time.samples_s is not None
        assert len(e.time.samples_s) == e.time.reps
        assert e.time.median_s == pytest.approx(float(np.median(e.time.samples_s)))


# --------------------------------------------------------------------------
# The weight-streaming sweep


def test_weight_streaming_sweep_times_each_batch():
    import torch

    from roofline_book.measure.bench import streaming

    before = torch.get_num_threads()
    sweep = streaming.weight_streaming((1, 2, 4, 8, 16), d=256, min_run_time=0.001, threads=1)
    assert torch.get_num_threads() == before  # restored after the sweep
    assert sweep.threads == 1
    assert [p.batch for p in sweep.points] == [1, 2, 4, 8, 16]
    assert sweep.points[0].cost == ops.gemm(1, 256, 256, "fp32")
    assert all(p.timing.median_s > 0 and len(p.timing.samples_s) >= 5 for p in sweep.points)
    with pytest.raises(ValueError, match="batches must increase"):
        streaming.weight_streaming((4, 2), d=64)


def test_streaming_crossing_from_known_times():
    from roofline_book.measure.bench import streaming
    from roofline_book.measure.bench.timing import Timing

    def point(b, seconds):
        return streaming.StreamingPoint(
            b, ops.gemm(b, 1024, 1024, "fp32"), Timing((seconds,) * 5, 1)
        )

    # a flat 4 ms while streaming, then 0.25 ms per token: the lines meet at 16 tokens
    times = {1: 4e-3, 2: 4e-3, 4: 4e-3, 16: 4e-3, 64: 16e-3, 128: 32e-3}
    sweep = streaming.StreamingSweep(1024, "fp32", tuple(point(b, t) for b, t in times.items()))
    assert sweep.measured_crossing() == pytest.approx((16.0, 16.0, 16.0))
    # the model's crossing: 2 B k n / P = s (k n + B (k + n)) / bandwidth, at ridge P / B
    ridge = 100e9 / 10e9
    expected = ridge * 4 * 1024**2 / (2 * 1024**2 - ridge * 4 * 2048)
    assert sweep.predicted_crossing(100e9, 10e9) == pytest.approx(expected)
    assert streaming.streaming_size(32 * 2**20) == 4096  # 2 x 32 MiB of FP32


def test_streaming_figures_say_how_close_the_model_came():
    from roofline_book.measure.bench import streaming
    from roofline_book.measure.bench.timing import Timing

    def point(b, seconds):
        return streaming.StreamingPoint(
            b, ops.gemm(b, 1024, 1024, "fp32"), Timing((seconds,) * 5, 1)
        )

    times = {1: 4e-3, 2: 4e-3, 4: 4e-3, 16: 4e-3, 64: 16e-3, 128: 32e-3}
    sweep = streaming.StreamingSweep(1024, "fp32", tuple(point(b, t) for b, t in times.items()))
    f = sweep.figures(100e9, 10e9)
    assert f["measured"] == pytest.approx(16.0) and f["ratio"] == pytest.approx(
        16.0 / f["predicted"]
    )
    assert f["within"] is False  # no spread in these times, and the model said about 10
    # the model's memory time for the 4 MiB weight plus the batch-1 rows, at 10 GB/s
    assert f["model_flat_ms"] == pytest.approx(4 * (1024**2 + 2 * 1024) / 10e9 * 1e3)
    assert f["flat_over_model"] == pytest.approx(4e-3 / (4 * (1024**2 + 2 * 1024) / 10e9))
    # B = 16 lies on both lines (4 ms = 16 x 0.25 ms): the first split that fits exactly wins
    assert f["flat"] is True and f["flat_points"] == 3 and f["flat_batch"] == 4
    # the model's compute time per row: 2 x 1024^2 FLOPs at 100 GFLOP/s; measured 0.25 ms
    assert f["slope_over_model"] == pytest.approx(0.25e-3 / (2 * 1024**2 / 100e9))
    assert f["rise"] == pytest.approx(32 / 4)


def test_streaming_estimators_and_a_flat_part_that_is_not_flat():
    from roofline_book.measure.bench import streaming
    from roofline_book.measure.bench.timing import Timing

    def sweep_of(times):
        return streaming.StreamingSweep(1024, "fp32", tuple(
            streaming.StreamingPoint(b, ops.gemm(b, 1024, 1024, "fp32"), Timing((t,) * 5, 1))
            for b, t in times.items()))  # fmt: skip

    # small batches double from B = 2 to B = 4, then 0.25 ms per row from B = 32 on: the
    # hinge puts the first five in the flat part (geometric mean 4 x 2^(3/5) = 6.06 ms; with
    # B = 32 in it too, 4 x 2^(4/6), the log error is 0.64 against 0.58), whose slowest is
    # twice its fastest, so it is not flat
    ms = {1: 4, 2: 4, 4: 8, 8: 8, 16: 8, 32: 8, 64: 16, 128: 32}
    sweep = sweep_of({b: t * 1e-3 for b, t in ms.items()})
    t0, s, k = sweep.hinge()
    assert k == 5 and t0 == pytest.approx(4e-3 * 2 ** (3 / 5)) and s == pytest.approx(0.25e-3)
    flat, spread, points = sweep.flatness()
    assert (flat, spread, points) == (False, 2.0, 5)
    # the estimators disagree: B = 1 alone gives 16, the median of B <= 4 gives 16 too, the
    # hinge 24.3; the reported range spans them
    est = sweep.estimates()
    assert est["first"] == pytest.approx(16) and est["median"] == pytest.approx(16)
    assert est["hinge"] == pytest.approx(4 * 2 ** (3 / 5) / 0.25)
    measured, low, high = sweep.measured_crossing()
    assert measured == est["hinge"] and low == pytest.approx(16) and high == measured


def test_a_sentinel_that_moved_past_the_tolerance_widens_every_comparison():
    # the sentinel's checkpoints over a run (its fastest sample at each, ms): 2.00 at the
    # start, 2.30 while another process shares the core, 2.10 at the end
    from roofline_book.measure.judge import ceilings
    from roofline_book.measure.judge.verdicts import tolerance

    moved = ceilings.stability("copy", [2.00e-3, 2.02e-3, 2.30e-3, 2.10e-3])
    # spread 2.30 / 2.00 - 1 = 15%, more than the verdicts' 5%: not stable, and every
    # comparison of the run allows 15% instead of 5%
    assert moved.spread == pytest.approx(0.15) and moved.stable is False
    assert (moved.first_s, moved.last_s) == (2.00e-3, 2.10e-3)
    assert moved.drift == pytest.approx(1.05)  # 2.10 / 2.00
    run = Run.from_mapping(fixture())
    assert tolerance(dataclasses.replace(run, stability=moved)) == pytest.approx(0.15)
    # held between 2.00 and 2.08 ms: 4%, within the 5% floor, stable, judged at 5%
    held = ceilings.stability("copy", [2.00e-3, 2.08e-3, 2.04e-3])
    assert held.spread == pytest.approx(0.04) and held.stable is True
    assert tolerance(dataclasses.replace(run, stability=held)) == SPEED_TOLERANCE == 0.05
    # a peak probe's rounds of 20, 24 and 22 ms: its last round over its best earlier one,
    # 22 / 20 = 1.1, is the ceiling drift; a probe not judged is left out
    gemm = run.entry("gemm/fp32/mm/m=1024,k=1024,n=1024")  # a median of 20 ms
    probe = dataclasses.replace(gemm, rounds_s=(0.020, 0.024, 0.022))
    with_probe = ceilings.stability("copy", [2.00e-3, 2.02e-3], [probe], {probe.id})
    assert with_probe.ceiling_drift == pytest.approx(1.1)
    assert ceilings.stability("copy", [2.00e-3, 2.02e-3], [probe], ()).ceiling_drift is None
    # one checkpoint is no record
    assert ceilings.stability("copy", [2.00e-3]) is None


def test_a_cache_level_slower_than_one_further_out_is_a_stability_finding(tiny):
    """A level's copy that ran slower than a level further out (a busy machine) is written in
    the run's stability record: each level's rate from the run file by hand, its model bytes
    and line fills over its median, against the fastest rate further out (DRAM: the best
    bandwidth probe)."""
    _, run, _ = tiny

    def rate(entry_id):
        e = run.entry(entry_id)
        return (e.cost.bytes_read + e.cost.bytes_written + (e.write_allocate_bytes or 0)) / (
            e.median_s
        )

    caches = run.device.caches
    levels = [(name.lower(), rate(c.entry))
              for name, c in sorted(run.ceilings.cache_bandwidth.items(),
                                    key=lambda kv: caches[kv[0]])]  # fmt: skip
    levels.append(("dram", max(rate(c.entry) for c in run.ceilings.bandwidth.values())))
    expected = []
    for i, (name, value) in enumerate(levels[:-1]):
        outer, fastest = max(levels[i + 1 :], key=lambda lv: lv[1])
        if fastest > value:
            expected.append((name, outer))
    recorded = run.stability.inverted_levels if run.stability else ()
    assert [(s.level, s.outer) for s in recorded] == expected
