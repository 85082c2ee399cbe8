"""The claims checklist on hand-made fixture runs (tests/data/fixture-*.json, not measurements).

fixture-cpu-pass.json is built so that every claim holds (its copy and triad times are
those a write-allocate CPU with a 32.2 GB/s memory gives); fixture-cpu-fail.json
is the same run with three medians changed so that three claims fail: the
small GEMM runs at 98% of the peak, fused AdamW is slower than the loop, and
the FP32 add reaches half the copy bandwidth.
"""

import dataclasses
import json
from pathlib import Path

import pytest

from roofline_book.measure.judge import ceilings, claims, predict, verdicts
from roofline_book.measure.judge.verdicts import Ref
from roofline_book.measure.runs import runfile
from roofline_book.measure.runs.records import Entry, Run

DATA = Path(__file__).parent / "data"
PASS = DATA / "fixture-cpu-pass.json"
FAIL = DATA / "fixture-cpu-fail.json"
NAMES = [check.__name__ for check in claims.CHECKS]


def load(path: Path = PASS) -> dict:
    return json.loads(path.read_text())


def judged(run: Path | dict) -> dict[str, str]:
    got = claims.check_claims(run if isinstance(run, Path) else typed(run))
    return dict(zip(NAMES, (c.verdict for c in got), strict=True))


def typed(run: dict) -> Run:
    """The edited run file, loaded as a checked run."""
    return runfile.validate_run(run)


def _key(subject: Entry | Ref) -> str:
    return subject.id if isinstance(subject, Entry) else f"{subject.kind}:{subject.name}"


def figures(check: claims.Check) -> dict[tuple[str, str], float]:
    """A check's figures by (subject, quantity): an entry's id, or "kind:name" for a Ref."""
    return {(_key(f.subject), f.quantity): f.value for f in check.figures}


def entry(run: dict, entry_id: str) -> dict:
    return next(e for e in run["results"] if e["id"] == entry_id)


def retime(run: dict, entry_id: str, seconds: float) -> dict:
    """The run with one entry's median set to ``seconds``, its IQR scaled with it, and each
    ceiling it sets moved with it (a ceiling is its entry's rate)."""
    time = entry(run, entry_id)["time"]
    scale = seconds / time["median_s"]
    time["iqr_s"] *= scale
    time["median_s"] = seconds
    for group in run["ceilings"].values():
        for ceiling in group.values() if isinstance(group, dict) else ():
            if ceiling["entry"] == entry_id:
                ceiling["value"] /= scale
    return run


def test_every_claim_holds_on_the_passing_fixture():
    assert set(judged(PASS).values()) == {"pass"}


def test_the_failing_fixture_fails_exactly_its_three_claims():
    got = judged(FAIL)
    assert {name for name, v in got.items() if v == "fail"} == {
        "elementwise_is_memory_bound",
        "small_gemm_is_far_from_peak",
        "fused_adamw_is_fastest",
    }
    assert {v for name, v in got.items() if v != "fail"} == {"pass"}
    text = claims.format_checks(claims.check_claims(FAIL))
    assert "[fail] A small GEMM (32x128 times 128x128) is far from the peak" in text
    assert text.endswith("claims: 6 pass, 3 fail, 0 inconclusive, 0 not measured")


def test_small_gemm_figures():
    check = claims.small_gemm_is_far_from_peak(typed(load(FAIL)))
    got = figures(check)
    fp32, bf16 = "gemm/fp32/mm/m=32,k=128,n=128", "gemm/bf16/mm/m=32,k=128,n=128"
    peak = 2 * 1024**3 / 0.02  # the 1024^3 FP32 GEMM in 20 ms
    assert got[fp32, "achieved"] == 2 * 32 * 128 * 128 / 0.00001
    assert got[fp32, "achieved_over_peak"] == pytest.approx(2 * 32 * 128 * 128 / 0.00001 / peak)
    assert got[fp32, "achieved_over_peak"] > claims.FAR_FROM_PEAK
    assert got[bf16, "achieved_over_peak"] < claims.FAR_FROM_PEAK


