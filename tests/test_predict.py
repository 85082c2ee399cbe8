"""The bound and the prediction from a run's own ceilings, on the hand-made fixture run.

The fixture's three bandwidth probes are timed as a write-allocate CPU with a
32.2 GB/s memory would run them: the copy moves 2^28 model bytes in 12.5 ms
(plus 2^27 bytes of line fills), the triad 3 x 2^27 in 16.7 ms (plus 2^27),
the in-place triad 3 x 2^27 in 12.5 ms (no fills).
"""

import copy
import json
import statistics
from pathlib import Path

import pytest

from roofline_book.measure.judge import predict
from roofline_book.measure.judge.ceilings import of_run
from roofline_book.measure.runs.records import Entry, Run
from roofline_book.roofline.bounds import bound

DATA = json.loads((Path(__file__).parent / "data" / "fixture-cpu-pass.json").read_text())
PASS = Run.from_mapping(DATA)
PEAK32 = 2 * 1024**3 / 0.02  # the fp32 peak: the 1024^3 GEMM in 20 ms
DRAM = 3 * 4 * 2**25 / 0.0125  # 32.2 GB/s


def typed(entry_dict):
    """The run file's entry as the package reads it."""
    return Entry.from_mapping(entry_dict)


def entry(run, entry_id):
    return next(e for e in run["results"] if e["id"] == entry_id)


def with_l2_roof(data):
    """The fixture with an L2 copy probe: 2 x 256 KiB in 10 us, 2^18 B of line fills."""
    run = copy.deepcopy(data)
    probe = copy.deepcopy(entry(run, "copy/fp32/copy_/numel=33554432"))
    probe.update(id="copy/fp32/copy_/numel=65536", shape={"numel": 2**16})
    probe["model"] = {"flops": 0, "bytes_read": 2**18, "bytes_written": 2**18, "kernels": 1}
    probe["write_allocate_bytes"] = 2**18
    probe["time"] = {"median_s": 1e-5, "iqr_s": 0.0, "reps": 5, "inner": 100}
    run["results"].append(probe)
    run["device"]["caches"] = {"L1": 48 * 2**10, "L2": 2**21, "L3": 2**24}
    run["ceilings"]["cache_bandwidth"] = {
        "L2": {
            "value": 2**19 / 1e-5,
            "entry": probe["id"],
            "working_set_bytes": 2**19,
            "cache_bytes": 2**21,
        }
    }
    return Run.from_mapping(run)


def test_write_allocate_brings_the_three_probes_together():
    rates = predict.write_allocate_rates(PASS)
    assert rates["copy"] == (pytest.approx(2**28 / 0.0125), pytest.approx(DRAM))
    assert rates["triad"] == (pytest.approx(3 * 2**27 / (0.0125 * 4 / 3)), pytest.approx(DRAM))
    assert rates["triad_inplace"] == (pytest.approx(DRAM), pytest.approx(DRAM))
    c = of_run(PASS)
    assert c.memory.name == "dram" and c.memory.bandwidth == pytest.approx(DRAM)
    assert c.rate("vector", "fp32") == PEAK32 and predict.expected(PASS).write_allocate


def test_bound_holds_each_entry_to_its_unit_and_level():
    r = of_run(PASS)
    # streams (128 MiB >= 4 x 16 MiB): its model bytes at DRAM speed
    relu = PASS.entry("relu/fp32/clamp_min/numel=16777216")
    assert predict.bound_seconds(relu, r) == pytest.approx(8 * 2**24 / DRAM)
    # a GEMM: its FLOPs at the peak, here its own 20 ms
    gemm = PASS.entry("gemm/fp32/mm/m=1024,k=1024,n=1024")
    assert predict.bound_seconds(gemm, r) == pytest.approx(0.02)
    # 192 KiB that a 16 MiB cache holds, and no cache roof measured: the peak alone
    small = entry(DATA, "add/fp32/add/numel=16384")
    assert [(lv.name, lv.bandwidth) for lv in r.levels] == [
        ("l2", None),
        ("dram", r.memory.bandwidth),
    ]
    assert predict.bound_seconds(typed(small), r) == pytest.approx(2**14 / PEAK32)
    # with an L2 roof (2^19 + 2^18 bytes in 10 us = 78.6 GB/s, line fills counted)
    r2 = of_run(with_l2_roof(DATA))
    assert [(lv.name, lv.capacity) for lv in r2.levels] == [
        ("l1", 49152),
        ("l2", 2**21),
        ("l3", 2**24),
        ("dram", None),
    ]
    assert r2.level("l2").bandwidth == pytest.approx(786432 / 1e-5)
    # 192 KiB is within 4 x the 48 KiB L1, which has no roof: still the peak alone
    assert predict.bound_seconds(typed(small), r2) == pytest.approx(2**14 / PEAK32)
    # 768 KiB is not, and 4 x 2 MiB holds it: held to the L2
    mid = copy.deepcopy(small)
    mid["model"] = {"flops": 2**16, "bytes_read": 2**19, "bytes_written": 2**18, "kernels": 1}
    assert predict.bound_seconds(typed(mid), r2) == pytest.approx(3 * 2**18 / (786432 / 1e-5))


