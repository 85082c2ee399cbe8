"""Rendering of run files for the book, on the fixture runs (hand-made test data)."""

import dataclasses
import json
import pathlib

import matplotlib
import pytest

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

from roofline_book import hardware  # noqa: E402
from roofline_book.book import measured  # noqa: E402
from roofline_book.measure.judge import report  # noqa: E402
from roofline_book.measure.runs import runfile  # noqa: E402

DATA = pathlib.Path(__file__).parent / "data"
PASS = runfile.load_run(DATA / "fixture-cpu-pass.json")
FAIL = runfile.load_run(DATA / "fixture-cpu-fail.json")


def test_measured_ceilings_are_structured():
    measured = {(m.quantity, m.subject): m for m in report.measured_ceilings(FAIL)}
    assert measured["peak", "fp32"].value == 107374182400.0  # 100 Gi FLOP/s, as the file says
    assert measured["peak", "fp32"].unit == "FLOP/s"
    assert measured["bandwidth", "copy"].value == 2**28 / 0.0125  # 2^28 B in 12.5 ms
    assert measured["bandwidth", "copy"].unit == "B/s"
    assert {q for q, _ in measured} == {"peak", "bandwidth"}  # no cache or vector probes


def test_book_summary_words_the_structure_in_chinese():
    from roofline_book.book import runs

    rows = runs.summary_rows(FAIL)
    assert rows["实测峰值 fp32"] == "107.4 GFLOP/s"  # 107374182400 FLOP/s
    assert rows["实测带宽（copy）"] == "21.47 GB/s"  # 2^28 B in 12.5 ms
    assert rows["CUDA"] == "—"
    cpu = runs.summary_rows(PASS)
    assert not any(k.startswith("measured") for k in cpu)  # every row named in Chinese


def test_results_rates_follow_the_model():
    rows = {r.entry.id: r for r in report.results(PASS)}
    # the BF16 add of 2^24 elements: 2^24 FLOP, two inputs read and one output written at
    # 2 bytes each (3 x 2^25 = 100,663,296 bytes), in the fixture's 4.5 ms
    row = rows["add/bf16/add/numel=16777216"]
    assert row.bytes_rate == pytest.approx(22.369_621_333e9)  # 100,663,296 / 0.0045
    assert row.flops_rate == pytest.approx(3.728_270_222e9)  # 16,777,216 / 0.0045
    # a zero-FLOP copy is judged by bandwidth: the fixture's copy at 20 GiB/s over its best
    # bandwidth, the in-place triad at 30 GiB/s
    copy = rows["copy/fp32/copy_/numel=33554432"]
    assert copy.fraction_of_roof == pytest.approx(2 / 3)
    # the best GEMM defines the peak, so it sits exactly on its roof
    assert rows["gemm/fp32/mm/m=1024,k=1024,n=1024"].fraction_of_roof == pytest.approx(1.0)
    skipped = next(r for r in rows.values() if r.entry.status == "skipped")
    assert skipped.flops_rate is None and skipped.fraction_of_roof is None


def _named(name):
    run = runfile.load_run(DATA / "fixture-cpu-fail.json")
    return dataclasses.replace(run, device=dataclasses.replace(run.device, name=name))


def test_datasheet_matching():
    assert report.datasheet_for(_named("NVIDIA H100 80GB HBM3")).key == "h100-sxm"
    assert report.datasheet_for(_named("NVIDIA A100-SXM4-80GB")).key == "a100-sxm"
    assert report.datasheet_for(_named("NVIDIA H200")).key == "h200-sxm"
    assert report.datasheet_for(FAIL) is None


def test_against_datasheet():
    sheet = hardware("h200-sxm")
    rows = {(a.quantity, a.precision): a for a in report.against_datasheet(FAIL, sheet)}
    assert rows["bandwidth", None].ratio == pytest.approx(FAIL.memory_roof / 4.8e12)
    # the H100/H200 whitepaper's dense BF16, 989.4 TFLOP/s (rated at 1830 MHz), as printed
    assert rows["peak", "bf16"].datasheet == 989.4e12
    assert rows["peak", "bf16"].unit == "FLOP/s" and rows["bandwidth", None].unit == "B/s"
    with pytest.raises(TypeError, match="datasheet"):
        report.against_datasheet(FAIL, "h200-sxm")