def test_elementwise_threshold_is_the_named_constant_beyond_the_noise():
    copy_bw = 2 * 4 * 2**25 / 0.0125
    add_id = "add/fp32/add/numel=16777216"
    add_bytes = 3 * 4 * 2**24

    def at(fraction: float) -> claims.Check:
        # the add at this fraction of NEAR_COPY x the copy bandwidth, its IQR 5% of its median:
        # with the copy's 5%, the comparison carries 5% + 2.5% + 2.5% = 10% of noise
        run = load()
        seconds = add_bytes / (fraction * claims.NEAR_COPY * copy_bw)
        entry(run, add_id)["time"].update(median_s=seconds, iqr_s=0.05 * seconds)
        return claims.elementwise_is_memory_bound(typed(run))

    assert at(1.15).verdict == "pass"  # 1.15 x 0.9 clears the threshold
    assert at(1.01).verdict == "inconclusive"  # inside the noise: no verdict
    check = at(0.85)  # 0.85 x 1.1 misses it
    assert check.verdict == "fail"
    assert figures(check)[add_id, "bandwidth_over_copy"] == pytest.approx(0.85 * 0.7)


def test_an_operator_faster_than_its_bound_fails_it():
    # the relu streams (128 MiB >= 4 x the 16 MiB cache): held to DRAM, 32.2 GB/s
    relu = "relu/fp32/clamp_min/numel=16777216"
    run = retime(load(), relu, 0.003)  # 44.7 GB/s
    check = claims.roofline_bounds_time(typed(run))
    assert check.verdict == "fail"
    got = figures(check)
    assert got["run:", "beat_bound"] == got["run:", "beat_bound_beyond_noise"] == 1
    # 2 x 4 x 2^24 B = 134,217,728 B at 2^35 B / 1.0667 s = 32.21 GB/s: 4.167 ms, in 3 ms
    assert got[relu, "bound_over_measured"] == pytest.approx(134_217_728 / 32.212_254_72e9 / 0.003)
    # an add that fits in the cache, with no cache roof measured, is held to the peak only:
    # 192 KiB in 1 us beats DRAM, and 2^14 FLOP in 1 us is far below 107 GFLOP/s
    run = retime(load(), "add/fp32/add/numel=16384", 1e-6)
    assert claims.roofline_bounds_time(typed(run)).verdict == "pass"
    # ... but faster than the peak allows fails: 2^14 FLOP in 0.1 us is 164 GFLOP/s
    run = retime(load(), "add/fp32/add/numel=16384", 1e-7)
    assert claims.roofline_bounds_time(typed(run)).verdict == "fail"


def test_what_a_run_lacks_is_not_measured():
    run = load()
    run["results"] = [
        e for e in run["results"] if e["id"] != "adamw/fp32/fused/params=4194304,tensors=8"
    ]
    for e in run["results"]:
        if e["precision"] == "bf16" and e["name"] == "gemm":
            e["status"], e["reason"] = "skipped", "no bf16 here"
            del e["time"], e["check"], e["l2_flush"]
    del run["ceilings"]["peak_flops"]["bf16"]
    got = judged(run)
    assert got["fused_adamw_is_fastest"] == "not measured"
    assert got["bf16_beats_fp32"] == "not measured"
    assert got["gemm_rises_with_n"] == "pass"  # fp32 alone


def test_ceilings_inside_the_cache_measure_no_bandwidth_claim():
    run = load()
    run["device"]["cache_bytes"] = 2**30  # the 256 MiB copy now fits in cache
    got = judged(run)
    assert got["elementwise_is_memory_bound"] == "not measured"
    assert got["roofline_bounds_time"] == "pass"  # held to the peaks, no memory term
    assert got["large_gemm_is_compute_bound"] == "pass"


def test_gemm_that_stops_rising_fails():
    run = retime(load(), "gemm/fp32/mm/m=1024,k=1024,n=1024", 0.2)  # 10x slower at the top
    check = claims.gemm_rises_with_n(typed(run))
    assert check.verdict == "fail"
    assert figures(check)["precision:fp32", "largest_over_smallest"] == pytest.approx(
        (2 * 1024**3 / 0.2) / (2 * 256**3 / 0.001)
    )


def test_slower_sdpa_and_bf16_fail_and_a_tie_is_inconclusive():
    mat = "attention/fp32/materialized/batch=1,heads=4,seq_q=1024,seq_k=1024,head_dim=64"
    # SDPA takes 15 +- 0.375 ms: materialized at 10 ms is clearly faster, at 15 ms a tie
    assert claims.sdpa_beats_materialized(typed(retime(load(), mat, 0.010))).verdict == "fail"
    assert (
        claims.sdpa_beats_materialized(typed(retime(load(), mat, 0.015))).verdict == "inconclusive"
    )
    bf16 = "gemm/bf16/mm/m=1024,k=1024,n=1024"
    peak = {"value": 2 * 512**3 / 0.0015, "entry": "gemm/bf16/mm/m=512,k=512,n=512"}
    for seconds, verdict in ((0.0195, "inconclusive"), (0.03, "fail")):
        # FP32 takes 20 +- 0.5 ms: 19.5 ms is within the spans, 30 ms clearly slower
        run = retime(load(), bf16, seconds)
        run["ceilings"]["peak_flops"]["bf16"] = peak
        assert claims.bf16_beats_fp32(typed(run)).verdict == verdict