def test_prediction_adds_a_fitted_fixed_cost_per_kernel():
    per, overall, fitted = predict.overhead_fit(PASS)
    # the smallest fp32 GEMM, 32x128x128 (96 KiB), took 100 us against a roofline of
    # max(2^21 FLOP / peak, 96 KiB / DRAM) = 19.5 us
    roof = max(2 * 32 * 128 * 128 / PEAK32, (32 * 128 + 128 * 128 + 32 * 128) * 4 / DRAM)
    assert per["gemm", "fp32"] == pytest.approx(1e-4 - roof)
    # the 2^14 add took 2 us, less than its 6.1 us at DRAM speed: no fixed cost left
    assert per["add", "fp32"] == 0.0
    assert "gemm/fp32/mm/m=32,k=128,n=128" in fitted and "add/fp32/add/numel=16384" in fitted
    assert overall == statistics.median(per.values())  # the cost of the other operators
    by_id = {p.id: p for p in predict.predictions(PASS)}
    add = by_id["add/fp32/add/numel=16777216"]  # no line fills recorded: the in-place rate
    assert add.predicted_s == pytest.approx(12 * 2**24 / DRAM) and add.level == "dram"
    assert add.error == pytest.approx(abs(12 * 2**24 / DRAM - 0.009) / 0.009)
    assert by_id["copy/fp32/copy_/numel=33554432"].excluded == "ceiling"
    assert by_id["add/fp32/add/numel=16384"].excluded == "fits the fixed cost"
    kept = sorted(p.error for p in by_id.values() if not p.excluded)
    assert predict.median_error(list(by_id.values())) == statistics.median(kept)
    assert "gemm/fp16/mm/m=32,k=128,n=128" not in by_id  # skipped, and no fp16 peak


def test_bound_takes_the_peaks_best_round_and_the_prediction_its_median():
    data = copy.deepcopy(DATA)
    probe = entry(data, "gemm/bf16/mm/m=1024,k=1024,n=1024")
    probe["rounds_s"] = [0.01, 0.03, 0.02]  # best 10 ms: the time and the ceiling; median 20 ms
    probe["time"]["median_s"] = 0.01
    data["ceilings"]["peak_flops"]["bf16"]["value"] = 2 * 1024**3 / 0.01
    run = Run.from_mapping(data)
    best, typical = of_run(run), of_run(run, typical=True)
    assert best.rate("matrix", "bf16") == pytest.approx(2 * 1024**3 / 0.01)
    assert typical.rate("matrix", "bf16") == pytest.approx(2 * 1024**3 / 0.02)
    assert typical.rate("matrix", "fp32") == pytest.approx(PEAK32)  # one round: best and median
    gemm = entry(data, "gemm/bf16/mm/m=512,k=512,n=512")
    assert predict.bound_seconds(typed(gemm), best) == pytest.approx(
        2 * 512**3 / (2 * 1024**3 / 0.01)
    )
    x = predict.expected(run)
    assert predict.roof_seconds(typed(gemm), x) == pytest.approx(2 * 512**3 / (2 * 1024**3 / 0.02))


def test_a_sweep_entry_that_beats_the_probe_sets_the_matrix_ceiling():
    data = copy.deepcopy(DATA)
    gemm = entry(data, "gemm/fp32/mm/m=512,k=512,n=512")
    gemm["time"]["median_s"] = 2 * 512**3 / (1.25 * PEAK32)  # 25% faster than the probe's peak
    run = Run.from_mapping(data)
    c = of_run(run)
    assert c.rate("matrix", "fp32") == pytest.approx(1.25 * PEAK32)
    assert c.sources["matrix", "fp32"] == gemm["id"]
    assert predict.bound_seconds(typed(gemm), c) == pytest.approx(gemm["time"]["median_s"])
    assert of_run(run, typical=True).rate("matrix", "fp32") == pytest.approx(PEAK32)


def test_a_prediction_trusts_a_cache_with_what_its_probe_measured():
    run = with_l2_roof(DATA)
    x = predict.expected(run)
    assert predict.CACHE_FILL == 1 / 4  # the cache probes' share of their level
    add = copy.deepcopy(run.entry("add/fp32/add/numel=16384").as_mapping())
    add["model"] = {"flops": 2**16, "bytes_read": 2**19, "bytes_written": 2**18, "kernels": 1}
    # 768 KiB: within the 2 MiB L2, but over the quarter of it its probe measured
    held = bound(typed(add).cost, of_run(run), "fp32", resident=True)
    assert held is not None and held.resource == "l2"
    assert predict.expected_level(typed(add), x) == "dram"
    add["model"] |= {"bytes_read": 2**18, "bytes_written": 2**17}  # 384 KiB: within it
    assert predict.expected_level(typed(add), x) == "l2"