def test_plot_run_draws_roofs_and_dots():
    fig, ax = plt.subplots()
    try:
        drawn = report.plot_run(ax, PASS, "fp32", datasheet=hardware("a100-sxm"))
        dots = [a for a in drawn if isinstance(a, matplotlib.collections.PathCollection)]
        fp32_timed = [e for e in PASS.results() if e.precision == "fp32" and e.cost.flops > 0]
        # one dot per fp32 entry with FLOPs, gathered in a collection per operator and fill
        # (streaming or not), plus the ridge marker of the measured roof
        assert sum(len(d.get_offsets()) for d in dots) == len(fp32_timed) + 1
        assert len(dots) < len(fp32_timed)
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("datasheet roof (a100-sxm") for t in labels)
        with pytest.raises(ValueError, match="unit"):
            report.plot_run(ax, PASS, "fp32", unit="furlongs")
        with pytest.raises(ValueError, match="fp8"):
            report.plot_run(ax, PASS, "fp8")
    finally:
        plt.close(fig)


def test_fixtures_say_they_are_not_measurements():
    for path in DATA.glob("fixture-*.json"):
        assert "not a measurement" in json.loads(path.read_text())["device"]["name"]


def test_highlights_are_the_run_figures():
    h = measured.highlights(PASS)
    # peaks and bandwidths as the fixture states them: 100 Gi FLOP/s, 20 GiB/s copy,
    # 30 GiB/s in-place triad (the best bandwidth, so the memory roof)
    assert h["cpu_peak32_g"] == pytest.approx(107.3741824)
    assert h["cpu_copy_g"] == pytest.approx(21.47483648)
    assert h["cpu_bw_g"] == pytest.approx(32.21225472)
    assert h["cpu_ridge32"] == pytest.approx(107374182400 / 32212254720)  # 10/3 FLOP/byte
    # the FP32 add of 2^24 elements: 12 bytes per element (two read, one written) in 9 ms
    assert h["add_numel_m"] == 16  # 2^24 / 2^20
    assert h["add_bw_g"] == pytest.approx(22.369_621_333)  # 201,326,592 B / 0.009 s
    assert h["add_over_copy"] == pytest.approx(25 / 24)  # that over the 20 GiB/s copy
    # the 32x128x128 GEMM: 2 x 32 x 128 x 128 = 2^20 FLOP in 0.1 ms, 10.49 GFLOP/s, against
    # the 100 Gi FLOP/s peak: 2^20 / 1e-4 / (100 x 2^30) = 9.765625%
    assert h["small_gemm_pct"] == pytest.approx(9.765625)
    assert (h["large_gemm_n"], h["large_gemm_pct"]) == (1024, pytest.approx(100.0))
    assert (h["n_claims"], h["n_pass"], h["n_fail"]) == (9, 9, 0)
    assert measured.highlights(FAIL)["n_fail"] == 3


def test_highlights_name_what_a_run_lacks():
    run = dataclasses.replace(PASS, entries=tuple(e for e in PASS.entries if e.name != "add"))
    with pytest.raises(ValueError, match="an fp32 add"):
        measured.highlights(run)


def test_plot_runs_draws_one_axes_per_precision():
    fig = report.plot_runs(PASS, report.measured_precisions(PASS))
    try:
        titles = [ax.get_title() for ax in fig.axes]
        assert report.measured_precisions(PASS) == ["fp32", "bf16"]
        assert [t.rsplit(", ", 1)[1] for t in titles] == ["fp32", "bf16"]
        assert fig.axes[1].get_ylabel() == ""  # the shared axis is labelled once
    finally:
        plt.close(fig)


def test_book_tables_word_the_records_in_chinese():
    from roofline_book.book import runs

    table = runs.results_table(PASS).data
    rows = [[cell.strip() for cell in line.split("|")[1:3]] for line in table.splitlines()[2:]]
    assert ["gemm fp32 1024x1024x1024", "已测"] in rows  # the entry's words, not its id
    assert "跳过" in {status for _, status in rows} and "/fp32/" not in table
    against = runs.against_table(FAIL, hardware("h200-sxm")).data
    assert "峰值 bf16（dense）" in against and "内存带宽" in against
    assert "peak" not in against