def test_timings_inside_each_others_spread_are_inconclusive():
    # the AdamW timings of a noisy machine: foreach and loop 0.15 ms apart, IQRs of ~12 ms
    run = load()
    for impl, median in (("loop", 0.02015), ("foreach", 0.0200), ("fused", 0.015)):
        e = entry(run, f"adamw/fp32/{impl}/params=4194304,tensors=8")
        e["time"]["median_s"], e["time"]["iqr_s"] = median, 0.012
    assert claims.fused_adamw_is_fastest(typed(run)).verdict == "inconclusive"
    # and a clear inversion still fails, noise or not
    entry(run, "adamw/fp32/fused/params=4194304,tensors=8")["time"]["median_s"] = 0.2
    assert claims.fused_adamw_is_fastest(typed(run)).verdict == "fail"


def test_check_claims_reads_and_validates_paths(tmp_path):
    assert [c.claim for c in claims.check_claims(str(PASS))] == [
        c.claim for c in claims.check_claims(typed(load()))
    ]
    bad = load()
    bad["results"][0]["time"]["median_s"] = 0
    with pytest.raises(TypeError, match="run must be a Run or a path"):
        claims.check_claims(bad)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="bad.json"):
        claims.check_claims(path)


def test_check_and_figure_text():
    rate = claims.Figure(Ref("precision", "fp32"), "achieved", 2.5e9, "FLOP/s")
    check = claims.Check("claim", "pass", "rule", (rate, claims.Figure(Ref("run"), "noise", 0.5)))
    assert str(check) == (
        "[pass] claim\n    rule: rule\n    fp32: achieved: 2.5 GFLOP/s\n"
        "    run: noise of the comparison: 0.5"
    )
    missing = claims.Check("claim", "not measured", "rule", missing="cpu")
    assert str(missing) == "[not measured] claim\n    rule: rule (not measured: not a CPU run)"
    with pytest.raises(
        ValueError, match="verdict must be one of pass, fail, inconclusive, not measured"
    ):
        claims.Check("claim", "maybe", "rule")
    with pytest.raises(ValueError, match="missing must be a key of MISSING; got 'no cpu'"):
        claims.Check("claim", "not measured", "rule", missing="no cpu")
    with pytest.raises(ValueError, match="quantity must be a key of QUANTITIES"):
        claims.Figure(Ref("run"), "fp32: achieved", 1.0)
    with pytest.raises(ValueError, match="kind must be one of precision, ceiling, run"):
        Ref("entry", "x")
    with pytest.raises(TypeError, match="checks must be Check objects"):
        claims.format_checks(["pass"])


def test_an_unstable_run_is_judged_with_its_measured_spread():
    # the sentinel moved 50% over the run: every comparison allows 50% instead of 5%, so the
    # close calls become inconclusive and the wide ones still stand
    run = load()
    probe = run["results"][0]["id"]
    run["stability"] = {"probe": probe, "first_s": 1, "last_s": 1.5, "drift": 1.5, "stable": False}
    assert verdicts.tolerance(typed(run)) == 0.5
    got = judged(run)
    # SDPA at 15 +- 0.375 ms against 20 +- 0.5: 1.5 x 15.4 = 23.1 > 19.5, no longer ordered
    assert got["sdpa_beats_materialized"] == "inconclusive"
    # fused 15 ms against foreach 40 ms: 1.5 x 15.4 = 23.1 < 39, still clearly faster, but
    # foreach 40 against loop 50: 1.5 x 41 = 61.5 > 48.75, inside the spread
    assert got["fused_adamw_is_fastest"] == "inconclusive"
    # BF16 10 ms against FP32 20 ms: 1.5 x 10.25 = 15.4 < 19.5, still faster beyond the spread
    assert got["bf16_beats_fp32"] == "pass"
    assert "fail" not in got.values()
    run["stability"].update(last_s=1.02, drift=1.02, stable=True)
    assert judged(run) == judged(load())  # within the 5% floor: judged as a run with no record


def test_stability_uses_the_verdicts_tolerance():
    # 1.0 to 1.06 s is a 6% spread: more than the 5% the verdicts allow, so not stable
    record = ceilings.stability("copy", [1.0, 1.06, 1.02])
    assert record.spread == pytest.approx(0.06) and record.stable is False
    assert verdicts.tolerance(dataclasses.replace(typed(load()), stability=record)) == (
        pytest.approx(0.06)
    )
    record = ceilings.stability("copy", [1.0, 1.04])
    assert record.stable is True
    assert verdicts.tolerance(dataclasses.replace(typed(load()), stability=record)) == 0.05


def test_claims_command_json_and_text(tmp_path, capsys):
    from roofline_book import cli

    assert cli.main(["claims", str(PASS), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in out["claims"]] == NAMES
    assert {c["verdict"] for c in out["claims"]} == {"pass"}
    assert out["stable"] is None  # the fixture predates the drift probe
    predictions = [p for p in predict.predictions(typed(load())) if not p.excluded]
    assert out["prediction"]["entries"] == len(predictions) > 0
    assert out["prediction"]["median_error"] == predict.median_error(predictions)
    assert {e["why"] for e in out["prediction"]["excluded"]} == {"ceiling", "fits the fixed cost"}
    assert cli.main(["claims", str(FAIL)]) == 0
    assert "claims: 6 pass, 3 fail" in capsys.readouterr().out
    assert cli.main(["claims", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cannot read the run file" in err


def test_large_gemm_is_judged_against_other_measurements():
    # the run's peak is its best GEMM, the 1024^3 one here: judged against itself it could
    # not fail; against the other sizes (512^3 at 89 GFLOP/s) a slow 1024^3 fails
    assert claims.large_gemm_is_compute_bound(typed(load())).verdict == "pass"
    largest = "gemm/fp32/mm/m=1024,k=1024,n=1024"
    slow = retime(load(), largest, 0.05)  # 43 GFLOP/s
    check = claims.large_gemm_is_compute_bound(typed(slow))
    assert check.verdict == "fail"
    ratio = (2 * 1024**3 / 0.05) / (2 * 512**3 / 0.003)
    assert figures(check)[largest, "achieved_over_peak"] == pytest.approx(ratio)


def test_write_allocate_claim_on_the_three_probes():
    # the fixture's probes move 32.2 GB/s each once line fills are counted: the claim holds
    check = claims.write_allocate_explains_bandwidths(typed(load()))
    assert check.verdict == "pass"
    got = figures(check)
    assert got["run:", "spread_write_allocate"] == pytest.approx(0.0, abs=1e-9)
    assert got["run:", "spread_model_bytes"] == pytest.approx(32.2 / 21.47 - 1, rel=1e-3)
    # a copy at 2^28 + 2^27 bytes in 20 ms (20.1 GB/s) leaves a 60% gap the fills do not close
    slow = retime(load(), "copy/fp32/copy_/numel=33554432", 0.02)
    assert claims.write_allocate_explains_bandwidths(typed(slow)).verdict == "fail"
    gpu = load()
    gpu["device"]["type"] = "cuda"
    assert claims.write_allocate_explains_bandwidths(typed(gpu)).verdict == "not measured"


def test_the_chinese_checklist_is_one_table_per_claim_and_escapes_pipes():
    from roofline_book import book

    text = book.claims_table(typed(load())).data
    assert text.count("判定规则：") == len(claims.CHECKS)
    for line in text.splitlines():
        if line.startswith("|"):
            # three columns: four pipes that are not escaped, whatever a label holds
            assert line.replace("\\|", "").count("|") == 4, line
    # the prediction's label holds pipes; it survives whole in its row
    assert "\\|预测 − 实测\\| / 实测 的中位数" in text
    assert "..." not in text and "（无）" not in text
    assert book.verdict_counts(typed(load())) == "9 条结论中 9 条成立，没有一条不成立。"
    failing = book.verdict_counts(typed(load(FAIL)))
    assert failing.startswith("9 条结论中 6 条成立，3 条不成立：") and failing.count("；") == 2


def test_every_key_is_worded_in_english_and_chinese():
    from roofline_book.book import claims as zh

    assert zh.QUANTITIES_ZH.keys() == verdicts.QUANTITIES.keys()
    assert zh.MISSING_ZH.keys() == verdicts.MISSING.keys()
    assert zh.REF_KINDS_ZH.keys() == verdicts.REF_KINDS.keys()
    assert zh.CLAIMS_ZH.keys() == zh.RULES_ZH.keys() == set(NAMES)
    gpu = load()
    gpu["device"]["type"] = "cuda"
    for run in (load(), load(FAIL), gpu):
        for check in claims.check_claims(typed(run)):
            assert zh.claim_zh(check) and zh.rule_zh(check)
            for f in check.figures:
                subject, quantity, _ = zh.figure_zh(f)
                assert quantity == zh.QUANTITIES_ZH[f.quantity]
                if isinstance(f.subject, Entry):  # worded from the entry's fields
                    assert subject.startswith(f"{f.subject.name} {f.subject.precision}")
    missing = claims.check_claims(typed(gpu))[-1]
    assert zh.rule_zh(missing).endswith("这次 run 缺少数据：不是 CPU 上的 run")


def test_a_gemm_faster_than_the_peak_probe_raises_the_ceiling_and_says_so():
    # the recorded FP32 peak is the 512^3 GEMM (2^28 FLOP in 3 ms, 89.5 GFLOP/s), 1 / 1.2 of
    # what the 1024^3 GEMM reached (2^31 FLOP in 20 ms, 107.4 GFLOP/s): held to the probe,
    # that GEMM would beat its own bound by 1.2x
    run = load()
    largest = "gemm/fp32/mm/m=1024,k=1024,n=1024"
    run["ceilings"]["peak_flops"]["fp32"] = {
        "value": 2 * 512**3 / 0.003,
        "entry": "gemm/fp32/mm/m=512,k=512,n=512",
    }
    best = ceilings.peak(typed(run), "fp32")
    assert best is not None and best.raised and best.entry == largest
    assert best.value == pytest.approx(2 * 1024**3 / 0.02)
    check = claims.roofline_bounds_time(typed(run))
    got = figures(check)
    assert check.verdict == "pass" and got["run:", "beat_bound"] == 0
    assert got[largest, "above_peak_probe"] == pytest.approx(1.2)
    assert figures(claims.large_gemm_is_compute_bound(typed(run)))[largest, "above_peak_probe"] == (
        pytest.approx(1.2)
    )
    small = figures(claims.small_gemm_is_far_from_peak(typed(run)))
    assert small[largest, "above_peak_probe"] == pytest.approx(1.2)
    # the bounds read the raised value; the prediction times the peak probe's own rounds,
    # the 512^3 GEMM's, so the faster GEMM does not move it
    roofs = ceilings.of_run(typed(run))
    assert roofs.rate("matrix", "fp32") == pytest.approx(2 * 1024**3 / 0.02)
    assert roofs.sources["matrix", "fp32"] == largest
    typical = ceilings.of_run(typed(run), typical=True).rate("matrix", "fp32")
    assert typical == pytest.approx(2 * 512**3 / 0.003)


def test_beating_a_bound_within_the_noise_is_inconclusive():
    # the relu's bound is 134,217,728 B at 32.21 GB/s = 4.167 ms; at 1.03x that, with a 5% IQR
    # (2.5% each way) and the 5% tolerance, it lies inside its 7.5% of noise
    relu = "relu/fp32/clamp_min/numel=16777216"
    bound = 134_217_728 / 32.212_254_72e9
    check = claims.roofline_bounds_time(typed(retime(load(), relu, bound / 1.03)))
    got = figures(check)
    assert check.verdict == "inconclusive"
    assert got["run:", "beat_bound"] == 1 and got["run:", "beat_bound_beyond_noise"] == 0
    assert got[relu, "bound_over_measured"] == pytest.approx(1.03)
    assert got[relu, "noise"] == pytest.approx(0.075)
    # 1.10x is beyond it
    assert claims.roofline_bounds_time(typed(retime(load(), relu, bound / 1.10))).verdict == "fail"


def test_the_elementwise_claim_judges_bandwidth_not_flops():
    # against a peak 1000x lower (every GEMM 1000x slower) the adds' FLOP/s would be far
    # above 5% of it: the claim is about the bytes, and stays as it was
    run = load()
    for e in [e for e in run["results"] if e["name"] == "gemm" and e["status"] == "ok"]:
        retime(run, e["id"], 1000 * e["time"]["median_s"])
    assert claims.elementwise_is_memory_bound(typed(run)).verdict == "pass"
    assert {f.quantity for f in claims.elementwise_is_memory_bound(typed(run)).figures} == {
        "bandwidth",
        "bandwidth_over_copy",
    }


def test_the_sdpa_claim_judges_time_not_the_models_bytes():
    run = load()
    sdpa = "attention/fp32/sdpa/batch=1,heads=4,seq_q=1024,seq_k=1024,head_dim=64"
    entry(run, sdpa)["model"]["bytes_read"] *= 100  # the model says SDPA moves more
    check = claims.sdpa_beats_materialized(typed(run))
    assert check.verdict == "pass"  # 15 ms against 20 ms decides it
    assert figures(check)[sdpa, "model_bytes_materialized_over_sdpa"] < 1
